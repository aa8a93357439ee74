//go:build wasip1

package wink

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
	"unsafe"
)

// Handler handles the events of the resources a plugin's manifest names, as client-go's
// ResourceEventHandler does, and says what it asks of the host afterwards.
//
// A returned error makes the host call again later, with backoff, with the newest state of
// the object (as controller-runtime requeues a failed reconcile); wrap it with [Fatal] for a
// failure that retrying cannot mend. A panic is recovered, logged and retried the same way.
type Handler interface {
	// OnAdd is called for an added object; initialList is true for objects of the
	// informer's initial list (or of the cache replayed to a newly deployed plugin).
	OnAdd(obj *Object, initialList bool) (Action, error)
	// OnUpdate is called for a changed object. On a periodic resync old and new are the
	// same object.
	OnUpdate(old, new *Object) (Action, error)
	// OnDelete is called for a deleted object. When finalStateUnknown is true the deletion
	// was inferred on a relist and obj is the last state the host knew.
	OnDelete(obj *Object, finalStateUnknown bool) (Action, error)
}

// Initializer is implemented by handlers that read the manifest's `config`: Init is called
// once when the plugin starts (and again after every restart) with the config as JSON
// (`null` when absent). An error refuses to start the plugin.
type Initializer interface {
	Init(config []byte) error
}

// HandlerFuncs is a Handler of the functions that are set, as client-go's
// ResourceEventHandlerFuncs: an event whose function is nil is ignored.
type HandlerFuncs struct {
	InitFunc   func(config []byte) error
	AddFunc    func(obj *Object, initialList bool) (Action, error)
	UpdateFunc func(old, new *Object) (Action, error)
	DeleteFunc func(obj *Object, finalStateUnknown bool) (Action, error)
}

// Init calls InitFunc, if set.
func (f HandlerFuncs) Init(config []byte) error {
	if f.InitFunc == nil {
		return nil
	}
	return f.InitFunc(config)
}

// OnAdd calls AddFunc, if set.
func (f HandlerFuncs) OnAdd(obj *Object, initialList bool) (Action, error) {
	if f.AddFunc == nil {
		return Action{}, nil
	}
	return f.AddFunc(obj, initialList)
}

// OnUpdate calls UpdateFunc, if set.
func (f HandlerFuncs) OnUpdate(old, new *Object) (Action, error) {
	if f.UpdateFunc == nil {
		return Action{}, nil
	}
	return f.UpdateFunc(old, new)
}

// OnDelete calls DeleteFunc, if set.
func (f HandlerFuncs) OnDelete(obj *Object, finalStateUnknown bool) (Action, error) {
	if f.DeleteFunc == nil {
		return Action{}, nil
	}
	return f.DeleteFunc(obj, finalStateUnknown)
}

// Action is what a handler asks of the host once it has handled an event. The zero Action
// asks nothing: the handler is called again when the object changes (or at the next resync).
type Action struct {
	// RequeueAfter, when positive, calls OnUpdate again for this object after this long,
	// with its newest state (as controller-runtime's Result.RequeueAfter). A change of the
	// object delivered before then does not cancel it; the object's deletion does. It counts
	// in milliseconds; a shorter positive duration counts as one.
	RequeueAfter time.Duration
}

// fatalError is an error the host must not retry.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// Fatal marks err as a permanent failure for this event: the host records it and moves on
// instead of calling again. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return fatalError{err}
}

// IsFatal says whether err was marked with [Fatal].
func IsFatal(err error) bool {
	var f fatalError
	return errors.As(err, &f)
}

var handler Handler

// Handle registers the plugin's handler. Call it from the plugin's init function.
func Handle(h Handler) {
	handler = h
}

// exportArea holds an export's result until the host has read it (its strings too, in
// exportText).
var (
	exportArea area
	exportText string
)

func returnError(discriminant uint8, message string) unsafe.Pointer {
	exportText = message
	storeU8(exportArea.at(0), 1)
	storeU8(exportArea.at(8), discriminant)
	storeString(exportArea.at(12), exportText)
	return exportArea.ptr()
}

// returnOutcome writes a handler's result<action, handler-error>, once the call is over.
func returnOutcome(action Action, err error) unsafe.Pointer {
	collectIfGrown()
	exportArea = area{}
	switch {
	case err != nil && IsFatal(err):
		return returnError(1, err.Error())
	case err != nil:
		return returnError(0, err.Error())
	case action.RequeueAfter > 0:
		ms := action.RequeueAfter.Milliseconds()
		if ms == 0 {
			ms = 1
		}
		storeU8(exportArea.at(8), 1)
		storeI64(exportArea.at(16), ms)
	}
	return exportArea.ptr()
}

// call runs one call of a handler or reconciler (`what`): lent objects expire afterwards and
// a panic becomes an error. missing, when not nil, says that nothing is registered: the call
// fails for good without running.
func call(what string, objects []*Object, missing error, handle func() (Action, error)) (action Action, err error) {
	defer func() {
		for _, o := range objects {
			importObjectDrop(o.handle)
			o.handle = expired
		}
		if r := recover(); r != nil {
			slog.Error(fmt.Sprintf("%s panicked: %v\n%s", what, r, debug.Stack()))
			action, err = Action{}, fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	if missing != nil {
		return Action{}, Fatal(missing)
	}
	return handle()
}

// initExport is an `init` export: the config handed to the registered plugin's Init, if it
// has one (registered is nil when nothing is: the start is refused with missing).
func initExport(config unsafe.Pointer, configLen uint32, registered any, missing string) unsafe.Pointer {
	text := unsafe.String((*byte)(config), configLen)
	exportArea = area{}
	var err error
	if registered == nil {
		err = errors.New(missing)
	} else if initializer, ok := registered.(Initializer); ok {
		err = initWith(initializer, []byte(text))
	}
	unpin()
	collectIfGrown()
	if err != nil {
		exportText = err.Error()
		storeU8(exportArea.at(0), 1)
		storeString(exportArea.at(4), exportText)
	}
	return exportArea.ptr()
}

func lent(handle uint32) *Object { return &Object{handle: handle, lent: true} }

func initWith(init Initializer, config []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("init panicked: %v", r)
		}
	}()
	if !json.Valid(config) {
		return fmt.Errorf("the config is not JSON: %q", config)
	}
	return init.Init(config)
}

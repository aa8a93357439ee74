//go:build wasip1 && wink_reconciler

package wink

// Reconcilers: the controller-runtime model, wink:plugin@0.4.0's reconciler-plugin world.
// A plugin whose manifest has a `reconcile:` section is built with the wink_reconciler tag
// (cargo xtask build-plugins does so), which exports these functions instead of a handler's.

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"
	"unsafe"
)

// Key names a primary object: its namespace (empty for a cluster-scoped kind) and name.
type Key struct {
	Namespace string
	Name      string
}

// String is the cache key: `namespace/name`, or `name`.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Reconciler brings the primary object a key names to the state it asks for, reading it
// from the cache (it may be gone: deleted). The host calls it for one key at a time, never
// for one key twice at once, once more when the key changed during a call, and again with
// exponential backoff after an error (wrap it with [Fatal] to drop the key until its next
// change) while the other keys proceed; Action.RequeueAfter reconciles it again later.
type Reconciler interface {
	Reconcile(key Key) (Action, error)
}

// KeyMapper is implemented by reconcilers whose manifest maps a watched resource by the
// plugin (`mapTo: {plugin: true}`): the keys of the primaries an event on obj concerns. It
// runs for every event of the resource: keep it quick, and send no requests.
type KeyMapper interface {
	MapToKeys(obj *Object) []Key
}

var reconciler Reconciler

// Reconcile registers the plugin's reconciler. Call it from the plugin's init function.
func Reconcile(r Reconciler) {
	reconciler = r
}

//go:wasmimport wink:plugin/queue@0.4.0 enqueue
func importEnqueue(nsSome uint32, nsPtr unsafe.Pointer, nsLen uint32, namePtr unsafe.Pointer, nameLen uint32, afterMs uint64)

// Enqueue reconciles key (any key of the primary resource) after `after`, or as soon as
// possible when it is zero. A key that already waits keeps the earlier time.
func Enqueue(key Key, after time.Duration) {
	some, nsPtr, nsLen := optionString(key.Namespace)
	namePtr, nameLen := str(key.Name)
	ms := after.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	importEnqueue(some, nsPtr, nsLen, namePtr, nameLen, uint64(ms))
}

// errNoReconciler is the error of a call when no reconciler is registered.
const errNoReconciler = "no reconciler registered: call wink.Reconcile in the plugin's init function"

//go:wasmexport wink:plugin/reconciler@0.4.0#init
func exportReconcilerInit(config unsafe.Pointer, configLen uint32) unsafe.Pointer {
	return initExport(config, configLen, reconciler, errNoReconciler) // a nil interface is a nil any
}

//go:wasmexport wink:plugin/reconciler@0.4.0#reconcile
func exportReconcile(nsSome uint32, nsPtr unsafe.Pointer, nsLen uint32, namePtr unsafe.Pointer, nameLen uint32) unsafe.Pointer {
	key := Key{Name: strings.Clone(unsafe.String((*byte)(namePtr), nameLen))}
	if nsSome != 0 {
		key.Namespace = strings.Clone(unsafe.String((*byte)(nsPtr), nsLen))
	}
	unpin()
	return returnOutcome(reconcileKey(key))
}

// reconcileKey runs one reconcile: a panic becomes an error (retried).
func reconcileKey(key Key) (Action, error) {
	var missing error
	if reconciler == nil {
		missing = errors.New(errNoReconciler)
	}
	return call("reconcile", nil, missing, func() (Action, error) { return reconciler.Reconcile(key) })
}

// mapped holds map-to-keys' result (its records and their strings) until the host has read it.
var (
	mapped        []uint64
	mappedStrings []string
)

// keyRecordSize is the size of an object-key record: option<string> (12 bytes) and string (8).
const keyRecordSize = 20

//go:wasmexport wink:plugin/reconciler@0.4.0#map-to-keys
func exportMapToKeys(obj uint32) unsafe.Pointer {
	keys := mapToKeys(lent(obj))
	collectIfGrown()
	exportArea = area{}
	mappedStrings = mappedStrings[:0]
	mapped = make([]uint64, (len(keys)*keyRecordSize+7)/8+1)
	base := uintptr(unsafe.Pointer(&mapped[0]))
	for i, key := range keys {
		p := base + uintptr(i)*keyRecordSize
		mappedStrings = append(mappedStrings, key.Namespace, key.Name)
		storeOptionString(p, key.Namespace, key.Namespace != "")
		storeString(p+12, key.Name)
	}
	storeU32(exportArea.at(0), uint32(base))
	storeU32(exportArea.at(4), uint32(len(keys)))
	return exportArea.ptr()
}

// mapToKeys asks the reconciler, if it maps; the lent object expires afterwards and a panic
// maps to no key.
func mapToKeys(o *Object) (keys []Key) {
	defer func() {
		importObjectDrop(o.handle)
		o.handle = expired
		if r := recover(); r != nil {
			slog.Error(fmt.Sprintf("MapToKeys panicked: %v\n%s", r, debug.Stack()))
			keys = nil
		}
	}()
	if m, ok := reconciler.(KeyMapper); ok {
		keys = m.MapToKeys(o)
	}
	return keys
}

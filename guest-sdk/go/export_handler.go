//go:build wasip1 && !wink_reconciler

package wink

// The exports of the handler-plugin world: a plugin built without the wink_reconciler tag
// (its manifest has no `reconcile:` section) is a handler.

import (
	"errors"
	"unsafe"
)

//go:wasmexport wink:plugin/handler@0.4.0#init
func exportInit(config unsafe.Pointer, configLen uint32) unsafe.Pointer {
	text := unsafe.String((*byte)(config), configLen)
	exportArea = area{}
	var err error
	if handler == nil {
		err = errors.New("no handler registered: call wink.Handle in the plugin's init function")
	} else if initializer, ok := handler.(Initializer); ok {
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

//go:wasmexport wink:plugin/handler@0.4.0#on-add
func exportOnAdd(obj uint32, initialList uint32) unsafe.Pointer {
	o := lent(obj)
	return returnOutcome(call([]*Object{o}, func() (Action, error) { return handler.OnAdd(o, initialList != 0) }))
}

//go:wasmexport wink:plugin/handler@0.4.0#on-update
func exportOnUpdate(old, new uint32) unsafe.Pointer {
	o, n := lent(old), lent(new)
	return returnOutcome(call([]*Object{o, n}, func() (Action, error) { return handler.OnUpdate(o, n) }))
}

//go:wasmexport wink:plugin/handler@0.4.0#on-delete
func exportOnDelete(obj uint32, finalStateUnknown uint32) unsafe.Pointer {
	o := lent(obj)
	return returnOutcome(call([]*Object{o}, func() (Action, error) { return handler.OnDelete(o, finalStateUnknown != 0) }))
}

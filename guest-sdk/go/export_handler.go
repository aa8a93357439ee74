//go:build wasip1 && !wink_reconciler

package wink

// The exports of the handler-plugin world: a plugin built without the wink_reconciler tag
// (its manifest has no `reconcile:` section) is a handler.

import (
	"errors"
	"unsafe"
)

// errNoHandler is the error of a call when no handler is registered.
const errNoHandler = "no handler registered: call wink.Handle in the plugin's init function"

// noHandler is the error of a call while no handler is registered.
func noHandler() error {
	if handler == nil {
		return errors.New(errNoHandler)
	}
	return nil
}

//go:wasmexport wink:plugin/handler@0.4.0#init
func exportInit(config unsafe.Pointer, configLen uint32) unsafe.Pointer {
	return initExport(config, configLen, handler, errNoHandler) // a nil interface is a nil any
}

//go:wasmexport wink:plugin/handler@0.4.0#on-add
func exportOnAdd(obj uint32, initialList uint32) unsafe.Pointer {
	o := lent(obj)
	return returnOutcome(call("handler", []*Object{o}, noHandler(), func() (Action, error) { return handler.OnAdd(o, initialList != 0) }))
}

//go:wasmexport wink:plugin/handler@0.4.0#on-update
func exportOnUpdate(old, new uint32) unsafe.Pointer {
	o, n := lent(old), lent(new)
	return returnOutcome(call("handler", []*Object{o, n}, noHandler(), func() (Action, error) { return handler.OnUpdate(o, n) }))
}

//go:wasmexport wink:plugin/handler@0.4.0#on-delete
func exportOnDelete(obj uint32, finalStateUnknown uint32) unsafe.Pointer {
	o := lent(obj)
	return returnOutcome(call("handler", []*Object{o}, noHandler(), func() (Action, error) { return handler.OnDelete(o, finalStateUnknown != 0) }))
}

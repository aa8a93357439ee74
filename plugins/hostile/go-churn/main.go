// go-churn allocates on every event while reading large results from the host, so that Go's
// collector would run inside cabi_realloc were the SDK not to keep it out. It logs
// `listed <n>` per event.
package main

import (
	"fmt"
	"log/slog"

	"wink.dev/wink"
)

var kept [][]byte

func churn(obj *wink.Object) (wink.Action, error) {
	all, err := wink.Cache.List(wink.Resource{APIVersion: "v1", Kind: "ConfigMap"}, "")
	if err != nil {
		return wink.Action{}, err
	}
	size := 0
	for _, cm := range all {
		size += len(cm.JSON())
	}
	kept = append(kept, make([]byte, 1<<20))
	if len(kept) > 4 {
		kept = kept[1:]
	}
	slog.Info(fmt.Sprintf("listed %d for %s (%d bytes)", len(all), obj.Name(), size))
	return wink.Action{}, nil
}

func init() {
	wink.Handle(wink.HandlerFuncs{
		AddFunc:    func(obj *wink.Object, _ bool) (wink.Action, error) { return churn(obj) },
		UpdateFunc: func(_, obj *wink.Object) (wink.Action, error) { return churn(obj) },
	})
}

func main() {}

// bench-lang-go: the languages benchmark's handlers in Go (plugin.yaml says which).
package main

import "wink.dev/wink"

var sink int

type pod struct {
	Spec struct {
		Containers []struct {
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
}

func init() {
	wink.Handle(wink.HandlerFuncs{
		AddFunc: func(obj *wink.Object, _ bool) (wink.Action, error) {
			app, _ := obj.Label("app")
			sink = len(obj.Name()) + len(app)
			return wink.Action{}, nil
		},
		UpdateFunc: func(_, obj *wink.Object) (wink.Action, error) {
			var p pod
			if err := obj.Decode(&p); err != nil {
				return wink.Action{}, err
			}
			sink = len(p.Spec.Containers[0].Image)
			return wink.Action{}, nil
		},
	})
}

func main() {}

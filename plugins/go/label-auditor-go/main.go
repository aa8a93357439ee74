// label-auditor-go warns about objects missing the labels its config requires: the Go port
// of the Rust label-auditor, and the small example of the Go SDK.
package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"wink.dev/wink"
)

type auditor struct{ required []string }

// Init reads `config: {required: [label, ...]}`.
func (a *auditor) Init(config []byte) error {
	var c struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(config, &c); err != nil || len(c.Required) == 0 {
		return errors.New(`config must be {"required": ["label", ...]}`)
	}
	a.required = c.Required
	return nil
}

func (a *auditor) audit(obj *wink.Object) (wink.Action, error) {
	var missing []string
	for _, label := range a.required {
		if _, ok := obj.Label(label); !ok { // reads one label, not the whole object
			missing = append(missing, label)
		}
	}
	if len(missing) > 0 {
		slog.Warn(obj.Kind() + " " + obj.Key() + " is missing required labels: " + strings.Join(missing, ", "))
	}
	return wink.Action{}, nil
}

func (a *auditor) OnAdd(obj *wink.Object, _ bool) (wink.Action, error) { return a.audit(obj) }
func (a *auditor) OnUpdate(_, new *wink.Object) (wink.Action, error)   { return a.audit(new) }
func (a *auditor) OnDelete(*wink.Object, bool) (wink.Action, error)    { return wink.Action{}, nil }

func init() { wink.Handle(&auditor{}) }

func main() {}

// reconcile-probe-go: the reconcile probe of plugins/probes/reconcile-probe in Go, for the
// tests of the reconciler machinery (tests/tests/reconcilers.rs), which run the probes of
// every language with the same outcomes (tests/conformance/SPEC.md, "Reconcilers").
package main

import (
	"fmt"
	"log/slog"
	"strconv"

	"wink.dev/wink"
)

var configMaps = wink.Resource{APIVersion: "v1", Kind: "ConfigMap"}

type probe struct {
	enqueued map[string]bool
	failures map[string]int
}

func (p *probe) Reconcile(key wink.Key) (wink.Action, error) {
	slog.Info("reconcile key=" + key.String())
	cm, err := wink.Cache.Get(configMaps, key.String())
	if err != nil {
		return wink.Action{}, err
	}
	if cm == nil {
		slog.Info("gone key=" + key.String())
		return wink.Action{}, nil
	}
	var body struct {
		Data map[string]string `json:"data"`
	}
	if err := cm.Decode(&body); err != nil {
		return wink.Action{}, wink.Fatal(err)
	}
	if other, ok := body.Data["enqueue"]; ok && !p.enqueued[key.String()] {
		p.enqueued[key.String()] = true
		target := wink.Key{Namespace: key.Namespace, Name: other}
		wink.Enqueue(target, 0)
		slog.Info("enqueued other=" + target.String())
	}
	if text, ok := body.Data["fail"]; ok {
		times, _ := strconv.Atoi(text)
		p.failures[key.String()]++
		attempt := p.failures[key.String()]
		if attempt <= times {
			slog.Info(fmt.Sprintf("fail key=%s attempt=%d", key, attempt))
			return wink.Action{}, fmt.Errorf("asked to fail %d times", times)
		}
		if attempt == times+1 {
			slog.Info("recovered key=" + key.String())
		}
	}
	return wink.Action{}, nil
}

func (p *probe) MapToKeys(obj *wink.Object) []wink.Key {
	target, ok := obj.Annotation("probe/for")
	if !ok || target == "" {
		return nil
	}
	key := wink.Key{Namespace: obj.Namespace(), Name: target}
	slog.Info(fmt.Sprintf("map secret=%s to=%s", obj.Key(), key))
	return []wink.Key{key}
}

func init() {
	wink.Reconcile(&probe{enqueued: map[string]bool{}, failures: map[string]int{}})
}

func main() {}

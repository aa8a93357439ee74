// conformance-go: the Go guest of wink's conformance suite.
//
// Implements tests/conformance/SPEC.md with the Go SDK (guest-sdk/go); the guests of the
// other languages next to this one implement the same lines. Build with
// `cargo xtask build-plugins`; `cargo test -p wink-tests --test conformance -- go` runs it.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"wink.dev/wink"
)

var (
	configMaps = wink.Resource{APIVersion: "v1", Kind: "ConfigMap"}
	pods       = wink.Resource{APIVersion: "v1", Kind: "Pod"}
	secrets    = wink.Resource{APIVersion: "v1", Kind: "Secret"}
)

// conformance keeps the config's lookupKey and the keys already answered with a retry.
type conformance struct {
	lookupKey string
	retried   map[string]bool
}

func (c *conformance) Init(config []byte) error {
	var cfg struct {
		LookupKey any `json:"lookupKey"`
	}
	_ = json.Unmarshal(config, &cfg)
	key, ok := cfg.LookupKey.(string)
	if !ok {
		return errors.New("bad config: lookupKey must be a string")
	}
	c.lookupKey = key
	c.retried = map[string]bool{}
	wink.Log(wink.LevelTrace, "init level=trace")
	slog.Debug("init level=debug")
	slog.Info("init level=info")
	slog.Warn("init level=warn")
	slog.Error("init level=error")
	return nil
}

// errorName is the spec's name of a request or cache error.
func errorName(err error) string {
	for kind, name := range map[error]string{
		wink.ErrNotPermitted: "not-permitted", wink.ErrForbidden: "forbidden", wink.ErrNotFound: "not-found",
		wink.ErrAlreadyExists: "already-exists", wink.ErrConflict: "conflict", wink.ErrInvalid: "invalid",
		wink.ErrBadRequest: "bad-request", wink.ErrRateLimited: "rate-limited", wink.ErrTimedOut: "timed-out",
		wink.ErrUnavailable: "unavailable", wink.ErrUnknownIndex: "unknown-index",
	} {
		if errors.Is(err, kind) {
			return name
		}
	}
	return "unexpected"
}

// failed logs `<step> failed <what>` at error level and returns fatal(<what>).
func failed(step, what string) error {
	slog.Error(step + " failed " + what)
	return wink.Fatal(errors.New(what))
}

// configMap is the part of a ConfigMap the guest reads.
type configMap struct {
	Data map[string]string `json:"data"`
}

func data(obj *wink.Object, key string) string {
	var cm configMap
	_ = obj.Decode(&cm)
	return cm.Data[key]
}

func (c *conformance) lookupGet(key string) error {
	cm, err := wink.Cache.Get(configMaps, key)
	switch {
	case err != nil:
		return failed("lookup", fmt.Sprintf("get %s: %v", key, err))
	case cm == nil:
		slog.Info("lookup get key=" + key + " found=false")
	default:
		greeting := data(cm, "greeting")
		if greeting == "" {
			return failed("lookup", key+" has no data.greeting")
		}
		slog.Info(fmt.Sprintf("lookup get key=%s found=true rv=%s greeting=%s", key, cm.ResourceVersion(), greeting))
	}
	return nil
}

// lookup is step 3 of the spec: the five cache reads.
func (c *conformance) lookup(obj *wink.Object) error {
	ns := obj.Namespace()
	if err := c.lookupGet(c.lookupKey); err != nil {
		return err
	}
	if err := c.lookupGet(ns + "/absent"); err != nil {
		return err
	}
	objects, err := wink.Cache.ByIndex(pods, "namespace", ns)
	if err != nil {
		return failed("lookup", "by-index: "+err.Error())
	}
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.Key()
	}
	slog.Info("lookup index=namespace value=" + ns + " keys=" + strings.Join(keys, ","))
	if _, err := wink.Cache.Get(secrets, ns+"/token"); err == nil {
		return failed("lookup", "reading a Secret was not refused")
	} else {
		slog.Info("lookup denied resource=v1/Secret error=" + errorName(err))
	}
	if _, err := wink.Cache.ByIndex(pods, "no-such-index", "x"); err == nil {
		return failed("lookup", "an unknown index was not refused")
	} else {
		slog.Info("lookup denied index=no-such-index error=" + errorName(err))
	}
	return nil
}

// write is step 4 of the spec: the requests to the cluster.
func write(obj *wink.Object) (wink.Action, error) {
	ns, madeName := obj.Namespace(), obj.Name()+"-made"
	made := ns + "/" + madeName
	fail := func(what string, err error) (wink.Action, error) {
		return wink.Action{}, failed("write", fmt.Sprintf("%s: %s: %v", what, errorName(err), err))
	}
	configMap := func(step string) map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": madeName, "namespace": ns},
			"data":     map[string]any{"step": step},
		}
	}
	created, err := wink.Cluster.Create(configMap("created"))
	if err != nil {
		return fail("create", err)
	}
	slog.Info("write create key=" + made + " step=" + data(created, "step"))
	patched, err := wink.Cluster.Patch(configMaps, ns, madeName, wink.MergePatch(map[string]any{"data": map[string]any{"step": "patched"}}))
	if err != nil {
		return fail("patch", err)
	}
	slog.Info("write patch key=" + made + " step=" + data(patched, "step"))
	var stale map[string]any
	_ = created.Decode(&stale)
	stale["data"] = map[string]any{"step": "stale"}
	switch _, err := wink.Cluster.Update(stale); {
	case errors.Is(err, wink.ErrConflict):
		slog.Info("write conflict key=" + made)
	case err != nil:
		return fail("stale update", err)
	default:
		return wink.Action{}, failed("write", "a stale update was not a conflict")
	}
	live, err := wink.Cluster.Get(configMaps, ns, madeName)
	if err != nil {
		return fail("get", err)
	}
	var current map[string]any
	_ = live.Decode(&current)
	current["data"] = map[string]any{"step": "updated"}
	updated, err := wink.Cluster.Update(current)
	if err != nil {
		return fail("update", err)
	}
	slog.Info("write update key=" + made + " step=" + data(updated, "step"))
	secret := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": obj.Name() + "-secret", "namespace": ns},
	}
	switch _, err := wink.Cluster.Create(secret); {
	case errors.Is(err, wink.ErrNotPermitted):
		slog.Info("write denied resource=v1/Secret error=" + errorName(err))
	case err != nil:
		return fail("create Secret", err)
	default:
		return wink.Action{}, failed("write", "creating a Secret was not refused")
	}
	event := wink.Event{Regarding: obj.Reference(), Type: wink.Normal, Reason: "Conformance", Action: "Write", Note: "wrote " + made}
	if err := wink.Cluster.RecordEvent(event); err != nil {
		return fail("record-event", err)
	}
	slog.Info("write event reason=Conformance")
	if time.Now().Unix() > 1_700_000_000 {
		slog.Info("write clock ok")
	}
	return wink.Action{RequeueAfter: time.Millisecond}, nil
}

// react is steps 1–3 of the spec, after the event's line.
func (c *conformance) react(obj *wink.Object, mayLookUp bool) error {
	key := obj.Key()
	if v, _ := obj.Label("conformance/retry"); v == "once" && !c.retried[key] {
		c.retried[key] = true
		slog.Info("retry key=" + key)
		return errors.New("asked to retry")
	}
	if v, _ := obj.Label("conformance/fatal"); v == "true" {
		slog.Info("fatal key=" + key)
		return wink.Fatal(errors.New("asked to fail"))
	}
	if v, _ := obj.Label("conformance/lookup"); mayLookUp && v == "true" {
		return c.lookup(obj)
	}
	return nil
}

func (c *conformance) OnAdd(obj *wink.Object, initialList bool) (wink.Action, error) {
	slog.Info(fmt.Sprintf("add key=%s rv=%s initial=%t", obj.Key(), obj.ResourceVersion(), initialList))
	if err := c.react(obj, true); err != nil {
		return wink.Action{}, err
	}
	if v, _ := obj.Label("conformance/write"); v == "true" {
		return write(obj)
	}
	return wink.Action{}, nil
}

func (c *conformance) OnUpdate(old, new *wink.Object) (wink.Action, error) {
	slog.Info(fmt.Sprintf("update key=%s old_rv=%s new_rv=%s", new.Key(), old.ResourceVersion(), new.ResourceVersion()))
	if err := c.react(new, true); err != nil {
		return wink.Action{}, err
	}
	if v, _ := new.Label("conformance/write"); v == "true" && old.ResourceVersion() == new.ResourceVersion() {
		slog.Info("requeue key=" + new.Key())
	}
	return wink.Action{}, nil
}

func (c *conformance) OnDelete(obj *wink.Object, finalStateUnknown bool) (wink.Action, error) {
	slog.Info(fmt.Sprintf("delete key=%s rv=%s unknown=%t", obj.Key(), obj.ResourceVersion(), finalStateUnknown))
	return wink.Action{}, c.react(obj, false)
}

func init() { wink.Handle(&conformance{}) }

func main() {}

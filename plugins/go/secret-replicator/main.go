// secret-replicator copies Secrets and ConfigMaps into other namespaces, as Reflector and
// kubed do.
//
// A source annotated `wink.dev/replicate-to: "ns-a,ns-b"` is copied into each namespace it
// lists (never into its own) by server-side apply, and the copies are kept in sync when it
// changes. A copy carries `wink.dev/replicated-from: <namespace>/<name>`; it is deleted when
// its source is deleted or its namespace leaves the list, and restored when someone edits or
// deletes it while its source still asks for it. A copy that cannot be written (its namespace
// does not exist, say) is reported as a Warning Event on the source, and written when the
// namespace is created.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"wink.dev/wink"
)

const (
	replicateTo    = "wink.dev/replicate-to"
	replicatedFrom = "wink.dev/replicated-from"
)

// orphanGrace is how long a copy whose source is not cached waits before it is deleted: at
// start the source may not have been delivered yet.
const orphanGrace = 5 * time.Second

// source is the part of a Secret or ConfigMap that is copied.
type source struct {
	Metadata struct {
		Labels map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string]string `json:"binaryData,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
}

// same says whether a copy holds what its source does.
func same(a, b *source) bool {
	return maps.Equal(a.Metadata.Labels, b.Metadata.Labels) && a.Type == b.Type &&
		maps.Equal(a.Data, b.Data) && maps.Equal(a.BinaryData, b.BinaryData)
}

// targets are the namespaces obj asks to be copied into, without its own.
func targets(obj *wink.Object) []string {
	list, _ := obj.Annotation(replicateTo)
	var namespaces []string
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if ns != "" && ns != obj.Namespace() && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces
}

func resourceOf(obj *wink.Object) wink.Resource {
	return wink.Resource{APIVersion: obj.APIVersion(), Kind: obj.Kind()}
}

// copyOf is the copy of src in namespace ns, as this plugin applies it.
func copyOf(src *wink.Object, body *source, ns string) map[string]any {
	metadata := map[string]any{
		"name":        src.Name(),
		"namespace":   ns,
		"annotations": map[string]string{replicatedFrom: src.Key()},
	}
	if len(body.Metadata.Labels) > 0 {
		metadata["labels"] = body.Metadata.Labels
	}
	obj := map[string]any{"apiVersion": src.APIVersion(), "kind": src.Kind(), "metadata": metadata}
	if body.Type != "" {
		obj["type"] = body.Type
	}
	for field, value := range map[string]map[string]string{"data": body.Data, "binaryData": body.BinaryData} {
		if len(value) > 0 {
			obj[field] = value
		}
	}
	if body.Immutable != nil {
		obj["immutable"] = *body.Immutable
	}
	return obj
}

// copies are the cached copies of the source with this key.
func copies(resource wink.Resource, key string) ([]*wink.Object, error) {
	all, err := wink.Cache.List(resource, "")
	if err != nil {
		return nil, err
	}
	var found []*wink.Object
	for _, obj := range all {
		if from, _ := obj.Annotation(replicatedFrom); from == key {
			found = append(found, obj)
		}
	}
	return found, nil
}

func warn(src *wink.Object, reason, note string) {
	slog.Warn(note, "source", src.Key())
	event := wink.Event{Regarding: src.Reference(), Type: wink.Warning, Reason: reason, Action: "Replicate", Note: note}
	if err := wink.Cluster.RecordEvent(event); err != nil {
		slog.Warn("cannot record an Event", "source", src.Key(), "error", err)
	}
}

// reconcile makes the copies of src what its annotation asks: applied where listed, deleted
// elsewhere.
func reconcile(src *wink.Object) error {
	want := targets(src)
	resource := resourceOf(src)
	existing, err := copies(resource, src.Key())
	if err != nil {
		return err
	}
	for _, c := range existing {
		if !slices.Contains(want, c.Namespace()) {
			if err := remove(resource, c); err != nil {
				return err
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	body, err := decode(src)
	if err != nil {
		return err
	}
	for _, ns := range want {
		if err := apply(src, body, ns); err != nil {
			return err
		}
	}
	return nil
}

func decode(obj *wink.Object) (*source, error) {
	var body source
	if err := obj.Decode(&body); err != nil {
		return nil, wink.Fatal(fmt.Errorf("%s does not decode: %w", obj.Key(), err))
	}
	return &body, nil
}

// apply writes the copy of src into ns by server-side apply, which creates it or takes back
// every field it holds.
func apply(src *wink.Object, body *source, ns string) error {
	_, err := wink.Cluster.Patch(resourceOf(src), ns, src.Name(), wink.Apply(copyOf(src, body, ns), true))
	switch {
	case errors.Is(err, wink.ErrNotFound), errors.Is(err, wink.ErrInvalid), errors.Is(err, wink.ErrForbidden):
		warn(src, "ReplicationFailed", fmt.Sprintf("cannot copy %s %s into namespace %s: %v", src.Kind(), src.Key(), ns, err))
		return nil
	case err != nil:
		return err
	}
	slog.Info("copied", "kind", src.Kind(), "source", src.Key(), "namespace", ns)
	return nil
}

func remove(resource wink.Resource, c *wink.Object) error {
	_, err := wink.Cluster.Delete(resource, c.Namespace(), c.Name(), wink.DeleteOptions{UID: c.UID()})
	if err != nil && !errors.Is(err, wink.ErrNotFound) && !errors.Is(err, wink.ErrConflict) {
		return err
	}
	slog.Info("deleted copy", "kind", c.Kind(), "copy", c.Key())
	return nil
}

// copyEvent is what an event on a copy means.
type copyEvent int

const (
	copyListed  copyEvent = iota // delivered with the initial list
	copyChanged                  // added or updated live
	copyDeleted
	copyRequeued // called again after orphanGrace
)

// onCopy puts a copy right by its source: restored when it was edited or deleted while its
// source still lists its namespace, deleted when its source no longer does. A copy whose
// source is not cached is deleted, but only after orphanGrace when it came with the initial
// list (its source may not have been delivered yet).
func onCopy(c *wink.Object, from string, event copyEvent) (wink.Action, error) {
	src, err := wink.Cache.Get(resourceOf(c), from)
	switch {
	case err != nil:
		return wink.Action{}, err
	case src == nil && event == copyListed:
		return wink.Action{RequeueAfter: orphanGrace}, nil
	case src == nil && event == copyDeleted:
		return wink.Action{}, nil
	case src == nil:
		return wink.Action{}, remove(resourceOf(c), c)
	case event == copyListed:
		return wink.Action{}, nil // the source's own add reconciles its copies
	case !slices.Contains(targets(src), c.Namespace()):
		if event == copyDeleted {
			return wink.Action{}, nil
		}
		return wink.Action{}, remove(resourceOf(c), c)
	}
	body, err := decode(src)
	if err != nil {
		return wink.Action{}, err
	}
	if event != copyDeleted {
		held, err := decode(c)
		if err != nil || same(held, body) {
			return wink.Action{}, err
		}
	}
	return wink.Action{}, apply(src, body, c.Namespace())
}

// namespaceAdded writes the copies a new namespace is listed for.
func namespaceAdded(ns string) error {
	for _, kind := range []string{"Secret", "ConfigMap"} {
		all, err := wink.Cache.List(wink.Resource{APIVersion: "v1", Kind: kind}, "")
		if err != nil {
			return err
		}
		for _, src := range all {
			if !slices.Contains(targets(src), ns) {
				continue
			}
			body, err := decode(src)
			if err != nil {
				return err
			}
			if err := apply(src, body, ns); err != nil {
				return err
			}
		}
	}
	return nil
}

type replicator struct{}

func (replicator) OnAdd(obj *wink.Object, initialList bool) (wink.Action, error) {
	if obj.Kind() == "Namespace" {
		if initialList {
			return wink.Action{}, nil // each source writes its own copies
		}
		return wink.Action{}, namespaceAdded(obj.Name())
	}
	if from, ok := obj.Annotation(replicatedFrom); ok {
		if initialList {
			return onCopy(obj, from, copyListed)
		}
		return onCopy(obj, from, copyChanged)
	}
	if _, ok := obj.Annotation(replicateTo); ok {
		return wink.Action{}, reconcile(obj)
	}
	return wink.Action{}, nil
}

func (replicator) OnUpdate(old, new *wink.Object) (wink.Action, error) {
	if new.Kind() == "Namespace" {
		return wink.Action{}, nil
	}
	if from, ok := new.Annotation(replicatedFrom); ok {
		if old.ResourceVersion() == new.ResourceVersion() {
			return onCopy(new, from, copyRequeued)
		}
		return onCopy(new, from, copyChanged)
	}
	_, had := old.Annotation(replicateTo)
	_, has := new.Annotation(replicateTo)
	if had || has {
		return wink.Action{}, reconcile(new)
	}
	return wink.Action{}, nil
}

func (replicator) OnDelete(obj *wink.Object, _ bool) (wink.Action, error) {
	if obj.Kind() == "Namespace" {
		return wink.Action{}, nil // its copies went with it
	}
	if from, ok := obj.Annotation(replicatedFrom); ok {
		return onCopy(obj, from, copyDeleted)
	}
	if _, ok := obj.Annotation(replicateTo); !ok {
		return wink.Action{}, nil
	}
	resource := resourceOf(obj)
	existing, err := copies(resource, obj.Key())
	if err != nil {
		return wink.Action{}, err
	}
	for _, c := range existing {
		if err := remove(resource, c); err != nil {
			return wink.Action{}, err
		}
	}
	return wink.Action{}, nil
}

func init() { wink.Handle(replicator{}) }

func main() {}

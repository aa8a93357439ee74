//go:build wasip1

package wink

import (
	"encoding/json"
	"runtime"
	"unsafe"
)

// Cluster sends requests to the cluster the host watches: live reads, writes and Events.
// Each is checked against the permissions the plugin's manifest grants before it leaves the
// host (ErrNotPermitted otherwise), counts against the plugin's request budget and waits at
// most its request timeout. Objects cross as JSON.
var Cluster cluster

type cluster struct{}

// argsArea holds the arguments of an import that takes them in memory.
var argsArea area

// body is the JSON of obj: []byte, string and json.RawMessage are taken as JSON already;
// anything else (a `*corev1.ConfigMap`, a map) is marshalled.
func body(obj any) (string, error) {
	switch v := obj.(type) {
	case []byte:
		return string(v), nil
	case json.RawMessage:
		return string(v), nil
	case string:
		return v, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", &RequestError{Kind: ErrBadRequest, Message: "the object does not marshal to JSON: " + err.Error()}
		}
		return string(b), nil
	}
}

// loadAnswer reads a result<object, request-error> from the import area.
func loadAnswer() (*Object, error) {
	defer unpin()
	if loadU8(importArea.at(0)) != 0 {
		return nil, loadRequestError(importArea.at(8))
	}
	return loadObject(importArea.at(8)), nil
}

// Get reads the object live from the API server (not from the cache). namespace is empty
// for cluster-scoped kinds.
func (cluster) Get(resource Resource, namespace, name string) (*Object, error) {
	a, an := str(resource.APIVersion)
	k, kn := str(resource.Kind)
	has, ns, nsn := optionString(namespace)
	n, nn := str(name)
	importClusterGet(a, an, k, kn, has, ns, nsn, n, nn, importArea.ptr())
	return loadAnswer()
}

func (cluster) write(send func(unsafe.Pointer, uint32, unsafe.Pointer), obj any) (*Object, error) {
	text, err := body(obj)
	if err != nil {
		return nil, err
	}
	p, n := str(text)
	send(p, n, importArea.ptr())
	runtime.KeepAlive(text)
	return loadAnswer()
}

// Create creates an object (apiVersion, kind, metadata with a name or generateName, and a
// namespace for namespaced kinds) and returns it as created. obj is JSON ([]byte, string)
// or a value that marshals to it, such as a `*corev1.ConfigMap` with its TypeMeta set.
func (c cluster) Create(obj any) (*Object, error) { return c.write(importClusterCreate, obj) }

// Update replaces an object. Its `metadata.resourceVersion` names the version it was read
// at: when the object changed since, the error is ErrConflict.
func (c cluster) Update(obj any) (*Object, error) { return c.write(importClusterUpdate, obj) }

// UpdateStatus replaces the status of an object (its status subresource).
func (c cluster) UpdateStatus(obj any) (*Object, error) {
	return c.write(importClusterUpdateStatus, obj)
}

// Patch is a patch document and its type: see MergePatch, JSONPatch, StrategicMergePatch and
// Apply.
type Patch struct {
	kind  uint32
	body  any
	force bool
}

// MergePatch is a JSON merge patch (RFC 7386) of body.
func MergePatch(body any) Patch { return Patch{kind: 0, body: body} }

// JSONPatch is a JSON patch (RFC 6902): body is the list of operations.
func JSONPatch(body any) Patch { return Patch{kind: 1, body: body} }

// StrategicMergePatch is a Kubernetes strategic merge patch (built-in kinds only).
func StrategicMergePatch(body any) Patch { return Patch{kind: 2, body: body} }

// Apply is a server-side apply of the (partial) object body, with the plugin's name as
// field manager; force takes over fields other managers own.
func Apply(body any, force bool) Patch { return Patch{kind: 3, body: body, force: force} }

type patchImport = func(
	unsafe.Pointer, uint32, unsafe.Pointer, uint32, uint32, unsafe.Pointer, uint32,
	unsafe.Pointer, uint32, uint32, unsafe.Pointer, uint32, uint32, unsafe.Pointer)

func (cluster) patch(send patchImport, resource Resource, namespace, name string, patch Patch) (*Object, error) {
	text, err := body(patch.body)
	if err != nil {
		return nil, err
	}
	a, an := str(resource.APIVersion)
	k, kn := str(resource.Kind)
	has, ns, nsn := optionString(namespace)
	n, nn := str(name)
	b, bn := str(text)
	force := uint32(0)
	if patch.force {
		force = 1
	}
	send(a, an, k, kn, has, ns, nsn, n, nn, patch.kind, b, bn, force, importArea.ptr())
	runtime.KeepAlive(text)
	return loadAnswer()
}

// Patch patches an object.
func (c cluster) Patch(resource Resource, namespace, name string, patch Patch) (*Object, error) {
	return c.patch(importClusterPatch, resource, namespace, name, patch)
}

// PatchStatus patches the status subresource of an object.
func (c cluster) PatchStatus(resource Resource, namespace, name string, patch Patch) (*Object, error) {
	return c.patch(importClusterPatchStatus, resource, namespace, name, patch)
}

// Propagation says how the dependents of a deleted object are treated.
type Propagation uint8

const (
	// PropagationDefault is the resource's default.
	PropagationDefault Propagation = iota
	// Orphan orphans the dependents.
	Orphan
	// Background deletes the object at once and its dependents afterwards.
	Background
	// Foreground keeps the object until its blocking dependents are gone.
	Foreground
)

// DeleteOptions are the options of a delete; the zero value is the server's defaults.
type DeleteOptions struct {
	// UID, when set, deletes only if the object still has this uid.
	UID string
	// ResourceVersion, when set, deletes only if the object is still at this version.
	ResourceVersion string
	Propagation     Propagation
	// GracePeriodSeconds, when not nil, is the seconds before the object is deleted.
	GracePeriodSeconds *int64
}

// Delete deletes an object. It returns the object when it remains while its finalizers run
// (with its deletionTimestamp set), nil when it is gone.
func (cluster) Delete(resource Resource, namespace, name string, options DeleteOptions) (*Object, error) {
	// The arguments in memory: resource @0, namespace @16, name @28, options @40 (uid @40,
	// resource-version @52, propagation @64, grace period @72).
	argsArea = area{}
	base := argsArea.at(0)
	storeString(base, resource.APIVersion)
	storeString(base+8, resource.Kind)
	storeOptionString(base+16, namespace, namespace != "")
	storeString(base+28, name)
	storeOptionString(base+40, options.UID, options.UID != "")
	storeOptionString(base+52, options.ResourceVersion, options.ResourceVersion != "")
	if options.Propagation != PropagationDefault {
		storeU8(base+64, 1)
		storeU8(base+65, uint8(options.Propagation-1))
	}
	if options.GracePeriodSeconds != nil {
		storeU8(base+72, 1)
		storeI64(base+80, *options.GracePeriodSeconds)
	}
	importClusterDelete(argsArea.ptr(), importArea.ptr())
	runtime.KeepAlive(resource)
	runtime.KeepAlive(namespace)
	runtime.KeepAlive(name)
	runtime.KeepAlive(options)
	defer unpin()
	if loadU8(importArea.at(0)) != 0 {
		return nil, loadRequestError(importArea.at(8))
	}
	if loadU8(importArea.at(8)) == 0 {
		return nil, nil
	}
	return loadObject(importArea.at(16)), nil
}

// ObjectReference points at one object, e.g. the subject of an Event.
type ObjectReference struct {
	APIVersion string
	Kind       string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	Name      string
	// UID is empty when unknown.
	UID string
}

// EventType is the severity of an Event.
type EventType uint8

const (
	// Normal is information.
	Normal EventType = iota
	// Warning is something the object's owner should look at.
	Warning
)

// Event is an Event (events.k8s.io/v1) about an object. Recording one needs the `create`
// and `patch` verbs on `events` in the `events.k8s.io` group: identical Events are
// aggregated into one with a count, as client-go's recorder does, which patches it.
type Event struct {
	Regarding ObjectReference
	Type      EventType
	// Reason is a short UpperCamelCase reason, e.g. `ConfigChanged`.
	Reason string
	// Action is what was done or failed, e.g. `Reload`.
	Action string
	// Note is a human-readable description (at most 1 KiB is kept).
	Note string
}

// RecordEvent records an Event about an object.
func (cluster) RecordEvent(event Event) error {
	if event.Type > Warning {
		return &RequestError{Kind: ErrBadRequest, Message: "an Event's type is Normal or Warning"}
	}
	// The record in memory: regarding @0 (api-version, kind, namespace @16, name @28,
	// uid @36), type @44, reason @48, action @56, note @64.
	argsArea = area{}
	base := argsArea.at(0)
	r := event.Regarding
	storeString(base, r.APIVersion)
	storeString(base+8, r.Kind)
	storeOptionString(base+16, r.Namespace, r.Namespace != "")
	storeString(base+28, r.Name)
	storeString(base+36, r.UID)
	storeU8(base+44, uint8(event.Type))
	storeString(base+48, event.Reason)
	storeString(base+56, event.Action)
	storeString(base+64, event.Note)
	importClusterRecordEvent(argsArea.ptr(), importArea.ptr())
	runtime.KeepAlive(event)
	defer unpin()
	if loadU8(importArea.at(0)) != 0 {
		return loadRequestError(importArea.at(4))
	}
	return nil
}

//go:build wasip1

package wink

import (
	"encoding/json"
	"unsafe"

	"wink.dev/wink/meta"
)

// Resource names a kind of object: its apiVersion and kind.
type Resource struct {
	// APIVersion is the group and version, e.g. `v1` or `apps/v1`.
	APIVersion string
	// Kind is the kind, e.g. `Pod`.
	Kind string
}

// OwnerReference is one entry of `metadata.ownerReferences` ([meta.Ref]: Controller says
// whether this owner is the managing controller).
type OwnerReference = meta.Ref

// Meta is the metadata of an object, parsed by the host.
type Meta struct {
	APIVersion string
	Kind       string
	// Namespace is empty for cluster-scoped objects.
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	// Generation is `metadata.generation`; HasGeneration says whether it is set.
	Generation    int64
	HasGeneration bool
	Labels        map[string]string
	Annotations   map[string]string
	// DeletionTimestamp is RFC 3339, empty unless the object is being deleted.
	DeletionTimestamp string
	OwnerReferences   []OwnerReference
}

// Object is a Kubernetes object. One given to a handler is lent by the host for the
// duration of the call and read on demand: each method copies only the part it returns, so a
// handler pays for what it reads. It must not be used after the handler returns (make a
// copy of what you need). Objects returned by [Cache] and [Cluster] calls are whole and
// stay valid.
type Object struct {
	handle uint32
	lent   bool
	// Whole objects: their metadata and JSON.
	meta *Meta
	json string
}

// expired marks lent objects whose call has returned.
const expired = ^uint32(0)

func (o *Object) lentHandle() uint32 {
	if o.handle == expired {
		panic("wink: an Object lent to a handler was used after the handler returned; copy what you need with Meta or JSON")
	}
	return o.handle
}

func (o *Object) lentString(read func(uint32, unsafe.Pointer)) string {
	read(o.lentHandle(), importArea.ptr())
	s := loadString(importArea.at(0))
	unpin()
	return s
}

func (o *Object) lentOption(read func(uint32, unsafe.Pointer, uint32, unsafe.Pointer), key string) (string, bool) {
	p, n := str(key)
	read(o.lentHandle(), p, n, importArea.ptr())
	s, ok := loadOptionString(importArea.at(0))
	unpin()
	return s, ok
}

// APIVersion is the object's `apiVersion`, e.g. `apps/v1`.
func (o *Object) APIVersion() string {
	if o.lent {
		return o.lentString(importObjectAPIVersion)
	}
	return o.meta.APIVersion
}

// Kind is the object's `kind`, e.g. `Deployment`.
func (o *Object) Kind() string {
	if o.lent {
		return o.lentString(importObjectKind)
	}
	return o.meta.Kind
}

// Namespace is `metadata.namespace`, empty for cluster-scoped objects.
func (o *Object) Namespace() string {
	if o.lent {
		importObjectNamespace(o.lentHandle(), importArea.ptr())
		s, _ := loadOptionString(importArea.at(0))
		unpin()
		return s
	}
	return o.meta.Namespace
}

// Name is `metadata.name`.
func (o *Object) Name() string {
	if o.lent {
		return o.lentString(importObjectName)
	}
	return o.meta.Name
}

// UID is `metadata.uid`, empty when the object has none.
func (o *Object) UID() string {
	if o.lent {
		return o.lentString(importObjectUID)
	}
	return o.meta.UID
}

// ResourceVersion is `metadata.resourceVersion`, empty when the object has none.
func (o *Object) ResourceVersion() string {
	if o.lent {
		return o.lentString(importObjectResourceVersion)
	}
	return o.meta.ResourceVersion
}

// Generation is `metadata.generation`, and whether it is set.
func (o *Object) Generation() (int64, bool) {
	if o.lent {
		importObjectGeneration(o.lentHandle(), importArea.ptr())
		if loadU8(importArea.at(0)) == 0 {
			return 0, false
		}
		return loadI64(importArea.at(8)), true
	}
	return o.meta.Generation, o.meta.HasGeneration
}

// Label is the value of the label key, and whether the object has it.
func (o *Object) Label(key string) (string, bool) {
	if o.lent {
		return o.lentOption(importObjectLabel, key)
	}
	v, ok := o.meta.Labels[key]
	return v, ok
}

// Annotation is the value of the annotation key, and whether the object has it.
func (o *Object) Annotation(key string) (string, bool) {
	if o.lent {
		return o.lentOption(importObjectAnnotation, key)
	}
	v, ok := o.meta.Annotations[key]
	return v, ok
}

// Key is the object's key in the cache: `namespace/name`, or `name` when cluster-scoped.
func (o *Object) Key() string {
	ns := o.Namespace()
	if ns == "" {
		return o.Name()
	}
	return ns + "/" + o.Name()
}

// Meta is the object's whole metadata (labels, annotations, owner references…).
func (o *Object) Meta() Meta {
	if o.lent {
		importObjectMeta(o.lentHandle(), importArea.ptr())
		m := loadMeta(importArea.at(0))
		unpin()
		return m
	}
	return *o.meta
}

// JSON is the whole object as the API server served it.
func (o *Object) JSON() []byte {
	if o.lent {
		return []byte(o.lentString(importObjectJSON))
	}
	return []byte(o.json)
}

// Decode unmarshals the whole object into v: a typed object such as `*corev1.Pod` from
// k8s.io/api, an `*unstructured.Unstructured`, a map, or a struct of your own.
func (o *Object) Decode(v any) error {
	if o.lent {
		return json.Unmarshal([]byte(o.lentString(importObjectJSON)), v)
	}
	return json.Unmarshal([]byte(o.json), v)
}

// Reference points at this object, e.g. as the subject of an Event.
func (o *Object) Reference() ObjectReference {
	return ObjectReference{
		APIVersion: o.APIVersion(), Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), UID: o.UID(),
	}
}

// The layout of the WIT `object-meta` record (112 bytes, 8-aligned) and `object` (120).
const (
	metaSize   = 112
	objectSize = 120
)

func loadPairs(p uintptr) map[string]string {
	pairs := map[string]string{}
	loadList(p, 16, func(e uintptr) { pairs[loadString(e)] = loadString(e + 8) })
	return pairs
}

func loadMeta(p uintptr) Meta {
	m := Meta{
		APIVersion:      loadString(p),
		Kind:            loadString(p + 8),
		Name:            loadString(p + 28),
		UID:             loadString(p + 36),
		ResourceVersion: loadString(p + 44),
		Labels:          loadPairs(p + 72),
		Annotations:     loadPairs(p + 80),
	}
	m.Namespace, _ = loadOptionString(p + 16)
	if loadU8(p+56) != 0 {
		m.Generation, m.HasGeneration = loadI64(p+64), true
	}
	m.DeletionTimestamp, _ = loadOptionString(p + 88)
	loadList(p+100, 36, func(e uintptr) {
		m.OwnerReferences = append(m.OwnerReferences, OwnerReference{
			APIVersion: loadString(e), Kind: loadString(e + 8), Name: loadString(e + 16),
			UID: loadString(e + 24), Controller: loadU8(e+32) != 0,
		})
	})
	return m
}

// loadObject reads a WIT `object` record into a whole Object.
func loadObject(p uintptr) *Object {
	m := loadMeta(p)
	return &Object{meta: &m, json: loadString(p + metaSize)}
}

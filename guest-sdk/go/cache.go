//go:build wasip1

package wink

// Cache reads the host's informer cache, scoped by the plugin's manifest: only the resources
// and namespaces it was granted (`resources` and `cache`). Reads are local: no request
// reaches the API server.
var Cache cache

type cache struct{}

// loadCacheError reads a `cache-error` (not-permitted or unknown-index) at p.
func loadCacheError(p uintptr) error {
	kind := ErrNotPermitted
	if loadU8(p) == 1 {
		kind = ErrUnknownIndex
	}
	return &RequestError{Kind: kind, Message: loadString(p + 4)}
}

// Get is the cached object of the resource with this key (`namespace/name`, or `name` when
// cluster-scoped); nil when it is not cached.
func (cache) Get(resource Resource, key string) (*Object, error) {
	a, an := str(resource.APIVersion)
	k, kn := str(resource.Kind)
	kp, kpn := str(key)
	importCacheGet(a, an, k, kn, kp, kpn, importArea.ptr())
	defer unpin()
	if loadU8(importArea.at(0)) != 0 {
		return nil, loadCacheError(importArea.at(8))
	}
	if loadU8(importArea.at(8)) == 0 {
		return nil, nil
	}
	return loadObject(importArea.at(16)), nil
}

// List is every cached object of the resource, or those in namespace when it is not empty.
func (cache) List(resource Resource, namespace string) ([]*Object, error) {
	a, an := str(resource.APIVersion)
	k, kn := str(resource.Kind)
	has, ns, nsn := optionString(namespace)
	importCacheList(a, an, k, kn, has, ns, nsn, importArea.ptr())
	return loadObjects()
}

// ByIndex is the cached objects whose index yields value. Built-in indexes: `namespace` and
// `owner-uid` (the uid of each of an object's owner references).
func (cache) ByIndex(resource Resource, index, value string) ([]*Object, error) {
	a, an := str(resource.APIVersion)
	k, kn := str(resource.Kind)
	i, in := str(index)
	v, vn := str(value)
	importCacheByIndex(a, an, k, kn, i, in, v, vn, importArea.ptr())
	return loadObjects()
}

// loadObjects reads a result<list<object>, cache-error> from the import area.
func loadObjects() ([]*Object, error) {
	defer unpin()
	if loadU8(importArea.at(0)) != 0 {
		return nil, loadCacheError(importArea.at(4))
	}
	var objects []*Object
	loadList(importArea.at(4), objectSize, func(p uintptr) { objects = append(objects, loadObject(p)) })
	return objects, nil
}

//! Read-only access to the host's informer cache.
//!
//! The host shares one cache per watched resource among all plugins; a plugin reads only the
//! resources its manifest watches or lists under `cache:`, and only in the namespaces it was
//! granted. Reads return [`Object`]s, like the events do. Outside a WebAssembly guest (a
//! plugin's native unit tests) every read fails with [`CacheError::NotPermitted`].

use std::fmt;

use crate::bindings::wink::plugin::cache as raw;
use crate::object::Object;

/// Why a cache read was refused: the manifest does not grant the resource or namespace, or the
/// resource has no index with the given name.
pub use raw::CacheError;

/// Names a cached resource by `apiVersion` and kind: `Resource::new("apps/v1", "ReplicaSet")`.
pub use raw::Resource;

/// The built-in index of objects by namespace, for [`by_index`].
pub const NAMESPACE_INDEX: &str = "namespace";

/// The built-in index of objects by the uid of each of their `ownerReferences`, for
/// [`by_index`]: the pods of a ReplicaSet are `by_index(&pods, OWNER_UID_INDEX, rs.uid())`.
pub const OWNER_UID_INDEX: &str = "owner-uid";

impl Resource {
    /// The resource of `kind` in `api_version` (`v1`, `apps/v1`, …).
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self { api_version: api_version.into(), kind: kind.into() }
    }

    /// The resource of the `k8s-openapi` type `K`: `Resource::of::<Pod>()`.
    #[cfg(feature = "k8s-openapi")]
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::API_VERSION, K::KIND)
    }
}

/// `apps/v1, Kind=ReplicaSet`, as Kubernetes prints a GroupVersionKind.
impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version, self.kind)
    }
}

/// The object of `resource` with this key (`namespace/name`, or `name` when cluster-scoped),
/// if cached.
pub fn get(resource: &Resource, key: &str) -> Result<Option<Object>, CacheError> {
    imp::get(resource, key)
}

/// Every cached object of `resource`, or only those in `namespace` when given.
pub fn list(resource: &Resource, namespace: Option<&str>) -> Result<Vec<Object>, CacheError> {
    imp::list(resource, namespace)
}

/// The cached objects of `resource` whose index `index` yields `value`; see
/// [`NAMESPACE_INDEX`] and [`OWNER_UID_INDEX`] for the built-in ones.
pub fn by_index(resource: &Resource, index: &str, value: &str) -> Result<Vec<Object>, CacheError> {
    imp::by_index(resource, index, value)
}

/// Inside a WebAssembly guest: the host's imports.
#[cfg(target_arch = "wasm32")]
mod imp {
    use super::{CacheError, Object, Resource, raw};
    use crate::bindings::wink::plugin::types;

    pub(super) fn get(resource: &Resource, key: &str) -> Result<Option<Object>, CacheError> {
        raw::get(resource, key).map(|o| o.map(Object::from_raw))
    }

    pub(super) fn list(resource: &Resource, namespace: Option<&str>) -> Result<Vec<Object>, CacheError> {
        raw::list(resource, namespace).map(objects)
    }

    pub(super) fn by_index(resource: &Resource, index: &str, value: &str) -> Result<Vec<Object>, CacheError> {
        raw::by_index(resource, index, value).map(objects)
    }

    fn objects(raw: Vec<types::Object>) -> Vec<Object> {
        raw.into_iter().map(Object::from_raw).collect()
    }
}

/// Natively (a plugin's unit tests): there is no host, every read is refused.
#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::{CacheError, Object, Resource};

    pub(super) fn get(resource: &Resource, key: &str) -> Result<Option<Object>, CacheError> {
        Err(no_host(resource, &format!("key {key:?}")))
    }

    pub(super) fn list(resource: &Resource, namespace: Option<&str>) -> Result<Vec<Object>, CacheError> {
        Err(no_host(resource, &format!("namespace {namespace:?}")))
    }

    pub(super) fn by_index(resource: &Resource, index: &str, value: &str) -> Result<Vec<Object>, CacheError> {
        Err(no_host(resource, &format!("index {index:?} = {value:?}")))
    }

    fn no_host(resource: &Resource, what: &str) -> CacheError {
        CacheError::NotPermitted(format!("no wink host outside WebAssembly: cannot read {resource}, {what}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_helpers() {
        let rs = Resource::new("apps/v1", "ReplicaSet");
        assert_eq!(rs.api_version, "apps/v1");
        assert_eq!(rs.kind, "ReplicaSet");
        assert_eq!(rs.to_string(), "apps/v1, Kind=ReplicaSet");
    }

    #[test]
    fn reads_fail_natively() {
        let pods = Resource::new("v1", "Pod");
        assert!(matches!(get(&pods, "a/b"), Err(CacheError::NotPermitted(_))));
        assert!(matches!(list(&pods, None), Err(CacheError::NotPermitted(_))));
        assert!(matches!(by_index(&pods, OWNER_UID_INDEX, "u"), Err(CacheError::NotPermitted(_))));
    }
}

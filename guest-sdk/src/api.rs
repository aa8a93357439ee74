//! [`Api`]: typed requests for one kind, in the shape of kube-rs's `Api<K>` — k8s-openapi
//! types in and out, the host's typed [`RequestError`]s (with the `k8s-openapi` feature).
//!
//! ```no_run
//! use wink_guest::Api;
//! use wink_guest::k8s_openapi::api::policy::v1::PodDisruptionBudget;
//!
//! fn drop_budget(namespace: &str, name: &str) -> Result<(), wink_guest::RequestError> {
//!     let budgets = Api::<PodDisruptionBudget>::namespaced(namespace);
//!     if let Some(budget) = budgets.get_opt(name)? {
//!         budgets.delete(name, &Default::default())?;
//!         let _ = budget.spec;
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Every request is the plain one of [`crate::cluster`] underneath: the manifest's
//! `permissions` and request budget apply, and an answer that does not decode as `K` is a
//! [`RequestError::BadRequest`] naming the kind.

use std::marker::PhantomData;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource as KubeResource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cache::Resource;
use crate::cluster::{self, DeleteOptions, Patch, RequestError};
use crate::object::Object;

/// Requests for the objects of kind `K` in one namespace, or of a cluster-scoped `K`.
pub struct Api<K> {
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Self { namespace: self.namespace.clone(), kind: PhantomData }
    }
}

impl<K> std::fmt::Debug for Api<K>
where
    K: KubeResource,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("kind", &K::KIND).field("namespace", &self.namespace).finish()
    }
}

impl<K> Api<K>
where
    K: KubeResource<Scope = NamespaceResourceScope>,
{
    /// The objects of a namespaced kind in `namespace`.
    pub fn namespaced(namespace: &str) -> Self {
        Self { namespace: Some(namespace.to_owned()), kind: PhantomData }
    }
}

impl<K> Api<K>
where
    K: KubeResource<Scope = ClusterResourceScope>,
{
    /// The objects of a cluster-scoped kind.
    pub fn all() -> Self {
        Self { namespace: None, kind: PhantomData }
    }
}

impl<K> Api<K>
where
    K: KubeResource + Serialize + DeserializeOwned,
{
    fn resource() -> Resource {
        Resource::of::<K>()
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Reads `name` live from the API server (not from the cache).
    pub fn get(&self, name: &str) -> Result<K, RequestError> {
        decode(cluster::get(&Self::resource(), self.namespace(), name)?)
    }

    /// Reads `name` live; `None` when there is no such object.
    pub fn get_opt(&self, name: &str) -> Result<Option<K>, RequestError> {
        match self.get(name) {
            Ok(obj) => Ok(Some(obj)),
            Err(RequestError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates `obj` in this `Api`'s namespace; returns it as created.
    pub fn create(&self, obj: &K) -> Result<K, RequestError> {
        decode(cluster::create(&self.encode(obj)?)?)
    }

    /// Replaces `obj` (its `metadata.resourceVersion` is the version it was read at:
    /// [`RequestError::Conflict`] when it changed since).
    pub fn replace(&self, obj: &K) -> Result<K, RequestError> {
        decode(cluster::update(&self.encode(obj)?)?)
    }

    /// Replaces the `status` of `obj` (its status subresource).
    pub fn replace_status(&self, obj: &K) -> Result<K, RequestError> {
        decode(cluster::update_status(&self.encode(obj)?)?)
    }

    /// Patches `name`.
    pub fn patch(&self, name: &str, patch: &Patch) -> Result<K, RequestError> {
        decode(cluster::patch(&Self::resource(), self.namespace(), name, patch)?)
    }

    /// Patches the status subresource of `name`.
    pub fn patch_status(&self, name: &str, patch: &Patch) -> Result<K, RequestError> {
        decode(cluster::patch_status(&Self::resource(), self.namespace(), name, patch)?)
    }

    /// Server-side applies `obj` (the fields the plugin manages), with the plugin's name as
    /// field manager; `force` takes fields another manager owns.
    pub fn apply(&self, obj: &K, force: bool) -> Result<K, RequestError> {
        decode(cluster::apply(&self.encode(obj)?, force)?)
    }

    /// Deletes `name`; returns it when it remains while its finalizers run.
    pub fn delete(&self, name: &str, options: &DeleteOptions) -> Result<Option<K>, RequestError> {
        cluster::delete(&Self::resource(), self.namespace(), name, options)?.map(decode).transpose()
    }

    /// `obj` as JSON with its `apiVersion` and `kind`, in this `Api`'s namespace.
    fn encode(&self, obj: &K) -> Result<serde_json::Value, RequestError> {
        let mut value = serde_json::to_value(obj)
            .map_err(|e| RequestError::BadRequest(format!("cannot encode the {}: {e}", K::KIND)))?;
        if !value.is_object() {
            return Err(RequestError::BadRequest(format!("a {} does not encode as an object", K::KIND)));
        }
        value["apiVersion"] = K::API_VERSION.into();
        value["kind"] = K::KIND.into();
        if let Some(namespace) = &self.namespace {
            match value["metadata"]["namespace"].as_str() {
                None => value["metadata"]["namespace"] = namespace.as_str().into(),
                Some(other) if other != namespace => {
                    return Err(RequestError::BadRequest(format!(
                        "the {} names namespace {other}, this Api is for {namespace}",
                        K::KIND
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(value)
    }
}

/// An answer as a `K`.
fn decode<K: KubeResource + DeserializeOwned>(obj: Object) -> Result<K, RequestError> {
    serde_json::from_str(obj.json())
        .map_err(|e| RequestError::BadRequest(format!("the answer does not decode as a {}: {e}", K::KIND)))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn config_map(namespace: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: namespace.map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn objects_are_sent_with_their_kind_in_the_apis_namespace() {
        let api = Api::<ConfigMap>::namespaced("shop");
        let sent = api.encode(&config_map(None)).unwrap();
        assert_eq!((sent["apiVersion"].as_str(), sent["kind"].as_str()), (Some("v1"), Some("ConfigMap")));
        assert_eq!(sent["metadata"]["namespace"], "shop");
        assert!(api.encode(&config_map(Some("shop"))).is_ok());
        let elsewhere = api.encode(&config_map(Some("other"))).unwrap_err();
        assert!(elsewhere.message().contains("names namespace other"), "{elsewhere:?}");
        let namespace = Namespace {
            metadata: ObjectMeta { name: Some("shop".into()), ..Default::default() },
            ..Default::default()
        };
        let sent = Api::<Namespace>::all().encode(&namespace).unwrap();
        assert_eq!(sent["metadata"].get("namespace"), None, "a cluster-scoped object names none");
    }

    #[test]
    fn requests_fail_natively_and_not_found_is_none() {
        let api = Api::<ConfigMap>::namespaced("shop");
        assert!(matches!(api.get("settings"), Err(RequestError::Unavailable(_))));
        assert!(matches!(api.get_opt("settings"), Err(RequestError::Unavailable(_))), "only NotFound is None");
        assert!(matches!(api.delete("settings", &DeleteOptions::default()), Err(RequestError::Unavailable(_))));
    }
}

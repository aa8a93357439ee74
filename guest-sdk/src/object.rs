//! [`Object`]: a Kubernetes object as the host delivers it, with typed accessors.
//!
//! The host parses an object's metadata once and keeps it beside the object's JSON, exactly as
//! the API server served it. [`Object`] reads the metadata without parsing anything and parses
//! the JSON only when asked: into a [`serde_json::Value`], into any `serde` type, or (with the
//! `k8s-openapi` feature) into `k8s-openapi` types.
//!
//! An object a handler receives is *lent*: it stays in the host, and each accessor fetches
//! its part the first time it is called ([`lent`](crate::lent)), so reading a name costs a
//! name, not the whole object. Objects from the cache and the cluster arrive whole.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::bindings::wink::plugin::types;
use crate::cache::Resource;
use crate::lent::Lent;

/// An entry of `metadata.ownerReferences`, as the host parsed it.
pub use crate::bindings::wink::plugin::types::OwnerReference;

/// Why an object's JSON could not be turned into what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The JSON is malformed or does not have the shape of the requested type.
    #[error("cannot parse {kind} {key} as {target}: {source}")]
    Json {
        /// The object's kind.
        kind: String,
        /// The object's key.
        key: String,
        /// The Rust type asked for.
        target: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// [`Object::from_json`] was given JSON that is not a Kubernetes object.
    #[error("not a Kubernetes object: {0}")]
    NotAnObject(String),
    /// The object is not of the kind the requested type describes.
    #[error("{key} is a {found}, not a {expected}")]
    WrongKind {
        /// The object's key.
        key: String,
        /// `apiVersion` and kind of the requested type.
        expected: String,
        /// `apiVersion` and kind of the object.
        found: String,
    },
}

/// A Kubernetes object delivered by the host: its parsed metadata and its JSON.
///
/// Metadata accessors parse nothing (a handler's object fetches each part from the host once,
/// the first time it is read); [`json_value`](Self::json_value), [`parse`](Self::parse) and
/// friends parse the JSON each time they are called. A clone is a whole copy, independent of
/// the handler call.
pub struct Object {
    repr: Repr,
}

#[allow(
    clippy::large_enum_variant,
    reason = "a lent object lives on the stack for one handler call; boxing it would cost an allocation per event"
)]
enum Repr {
    /// The whole object, in the plugin's memory.
    Whole(types::Object),
    /// Lent by the host for the handler call in progress.
    Lent(Lent),
}

impl Object {
    /// Wraps an object received through the raw bindings.
    pub fn from_raw(raw: types::Object) -> Self {
        Self { repr: Repr::Whole(raw) }
    }

    /// Wraps an object the host lent to the handler call in progress. The [`Object`] must not
    /// outlive the call (the export glue hands it to the handler by reference).
    pub(crate) fn lent(handle: &types::EventObject) -> Self {
        Self { repr: Repr::Lent(Lent::new(handle)) }
    }

    /// The object as the raw bindings represent it (a lent object is fetched whole).
    pub fn as_raw(&self) -> &types::Object {
        match &self.repr {
            Repr::Whole(raw) => raw,
            Repr::Lent(lent) => lent.whole(),
        }
    }

    /// Unwraps the object into its raw bindings representation.
    pub fn into_raw(self) -> types::Object {
        match self.repr {
            Repr::Whole(raw) => raw,
            Repr::Lent(lent) => lent.to_owned_object(),
        }
    }

    /// A string field: from the record, or from the lent object's cache.
    fn text(&self, whole: fn(&types::ObjectMeta) -> &String, lent: fn(&Lent) -> &str) -> &str {
        match &self.repr {
            Repr::Whole(raw) => whole(&raw.meta),
            Repr::Lent(l) => lent(l),
        }
    }

    /// The parsed metadata record (a lent object fetches it whole, once).
    fn meta(&self) -> &types::ObjectMeta {
        match &self.repr {
            Repr::Whole(raw) => &raw.meta,
            Repr::Lent(lent) => lent.meta(),
        }
    }

    /// Builds an object from its JSON, parsing the metadata the way the host does. Meant for
    /// unit tests of a plugin's logic, which run natively without a host.
    ///
    /// `apiVersion`, `kind` and `metadata.name` are required; labels and annotations are
    /// sorted by key.
    pub fn from_json(json: impl Into<String>) -> Result<Self, ParseError> {
        let json = json.into();
        let head: Head = serde_json::from_str(&json).map_err(|e| ParseError::NotAnObject(e.to_string()))?;
        let missing = |field: &str| ParseError::NotAnObject(format!("`{field}` is missing"));
        let meta = head.metadata.unwrap_or_default();
        let sorted = |map: Option<BTreeMap<String, String>>| -> Vec<(String, String)> {
            map.unwrap_or_default().into_iter().collect()
        };
        let raw = types::Object {
            meta: types::ObjectMeta {
                api_version: head.api_version.ok_or_else(|| missing("apiVersion"))?,
                kind: head.kind.ok_or_else(|| missing("kind"))?,
                namespace: meta.namespace.filter(|ns| !ns.is_empty()),
                name: meta.name.ok_or_else(|| missing("metadata.name"))?,
                uid: meta.uid.unwrap_or_default(),
                resource_version: meta.resource_version.unwrap_or_default(),
                generation: meta.generation,
                labels: sorted(meta.labels),
                annotations: sorted(meta.annotations),
                deletion_timestamp: meta.deletion_timestamp,
                owner_references: meta
                    .owner_references
                    .unwrap_or_default()
                    .into_iter()
                    .map(|o| types::OwnerReference {
                        api_version: o.api_version,
                        kind: o.kind,
                        name: o.name,
                        uid: o.uid,
                        controller: o.controller.unwrap_or(false),
                    })
                    .collect(),
            },
            json,
        };
        Ok(Self::from_raw(raw))
    }

    /// `apiVersion`, e.g. `v1` or `apps/v1`.
    pub fn api_version(&self) -> &str {
        self.text(|m| &m.api_version, Lent::api_version)
    }

    /// `kind`, e.g. `Pod`.
    pub fn kind(&self) -> &str {
        self.text(|m| &m.kind, Lent::kind)
    }

    /// The resource this object belongs to (its `apiVersion` and kind), for [`crate::cache`].
    pub fn resource(&self) -> Resource {
        Resource::new(self.api_version(), self.kind())
    }

    /// `metadata.namespace`; `None` for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        let namespace = match &self.repr {
            Repr::Whole(raw) => raw.meta.namespace.as_deref(),
            Repr::Lent(lent) => lent.namespace(),
        };
        namespace.filter(|ns| !ns.is_empty())
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.text(|m| &m.name, Lent::name)
    }

    /// The object's cache key: `namespace/name`, or `name` when cluster-scoped (client-go's
    /// `MetaNamespaceKeyFunc`).
    pub fn key(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{ns}/{}", self.name()),
            None => self.name().to_owned(),
        }
    }

    /// `metadata.uid`; empty when the object has none.
    pub fn uid(&self) -> &str {
        self.text(|m| &m.uid, Lent::uid)
    }

    /// `metadata.resourceVersion`; empty when the object has none.
    pub fn resource_version(&self) -> &str {
        self.text(|m| &m.resource_version, Lent::resource_version)
    }

    /// `metadata.generation`, when set.
    pub fn generation(&self) -> Option<i64> {
        match &self.repr {
            Repr::Whole(raw) => raw.meta.generation,
            Repr::Lent(lent) => lent.generation(),
        }
    }

    /// `metadata.ownerReferences`, parsed by the host.
    pub fn owner_references(&self) -> &[OwnerReference] {
        &self.meta().owner_references
    }

    /// The owner reference of `kind` (any apiVersion), preferring the managing controller.
    pub fn owner_of_kind(&self, kind: &str) -> Option<&OwnerReference> {
        self.owner_references().iter().filter(|o| o.kind == kind).max_by_key(|o| o.controller)
    }

    /// `metadata.labels` as `(key, value)` pairs, sorted by key.
    pub fn labels(&self) -> &[(String, String)] {
        &self.meta().labels
    }

    /// The value of label `key`, if the object has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        match &self.repr {
            Repr::Whole(raw) => lookup(&raw.meta.labels, key),
            Repr::Lent(lent) => lent.label(key),
        }
    }

    /// `metadata.annotations` as `(key, value)` pairs, sorted by key.
    pub fn annotations(&self) -> &[(String, String)] {
        &self.meta().annotations
    }

    /// The value of annotation `key`, if the object has it.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        match &self.repr {
            Repr::Whole(raw) => lookup(&raw.meta.annotations, key),
            Repr::Lent(lent) => lent.annotation(key),
        }
    }

    /// `metadata.deletionTimestamp` (RFC 3339) when the object is being deleted.
    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.meta().deletion_timestamp.as_deref()
    }

    /// The whole object as the API server served it (`metadata.managedFields` may have been
    /// stripped by the host).
    pub fn json(&self) -> &str {
        match &self.repr {
            Repr::Whole(raw) => &raw.json,
            Repr::Lent(lent) => lent.json(),
        }
    }

    /// Parses the object's JSON into a [`serde_json::Value`].
    pub fn json_value(&self) -> Result<serde_json::Value, ParseError> {
        self.parse()
    }

    /// Parses the object's JSON into any deserializable type: a struct of your own with only
    /// the fields you need (cheapest), or a `k8s-openapi` type such as
    /// `k8s_openapi::api::core::v1::Pod` (with the `k8s-openapi` feature, see also
    /// [`typed`](Self::typed)).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ParseError> {
        serde_json::from_str(self.json()).map_err(|source| ParseError::Json {
            kind: self.kind().to_owned(),
            key: self.key(),
            target: std::any::type_name::<T>(),
            source,
        })
    }

    /// The object's full `metadata` (owner references, finalizers, …) as `k8s-openapi`'s
    /// `ObjectMeta`, parsing only that part of the JSON.
    #[cfg(feature = "k8s-openapi")]
    pub fn metadata(&self) -> Result<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, ParseError> {
        #[derive(Deserialize)]
        struct WithMetadata {
            #[serde(default)]
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        }
        self.parse::<WithMetadata>().map(|m| m.metadata)
    }

    /// Whether the object is of the kind `K` describes (same `apiVersion` and kind).
    #[cfg(feature = "k8s-openapi")]
    pub fn is<K: k8s_openapi::Resource>(&self) -> bool {
        self.api_version() == K::API_VERSION && self.kind() == K::KIND
    }

    /// Parses the object as the `k8s-openapi` type `K`, after checking that the object is of
    /// that kind: `obj.typed::<Pod>()`.
    #[cfg(feature = "k8s-openapi")]
    pub fn typed<K>(&self) -> Result<K, ParseError>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        if !self.is::<K>() {
            return Err(ParseError::WrongKind {
                key: self.key(),
                expected: format!("{} {}", K::API_VERSION, K::KIND),
                found: format!("{} {}", self.api_version(), self.kind()),
            });
        }
        self.parse()
    }
}

impl From<types::Object> for Object {
    fn from(raw: types::Object) -> Self {
        Self::from_raw(raw)
    }
}

/// A clone is whole: a lent object is copied out of the host.
impl Clone for Object {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Whole(raw) => Self::from_raw(raw.clone()),
            Repr::Lent(lent) => Self::from_raw(lent.to_owned_object()),
        }
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.as_raw() == other.as_raw()
    }
}

impl Eq for Object {}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("api_version", &self.api_version())
            .field("kind", &self.kind())
            .field("key", &self.key())
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

/// `Kind namespace/name`, e.g. `Pod shop/web-1`.
impl fmt::Display for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind(), self.key())
    }
}

pub(crate) fn lookup<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The part of an object [`Object::from_json`] reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<HeadMeta>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadMeta {
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    deletion_timestamp: Option<String>,
    owner_references: Option<Vec<HeadOwner>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadOwner {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "shop",
            "name": "web-1",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "labels": {"team": "payments", "app": "web"},
            "annotations": {"note": "hi"},
            "deletionTimestamp": "2024-01-01T00:00:00Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                 "uid": "rs-1", "controller": true}
            ]
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }"#;

    const NODE: &str = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}"#;

    #[test]
    fn metadata_is_read_from_json() {
        let pod = Object::from_json(POD).unwrap();
        assert_eq!(pod.api_version(), "v1");
        assert_eq!(pod.kind(), "Pod");
        assert_eq!(pod.namespace(), Some("shop"));
        assert_eq!(pod.name(), "web-1");
        assert_eq!(pod.uid(), "u-1");
        assert_eq!(pod.resource_version(), "42");
        assert_eq!(pod.generation(), Some(3));
        assert_eq!(pod.deletion_timestamp(), Some("2024-01-01T00:00:00Z"));
        assert_eq!(pod.json(), POD);
        assert_eq!(pod.resource(), Resource::new("v1", "Pod"));
        assert_eq!(pod.to_string(), "Pod shop/web-1");
    }

    #[test]
    fn owner_references_come_parsed_and_prefer_the_controller() {
        let pod = Object::from_json(POD).unwrap();
        let owner = pod.owner_of_kind("ReplicaSet").expect("owned by a ReplicaSet");
        assert_eq!((owner.name.as_str(), owner.uid.as_str(), owner.controller), ("web-abc", "rs-1", true));
        assert!(pod.owner_of_kind("Deployment").is_none());
        assert!(Object::from_json(NODE).unwrap().owner_references().is_empty());
    }

    #[test]
    fn key_is_namespace_slash_name_or_name() {
        assert_eq!(Object::from_json(POD).unwrap().key(), "shop/web-1");
        assert_eq!(Object::from_json(NODE).unwrap().key(), "n1");
        let empty_ns = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2","namespace":""}}"#;
        let node = Object::from_json(empty_ns).unwrap();
        assert_eq!(node.namespace(), None);
        assert_eq!(node.key(), "n2");
    }

    #[test]
    fn an_empty_namespace_from_the_host_counts_as_cluster_scoped() {
        let mut raw = Object::from_json(NODE).unwrap().into_raw();
        raw.meta.namespace = Some(String::new());
        assert_eq!(Object::from_raw(raw).key(), "n1");
    }

    #[test]
    fn labels_are_sorted_and_looked_up_by_key() {
        let pod = Object::from_json(POD).unwrap();
        let keys: Vec<&str> = pod.labels().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["app", "team"]);
        assert_eq!(pod.label("app"), Some("web"));
        assert_eq!(pod.label("team"), Some("payments"));
        assert_eq!(pod.label("missing"), None);
        assert_eq!(pod.annotation("note"), Some("hi"));
        let node = Object::from_json(NODE).unwrap();
        assert!(node.labels().is_empty());
        assert_eq!(node.label("app"), None);
        assert_eq!(node.generation(), None);
        assert_eq!(node.uid(), "");
    }

    #[test]
    fn json_parses_into_a_value_or_a_struct() {
        let pod = Object::from_json(POD).unwrap();
        let value = pod.json_value().unwrap();
        assert_eq!(value["spec"]["containers"][0]["image"], "nginx");

        #[derive(Deserialize)]
        struct Spec {
            spec: Containers,
        }
        #[derive(Deserialize)]
        struct Containers {
            containers: Vec<serde_json::Value>,
        }
        assert_eq!(pod.parse::<Spec>().unwrap().spec.containers.len(), 1);
    }

    #[test]
    fn parse_errors_name_the_object_and_the_type() {
        let pod = Object::from_json(POD).unwrap();
        let err = pod.parse::<Vec<u8>>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("cannot parse Pod shop/web-1 as alloc::vec::Vec<u8>: "), "{msg}");
    }

    #[test]
    fn from_json_rejects_what_is_not_an_object() {
        for bad in [
            "[]",
            "{",
            r#"{"kind":"Pod","metadata":{"name":"x"}}"#,
            r#"{"apiVersion":"v1","metadata":{"name":"x"}}"#,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#,
            r#"{"apiVersion":"v1","kind":"Pod"}"#,
        ] {
            assert!(matches!(Object::from_json(bad), Err(ParseError::NotAnObject(_))), "{bad}");
        }
    }

    #[cfg(feature = "k8s-openapi")]
    #[test]
    fn k8s_openapi_types() {
        use k8s_openapi::api::apps::v1::ReplicaSet;
        use k8s_openapi::api::core::v1::Pod;

        let obj = Object::from_json(POD).unwrap();
        let pod: Pod = obj.parse().unwrap();
        assert_eq!(pod.spec.unwrap().containers[0].image.as_deref(), Some("nginx"));
        assert!(obj.is::<Pod>());
        assert_eq!(obj.typed::<Pod>().unwrap().metadata.name.as_deref(), Some("web-1"));
        assert!(matches!(obj.typed::<ReplicaSet>(), Err(ParseError::WrongKind { .. })));
        let owners = obj.metadata().unwrap().owner_references.unwrap();
        assert_eq!(owners[0].kind, "ReplicaSet");
        assert_eq!(owners[0].uid, "rs-1");
        assert_eq!(Resource::of::<ReplicaSet>(), Resource::new("apps/v1", "ReplicaSet"));
    }
}

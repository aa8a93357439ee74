//! The object model: a Kubernetes object decoded once and shared by reference.
//!
//! client-go passes `runtime.Object`s around, fully decoded; kube-rs decodes into typed
//! structs or `DynamicObject`. wink keeps the JSON **exactly as received** (so a plugin gets
//! the bytes the API server sent, never a re-encoding) beside the handful of metadata fields
//! the host itself needs, parsed in one pass that skips everything else and kept as byte
//! ranges of that same text ([`meta`](super::meta)): nothing is copied. An [`Object`] is an
//! `Arc`: cloning it into the indexer, the DeltaFIFO and every listener queue costs a
//! reference count, not a copy.
//!
//! `metadata.managedFields` is often half of an object's size and is never needed by
//! handlers; [`Object::without_managed_fields`] cuts it out of the JSON text by the byte range
//! recorded while decoding (no re-parse, no re-encoding of the rest).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::labels::Labels;
use super::meta::{ObjectMeta, OwnerReferences, PackedMeta};

/// Why bytes could not be decoded into an [`Object`].
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// The bytes are not UTF-8 JSON, or a field has the wrong type.
    #[error("malformed object at `{path}`: {message}")]
    Malformed {
        /// The path of the offending field, e.g. `metadata.labels.app`, or `.` for the root.
        path: String,
        /// What was wrong there.
        message: String,
    },
    /// A field the host needs is absent or empty.
    #[error("object has no `{0}`")]
    Missing(&'static str),
    /// Arrays and objects are nested deeper than [`MAX_DEPTH`] (from sources that refuse it,
    /// and from [`Object::to_value`]).
    #[error("object is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A store refuses the object: its JSON is longer than the store takes.
    #[error("the object is {size} bytes, over the {limit} bytes a store takes")]
    TooLarge {
        /// The object's length in bytes.
        size: usize,
        /// The store's limit.
        limit: usize,
    },
}

/// The deepest nesting of JSON arrays and objects (the top-level object counts as one) that
/// [`Object::to_value`] reads back: `serde_json`'s recursion limit. Decoding an [`Object`]
/// skips the fields it does not need without such a limit (checking the depth of every
/// object would double the cost of decoding), so an object from an API server may be deeper;
/// sources that build objects from untrusted data (the directory and memory sources) refuse
/// anything deeper.
pub use crate::kube::MAX_DEPTH;

struct Inner {
    json: Box<str>,
    meta: PackedMeta,
    /// Shared with the indexer's maps and index buckets, which hold it rather than copies.
    key: Arc<str>,
    /// Byte range of the `"managedFields": [...]` member (with one adjoining comma), if any.
    managed_fields: Option<Range<usize>>,
}

/// A decoded Kubernetes object: the JSON as received plus parsed metadata. Cheap to clone.
#[derive(Clone)]
pub struct Object(Arc<Inner>);

impl Object {
    /// Decodes an object from JSON bytes, parsing only the metadata the host needs.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ObjectError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| ObjectError::Malformed { path: ".".into(), message: format!("not UTF-8: {e}") })?;
        Self::from_str(text)
    }

    /// Decodes an object from a JSON string, parsing only the metadata the host needs.
    #[allow(clippy::should_implement_trait, reason = "returns ObjectError, reads like serde_json::from_str")]
    pub fn from_str(text: &str) -> Result<Self, ObjectError> {
        Self::from_string(text.to_owned())
    }

    /// Decodes an object from an owned JSON string without copying it.
    pub fn from_string(json: String) -> Result<Self, ObjectError> {
        let (meta, managed_fields) = {
            let (meta, managed) = PackedMeta::decode(&json)?;
            (meta, managed.and_then(|raw| member_range(&json, raw, "managedFields")))
        };
        let key: Arc<str> = object_key(meta.namespace(&json), meta.name(&json)).into();
        Ok(Self(Arc::new(Inner { json: json.into_boxed_str(), meta, key, managed_fields })))
    }

    /// The object as JSON text: exactly the bytes received (minus `managedFields` when
    /// stripped).
    pub fn json(&self) -> &str {
        &self.0.json
    }

    /// The parsed metadata.
    pub fn meta(&self) -> ObjectMeta<'_> {
        self.0.meta.view(&self.0.json)
    }

    /// The store key: `namespace/name`, or `name` for cluster-scoped objects.
    pub fn key(&self) -> &str {
        &self.0.key
    }

    /// The store key as a shared string (cloning it does not copy it).
    pub fn shared_key(&self) -> Arc<str> {
        self.0.key.clone()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.0.meta.namespace(&self.0.json)
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.0.meta.name(&self.0.json)
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &str {
        self.0.meta.resource_version(&self.0.json)
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        self.0.meta.uid(&self.0.json)
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> Labels<'_> {
        self.0.meta.labels(&self.0.json)
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> OwnerReferences<'_> {
        self.0.meta.owner_references(&self.0.json)
    }

    /// Whether the JSON still holds `metadata.managedFields`.
    pub fn has_managed_fields(&self) -> bool {
        self.0.managed_fields.is_some()
    }

    /// The same object without `metadata.managedFields`: the member is cut out of the JSON
    /// text by its recorded byte range; nothing else is re-encoded. Returns a clone of `self`
    /// when there is nothing to strip.
    pub fn without_managed_fields(&self) -> Self {
        let Some(range) = self.0.managed_fields.clone() else {
            return self.clone();
        };
        let mut json = String::with_capacity(self.0.json.len() - range.len());
        json.push_str(&self.0.json[..range.start]);
        json.push_str(&self.0.json[range.end..]);
        let mut meta = self.0.meta.clone();
        meta.after_cut(&range);
        Self(Arc::new(Inner { json: json.into_boxed_str(), meta, key: self.0.key.clone(), managed_fields: None }))
    }

    /// [`without_managed_fields`](Self::without_managed_fields), consuming `self`: when this
    /// is the only handle (an object just decoded), the member is cut out of the JSON text in
    /// place and the parsed metadata is moved, not copied.
    pub fn into_without_managed_fields(mut self) -> Self {
        if self.0.managed_fields.is_none() {
            return self;
        }
        // Changed where it lies: no new allocation for the object itself.
        let Some(inner) = Arc::get_mut(&mut self.0) else {
            return self.without_managed_fields();
        };
        if let Some(range) = inner.managed_fields.take() {
            let mut json = String::from(std::mem::take(&mut inner.json));
            inner.meta.after_cut(&range);
            json.replace_range(range, "");
            inner.json = json.into_boxed_str();
        }
        self
    }

    /// This object with the top-level `apiVersion` and `kind` members it lacks put first in
    /// its JSON (built-in kinds' list items come without them): a text insertion that the
    /// parsed metadata follows, nothing parsed again. A member present with an empty value is
    /// left as sent (a second one would be a duplicate).
    pub(crate) fn with_type(self, api_version: &str, kind: &str) -> Self {
        let (lacks_version, lacks_kind) = self.0.meta.lacks_type();
        if !lacks_version && !lacks_kind {
            return self;
        }
        let json = &self.0.json;
        // Decoded as an object: its first character other than white space is the `{`.
        let Some(at) = json.find('{').map(|open| open + 1) else {
            return self;
        };
        let needs_escapes = |value: &str| value.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        if needs_escapes(api_version) || needs_escapes(kind) {
            // Never for a kind the API server serves; its decoded text would not lie in the JSON.
            return self.with_type_reparsed(api_version, kind);
        }
        let mut text = String::with_capacity(json.len() + api_version.len() + kind.len() + 24);
        text.push_str(&json[..at]);
        let mut member = |present: bool, name: &str, value: &str| {
            (!present).then(|| {
                text.push_str(name);
                let start = text.len();
                text.push_str(value);
                let end = text.len();
                text.push_str("\",");
                start..end
            })
        };
        let version_at = member(!lacks_version, "\"apiVersion\":\"", api_version);
        let kind_at = member(!lacks_kind, "\"kind\":\"", kind);
        let inserted = text.len() - at;
        text.push_str(&json[at..]);
        if text.len() > super::meta::MAX_JSON {
            return self;
        }
        let managed_fields = self.0.managed_fields.clone().map(|r| r.start + inserted..r.end + inserted);
        // The only handle (an item just decoded) gives its parsed metadata up, moved rather
        // than copied, as in `into_without_managed_fields`.
        let mut inner = Arc::try_unwrap(self.0).unwrap_or_else(|shared| Inner {
            json: Box::default(),
            meta: shared.meta.clone(),
            key: shared.key.clone(),
            managed_fields: None,
        });
        inner.json = text.into_boxed_str();
        inner.meta.after_insert(at, inserted, version_at, kind_at);
        inner.managed_fields = managed_fields;
        Self(Arc::new(inner))
    }

    /// [`with_type`](Self::with_type) by splicing encoded members in and decoding again.
    fn with_type_reparsed(self, api_version: &str, kind: &str) -> Self {
        let (lacks_version, lacks_kind) = self.0.meta.lacks_type();
        let Some(members) = self.json().trim_start().strip_prefix('{') else {
            return self;
        };
        let mut spliced = String::from("{");
        for (lacks, name, value) in [(lacks_version, "apiVersion", api_version), (lacks_kind, "kind", kind)] {
            if lacks {
                spliced.push_str(&format!("{}:{},", serde_json::Value::from(name), serde_json::Value::from(value)));
            }
        }
        spliced.push_str(members);
        Self::from_string(spliced).unwrap_or(self)
    }

    /// The JSON text without its top-level `apiVersion` and `kind` members (as the API server
    /// lists built-in kinds' items), cut out where decoding found their values: nothing is
    /// re-encoded, the other members keep their order. `None` when a member present is not
    /// laid out as expected (an escaped key or value).
    pub fn json_without_type(&self) -> Option<String> {
        let json = self.json();
        let meta = self.meta();
        let base = json.as_ptr() as usize;
        // Each present member's quoted value, as a byte range (an absent one is empty at 0).
        let mut values = Vec::with_capacity(2);
        for (name, value) in [("apiVersion", meta.api_version), ("kind", meta.kind)] {
            let start = (value.as_ptr() as usize).checked_sub(base)?;
            if start == 0 && value.is_empty() {
                continue;
            }
            let quoted = start.checked_sub(1)?..start + value.len() + 1;
            let bytes = json.as_bytes();
            (bytes.get(quoted.start) == Some(&b'"') && bytes.get(quoted.end - 1) == Some(&b'"')).then_some(())?;
            values.push((name, quoted));
        }
        // The later member first: cutting it leaves the earlier one's offsets as they were.
        values.sort_by_key(|(_, range)| std::cmp::Reverse(range.start));
        let mut text = json.to_owned();
        for (name, value) in values {
            let cut = member_range(&text, &text[value], name)?;
            text.replace_range(cut, "");
        }
        Some(text)
    }

    /// Parses the full JSON into a `serde_json::Value` (for code that needs other fields).
    /// Fails, with [`ObjectError::TooDeep`], only for an object nested deeper than
    /// [`MAX_DEPTH`]: the rest of the JSON was validated when decoded.
    pub fn to_value(&self) -> Result<serde_json::Value, ObjectError> {
        serde_json::from_str(&self.0.json).map_err(|_| ObjectError::TooDeep)
    }

    /// Resolves an RFC 6901 JSON pointer (e.g. `/spec/nodeName`) on demand; `None` also
    /// when the object is too deep to read back (see [`to_value`](Self::to_value)).
    pub fn pointer(&self, pointer: &str) -> Option<serde_json::Value> {
        self.to_value().ok()?.pointer(pointer).cloned()
    }

    /// Whether two handles point at the same decoded object.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Approximate bytes held by this object (JSON text plus parsed metadata).
    pub fn heap_size(&self) -> usize {
        std::mem::size_of::<Inner>() + self.0.json.len() + self.0.key.len() + self.0.meta.heap_size()
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("kind", &self.meta().kind)
            .field("key", &self.key())
            .field("resource_version", &self.resource_version())
            .finish()
    }
}

impl PartialEq for Object {
    /// Two objects are equal when their JSON text is equal.
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.0.json == other.0.json
    }
}

impl Eq for Object {}

/// The store key of an object: `namespace/name`, or `name` when cluster-scoped.
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

/// Splits a store key into namespace and name.
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

/// Finds the byte range of the object member `"<name>": <value>` in `json`, given the slice
/// `value` that points into `json`, including one separating comma so that cutting the range
/// out leaves valid JSON. Returns `None` if the member's text is not laid out as expected
/// (for example an escaped key), in which case nothing is stripped.
fn member_range(json: &str, value: &str, name: &str) -> Option<Range<usize>> {
    let base = json.as_ptr() as usize;
    let start = (value.as_ptr() as usize).checked_sub(base)?;
    let end = start + value.len();
    if end > json.len() {
        return None;
    }
    let before = json[..start].trim_end();
    let before = before.strip_suffix(':')?.trim_end();
    let quoted = format!("\"{name}\"");
    let key_start = before.strip_suffix(quoted.as_str()).map(str::len)?;
    let prefix = json[..key_start].trim_end();
    if let Some(comma) = prefix.strip_suffix(',') {
        // `..., "managedFields": [...]` — cut from the preceding comma.
        return Some(comma.len()..end);
    }
    if prefix.ends_with('{') {
        // `{ "managedFields": [...], ...` — cut through the following comma, if any.
        let rest = &json[end..];
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix(',') {
            let skip = rest.len() - after.len();
            let after_ws = after.len() - after.trim_start().len();
            return Some(key_start..end + skip + after_ws);
        }
        return Some(key_start..end);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop","uid":"u1","resourceVersion":"42","generation":3,"labels":{"app":"web"},"annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-abc","uid":"rs1","controller":true}],"managedFields":[{"manager":"kubectl","operation":"Apply"}]},"spec":{"nodeName":"n1"}}"#;

    #[test]
    fn decodes_metadata_and_keeps_json_verbatim() {
        let obj = Object::from_str(POD).unwrap();
        assert_eq!(obj.json(), POD);
        assert_eq!(obj.key(), "shop/web-1");
        let m = obj.meta();
        assert_eq!((m.api_version, m.kind), ("v1", "Pod"));
        assert_eq!(m.uid, "u1");
        assert_eq!(m.resource_version, "42");
        assert_eq!(m.generation, Some(3));
        assert_eq!(m.labels.get("app"), Some("web"));
        assert_eq!(m.annotations.get("a"), Some("b"));
        let owner = m.owner_references.get(0).unwrap();
        assert_eq!((owner.kind, owner.name, owner.uid, owner.controller), ("ReplicaSet", "web-abc", "rs1", Some(true)));
        assert!(obj.has_managed_fields());
    }

    #[test]
    fn cluster_scoped_key_is_the_name() {
        let obj =
            Object::from_str(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","namespace":""}}"#)
                .unwrap();
        assert_eq!(obj.key(), "shop");
        assert_eq!(obj.namespace(), None);
        assert_eq!(split_key("shop"), (None, "shop"));
        assert_eq!(split_key("a/b"), (Some("a"), "b"));
    }

    #[test]
    fn strips_managed_fields_without_reencoding() {
        let obj = Object::from_str(POD).unwrap().without_managed_fields();
        assert!(!obj.json().contains("managedFields"));
        assert!(!obj.has_managed_fields());
        // Everything else is byte-for-byte the original text.
        assert_eq!(obj.json(), POD.replace(r#","managedFields":[{"manager":"kubectl","operation":"Apply"}]"#, ""));
        let reparsed = Object::from_str(obj.json()).unwrap();
        assert_eq!(reparsed.meta(), obj.meta());
        // Consuming the only handle strips in place, with the same result; a shared one copies.
        let owned = Object::from_str(POD).unwrap();
        let shared = owned.clone();
        assert_eq!(owned.into_without_managed_fields().json(), obj.json());
        assert_eq!(shared.clone().into_without_managed_fields().json(), obj.json());
        assert!(shared.has_managed_fields(), "the other handle is untouched");
        assert_eq!(Object::from_str(POD).unwrap().into_without_managed_fields().meta(), obj.meta());
    }

    #[test]
    fn strips_managed_fields_in_first_position_and_with_whitespace() {
        let text =
            "{\"metadata\": {\n  \"managedFields\" : [ {\"m\": 1} ] ,\n  \"name\": \"x\"\n}, \"kind\": \"ConfigMap\"}";
        let obj = Object::from_str(text).unwrap().without_managed_fields();
        assert_eq!(obj.json(), "{\"metadata\": {\n  \"name\": \"x\"\n}, \"kind\": \"ConfigMap\"}");
        let only = Object::from_str(r#"{"metadata":{"name":"x","managedFields":[]}}"#).unwrap();
        assert_eq!(only.without_managed_fields().json(), r#"{"metadata":{"name":"x"}}"#);
        serde_json::from_str::<serde_json::Value>(obj.json()).unwrap();
    }

    #[test]
    fn malformed_json_names_the_offending_field() {
        let err = Object::from_str(r#"{"metadata":{"name":"x","labels":{"app":7}}}"#).unwrap_err();
        match err {
            ObjectError::Malformed { path, .. } => assert_eq!(path, "metadata.labels.app"),
            other => panic!("unexpected {other:?}"),
        }
        let err = Object::from_str(r#"{"metadata":{"name":"x","generation":"three"}}"#).unwrap_err();
        assert!(err.to_string().contains("metadata.generation"), "{err}");
    }

    #[test]
    fn non_object_and_truncated_json_are_errors_not_panics() {
        for bad in ["[]", "42", "\"pod\"", "{", "", "{\"metadata\":{\"name\":\"x\"}} trailing", "null"] {
            assert!(Object::from_str(bad).is_err(), "{bad:?} should fail");
        }
        assert!(Object::from_slice(&[0xff, 0xfe]).is_err());
    }

    /// Regression: the metadata decoder skips unknown fields at any depth, so an object
    /// nested deeper than `serde_json` reads back decodes, and re-reading it (`to_value`, or
    /// the memory source restamping a deleted object) panicked.
    #[test]
    fn an_object_too_deep_to_read_back_is_an_error_not_a_panic() {
        let nested = |depth: usize| {
            // The top-level object is level 1, then the arrays of `spec`.
            let inner = depth - 1;
            format!(r#"{{"kind":"Pod","metadata":{{"name":"x"}},"spec":{}{}}}"#, "[".repeat(inner), "]".repeat(inner))
        };
        let deepest = Object::from_string(nested(MAX_DEPTH)).unwrap();
        assert!(deepest.to_value().unwrap().is_object(), "the deepest object reads back");
        assert!(deepest.pointer("/spec/0").is_some());
        for depth in [MAX_DEPTH + 1, 100_000] {
            let deeper = Object::from_string(nested(depth)).unwrap();
            assert_eq!(deeper.name(), "x");
            assert!(matches!(deeper.to_value(), Err(ObjectError::TooDeep)));
            assert_eq!(deeper.pointer("/kind"), None);
        }
    }

    #[test]
    fn missing_name_is_reported() {
        let err = Object::from_str(r#"{"kind":"Pod","metadata":{}}"#).unwrap_err();
        assert!(matches!(err, ObjectError::Missing("metadata.name")));
        let err = Object::from_str(r#"{"kind":"Pod"}"#).unwrap_err();
        assert!(matches!(err, ObjectError::Missing("metadata")));
    }

    #[test]
    fn pointer_reads_other_fields_on_demand() {
        let obj = Object::from_str(POD).unwrap();
        assert_eq!(obj.pointer("/spec/nodeName"), Some(serde_json::json!("n1")));
        assert_eq!(obj.pointer("/spec/missing"), None);
    }

    #[test]
    fn the_type_members_are_cut_out_wherever_they_lie() {
        let typed = |text: &str| Object::from_str(text).unwrap().json_without_type();
        let untyped = r#"{"metadata":{"name":"a"},"spec":{"kind":"x"}}"#;
        for text in [
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"kind":"x"}}"#,
            r#"{"metadata":{"name":"a"},"spec":{"kind":"x"},"apiVersion":"v1","kind":"Pod"}"#,
            r#"{"kind":"Pod","metadata":{"name":"a"},"apiVersion":"v1","spec":{"kind":"x"}}"#,
            r#"{"metadata":{"name":"a"},"kind":"Pod","spec":{"kind":"x"}}"#,
            untyped,
        ] {
            assert_eq!(typed(text).as_deref(), Some(untyped), "{text}");
        }
        let spaced =
            typed("{ \"apiVersion\" : \"v1\" ,\n \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"} }").unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&spaced).unwrap(),
            serde_json::json!({"metadata": {"name": "a"}})
        );
        // A value with escapes is not where its decoded text lies: left to a re-encoding.
        assert_eq!(typed(r#"{"apiVersion":"v\u0031","kind":"Pod","metadata":{"name":"a"}}"#), None);
        assert_eq!(typed(r#"{"kind":"Pod","metadata":{"name":"a"}}"#).as_deref(), Some(r#"{"metadata":{"name":"a"}}"#));
    }

    #[test]
    fn type_members_put_in_front_carry_the_metadata_along() {
        let item = POD.replacen(r#""apiVersion":"v1","kind":"Pod","#, "", 1);
        let typed = Object::from_str(&format!(" \n{item}")).unwrap().with_type("v1", "Pod");
        assert_eq!(typed.json(), format!(" \n{POD}"));
        let decoded = Object::from_str(POD).unwrap();
        assert_eq!(typed.meta(), decoded.meta());
        assert_eq!(typed.key(), "shop/web-1");
        let stripped = typed.into_without_managed_fields();
        assert_eq!(stripped.json().trim_start(), decoded.without_managed_fields().json());
        assert_eq!(stripped.meta(), decoded.meta());
        // A handle shared elsewhere keeps its text; the typed copy is the same.
        let shared = Object::from_str(&item).unwrap();
        let typed = shared.clone().with_type("v1", "Pod");
        assert_eq!((shared.json(), typed.json()), (item.as_str(), POD));
        assert_eq!(typed.meta(), decoded.meta());

        // Only what is absent is added; a present empty value stays as sent.
        let half = Object::from_str(r#"{"kind":"","metadata":{"name":"a"}}"#).unwrap().with_type("v1", "Pod");
        assert_eq!(half.json(), r#"{"apiVersion":"v1","kind":"","metadata":{"name":"a"}}"#);
        assert_eq!((half.meta().api_version, half.meta().kind), ("v1", ""));
        // A value that needs escapes is encoded, and decoded back the same.
        let odd = Object::from_str(r#"{"metadata":{"name":"a"}}"#).unwrap().with_type("v1", "Po\"d");
        assert_eq!(odd.json(), r#"{"apiVersion":"v1","kind":"Po\"d","metadata":{"name":"a"}}"#);
        assert_eq!(odd.meta().kind, "Po\"d");
    }
}

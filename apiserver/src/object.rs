//! Reading and writing an object's `metadata` fields on a `serde_json::Value`.
//!
//! The write rules work on untyped JSON, as the API server does for custom resources. These
//! helpers read a metadata field (an absent field reads as empty) and set or remove one.
//! [`check_shape`] runs first on every object a request brings: the object must be a JSON
//! object, `metadata` a map, and the fields the rules read must have their API types, so the
//! readers never have to guess.

use serde_json::{Map, Value};

/// Why an object's shape is not that of a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The object is not a JSON object.
    #[error("the object is not a JSON object")]
    NotAnObject,
    /// `metadata` is present but not a map.
    #[error("metadata is not an object")]
    MetadataNotAnObject,
    /// A metadata field has the wrong type.
    #[error("metadata.{field} must be {expected}")]
    FieldType {
        /// The field under metadata.
        field: &'static str,
        /// What the field must be.
        expected: &'static str,
    },
}

const STRING_FIELDS: [&str; 8] = [
    "name",
    "namespace",
    "generateName",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "selfLink",
];

/// Checks that `obj` is an object whose metadata fields have their API types.
pub fn check_shape(obj: &Value) -> Result<(), ObjectError> {
    let map = obj.as_object().ok_or(ObjectError::NotAnObject)?;
    let Some(meta) = map.get("metadata") else { return Ok(()) };
    if meta.is_null() {
        return Ok(());
    }
    let meta = meta.as_object().ok_or(ObjectError::MetadataNotAnObject)?;
    for field in STRING_FIELDS {
        if let Some(v) = meta.get(field)
            && !(v.is_string() || v.is_null())
        {
            return Err(ObjectError::FieldType { field, expected: "a string" });
        }
    }
    for field in ["generation", "deletionGracePeriodSeconds"] {
        if let Some(v) = meta.get(field)
            && !(v.is_i64() || v.is_null())
        {
            return Err(ObjectError::FieldType { field, expected: "an integer" });
        }
    }
    for field in ["labels", "annotations"] {
        if let Some(v) = meta.get(field)
            && !v.is_null()
            && !v.as_object().is_some_and(|m| m.values().all(Value::is_string))
        {
            return Err(ObjectError::FieldType { field, expected: "a map of strings" });
        }
    }
    for (field, item) in [("finalizers", "a list of strings"), ("ownerReferences", "a list of objects")] {
        if let Some(v) = meta.get(field)
            && !v.is_null()
            && !v
                .as_array()
                .is_some_and(|l| l.iter().all(|i| if field == "finalizers" { i.is_string() } else { i.is_object() }))
        {
            return Err(ObjectError::FieldType { field, expected: item });
        }
    }
    if let Some(v) = meta.get("managedFields")
        && !v.is_null()
        && !v.is_array()
    {
        return Err(ObjectError::FieldType { field: "managedFields", expected: "a list of objects" });
    }
    Ok(())
}

/// The metadata map, if present.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The metadata map, created when absent or null.
pub fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ObjectError> {
    let map = obj.as_object_mut().ok_or(ObjectError::NotAnObject)?;
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().ok_or(ObjectError::MetadataNotAnObject)
}

/// A string metadata field; absent, null or non-string fields read as `""`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    metadata(obj).and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

/// `metadata.resourceVersion`.
pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion")
}

/// `metadata.deletionTimestamp`, if set.
pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    Some(meta_str(obj, "deletionTimestamp")).filter(|s| !s.is_empty())
}

/// `metadata.generation`; 0 when absent.
pub fn generation(obj: &Value) -> i64 {
    metadata(obj).and_then(|m| m.get("generation")).and_then(Value::as_i64).unwrap_or(0)
}

/// A Namespace's `spec.finalizers` (its lifecycle's, not `metadata.finalizers`); empty when
/// absent.
pub fn namespace_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `metadata.finalizers`; empty when absent.
pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

/// Sets a metadata field (creating `metadata` when absent).
pub fn set_meta(obj: &mut Value, field: &str, value: impl Into<Value>) -> Result<(), ObjectError> {
    metadata_mut(obj)?.insert(field.to_string(), value.into());
    Ok(())
}

/// Removes a metadata field; returns the value it had.
pub fn remove_meta(obj: &mut Value, field: &str) -> Option<Value> {
    obj.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove(field))
}

/// Copies a metadata field from `from` into `to`, or removes it from `to` when `from` has none.
pub(crate) fn copy_meta(from: &Value, to: &mut Value, field: &str) -> Result<(), ObjectError> {
    match metadata(from).and_then(|m| m.get(field)) {
        Some(v) => set_meta(to, field, v.clone()),
        None => {
            remove_meta(to, field);
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;

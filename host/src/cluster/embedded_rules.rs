//! The API server's rules applied by the [`EmbeddedClient`](super::EmbeddedClient): one
//! request against one kind's store.

use std::time::SystemTime;

use serde_json::Value;

use super::embedded::{Collection, key_of};
use super::{PatchType, Request, RequestError, Subresource, Verb};
use crate::informer::{Object, ObjectError};
use crate::source::Write;

impl From<ObjectError> for RequestError {
    fn from(e: ObjectError) -> Self {
        RequestError::Invalid { message: e.to_string(), causes: Vec::new() }
    }
}

fn parse(text: &str, what: &str) -> Result<Value, RequestError> {
    serde_json::from_str(text).map_err(|e| RequestError::BadRequest(format!("the {what} is not valid JSON: {e}")))
}

fn meta(value: &mut Value) -> Result<&mut serde_json::Map<String, Value>, RequestError> {
    if !value.get("metadata").is_some_and(Value::is_object) {
        value["metadata"] = Value::Object(serde_json::Map::new());
    }
    value["metadata"].as_object_mut().ok_or_else(|| RequestError::BadRequest("metadata is not an object".into()))
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn resource_name(c: &Collection, name: &str) -> String {
    format!(
        "{} \"{name}\"",
        if c.info.group.is_empty() { c.info.plural.clone() } else { format!("{}.{}", c.info.plural, c.info.group) }
    )
}

/// Executes `request` against `collection` in `namespace` (checked: present iff namespaced).
pub(super) fn execute(
    c: &Collection,
    namespace: Option<&str>,
    request: Request,
) -> Result<Option<Object>, RequestError> {
    let name = request.name.clone();
    match &request.verb {
        Verb::Get => c
            .source
            .get(&key_of(namespace, &name))
            .map(Some)
            .ok_or_else(|| RequestError::NotFound(format!("{} not found", resource_name(c, &name)))),
        Verb::Create => create(c, namespace, &request.body).map(Some),
        Verb::Update => {
            let body = parse(&request.body, "object")?;
            let status = request.subresource == Some(Subresource::Status);
            write(c, namespace, &name, |current| replace(c, current, body, status))
        }
        Verb::Patch(patch_type) => {
            let status = request.subresource == Some(Subresource::Status);
            let patch = request.body.clone();
            let patch_type = patch_type.clone();
            let (ns, n) = (namespace.map(str::to_owned), name.clone());
            if let PatchType::Apply { .. } = patch_type
                && c.source.get(&key_of(namespace, &name)).is_none()
            {
                return create(c, ns.as_deref(), &patch).map(Some);
            }
            write(c, namespace, &n, |current| {
                let mut patched = current.to_value()?;
                apply_patch(c, &mut patched, &patch, &patch_type)?;
                replace(c, current, patched, status)
            })
        }
        Verb::Delete(options) => {
            let options = options.clone();
            let key = key_of(namespace, &name);
            let mut deleted = false;
            let result = c.source.write(&key, |current| {
                let Some(current) = current else {
                    return Err(RequestError::NotFound(format!("{} not found", resource_name(c, &name))));
                };
                if let Some(uid) = &options.uid
                    && uid != current.uid()
                {
                    return Err(RequestError::Conflict(format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        current.uid()
                    )));
                }
                if let Some(rv) = &options.resource_version
                    && rv != current.resource_version()
                {
                    return Err(RequestError::Conflict(format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        current.resource_version()
                    )));
                }
                let mut value = current.to_value()?;
                let finalizers = value["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
                if !finalizers {
                    deleted = true;
                    return Ok(Write::Delete(value));
                }
                if current.meta().deletion_timestamp.is_some() {
                    return Ok(Write::Unchanged(current.clone()));
                }
                let m = meta(&mut value)?;
                m.insert("deletionTimestamp".into(), now().into());
                m.insert("deletionGracePeriodSeconds".into(), 0.into());
                Ok(Write::Put(value))
            })?;
            Ok((!deleted).then_some(result))
        }
    }
}

fn write(
    c: &Collection,
    namespace: Option<&str>,
    name: &str,
    decide: impl FnOnce(&Object) -> Result<Write, RequestError>,
) -> Result<Option<Object>, RequestError> {
    let mut removed = false;
    let obj = c.source.write(&key_of(namespace, name), |current| {
        let current = current.ok_or_else(|| RequestError::NotFound(format!("{} not found", resource_name(c, name))))?;
        let write = decide(current)?;
        removed = matches!(write, Write::Delete(_));
        Ok::<_, RequestError>(write)
    })?;
    Ok((!removed).then_some(obj))
}

fn create(c: &Collection, namespace: Option<&str>, body: &str) -> Result<Object, RequestError> {
    let mut value = parse(body, "object")?;
    let m = meta(&mut value)?;
    let mut name = m.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    if name.is_empty() {
        let prefix = m.get("generateName").and_then(Value::as_str).unwrap_or_default();
        if prefix.is_empty() {
            return Err(RequestError::Invalid {
                message: "metadata.name: Required value: name or generateName is required".into(),
                causes: vec![super::Cause {
                    field: "metadata.name".into(),
                    reason: "FieldValueRequired".into(),
                    message: "Required value: name or generateName is required".into(),
                }],
            });
        }
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let suffix: String = (0..5).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char).collect();
        name = format!("{prefix}{suffix}");
        m.insert("name".into(), name.clone().into());
    }
    match namespace {
        Some(ns) => {
            m.insert("namespace".into(), ns.into());
        }
        None => {
            m.remove("namespace");
        }
    }
    m.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
    m.insert("creationTimestamp".into(), now().into());
    m.remove("deletionTimestamp");
    m.remove("resourceVersion");
    if c.status_subresource {
        m.insert("generation".into(), 1.into());
        if let Some(obj) = value.as_object_mut() {
            obj.remove("status");
        }
    }
    c.source.write(&key_of(namespace, &name), |current| match current {
        Some(_) => Err(RequestError::AlreadyExists(format!("{} already exists", resource_name(c, &name)))),
        None => Ok(Write::Put(value)),
    })
}

/// The stored object after replacing `current` with `new` (an update or a patched object).
fn replace(c: &Collection, current: &Object, mut new: Value, status: bool) -> Result<Write, RequestError> {
    let old = current.to_value()?;
    if let Some(rv) = new["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty())
        && rv != current.resource_version()
    {
        return Err(RequestError::Conflict(format!(
            "Operation cannot be fulfilled on {}: the object has been modified; please apply your changes to the latest version and try again",
            resource_name(c, current.name())
        )));
    }
    if status {
        let mut merged = old.clone();
        merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        new = merged;
    } else if c.status_subresource {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(obj) = new.as_object_mut() {
                    obj.remove("status");
                }
            }
        }
    }
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "namespace",
        "name",
        "generation",
    ] {
        let m = meta(&mut new)?;
        match old["metadata"].get(field) {
            Some(v) => {
                m.insert(field.into(), v.clone());
            }
            None => {
                m.remove(field);
            }
        }
    }
    meta(&mut new)?.remove("resourceVersion");
    let mut old_cmp = old.clone();
    meta(&mut old_cmp)?.remove("resourceVersion");
    if new == old_cmp {
        return Ok(Write::Unchanged(current.clone()));
    }
    let spec_changed = |a: &Value, b: &Value| {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("metadata");
                o.remove("status");
            }
            v
        };
        strip(a) != strip(b)
    };
    if c.status_subresource && spec_changed(&old, &new) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
        meta(&mut new)?.insert("generation".into(), generation.into());
    }
    let finalizers_left = new["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
    if current.meta().deletion_timestamp.is_some() && !finalizers_left {
        return Ok(Write::Delete(new));
    }
    Ok(Write::Put(new))
}

fn apply_patch(c: &Collection, value: &mut Value, patch: &str, patch_type: &PatchType) -> Result<(), RequestError> {
    match patch_type {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_str(patch)
                .map_err(|e| RequestError::BadRequest(format!("the JSON patch is not valid: {e}")))?;
            json_patch::patch(value, &ops).map_err(|e| RequestError::Invalid { message: e.to_string(), causes: Vec::new() })
        }
        PatchType::StrategicMerge if !c.built_in => Err(RequestError::BadRequest(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into(),
        )),
        PatchType::Merge | PatchType::StrategicMerge | PatchType::Apply { .. } => {
            json_patch::merge(value, &parse(patch, "patch")?);
            Ok(())
        }
    }
}

//! The API server's rules applied by the [`EmbeddedClient`](super::EmbeddedClient): one
//! request against one kind's store, decided by [`wink_apiserver`] (the write semantics the
//! embedded cluster, `--serve-api` and the tests' API server share) inside the store's lock.

use serde_json::Value;
use wink_apiserver as api;

use super::embedded::{Collection, key_of};
use super::{Cause, PatchType, Propagation, Request, RequestError, Subresource, Verb};
use crate::informer::{Object, ObjectError};
use crate::source::Write;

impl From<ObjectError> for RequestError {
    fn from(e: ObjectError) -> Self {
        RequestError::Invalid { message: e.to_string(), causes: Vec::new() }
    }
}

impl From<api::Status> for RequestError {
    fn from(status: api::Status) -> Self {
        let reason =
            serde_json::to_value(status.reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let causes = status
            .details
            .as_ref()
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| Cause { field: c.field.clone(), reason: c.reason.clone(), message: c.message.clone() })
                    .collect()
            })
            .unwrap_or_default();
        RequestError::from_status(status.code, &reason, status.message, causes)
    }
}

/// The resource definition the rules see.
fn definition(c: &Collection, api_version: &str, kind: &str) -> api::ResourceDef {
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    api::ResourceDef {
        group: c.info.group.clone(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        plural: c.info.plural.clone(),
        namespaced: c.info.namespaced,
        status_subresource: c.status_subresource,
        built_in: c.built_in,
    }
}

fn parse(text: &str, what: &str) -> Result<Value, RequestError> {
    serde_json::from_str(text).map_err(|e| RequestError::BadRequest(format!("the {what} is not valid JSON: {e}")))
}

/// Runs one rule on the stored object with `key`; returns what was stored (none when the
/// write deleted it).
fn write(
    c: &Collection,
    key: &str,
    rule: impl FnOnce(Option<&Value>) -> Result<api::Write, api::Status>,
) -> Result<Option<Object>, RequestError> {
    let mut removed = false;
    let stored = c.source.write(key, |current| {
        let value = current.map(Object::to_value).transpose()?;
        let write = match rule(value.as_ref())? {
            api::Write::Put(v) => Write::Put(v),
            api::Write::Delete(v) => {
                removed = true;
                Write::Delete(v)
            }
            api::Write::Unchanged(v) => match current {
                Some(obj) => Write::Unchanged(obj.clone()),
                None => Write::Put(v),
            },
        };
        Ok::<_, RequestError>(write)
    })?;
    Ok((!removed).then_some(stored))
}

/// Executes `request` against `collection` in `namespace` (checked: present iff namespaced).
pub(super) fn execute(
    c: &Collection,
    namespace: Option<&str>,
    request: Request,
) -> Result<Option<Object>, RequestError> {
    let def = definition(c, &request.api_version, &request.kind);
    let ctx = api::SystemContext;
    let mut opts = api::WriteOptions::default();
    if request.subresource == Some(Subresource::Status) {
        opts = api::WriteOptions::status();
    }
    let name = request.name.clone();
    match request.verb {
        Verb::Get => {
            c.source.get(&key_of(namespace, &name)).map(Some).ok_or_else(|| api::Status::not_found(&def, &name).into())
        }
        Verb::Create => {
            let mut obj = parse(&request.body, "object")?;
            api::assign_name(&mut obj, &ctx)?;
            let name = api::object::name(&obj).to_owned();
            write(c, &key_of(namespace, &name), |current| api::create(&def, current, namespace, obj, &opts, &ctx))
        }
        Verb::Update => {
            let obj = parse(&request.body, "object")?;
            write(c, &key_of(namespace, &name), |current| api::update(&def, current, obj, &opts, &ctx))
        }
        Verb::Patch(patch_type) => {
            let patch_type = match patch_type {
                PatchType::Merge => api::PatchType::Merge,
                PatchType::Json => api::PatchType::Json,
                PatchType::StrategicMerge => api::PatchType::StrategicMerge,
                PatchType::Apply { field_manager, force } => api::PatchType::Apply { field_manager, force },
            };
            let body = request.body.into_bytes();
            write(c, &key_of(namespace, &name), |current| {
                api::patch(&def, &name, namespace, current, &body, &patch_type, &opts, &ctx)
            })
        }
        Verb::Delete(options) => {
            let options = api::DeleteOptions {
                preconditions: api::Preconditions { uid: options.uid, resource_version: options.resource_version },
                propagation_policy: options.propagation.map(|p| match p {
                    Propagation::Orphan => api::PropagationPolicy::Orphan,
                    Propagation::Background => api::PropagationPolicy::Background,
                    Propagation::Foreground => api::PropagationPolicy::Foreground,
                }),
                grace_period_seconds: options.grace_period_seconds,
            };
            write(c, &key_of(namespace, &name), |current| api::delete(&def, &name, current, &options, &ctx))
        }
    }
}

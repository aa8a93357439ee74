//! Patch: change a stored object with a JSON, merge, strategic merge or apply patch.
//!
//! The patch is applied to the stored object, and the result goes through the update rules
//! ([`mod@crate::update`]): the resourceVersion the result carries is the stored one unless the
//! patch sets its own, which then is a precondition.
//!
//! - `Json` (RFC 6902, `application/json-patch+json`): a body that is not a list of
//!   operations is 400; an operation that fails (a `test` that does not match, a path that
//!   does not exist) is 422 with the reason `Invalid`.
//! - `Merge` (RFC 7386, `application/merge-patch+json`).
//! - `StrategicMerge` (`application/strategic-merge-patch+json`): built-in kinds only;
//!   custom resources answer 415 (see [`crate::strategic`]).
//! - `Apply` (`application/apply-patch+yaml`): server-side apply (see [`crate::apply`]). The
//!   body must be JSON (which is YAML); converting a YAML body is the HTTP layer's job.

use serde_json::Value;

use crate::context::Context;
use crate::resource::ResourceDef;
use crate::status::{Status, StatusReason};
use crate::strategic;
use crate::update::finish;
use crate::write::{Write, WriteOptions};

/// The kind of patch, from the request's content type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902 JSON patch.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Kubernetes strategic merge patch (built-in kinds only).
    StrategicMerge,
    /// Server-side apply.
    Apply {
        /// The manager applying (required by the API server for apply).
        field_manager: String,
        /// Take the fields that conflict from their other managers.
        force: bool,
    },
}

impl PatchType {
    /// The request content type of this patch type.
    pub fn content_type(&self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply { .. } => "application/apply-patch+yaml",
        }
    }
}

/// Applies a patch to the object `name` in `namespace` (the request's), stored as `current`.
/// Only an apply patch may create the object.
#[expect(clippy::too_many_arguments, reason = "the parts of a patch request, as the other writes take them")]
pub fn patch(
    def: &ResourceDef,
    name: &str,
    namespace: Option<&str>,
    current: Option<&Value>,
    body: &[u8],
    patch_type: &PatchType,
    opts: &WriteOptions,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    if *patch_type == PatchType::StrategicMerge && !def.built_in {
        return Err(Status::unsupported_media_type(&[
            PatchType::Json.content_type(),
            PatchType::Merge.content_type(),
            "application/apply-patch+yaml",
        ]));
    }
    let body: Value =
        serde_json::from_slice(body).map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    let current = match (patch_type, current) {
        (PatchType::Apply { field_manager, force }, current) => {
            let request = crate::apply::ApplyRequest { name, namespace, manager: field_manager, force: *force };
            return crate::apply::apply(def, &request, current, body, opts.subresource, ctx);
        }
        (_, None) => return Err(Status::not_found(def, name)),
        (_, Some(current)) => current,
    };
    let patched = patched_document(current, body, patch_type)?;
    finish(def, current, patched, opts, ctx)
}

/// `current` with a JSON, merge or strategic merge patch applied, before any rule of the
/// kind (what a subresource that is not stored, such as `scale`, is patched with). An apply
/// is a merge here: its rules are [`crate::apply`]'s.
pub fn patched(current: &Value, body: &[u8], patch_type: &PatchType) -> Result<Value, Status> {
    let body: Value =
        serde_json::from_slice(body).map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    patched_document(current, body, patch_type)
}

fn patched_document(current: &Value, body: Value, patch_type: &PatchType) -> Result<Value, Status> {
    Ok(match patch_type {
        PatchType::Json => json_patch_of(current, body)?,
        PatchType::StrategicMerge => {
            if !body.is_object() {
                return Err(Status::bad_request("strategic merge patch must be a JSON object"));
            }
            strategic::merge(true, strategic::ListOrder::Patch, current, &body)?
        }
        PatchType::Merge | PatchType::Apply { .. } => {
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &body);
            doc
        }
    })
}

/// Applies an RFC 6902 patch to a copy of `current`.
fn json_patch_of(current: &Value, body: Value) -> Result<Value, Status> {
    let operations: json_patch::Patch =
        serde_json::from_value(body).map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    let mut doc = current.clone();
    json_patch::patch(&mut doc, &operations).map_err(|e| {
        let message = match e.kind {
            json_patch::PatchErrorKind::TestFailed => format!("testing value {} failed: test failed", e.path),
            _ => format!("the JSON patch could not be applied: {e}"),
        };
        Status::new(422, StatusReason::Invalid, message)
    })?;
    Ok(doc)
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;

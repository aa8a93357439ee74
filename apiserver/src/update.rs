//! Update (PUT): replace a stored object, under the API server's rules.
//!
//! The rules, in order (`finish` holds them; patch and apply end with them too):
//!
//! - the object's apiVersion and kind must be the resource's (400); its name and namespace,
//!   when set, must be the stored object's (400, as a name that differs from the URL's);
//! - `metadata.resourceVersion`, when set, must be the stored one, else 409 Conflict (the
//!   object has been modified). An update without one is unconditional for built-in kinds;
//!   custom resources require it (422). A patch carries the stored one unless it sets its own;
//! - `metadata.uid`, when set, must be the stored one (409, a failed precondition);
//! - name, namespace, uid, creationTimestamp, deletionTimestamp and
//!   deletionGracePeriodSeconds are kept from the stored object, whatever the request says;
//! - a write to the main resource of a kind with a status subresource keeps the stored
//!   `status`; a write to `/status` keeps everything but `status` (labels and annotations
//!   included) from the stored object;
//! - `metadata.generation` (for kinds that keep one, see
//!   [`ResourceDef::tracks_generation`]) goes up by one when anything outside `metadata` (and
//!   outside `status`, for kinds with a status subresource) changes;
//! - an object being deleted may not gain finalizers (422); losing its last finalizer
//!   removes it ([`Write::Delete`]);
//! - metadata is validated (names, labels, annotations);
//! - a result equal to the stored object (ignoring resourceVersion and managed-field times) is
//!   [`Write::Unchanged`]: no write, no event.
//!
//! Create-on-update (which some built-in kinds allow) is not offered: updating a missing
//! object is 404 Not Found.

use serde_json::Value;

use crate::data_keys;
use crate::field_error::FieldError;
use crate::managed_fields;
use crate::object;
use crate::resource::ResourceDef;
use crate::status::Status;
use crate::validate;
use crate::write::{Subresource, Write, WriteOptions, check_object, set, shape_error};
use crate::{Context, field_error};

/// Applies an update (PUT) of `obj` to the stored object `current`.
pub fn update(
    def: &ResourceDef,
    current: Option<&Value>,
    obj: Value,
    opts: &WriteOptions,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    object::check_shape(&obj).map_err(shape_error)?;
    let Some(current) = current else { return Err(Status::not_found(def, object::name(&obj))) };
    if object::resource_version(&obj).is_empty() && !def.built_in {
        let error = FieldError::invalid_raw("metadata.resourceVersion", "0x0", "must be specified for an update");
        return Err(Status::invalid(def, object::name(current), &[error]));
    }
    finish(def, current, obj, opts, ctx)
}

/// The update rules shared by update, patch and apply: `new` is the requested state of
/// `current`.
pub(crate) fn finish(
    def: &ResourceDef,
    current: &Value,
    mut new: Value,
    opts: &WriteOptions,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    check_object(def, &mut new)?;
    if opts.subresource == Some(Subresource::Status) && !def.status_subresource {
        return Err(Status::new(
            404,
            crate::StatusReason::NotFound,
            "the server could not find the requested resource",
        ));
    }
    let name = object::name(current).to_string();
    if !def.namespaced {
        // As on create: a cluster-scoped object's namespace is dropped, not refused.
        object::remove_meta(&mut new, "namespace");
    }
    check_identity(current, &new, &name)?;
    check_preconditions(def, current, &new, &name)?;
    crate::defaults::apply(def, &mut new);

    let mut new = match opts.subresource {
        Some(Subresource::Status) => {
            let mut kept = current.clone();
            copy_top(&new, &mut kept, "status");
            if let Some(fields) = object::metadata(&new).and_then(|m| m.get("managedFields")) {
                set(&mut kept, "managedFields", fields.clone())?;
            }
            kept
        }
        None => {
            if def.status_subresource {
                copy_top(current, &mut new, "status");
            }
            new
        }
    };
    for field in ["name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        object::copy_meta(current, &mut new, field).map_err(shape_error)?;
    }
    object::copy_meta(current, &mut new, "generation").map_err(shape_error)?;
    object::remove_meta(&mut new, "selfLink");
    if object::metadata(&new).and_then(|m| m.get("managedFields")).is_none() {
        object::copy_meta(current, &mut new, "managedFields").map_err(shape_error)?;
    }

    if object::deletion_timestamp(current).is_some() {
        let old = object::finalizers(current);
        let added: Vec<String> = object::finalizers(&new).into_iter().filter(|f| !old.contains(f)).collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| field_error::quote(f)).collect();
            let detail = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                quoted.join(", ")
            );
            return Err(Status::invalid(def, &name, &[FieldError::forbidden("metadata.finalizers", &detail)]));
        }
    }
    let mut errors = validate::object_meta(def, &new);
    errors.extend(data_keys::errors(def, &new));
    if !errors.is_empty() {
        return Err(Status::invalid(def, &name, &errors));
    }

    if def.tracks_generation() && spec_changed(def, current, &new) {
        set(&mut new, "generation", object::generation(current) + 1)?;
    }
    if def.built_in && crate::crd_status::is_crd(&def.group, &def.kind) {
        crate::crd_status::establish(&mut new, Some(current), &ctx.timestamp());
    }
    if let Some(manager) = &opts.field_manager {
        managed_fields::record_update(def, Some(current), &mut new, manager, opts.subresource, &ctx.timestamp());
    }
    object::copy_meta(current, &mut new, "resourceVersion").map_err(shape_error)?;

    if object::deletion_timestamp(&new).is_some() && object::finalizers(&new).is_empty() {
        return Ok(Write::Delete(new));
    }
    if unchanged(&new, current) {
        return Ok(Write::Unchanged(current.clone()));
    }
    Ok(Write::Put(new))
}

/// The name and namespace of the request's object, when set, must be the stored ones.
fn check_identity(current: &Value, new: &Value, name: &str) -> Result<(), Status> {
    let new_name = object::name(new);
    if !new_name.is_empty() && new_name != name {
        return Err(Status::bad_request(format!(
            "the name of the object ({new_name}) does not match the name on the URL ({name})"
        )));
    }
    let new_namespace = object::namespace(new);
    if !new_namespace.is_empty() && new_namespace != object::namespace(current) {
        return Err(Status::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// The resourceVersion and uid the request's object carries are preconditions.
fn check_preconditions(def: &ResourceDef, current: &Value, new: &Value, name: &str) -> Result<(), Status> {
    let version = object::resource_version(new);
    if !version.is_empty() && version != object::resource_version(current) {
        return Err(Status::modified(def, name));
    }
    let uid = object::uid(new);
    if !uid.is_empty() && uid != object::uid(current) {
        let why =
            format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", object::uid(current));
        return Err(Status::conflict(def, name, &why));
    }
    Ok(())
}

/// Sets top-level field `field` of `to` to that of `from`, or removes it when `from` has none.
fn copy_top(from: &Value, to: &mut Value, field: &str) {
    let Some(map) = to.as_object_mut() else { return };
    match from.get(field) {
        Some(v) => map.insert(field.into(), v.clone()),
        None => map.remove(field),
    };
}

/// Whether anything outside metadata (and outside status, when status is a subresource)
/// changed. Compared in place: the objects may be large, so neither is copied.
fn spec_changed(def: &ResourceDef, old: &Value, new: &Value) -> bool {
    let outside = |key: &str| key != "metadata" && !(def.status_subresource && key == "status");
    match (old.as_object(), new.as_object()) {
        (Some(old), Some(new)) => !maps_equal(old, new, outside, |_, a, b| a == b),
        _ => old != new,
    }
}

/// Whether `new` equals `current` for "nothing changed": ignoring resourceVersion and
/// managed-field times. Compared in place, without copying either object.
fn unchanged(new: &Value, current: &Value) -> bool {
    let (Some(new), Some(current)) = (new.as_object(), current.as_object()) else { return new == current };
    maps_equal(
        new,
        current,
        |_| true,
        |key, a, b| match (key, a, b) {
            ("metadata", Value::Object(a), Value::Object(b)) => maps_equal(
                a,
                b,
                |k| k != "resourceVersion",
                |k, a, b| match (k, a, b) {
                    ("managedFields", Value::Array(a), Value::Array(b)) => {
                        a.len() == b.len()
                            && a.iter().zip(b).all(|(a, b)| match (a, b) {
                                (Value::Object(a), Value::Object(b)) => {
                                    maps_equal(a, b, |k| k != "time", |_, a, b| a == b)
                                }
                                _ => a == b,
                            })
                    }
                    _ => a == b,
                },
            ),
            _ => a == b,
        },
    )
}

/// Whether maps `a` and `b` hold the same keys among those `kept`, with values equal by
/// `equal` (given the key). Independent of key order.
fn maps_equal(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
    kept: impl Fn(&str) -> bool,
    equal: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let count = |m: &serde_json::Map<String, Value>| m.keys().filter(|k| kept(k)).count();
    count(a) == count(b) && a.iter().filter(|(k, _)| kept(k)).all(|(k, va)| b.get(k).is_some_and(|vb| equal(k, va, vb)))
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;

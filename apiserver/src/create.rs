//! Create (POST): a new object, under the API server's rules.
//!
//! - the object's apiVersion and kind must be the resource's (400; filled in when absent);
//! - a namespaced object takes the request's namespace; a namespace the object sets must be
//!   the same (400); a cluster-scoped object has none;
//! - a `metadata.resourceVersion` that is a non-zero number is refused with 500 and the API
//!   server's message (its storage layer refuses it so, with no reason); any other value is
//!   dropped, as the real one ignores what it cannot parse;
//! - an empty name with a `generateName` becomes `generateName` (cut to 58 characters) plus
//!   a random 5-character suffix ([`assign_name`]); with neither, 422;
//! - metadata is validated (names, labels, annotations); an existing object of that name is
//!   409 AlreadyExists;
//! - the server sets `uid`, `creationTimestamp`, `generation` 1 (for kinds that keep one,
//!   see [`ResourceDef::tracks_generation`]); it drops `deletionTimestamp`,
//!   `deletionGracePeriodSeconds`, `selfLink`, and, for kinds with a status subresource,
//!   `status` (which only the `/status` subresource writes).

use serde_json::Value;

use crate::context::{Context, NAME_SUFFIX_LEN};
use crate::field_error::FieldError;
use crate::managed_fields;
use crate::object;
use crate::resource::ResourceDef;
use crate::status::{Status, StatusReason};
use crate::validate;
use crate::write::{Write, WriteOptions, check_object, set, shape_error};
use crate::{data_keys, defaults};

/// The longest name a generated name may have: a DNS label, less the suffix.
const MAX_GENERATE_NAME_PREFIX: usize = 63 - NAME_SUFFIX_LEN;

/// Gives an object with an empty name and a `generateName` its generated name; leaves other
/// objects alone. [`create`] calls it; a store that must look up the stored object by name
/// calls it first, to know the name.
pub fn assign_name(obj: &mut Value, ctx: &dyn Context) -> Result<(), Status> {
    object::check_shape(obj).map_err(shape_error)?;
    if !object::name(obj).is_empty() {
        return Ok(());
    }
    let prefix = object::meta_str(obj, "generateName");
    if prefix.is_empty() {
        return Ok(());
    }
    let cut = prefix.char_indices().nth(MAX_GENERATE_NAME_PREFIX).map_or(prefix.len(), |(i, _)| i);
    let name = format!("{}{}", &prefix[..cut], ctx.name_suffix());
    set(obj, "name", name)
}

/// Applies a create (POST) of `obj` in `namespace` (the request's; `None` for a
/// cluster-scoped request). `current` is the stored object of the same name, if any: when the
/// name is generated, call [`assign_name`] first to know which name to look up.
pub fn create(
    def: &ResourceDef,
    current: Option<&Value>,
    namespace: Option<&str>,
    mut obj: Value,
    opts: &WriteOptions,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    check_object(def, &mut obj)?;
    if def.namespaced {
        let requested = namespace.unwrap_or("");
        let own = object::namespace(&obj);
        if !own.is_empty() && own != requested {
            return Err(Status::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if !requested.is_empty() {
            set(&mut obj, "namespace", requested)?;
        }
    } else {
        object::remove_meta(&mut obj, "namespace");
    }
    if object::resource_version(&obj).parse::<u64>().is_ok_and(|v| v != 0) {
        return Err(Status::new(
            500,
            StatusReason::Unknown,
            "resourceVersion should not be set on objects to be created",
        ));
    }
    object::remove_meta(&mut obj, "resourceVersion");
    assign_name(&mut obj, ctx)?;
    defaults::apply(def, &mut obj);

    let name = object::name(&obj).to_string();
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::required("metadata.name", "name or generateName is required"));
    }
    if def.namespaced && object::namespace(&obj).is_empty() {
        errors.push(FieldError::required("metadata.namespace", ""));
    }
    errors.extend(validate::object_meta(def, &obj));
    errors.extend(data_keys::errors(def, &obj));
    if !errors.is_empty() {
        return Err(Status::invalid(def, &name, &errors));
    }
    if current.is_some() {
        return Err(Status::already_exists(def, &name));
    }

    set(&mut obj, "uid", ctx.new_uid())?;
    set(&mut obj, "creationTimestamp", ctx.timestamp())?;
    for field in ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"] {
        object::remove_meta(&mut obj, field);
    }
    if def.tracks_generation() {
        set(&mut obj, "generation", 1)?;
    }
    if def.status_subresource
        && let Some(map) = obj.as_object_mut()
    {
        map.remove("status");
        defaults::initial_status(def, &mut obj);
    }
    if def.built_in && crate::crd_status::is_crd(&def.group, &def.kind) {
        crate::crd_status::establish(&mut obj, None, &ctx.timestamp());
    }
    if let Some(manager) = &opts.field_manager {
        managed_fields::record_update(def, None, &mut obj, manager, None, &ctx.timestamp());
    }
    // Admission comes after the request's fields are owned: what it adds is no manager's.
    defaults::admit_create(def, &mut obj, ctx);
    Ok(Write::Put(obj))
}

#[cfg(test)]
#[path = "create_tests.rs"]
mod tests;

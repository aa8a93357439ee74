//! Server-side apply: merge a manager's configuration into the live object and track who owns
//! which field.
//!
//! An apply with no live object creates it (through [`mod@crate::create`]'s rules). Otherwise:
//!
//! 1. The configuration's fields ([`FieldSet::of_object`]) are compared with the other
//!    managers' sets in `metadata.managedFields`. A field another manager owns whose applied
//!    value differs from the live one is a conflict: 409 listing them, in the API server's
//!    words (`Apply failed with 1 conflict: conflict with "other": .spec.replicas`). With
//!    `force`, the applier takes those fields from their managers instead. Fields applied
//!    with the same value are shared.
//! 2. Fields the manager applied before and omits now are removed from the object, unless
//!    another manager owns them (or something below them).
//! 3. The configuration is merged into the live object: maps merge, associative lists merge
//!    by key (the strategic table for built-ins; custom resources have only atomic lists
//!    outside metadata), atomic lists and scalars replace.
//! 4. The manager's `Apply` entry becomes exactly the applied fields, and the result goes
//!    through the update rules.
//!
//! An object that has no managed fields when it is first applied to gets a
//! `before-first-apply` manager owning all its fields, as in the API server.
//!
//! Approximations: without OpenAPI schemas, list types come from a fixed table (so a custom
//! resource's `x-kubernetes-list-type: map` lists are atomic here); `null` in a configuration
//! removes the field rather than being ignored; a configuration's field set is not checked
//! against a schema (unknown fields are kept); managers' apiVersions are not converted.

use serde_json::Value;

use crate::context::Context;
use crate::create::create;
use crate::fieldset::{FieldSet, display, ends_at_item, remove_at, value_at};
use crate::managed_fields::{self, APPLY, BEFORE_FIRST_APPLY, ManagedEntry, UPDATE, sub_name};
use crate::object;
use crate::resource::ResourceDef;
use crate::status::{Status, StatusCause, StatusDetails, StatusReason};
use crate::strategic;
use crate::update::finish;
use crate::write::{Subresource, Write, WriteOptions, check_object};

/// Who applies what, to which object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApplyRequest<'a> {
    /// The object's name (from the URL).
    pub name: &'a str,
    /// The request's namespace.
    pub namespace: Option<&'a str>,
    /// The field manager.
    pub manager: &'a str,
    /// Take conflicting fields instead of refusing.
    pub force: bool,
}

/// One field another manager owns with a different value.
struct Conflict {
    /// Index of the owning entry.
    entry: usize,
    /// The field.
    path: Vec<String>,
}

/// Applies `config` as `request.manager` to the live object `current`.
pub(crate) fn apply(
    def: &ResourceDef,
    request: &ApplyRequest<'_>,
    current: Option<&Value>,
    mut config: Value,
    subresource: Option<Subresource>,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    if !config.is_object() {
        return Err(Status::bad_request("the applied configuration must be an object"));
    }
    check_object(def, &mut config)?;
    let own_name = object::name(&config);
    if !own_name.is_empty() && own_name != request.name {
        return Err(Status::bad_request(format!(
            "the name of the object ({own_name}) does not match the name on the URL ({})",
            request.name
        )));
    }
    crate::write::set(&mut config, "name", request.name)?;
    object::remove_meta(&mut config, "managedFields");
    let applied = FieldSet::of_object(def, &config, subresource);
    let now = ctx.timestamp();
    let own_entry = |fields: FieldSet| ManagedEntry {
        manager: request.manager.into(),
        operation: APPLY.into(),
        api_version: def.api_version(),
        time: Some(now.clone()),
        subresource: sub_name(subresource).into(),
        fields,
    };

    let Some(current) = current else {
        if subresource.is_some() {
            return Err(Status::not_found(def, request.name));
        }
        managed_fields::write(&mut config, &[own_entry(applied)]);
        return create(def, None, request.namespace, config, &WriteOptions::default(), ctx);
    };

    let mut entries = managed_fields::read(current);
    if entries.is_empty() {
        entries.push(ManagedEntry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: UPDATE.into(),
            api_version: def.api_version(),
            time: Some(now.clone()),
            subresource: String::new(),
            fields: FieldSet::of_object(def, current, None),
        });
    }
    let mine = |e: &ManagedEntry| e.is(request.manager, APPLY, subresource);
    let conflicts: Vec<Conflict> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !mine(e))
        .flat_map(|(index, e)| {
            applied
                .iter()
                .filter(|path| e.fields.contains(path) && !ends_at_item(path))
                .filter(|path| value_at(current, path) != value_at(&config, path))
                .map(move |path| Conflict { entry: index, path: path.clone() })
        })
        .collect();
    if !conflicts.is_empty() {
        if !request.force {
            return Err(conflict_status(&entries, &conflicts));
        }
        for conflict in &conflicts {
            entries[conflict.entry].fields.remove(&conflict.path);
        }
    }

    let previous = entries.iter().find(|e| mine(e)).map(|e| e.fields.clone()).unwrap_or_default();
    let mut merged = current.clone();
    let dropped = previous.difference(&applied);
    // Parents sort before their children: an item removed takes its fields with it (removing
    // the key field first would leave the item unfindable).
    for path in dropped.iter() {
        if !entries.iter().any(|e| !mine(e) && e.fields.covers(path)) {
            remove_at(&mut merged, path);
        }
    }
    let mut merged = strategic::merge(def.built_in, strategic::ListOrder::Live, &merged, &config)?;
    match entries.iter().position(mine) {
        Some(i) => entries[i] = own_entry(applied),
        None => entries.push(own_entry(applied)),
    }
    managed_fields::write(&mut merged, &entries);
    let opts = WriteOptions { subresource, field_manager: None };
    finish(def, current, merged, &opts, ctx)
}

/// The 409 of an apply that conflicts, worded as the API server words it.
fn conflict_status(entries: &[ManagedEntry], conflicts: &[Conflict]) -> Status {
    let message = match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            entries[one.entry].describe(),
            display(&one.path)
        ),
        many => {
            let mut managers: Vec<String> = many.iter().map(|c| entries[c.entry].describe()).collect();
            managers.sort();
            managers.dedup();
            let mut lines = Vec::new();
            for manager in &managers {
                lines.push(format!("conflicts with {manager}:"));
                for conflict in many.iter().filter(|c| entries[c.entry].describe() == *manager) {
                    lines.push(format!("- {}", display(&conflict.path)));
                }
            }
            format!("Apply failed with {} conflicts: {}", many.len(), lines.join("\n"))
        }
    };
    let causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", entries[c.entry].describe()),
            field: display(&c.path),
        })
        .collect();
    Status {
        code: 409,
        reason: StatusReason::Conflict,
        message,
        details: Some(Box::new(StatusDetails { causes, ..StatusDetails::default() })),
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;

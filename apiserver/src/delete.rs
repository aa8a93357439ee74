//! Delete: remove an object at once, or mark it for deletion while finalizers remain.
//!
//! - a missing object is 404;
//! - preconditions (uid, resourceVersion) that differ from the stored object are 409 with the
//!   API server's `Precondition failed: ...` text;
//! - a propagation policy sets the garbage collector's finalizer: `Orphan` adds `orphan`,
//!   `Foreground` adds `foregroundDeletion`, `Background` removes both (no policy leaves the
//!   finalizers as they are). Nothing here plays the garbage collector: whoever owns the
//!   store removes those finalizers, as it would any other;
//! - an object with finalizers is not removed: it gets `deletionTimestamp` (now),
//!   `deletionGracePeriodSeconds` 0 and, for kinds that keep one, a new `generation`; it goes
//!   once its last finalizer is removed (see [`mod@crate::update`]). Deleting it again changes
//!   nothing ([`Write::Unchanged`]) unless the policy changes its finalizers;
//! - an object without finalizers is removed ([`Write::Delete`]);
//! - a Namespace, as kube-apiserver's namespace storage deletes it: the first delete only
//!   starts its termination (`deletionTimestamp`, `status.phase: Terminating`, answered with
//!   the namespace), and it stays while `spec.finalizers` lists anything — the namespace
//!   controller empties that once the namespace's content is gone, then deletes it again.
//!
//! Grace periods are not modelled: nothing here plays the kubelet, so a pod without
//! finalizers is removed at once, as kube-apiserver removes a pod no node runs — with the
//! `deletionTimestamp`, `deletionGracePeriodSeconds` 0 and new `generation` its graceful
//! deletion stamps first, so its last state reads as on a real server.

use serde_json::Value;

use crate::context::Context;
use crate::object;
use crate::resource::ResourceDef;
use crate::status::Status;
use crate::write::{Write, set};

/// The finalizer of an orphaning deletion.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer of a foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// Conditions the stored object must meet for the delete to proceed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object's uid must be this.
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    pub resource_version: Option<String>,
}

/// What happens to an object's dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents are left alone (finalizer `orphan`).
    Orphan,
    /// Dependents are deleted in the background after the owner.
    Background,
    /// Dependents are deleted before the owner (finalizer `foregroundDeletion`).
    Foreground,
}

/// The options of a delete request (metav1.DeleteOptions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Conditions on the stored object.
    pub preconditions: Preconditions,
    /// What happens to dependents; `None` leaves the finalizers as they are.
    pub propagation_policy: Option<PropagationPolicy>,
    /// Accepted for the wire; every deletion here is immediate (see the module docs).
    pub grace_period_seconds: Option<i64>,
}

/// Applies a delete of the object `name`, stored as `current`.
pub fn delete(
    def: &ResourceDef,
    name: &str,
    current: Option<&Value>,
    opts: &DeleteOptions,
    ctx: &dyn Context,
) -> Result<Write, Status> {
    let Some(current) = current else { return Err(Status::not_found(def, name)) };
    if let Some(uid) = &opts.preconditions.uid
        && uid != object::uid(current)
    {
        let why =
            format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", object::uid(current));
        return Err(Status::conflict(def, name, &why));
    }
    if let Some(version) = &opts.preconditions.resource_version
        && version != object::resource_version(current)
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {version}, ResourceVersion in object meta: {}",
            object::resource_version(current)
        );
        return Err(Status::conflict(def, name, &why));
    }

    let old_finalizers = object::finalizers(current);
    let mut finalizers = old_finalizers.clone();
    let mut ensure = |finalizer: &str, present: bool| {
        finalizers.retain(|f| f != finalizer);
        if present {
            finalizers.push(finalizer.to_string());
        }
    };
    match opts.propagation_policy {
        Some(PropagationPolicy::Orphan) => {
            ensure(FOREGROUND_FINALIZER, false);
            ensure(ORPHAN_FINALIZER, true);
        }
        Some(PropagationPolicy::Foreground) => {
            ensure(ORPHAN_FINALIZER, false);
            ensure(FOREGROUND_FINALIZER, true);
        }
        Some(PropagationPolicy::Background) => {
            ensure(ORPHAN_FINALIZER, false);
            ensure(FOREGROUND_FINALIZER, false);
        }
        None => {}
    }
    let being_deleted = object::deletion_timestamp(current).is_some();
    if def.is_namespace() && !being_deleted {
        let mut marked = current.clone();
        set(&mut marked, "deletionTimestamp", ctx.timestamp())?;
        if finalizers != old_finalizers {
            set(&mut marked, "finalizers", finalizers)?;
        }
        if let Some(object) = marked.as_object_mut() {
            let status = object.entry("status").or_insert_with(|| serde_json::json!({}));
            if status.is_object() {
                status["phase"] = "Terminating".into();
            }
        }
        return Ok(Write::Put(marked));
    }
    if def.is_namespace() && !object::namespace_finalizers(current).is_empty() {
        return Ok(Write::Unchanged(current.clone()));
    }
    if finalizers.is_empty() {
        let mut last = current.clone();
        if def.deletes_gracefully() && !being_deleted {
            mark_deleted(&mut last, def, current, ctx)?;
        }
        return Ok(Write::Delete(last));
    }
    if being_deleted && finalizers == old_finalizers {
        return Ok(Write::Unchanged(current.clone()));
    }
    let mut marked = current.clone();
    set(&mut marked, "finalizers", finalizers)?;
    if !being_deleted {
        mark_deleted(&mut marked, def, current, ctx)?;
    }
    Ok(Write::Put(marked))
}

/// Stamps `object` (a copy of `current`) as being deleted now, with no grace period.
fn mark_deleted(object: &mut Value, def: &ResourceDef, current: &Value, ctx: &dyn Context) -> Result<(), Status> {
    set(object, "deletionTimestamp", ctx.timestamp())?;
    set(object, "deletionGracePeriodSeconds", 0)?;
    if def.tracks_generation() {
        set(object, "generation", object::generation(current) + 1)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "delete_tests.rs"]
mod tests;

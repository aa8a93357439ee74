//! The garbage collector (kube-controller-manager's `garbagecollector`), run on the
//! embedded cluster's writes: an object's owners are the objects its `ownerReferences`
//! name by uid, and
//!
//! - when every owner of a dependent is gone, the dependent is deleted (with the policy its
//!   own finalizers ask for, background by default); when some owner remains, the
//!   references to the gone ones are removed instead;
//! - an owner deleted with `propagationPolicy: Foreground` (finalizer `foregroundDeletion`)
//!   has its dependents deleted first, and is released once none of those that block it
//!   (`blockOwnerDeletion: true`) remains;
//! - an owner deleted with `propagationPolicy: Orphan` (finalizer `orphan`) has its
//!   reference removed from every dependent, then is released.
//!
//! As in `attemptToDeleteItem`, an owner is *solid* when it exists and is not waiting for
//! its dependents, *waiting* when it is being deleted in the foreground, *dangling* when no
//! object of that kind, name and uid exists. An owner of a kind the cluster does not serve
//! counts as solid: nothing is deleted on a guess.

use serde_json::Value;

use super::{Target, delete, modify, remove_string, report};
use crate::cluster::{DeleteOptions, PropagationPolicy};
use crate::embedded::{EmbeddedClient, EmbeddedCluster};
use crate::informer::Object;
use wink_apiserver::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, object::finalizers};

/// What an owner reference points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Solid,
    Waiting,
    Dangling,
}

/// An object that names an owner, with its stored JSON.
struct Dependent {
    target: Target,
    value: Value,
}

/// An object was removed: its dependents may have lost their last owner, and the owners
/// it blocked (being deleted in the foreground) may be released.
pub(super) fn removed(client: &EmbeddedClient, object: &Object) {
    for dependent in dependents_of(client.cluster(), object.uid()) {
        attempt_to_delete(client, &dependent);
    }
    let Ok(value) = object.to_value() else { return };
    for reference in references(&value) {
        let Some((target, owner)) = owner_of(client.cluster(), object.namespace(), reference) else { continue };
        if state_of(&owner, reference) == Owner::Waiting {
            release_if_unblocked(client, &target, &owner);
        }
    }
}

/// An object is marked for deletion: an `orphan` finalizer orphans its dependents, a
/// `foregroundDeletion` one deletes them first.
pub(super) fn being_deleted(client: &EmbeddedClient, target: &Target, object: &Object) {
    let Ok(value) = object.to_value() else { return };
    let finalizers = finalizers(&value);
    if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        let uid = object.uid().to_owned();
        for dependent in dependents_of(client.cluster(), &uid) {
            let result = modify(client, &dependent.target, |value| remove_references(value, |r| uid_of(r) == uid));
            report("orphaning a dependent", &dependent.target, result);
        }
        let result = modify(client, target, |value| remove_string(value, "/metadata/finalizers", ORPHAN_FINALIZER));
        report("removing the orphan finalizer", target, result);
    } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        for dependent in dependents_of(client.cluster(), object.uid()) {
            attempt_to_delete(client, &dependent);
        }
        release_if_unblocked(client, target, &value);
    }
}

/// `attemptToDeleteItem`: deletes a dependent none of whose owners is solid any more, or
/// drops its references to the owners that are gone or waiting while a solid one remains.
fn attempt_to_delete(client: &EmbeddedClient, dependent: &Dependent) {
    let value = &dependent.value;
    let being_deleted = value.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let deleting_dependents = finalizers(value).iter().any(|f| f == FOREGROUND_FINALIZER);
    if being_deleted {
        if deleting_dependents {
            release_if_unblocked(client, &dependent.target, value);
        }
        return;
    }
    let namespace = dependent.target.namespace.as_deref();
    let states: Vec<(String, Owner)> = references(value)
        .map(|r| {
            let state = owner_of(client.cluster(), namespace, r).map_or(Owner::Dangling, |(_, o)| state_of(&o, r));
            let state = if known_kind(client.cluster(), r) { state } else { Owner::Solid };
            (uid_of(r).to_owned(), state)
        })
        .collect();
    if states.is_empty() {
        return;
    }
    if states.iter().any(|(_, s)| *s == Owner::Solid) {
        let gone: Vec<String> = states.into_iter().filter(|(_, s)| *s != Owner::Solid).map(|(uid, _)| uid).collect();
        if !gone.is_empty() {
            let result =
                modify(client, &dependent.target, |v| remove_references(v, |r| gone.iter().any(|u| u == uid_of(r))));
            report("removing references to gone owners", &dependent.target, result);
        }
        return;
    }
    let waiting = states.iter().any(|(_, s)| *s == Owner::Waiting);
    let policy = if waiting && !dependents_of(client.cluster(), uid_of_object(value)).is_empty() {
        PropagationPolicy::Foreground
    } else if finalizers(value).iter().any(|f| f == ORPHAN_FINALIZER) {
        PropagationPolicy::Orphan
    } else if deleting_dependents {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    let options = DeleteOptions { propagation_policy: Some(policy), ..DeleteOptions::default() };
    report("deleting a dependent", &dependent.target, delete(client, &dependent.target, options));
}

/// `processDeletingDependentsItem`: an owner being deleted in the foreground is released
/// (its `foregroundDeletion` finalizer removed) once no dependent blocks it.
fn release_if_unblocked(client: &EmbeddedClient, target: &Target, owner: &Value) {
    let uid = uid_of_object(owner);
    let blocking = dependents_of(client.cluster(), uid).into_iter().any(|d| {
        references(&d.value)
            .any(|r| uid_of(r) == uid && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true))
    });
    if !blocking {
        let result = modify(client, target, |value| {
            value.pointer("/metadata/deletionTimestamp").is_some()
                && remove_string(value, "/metadata/finalizers", FOREGROUND_FINALIZER)
        });
        report("removing the foregroundDeletion finalizer", target, result);
    }
}

/// Every stored object with an owner reference to `uid`.
fn dependents_of(cluster: &dyn EmbeddedCluster, uid: &str) -> Vec<Dependent> {
    let mut found = Vec::new();
    if uid.is_empty() {
        return found;
    }
    for (api_version, kind) in cluster.stored_kinds() {
        let Some(collection) = cluster.collection(&api_version, &kind) else { continue };
        for object in collection.source.objects() {
            if object.meta().owner_references.iter().any(|r| r.uid == uid)
                && let Ok(value) = object.to_value()
            {
                found.push(Dependent { target: Target::of(&api_version, &kind, &object), value });
            }
        }
    }
    found
}

/// The stored owner an owner reference of an object in `namespace` names, if the kind is
/// served and an object of that name exists (whatever its uid).
fn owner_of(cluster: &dyn EmbeddedCluster, namespace: Option<&str>, reference: &Value) -> Option<(Target, Value)> {
    let api_version = reference.get("apiVersion").and_then(Value::as_str)?;
    let kind = reference.get("kind").and_then(Value::as_str)?;
    let name = reference.get("name").and_then(Value::as_str)?;
    let collection = cluster.collection(api_version, kind)?;
    // A namespaced owner of a cluster-scoped dependent cannot exist (the collector reports it).
    let namespace = if collection.def.namespaced { Some(namespace?) } else { None };
    let object = collection.source.get(&crate::informer::object_key(namespace, name))?;
    let value = object.to_value().ok()?;
    Some((Target::of(api_version, kind, &object), value))
}

/// Whether the cluster serves the kind a reference names.
fn known_kind(cluster: &dyn EmbeddedCluster, reference: &Value) -> bool {
    let field = |f: &str| reference.get(f).and_then(Value::as_str).unwrap_or_default();
    cluster.collection(field("apiVersion"), field("kind")).is_some()
}

/// What `owner` (the object stored under the reference's name) is to a reference.
fn state_of(owner: &Value, reference: &Value) -> Owner {
    if uid_of_object(owner) != uid_of(reference) {
        return Owner::Dangling;
    }
    let being_deleted = owner.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if being_deleted && finalizers(owner).iter().any(|f| f == FOREGROUND_FINALIZER) {
        Owner::Waiting
    } else {
        Owner::Solid
    }
}

fn references(value: &Value) -> impl Iterator<Item = &Value> {
    value.pointer("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten()
}

fn uid_of(reference: &Value) -> &str {
    reference.get("uid").and_then(Value::as_str).unwrap_or_default()
}

fn uid_of_object(value: &Value) -> &str {
    value.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

/// Removes the owner references `matching` selects; whether any was.
fn remove_references(value: &mut Value, matching: impl Fn(&Value) -> bool) -> bool {
    let Some(list) = value.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = list.len();
    list.retain(|r| !matching(r));
    let changed = list.len() != before;
    if list.is_empty()
        && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("ownerReferences");
    }
    changed
}

//! The namespace controller (kube-controller-manager's `namespace` controller), run on the
//! embedded cluster's writes: a Namespace being deleted (phase `Terminating`, see
//! [`wink_apiserver::delete`]) has every object in it deleted in the background; once none
//! is left (objects with finalizers go when those are removed), its `kubernetes` finalizer
//! is cleared and it is deleted again, which removes it.

use super::{Target, delete, modify, remove_string, report};
use crate::cluster::{DeleteOptions, PropagationPolicy};
use crate::embedded::EmbeddedClient;

/// The finalizer of the namespace controller, in a Namespace's `spec.finalizers`.
const KUBERNETES_FINALIZER: &str = "kubernetes";

fn namespace(name: &str) -> Target {
    Target { api_version: "v1".into(), kind: "Namespace".into(), namespace: None, name: name.to_owned() }
}

/// The Namespace `name` is being deleted: delete what is in it, and finish if that is all.
pub(super) fn terminating(client: &EmbeddedClient, name: &str) {
    let background =
        DeleteOptions { propagation_policy: Some(PropagationPolicy::Background), ..DeleteOptions::default() };
    for target in content(client, name) {
        report("deleting a terminating namespace's content", &target, delete(client, &target, background.clone()));
    }
    content_removed(client, name);
}

/// An object of namespace `name` was removed: if the namespace is terminating and now
/// empty, clear its finalizer and delete it.
pub(super) fn content_removed(client: &EmbeddedClient, name: &str) {
    let target = namespace(name);
    let Some(collection) = client.cluster().collection("v1", "Namespace") else { return };
    let Some(stored) = collection.source.get(name) else { return };
    if stored.meta().deletion_timestamp.is_none() || !content(client, name).is_empty() {
        return;
    }
    let result = modify(client, &target, |value| remove_string(value, "/spec/finalizers", KUBERNETES_FINALIZER));
    report("finalizing a namespace", &target, result);
    report("removing a finalized namespace", &target, delete(client, &target, DeleteOptions::default()));
}

/// Every object stored in namespace `name`, of every namespaced kind.
fn content(client: &EmbeddedClient, name: &str) -> Vec<Target> {
    let cluster = client.cluster();
    let mut found = Vec::new();
    for (api_version, kind) in cluster.stored_kinds() {
        let Some(collection) = cluster.collection(&api_version, &kind) else { continue };
        if !collection.def.namespaced {
            continue;
        }
        for object in collection.source.objects() {
            if object.namespace() == Some(name) {
                found.push(Target::of(&api_version, &kind, &object));
            }
        }
    }
    found
}

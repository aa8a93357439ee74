//! What kube-controller-manager does to the embedded cluster's objects, for the clusters
//! that run it ([`EmbeddedCluster::runs_controllers`]: the directory source, which
//! `wink run` and `--serve-api` serve; the tests' API server is kube-apiserver alone, as the
//! real one in the tests):
//!
//! - [`gc`]: the garbage collector — owner references are honoured: removing an owner
//!   deletes its dependents (background), `foregroundDeletion` deletes them first and then
//!   releases the owner, `orphan` clears their owner references and then releases it;
//! - [`namespaces`]: the namespace controller — a Namespace being deleted has everything in
//!   it deleted, then its `kubernetes` finalizer cleared, then goes.
//!
//! They run after each write through the [`EmbeddedClient`] (a plugin's, kubectl's), on the
//! write's outcome, and write through the same client, so a cascade runs its course before
//! the first request is answered: kubectl's `delete --cascade=foreground` finds the owner
//! gone when it looks. A write that is neither a removal nor a mark for deletion costs one
//! look at the object's metadata.

mod gc;
mod namespaces;

use serde_json::Value;

use super::EmbeddedClient;
use super::rules::Outcome;
use crate::cluster::{Request, RequestError, Verb};
use crate::informer::Object;

/// The field manager of the controllers' own writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";

/// How often a read-modify-write is tried again when the object changed in between.
const CONFLICT_RETRIES: usize = 5;

/// One object, by its kind and place.
#[derive(Clone, Debug)]
pub(super) struct Target {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl Target {
    fn of(api_version: &str, kind: &str, object: &Object) -> Self {
        Self {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: object.namespace().map(str::to_owned),
            name: object.name().to_owned(),
        }
    }

    fn request(&self, verb: Verb) -> Request {
        Request::new(verb, &self.api_version, &self.kind, self.namespace.clone(), &self.name)
            .with_field_manager(MANAGER)
    }
}

/// Runs the controllers on what a write of `api_version` `kind` did.
pub(super) fn after_write(client: &EmbeddedClient, api_version: &str, kind: &str, outcome: &Outcome) {
    let object = &outcome.object;
    let target = Target::of(api_version, kind, object);
    if outcome.removed {
        gc::removed(client, object);
        if let Some(namespace) = object.namespace() {
            namespaces::content_removed(client, namespace);
        }
        return;
    }
    if object.meta().deletion_timestamp.is_none() {
        return;
    }
    if api_version == "v1" && kind == "Namespace" {
        namespaces::terminating(client, object.name());
    }
    gc::being_deleted(client, &target, object);
}

/// Reads `target`, lets `change` edit it (false: nothing to do) and updates it, trying
/// again when it changed in between. A missing object is nothing to do.
fn modify(client: &EmbeddedClient, target: &Target, change: impl Fn(&mut Value) -> bool) -> Result<(), RequestError> {
    for _ in 0..CONFLICT_RETRIES {
        let current = match client.execute_now(target.request(Verb::Get)) {
            Ok(outcome) => outcome.object,
            Err(RequestError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut value = current.to_value()?;
        if !change(&mut value) {
            return Ok(());
        }
        match client.execute_now(target.request(Verb::Update).with_body(value.to_string())) {
            Err(RequestError::Conflict(_)) => continue,
            Err(RequestError::NotFound(_)) => return Ok(()),
            other => return other.map(drop),
        }
    }
    Err(RequestError::Conflict(format!("{} {} kept changing", target.kind, target.name)))
}

/// Removes `item` from the list of strings at `pointer` (a finalizers list); whether it
/// was there.
fn remove_string(value: &mut Value, pointer: &str, item: &str) -> bool {
    let Some(list) = value.pointer_mut(pointer).and_then(Value::as_array_mut) else { return false };
    let before = list.len();
    list.retain(|f| f.as_str() != Some(item));
    list.len() != before
}

/// Deletes `target` with `options`; a missing object is nothing to do.
fn delete(
    client: &EmbeddedClient,
    target: &Target,
    options: crate::cluster::DeleteOptions,
) -> Result<(), RequestError> {
    match client.execute_now(target.request(Verb::Delete(options))) {
        Ok(_) | Err(RequestError::NotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Logs a controller's failed write: the cluster goes on (as kube-controller-manager would
/// try again later).
fn report(what: &str, target: &Target, result: Result<(), RequestError>) {
    if let Err(error) = result {
        tracing::warn!(%error, kind = %target.kind, name = %target.name, namespace = ?target.namespace, "{what} failed");
    }
}

#[cfg(test)]
#[path = "controllers_tests.rs"]
mod tests;

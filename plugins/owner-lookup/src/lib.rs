//! owner-lookup: follows ownerReferences through the host's cache.
//!
//! On a pod add or update it finds the pod's ReplicaSet in the cache, then that ReplicaSet's
//! Deployment, and logs `pod ns/x belongs to Deployment ns/y via ReplicaSet ns/z`. On a
//! ReplicaSet add it counts the ReplicaSet's pods with the host's `owner-uid` index. Owners
//! that are missing from the cache (not yet listed, or deleted) are logged at debug level and
//! otherwise ignored. Owner references come parsed in the object's metadata record, so the
//! plugin never parses the JSON. Build with `cargo xtask build-plugins`.

use wink_guest::{Action, Handler, HandlerError, Object, OwnerReference, Resource, cache, debug, info};

fn pods() -> Resource {
    Resource::new("v1", "Pod")
}

fn replica_sets() -> Resource {
    Resource::new("apps/v1", "ReplicaSet")
}

fn deployments() -> Resource {
    Resource::new("apps/v1", "Deployment")
}

/// Explains pod ownership.
#[derive(Default)]
struct OwnerLookup;

impl Handler for OwnerLookup {
    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        if obj.resource() == pods() {
            explain_pod(obj)
        } else if obj.resource() == replica_sets() {
            count_pods(obj)
        } else {
            Ok(Action::AwaitChange)
        }
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        if new.resource() == pods() { explain_pod(new) } else { Ok(Action::AwaitChange) }
    }
}

/// Logs the Deployment and ReplicaSet that own `pod`.
fn explain_pod(pod: &Object) -> Result<Action, HandlerError> {
    let pod_key = pod.key();
    let Some(rs_ref) = owner(pod, "ReplicaSet") else {
        debug!("pod {pod_key} has no ReplicaSet owner");
        return Ok(Action::AwaitChange);
    };
    let rs_key = sibling_key(pod, &rs_ref.name);
    let Some(rs) = cached_owner(&replica_sets(), &rs_key, rs_ref)? else {
        debug!("pod {pod_key}: its ReplicaSet {rs_key} is not in the cache");
        return Ok(Action::AwaitChange);
    };
    let Some(deploy_ref) = owner(&rs, "Deployment") else {
        info!("pod {pod_key} belongs to ReplicaSet {rs_key}, which no Deployment owns");
        return Ok(Action::AwaitChange);
    };
    let deploy_key = sibling_key(pod, &deploy_ref.name);
    if cached_owner(&deployments(), &deploy_key, deploy_ref)?.is_none() {
        debug!("pod {pod_key}: Deployment {deploy_key} of ReplicaSet {rs_key} is not in the cache");
        return Ok(Action::AwaitChange);
    }
    info!("pod {pod_key} belongs to Deployment {deploy_key} via ReplicaSet {rs_key}");
    Ok(Action::AwaitChange)
}

/// Logs how many cached pods `rs` owns.
fn count_pods(rs: &Object) -> Result<Action, HandlerError> {
    let pods = cache::by_index(&pods(), cache::OWNER_UID_INDEX, rs.uid())?;
    info!("ReplicaSet {} owns {} pods", rs.key(), pods.len());
    Ok(Action::AwaitChange)
}

/// The owner reference of `kind` (in the `apps` group), preferring the controller.
fn owner<'a>(obj: &'a Object, kind: &str) -> Option<&'a OwnerReference> {
    obj.owner_references()
        .iter()
        .filter(|r| r.kind == kind && r.api_version.starts_with("apps/"))
        .max_by_key(|r| r.controller)
}

/// The cached owner named by `reference`, if it is there and is the same object (same uid:
/// not a newer object that reuses the name).
fn cached_owner(resource: &Resource, key: &str, reference: &OwnerReference) -> Result<Option<Object>, HandlerError> {
    Ok(cache::get(resource, key)?.filter(|o| o.uid() == reference.uid))
}

/// The key of `name` in `obj`'s namespace: owners live in their dependents' namespace.
fn sibling_key(obj: &Object, name: &str) -> String {
    match obj.namespace() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

wink_guest::export_handler!(OwnerLookup);

//! reloader: rolls Deployments out when the ConfigMaps they name change.
//!
//! A Deployment annotated `reloader.wink.dev/configmaps: a,b` gets its pod template annotated
//! `reloader.wink.dev/config-hash: <sha256 of a's and b's data>`; when a ConfigMap changes,
//! the hash changes, the pod template changes, and Kubernetes rolls the Deployment out. No
//! write when the hash is unchanged, so the plugin's own write (an update it watches) ends
//! there. Build with `cargo xtask build-plugins`.
//!
//! A reconciler of Deployments: the host calls `reconcile` with a Deployment's key when it
//! changes, and with the keys `map_to_keys` gives a ConfigMap's event — the Deployments of
//! its namespace that name it (read from the cache).

use sha2::{Digest, Sha256};
use wink_guest::cluster::{self, EventType, RequestError};
use wink_guest::serde_json::{Value, json};
use wink_guest::{Action, HandlerError, Key, Object, Reconciler, Resource, cache, info};

/// The annotation listing the ConfigMaps a Deployment depends on.
const CONFIGMAPS: &str = "reloader.wink.dev/configmaps";
/// The pod template annotation holding the hash of their data.
const HASH: &str = "reloader.wink.dev/config-hash";

fn deployments() -> Resource {
    Resource::new("apps/v1", "Deployment")
}

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

/// The ConfigMaps a Deployment names, if it opted in.
fn named_config_maps(deployment: &Object) -> Vec<String> {
    deployment
        .annotation(CONFIGMAPS)
        .map(|list| list.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The hash of the named ConfigMaps' data (from the cache), in the order named.
fn config_hash(namespace: &str, names: &[String]) -> Result<String, HandlerError> {
    let mut hasher = Sha256::new();
    for name in names {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        if let Some(cm) = cache::get(&config_maps(), &format!("{namespace}/{name}"))? {
            let value = cm.json_value()?;
            // serde_json's maps are sorted: the same data always hashes the same.
            hasher.update(value.get("data").unwrap_or(&Value::Null).to_string().as_bytes());
            hasher.update(value.get("binaryData").unwrap_or(&Value::Null).to_string().as_bytes());
        }
        hasher.update([0]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn template_hash(deployment: &Object) -> Result<Option<String>, HandlerError> {
    let value = deployment.json_value()?;
    Ok(value
        .pointer("/spec/template/metadata/annotations")
        .and_then(|a| a.get(HASH))
        .and_then(Value::as_str)
        .map(str::to_owned))
}

/// Brings one Deployment's pod template hash up to date.
fn reconcile(deployment: &Object) -> Result<Action, HandlerError> {
    let names = named_config_maps(deployment);
    let Some(namespace) = deployment.namespace() else { return Ok(Action::AwaitChange) };
    if names.is_empty() || deployment.deletion_timestamp().is_some() {
        return Ok(Action::AwaitChange);
    }
    let hash = config_hash(namespace, &names)?;
    let current = template_hash(deployment)?;
    if current.as_deref() == Some(hash.as_str()) {
        return Ok(Action::AwaitChange);
    }
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {HASH: hash}}}}});
    match cluster::merge_patch(&deployments(), Some(namespace), deployment.name(), &patch) {
        Ok(_) => {}
        // Deleted meanwhile: its delete event follows.
        Err(RequestError::NotFound(_)) => return Ok(Action::AwaitChange),
        Err(e) => return Err(e.into()),
    }
    let note = match current {
        None => format!("pod template annotated with the hash of ConfigMaps {}", names.join(", ")),
        Some(_) => format!("ConfigMaps {} changed: rolling out", names.join(", ")),
    };
    info!("{deployment}: {note}");
    // An Event that cannot be recorded does not undo the rollout.
    if let Err(e) = cluster::record_event(deployment, EventType::Normal, "ConfigChanged", "Reload", &note) {
        wink_guest::warn!("{deployment}: cannot record an Event: {}", e.message());
    }
    Ok(Action::AwaitChange)
}

/// The Deployments of a ConfigMap's namespace that name it.
fn naming(cm: &Object) -> Result<Vec<Key>, HandlerError> {
    let Some(namespace) = cm.namespace() else { return Ok(Vec::new()) };
    let deployments = cache::list(&deployments(), Some(namespace))?;
    let naming = deployments.iter().filter(|d| named_config_maps(d).iter().any(|n| n == cm.name()));
    Ok(naming.map(|d| Key::new(namespace, d.name())).collect())
}

#[derive(Default)]
struct Reloader;

impl Reconciler for Reloader {
    fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError> {
        match cache::get(&deployments(), &key.to_string())? {
            Some(deployment) => reconcile(&deployment),
            // Deleted: nothing to roll out.
            None => Ok(Action::AwaitChange),
        }
    }

    /// A ConfigMap's change (a deleted one counts as empty) concerns the Deployments naming it.
    fn map_to_keys(&mut self, cm: &Object) -> Vec<Key> {
        naming(cm).unwrap_or_else(|e| {
            wink_guest::warn!("{cm}: cannot list the Deployments naming it: {e}");
            Vec::new()
        })
    }
}

wink_guest::export_reconciler!(Reloader);

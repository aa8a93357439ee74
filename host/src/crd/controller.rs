//! The `WinkPlugin` controller: an informer on `wink.dev/v1alpha1` `WinkPlugin` objects whose
//! handler reconciles each one, as a controller-runtime reconciler would.
//!
//! - A new or changed object (a new `generation`, or a tag pointing at a new digest): its
//!   artifact is resolved and pulled (verified, cached by digest), written as a plugin folder
//!   whose `plugin.yaml` is the object's spec (the artifact's own manifest only names the
//!   component), and deployed through the registry — replacing the running version, with the
//!   handover every replacement has (the new version gets the cache as its initial list).
//! - A deleted object: its plugin is removed.
//! - An object naming a `serviceAccount` of another namespace is not deployed (`Failed`): a
//!   WinkPlugin acts only as an account of its own namespace, so the right to write
//!   WinkPlugins in one namespace never reaches another tenant's accounts.
//! - Its status, through the status subresource: `Deployed` with the digest running, or
//!   `Failed` with the reason (a spec the manifest rules refuse, an unreachable registry, a
//!   component that does not load), `Quarantined` once the plugin is, and its call, error and
//!   trap counts, refreshed every [`ControllerOptions::refresh`].
//! - Failures to pull are retried with the informer's per-key backoff; tags are resolved again
//!   every [`ControllerOptions::refresh`] (a requeue), digests never.
//!
//! The plugin runs as `{namespace}-{name}` (shortened with a hash past 63 characters), so
//! objects of the same name in two namespaces are two plugins.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::types::{Phase, WinkPluginSpec, WinkPluginStatus};
use crate::cluster::{ClusterClient, PatchType, Request, Subresource, Verb};
use crate::errors::Chain;
use crate::informer::{Action, EventHandler, HandlerError, HandlerResult, Object, ResourceKey};
use crate::oci::{OciClient, PluginArtifact};
use crate::plugin::{MANIFEST_FILE, PluginRegistry};

/// The resource the controller watches.
pub fn resource() -> ResourceKey {
    ResourceKey::new("wink.dev/v1alpha1", "WinkPlugin")
}

/// How the controller works.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// Where the plugins' folders are written.
    pub pull_dir: PathBuf,
    /// How often tags are resolved again and status counts refreshed.
    pub refresh: Duration,
    /// This replica's name in its shard group, written in the status of the plugins it runs
    /// (`None`: no group).
    pub member: Option<String>,
}

/// What the controller knows of one object.
#[derive(Clone, Debug, Default)]
struct Tracked {
    generation: Option<i64>,
    digest: Option<String>,
    status: Option<WinkPluginStatus>,
}

/// The reconciler (an [`EventHandler`] of the `WinkPlugin` informer).
pub(crate) struct WinkPluginController {
    registry: Arc<PluginRegistry>,
    oci: Arc<OciClient>,
    cluster: Arc<dyn ClusterClient>,
    options: ControllerOptions,
    tracked: Mutex<std::collections::HashMap<String, Tracked>>,
}

impl std::fmt::Debug for WinkPluginController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WinkPluginController").field("options", &self.options).finish_non_exhaustive()
    }
}

/// The name a `WinkPlugin` runs under: `{namespace}-{name}`, at most 63 characters.
pub fn plugin_name(namespace: &str, name: &str) -> String {
    let full = format!("{namespace}-{name}");
    if full.len() <= 63 {
        return full;
    }
    let hash = hex::encode(&Sha256::digest(full.as_bytes())[..4]);
    let kept: String = full.chars().take(63 - hash.len() - 1).collect();
    format!("{}-{hash}", kept.trim_end_matches('-'))
}

/// The `plugin.yaml` of a spec: the spec without `image`, with the plugin's name and the
/// artifact's component.
pub(crate) fn manifest_of(spec: &WinkPluginSpec, name: &str, component: &str) -> Result<String, String> {
    let mut value = serde_json::to_value(spec).map_err(|e| e.to_string())?;
    let map = value.as_object_mut().ok_or("the spec is not an object")?;
    map.remove("image");
    map.insert("name".into(), name.into());
    map.insert("component".into(), component.into());
    serde_norway::to_string(&value).map_err(|e| e.to_string())
}

impl WinkPluginController {
    /// A controller deploying into `registry`, pulling with `oci`, writing status through
    /// `cluster`.
    pub fn new(
        registry: Arc<PluginRegistry>,
        oci: Arc<OciClient>,
        cluster: Arc<dyn ClusterClient>,
        options: ControllerOptions,
    ) -> Self {
        Self { registry, oci, cluster, options, tracked: Mutex::default() }
    }

    fn folder(&self, plugin: &str) -> PathBuf {
        self.options.pull_dir.join(plugin)
    }

    async fn reconcile(&self, obj: &Object) -> HandlerResult {
        let namespace = obj.namespace().unwrap_or_default().to_owned();
        let plugin = plugin_name(&namespace, obj.name());
        if obj.meta().deletion_timestamp.is_some() {
            self.remove(obj.key(), &plugin).await;
            return Ok(Action::AwaitChange);
        }
        let value = obj.to_value().map_err(|e| HandlerError::Fatal(e.to_string()))?;
        let spec: WinkPluginSpec = match serde_json::from_value(value["spec"].clone()) {
            Ok(spec) => spec,
            Err(e) => {
                let message = format!("the spec is not a WinkPlugin spec: {e}");
                self.report(obj, &plugin, Phase::Failed, Some(message), None).await;
                return Ok(Action::AwaitChange);
            }
        };
        // Whoever may write WinkPlugins in a namespace may act only as that namespace's
        // accounts: naming another's would cross from one tenant into another.
        if let Some(account) = spec.service_account.as_ref().filter(|a| a.namespace != namespace) {
            let message = format!(
                "serviceAccount {account} is not in the WinkPlugin's namespace {namespace}: a WinkPlugin may act \
                 only as a service account of its own namespace"
            );
            tracing::warn!(winkplugin = %obj.key(), %plugin, reason = %message, "WinkPlugin not deployed");
            self.report(obj, &plugin, Phase::Failed, Some(message), None).await;
            return Ok(Action::AwaitChange);
        }
        let pinned = spec.image.contains("@sha256:");
        let requeue = if pinned { Action::AwaitChange } else { Action::RequeueAfter(self.options.refresh) };
        let digest = match self.oci.resolve(&spec.image).await {
            Ok(digest) => digest,
            Err(e) => {
                let message = format!("cannot resolve {}: {}", spec.image, Chain(&e));
                self.report(obj, &plugin, Phase::Failed, Some(message.clone()), None).await;
                return Err(HandlerError::Retry(message));
            }
        };
        let known = self.tracked.lock().get(obj.key()).cloned().unwrap_or_default();
        if known.generation == obj.meta().generation && known.digest.as_deref() == Some(digest.as_str()) {
            // Nothing new: refresh the counts in the status.
            let phase = self.phase_of(&plugin).await;
            self.report(obj, &plugin, phase, None, Some(digest)).await;
            return Ok(requeue);
        }
        match self.deploy(&spec, &plugin, &digest).await {
            Ok(()) => {
                tracing::info!(winkplugin = %obj.key(), %plugin, %digest, "WinkPlugin deployed");
                self.tracked.lock().insert(
                    obj.key().to_owned(),
                    Tracked { generation: obj.meta().generation, digest: Some(digest.clone()), status: known.status },
                );
                let message = format!("deployed {}", spec.image);
                self.report(obj, &plugin, Phase::Deployed, Some(message), Some(digest)).await;
                Ok(requeue)
            }
            Err(Failure::Transient(message)) => {
                self.report(obj, &plugin, Phase::Failed, Some(message.clone()), None).await;
                Err(HandlerError::Retry(message))
            }
            Err(Failure::Refused(message)) => {
                tracing::warn!(winkplugin = %obj.key(), %plugin, reason = %message, "WinkPlugin not deployed");
                self.tracked.lock().insert(
                    obj.key().to_owned(),
                    Tracked { generation: obj.meta().generation, digest: Some(digest), status: known.status },
                );
                self.report(obj, &plugin, Phase::Failed, Some(message), None).await;
                Ok(requeue)
            }
        }
    }

    async fn deploy(&self, spec: &WinkPluginSpec, plugin: &str, digest: &str) -> Result<(), Failure> {
        let pulled = self
            .oci
            .pull_digest(&spec.image, digest)
            .await
            .map_err(|e| Failure::Transient(format!("cannot pull {}: {}", spec.image, Chain(&e))))?;
        let artifact = pulled.artifact;
        let manifest = manifest_of(spec, plugin, &artifact.component_name).map_err(Failure::Refused)?;
        let written = PluginArtifact { name: plugin.to_owned(), manifest: manifest.into_bytes(), ..artifact };
        let dir = self.folder(plugin);
        let target = dir.clone();
        tokio::task::spawn_blocking(move || written.write_to(&target))
            .await
            .map_err(|e| Failure::Transient(e.to_string()))?
            .map_err(|e| Failure::Transient(format!("cannot write {}: {}", dir.display(), Chain(&e))))?;
        self.registry.deploy(&dir).await.map(|_| ()).map_err(|e| Failure::Refused(Chain(&e).to_string()))
    }

    async fn remove(&self, key: &str, plugin: &str) {
        self.tracked.lock().remove(key);
        if self.registry.remove(plugin).await {
            tracing::info!(winkplugin = %key, %plugin, "WinkPlugin removed");
        }
        let dir = self.folder(plugin);
        if dir.join(MANIFEST_FILE).is_file() {
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
        }
    }

    async fn phase_of(&self, plugin: &str) -> Phase {
        match self.registry.status().await.into_iter().find(|s| s.name == plugin) {
            Some(s) if s.quarantined => Phase::Quarantined,
            Some(_) => Phase::Deployed,
            None => Phase::Failed,
        }
    }

    /// Writes the object's status (when it changed) through the status subresource.
    async fn report(&self, obj: &Object, plugin: &str, phase: Phase, message: Option<String>, digest: Option<String>) {
        if self.registry.is_parked(plugin) {
            // Another member of the shard group runs it, and reports it.
            return;
        }
        let metrics = self.registry.metrics().plugin(plugin);
        let previous = self.tracked.lock().get(obj.key()).and_then(|t| t.status.clone());
        let status = WinkPluginStatus {
            phase,
            message: message.or_else(|| previous.as_ref().and_then(|p| p.message.clone())),
            digest: if phase == Phase::Failed { previous.as_ref().and_then(|p| p.digest.clone()) } else { digest },
            plugin_name: Some(plugin.to_owned()),
            member: self.options.member.clone(),
            observed_generation: obj.meta().generation,
            calls: metrics.calls(),
            errors: {
                let (retried, fatal) = metrics.handler_errors();
                retried + fatal
            },
            traps: metrics.traps(),
        };
        if previous.as_ref() == Some(&status) {
            return;
        }
        let body = json!({"status": status}).to_string();
        let namespace = obj.namespace().map(str::to_owned);
        let request =
            Request::new(Verb::Patch(PatchType::Merge), "wink.dev/v1alpha1", "WinkPlugin", namespace, obj.name())
                .with_body(body)
                .with_subresource(Some(Subresource::Status));
        match self.cluster.execute(request, None).await {
            Ok(_) => {
                self.tracked.lock().entry(obj.key().to_owned()).or_default().status = Some(status);
            }
            Err(e) => tracing::warn!(winkplugin = %obj.key(), error = %e, "cannot write the WinkPlugin's status"),
        }
    }
}

/// Why a deploy failed.
enum Failure {
    /// Worth retrying with backoff (the registry, the disk).
    Transient(String),
    /// Not until the object changes (the spec or the component is refused).
    Refused(String),
}

#[async_trait]
impl EventHandler for WinkPluginController {
    async fn on_add(&self, obj: &Object, _is_initial_list: bool) -> HandlerResult {
        self.reconcile(obj).await
    }

    async fn on_update(&self, _old: &Object, new: &Object) -> HandlerResult {
        self.reconcile(new).await
    }

    async fn on_delete(&self, obj: &Object, _final_state_unknown: bool) -> HandlerResult {
        let plugin = plugin_name(obj.namespace().unwrap_or_default(), obj.name());
        self.remove(obj.key(), &plugin).await;
        Ok(Action::AwaitChange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Manifest;

    #[test]
    fn plugin_names_are_dns_labels_unique_per_namespace() {
        assert_eq!(plugin_name("team-a", "reloader"), "team-a-reloader");
        assert_ne!(plugin_name("team-a", "x"), plugin_name("team-b", "x"));
        let long = plugin_name(&"n".repeat(40), &"p".repeat(40));
        assert!(long.len() <= 63, "{long}");
        assert!(long.parse::<crate::plugin::manifest::PluginName>().is_ok(), "{long}");
        assert_ne!(long, plugin_name(&"n".repeat(40), &"p".repeat(41)), "shortened names keep a hash of the whole");
    }

    /// The spec is the manifest: what `plugin.yaml` would hold, read back by the manifest's
    /// own rules.
    #[test]
    fn the_spec_becomes_the_plugins_manifest() {
        let spec: WinkPluginSpec = serde_json::from_value(json!({
            "image": "registry.example/team/reloader:v1",
            "resources": [{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": "app in (web)", "resyncPeriod": "5m"}],
            "limits": {"memory": "32Mi", "callTimeout": "500ms"},
            "permissions": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"]}],
            "serviceAccount": "team-a/reloader",
            "config": {"threshold": 3}
        }))
        .unwrap();
        let yaml = manifest_of(&spec, "team-a-reloader", "reloader.wasm").unwrap();
        let manifest = Manifest::parse(&yaml, std::path::Path::new("plugin.yaml")).unwrap();
        assert_eq!(manifest.name.as_str(), "team-a-reloader");
        assert_eq!(manifest.component, std::path::Path::new("reloader.wasm"));
        assert_eq!(manifest.resources[0].resync(), Some(Duration::from_secs(300)));
        assert_eq!(manifest.limits.memory.bytes(), 32 << 20);
        assert_eq!(manifest.permissions.len(), 1);
        assert_eq!(manifest.service_account.unwrap().to_string(), "team-a/reloader");
        assert_eq!(manifest.config, Some(json!({"threshold": 3})));
        // A reconciler's spec: its `reconcile` section becomes the manifest's.
        let reconciler: WinkPluginSpec = serde_json::from_value(json!({
            "image": "registry.example/team/services:v1",
            "reconcile": {
                "for": {"apiVersion": "apps/v1", "kind": "Deployment"},
                "owns": [{"apiVersion": "v1", "kind": "Service"}],
                "watches": [{"apiVersion": "v1", "kind": "ConfigMap", "mapTo": {"annotation": "example.com/for"}}],
                "rateLimits": {"maxDelay": "5m"}
            }
        }))
        .unwrap();
        let yaml = manifest_of(&reconciler, "team-a-services", "services.wasm").unwrap();
        let manifest = Manifest::parse(&yaml, std::path::Path::new("plugin.yaml")).unwrap();
        let reconcile = manifest.reconcile.as_ref().expect("a reconciler");
        assert_eq!(reconcile.rate_limits.max_delay, Duration::from_secs(300));
        assert_eq!(manifest.resources.len(), 3, "primary, owned, watched");
        // A spec with fields the manifest does not know is refused, as a plugin.yaml would be.
        let unknown = serde_json::from_value::<WinkPluginSpec>(json!({"image": "x", "resources": [], "surprise": 1}));
        assert!(unknown.is_err());
    }
}

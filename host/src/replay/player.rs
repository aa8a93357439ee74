//! `wink replay PLUGIN RECORDING`: a plugin fed a recording offline.
//!
//! The plugin is loaded and started as `wink run` would (its `init` with its config); an
//! in-memory cluster takes each recorded object as the recording goes — the initial lists
//! first, as `wink run` calls a plugin once its caches synced — (so the plugin's cache reads
//! and live `get`s see the recorded state), and every recorded notification the plugin
//! watches (its namespaces and label selectors applied) is delivered to it, in order, each
//! call's outcome reported: what it logged (on stderr, as `wink run` logs it), the writes it
//! asked for (applied in memory, never sent: a dry run), its requeue requests, its errors and
//! traps. A reconciler gets the keys each notification maps to, reconciled at once
//! ([`keys`](super::keys)), one line per reconcile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ReplayError;
use super::dry_run::DryRun;
use super::format::{self, Line};
use super::keys::{Delivered, Keys, MAX_RECONCILES, Reconciled};
use crate::embedded::{EmbeddedClient, EmbeddedCluster};
use crate::embedded::{MemoryCluster, MemorySourceOptions};
use crate::informer::{
    Action, EventHandler, HandlerError, HandlerResult, InformerFactory, ListerWatcher, Object, ResourceKey, SourceError,
};
use crate::plugin::deploy::registry::FactoryCache;
use crate::plugin::imports::ClusterContext;
use crate::plugin::runtime::loader::{LoadedPlugin, load_manifest, load_plugin_manifest};
use crate::plugin::{
    EngineConfig, GuestPool, LoadError, LoadLimits, PluginEngine, PluginHandler, PluginMetrics, WatchedResource,
};
use crate::workqueue::WorkQueue;

/// What to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The plugin's folder or manifest.
    pub plugin: PathBuf,
    /// The recording.
    pub recording: PathBuf,
    /// Where compiled components are cached (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// What the loader accepts.
    pub load: LoadLimits,
}

/// What the replay found.
#[derive(Clone, Debug, Default)]
pub struct ReplayReport {
    /// One line per delivered notification, then its writes, indented.
    pub lines: Vec<String>,
    /// Calls delivered.
    pub calls: usize,
    /// Calls that returned an error or trapped.
    pub failed: usize,
    /// Lines of the recording that did not parse.
    pub malformed: usize,
    /// Whether the plugin did not start (`init` refused its config or trapped).
    pub init_failed: bool,
}

impl ReplayReport {
    /// The exit code for CI: 0 when every call succeeded, 1 when the plugin did not start or a
    /// call failed or trapped, 2 when only the recording had lines that did not parse.
    pub fn exit_code(&self) -> u8 {
        if self.init_failed || self.failed > 0 {
            1
        } else if self.malformed > 0 {
            2
        } else {
            0
        }
    }
}

/// `apiVersion` and kind of `group/version/Kind` or `version/Kind`.
fn split_resource(resource: &str) -> Option<(&str, &str)> {
    resource.rsplit_once('/')
}

/// Serves the recording's kinds that are not built in, as their objects suggest.
fn serve_kinds(cluster: &MemoryCluster, recording: &format::Recording) {
    for (_, line) in &recording.events {
        let (Some(resource), Line::Add { object, .. } | Line::Update { object, .. } | Line::Delete { object, .. }) =
            (line.resource(), line)
        else {
            continue;
        };
        let Some((api_version, kind)) = split_resource(resource) else { continue };
        if cluster.collection(api_version, kind).is_none() {
            let namespaced = object["metadata"]["namespace"].is_string();
            let plural = format!("{}s", kind.to_lowercase());
            let _ =
                cluster.register(api_version, kind, &plural, namespaced, object.get("status").is_some(), Vec::new());
        }
    }
}

fn selects(spec: &WatchedResource, obj: &Object) -> bool {
    spec.namespaces.as_ref().is_none_or(|ns| obj.namespace().is_some_and(|n| ns.iter().any(|x| x == n)))
        && spec.label_selector.as_ref().is_none_or(|s| s.matches(&obj.labels()))
}

fn outcome(result: &HandlerResult, trapped: bool) -> String {
    let text = match result {
        Ok(Action::AwaitChange) => "ok".to_owned(),
        Ok(Action::RequeueAfter(d)) => {
            format!("ok, asks to be called again in {} (not replayed)", humantime::format_duration(*d))
        }
        Err(HandlerError::Retry(why)) => format!("error (retry): {why}"),
        Err(HandlerError::Fatal(why)) => format!("error (fatal): {why}"),
        Err(HandlerError::Panicked(why)) => format!("host panic: {why}"),
    };
    if trapped { format!("trapped: {text}") } else { text }
}

/// Informers over the recording's `cluster` for every kind `plugin` watches or reads.
fn informers(cluster: &Arc<MemoryCluster>, plugin: &LoadedPlugin) -> Arc<InformerFactory> {
    let served = cluster.clone();
    let factory = Arc::new(InformerFactory::new(Arc::new(move |key: &ResourceKey| {
        served
            .collection(&key.api_version, &key.kind)
            .map(|c| Arc::new(c.source) as Arc<dyn ListerWatcher>)
            .ok_or_else(|| SourceError::Unsupported(format!("{key} is not in the recording")))
    })));
    let kinds = plugin.manifest.resources.iter().map(|r| (&r.api_version, &r.kind));
    for (api_version, kind) in kinds.chain(plugin.manifest.cache.iter().map(|g| (&g.api_version, &g.kind))) {
        let _ = factory.informer_for(&ResourceKey::new(api_version.as_str(), kind.as_str()));
    }
    factory
}

/// Replays `options.recording` to the plugin of `options.plugin`.
pub async fn replay(options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    let recording = format::read(&options.recording)?;
    let engine = PluginEngine::new(EngineConfig { cache_dir: options.cache_dir.clone(), ..EngineConfig::default() })?;
    let manifest = load_plugin_manifest(&options.plugin).map_err(LoadError::from)?;
    let plugin = load_manifest(manifest, &engine, &options.load)?;
    let name = plugin.name().to_owned();

    let cluster = Arc::new(MemoryCluster::new(MemorySourceOptions::default()));
    serve_kinds(&cluster, &recording);
    let factory = informers(&cluster, &plugin);
    factory.start();

    let dry_run = DryRun::new(EmbeddedClient::new(cluster.clone()));
    let metrics = PluginMetrics::detached(&name);
    let link = ClusterContext::new(dry_run.clone(), false).link(&plugin.manifest, metrics.clone()).ok();
    let resolver = Arc::new(FactoryCache(factory.clone()));
    // A reconciler's sandbox holds its work queue, for the keys it enqueues itself.
    let queue = plugin.manifest.reconcile.as_ref().map(|r| WorkQueue::new(r.rate_limits.limits(), None));
    let sandbox = plugin.sandbox(&engine, resolver, link);
    let sandbox = match &queue {
        Some(queue) => sandbox.with_queue(queue.clone()),
        None => sandbox,
    };
    let handler = Arc::new(PluginHandler::for_sandbox(&plugin, sandbox, metrics.clone(), GuestPool::new(1)));
    let keys = queue.and_then(|queue| Keys::new(&plugin.manifest, queue, handler.clone()));
    let mut report = ReplayReport { malformed: recording.errors.len(), ..ReplayReport::default() };
    for error in &recording.errors {
        report.lines.push(format!("error: {error}"));
    }
    let started = handler.warm_up().await;
    if !matches!(started, crate::plugin::CallOutcome::Ok) {
        report.init_failed = true;
        report.lines.push(format!("plugin {name} does not start: {started}"));
        factory.shutdown().await;
        return Ok(report);
    }
    // As `wink run` first calls a plugin once every cache it reads has synced: the initial
    // lists are in the cluster (and the plugin's informers) before the first call.
    for (_, line) in &recording.events {
        if let (Some(resource), Line::Add { object, initial: true, .. }) = (line.resource(), line)
            && let (Some((api_version, kind)), Ok(obj)) =
                (split_resource(resource), Object::from_string(object.to_string()))
        {
            apply(&cluster, &factory, api_version, kind, line, &obj).await;
        }
    }
    for (number, line) in &recording.events {
        let (Some(resource), Line::Add { object, .. } | Line::Update { object, .. } | Line::Delete { object, .. }) =
            (line.resource(), line)
        else {
            continue;
        };
        let Some((api_version, kind)) = split_resource(resource) else { continue };
        let Ok(obj) = Object::from_string(object.to_string()) else {
            report.malformed += 1;
            report.lines.push(format!("error: line {number}: the object does not read"));
            continue;
        };
        if !matches!(line, Line::Add { initial: true, .. }) {
            apply(&cluster, &factory, api_version, kind, line, &obj).await;
        }
        let watched = plugin.manifest.resources.iter().find(|r| r.api_version == api_version && r.kind == kind);
        if !watched.is_some_and(|spec| selects(spec, &obj)) {
            continue;
        }
        let at = line_at(line);
        match &keys {
            Some(keys) => {
                reconcile(keys, &mut report, (at, resource, api_version, kind), line, &obj, &metrics, &dry_run).await;
            }
            None => handle(&handler, &mut report, (at, resource), line, &obj, &metrics, &dry_run).await,
        }
    }
    factory.shutdown().await;
    Ok(report)
}

/// Replays one notification to a handler: one line with its outcome, then its writes.
async fn handle(
    handler: &PluginHandler,
    report: &mut ReplayReport,
    (at, resource): (u64, &str),
    line: &Line,
    obj: &Object,
    metrics: &PluginMetrics,
    dry_run: &DryRun,
) {
    let traps = metrics.traps();
    let (event, result) = match line {
        Line::Add { initial, .. } => ("add", handler.on_add(obj, *initial).await),
        Line::Update { old, .. } => {
            let old = Object::from_string(old.to_string()).unwrap_or_else(|_| obj.clone());
            ("update", handler.on_update(&old, obj).await)
        }
        Line::Delete { unknown, .. } => ("delete", handler.on_delete(obj, *unknown).await),
        Line::Header { .. } => return,
    };
    let trapped = metrics.traps() > traps;
    report.calls += 1;
    if result.is_err() || trapped {
        report.failed += 1;
    }
    report.lines.push(format!("{at:>7}ms {event} {resource} {}: {}", obj.key(), outcome(&result, trapped)));
    report.lines.extend(dry_run.take().into_iter().map(|w| format!("          {w}")));
}

/// Replays one notification to a reconciler: one line per key it reconciled, each with its
/// writes.
async fn reconcile(
    keys: &Keys,
    report: &mut ReplayReport,
    (at, resource, api_version, kind): (u64, &str, &str, &str),
    line: &Line,
    obj: &Object,
    metrics: &PluginMetrics,
    dry_run: &DryRun,
) {
    let old = match line {
        Line::Update { old, .. } => Some(Object::from_string(old.to_string()).unwrap_or_else(|_| obj.clone())),
        _ => None,
    };
    let (event, delivered) = match (line, &old) {
        (Line::Add { initial, .. }, _) => ("add", Delivered::Add { obj, initial: *initial }),
        (Line::Update { .. }, Some(old)) => ("update", Delivered::Update { old, new: obj }),
        (Line::Delete { unknown, .. }, _) => ("delete", Delivered::Delete { obj, unknown: *unknown }),
        _ => return,
    };
    keys.map(api_version, kind, delivered).await;
    let about = format!("{at:>7}ms {event} {resource} {}", obj.key());
    let mut reconciles = 0;
    while reconciles < MAX_RECONCILES {
        let traps = metrics.traps();
        let Some(Reconciled { key, result }) = keys.next().await else { break };
        let trapped = metrics.traps() > traps;
        reconciles += 1;
        report.calls += 1;
        if result.is_err() || trapped {
            report.failed += 1;
        }
        report.lines.push(format!("{about} → reconcile {key}: {}", outcome(&result, trapped)));
        report.lines.extend(dry_run.take().into_iter().map(|w| format!("          {w}")));
    }
    if reconciles == 0 {
        report.lines.push(format!("{about}: maps to no key"));
    }
    if keys.more() {
        report.lines.push(format!("{about}: stopped after {MAX_RECONCILES} reconciles, keys still queued"));
    }
}

fn line_at(line: &Line) -> u64 {
    match line {
        Line::Add { at_ms, .. } | Line::Update { at_ms, .. } | Line::Delete { at_ms, .. } => *at_ms,
        Line::Header { .. } => 0,
    }
}

/// Applies a recorded change to the in-memory cluster, and waits (briefly) for the plugin's
/// informer of that kind to have it, so that cache reads during the call see it.
async fn apply(
    cluster: &MemoryCluster,
    factory: &InformerFactory,
    api_version: &str,
    kind: &str,
    line: &Line,
    obj: &Object,
) {
    let Some(collection) = cluster.collection(api_version, kind) else { return };
    let stored = match line {
        Line::Add { object, .. } | Line::Update { object, .. } => {
            let mut value: Value = object.clone();
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            collection.source.apply(value).ok().map(|o| o.resource_version().to_owned())
        }
        Line::Delete { .. } => {
            collection.source.delete(obj.key());
            None
        }
        Line::Header { .. } => return,
    };
    let Some(informer) = factory.existing(&ResourceKey::new(api_version, kind)) else { return };
    let store = informer.store();
    for _ in 0..1000 {
        let current = store.get_by_key(obj.key()).map(|o| o.resource_version().to_owned());
        if current == stored {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

//! [`Host`]: the one composition root of `wink run` — a source, its informers, the plugin
//! registry and whatever serves beside them — built from [`RunOptions`] and run until shut
//! down.
//!
//! [`Host::build`] does everything before the first event: opens the source (and, for a
//! folder, the embedded cluster's API when asked), the metrics endpoint, the registry with
//! its memory budget, policy and cluster access, joins the shard group, and deploys the
//! plugins (folder, OCI references, WinkPlugin objects). [`Host::run`] starts the informers,
//! waits for their caches, logs metrics on its interval, and on shutdown drains the calls
//! in flight and returns each plugin's summary.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{AppError, RunOptions, engine};
use crate::cluster::{ClusterClient, KubeClient};
use crate::crd::{self, WinkPluginController};
use crate::embedded::EmbeddedClient;
use crate::embedded::http::serve_api;
use crate::informer::{InformerFactory, SourceProvider};
use crate::oci::{OciClient, OciPlugins};
use crate::plugin::imports::ClusterContext;
use crate::plugin::manifest::format_bytes;
use crate::plugin::manifest::permissions::Policy;
use crate::plugin::{GuestPool, MetricsRegistry, PluginRegistry};
use crate::replay;
use crate::serve::{Endpoints, serve};
use crate::shard::{GroupOptions, LeaseOptions, Membership, ShardGroup};
use crate::source::{DirSource, DirSourceOptions, KubeSource, KubeSourceError, SourceSpec, load_config};

/// What a source gives the host: the informers' provider, the plugins' access to the
/// cluster, and a raw kube client when the source is an API server (for Leases).
struct Opened {
    provider: Arc<dyn SourceProvider>,
    cluster: ClusterContext,
    client: Arc<dyn ClusterClient>,
    kube: Option<kube::Client>,
}

/// A built host: its plugins deployed, its informers not yet started.
pub struct Host {
    factory: Arc<InformerFactory>,
    registry: Arc<PluginRegistry>,
    endpoints: Option<Arc<Endpoints>>,
    group: Option<tokio::task::JoinHandle<()>>,
    cancel: CancellationToken,
    metrics_interval: Option<Duration>,
    /// Registrations that listen while they live (the WinkPlugin controller, recorders).
    _held: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

impl Host {
    /// Builds the host `options` describe; it stops when `shutdown` fires.
    pub async fn build(options: RunOptions, shutdown: CancellationToken) -> Result<Self, AppError> {
        let cancel = shutdown.child_token();
        if matches!(options.source, SourceSpec::Dir(_)) && options.shard.is_some() {
            return Err(AppError::ShardNeedsKube);
        }
        let opened = open_source(&options, &cancel).await?;
        let cluster = match &options.policy {
            Some(path) => opened.cluster.with_policy(Policy::load(path)?),
            None => opened.cluster,
        };
        let factory = Arc::new(InformerFactory::new(opened.provider));
        let budget = options.bounds.memory_budget();
        tracing::info!(plugin_memory_budget = %format_bytes(budget.total()), "plugin memory budget");
        let metrics = MetricsRegistry::new();
        let endpoints = match options.listen {
            Some(addr) => Some(listen(addr, &metrics, &factory, &cancel).await?),
            None => None,
        };
        let engine = engine(options.cache_dir.clone(), &options.bounds)?;
        let registry = PluginRegistry::new(engine, factory.clone(), metrics, GuestPool::per_core())
            .with_memory_budget(budget)
            .with_load_limits(options.bounds.load)
            .with_start(options.start_plugins)
            .with_recycling(options.recycle)
            .with_cluster(cluster.with_shutdown(cancel.clone()));
        let (registry, membership) = match (&options.shard, &opened.kube) {
            (Some(lease), Some(client)) => {
                let (group, membership) = join_group(lease, client, endpoints.as_deref()).await;
                (Arc::new(registry.with_ownership(group.clone())), Some((group, membership)))
            }
            _ => (Arc::new(registry), None),
        };
        let mut held = Vec::new();
        let failed = deploy(&options, &registry, &factory, opened.client, &cancel, &mut held).await?;
        let group =
            membership.map(|(group, membership)| tokio::spawn(group.run(membership, registry.clone(), cancel.clone())));
        let deployed = registry.status().await;
        tracing::info!(deployed = deployed.len(), failed, plugins = ?options.plugins, "plugins loaded");
        if let Some(path) = &options.record {
            held.push(Box::new(record(path, &factory)?));
        }
        let metrics_interval = options.metrics_interval;
        Ok(Self { factory, registry, endpoints, group, cancel, metrics_interval, _held: held })
    }

    /// The informers.
    pub fn factory(&self) -> &Arc<InformerFactory> {
        &self.factory
    }

    /// The deployed plugins.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    /// Starts the informers and delivers events until shut down; then finishes the calls in
    /// flight and returns one summary line per plugin.
    pub async fn run(self) -> Result<Vec<String>, AppError> {
        let Self { factory, registry, endpoints, group, cancel, metrics_interval, _held } = self;
        factory.start();
        if let Some(endpoints) = &endpoints {
            endpoints.plugins_loaded();
        }
        let synced = factory.wait_for_cache_sync(&cancel).await;
        if !cancel.is_cancelled() {
            tracing::info!(informers = synced.len(), "caches synced");
        }
        match metrics_interval {
            Some(period) if !period.is_zero() => log_metrics(&registry, period, &cancel).await,
            _ => cancel.cancelled().await,
        }
        tracing::info!("shutting down: finishing calls in flight");
        if let Some(task) = group {
            let _ = task.await;
        }
        factory.shutdown().await;
        Ok(registry.summaries().await)
    }
}

/// Opens the source `options` name: a folder (watched; served over the Kubernetes API with
/// `--serve-api`) or an API server.
async fn open_source(options: &RunOptions, cancel: &CancellationToken) -> Result<Opened, AppError> {
    match &options.source {
        SourceSpec::Dir(path) => {
            let dir_options = DirSourceOptions { namespace: options.namespace.clone(), ..DirSourceOptions::default() };
            let dir = DirSource::open_with(path, dir_options)?;
            dir.watch(cancel.clone())?;
            tracing::info!(source = %path.display(), "watching manifests; plugins' writes are applied in memory");
            let client = Arc::new(EmbeddedClient::new(dir.clone()));
            if let Some(addr) = options.serve_api {
                let (bound, _task) = serve_api(addr, dir.clone(), cancel.clone())
                    .await
                    .map_err(|source| AppError::Listen { addr, source })?;
                tracing::info!(addr = %bound, "serving the embedded cluster over the Kubernetes API (kubectl --server http://{bound})");
            }
            Ok(Opened { provider: dir, cluster: ClusterContext::new(client.clone(), false), client, kube: None })
        }
        SourceSpec::Kube { .. } if options.serve_api.is_some() => Err(AppError::ServeApiNeedsDir),
        SourceSpec::Kube { kubeconfig } => {
            let mut config = load_config(kubeconfig.as_deref()).await?;
            if let Some(shard) = &options.shard {
                // Writes carry the member: its name is the field manager of updates and
                // patches, and shows in audit logs.
                let agent = format!("wink-member-{}/{}", shard.identity, env!("CARGO_PKG_VERSION"));
                if let Ok(value) = agent.parse() {
                    config.headers.push((http::header::USER_AGENT, value));
                }
            }
            let kube = KubeSource::from_config(config.clone())?;
            let client_error = |e| AppError::KubeSource(KubeSourceError::Client(e));
            let raw = kube::Client::try_from(config.clone()).map_err(client_error)?;
            let client: Arc<dyn ClusterClient> = Arc::new(KubeClient::new(config).map_err(client_error)?);
            tracing::info!(kubeconfig = ?kubeconfig, "watching a Kubernetes API server");
            let cluster = ClusterContext::new(client.clone(), true);
            Ok(Opened { provider: Arc::new(kube), cluster, client, kube: Some(raw) })
        }
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr`.
async fn listen(
    addr: std::net::SocketAddr,
    metrics: &MetricsRegistry,
    factory: &Arc<InformerFactory>,
    cancel: &CancellationToken,
) -> Result<Arc<Endpoints>, AppError> {
    let mut prometheus = prometheus_client::registry::Registry::default();
    metrics.register(&mut prometheus);
    let endpoints = Arc::new(Endpoints::new(prometheus, factory.clone()));
    let (bound, _task) =
        serve(addr, endpoints.clone(), cancel.clone()).await.map_err(|source| AppError::Listen { addr, source })?;
    tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz");
    Ok(endpoints)
}

/// Joins the shard group `lease` names, taking a first look at it before the first deploy
/// so that plugins start where they belong.
async fn join_group(
    lease: &LeaseOptions,
    client: &kube::Client,
    endpoints: Option<&Endpoints>,
) -> (Arc<ShardGroup>, Membership) {
    let group = Arc::new(ShardGroup::new(&lease.identity, GroupOptions { grace: lease.renew }));
    let mut membership = Membership::new(client.clone(), lease.clone());
    if let Err(err) = membership.renew().await {
        tracing::warn!(error = %crate::errors::Chain(&err), "cannot take this member's Lease yet");
    }
    match membership.observe().await {
        Ok(live) => {
            group.update(live);
        }
        Err(err) => tracing::warn!(error = %crate::errors::Chain(&err), "cannot list the shard group's Leases yet"),
    }
    tracing::info!(group = %lease.group, member = %lease.identity, lease = %lease.lease_name(), "joined the shard group");
    if let Some(endpoints) = endpoints {
        endpoints.register(|prometheus| group.register(prometheus));
    }
    (group, membership)
}

/// Deploys the plugins of every way they arrive — the plugins folder (watched when asked),
/// OCI references (followed), WinkPlugin objects — and returns how many failed to deploy.
/// What must live for plugins to keep arriving is pushed onto `held`.
async fn deploy(
    options: &RunOptions,
    registry: &Arc<PluginRegistry>,
    factory: &Arc<InformerFactory>,
    client: Arc<dyn ClusterClient>,
    cancel: &CancellationToken,
    held: &mut Vec<Box<dyn std::any::Any + Send + Sync>>,
) -> Result<usize, AppError> {
    let mut failed = 0;
    if let Some(plugins) = &options.plugins {
        failed += registry.sync_dir(plugins).await?.len();
        if options.watch_plugins {
            registry.watch_dir(plugins, cancel.clone())?;
        }
    }
    if let Some((oci, refresh)) = &options.plugin_refs {
        let client = Arc::new(OciClient::new(oci.clone()));
        let refs = Arc::new(OciPlugins::new(client, registry.clone(), refresh.clone())?);
        failed += refs.refresh().await.len();
        tokio::spawn(refs.run(cancel.clone()));
    }
    if let Some((oci, controller)) = &options.winkplugins {
        let oci = Arc::new(OciClient::new(oci.clone()));
        let controller = WinkPluginController::new(registry.clone(), oci, client, controller.clone());
        let informer = factory.informer_for(&crd::resource()).map_err(AppError::WinkPluginSource)?;
        // The WinkPlugin informer runs while its registration lives.
        held.push(Box::new(informer.add_event_handler(Arc::new(controller)).map_err(AppError::Informer)?));
        tracing::info!("taking plugins from WinkPlugin objects too");
    }
    Ok(failed)
}

/// Records what every informer delivers into `path`; the recording lasts while the returned
/// registrations live.
fn record(path: &Path, factory: &Arc<InformerFactory>) -> Result<impl Send + Sync + 'static, AppError> {
    let keys: Vec<_> = factory.informers().into_iter().map(|(key, _)| key).collect();
    let names = keys.iter().map(|k| format!("{}/{}", k.api_version, k.kind)).collect();
    let sink = replay::open_sink(path, "wink run", names, None, CancellationToken::new())?;
    tracing::info!(file = %path.display(), resources = keys.len(), "recording what the informers deliver");
    Ok(replay::record_into(factory, &keys, &sink)?)
}

/// Logs every plugin's metrics each `period` until `cancel` fires.
async fn log_metrics(registry: &PluginRegistry, period: Duration, cancel: &CancellationToken) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                for line in registry.summaries().await {
                    tracing::info!(target: "wink::metrics", "{line}");
                }
            }
            () = cancel.cancelled() => break,
        }
    }
}

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

use super::{AppError, RunOptions};
use crate::cluster::{ClusterClient, KubeClient};
use crate::crd::{self, WinkPluginController};
use crate::embedded::EmbeddedClient;
use crate::embedded::http::serve_api;
use crate::errors::Chain;
use crate::informer::{InformerConfig, InformerFactory, OWNER_UID_INDEX, SourceProvider, owner_uid_index_func};
use crate::oci::{OciClient, OciPlugins};
use crate::plugin::imports::ClusterContext;
use crate::plugin::manifest::format_bytes;
use crate::plugin::manifest::permissions::Policy;
use crate::plugin::{GuestPool, MetricsRegistry, PluginEngine, PluginRegistry};
use crate::replay;
use crate::serve::{Endpoints, serve};
use crate::shard::{GroupOptions, LeaseOptions, Membership, ShardGroup};
use crate::source::{DirSource, KubeSourceError, OpenError, OpenOptions, OpenedSource, SourceSpec};

/// What a source gives the host: the informers' provider, the plugins' access to the
/// cluster, and a raw kube client when the source is an API server (for Leases).
struct Opened {
    provider: Arc<dyn SourceProvider>,
    client: Option<Arc<dyn ClusterClient>>,
    /// Whether plugins naming a service account make their requests as it.
    impersonate: bool,
    kube: Option<kube::Client>,
    dir: Option<Arc<DirSource>>,
}

/// A source the caller opened itself instead of [`RunOptions::source`]: an embedder's own
/// lister-watchers, a test's in-memory stores.
pub struct CustomSource {
    /// What informers list and watch.
    pub provider: Arc<dyn SourceProvider>,
    /// Where plugins' `cluster` requests go (`None`: nowhere; they are refused).
    pub client: Option<Arc<dyn ClusterClient>>,
    /// Whether plugins naming a service account make their requests as it (a real
    /// cluster), or the name is only checked against the policy (see [`ClusterContext::new`]).
    pub impersonate: bool,
}

/// Makes a cluster client of another (a wrapper that counts, delays or fails requests).
type WrapClient = Box<dyn FnOnce(Arc<dyn ClusterClient>) -> Arc<dyn ClusterClient> + Send>;

/// Builds a [`Host`] from [`RunOptions`], with the parts a caller may bring instead of
/// those the options describe: a source, the informers' configuration, the wasm engine,
/// the number of guest threads, a wrapper of the plugins' cluster client.
pub struct HostBuilder {
    options: RunOptions,
    source: Option<CustomSource>,
    informer: Option<InformerConfig>,
    engine: Option<PluginEngine>,
    guest_threads: Option<usize>,
    wrap_client: Option<WrapClient>,
}

impl HostBuilder {
    /// Objects come from `source`, not from [`RunOptions::source`].
    #[must_use]
    pub fn source(mut self, source: CustomSource) -> Self {
        self.source = Some(source);
        self
    }

    /// The informers run with `config` (the `owner-uid` index reconcilers use is added to
    /// its indexers).
    #[must_use]
    pub fn informer_config(mut self, config: InformerConfig) -> Self {
        self.informer = Some(config);
        self
    }

    /// Plugins run on `engine` (sharing its compile cache and instance pool), not on one
    /// built from [`RunOptions::bounds`] and [`RunOptions::cache_dir`].
    #[must_use]
    pub fn engine(mut self, engine: PluginEngine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Guest code runs on `threads` threads (default: one per core).
    #[must_use]
    pub fn guest_threads(mut self, threads: usize) -> Self {
        self.guest_threads = Some(threads);
        self
    }

    /// Plugins' `cluster` requests go through what `wrap` makes of the source's client.
    #[must_use]
    pub fn wrap_client(
        mut self,
        wrap: impl FnOnce(Arc<dyn ClusterClient>) -> Arc<dyn ClusterClient> + Send + 'static,
    ) -> Self {
        self.wrap_client = Some(Box::new(wrap));
        self
    }

    /// Builds the host; it stops when `shutdown` fires.
    pub async fn build(self, shutdown: CancellationToken) -> Result<Host, AppError> {
        let Self { options, source, informer, engine, guest_threads, wrap_client } = self;
        let cancel = shutdown.child_token();
        if options.shard.is_some() && (source.is_some() || matches!(options.source, SourceSpec::Dir(_))) {
            return Err(AppError::ShardNeedsKube);
        }
        let mut opened = match source {
            Some(custom) => custom_source(custom, &options)?,
            None => open_source(&options, &cancel).await?,
        };
        if let Some(wrap) = wrap_client {
            opened.client = opened.client.take().map(wrap);
        }
        let mut factory = InformerFactory::new(opened.provider.clone());
        if let Some(mut config) = informer {
            if !config.indexers.iter().any(|(name, _)| name == OWNER_UID_INDEX) {
                config.indexers.push((OWNER_UID_INDEX.to_owned(), owner_uid_index_func()));
            }
            factory = factory.with_config(config);
        }
        let factory = Arc::new(factory);
        let budget = options.bounds.memory_budget();
        tracing::info!(plugin_memory_budget = %format_bytes(budget.total()), "plugin memory budget");
        let metrics = MetricsRegistry::new();
        let endpoints = match options.listen {
            Some(addr) => Some(listen(addr, &metrics, &factory, &cancel).await?),
            None => None,
        };
        let engine = match engine {
            Some(engine) => engine,
            None => super::engine(options.cache_dir.clone(), &options.bounds)?,
        };
        let threads = guest_threads.map_or_else(GuestPool::per_core, GuestPool::new);
        let mut registry = PluginRegistry::new(engine, factory.clone(), metrics, threads)
            .with_memory_budget(budget)
            .with_load_limits(options.bounds.load)
            .with_start(options.start_plugins)
            .with_recycling(options.recycle);
        if let Some(client) = &opened.client {
            let cluster = ClusterContext::new(client.clone(), opened.impersonate);
            let cluster = match &options.policy {
                Some(path) => cluster.with_policy(Policy::load(path)?),
                None => cluster,
            };
            registry = registry.with_cluster(cluster.with_shutdown(cancel.clone()));
        }
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
        tracing::info!(deployed = deployed.len(), failed = failed.len(), plugins = ?options.plugins, "plugins loaded");
        if let Some(path) = &options.record {
            held.push(Box::new(record(path, &factory)?));
        }
        let metrics_interval = options.metrics_interval;
        let dir = opened.dir;
        Ok(Host {
            factory,
            registry,
            endpoints,
            group,
            cancel,
            metrics_interval,
            dir,
            failed,
            started: false,
            _held: held,
        })
    }
}

/// A built host: its plugins deployed, its informers not yet started.
pub struct Host {
    factory: Arc<InformerFactory>,
    registry: Arc<PluginRegistry>,
    endpoints: Option<Arc<Endpoints>>,
    group: Option<tokio::task::JoinHandle<()>>,
    cancel: CancellationToken,
    metrics_interval: Option<Duration>,
    /// The folder source, when the host runs over one: its embedded cluster.
    dir: Option<Arc<DirSource>>,
    /// Why plugins failed to deploy, one line each.
    failed: Vec<String>,
    /// Whether its informers were started.
    started: bool,
    /// Registrations that listen while they live (the WinkPlugin controller, recorders).
    _held: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

impl Host {
    /// Builds the host `options` describe; it stops when `shutdown` fires.
    pub async fn build(options: RunOptions, shutdown: CancellationToken) -> Result<Self, AppError> {
        Self::builder(options).build(shutdown).await
    }

    /// A builder of the host `options` describe, for a caller bringing parts of its own.
    pub fn builder(options: RunOptions) -> HostBuilder {
        HostBuilder { options, source: None, informer: None, engine: None, guest_threads: None, wrap_client: None }
    }

    /// The embedded cluster of a host over a folder (`None` over an API server).
    pub fn embedded(&self) -> Option<&Arc<DirSource>> {
        self.dir.as_ref()
    }

    /// Why plugins failed to deploy when the host was built, one line each.
    pub fn deploy_failures(&self) -> &[String] {
        &self.failed
    }

    /// The informers.
    pub fn factory(&self) -> &Arc<InformerFactory> {
        &self.factory
    }

    /// The deployed plugins.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    /// Starts the informers and waits for their caches to sync (or for shutdown); events
    /// are delivered from now on. [`run`](Self::run) starts the host if this was not called.
    pub async fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        self.factory.start();
        if let Some(endpoints) = &self.endpoints {
            endpoints.plugins_loaded();
        }
        let synced = self.factory.wait_for_cache_sync(&self.cancel).await;
        if !self.cancel.is_cancelled() {
            tracing::info!(informers = synced.len(), "caches synced");
        }
    }

    /// Starts the host (unless [`start`](Self::start)ed) and delivers events until shut
    /// down; then finishes the calls in flight and returns one summary line per plugin.
    pub async fn run(mut self) -> Result<Vec<String>, AppError> {
        self.start().await;
        let Self { factory, registry, group, cancel, metrics_interval, .. } = self;
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
    if options.serve_api.is_some() && !matches!(options.source, SourceSpec::Dir(_)) {
        return Err(AppError::ServeApiNeedsDir);
    }
    // A shard member's writes carry its name: the field manager of its updates and
    // patches, and in audit logs.
    let user_agent =
        options.shard.as_ref().map(|s| format!("wink-member-{}/{}", s.identity, env!("CARGO_PKG_VERSION")));
    let open = OpenOptions { namespace: options.namespace.clone(), user_agent };
    match options.source.open(&open, cancel).await? {
        OpenedSource::Dir(dir) => {
            tracing::info!(source = %dir.root().display(), "watching manifests; plugins' writes are applied in memory");
            let client: Arc<dyn ClusterClient> = Arc::new(EmbeddedClient::new(dir.clone()));
            if let Some(addr) = options.serve_api {
                let (bound, _task) = serve_api(addr, dir.clone(), cancel.clone())
                    .await
                    .map_err(|source| AppError::Listen { addr, source })?;
                tracing::info!(addr = %bound, "serving the embedded cluster over the Kubernetes API (kubectl --server http://{bound})");
            }
            Ok(Opened { provider: dir.clone(), client: Some(client), impersonate: false, kube: None, dir: Some(dir) })
        }
        OpenedSource::Kube { source, config } => {
            let client_error = |e| AppError::Source(OpenError::Kube(KubeSourceError::Client(e)));
            let raw = kube::Client::try_from(*config.clone()).map_err(client_error)?;
            let client: Arc<dyn ClusterClient> = Arc::new(KubeClient::new(*config).map_err(client_error)?);
            tracing::info!(source = ?options.source, "watching a Kubernetes API server");
            Ok(Opened {
                provider: Arc::new(source),
                client: Some(client),
                impersonate: true,
                kube: Some(raw),
                dir: None,
            })
        }
    }
}

/// The parts of a [`CustomSource`], as the host holds an opened source.
fn custom_source(custom: CustomSource, options: &RunOptions) -> Result<Opened, AppError> {
    if options.serve_api.is_some() {
        return Err(AppError::ServeApiNeedsDir);
    }
    Ok(Opened {
        provider: custom.provider,
        client: custom.client,
        impersonate: custom.impersonate,
        kube: None,
        dir: None,
    })
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
/// OCI references (followed), WinkPlugin objects — and returns why those that failed did.
/// What must live for plugins to keep arriving is pushed onto `held`.
async fn deploy(
    options: &RunOptions,
    registry: &Arc<PluginRegistry>,
    factory: &Arc<InformerFactory>,
    client: Option<Arc<dyn ClusterClient>>,
    cancel: &CancellationToken,
    held: &mut Vec<Box<dyn std::any::Any + Send + Sync>>,
) -> Result<Vec<String>, AppError> {
    let mut failed = Vec::new();
    if let Some(plugins) = &options.plugins {
        failed.extend(registry.sync_dir(plugins).await?.iter().map(|e| Chain(e).to_string()));
        if options.watch_plugins {
            registry.watch_dir(plugins, cancel.clone())?;
        }
    }
    if let Some((oci, refresh)) = &options.plugin_refs {
        let client = Arc::new(OciClient::new(oci.clone()));
        let refs = Arc::new(OciPlugins::new(client, registry.clone(), refresh.clone())?);
        failed.extend(refs.refresh().await.iter().map(|e| Chain(e).to_string()));
        tokio::spawn(refs.run(cancel.clone()));
    }
    if let Some((oci, controller)) = &options.winkplugins {
        let client = client.ok_or(AppError::WinkPluginsNeedCluster)?;
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

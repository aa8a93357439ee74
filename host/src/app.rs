//! The `wink` subcommands as library functions, so the binary stays a thin layer of flag
//! parsing and tests can drive the same code.
//!
//! - [`run`]: load every plugin of a folder, start the informers they need from a source,
//!   deliver events until shut down (Ctrl-C), then drain calls in flight and report.
//! - [`check`]: do with one plugin what `run` does before its first event (manifest, component,
//!   world, memory, `init` with its config), without a source.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cluster::{ClusterClient, KubeClient};
use crate::crd::{self, ControllerOptions, WinkPluginController};
use crate::embedded::EmbeddedClient;
use crate::embedded::http::serve_api;
use crate::fswatch::WatchError;
use crate::informer::{InformerFactory, SourceProvider};
use crate::kube::versions;
use crate::oci::{OciClient, OciError, OciOptions, OciPlugins, RefreshOptions};
use crate::plugin::deploy::loader::{load_manifest, load_plugin_manifest};
use crate::plugin::deploy::manifest::format_bytes;
use crate::plugin::deploy::permissions::{Policy, PolicyError};
use crate::plugin::deploy::start::PluginStart;
use crate::plugin::imports::ClusterContext;
use crate::plugin::imports::cache::NoCache;
use crate::plugin::runtime::engine::DEFAULT_CACHE_MAX_SIZE;
use crate::plugin::{
    BudgetExceeded, CacheOutcome, CallOutcome, DEFAULT_MAX_INSTANCES, EngineConfig, EngineError, GuestPool, LoadError,
    LoadLimits, MemoryBudget, MetricsRegistry, PluginEngine, PluginRegistry, PoolLimits, RegistryError,
};
use crate::replay;
use crate::serve::{Endpoints, serve};
use crate::shard::{GroupOptions, LeaseOptions, Membership, ShardGroup};
pub use crate::source::SourceSpec;
use crate::source::{DirSource, DirSourceError, DirSourceOptions, KubeSource, KubeSourceError, load_config};

/// Errors of the subcommands.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The wasm engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The directory source failed.
    #[error(transparent)]
    DirSource(#[from] DirSourceError),
    /// No Kubernetes client could be configured.
    #[error(transparent)]
    KubeSource(#[from] KubeSourceError),
    /// The plugins folder could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A folder cannot be watched.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// A plugin failed its check.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A plugin's memory does not fit in the default budget.
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    /// The plugin's `init` refused its config, or trapped: `run` would not start it.
    #[error("{}: plugin {plugin} does not start with this config: {outcome}", path.display())]
    Init {
        /// The manifest file.
        path: PathBuf,
        /// The plugin.
        plugin: String,
        /// What `init` came to (its reason, or the trap).
        outcome: CallOutcome,
    },
    /// `--serve-api` serves the embedded cluster: it needs a `dir:` source.
    #[error("--serve-api serves the embedded cluster of a `dir:` source; with a Kubernetes source, use its API server")]
    ServeApiNeedsDir,
    /// The policy file cannot be used.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The metrics and health endpoint could not listen.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A plugin reference could not be pushed, pulled or followed.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// `WinkPlugin` objects cannot be listed from the source.
    #[error("cannot watch WinkPlugin objects")]
    WinkPluginSource(#[source] crate::informer::SourceError),
    /// The `WinkPlugin` informer could not be registered.
    #[error("cannot watch WinkPlugin objects")]
    Informer(#[source] crate::informer::InformerError),
    /// `--shard-group` coordinates through a Kubernetes API server.
    #[error("--shard-group shares plugins through Leases on a Kubernetes API server: use a `kube` source")]
    ShardNeedsKube,
    /// The recording cannot be written.
    #[error(transparent)]
    Record(#[from] replay::ReplayError),
}

/// Options of [`run`].
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The plugins folder: each subfolder with a `plugin.yaml` is a plugin.
    pub plugins: Option<PathBuf>,
    /// Plugins deployed from OCI references, and how they are followed.
    pub plugin_refs: Option<(OciOptions, RefreshOptions)>,
    /// Where objects come from.
    pub source: SourceSpec,
    /// With a `dir:` source, the namespace of namespaced objects that name none, as
    /// `kubectl apply -n` (objects naming another are refused); `None`: `default`.
    pub namespace: Option<String>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (`None`: nowhere).
    pub listen: Option<std::net::SocketAddr>,
    /// Where compiled components are cached (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Watch the plugins folder and deploy, replace and remove plugins as it changes.
    pub watch_plugins: bool,
    /// When plugins start: as they deploy, or on their first event.
    pub start_plugins: PluginStart,
    /// Log every plugin's metrics this often (`None`: only at shutdown).
    pub metrics_interval: Option<std::time::Duration>,
    /// Memory and disk bounds.
    pub bounds: Bounds,
    /// The operator's cap on plugins' manifests (`None`: manifests are trusted as written).
    pub policy: Option<PathBuf>,
    /// Where the embedded cluster is served over the Kubernetes API (`dir:` sources only).
    pub serve_api: Option<std::net::SocketAddr>,
    /// Take plugins from `WinkPlugin` objects too (`None`: not).
    pub winkplugins: Option<(OciOptions, ControllerOptions)>,
    /// Share the plugins with the other members of a shard group (`None`: run them all).
    pub shard: Option<LeaseOptions>,
    /// Record what the plugins' informers deliver into this file (`None`: no recording).
    pub record: Option<PathBuf>,
}

/// What the host lets its plugins take: memory, component size, compile cache size, live
/// instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The memory all plugins may reserve together, in bytes (`None`: half of the
    /// machine's or the cgroup's memory, [`MemoryBudget::from_machine`]).
    pub plugin_memory_budget: Option<u64>,
    /// What components the loader reads.
    pub load: LoadLimits,
    /// The size the compile cache folder is pruned to, in bytes.
    pub cache_max_size: u64,
    /// The plugin instances the instance pool has places for ([`PoolLimits::for_instances`]).
    pub max_instances: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            plugin_memory_budget: None,
            load: LoadLimits::default(),
            cache_max_size: DEFAULT_CACHE_MAX_SIZE,
            max_instances: DEFAULT_MAX_INSTANCES,
        }
    }
}

impl Bounds {
    fn memory_budget(&self) -> MemoryBudget {
        self.plugin_memory_budget.map_or_else(MemoryBudget::from_machine, MemoryBudget::new)
    }
}

/// The default folder for compiled components: `$XDG_CACHE_HOME/wink/components`, or
/// `~/.cache/wink/components`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wink").join("components"))
}

/// Where fetched OCI manifests and blobs are cached: `~/.cache/wink/oci` (or under
/// `$XDG_CACHE_HOME`), the temporary folder's `wink-oci` when there is no home.
pub fn default_oci_dir() -> PathBuf {
    default_cache_dir()
        .and_then(|components| components.parent().map(|wink| wink.join("oci")))
        .unwrap_or_else(|| std::env::temp_dir().join("wink-oci"))
}

/// Publishes the plugin in `dir` as `reference`; returns the manifest digest.
pub async fn push(dir: &Path, reference: &str, oci: OciOptions) -> Result<String, AppError> {
    Ok(OciClient::new(oci).push(dir, reference).await?)
}

/// Fetches the plugin `reference` names into `dir` (replacing it); returns the plugin's name
/// and the manifest digest.
pub async fn pull(reference: &str, dir: &Path, oci: OciOptions) -> Result<(String, String), AppError> {
    let pulled = OciClient::new(oci).pull(reference).await?;
    let (artifact, target) = (pulled.artifact, dir.to_owned());
    let name = artifact.name.clone();
    tokio::task::spawn_blocking(move || artifact.write_to(&target))
        .await
        .map_err(|e| OciError::Cache { dir: dir.to_owned(), source: std::io::Error::other(e) })?
        .map_err(OciError::from)?;
    Ok((name, pulled.digest))
}

fn engine(cache_dir: Option<PathBuf>, bounds: &Bounds) -> Result<PluginEngine, EngineError> {
    PluginEngine::new(EngineConfig {
        pool: Some(PoolLimits::for_instances(bounds.max_instances)),
        cache_dir,
        cache_max_size: bounds.cache_max_size,
        ..EngineConfig::default()
    })
}

/// Runs plugins until `shutdown` fires; returns one summary line per plugin.
pub async fn run(options: RunOptions, shutdown: CancellationToken) -> Result<Vec<String>, AppError> {
    let engine = engine(options.cache_dir.clone(), &options.bounds)?;
    let cancel = shutdown.child_token();
    if matches!(options.source, SourceSpec::Dir(_)) && options.shard.is_some() {
        return Err(AppError::ShardNeedsKube);
    }
    type Sources = (Arc<dyn SourceProvider>, ClusterContext, Arc<dyn ClusterClient>, Option<kube::Client>);
    let (provider, cluster, client, kube_client): Sources = match &options.source {
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
            (dir, ClusterContext::new(client.clone(), false), client, None)
        }
        SourceSpec::Kube { .. } if options.serve_api.is_some() => return Err(AppError::ServeApiNeedsDir),
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
            let raw =
                kube::Client::try_from(config.clone()).map_err(|e| AppError::KubeSource(KubeSourceError::Client(e)))?;
            let client = KubeClient::new(config).map_err(|e| AppError::KubeSource(KubeSourceError::Client(e)))?;
            tracing::info!(kubeconfig = ?kubeconfig, "watching a Kubernetes API server");
            let client: Arc<dyn ClusterClient> = Arc::new(client);
            (Arc::new(kube), ClusterContext::new(client.clone(), true), client, Some(raw))
        }
    };
    let cluster = match &options.policy {
        Some(path) => cluster.with_policy(Policy::load(path)?),
        None => cluster,
    };
    let cluster = cluster.with_shutdown(cancel.clone());
    let factory = Arc::new(InformerFactory::new(provider));
    let budget = options.bounds.memory_budget();
    tracing::info!(plugin_memory_budget = %format_bytes(budget.total()), "plugin memory budget");
    let metrics = MetricsRegistry::new();
    let endpoints = match options.listen {
        Some(addr) => {
            let mut prometheus = prometheus_client::registry::Registry::default();
            metrics.register(&mut prometheus);
            let endpoints = Arc::new(Endpoints::new(prometheus, factory.clone()));
            let (bound, _task) = serve(addr, endpoints.clone(), cancel.clone())
                .await
                .map_err(|source| AppError::Listen { addr, source })?;
            tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz");
            Some(endpoints)
        }
        None => None,
    };
    let registry = PluginRegistry::new(engine, factory.clone(), metrics, GuestPool::per_core())
        .with_memory_budget(budget)
        .with_load_limits(options.bounds.load)
        .with_start(options.start_plugins)
        .with_cluster(cluster);
    let (registry, group) = match (&options.shard, &kube_client) {
        (Some(lease), Some(client)) => {
            let group = Arc::new(ShardGroup::new(&lease.identity, GroupOptions { grace: lease.renew }));
            let mut membership = Membership::new(client.clone(), lease.clone());
            // A first look before the first deploy, so that plugins start where they belong.
            if let Err(err) = membership.renew().await {
                tracing::warn!(error = %crate::errors::Chain(&err), "cannot take this member's Lease yet");
            }
            match membership.observe().await {
                Ok(live) => {
                    group.update(live);
                }
                Err(err) => {
                    tracing::warn!(error = %crate::errors::Chain(&err), "cannot list the shard group's Leases yet")
                }
            }
            tracing::info!(group = %lease.group, member = %lease.identity, lease = %lease.lease_name(), "joined the shard group");
            if let Some(endpoints) = &endpoints {
                endpoints.register(|prometheus| group.register(prometheus));
            }
            (Arc::new(registry.with_ownership(group.clone())), Some((group, membership)))
        }
        _ => (Arc::new(registry), None),
    };
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
    // Held until shutdown: the WinkPlugin informer runs while its registration lives.
    let _winkplugins = match &options.winkplugins {
        Some((oci, controller)) => {
            let controller = WinkPluginController::new(
                registry.clone(),
                Arc::new(OciClient::new(oci.clone())),
                client,
                controller.clone(),
            );
            let informer = factory.informer_for(&crd::resource()).map_err(AppError::WinkPluginSource)?;
            let registration = informer.add_event_handler(Arc::new(controller)).map_err(AppError::Informer)?;
            tracing::info!("taking plugins from WinkPlugin objects too");
            Some(registration)
        }
        None => None,
    };
    let group_task =
        group.map(|(group, membership)| tokio::spawn(group.run(membership, registry.clone(), cancel.clone())));
    let deployed = registry.status().await;
    tracing::info!(deployed = deployed.len(), failed, plugins = ?options.plugins, "plugins loaded");
    // Held until shutdown: the recorders listen while their registrations live.
    let _recording = match &options.record {
        Some(path) => {
            let keys: Vec<_> = factory.informers().into_iter().map(|(key, _)| key).collect();
            let names = keys.iter().map(|k| format!("{}/{}", k.api_version, k.kind)).collect();
            let sink = replay::open_sink(path, "wink run", names, None, CancellationToken::new())?;
            tracing::info!(file = %path.display(), resources = keys.len(), "recording what the informers deliver");
            Some(replay::record_into(&factory, &keys, &sink)?)
        }
        None => None,
    };
    factory.start();
    if let Some(endpoints) = &endpoints {
        endpoints.plugins_loaded();
    }
    let synced = factory.wait_for_cache_sync(&cancel).await;
    if !cancel.is_cancelled() {
        tracing::info!(informers = synced.len(), "caches synced");
    }
    match options.metrics_interval {
        Some(period) if !period.is_zero() => {
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
        _ => cancel.cancelled().await,
    }
    tracing::info!("shutting down: finishing calls in flight");
    if let Some(task) = group_task {
        let _ = task.await;
    }
    factory.shutdown().await;
    Ok(registry.summaries().await)
}

/// What [`check`] found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Human-readable lines describing the plugin.
    pub lines: Vec<String>,
    /// What may not work although `run` would start the plugin: a watched or granted kind
    /// that is not a built-in Kubernetes kind ([`crate::kube::versions`]).
    pub warnings: Vec<String>,
}

/// Does with one plugin (a folder or a manifest path) what [`run`] would with `bounds` before
/// its first event: parses the manifest (each apiVersion `v1` or `group/version`), checks its
/// memory against the budget (as if it were the only plugin) and the instance pool, checks
/// the component's size and its initial memory against `limits.memory`, compiles it, checks
/// it implements the plugin world with no imports beyond wink's, then starts an instance and
/// calls `init` with the manifest's config (a refusal is an error carrying the guest's
/// reason). The cache is empty during `init`. A kind that is not built into Kubernetes is a
/// warning.
pub fn check(path: &Path, cache_dir: Option<PathBuf>, bounds: &Bounds) -> Result<CheckReport, AppError> {
    let engine = engine(cache_dir, bounds)?;
    let manifest = load_plugin_manifest(path).map_err(LoadError::from)?;
    let budget = bounds.memory_budget();
    budget.check(&manifest)?;
    let plugin = load_manifest(manifest, &engine, &bounds.load)?;
    let m = &plugin.manifest;
    let initial = plugin.initial_memory;
    let mut lines = vec![
        format!("plugin {} is valid", plugin.name()),
        format!(
            "  component: {} ({}, implements wink:plugin/handler-plugin@{})",
            plugin.component_path.display(),
            match plugin.cache {
                CacheOutcome::Hit => "compiled earlier, from the cache",
                CacheOutcome::Miss => "compiled now, cached",
                CacheOutcome::Disabled => "compiled now",
            },
            plugin.pre.version().as_str()
        ),
        format!("  limits: memory {} bytes, {:?} per call", m.limits.memory.bytes(), m.limits.call_timeout),
        format!(
            "  memory: {} before the first call ({} of memory minimums, {} of data segments); reserves {} of the plugin memory budget of {}",
            format_bytes(initial.total()),
            format_bytes(initial.memories),
            format_bytes(initial.data),
            format_bytes(crate::plugin::runtime::budget::reservation_of(m)),
            format_bytes(budget.total())
        ),
    ];
    if !plugin.pre.refused_wasi().is_empty() {
        lines.push(format!(
            "  WASI: clocks and randomness given; refused (calls trap): {}",
            plugin.pre.refused_wasi().join(", ")
        ));
    }
    if m.permissions.is_empty() {
        lines.push("  cluster: no permissions (every request is refused)".to_owned());
    }
    for rule in &m.permissions {
        let namespaces = rule.namespaces.as_ref().map_or("all namespaces".to_owned(), |ns| ns.join(", "));
        lines.push(format!(
            "  may {} {} (groups {}) in {namespaces}",
            rule.verbs.join(", "),
            rule.resources.join(", "),
            rule.api_groups.iter().map(|g| if g.is_empty() { "core" } else { g }).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(account) = &m.service_account {
        lines.push(format!("  requests as service account {account} on a real cluster"));
    }
    for r in &m.resources {
        let namespaces = r.namespaces.as_ref().map_or("all namespaces".to_owned(), |ns| ns.join(", "));
        let selector = r.label_selector.as_ref().map_or(String::new(), |s| format!(", labels {s}"));
        let resync =
            r.resync().map_or("no resync".to_owned(), |d| format!("resync every {}", humantime::format_duration(d)));
        lines.push(format!("  watches {}/{} in {namespaces}{selector}, {resync}", r.api_version, r.kind));
    }
    for g in &m.cache {
        lines.push(format!("  may read {}/{} from the cache", g.api_version, g.kind));
    }
    let kinds = m.resources.iter().map(|r| ("resources", &r.api_version, &r.kind));
    let kinds = kinds.chain(m.cache.iter().map(|g| ("cache", &g.api_version, &g.kind)));
    let warnings = kinds
        .filter_map(|(at, api_version, kind)| {
            versions::unknown_kind(api_version, kind).map(|why| format!("{}: {at}: {why}", m.path().display()))
        })
        .collect();
    // As `run` starts it: an instance, then `init` with the config.
    let plugin_error =
        |outcome| AppError::Init { path: m.path().to_owned(), plugin: plugin.name().to_owned(), outcome };
    plugin.sandbox(&engine, Arc::new(NoCache), None).instantiate().map_err(plugin_error)?;
    lines.push(format!(
        "  init: accepted its config ({})",
        match &m.config {
            Some(_) => "from the manifest",
            None => "none given: null",
        }
    ));
    Ok(CheckReport { lines, warnings })
}

//! The `wink` subcommands as library functions, so the binary stays a thin layer of flag
//! parsing and tests can drive the same code.
//!
//! - [`run`]: build a [`Host`] — load every plugin of a folder, the informers they need from
//!   a source — and deliver events until shut down (Ctrl-C), then drain calls in flight and
//!   report.
//! - [`check`]: do with one plugin what `run` does before its first event (manifest, component,
//!   world, memory, `init` with its config), without a source.
//! - [`push`], [`pull`]: plugins as OCI artifacts.

mod check;
mod host;

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

pub use check::check;
pub use host::{CustomSource, Host, HostBuilder};

use crate::crd::ControllerOptions;
use crate::fswatch::WatchError;
use crate::oci::{OciClient, OciError, OciOptions, RefreshOptions};
use crate::plugin::delivery::runner::RecyclePolicy;
use crate::plugin::deploy::start::PluginStart;
use crate::plugin::manifest::permissions::PolicyError;
use crate::plugin::runtime::engine::DEFAULT_CACHE_MAX_SIZE;
use crate::plugin::{
    BudgetExceeded, CallOutcome, DEFAULT_MAX_INSTANCES, EngineConfig, EngineError, LoadError, LoadLimits, MemoryBudget,
    PluginEngine, PoolLimits, RegistryError,
};
use crate::replay;
use crate::shard::LeaseOptions;
use crate::source::OpenError;
pub use crate::source::SourceSpec;

/// Errors of the subcommands.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The wasm engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The source could not be opened or read: its folder, or the API server's
    /// configuration and client.
    #[error(transparent)]
    Source(#[from] OpenError),
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
    /// WinkPlugin objects were asked for from a source without a cluster client.
    #[error("plugins from WinkPlugin objects need a cluster to read them from")]
    WinkPluginsNeedCluster,
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
    /// When plugins start: on their first event, or as they deploy.
    pub start_plugins: PluginStart,
    /// When idle plugin instances are dropped (see [`RecyclePolicy`]).
    pub recycle: RecyclePolicy,
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

impl RunOptions {
    /// Options for a host over `source` and nothing else: no plugins folder (deploy through
    /// [`Host::registry`]), no endpoints, no compile cache, the default start, recycling and
    /// bounds. Set the other fields as `wink run`'s flags would.
    pub fn new(source: SourceSpec) -> Self {
        Self {
            plugins: None,
            plugin_refs: None,
            source,
            namespace: None,
            listen: None,
            cache_dir: None,
            watch_plugins: false,
            start_plugins: PluginStart::default(),
            recycle: RecyclePolicy::default(),
            metrics_interval: None,
            bounds: Bounds::default(),
            policy: None,
            serve_api: None,
            winkplugins: None,
            shard: None,
            record: None,
        }
    }
}

impl Default for RunOptions {
    /// Options for a host over the default Kubernetes API server (the default kubeconfig,
    /// else the in-cluster service account, as kube-rs's `Client::try_default`); see
    /// [`RunOptions::new`].
    fn default() -> Self {
        Self::new(SourceSpec::default())
    }
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
    Host::build(options, shutdown).await?.run().await
}

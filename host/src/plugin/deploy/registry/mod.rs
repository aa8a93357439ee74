//! The deployed plugins of a running host: deploy, replace and remove without restarting.
//!
//! Each plugin gets one listener per watched resource on the shared informer of that
//! resource (created on first use by the [`InformerFactory`]), with the plugin's own resync
//! period and its namespace and label filters applied before anything is queued. All of a
//! version's listeners call that version's [`PluginHandler`].
//!
//! - **Deploy**: load (manifest, compile through the cache, check the world: the `load`
//!   module), then register the listeners; the plugin receives the current objects as
//!   initial-list adds, then live events, its instance starting (`init`) before the first
//!   ([`PluginStart::OnFirstEvent`], the default: a plugin that cannot start fails with its
//!   first event, under the failure policy). With [`PluginStart::OnDeploy`] the instance
//!   starts before the listeners are registered, and a plugin that cannot start is refused.
//!   A replacement always starts first, whatever the start (below).
//! - **Replace** (the component or the manifest changed): the new version is loaded and
//!   started first — if that fails, the old version keeps running, untouched. Then the new
//!   version is registered as a new handler, as client-go's `AddEventHandler` registers one:
//!   the old version's listeners are removed (events still queued for it are dropped; a call
//!   in flight finishes on the old instance, which then goes), and the new version's
//!   listeners receive the current state of every watched resource — each cached object
//!   matching its filters once, as an add with `initial-list = true` — then live events. So
//!   a replaced plugin rebuilds its in-memory state exactly as on its first deploy: no object
//!   is missing from the replay, none is delivered twice, and a delete or update that was
//!   still queued for the old version is covered by the replay (the object is absent, or
//!   present in its newest state). The informers stay up throughout: the new listeners'
//!   leases are taken before the old ones are released.
//! - **Remove**: the listeners are unregistered; queued events are dropped.
//!
//! - **Memory**: started as they deploy, plugins reserve their memory from the host's
//!   [`MemoryBudget`] as they are loaded, in the folder's order; one that does not fit once
//!   the plugins before it are registered (a plugin that fails to start gives its memory
//!   back) is refused, and its reservation is released when it is removed or replaced.
//!   Started on their first event, a plugin must fit in the whole budget, and each of its
//!   instances reserves its memory while it lives (see [`MemoryBudget::reserve_instance`]). After plugins are deployed, replaced or
//!   removed, the compile cache is pruned, keeping the deployed plugins' components.
//!
//! A plugin holds an [`InformerLease`] on each informer it listens to or may read from: the
//! informer of a resource no plugin needs any more stops (its watch ends, its cache is
//! dropped), and starts afresh, with a new list, when a plugin needs it again.
//!
//! [`PluginRegistry::sync_dir`] reconciles with a plugins folder (each subfolder holding a
//! `plugin.yaml` is a plugin) and [`PluginRegistry::watch_dir`] does so on every change; see
//! the `scan` module (rescans that read no unchanged file, and failed deploys retried
//! with backoff).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::fingerprint::FileDigests;
use super::start::PluginStart;
use crate::informer::{
    EventHandler, InformerError, InformerFactory, InformerLease, ListenerOptions, Object, Registration, ResourceKey,
    SourceError, Store,
};
use crate::plugin::PluginEngine;
use crate::plugin::contract::outcome::CallOutcome;
use crate::plugin::delivery::placement::Placement;
use crate::plugin::delivery::runner::{GuestPool, PluginHandler, RecyclePolicy, Recycler};
use crate::plugin::imports::{CacheResolver, ClusterContext};
use crate::plugin::manifest::WatchedResource;
use crate::plugin::metrics::MetricsRegistry;
use crate::plugin::reconcile::{Controller, KeyMapper};
use crate::plugin::runtime::budget::{BudgetExceeded, MemoryBudget, MemoryReservation};
use crate::plugin::runtime::loader::{LoadError, LoadLimits};
use crate::workqueue::WorkQueue;

mod folder_sync;
mod load;
mod ownership;

use load::{Read, Started, Starting};
pub use ownership::Ownership;

pub(crate) use folder_sync::DEPLOY_RETRY;
pub use folder_sync::ScanStats;

/// Why a plugin could not be deployed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Loading failed (manifest, component, world).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The plugin's memory does not fit in the host's budget.
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    /// The plugin's instance could not start (`init` refused, or it trapped).
    #[error("plugin {name} failed to start")]
    Start {
        /// The plugin.
        name: String,
        /// What happened (`init` refused, a trap, a deadline).
        #[source]
        outcome: CallOutcome,
    },
    /// The plugin asks for what the operator's policy refuses (a service account).
    #[error("{reason}")]
    Refused {
        /// The plugin.
        name: String,
        /// Why.
        reason: String,
    },
    /// Another folder already deploys a plugin with this name.
    #[error("plugin name {name} in {dir} is already used by {other}")]
    DuplicateName {
        /// The name.
        name: String,
        /// The folder that asked.
        dir: PathBuf,
        /// The folder that has it.
        other: PathBuf,
    },
    /// A watched resource has no source.
    #[error("plugin {name}: cannot watch {resource}")]
    Source {
        /// The plugin.
        name: String,
        /// The resource.
        resource: String,
        /// The source's error.
        #[source]
        source: SourceError,
    },
    /// The plugin's handler could not be registered with a resource's informer.
    #[error("plugin {name}: cannot register with the informer of {resource}")]
    Register {
        /// The plugin.
        name: String,
        /// The resource.
        resource: String,
        /// The informer's error.
        #[source]
        source: InformerError,
    },
    /// The folder cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Loading the plugin panicked (a bug in the loader or the compiler on this component).
    #[error("loading the plugin in {} panicked: {message}", dir.display())]
    LoadPanicked {
        /// The plugin's folder.
        dir: PathBuf,
        /// The panic's message.
        message: String,
    },
}

/// Cache reads served by the factory's informers (only those that exist).
pub(crate) struct FactoryCache(pub(crate) Arc<InformerFactory>);

impl CacheResolver for FactoryCache {
    fn store(&self, api_version: &str, kind: &str) -> Option<Store> {
        self.0.existing(&ResourceKey::new(api_version, kind)).map(|i| i.store())
    }
}

struct Listening {
    lease: InformerLease,
    registration: Registration,
}

impl Listening {
    /// Unregisters the listener (its queued events are dropped); dropping `self` then
    /// releases the informer.
    fn unregister(&self) {
        let _ = self.lease.informer().remove_event_handler(&self.registration);
    }

    /// Unregisters the listener and releases the informer.
    fn stop(self) {
        self.unregister();
    }
}

/// A plugin folder on its way to being deployed (see [`PluginRegistry::begin_deploy`]).
enum Deploying {
    /// Run by another member of the shard group (the plugin's name): nothing to deploy here.
    Elsewhere(String),
    /// Loaded here, and starting.
    Here(Box<Arriving>),
}

/// A plugin loaded on this member and starting, for [`PluginRegistry::finish_deploy`].
struct Arriving {
    /// The fingerprint its files had before they were loaded.
    fingerprint: Option<String>,
    /// A shardable plugin's slice.
    shard: Option<Slice>,
    starting: Starting,
}

/// How long a replacement waits for the old version's call in progress to end.
const REPLACE_WAIT: Duration = Duration::from_secs(1);

struct Deployed {
    dir: PathBuf,
    fingerprint: Option<String>,
    /// The running version.
    handler: Arc<PluginHandler>,
    listening: Vec<Listening>,
    /// The informers the plugin may read from (cache grants).
    grants: Vec<InformerLease>,
    /// The component's digest: its compile cache entry is in use.
    digest: String,
    /// A shardable plugin's slice: the assignment it was deployed with.
    shard: Option<Slice>,
    /// A reconciler's workers (stopped when it is dropped).
    controller: Option<Controller>,
    /// Held while the plugin is deployed.
    _memory: Option<MemoryReservation>,
}

/// A summary of one deployed plugin.
#[derive(Clone, Debug)]
pub struct PluginStatus {
    /// The plugin's name.
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Whether it is quarantined.
    pub quarantined: bool,
    /// Whether every listener has received its initial objects.
    pub synced: bool,
    /// Pending entries over all its listeners.
    pub queued: usize,
}

/// The plugins deployed on one host.
pub struct PluginRegistry {
    engine: PluginEngine,
    factory: Arc<InformerFactory>,
    metrics: MetricsRegistry,
    pool: GuestPool,
    plugins: tokio::sync::Mutex<BTreeMap<String, Deployed>>,
    /// Plugin file digests by (size, modification time), for rescans.
    digests: Arc<parking_lot::Mutex<FileDigests>>,
    /// Folder scans and failed deploys waiting for their retry.
    scans: folder_sync::ScanState,
    memory_budget: MemoryBudget,
    load_limits: LoadLimits,
    cluster: Option<ClusterContext>,
    /// Which plugins run here when a shard group shares them (`None`: all).
    ownership: Option<Arc<dyn Ownership>>,
    /// Plugins found but run by another member.
    parked: parking_lot::Mutex<BTreeMap<String, ownership::Parked>>,
    start: PluginStart,
    /// Where plugins' starts run, from how the last ones went (see
    /// [`PluginHandler::warm_up_placed`](crate::plugin::delivery::runner::PluginHandler::warm_up_placed)).
    starts: Arc<Placement>,
    /// Recycles the plugins' idle instances (see [`Recycler`]).
    recycler: Recycler,
}

impl std::fmt::Debug for PluginRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginRegistry").finish_non_exhaustive()
    }
}

/// A shardable plugin's slice: the assignment it delivers under, and how it splits.
type Slice = (super::assignment::Assignment, crate::plugin::manifest::ShardBy);

fn listener_options(
    plugin: &str,
    spec: &WatchedResource,
    metrics: crate::plugin::PluginMetrics,
    shard: Option<&Slice>,
) -> ListenerOptions {
    let mut options = ListenerOptions::new(plugin, spec.resync().unwrap_or_default());
    options.observer = Some(Arc::new(metrics));
    options.namespaces = spec.namespaces.as_ref().map(|ns| ns.iter().cloned().collect());
    let (selector, shard, plugin) = (spec.label_selector.clone(), shard.cloned(), plugin.to_owned());
    if selector.is_some() || shard.is_some() {
        options.filter = Some(Arc::new(move |obj: &Object| {
            selector.as_ref().is_none_or(|s| s.matches(&obj.labels()))
                && shard.as_ref().is_none_or(|(assignment, by)| assignment.owns_object(&plugin, *by, obj))
        }));
    }
    options
}

impl PluginRegistry {
    /// A registry deploying onto `factory`'s informers, with an unlimited memory budget and
    /// the default [`LoadLimits`].
    pub fn new(engine: PluginEngine, factory: Arc<InformerFactory>, metrics: MetricsRegistry, pool: GuestPool) -> Self {
        Self {
            engine,
            factory,
            metrics,
            pool,
            plugins: tokio::sync::Mutex::default(),
            digests: Arc::default(),
            scans: folder_sync::ScanState::new(DEPLOY_RETRY),
            memory_budget: MemoryBudget::unlimited(),
            load_limits: LoadLimits::default(),
            cluster: None,
            ownership: None,
            parked: parking_lot::Mutex::default(),
            start: PluginStart::default(),
            starts: Arc::default(),
            recycler: Recycler::default(),
        }
    }

    /// Starts plugins as `start` says (default: on their first event).
    pub fn with_start(mut self, start: PluginStart) -> Self {
        self.start = start;
        self
    }

    /// Recycles idle instances as `policy` says (default: after five minutes without a call,
    /// and the least recently used when the instance pool is full). Must be
    /// called before any plugin is deployed.
    pub fn with_recycling(mut self, policy: RecyclePolicy) -> Self {
        self.recycler = Recycler::new(policy);
        self
    }

    /// Sends plugins' `cluster` requests through `cluster` (without it, every request is
    /// `unavailable`).
    pub fn with_cluster(mut self, cluster: ClusterContext) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// Deploys only the plugins whose memory fits in `budget` (`wink run` uses
    /// [`MemoryBudget::from_machine`] by default).
    pub fn with_memory_budget(mut self, budget: MemoryBudget) -> Self {
        self.memory_budget = budget;
        self
    }

    /// Loads components within `limits`.
    pub fn with_load_limits(mut self, limits: LoadLimits) -> Self {
        self.load_limits = limits;
        self
    }

    /// The memory budget plugins reserve from.
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.memory_budget
    }

    /// Prunes the compile cache, keeping the components of the deployed plugins.
    async fn prune_cache(&self) {
        let in_use: HashSet<String> = self.plugins.lock().await.values().map(|d| d.digest.clone()).collect();
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.prune_cache(&in_use)).await;
    }

    /// The metrics of every plugin.
    pub fn metrics(&self) -> &MetricsRegistry {
        &self.metrics
    }

    /// The informer factory.
    pub fn factory(&self) -> &Arc<InformerFactory> {
        &self.factory
    }

    /// The lease on the informer of `spec`'s resource (created on first use).
    fn lease(&self, name: &str, spec: &WatchedResource) -> Result<InformerLease, RegistryError> {
        let key = ResourceKey::new(&spec.api_version, &spec.kind);
        self.factory.acquire(&key).map_err(|source| RegistryError::Source {
            name: name.to_owned(),
            resource: key.to_string(),
            source,
        })
    }

    /// What listens on each of the manifest's resources: the plugin's handler, or for a
    /// reconciler the [`KeyMapper`] of the resource's role, adding keys to its queue.
    fn listeners(
        manifest: &crate::plugin::Manifest,
        handler: &Arc<PluginHandler>,
        queue: Option<&WorkQueue<String>>,
    ) -> Vec<Arc<dyn EventHandler>> {
        match (&manifest.reconcile, queue) {
            (Some(reconcile), Some(queue)) => reconcile
                .roles()
                .into_iter()
                .map(|role| {
                    Arc::new(KeyMapper::new(role, queue.clone()).with_plugin(handler.clone())) as Arc<dyn EventHandler>
                })
                .collect(),
            _ => manifest.resources.iter().map(|_| handler.clone() as Arc<dyn EventHandler>).collect(),
        }
    }

    /// Registers `handler` as a new listener on the leased informer: once the informer runs,
    /// it receives the cached objects matching `spec` as initial-list adds, then live events.
    fn listen(
        name: &str,
        spec: &WatchedResource,
        lease: InformerLease,
        handler: &Arc<dyn EventHandler>,
        metrics: &crate::plugin::PluginMetrics,
        shard: Option<&Slice>,
    ) -> Result<Listening, RegistryError> {
        let options = listener_options(name, spec, metrics.clone(), shard);
        let registration =
            lease.informer().add_event_handler_with_options(handler.clone(), options).map_err(|source| {
                RegistryError::Register {
                    name: name.to_owned(),
                    resource: format!("{}/{}", spec.api_version, spec.kind),
                    source,
                }
            })?;
        Ok(Listening { lease, registration })
    }

    /// Registers `handler` for every resource of `specs`, each lease taken from `leases`;
    /// on failure, the listeners registered so far are stopped.
    fn listen_all(
        name: &str,
        specs: &[WatchedResource],
        leases: Vec<InformerLease>,
        handlers: &[Arc<dyn EventHandler>],
        metrics: &crate::plugin::PluginMetrics,
        shard: Option<&Slice>,
    ) -> Result<Vec<Listening>, RegistryError> {
        let mut listening = Vec::new();
        for ((spec, lease), handler) in specs.iter().zip(leases).zip(handlers) {
            match Self::listen(name, spec, lease, handler, metrics, shard) {
                Ok(l) => listening.push(l),
                Err(err) => {
                    listening.into_iter().for_each(Listening::stop);
                    return Err(err);
                }
            }
        }
        Ok(listening)
    }

    /// Deploys the plugin in `dir`, or replaces the deployed version if it changed, and
    /// starts the informers it needs. Returns the plugin's name.
    pub async fn deploy(&self, dir: &Path) -> Result<String, RegistryError> {
        let name = self.deploy_unstarted(dir).await?;
        self.factory.start();
        self.prune_cache().await;
        Ok(name)
    }

    /// [`PluginRegistry::deploy`] without starting informers, so that several plugins
    /// registered before the start all take part in resolving the resync check period (a
    /// handler added after start cannot lower it).
    async fn deploy_unstarted(&self, dir: &Path) -> Result<String, RegistryError> {
        match self.begin_deploy(dir, None).await? {
            Deploying::Elsewhere(name) => Ok(name),
            Deploying::Here(arriving) => self.finish_deploy(dir, *arriving).await,
        }
    }

    /// The first half of deploying the plugin in `dir`: where it runs, then (here) its files
    /// (read now unless `read` has them, once the plugin is known to run on this member),
    /// its memory, grants and handler, and its start, left running.
    async fn begin_deploy(&self, dir: &Path, read: Option<Read>) -> Result<Deploying, RegistryError> {
        let shard = match self.placement(dir) {
            ownership::Placement::Here(shard) => shard,
            ownership::Placement::Elsewhere(name) => {
                if self.remove(&name).await {
                    tracing::info!(plugin = %name, "plugin handed over: another member runs it now");
                }
                tracing::debug!(plugin = %name, "plugin run by another member of the shard group");
                return Ok(Deploying::Elsewhere(name));
            }
        };
        let Read { fingerprint, plugin } = match read {
            Some(read) => read,
            None => self.finish_read(dir, self.read_plugin(dir)).await,
        };
        let loaded = self.load(plugin)?;
        // A replacement starts before it replaces the running version, whatever the start:
        // one that cannot start then leaves the old version running.
        let replacing = self.plugins.lock().await.contains_key(loaded.loaded.name());
        let starting = self.starting(loaded, replacing);
        Ok(Deploying::Here(Box::new(Arriving { fingerprint, shard, starting })))
    }

    /// The second half: once the plugin started, it listens, replacing the version deployed
    /// from the same folder, if any.
    async fn finish_deploy(&self, dir: &Path, arriving: Arriving) -> Result<String, RegistryError> {
        let Arriving { fingerprint, shard, starting } = arriving;
        let Started { loaded, handler, reconciler, grants, memory } = starting.started().await?;
        let name = loaded.name().to_owned();
        let mut plugins = self.plugins.lock().await;
        if let Some(existing) = plugins.get(&name)
            && existing.dir != dir
        {
            return Err(RegistryError::DuplicateName { name, dir: dir.to_owned(), other: existing.dir.clone() });
        }
        let specs = loaded.manifest.resources.clone();
        // Taking the leases is what can fail (a resource without a source): done first, so
        // that a failure leaves a running old version untouched.
        let leases = specs.iter().map(|spec| self.lease(&name, spec)).collect::<Result<Vec<_>, _>>()?;
        let (dir, digest) = (dir.to_owned(), loaded.digest.clone());
        let old = plugins.remove(&name);
        // Logged before the new version listens: a running informer delivers to a new
        // listener at once, and its first calls (and what they log) come after the line that
        // says it was deployed or replaced the old one.
        match &old {
            Some(old) => {
                // A replacement is a new registration (see the module docs): the old version's
                // listeners go first, dropping what is queued for it, so no event reaches both
                // versions; the new listeners then replay the cache. The old leases are
                // released only after the new ones hold the informers.
                old.listening.iter().for_each(Listening::unregister);
                if let Some(controller) = &old.controller {
                    controller.stop();
                }
                // The old version's call in progress, if any, ends before the new version
                // starts (bounded, so that a stalled call does not hold up the registry).
                if !old.handler.wait_idle(REPLACE_WAIT).await {
                    tracing::warn!(plugin = %name, "the replaced version's call still runs; the new version starts beside it");
                }
                tracing::info!(plugin = %name, dir = %dir.display(), "plugin replaced");
            }
            None => tracing::info!(plugin = %name, dir = %dir.display(),
                resources = ?specs.iter().map(|s| format!("{}/{}", s.api_version, s.kind)).collect::<Vec<_>>(),
                "plugin deployed"),
        }
        let listeners = Self::listeners(&loaded.manifest, &handler, reconciler.as_ref().map(|(queue, _)| queue));
        let listening = match Self::listen_all(&name, &specs, leases, &listeners, handler.metrics(), shard.as_ref()) {
            Ok(listening) => listening,
            Err(err) => {
                // Only a stopped informer refuses a handler: the host is shutting down.
                tracing::warn!(plugin = %name, error = %err, "plugin removed: it could not listen");
                self.metrics.remove(&name);
                return Err(err);
            }
        };
        let controller = reconciler.map(|(queue, others)| {
            self.metrics.work_queues().track(&name, queue.clone());
            Controller::start(&name, queue, std::iter::once(handler.clone()).chain(others).collect())
        });
        plugins.insert(
            name.clone(),
            Deployed { dir, fingerprint, handler, listening, grants, digest, shard, controller, _memory: memory },
        );
        // An old version's listeners, grants and memory reservation are released here.
        drop(old);
        Ok(name)
    }

    /// Removes a plugin: its listeners are unregistered and their queues dropped; the
    /// compile cache is pruned.
    pub async fn remove(&self, name: &str) -> bool {
        let removed = self.remove_unpruned(name).await;
        if removed {
            self.prune_cache().await;
        }
        removed
    }

    /// [`PluginRegistry::remove`] without pruning the compile cache, for a folder scan that
    /// prunes once at its end.
    async fn remove_unpruned(&self, name: &str) -> bool {
        let Some(deployed) = self.plugins.lock().await.remove(name) else { return false };
        deployed.listening.into_iter().for_each(Listening::stop);
        // Dropping the grants (and the listeners' leases) stops informers no one needs.
        drop(deployed.grants);
        tracing::info!(plugin = %name, summary = %self.metrics.plugin(name).summary(), "plugin removed");
        self.metrics.remove(name);
        true
    }

    /// The deployed plugins.
    pub async fn status(&self) -> Vec<PluginStatus> {
        self.plugins
            .lock()
            .await
            .iter()
            .map(|(name, d)| PluginStatus {
                name: name.clone(),
                dir: d.dir.clone(),
                quarantined: d.handler.is_quarantined(),
                synced: d.listening.iter().all(|l| l.registration.has_synced()),
                queued: d.listening.iter().map(|l| l.registration.listener().queue_len()).sum(),
            })
            .collect()
    }

    /// Updates the gauges read from the listeners (queue depth of each plugin).
    pub async fn refresh_metrics(&self) {
        for (name, deployed) in self.plugins.lock().await.iter() {
            let queued = deployed.listening.iter().map(|l| l.registration.listener().queue_len()).sum();
            self.metrics.plugin(name).set_queue_depth(queued);
        }
    }

    /// One summary line per deployed plugin (calls, errors, traps, latency, queue depth).
    pub async fn summaries(&self) -> Vec<String> {
        self.refresh_metrics().await;
        let names: Vec<String> = self.plugins.lock().await.keys().cloned().collect();
        names.iter().map(|n| self.metrics.plugin(n).summary()).collect()
    }
}

#[cfg(test)]
mod tests;

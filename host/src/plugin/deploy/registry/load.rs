//! Loading a plugin for the registry: its files read on a blocking thread (manifest,
//! component, metric series), then, in the order of the scan, its memory reservation, cache
//! grants, cluster link and handler, and its start (`init`, on a guest thread) unless plugins
//! start on their first event. Several plugins' starts may run at once; the registry waits
//! for each before it registers it.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use futures::FutureExt;
use futures::future::MaybeDone;

use super::{FactoryCache, FileDigests, PluginRegistry, RegistryError};
use crate::informer::crash::panic_message;
use crate::informer::{InformerLease, ResourceKey};
use crate::plugin::contract::outcome::{CallOutcome, TrapKind};
use crate::plugin::delivery::runner::PluginHandler;
use crate::plugin::deploy::fingerprint::Fingerprinted;
use crate::plugin::deploy::start::PluginStart;
use crate::plugin::imports::CacheResolver;
use crate::plugin::metrics::PluginMetrics;
use crate::plugin::runtime::budget::MemoryReservation;
use crate::plugin::runtime::loader::{LoadError, LoadedPlugin, load_manifest, load_plugin_manifest};
use crate::workqueue::WorkQueue;

/// A loaded plugin, not yet listening: started, or being started (see
/// [`PluginRegistry::starting`]).
pub(super) struct Started {
    pub(super) loaded: LoadedPlugin,
    pub(super) handler: Arc<PluginHandler>,
    /// A reconciler's work queue and its other workers' handlers (`handler` is the first's).
    pub(super) reconciler: Option<(WorkQueue<String>, Vec<Arc<PluginHandler>>)>,
    pub(super) grants: Vec<InformerLease>,
    /// Its memory, reserved at deploy when plugins start as they deploy (else each instance
    /// reserves its own, see [`MemoryBudget::reserve_instance`]).
    pub(super) memory: Option<MemoryReservation>,
}

/// Plugins' files being read on a blocking thread (see [`PluginRegistry::read_plugins`]).
pub(super) struct Reading {
    /// Their folders, in the order they are read.
    dirs: Vec<PathBuf>,
    /// Each one's read, or the message of the panic that ended it.
    handle: tokio::task::JoinHandle<Vec<Result<Read, String>>>,
}

/// A plugin's files as read.
pub(super) struct Read {
    /// The fingerprint its files had before they were loaded (see [`FileDigests`]).
    pub(super) fingerprint: Option<String>,
    /// What loading them made.
    pub(super) plugin: Result<ReadPlugin, RegistryError>,
}

/// A plugin loaded from its files.
pub(super) struct ReadPlugin {
    /// Its manifest and component.
    loaded: LoadedPlugin,
    /// Its metric series.
    metrics: PluginMetrics,
}

impl PluginRegistry {
    /// Starts reading `dir`'s plugin on a blocking thread (see
    /// [`read_plugins`](Self::read_plugins)).
    pub(super) fn read_plugin(&self, dir: &Path) -> Reading {
        self.read_plugins(vec![dir.to_owned()])
    }

    /// Starts reading the plugins of `dirs`, in turn, on one blocking thread — fingerprint,
    /// manifest, component (compiling a large one takes seconds: kept off the async threads)
    /// — for [`load`](Self::load), which reserves their memory. The manifest read to
    /// fingerprint a plugin is the one loaded, parsed once. A plugin that does not fit in the
    /// memory left is refused before its component is read; several reads may run at once
    /// (see [`sync_dir`](Self::sync_dir)), each reservation is still made in turn. Reading
    /// several plugins in one go wakes a blocking thread, and then the caller, once for them
    /// all rather than once each.
    pub(super) fn read_plugins(&self, dirs: Vec<PathBuf>) -> Reading {
        self.scans.count_attempts(dirs.len());
        let (engine, budget, limits) = (self.engine.clone(), self.memory_budget.clone(), self.load_limits);
        let start = self.start;
        let (metrics, digests) = (self.metrics.clone(), self.digests.clone());
        let read = move |path: &Path| {
            let Fingerprinted { fingerprint, manifest } = FileDigests::fingerprint_shared(&digests, path);
            let plugin = (|| {
                let manifest = match manifest {
                    Some(manifest) => manifest,
                    None => load_plugin_manifest(path).map_err(LoadError::from)?,
                };
                match start {
                    PluginStart::OnDeploy => budget.fits(&manifest)?,
                    // Its instances reserve as they start: it must fit alone.
                    PluginStart::OnFirstEvent => budget.check(&manifest)?,
                }
                let loaded = load_manifest(manifest, &engine, &limits)?;
                // Creating a plugin's metric series (at zero) takes a few microseconds: here,
                // beside the rest of the reading, rather than on the registering thread.
                let metrics = metrics.plugin(loaded.name());
                Ok(ReadPlugin { loaded, metrics })
            })();
            Read { fingerprint, plugin }
        };
        let reading = dirs.clone();
        let handle = tokio::task::spawn_blocking(move || {
            reading
                .iter()
                .map(|path| {
                    // One plugin's panic is its own failure, not its neighbours'.
                    std::panic::catch_unwind(AssertUnwindSafe(|| read(path))).map_err(|panic| panic_message(&*panic))
                })
                .collect()
        });
        Reading { dirs, handle }
    }

    /// What [`read_plugins`](Self::read_plugins) read, in the order of its folders.
    pub(super) async fn finish_reads(&self, reading: Reading) -> Vec<Read> {
        let Reading { dirs, handle } = reading;
        let reads: Vec<Result<Read, String>> = match handle.await {
            Ok(reads) => reads,
            Err(join) => {
                let message = join.try_into_panic().map_or_else(|_| "cancelled".to_owned(), |p| panic_message(&*p));
                dirs.iter().map(|_| Err(message.clone())).collect()
            }
        };
        dirs.iter()
            .zip(reads)
            .map(|(dir, read)| {
                read.unwrap_or_else(|message| Read {
                    fingerprint: self.digests.lock().fingerprint(dir),
                    plugin: Err(RegistryError::LoadPanicked { dir: dir.clone(), message }),
                })
            })
            .collect()
    }

    /// What [`read_plugin`](Self::read_plugin) read from `dir`.
    pub(super) async fn finish_read(&self, dir: &Path, reading: Reading) -> Read {
        let read = self.finish_reads(reading).await.pop();
        read.unwrap_or_else(|| Read {
            fingerprint: self.digests.lock().fingerprint(dir),
            plugin: Err(RegistryError::LoadPanicked { dir: dir.to_owned(), message: "nothing was read".to_owned() }),
        })
    }

    /// Loads the plugin read from its folder: reserves its memory, takes its cache grants and
    /// builds its handler, for [`starting`](Self::starting).
    pub(super) fn load(&self, read: Result<ReadPlugin, RegistryError>) -> Result<Started, RegistryError> {
        let ReadPlugin { loaded, metrics } = read?;
        let name = loaded.name().to_owned();
        // Linked first: the operator's policy may refuse what the manifest asks for.
        let cluster = match &self.cluster {
            Some(context) => Some(
                context
                    .link(&loaded.manifest, metrics.clone())
                    .map_err(|reason| RegistryError::Refused { name: name.clone(), reason })?,
            ),
            None => None,
        };
        let resolver: Arc<dyn CacheResolver> = Arc::new(FactoryCache(self.factory.clone()));
        let memory = match self.start {
            PluginStart::OnDeploy => Some(self.memory_budget.reserve(&loaded.manifest)?),
            PluginStart::OnFirstEvent => {
                self.memory_budget.check(&loaded.manifest)?;
                None
            }
        };
        // Started on first event, each instance reserves its memory while it lives.
        let budget = (self.start == PluginStart::OnFirstEvent).then(|| self.memory_budget.clone());
        let sandbox = |queue: Option<&WorkQueue<String>>| {
            let sandbox = loaded.sandbox(&self.engine, resolver.clone(), cluster.clone());
            let sandbox = match queue {
                Some(queue) => sandbox.with_queue(queue.clone()),
                None => sandbox,
            };
            match &budget {
                Some(budget) => sandbox.with_budget(budget.clone()),
                None => sandbox,
            }
        };
        let mut grants = Vec::new();
        for grant in &loaded.manifest.cache {
            // Granted reads need a cache: keep the resource's informer while the plugin lives.
            let key = ResourceKey::new(&grant.api_version, &grant.kind);
            grants.push(self.factory.acquire(&key).map_err(|source| RegistryError::Source {
                name: name.clone(),
                resource: key.to_string(),
                source,
            })?);
        }
        let Some(reconcile) = &loaded.manifest.reconcile else {
            let handler = PluginHandler::for_sandbox(&loaded, sandbox(None), metrics, self.pool.clone())
                .with_start_gate(self.caches_synced(&loaded))
                .with_recycler(&self.recycler);
            return Ok(Started { loaded, handler: Arc::new(handler), reconciler: None, grants, memory });
        };
        // A reconciler: one queue, and a handler (an instance) per worker.
        let observer = self.metrics.work_queues().observer(&name);
        let queue = WorkQueue::new(reconcile.rate_limits.limits(), Some(observer));
        let mut handlers = (0..reconcile.workers).map(|_| {
            let handler =
                PluginHandler::for_sandbox(&loaded, sandbox(Some(&queue)), metrics.clone(), self.pool.clone());
            Arc::new(handler.with_start_gate(self.caches_synced(&loaded)).with_recycler(&self.recycler))
        });
        let handler = handlers.next().expect("a reconciler has at least one worker");
        let others = handlers.collect();
        Ok(Started { loaded, handler, reconciler: Some((queue, others)), grants, memory })
    }

    /// Starts a loaded plugin's instance (`init`, on a guest thread) unless plugins start on
    /// their first event and it `replaces` no running version (a replacement starts first
    /// whatever the start, so that one that cannot start leaves the old version running; its
    /// instance is recycled like any other). The start is handed to a guest thread now, so that the caller may
    /// load the next plugins meanwhile; [`Starting::started`] waits for it. It runs without a
    /// task of its own: the guest thread's answer wakes the caller directly (a task would
    /// cost two more thread wake-ups per plugin, a large part of a plugin's start).
    pub(super) fn starting(&self, plugin: Started, replaces: bool) -> Starting {
        let start = match (self.start, replaces) {
            (PluginStart::OnDeploy, _) | (PluginStart::OnFirstEvent, true) => {
                let (handler, starts) = (plugin.handler.clone(), self.starts.clone());
                let start: StartFuture =
                    Box::pin(AssertUnwindSafe(async move { handler.warm_up_placed(&starts).await }).catch_unwind());
                // Polled once here: that takes the plugin's slot and queues `init` for a
                // guest thread. Whoever polls it next is woken by the answer.
                let mut start = MaybeDone::Future(start);
                let _ = Pin::new(&mut start).poll(&mut Context::from_waker(Waker::noop()));
                Some(start)
            }
            (PluginStart::OnFirstEvent, false) => None,
        };
        Starting { plugin, start }
    }

    /// Whether every informer `plugin` watches or reads has synced (its start gate).
    fn caches_synced(&self, plugin: &LoadedPlugin) -> crate::plugin::delivery::runner::StartGate {
        let m = &plugin.manifest;
        let watched = m.resources.iter().map(|r| ResourceKey::new(&r.api_version, &r.kind));
        let keys: Vec<ResourceKey> =
            watched.chain(m.cache.iter().map(|g| ResourceKey::new(&g.api_version, &g.kind))).collect();
        let factory = self.factory.clone();
        Arc::new(move || keys.iter().all(|key| factory.existing(key).is_some_and(|informer| informer.has_synced())))
    }
}

/// A plugin's start: `init`'s outcome, or the panic that ended it.
type StartFuture = Pin<Box<dyn Future<Output = std::thread::Result<CallOutcome>> + Send>>;

/// A plugin whose start runs (see [`PluginRegistry::starting`]).
pub(super) struct Starting {
    plugin: Started,
    start: Option<MaybeDone<StartFuture>>,
}

impl Starting {
    /// The plugin once started, or why it could not start.
    pub(super) async fn started(self) -> Result<Started, RegistryError> {
        let Some(mut start) = self.start else { return Ok(self.plugin) };
        (&mut start).await;
        let outcome = match Pin::new(&mut start).take_output() {
            Some(Ok(outcome)) => outcome,
            Some(Err(panic)) => CallOutcome::Trap(TrapKind::Other(format!("host panic: {}", panic_message(&*panic)))),
            None => CallOutcome::Trap(TrapKind::Other("host panic: the start ended twice".to_owned())),
        };
        match outcome {
            CallOutcome::Ok => Ok(self.plugin),
            outcome => Err(RegistryError::Start { name: self.plugin.loaded.name().to_owned(), outcome }),
        }
    }
}

//! One informer per watched resource, shared by all its handlers: client-go's
//! `sharedIndexInformer`.
//!
//! [`SharedIndexInformer::run`] drives a [`Reflector`] into a [`DeltaFifo`] and pops it into
//! `handle_deltas`, which — in client-go's order — first updates the [`Indexer`], then
//! distributes the notification, so a handler that reads the cache sees at least the state it
//! was told about.
//!
//! Handlers may be added before or after `run`. One added after start first receives the
//! current cache as initial-list adds (under the same lock that serializes deltas, so it
//! misses nothing and sees nothing twice), then live events; its registration reports its
//! own `has_synced`. Handlers may be removed at any time.
//!
//! Resync periods are resolved as client-go does: the informer's check period starts at its
//! default resync period and, before start, drops to the smallest period a handler asks for;
//! a period below 1 s is raised to 1 s; after start, a period below the check period is
//! raised to it (and logged). One deliberate difference: when the check period is zero (no
//! default resync), client-go disables every handler's resync; wink lets the first handler
//! that asks for a resync set the check period instead, even after start, so a plugin
//! deployed into a running host still gets the resync it asked for.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::crash::{PanicCounter, catch};
use super::delta_fifo::{Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, DeltaType, FifoClosed};
use super::handler::{EventHandler, Notification};
use super::indexer::{IndexFunc, Indexer, IndexerError};
use super::list_watch::ListerWatcher;
use super::listener::{Listener, ListenerOptions};
use super::processor::{MINIMUM_RESYNC_PERIOD, Processor, determine_resync_period};
use super::reflector::{Reflector, ReflectorConfig, Transform, WatchErrorHandler};
use super::reflector_stats::{ReflectorCounts, ReflectorStats};
use super::store::Store;

/// Registration ids, unique in the process: a [`Registration`] of one informer can never
/// name a handler of another (client-go compares the handle itself, a pointer).
static NEXT_REGISTRATION_ID: AtomicU64 = AtomicU64::new(1);

/// Errors of informer operations.
#[derive(Debug, thiserror::Error)]
pub enum InformerError {
    /// The informer has stopped; no handler can be added.
    #[error("informer {0} has stopped")]
    Stopped(String),
    /// The setting can only be changed before the informer starts.
    #[error("informer {0} has already started")]
    AlreadyStarted(String),
    /// The registration does not belong to this informer (or was already removed).
    #[error("handler {0} is not registered")]
    NotRegistered(u64),
    /// An index could not be added.
    #[error(transparent)]
    Index(#[from] IndexerError),
}

/// How an informer lists, watches and caches.
#[derive(Clone)]
pub struct InformerConfig {
    /// A name for logs (e.g. `v1/Pod`).
    pub name: String,
    /// Default resync period for handlers that do not ask for one, and the initial resync
    /// check period (client-go's `defaultEventHandlerResyncPeriod`). Zero: no resync unless a
    /// handler asks before start.
    pub default_resync: Duration,
    /// Strip `metadata.managedFields` from every object on the way in. Default on.
    pub strip_managed_fields: bool,
    /// Extra index functions.
    pub indexers: Vec<(String, IndexFunc)>,
    /// List/watch settings (its `resync_period` is set by the informer).
    pub reflector: ReflectorConfig,
}

impl Default for InformerConfig {
    fn default() -> Self {
        Self {
            name: "informer".into(),
            default_resync: Duration::ZERO,
            strip_managed_fields: true,
            indexers: Vec::new(),
            reflector: ReflectorConfig::default(),
        }
    }
}

struct Inner {
    config: InformerConfig,
    lw: Arc<dyn ListerWatcher>,
    indexer: Indexer,
    fifo: Arc<DeltaFifo>,
    processor: Processor,
    started: AtomicBool,
    stopped: AtomicBool,
    resync_check_period: Mutex<Duration>,
    /// Tells the running reflector about check period changes.
    resync_updates: tokio::sync::watch::Sender<Duration>,
    /// Serializes delta handling with late handler registration.
    block_deltas: Mutex<()>,
    last_sync_resource_version: Arc<RwLock<String>>,
    /// Panics survived by the reflector, the transform and delta processing.
    panics: PanicCounter,
    /// What the reflector did (lists, watches, errors, events).
    stats: ReflectorStats,
    /// Listener tasks by registration id (`None` handle: not started yet).
    tasks: Mutex<HashMap<u64, ListenerTask>>,
    cancel: Mutex<Option<CancellationToken>>,
    /// Set with [`SharedIndexInformer::set_transform`] before start.
    transform: Mutex<Option<Transform>>,
    /// Set with [`SharedIndexInformer::set_watch_error_handler`] before start.
    watch_error_handler: Mutex<Option<WatchErrorHandler>>,
}

struct ListenerTask {
    listener: Arc<Listener>,
    handler: Arc<dyn EventHandler>,
    cancel: CancellationToken,
    join: Option<JoinHandle<()>>,
}

/// A handle on a registered handler.
#[derive(Clone, Debug)]
pub struct Registration {
    listener: Arc<Listener>,
}

impl Registration {
    /// The registration id.
    pub fn id(&self) -> u64 {
        self.listener.id()
    }

    /// Whether the informer synced and this handler has received every initial add.
    pub fn has_synced(&self) -> bool {
        self.listener.has_synced()
    }

    /// Whether the handler was removed or its informer stopped: it receives nothing more.
    pub fn is_stopped(&self) -> bool {
        self.listener.is_stopped()
    }

    /// The handler's listener (queue length, counters, resolved resync period).
    pub fn listener(&self) -> &Arc<Listener> {
        &self.listener
    }
}

/// An informer: a cache of one resource kept in step with its source, and the handlers
/// that are told about every change. Cheap to clone (clones share everything).
#[derive(Clone)]
pub struct SharedIndexInformer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedIndexInformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer").field("name", &self.inner.config.name).finish()
    }
}

impl SharedIndexInformer {
    /// An informer over `lw`. Fails if `config.indexers` repeats a name or uses a reserved
    /// one ([`NAMESPACE_INDEX`](super::indexer::NAMESPACE_INDEX)), as client-go's
    /// `AddIndexers` refuses an index that already exists.
    pub fn new(lw: Arc<dyn ListerWatcher>, config: InformerConfig) -> Result<Self, InformerError> {
        let indexer = Indexer::new();
        indexer.add_indexers(config.indexers.clone())?;
        let panics = PanicCounter::default();
        let fifo = Arc::new(DeltaFifo::with_options(DeltaFifoOptions {
            known_objects: Some(indexer.store()),
            emit_delta_type_replaced: true,
            transformer: None,
            panics: panics.clone(),
        }));
        Ok(Self {
            inner: Arc::new(Inner {
                resync_check_period: Mutex::new(config.default_resync),
                resync_updates: tokio::sync::watch::Sender::new(config.default_resync),
                config,
                lw,
                indexer,
                fifo,
                processor: Processor::default(),
                started: AtomicBool::new(false),
                stopped: AtomicBool::new(false),
                block_deltas: Mutex::new(()),
                last_sync_resource_version: Arc::default(),
                panics,
                stats: ReflectorStats::default(),
                tasks: Mutex::default(),
                cancel: Mutex::default(),
                transform: Mutex::default(),
                watch_error_handler: Mutex::default(),
            }),
        })
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// A read-only view of the cache (client-go's `GetStore`/`GetIndexer`, without the
    /// writes: the informer is the cache's only writer).
    pub fn store(&self) -> Store {
        self.inner.indexer.store()
    }

    /// Adds index functions (also after start: they are built for the cached items).
    pub fn add_indexers(&self, indexers: Vec<(String, IndexFunc)>) -> Result<(), InformerError> {
        Ok(self.inner.indexer.add_indexers(indexers)?)
    }

    /// Whether the initial list has been fully delivered to the cache and distributed.
    pub fn has_synced(&self) -> bool {
        self.inner.fifo.has_synced()
    }

    /// Whether `run` has started.
    pub fn has_started(&self) -> bool {
        self.inner.started.load(Ordering::SeqCst)
    }

    /// Whether `run` has returned.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Sets the transform applied to every object before it is cached (client-go's
    /// `SetTransform`, installed as the DeltaFIFO's transformer). Only before start, as in
    /// client-go.
    pub fn set_transform(&self, transform: Transform) -> Result<(), InformerError> {
        let _block = self.inner.block_deltas.lock();
        if self.has_started() {
            return Err(InformerError::AlreadyStarted(self.inner.config.name.clone()));
        }
        *self.inner.transform.lock() = Some(transform);
        Ok(())
    }

    /// Sets the handler called with every list and watch error (client-go's
    /// `SetWatchErrorHandler`; default: a warning in the log). Only before start.
    pub fn set_watch_error_handler(&self, handler: WatchErrorHandler) -> Result<(), InformerError> {
        let _block = self.inner.block_deltas.lock();
        if self.has_started() {
            return Err(InformerError::AlreadyStarted(self.inner.config.name.clone()));
        }
        *self.inner.watch_error_handler.lock() = Some(handler);
        Ok(())
    }

    /// Panics this informer survived in its source, transform or delta processing (its
    /// handlers' panics are counted by their listeners).
    pub fn panics(&self) -> u64 {
        self.inner.panics.get()
    }

    /// What the informer's reflector did: lists, watches, errors, events.
    pub fn reflector_counts(&self) -> ReflectorCounts {
        self.inner.stats.counts()
    }

    /// The resourceVersion of the last list or event applied.
    pub fn last_sync_resource_version(&self) -> String {
        self.inner.last_sync_resource_version.read().clone()
    }

    /// The current resync check period.
    pub fn resync_check_period(&self) -> Duration {
        *self.inner.resync_check_period.lock()
    }

    /// Registers a handler with the informer's default resync period.
    pub fn add_event_handler(&self, handler: Arc<dyn EventHandler>) -> Result<Registration, InformerError> {
        let options = ListenerOptions::new(self.name(), self.inner.config.default_resync);
        self.add_event_handler_with_options(handler, options)
    }

    /// Registers a handler with its own resync period and filters.
    #[doc(alias = "AddEventHandlerWithResyncPeriod")]
    pub fn add_event_handler_with_options(
        &self,
        handler: Arc<dyn EventHandler>,
        mut options: ListenerOptions,
    ) -> Result<Registration, InformerError> {
        let inner = &self.inner;
        if self.is_stopped() {
            return Err(InformerError::Stopped(inner.config.name.clone()));
        }
        options.keep_vanished |= handler.sees_vanished_objects();
        let mut period = options.resync_period;
        let mut check = inner.resync_check_period.lock();
        if !period.is_zero() {
            if period < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(handler = %options.name, ?period, "resync period below 1s raised to 1s");
                period = MINIMUM_RESYNC_PERIOD;
            }
            if check.is_zero() {
                // client-go would disable this handler's resync for good; wink lets the first
                // handler that asks for one set the check period, before or after start.
                *check = period;
                inner.processor.resync_check_period_changed(period);
                inner.resync_updates.send_replace(period);
            } else if period < *check {
                if self.has_started() {
                    tracing::warn!(handler = %options.name, ?period, check = ?*check,
                        "informer already started: resync period raised to the check period");
                    period = *check;
                } else {
                    *check = period;
                    inner.processor.resync_check_period_changed(period);
                    inner.resync_updates.send_replace(period);
                }
            }
        }
        options.resync_period = period;
        let resolved = determine_resync_period(period, *check);
        drop(check);
        let id = NEXT_REGISTRATION_ID.fetch_add(1, Ordering::Relaxed);
        let fifo = inner.fifo.clone();
        let listener = Arc::new(Listener::new(id, options, resolved, Arc::new(move || fifo.has_synced())));
        let registration = Registration { listener: listener.clone() };
        let mut task =
            ListenerTask { listener: listener.clone(), handler, cancel: CancellationToken::new(), join: None };

        // Hold off deltas while registering so the replay and live events neither overlap
        // nor leave a gap.
        let _block = inner.block_deltas.lock();
        inner.processor.add_listener(listener.clone());
        let run_cancel = inner.cancel.lock().clone();
        if let Some(run_cancel) = run_cancel {
            for obj in inner.indexer.reader().list() {
                listener.add(Notification::Add { obj, initial: true });
            }
            task.cancel = run_cancel.child_token();
            task.join = Some(tokio::spawn(listener.run(task.handler.clone(), task.cancel.clone())));
        }
        inner.tasks.lock().insert(id, task);
        Ok(registration)
    }

    /// Unregisters a handler: its queue is dropped and its task ends after any call in
    /// progress. Other handlers are not disturbed.
    pub fn remove_event_handler(&self, registration: &Registration) -> Result<(), InformerError> {
        let id = registration.id();
        let _block = self.inner.block_deltas.lock();
        self.inner.processor.remove_listener(id).ok_or(InformerError::NotRegistered(id))?;
        if let Some(task) = self.inner.tasks.lock().remove(&id) {
            task.cancel.cancel();
        }
        registration.listener.mark_stopped();
        Ok(())
    }

    /// [`Self::handle_deltas`], surviving a panic (an index function's, a filter's): the
    /// key's deltas are skipped, logged and counted, and the informer goes on with the next.
    fn handle_deltas_surviving(&self, deltas: Vec<Delta>, is_in_initial_list: bool) {
        let key = deltas.first().map(|d| d.obj.object().key().to_owned()).unwrap_or_default();
        if let Err(panic) = catch(|| self.handle_deltas(deltas, is_in_initial_list)) {
            self.inner.panics.record();
            tracing::error!(informer = %self.inner.config.name, %key, %panic, "processing deltas panicked; key skipped");
        }
    }

    fn handle_deltas(&self, deltas: Vec<Delta>, is_in_initial_list: bool) {
        let inner = &self.inner;
        let _block = inner.block_deltas.lock();
        for delta in deltas {
            match delta.kind {
                DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                    let obj = delta.obj.object().clone();
                    match inner.indexer.reader().get(&obj) {
                        Some(old) => {
                            inner.indexer.update(obj.clone());
                            // As client-go's `processDeltas`: a `Sync` is a resync, and so is a
                            // `Replaced` (relist) that left the resourceVersion unchanged; both go
                            // to syncing listeners only. Watch events go to every listener.
                            let is_sync = match delta.kind {
                                DeltaType::Sync => true,
                                DeltaType::Replaced => old.resource_version() == obj.resource_version(),
                                _ => false,
                            };
                            inner.processor.distribute(&Notification::Update { old, new: obj }, is_sync);
                        }
                        None => {
                            inner.indexer.add(obj.clone());
                            inner.processor.distribute(&Notification::Add { obj, initial: is_in_initial_list }, false);
                        }
                    }
                }
                DeltaType::Deleted => {
                    let (obj, final_state_unknown) = match delta.obj {
                        DeltaObject::Object(obj) => (obj, false),
                        DeltaObject::DeletedFinalStateUnknown { obj, .. } => (obj, true),
                    };
                    inner.indexer.delete_key(obj.key());
                    inner.processor.distribute(&Notification::Delete { obj, final_state_unknown }, false);
                }
            }
        }
    }

    /// Runs the informer until `cancel` fires; then stops the reflector, lets every handler
    /// finish the call in progress, and returns.
    pub async fn run(self, cancel: CancellationToken) {
        let inner = &self.inner;
        if inner.started.swap(true, Ordering::SeqCst) {
            tracing::warn!(informer = %inner.config.name, "informer already started");
            return;
        }
        let mut reflector_config = inner.config.reflector.clone();
        let watch_error_handler = {
            let _block = inner.block_deltas.lock();
            // Read under the lock the setters take, after `started` is set: a setting made
            // before start is seen here, one made after is refused.
            let mut transform = inner.transform.lock().clone();
            if inner.config.strip_managed_fields {
                let strip: Transform = Arc::new(super::object::Object::into_without_managed_fields);
                transform = Some(match transform {
                    Some(user) => Arc::new(move |obj| user(strip(obj))),
                    None => strip,
                });
            }
            inner.fifo.set_transformer(transform);
            reflector_config.resync_period = *inner.resync_check_period.lock();
            *inner.cancel.lock() = Some(cancel.clone());
            for task in inner.tasks.lock().values_mut() {
                task.cancel = cancel.child_token();
                task.join = Some(tokio::spawn(task.listener.clone().run(task.handler.clone(), task.cancel.clone())));
            }
            inner.watch_error_handler.lock().clone()
        };
        let this = self.clone();
        let mut reflector = Reflector::new(inner.lw.clone(), inner.fifo.clone(), reflector_config);
        if let Some(handler) = watch_error_handler {
            reflector = reflector.with_error_handler(handler);
        }
        let reflector = reflector
            .with_should_resync(Arc::new(move || this.inner.processor.should_resync()))
            .with_last_sync_cell(inner.last_sync_resource_version.clone())
            .with_panic_counter(inner.panics.clone())
            .with_stats(inner.stats.clone())
            .with_resync_period_updates(inner.resync_updates.subscribe());
        let this = self.clone();
        let pop_loop = async move {
            loop {
                let handled =
                    this.inner.fifo.pop(|deltas, initial| this.handle_deltas_surviving(deltas, initial)).await;
                if handled == Err(FifoClosed) {
                    break;
                }
            }
        };
        tokio::select! {
            () = reflector.run(cancel.clone()) => {}
            () = pop_loop => {}
        }
        inner.fifo.close();
        let joins: Vec<_> = inner
            .tasks
            .lock()
            .values_mut()
            .filter_map(|t| {
                t.cancel.cancel();
                t.listener.mark_stopped();
                t.join.take()
            })
            .collect();
        for join in joins {
            let _ = join.await;
        }
        inner.stopped.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
#[path = "shared_informer_tests.rs"]
mod tests;

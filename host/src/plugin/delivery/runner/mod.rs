//! [`PluginHandler`]: a plugin as an informer [`EventHandler`], with its failure policy.
//!
//! Guest code never holds up the async executor: each call is a job of the host-wide
//! [`GuestPool`] (one thread per core), run inside the caller's tracing span, as
//! Kubewarden's policy-server runs policies on a bounded pool. Calls into one plugin are
//! serial: its instance sits behind an async mutex, so a second listener of the same plugin
//! waits without holding a guest thread.
//!
//! **A fast plugin's deliveries run where they are**: on the delivering executor thread,
//! without a hop, once its calls have stayed fast ([`placement`](super::placement) says
//! when, and what that thread's other tasks do meanwhile).
//!
//! The hop to a guest thread and back costs several times a small guest call, so a
//! listener's batch ([`EventHandler::deliver_batch`]) runs as **one** job: under load the hop
//! is paid once per batch, not once per event. A batch stops early — the rest goes back to
//! the front of the listener's queue — after a trap (so the restart backoff applies) or once
//! it has run for [`BATCH_BUDGET`] (so one plugin's batch does not keep a guest thread long
//! while other plugins wait; on the delivering thread, half of [`HAND_OVER_AFTER`]). A
//! single event ([`PluginHandler::deliver`], the `EventHandler` methods) is a batch of one:
//! there is one delivery path, so what the failure-policy tests exercise is what production
//! runs. The listener's at-once path ([`EventHandler::deliver_now`]) takes it too, for the
//! lone events that would run on the delivering thread anyway, when nothing is to be waited
//! for: it only spares them a future.
//!
//! Failure policy (the manifest's `failurePolicy`):
//! - a guest `retry` error → [`HandlerError::Retry`] (the listener retries the key with
//!   backoff); `fatal` → [`HandlerError::Fatal`];
//! - a trap (or an `init` refusal) discards the instance; the next call starts a new one,
//!   immediately after the first failure and then after an exponential backoff
//!   ([`BackoffConfig::PLUGIN_RESTART`]) while failures continue. The event is retried (`onError: retry`)
//!   or logged and skipped (`skip`);
//! - after `quarantineAfter` consecutive failures the plugin is quarantined: logged at
//!   error level, flagged in its metrics, and from then on its events are dropped (counted)
//!   without calling the guest, until it is reloaded.
//! - an instantiation failure that is not the guest's doing (e.g. the instance pool is
//!   exhausted) is retried with backoff but never counts towards quarantine.
//!
//! All state changes happen in the blocking task, so they are not lost if the caller's
//! future is dropped mid-call. The policy itself is in [`policy`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use quanta::Instant;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tracing::Instrument;

use crate::informer::{
    Action, BackoffConfig, EntryResults, EventHandler, HandlerError, HandlerResult, Notification, Object,
};
use crate::plugin::contract::outcome::{CallOutcome, TrapKind};
use crate::plugin::delivery::placement::{Placement, Took};
use crate::plugin::imports::{CacheResolver, ClusterLink};
use crate::plugin::manifest::FailurePolicy;
use crate::plugin::metrics::PluginMetrics;
use crate::plugin::runtime::engine::PluginEngine;
use crate::plugin::runtime::instance::{PluginInstance, Sandbox};
use crate::plugin::runtime::loader::LoadedPlugin;
pub use crate::plugin::threads::pool::GuestPool;
use crate::plugin::threads::pool::here::HAND_OVER_AFTER;
use crate::plugin::threads::pool::{GuestPoolError, HandOver};
use batch::{Ran, call_guest, run_batch, timed};
use policy::apply_policy;
pub use recycle::RecyclePolicy;
pub use recycle::Recycler;

/// How long one batch may keep calling a plugin before the rest of it is put back in the
/// listener's queue (a call already started always completes, within its deadline).
pub(crate) const BATCH_BUDGET: Duration = Duration::from_millis(1);

/// The budget of a batch run on its delivering thread: half of what holds that thread's other
/// tasks up too long ([`HAND_OVER_AFTER`]), so that a batch of fast calls never does (the
/// rest goes back to the listener, which delivers it next).
const BATCH_BUDGET_HERE: Duration = Duration::from_nanos(HAND_OVER_AFTER.as_nanos() as u64 / 2);

/// The instance slot, guarded by the plugin's async mutex.
#[derive(Default)]
struct Slot {
    instance: Option<PluginInstance>,
    started_once: bool,
    /// Not before this instant may a new instance be started (restart backoff).
    restart_at: Option<tokio::time::Instant>,
    /// When its instance's last call (or start) ended: what the [`Recycler`] goes by.
    last_used: Option<Instant>,
    /// Whether the [`Recycler`] lists it (as holding an instance).
    listed: bool,
}

struct Shared {
    name: Arc<str>,
    sandbox: Arc<Sandbox>,
    policy: FailurePolicy,
    backoff: BackoffConfig,
    metrics: PluginMetrics,
    consecutive_failures: AtomicU32,
    quarantined: AtomicBool,
    /// How long one batch may keep a guest thread before the rest goes back to the listener.
    batch_budget: Duration,
    /// Whether every cache the plugin reads has synced: no event is delivered before.
    start_gate: Option<StartGate>,
    /// The gate was seen open (it never closes again).
    started: AtomicBool,
    /// Where its calls run: the record of how they went.
    placement: Placement,
    /// Recycles its instance when idle, and others' when the pool is full (`None`: never),
    /// and the slot it knows this handler by.
    recycler: Option<(Recycler, std::sync::Weak<Mutex<Slot>>)>,
}

/// Says whether a plugin may be called: every informer it watches or reads has synced.
pub(crate) type StartGate = Arc<dyn Fn() -> bool + Send + Sync>;

/// How often a closed start gate is checked (client-go's WaitForCacheSync polls too).
const START_GATE_POLL: Duration = Duration::from_millis(10);

/// Runs one plugin's component for informer events. Cheap to clone; clones share the
/// instance, the counters and the quarantine flag.
#[derive(Clone)]
pub struct PluginHandler {
    shared: Arc<Shared>,
    slot: Arc<Mutex<Slot>>,
    pool: GuestPool,
}

impl std::fmt::Debug for PluginHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHandler")
            .field("name", &self.shared.name)
            .field("quarantined", &self.is_quarantined())
            .field("consecutive_failures", &self.consecutive_failures())
            .finish_non_exhaustive()
    }
}

impl PluginHandler {
    /// A handler running `sandbox`'s plugin on `pool` with the manifest's failure policy.
    pub fn new(
        sandbox: Arc<Sandbox>,
        policy: FailurePolicy,
        backoff: BackoffConfig,
        metrics: PluginMetrics,
        pool: GuestPool,
    ) -> Self {
        let shared = Shared {
            name: sandbox.name().clone(),
            sandbox,
            policy,
            backoff,
            metrics,
            consecutive_failures: AtomicU32::new(0),
            quarantined: AtomicBool::new(false),
            batch_budget: BATCH_BUDGET,
            start_gate: None,
            started: AtomicBool::new(false),
            placement: Placement::default(),
            recycler: None,
        };
        Self { shared: Arc::new(shared), slot: Arc::default(), pool }
    }

    /// Sets how long one batch may run before its unstarted entries go back to the listener
    /// (default `BATCH_BUDGET`). Must be called before the handler is cloned.
    #[must_use]
    pub fn with_batch_budget(mut self, budget: Duration) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.batch_budget = budget;
        }
        self
    }

    /// A handler for a loaded plugin with its manifest's failure policy, the default
    /// restart backoff, cache reads served by `resolver` and requests through `cluster`.
    pub fn for_plugin(
        plugin: &LoadedPlugin,
        engine: &PluginEngine,
        resolver: Arc<dyn CacheResolver>,
        cluster: Option<Arc<ClusterLink>>,
        metrics: PluginMetrics,
        pool: GuestPool,
    ) -> Self {
        Self::for_sandbox(plugin, plugin.sandbox(engine, resolver, cluster), metrics, pool)
    }

    /// A handler running `sandbox`, made from the loaded `plugin` (a reconciler's sandbox
    /// holds its work queue), with the manifest's failure policy and the default restart
    /// backoff.
    pub fn for_sandbox(plugin: &LoadedPlugin, sandbox: Sandbox, metrics: PluginMetrics, pool: GuestPool) -> Self {
        let policy = plugin.manifest.failure_policy.clone();
        Self::new(Arc::new(sandbox), policy, BackoffConfig::PLUGIN_RESTART, metrics, pool)
    }

    /// Delivers nothing until `gate` says every cache the plugin reads has synced, as
    /// controller-runtime starts a controller's workers only after `WaitForCacheSync`: a
    /// handler that reads one resource while reacting to another then never acts on a cache
    /// that is still filling (a controller would see objects as missing and act on it). Must
    /// be called before the handler is cloned.
    #[must_use]
    pub fn with_start_gate(mut self, gate: StartGate) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.start_gate = Some(gate);
        }
        self
    }

    /// Lets `recycler` drop this handler's instance when idle (see [`Recycler`]), and this
    /// handler take the least recently used instance's place when the pool is full. Must be
    /// called before the handler is cloned.
    #[must_use]
    pub fn with_recycler(mut self, recycler: &Recycler) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.recycler = Some((recycler.clone(), Arc::downgrade(&self.slot)));
            recycler.start_reaper();
        }
        self
    }

    async fn wait_for_start(&self) {
        while !self.gate_open() {
            tokio::time::sleep(START_GATE_POLL).await;
        }
    }

    /// Whether the start gate is open (there is none, or it was seen open: it never closes
    /// again).
    fn gate_open(&self) -> bool {
        let Some(gate) = &self.shared.start_gate else { return true };
        if self.shared.started.load(Ordering::Acquire) {
            return true;
        }
        let open = gate();
        if open {
            self.shared.started.store(true, Ordering::Release);
        }
        open
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Whether the plugin is quarantined (its events are dropped).
    pub fn is_quarantined(&self) -> bool {
        self.shared.quarantined.load(Ordering::Acquire)
    }

    /// Consecutive failures (traps, `init` refusals) so far; reset by a call that runs.
    pub fn consecutive_failures(&self) -> u32 {
        self.shared.consecutive_failures.load(Ordering::Acquire)
    }

    /// The plugin's metrics.
    pub fn metrics(&self) -> &PluginMetrics {
        &self.shared.metrics
    }

    /// Starts the instance now (instantiate + `init`) instead of on the first event, so a
    /// plugin that cannot start is reported at load time. Applies the failure policy like
    /// any call. The start runs on a guest thread.
    pub async fn warm_up(&self) -> CallOutcome {
        self.start_placed(None).await
    }

    /// [`warm_up`](Self::warm_up), where `starts` says: the record of the host's plugin
    /// starts, kept as a plugin's record of its calls is ([`Placement`]). Once starts have
    /// stayed fast, and while the guest pool has a place free, a start runs on the thread
    /// that begins it (a folder scan's), as a fast plugin's delivery does: a start of a small
    /// plugin costs less than the two thread wake-ups of a hop to a guest thread and back.
    /// A slow start sends the next ones back to the guest threads, where starts run in
    /// parallel, until they have stayed fast again.
    pub(crate) async fn warm_up_placed(&self, starts: &Placement) -> CallOutcome {
        self.start_placed(Some(starts)).await
    }

    async fn start_placed(&self, starts: Option<&Placement>) -> CallOutcome {
        let start = |shared: &Shared, slot: &mut Slot, started| {
            let (outcome, ended) = call_guest(shared, slot, None, started);
            // The outcome says it all; the policy still counts it, backs off and quarantines.
            let _ = apply_policy(shared, slot, &outcome);
            (outcome, Ran::one(started, ended))
        };
        let done = match self.take_slot().await {
            Ok(mut slot) => {
                let here = starts
                    .filter(|starts| starts.may_run_here())
                    .and_then(|starts| self.try_here(&mut slot, || starts.hand_over(), start))
                    .map(|done| (done, true));
                let (done, ran_here) = match here {
                    Some(here) => here,
                    None => (self.run_on_guest_thread(tracing::Span::current(), slot, start).await, false),
                };
                if let (Some(starts), Ok((_, took))) = (starts, &done) {
                    starts.count(&self.shared.name, *took, ran_here, self.pool.slow_call());
                }
                self.finish(done, ran_here)
            }
            Err(skipped) => Err(skipped),
        };
        match done {
            Ok(outcome) => outcome,
            Err(Skipped::Quarantined) => CallOutcome::Ok,
            Err(Skipped::Failed(e)) => match &e {
                GuestPoolError::Closed => CallOutcome::Ok,
                GuestPoolError::Panicked(_) => CallOutcome::Trap(TrapKind::Other(format!("host panic: {e}"))),
            },
        }
    }

    /// Delivers one notification, applying the failure policy: a batch of one, through the
    /// same path as every production delivery ([`deliver_many`](Self::deliver_many)).
    pub async fn deliver(&self, notification: Notification) -> HandlerResult {
        let mut results = self.deliver_many(&[vec![notification]]).await;
        results.pop().and_then(|mut entry| entry.pop()).unwrap_or_else(|| {
            Err(HandlerError::Retry(format!("plugin {}: the event was not delivered", self.shared.name)))
        })
    }

    /// Delivers a listener's batch in one guest-thread job (see the module docs).
    pub async fn deliver_many(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        self.wait_for_start().await;
        let span = tracing::debug_span!("plugin_batch", plugin = %self.shared.name, keys = batch.len());
        let done = match self.take_slot().await {
            Err(skipped) => Err(skipped),
            Ok(mut slot) => match self.runs_here(batch).then(|| self.run_here(&span, &mut slot, batch)).flatten() {
                Some(done) => done,
                None => {
                    // The guest thread needs its own copy: one vector of notifications and
                    // one of entry lengths, not one vector per entry.
                    let owned: Vec<Notification> = batch.iter().flatten().cloned().collect();
                    let lens: Vec<usize> = batch.iter().map(Vec::len).collect();
                    let job = move |shared: &Shared, slot: &mut Slot, started| {
                        let mut rest = &owned[..];
                        let entries = lens.iter().map(|&len| {
                            let (entry, after) = rest.split_at(len);
                            rest = after;
                            entry
                        });
                        run_batch(shared, slot, entries, started, shared.batch_budget)
                    };
                    self.on_guest_thread(span, slot, job).await
                }
            },
        };
        self.results(done, batch)
    }

    /// Delivers a lone event on this thread without suspending, when nothing is to be waited
    /// for: the start gate open, the slot free, no restart backoff pending, and the plugin's
    /// calls such that its lone event runs here ([`run_here`](Self::run_here)). `None`
    /// otherwise: the batch goes through [`deliver_many`](Self::deliver_many).
    fn deliver_at_once(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        if !Self::is_lone(batch) || !self.runs_here(batch) || !self.gate_open() {
            return None;
        }
        let mut slot = self.slot.try_lock().ok()?;
        if self.is_quarantined() || (slot.instance.is_none() && slot.restart_at.is_some()) {
            return None;
        }
        let span = tracing::debug_span!("plugin_batch", plugin = %self.shared.name, keys = batch.len());
        let done = self.run_here(&span, &mut slot, batch)?;
        Some(self.results(done, batch))
    }

    /// What the listener is told of a batch: its results, or why it has none.
    fn results(&self, done: Result<Vec<EntryResults>, Skipped>, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        match done {
            Ok(results) => results,
            Err(Skipped::Quarantined) => batch
                .iter()
                .map(|entry| {
                    entry
                        .iter()
                        .map(|_| {
                            self.shared.metrics.dropped_event();
                            Ok(Action::AwaitChange)
                        })
                        .collect()
                })
                .collect(),
            Err(Skipped::Failed(e)) => {
                let reason = e.retry_reason();
                batch.iter().map(|_| vec![Err(HandlerError::Retry(reason.clone()))]).collect()
            }
        }
    }

    /// Runs a batch that may run on this thread ([`runs_here`](Self::runs_here), which the
    /// callers ask first) here, if the pool lets it (see the module docs); `None` when it goes
    /// to a guest thread instead. Here it is in this task's span and tracing subscriber
    /// already, and borrows the batch rather than copying it.
    fn run_here(
        &self,
        span: &tracing::Span,
        slot: &mut Slot,
        batch: &[Vec<Notification>],
    ) -> Option<Result<Vec<EntryResults>, Skipped>> {
        let budget = self.shared.batch_budget.min(BATCH_BUDGET_HERE);
        let job = |shared: &Shared, slot: &mut Slot, started| {
            let _entered = span.enter();
            run_batch(shared, slot, batch.iter().map(Vec::as_slice), started, budget)
        };
        let done = self.try_here(slot, || self.shared.placement.hand_over(), job)?;
        Some(self.finish(done, true))
    }

    /// Runs `job` with the plugin's slot on this thread, if the pool lets it (see the module
    /// docs): its value and how long it took, not counted yet; `None` when it goes to a
    /// guest thread. `hand_over` is decided only if the job runs here (a countdown of
    /// hand-overs is not spent otherwise).
    fn try_here<T>(
        &self,
        slot: &mut Slot,
        hand_over: impl FnOnce() -> HandOver,
        job: impl FnOnce(&Shared, &mut Slot, Instant) -> (T, Ran),
    ) -> Option<Result<(T, Took), GuestPoolError>> {
        let done = self.pool.try_run_here(hand_over, || timed(|started| job(&self.shared, slot, started))).ok()?;
        if matches!(done, Err(GuestPoolError::Panicked(_))) {
            // Host code panicked mid-call: the instance may be inconsistent.
            slot.instance = None;
        }
        Some(done)
    }

    /// Whether `batch` may run on the delivering thread ([`Placement::may_run_here`]: a
    /// fast plugin's).
    fn runs_here(&self, batch: &[Vec<Notification>]) -> bool {
        !batch.is_empty() && self.shared.placement.may_run_here()
    }

    /// Whether `batch` is a lone event.
    fn is_lone(batch: &[Vec<Notification>]) -> bool {
        matches!(batch, [entry] if entry.len() == 1)
    }

    /// The plugin's instance slot, once free: unless the plugin is quarantined (checked
    /// before and after waiting for the slot), after the restart backoff of a failed instance.
    async fn take_slot(&self) -> Result<OwnedMutexGuard<Slot>, Skipped> {
        if self.is_quarantined() {
            return Err(Skipped::Quarantined);
        }
        let mut slot = match self.slot.clone().try_lock_owned() {
            Ok(slot) => slot,
            Err(_) => self.slot.clone().lock_owned().await,
        };
        if self.is_quarantined() {
            return Err(Skipped::Quarantined);
        }
        if slot.instance.is_none()
            && let Some(at) = slot.restart_at.take()
        {
            tokio::time::sleep_until(at).await;
        }
        Ok(slot)
    }

    /// Runs `job` with the plugin's slot on a guest thread, inside `span` and the caller's
    /// tracing subscriber. The job is given the instant it started and returns with its value
    /// the record of its calls (see [`timed`]).
    async fn on_guest_thread<T: Send + 'static>(
        &self,
        span: tracing::Span,
        slot: OwnedMutexGuard<Slot>,
        job: impl FnOnce(&Shared, &mut Slot, Instant) -> (T, Ran) + Send + 'static,
    ) -> Result<T, Skipped> {
        let done = self.run_on_guest_thread(span, slot, job).await;
        self.finish(done, false)
    }

    /// [`on_guest_thread`](Self::on_guest_thread)'s job, run: its value and how long it
    /// took, not counted yet.
    async fn run_on_guest_thread<T: Send + 'static>(
        &self,
        span: tracing::Span,
        mut slot: OwnedMutexGuard<Slot>,
        job: impl FnOnce(&Shared, &mut Slot, Instant) -> (T, Ran) + Send + 'static,
    ) -> Result<(T, Took), GuestPoolError> {
        let shared = self.shared.clone();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let done = self
            .pool
            .run(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    let _entered = span.enter();
                    timed(|started| job(&shared, &mut slot, started))
                })
            })
            .await;
        if matches!(done, Err(GuestPoolError::Panicked(_))) {
            // The slot guard was dropped while unwinding; the instance in it may be
            // inconsistent.
            self.slot.lock().await.instance = None;
        }
        done
    }

    /// A job's result: its record counted where the plugin's next calls run by (`ran_here`:
    /// on the delivering thread), or why there is none.
    fn finish<T>(&self, done: Result<(T, Took), GuestPoolError>, ran_here: bool) -> Result<T, Skipped> {
        match done {
            Ok((value, took)) => {
                self.count_call(took, ran_here);
                Ok(value)
            }
            Err(e @ GuestPoolError::Closed) => Err(Skipped::Failed(e)),
            Err(e) => {
                // A panic in host code (the guest cannot panic the host).
                tracing::error!(plugin = %self.shared.name, error = %e, "plugin call panicked in the host");
                Err(Skipped::Failed(e))
            }
        }
    }
}

impl PluginHandler {
    /// Waits, at most `within`, until no call of this plugin is in progress; says whether
    /// none is. A replacement waits so, after unregistering the old version, so that the old
    /// version's last call ends (and logs) before the new version starts.
    pub async fn wait_idle(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.slot.lock()).await.is_ok()
    }

    /// Keeps the record where this plugin's next calls run by.
    fn count_call(&self, took: Took, ran_here: bool) {
        self.shared.placement.count(&self.shared.name, took, ran_here, self.pool.slow_call());
    }
}

/// Why a job given to [`PluginHandler::on_guest_thread`] gave no result.
enum Skipped {
    /// The plugin is quarantined: its events are dropped.
    Quarantined,
    /// The guest pool is shut down, or host code panicked.
    Failed(GuestPoolError),
}

impl GuestPoolError {
    /// What the listener is told when a job gave no result: retry the event.
    fn retry_reason(&self) -> String {
        match self {
            Self::Closed => "the guest pool is shut down".into(),
            Self::Panicked(_) => format!("plugin call failed: {self}"),
        }
    }
}

#[async_trait]
impl EventHandler for PluginHandler {
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        let span = tracing::debug_span!("plugin_call", plugin = %self.shared.name, hook = "on-add", key = obj.key());
        self.deliver(Notification::Add { obj: obj.clone(), initial: is_initial_list }).instrument(span).await
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        let span = tracing::debug_span!("plugin_call", plugin = %self.shared.name, hook = "on-update", key = new.key());
        self.deliver(Notification::Update { old: old.clone(), new: new.clone() }).instrument(span).await
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        let span = tracing::debug_span!("plugin_call", plugin = %self.shared.name, hook = "on-delete", key = obj.key());
        self.deliver(Notification::Delete { obj: obj.clone(), final_state_unknown }).instrument(span).await
    }

    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        self.deliver_many(batch).await
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        self.deliver_at_once(batch)
    }
}

mod batch;
mod keyed;
mod policy;
pub(crate) mod recycle;

#[cfg(test)]
mod tests;

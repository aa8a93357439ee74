//! One registered handler and its queue: client-go's `processorListener`.
//!
//! A listener receives notifications from the processor without ever blocking it (adding is
//! a push into its [`PendingQueue`], bounded by key and coalescing), and delivers them to its
//! handler from its own task, so a slow handler delays nobody else. Calls are serial and in
//! order per key; what is ready is handed over in batches of up to [`MAX_BATCH`] keys
//! ([`EventHandler::deliver_batch`]), so a handler whose calls have a fixed cost (a wasm
//! plugin's hop to a blocking thread) pays it once per batch under load, and once per event
//! when events trickle in.
//!
//! Beyond client-go:
//! - an optional filter (namespaces and an object predicate) applied before anything is
//!   queued; an update that moves an object into or out of the filter becomes an add or a
//!   delete, as client-go's `FilteringResourceEventHandler` does;
//! - a [`HandlerError::Retry`] re-queues the key after a per-key exponential backoff, with
//!   the newest state of the key by then; other keys keep flowing meanwhile. A
//!   [`HandlerError::Fatal`] is logged and the event dropped;
//! - a handler that panics does not stop its listener (client-go's default `HandleCrash`
//!   would crash the process): the panic is logged with the key, counted in
//!   [`ListenerStats::panics`], and the key retried like a `Retry`.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::backoff::BackoffConfig;
use super::crash::panic_message;
use super::doorbell::Doorbell;
use super::handler::{Action, EntryResults, EventHandler, HandlerError, Notification};
use super::object::Object;
use super::pending_queue::{PendingQueue, Taken};

/// The most keys a listener hands its handler in one [`EventHandler::deliver_batch`].
pub const MAX_BATCH: usize = 256;

/// Emptied entry vectors a listener keeps for its next batches, so that a lone event's
/// delivery allocates none; a few, so that one large batch does not leave a listener holding
/// hundreds.
const SPARE_ENTRIES: usize = 4;

/// A predicate selecting the objects a listener wants.
pub type ObjectFilter = Arc<dyn Fn(&Object) -> bool + Send + Sync>;

/// What a listener tells of its deliveries (to metrics).
pub trait DeliveryObserver: Send + Sync {
    /// A queued entry was handled: `lag` from the arrival of its oldest notification to the
    /// return of the batch of calls that handled it (retries included).
    fn delivered(&self, lag: Duration);
    /// A notification was folded into one already queued for its key.
    fn coalesced(&self);
}

/// How a handler is registered.
#[derive(Clone)]
pub struct ListenerOptions {
    /// A name for logs and metrics.
    pub name: String,
    /// Requested resync period (zero: never). Resolved against the informer's check period.
    pub resync_period: Duration,
    /// Only objects in these namespaces (`None`: all). Cluster-scoped objects pass only when
    /// this is `None`.
    pub namespaces: Option<BTreeSet<String>>,
    /// Only objects for which this returns true.
    pub filter: Option<ObjectFilter>,
    /// Backoff of retried keys, by attempt number (default
    /// [`BackoffConfig::HANDLER_RETRY`]).
    pub retry: BackoffConfig,
    /// Told of every delivery's lag and every coalesced notification (`None`: nobody).
    pub observer: Option<Arc<dyn DeliveryObserver>>,
    /// An add then a delete of the same object, both pending, leave the delete rather than
    /// nothing ([`EventHandler::sees_vanished_objects`], which also sets it).
    pub keep_vanished: bool,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        Self {
            name: String::new(),
            resync_period: Duration::ZERO,
            namespaces: None,
            filter: None,
            retry: BackoffConfig::HANDLER_RETRY,
            observer: None,
            keep_vanished: false,
        }
    }
}

impl std::fmt::Debug for ListenerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerOptions")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("namespaces", &self.namespaces)
            .field("filter", &self.filter.is_some())
            .field("retry", &self.retry)
            .field("keep_vanished", &self.keep_vanished)
            .finish()
    }
}

impl ListenerOptions {
    /// Options with a name and a resync period.
    pub fn new(name: impl Into<String>, resync_period: Duration) -> Self {
        Self { name: name.into(), resync_period, ..Self::default() }
    }
}

#[derive(Debug)]
struct Resync {
    requested: Duration,
    period: Duration,
    next: Instant,
}

/// Counters of one listener.
#[derive(Debug, Default)]
pub struct ListenerStats {
    /// Handler calls that returned Ok.
    pub delivered: AtomicU64,
    /// Calls that returned `Retry`.
    pub retries: AtomicU64,
    /// Calls that returned `Fatal`.
    pub failures: AtomicU64,
    /// Calls that panicked (retried like `Retry`).
    pub panics: AtomicU64,
    /// Calls that asked to be called again later ([`Action::RequeueAfter`]).
    pub requeues: AtomicU64,
    /// Notifications folded into one already queued for their key.
    pub coalesced: AtomicU64,
}

/// A registered handler's queue and delivery state.
#[doc(alias = "processorListener")]
pub struct Listener {
    id: u64,
    options: ListenerOptions,
    queue: Mutex<PendingQueue>,
    /// Wakes the task (see [`Doorbell`]).
    doorbell: Doorbell,
    resync: Mutex<Resync>,
    upstream_synced: Arc<dyn Fn() -> bool + Send + Sync>,
    stats: ListenerStats,
    /// Removed from its informer, or the informer stopped: nothing more is delivered.
    stopped: AtomicBool,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("id", &self.id).field("name", &self.options.name).finish()
    }
}

impl Listener {
    /// A listener with resolved `resync_period`; `upstream_synced` tells whether the
    /// informer has synced.
    pub fn new(
        id: u64,
        options: ListenerOptions,
        resync_period: Duration,
        upstream_synced: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Self {
        let resync =
            Resync { requested: options.resync_period, period: resync_period, next: Instant::now() + resync_period };
        let queue = Mutex::new(PendingQueue::new(options.keep_vanished));
        Self {
            id,
            options,
            queue,
            doorbell: Doorbell::default(),
            resync: Mutex::new(resync),
            upstream_synced,
            stats: ListenerStats::default(),
            stopped: AtomicBool::new(false),
        }
    }

    /// The registration id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The registration options.
    pub fn options(&self) -> &ListenerOptions {
        &self.options
    }

    /// Whether an object passes this listener's namespace and predicate filters.
    pub fn matches(&self, obj: &Object) -> bool {
        let ns_ok = match &self.options.namespaces {
            None => true,
            Some(set) => obj.namespace().is_some_and(|ns| set.contains(ns)),
        };
        ns_ok && self.options.filter.as_ref().is_none_or(|f| f(obj))
    }

    /// Applies the filter to a notification: updates crossing the filter's edge become adds
    /// or deletes.
    fn admit(&self, n: Notification) -> Option<Notification> {
        if self.options.namespaces.is_none() && self.options.filter.is_none() {
            return Some(n);
        }
        match n {
            Notification::Add { ref obj, .. } | Notification::Delete { ref obj, .. } => self.matches(obj).then_some(n),
            Notification::Update { old, new } => match (self.matches(&old), self.matches(&new)) {
                (true, true) => Some(Notification::Update { old, new }),
                (false, true) => Some(Notification::Add { obj: new, initial: false }),
                (true, false) => Some(Notification::Delete { obj: old, final_state_unknown: false }),
                (false, false) => None,
            },
        }
    }

    /// Queues a notification (never blocks on the handler).
    ///
    /// A key that the notification cancels out of the queue (an add waiting for its retry,
    /// then its delete) leaves it for good: its retry count goes with it, so the counts
    /// never outnumber the keys pending or in delivery.
    pub fn add(&self, n: Notification) {
        let Some(n) = self.admit(n) else { return };
        let mut queue = self.queue.lock();
        let coalesced = queue.push(n);
        drop(queue);
        if coalesced {
            self.stats.coalesced.fetch_add(1, Ordering::Relaxed);
            if let Some(observer) = &self.options.observer {
                observer.coalesced();
            }
        }
        self.doorbell.ring();
    }

    /// Keys with a retry count (bounded by the keys pending or in delivery).
    #[cfg(test)]
    pub(crate) fn retry_attempts_len(&self) -> usize {
        self.queue.lock().attempts_len()
    }

    /// Whether the informer has synced and every initial-list add queued to this listener
    /// has been delivered.
    pub fn has_synced(&self) -> bool {
        (self.upstream_synced)() && self.queue.lock().initial_outstanding() == 0
    }

    /// Whether the listener was removed from its informer or the informer stopped
    /// (the registration is then stopped, as client-go's informer reports `IsStopped`).
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Marks the listener stopped (removed, or its informer shut down).
    pub(crate) fn mark_stopped(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Entries pending (ready or waiting for a retry); at most one per key.
    pub fn queue_len(&self) -> usize {
        self.queue.lock().len()
    }

    /// Delivery counters.
    pub fn stats(&self) -> &ListenerStats {
        &self.stats
    }

    /// The requested resync period.
    pub fn requested_resync_period(&self) -> Duration {
        self.resync.lock().requested
    }

    /// The resolved resync period.
    pub fn resync_period(&self) -> Duration {
        self.resync.lock().period
    }

    /// Changes the resolved resync period (when the informer's check period changes).
    pub fn set_resync_period(&self, period: Duration) {
        let mut resync = self.resync.lock();
        resync.period = period;
        resync.next = Instant::now() + period;
    }

    /// Whether a resync is due at `now`; if so, schedules the next one.
    pub fn take_resync_if_due(&self, now: Instant) -> bool {
        let mut resync = self.resync.lock();
        if resync.period.is_zero() || now < resync.next {
            return false;
        }
        resync.next = now + resync.period;
        true
    }

    /// Delivers notifications to `handler` until `cancel` fires. The batch in progress when
    /// cancelled completes; what is still queued is dropped with the listener.
    pub async fn run(self: Arc<Self>, handler: Arc<dyn EventHandler>, cancel: CancellationToken) {
        // Registered once: an idle wait polls it, rather than registering and dropping a
        // waiter on the token each time (a lock round trip apiece).
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        // Whether a batch (or nothing yet) came last, rather than a wait. After a batch the
        // token is looked at before anything more is delivered (the batch in progress when
        // it fired completed; what is queued stays undelivered): here if an entry is ready,
        // or else first thing in the wait.
        let mut after_batch = true;
        // A batch's entries and what settles each, kept from batch to batch (emptied by each).
        let mut taken: Vec<Taken> = Vec::new();
        let mut entries: Vec<Vec<Notification>> = Vec::new();
        // Emptied entry vectors kept for the next batches (a few: a lone event needs one).
        let mut spare: Vec<Vec<Notification>> = Vec::new();
        loop {
            let retry_at = {
                let mut queue = self.queue.lock();
                queue.promote_due();
                if after_batch && queue.has_ready() && cancel.is_cancelled() {
                    return;
                }
                while taken.len() < MAX_BATCH {
                    let Some((entry, pending)) = queue.pop() else { break };
                    taken.push(entry);
                    let mut notifications = spare.pop().unwrap_or_default();
                    pending.push_into(&mut notifications);
                    entries.push(notifications);
                }
                queue.next_retry()
            };
            if taken.is_empty() {
                let stop = self.idle(cancelled.as_mut(), retry_at, after_batch).await;
                if stop {
                    return;
                }
                after_batch = false;
                continue;
            }
            after_batch = true;
            // A batch that panics as a whole (a handler's own `deliver_batch`): its first
            // notification is retried with backoff, the rest queued again unstarted.
            let at_once = std::panic::catch_unwind(AssertUnwindSafe(|| handler.deliver_now(&entries)));
            let delivered = match at_once {
                Ok(Some(results)) => Ok(results),
                Ok(None) => AssertUnwindSafe(handler.deliver_batch(&entries)).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            let mut results = match delivered {
                Ok(results) => results,
                Err(panic) => vec![vec![Err(HandlerError::Panicked(panic_message(&*panic)))]],
            };
            results.resize_with(entries.len(), Vec::new);
            // In reverse, so that entries put back in front of the queue keep their order.
            for ((taken, mut notifications), results) in taken.drain(..).zip(entries.drain(..)).zip(results).rev() {
                self.settle(taken, &mut notifications, results);
                if spare.len() < SPARE_ENTRIES {
                    notifications.clear();
                    spare.push(notifications);
                }
            }
            // A handler that delivers without suspending (at once, or on this thread) never
            // yields while the queue refills: tokio's cooperative budget makes the task
            // yield to its thread's other tasks every so many batches.
            tokio::task::coop::consume_budget().await;
        }
    }

    /// Waits, with nothing to deliver, for a ring of the doorbell or the next retry (false)
    /// or for `cancelled` (true).
    async fn idle(
        &self,
        mut cancelled: Pin<&mut WaitForCancellationFuture<'_>>,
        retry_at: Option<Instant>,
        after_batch: bool,
    ) -> bool {
        let mut sleep = std::pin::pin!(retry_at.map(tokio::time::sleep_until));
        let mut token_first = after_batch;
        std::future::poll_fn(|cx| {
            // Straight after a batch the token comes first (nothing queued since may
            // be delivered past a cancellation); later, a wake-up being a ring far
            // more often than not, the ring does.
            let token_first = std::mem::take(&mut token_first);
            if !token_first && self.doorbell.poll_rung(cx).is_ready() {
                return Poll::Ready(false);
            }
            if cancelled.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            if token_first && self.doorbell.poll_rung(cx).is_ready() {
                return Poll::Ready(false);
            }
            match sleep.as_mut().as_pin_mut().map(|sleep| sleep.poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(false),
                _ => Poll::Pending,
            }
        })
        .await
    }

    /// Accounts for one delivered (or partly delivered) entry: counters, retry, or requeue,
    /// the queue's part under one lock.
    fn settle(&self, taken: Taken, notifications: &mut Vec<Notification>, results: EntryResults) {
        let mut retry_from = None;
        let mut requeue = None;
        for (i, result) in results.iter().enumerate() {
            match result {
                Ok(action) => {
                    self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                    requeue = match (action, &notifications[i]) {
                        (
                            Action::RequeueAfter(delay),
                            Notification::Add { obj, .. } | Notification::Update { new: obj, .. },
                        ) => Some((obj.clone(), *delay)),
                        _ => None,
                    };
                }
                Err(HandlerError::Retry(reason)) => {
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(listener = %self.options.name, key = %taken.key(), %reason, "handler asked to retry");
                    retry_from = Some(i);
                    break;
                }
                Err(HandlerError::Panicked(panic)) => {
                    self.stats.panics.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(listener = %self.options.name, key = %taken.key(), %panic, "handler panicked; retrying the key");
                    retry_from = Some(i);
                    break;
                }
                Err(HandlerError::Fatal(reason)) => {
                    self.stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(listener = %self.options.name, key = %taken.key(), %reason, "handler failed; event dropped");
                }
            }
        }
        // Every call before a retry returned (or failed for good): the handler saw those.
        let handled = retry_from.unwrap_or(results.len());
        // One clock reading, taken only for a requeue or a retry.
        let mut now = None;
        let mut clock = || *now.get_or_insert_with(Instant::now);
        let arrived = taken.arrived();
        let mut queue = self.queue.lock();
        for n in &notifications[..handled] {
            queue.delivered(n);
        }
        if let Some((obj, delay)) = requeue {
            self.stats.requeues.fetch_add(1, Ordering::Relaxed);
            queue.requeue_at(obj, clock() + delay);
        }
        match retry_from {
            Some(i) => {
                let attempt = queue.attempt(&taken);
                let delay = self.options.retry.delay(attempt);
                queue.retry(taken, notifications.split_off(i), delay, clock());
            }
            None if results.len() < notifications.len() => {
                // The handler stopped its batch before this (part of the) entry.
                queue.requeue(taken, notifications.split_off(results.len()));
            }
            None => {
                queue.complete(taken);
                drop(queue);
                if let (Some(observer), Some(arrived)) = (&self.options.observer, arrived) {
                    observer.delivered(arrived.elapsed());
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "listener_tests.rs"]
mod tests;

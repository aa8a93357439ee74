//! Knowing when a consumer is done: synced (every listed object delivered to every listener)
//! and caught up (every listener has seen every object at its final resourceVersion).
//!
//! Listener queues coalesce (a slow listener gets the newest state of a key, not every
//! intermediate one), so "all events handled" is defined by state, not by a count: a
//! listener is done when it has been handed each Pod at the resourceVersion the server
//! ended with. The same check (one hash lookup by name per event) runs in every consumer —
//! wink's native handlers, wink's wasm plugins (in a wrapper around the plugin's handler),
//! kube-rs's stream consumer, and client-go's handler (in the Go program, which reports the
//! instants here: see [`client_go`](crate::client_go)) — so it costs them the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use parking_lot::RwLock;
use tokio::sync::watch;
use wink::informer::{EntryResults, EventHandler, HandlerResult, Notification, Object};

use crate::cluster::Targets;

/// The progress of one consumer run (all of its listeners).
#[derive(Debug)]
pub struct Progress {
    initial_left: AtomicUsize,
    synced_at: watch::Sender<Option<Instant>>,
    target: RwLock<Option<Targets>>,
    left: AtomicUsize,
    done_at: watch::Sender<Option<Instant>>,
    calls: AtomicU64,
}

impl Progress {
    /// Progress of `listeners` listeners over `objects` listed objects.
    pub fn new(objects: usize, listeners: usize) -> Arc<Self> {
        Arc::new(Self {
            initial_left: AtomicUsize::new(objects * listeners),
            synced_at: watch::Sender::new(None),
            target: RwLock::new(None),
            left: AtomicUsize::new(usize::MAX),
            done_at: watch::Sender::new(None),
            calls: AtomicU64::new(0),
        })
    }

    /// Sets the final state every listener must reach (each of `listeners` must see every
    /// name at its resourceVersion).
    pub fn expect(&self, targets: Targets, listeners: usize) {
        self.left.store(targets.len() * listeners, Ordering::SeqCst);
        *self.target.write() = Some(targets);
    }

    /// Records an initial-list object delivered to one listener.
    pub fn initial(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.initial_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.synced_at.send_replace(Some(Instant::now()));
        }
    }

    /// Records an object (by name and resourceVersion) delivered to one listener.
    pub fn seen(&self, name: &str, resource_version: &str) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let target = self.target.read();
        let Some(target) = target.as_ref() else { return };
        let Some(want) = target.get(name) else { return };
        if resource_version.parse::<u64>().ok() == Some(*want) && self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done_at.send_replace(Some(Instant::now()));
        }
    }

    /// Records that every listener received every listed object at `at` (a consumer in
    /// another process, which counts there).
    pub fn synced_at(&self, at: Instant) {
        self.synced_at.send_replace(Some(at));
    }

    /// Records that every listener reached the expected state at `at`, after `calls` handler
    /// calls (a consumer in another process, which counts there).
    pub fn done_at(&self, at: Instant, calls: u64) {
        self.calls.store(calls, Ordering::Relaxed);
        self.done_at.send_replace(Some(at));
    }

    /// Waits until every listener received every listed object; returns when that happened.
    pub async fn synced(&self) -> Instant {
        let mut rx = self.synced_at.subscribe();
        let at = rx.wait_for(Option::is_some).await.expect("the progress outlives its waiters");
        at.expect("waited for Some")
    }

    /// Waits until every listener reached the expected state; returns when that happened.
    pub async fn done(&self) -> Instant {
        let mut rx = self.done_at.subscribe();
        let at = rx.wait_for(Option::is_some).await.expect("the progress outlives its waiters");
        at.expect("waited for Some")
    }

    /// Handler calls (or stream events) counted so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

/// Wraps a handler: forwards every event, then records it in a [`Progress`].
pub struct Tracked {
    inner: Arc<dyn EventHandler>,
    progress: Arc<Progress>,
}

impl Tracked {
    /// `inner`, reporting to `progress`.
    pub fn new(inner: Arc<dyn EventHandler>, progress: Arc<Progress>) -> Arc<Self> {
        Arc::new(Self { inner, progress })
    }
}

#[async_trait]
impl EventHandler for Tracked {
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        self.inner.on_add(obj, is_initial_list).await?;
        if is_initial_list {
            self.progress.initial();
        } else {
            self.progress.seen(obj.name(), obj.resource_version());
        }
        wink::informer::DONE
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        self.inner.on_update(old, new).await?;
        self.progress.seen(new.name(), new.resource_version());
        wink::informer::DONE
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        self.inner.on_delete(obj, final_state_unknown).await
    }

    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        let results = self.inner.deliver_batch(batch).await;
        self.record(batch, &results);
        results
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let results = self.inner.deliver_now(batch)?;
        self.record(batch, &results);
        Some(results)
    }
}

impl Tracked {
    /// Records what a batch delivered.
    fn record(&self, batch: &[Vec<Notification>], results: &[EntryResults]) {
        for (entry, results) in batch.iter().zip(results) {
            for (notification, result) in entry.iter().zip(results) {
                if result.is_err() {
                    continue;
                }
                match notification {
                    Notification::Add { initial: true, .. } => self.progress.initial(),
                    Notification::Add { obj, .. } => self.progress.seen(obj.name(), obj.resource_version()),
                    Notification::Update { new, .. } => self.progress.seen(new.name(), new.resource_version()),
                    Notification::Delete { .. } => {}
                }
            }
        }
    }
}

/// The native handler doing the benchmarks' trivial work: read the object's name.
#[derive(Debug, Default)]
pub struct ReadName;

#[async_trait]
impl EventHandler for ReadName {
    async fn on_add(&self, obj: &Object, _is_initial_list: bool) -> HandlerResult {
        std::hint::black_box(obj.name().len());
        wink::informer::DONE
    }

    async fn on_update(&self, _old: &Object, new: &Object) -> HandlerResult {
        std::hint::black_box(new.name().len());
        wink::informer::DONE
    }

    async fn on_delete(&self, obj: &Object, _final_state_unknown: bool) -> HandlerResult {
        std::hint::black_box(obj.name().len());
        wink::informer::DONE
    }
}

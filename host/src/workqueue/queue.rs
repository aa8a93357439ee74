//! [`WorkQueue`]: client-go's `Typed` queue, its delaying queue and its rate-limiting queue
//! in one type.
//!
//! Three sets, as in client-go: `queue` (keys in the order they are handed out), `dirty`
//! (keys that need processing: queued, or added again while processing) and `processing`
//! (keys handed out and not yet done). A key is in `queue` at most once and never while it
//! is processed; [`done`](WorkQueue::done) queues it again if it was added meanwhile. Keys
//! added with a delay wait in `waiting` (the earliest time per key) and join the queue when
//! it comes, which a worker waiting in [`get`](WorkQueue::get) sees to: there is no
//! background task.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::rate_limiter::{RateLimiter, RateLimits};

/// Told how long keys wait and are processed: controller-runtime's
/// `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`.
pub trait QueueObserver: Send + Sync {
    /// A key was handed out after waiting `waited` in the queue (from its add).
    fn queued(&self, waited: Duration);
    /// A key's processing took `took` (from its hand-out to its `done`).
    fn worked(&self, took: Duration);
}

/// A queue's state at one moment, as controller-runtime's `workqueue_*` gauges and counters
/// report it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    /// Keys waiting to be handed out (`workqueue_depth`).
    pub depth: usize,
    /// Keys waiting for their delay to pass.
    pub waiting: usize,
    /// Keys being processed.
    pub processing: usize,
    /// Keys added, not counting adds of a key already waiting (`workqueue_adds_total`).
    pub adds: u64,
    /// Rate-limited adds: retries (`workqueue_retries_total`).
    pub retries: u64,
    /// How long the keys being processed have been, together
    /// (`workqueue_unfinished_work_seconds`).
    pub unfinished_work: Duration,
    /// How long the longest-running processing has been
    /// (`workqueue_longest_running_processor_seconds`).
    pub longest_running: Duration,
}

struct State<K> {
    queue: VecDeque<K>,
    /// Keys that need processing, with when they were added.
    dirty: HashMap<K, Instant>,
    /// Keys handed out, with when.
    processing: HashMap<K, Instant>,
    /// Keys added with a delay, by when they are due (then a sequence number, for order).
    waiting: BTreeMap<(Instant, u64), K>,
    /// When each waiting key is due: its entry in `waiting`.
    due: HashMap<K, (Instant, u64)>,
    sequence: u64,
    shutting_down: bool,
    adds: u64,
    retries: u64,
    limiter: RateLimiter<K>,
}

struct Shared<K> {
    state: Mutex<State<K>>,
    /// Wakes a worker waiting in `get`: a key was queued, an earlier delay was set, or the
    /// queue shuts down.
    wake: Notify,
    observer: Option<Arc<dyn QueueObserver>>,
}

/// A work queue of keys (see the module docs). Cheap to clone; clones share the queue.
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<K> std::fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue").finish_non_exhaustive()
    }
}

impl<K: Eq + Hash + Clone + Send + 'static> WorkQueue<K> {
    /// An empty queue whose retries wait as `limits` say.
    pub fn new(limits: RateLimits, observer: Option<Arc<dyn QueueObserver>>) -> Self {
        let state = State {
            queue: VecDeque::new(),
            dirty: HashMap::new(),
            processing: HashMap::new(),
            waiting: BTreeMap::new(),
            due: HashMap::new(),
            sequence: 0,
            shutting_down: false,
            adds: 0,
            retries: 0,
            limiter: RateLimiter::new(limits),
        };
        Self { shared: Arc::new(Shared { state: Mutex::new(state), wake: Notify::new(), observer }) }
    }

    /// Adds `key`: queued unless it already waits to be handed out; if it is being
    /// processed, queued again when that is done. Ignored once the queue shuts down.
    pub fn add(&self, key: K) {
        let mut state = self.shared.state.lock();
        if state.add(key, Instant::now()) {
            self.shared.wake.notify_one();
        }
    }

    /// Adds `key` once `delay` has passed (at once if it is zero). A key already waiting
    /// keeps the earlier of its two times.
    pub fn add_after(&self, key: K, delay: Duration) {
        let now = Instant::now();
        let mut state = self.shared.state.lock();
        if state.shutting_down {
            return;
        }
        if delay.is_zero() {
            if state.add(key, now) {
                self.shared.wake.notify_one();
            }
            return;
        }
        let at = now + delay;
        if let Some(&(due, sequence)) = state.due.get(&key) {
            if due <= at {
                return;
            }
            state.waiting.remove(&(due, sequence));
        }
        state.sequence += 1;
        let entry = (at, state.sequence);
        state.waiting.insert(entry, key.clone());
        state.due.insert(key, entry);
        // A worker asleep until a later time wakes to wait for this one instead.
        self.shared.wake.notify_one();
    }

    /// Adds `key` after the delay its rate limiter says (one more failure of it), counting
    /// a retry.
    pub fn add_rate_limited(&self, key: K) {
        let delay = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            state.retries += 1;
            state.limiter.when(&key, Instant::now())
        };
        self.add_after(key, delay);
    }

    /// Forgets `key`'s failures: its next rate-limited add waits the base delay. (It does
    /// not take the key out of the queue.)
    pub fn forget(&self, key: &K) {
        self.shared.state.lock().limiter.forget(key);
    }

    /// How many rate-limited adds `key` has had since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.shared.state.lock().limiter.num_requeues(key)
    }

    /// The next key to process, waiting for one; `None` once the queue shuts down and its
    /// queued keys are handed out. The caller must call [`done`](Self::done) with it.
    pub async fn get(&self) -> Option<K> {
        loop {
            let woken = self.shared.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let next_due = {
                let now = Instant::now();
                let mut state = self.shared.state.lock();
                state.promote_due(now);
                if let Some(key) = state.queue.pop_front() {
                    let added = state.dirty.remove(&key).unwrap_or(now);
                    state.processing.insert(key.clone(), now);
                    let more = !state.queue.is_empty() || !state.waiting.is_empty();
                    drop(state);
                    if more {
                        // Another worker may take the rest (or wait for what is due next).
                        self.shared.wake.notify_one();
                    }
                    if let Some(observer) = &self.shared.observer {
                        observer.queued(now.saturating_duration_since(added));
                    }
                    return Some(key);
                }
                if state.shutting_down {
                    drop(state);
                    self.shared.wake.notify_one();
                    return None;
                }
                state.waiting.keys().next().map(|(at, _)| *at)
            };
            match next_due {
                Some(at) => {
                    tokio::select! {
                        () = &mut woken => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Ends the processing of `key`: if it was added meanwhile, it is queued again.
    pub fn done(&self, key: &K) {
        let now = Instant::now();
        let mut state = self.shared.state.lock();
        let Some(started) = state.processing.remove(key) else { return };
        let again = state.dirty.contains_key(key);
        if again {
            state.queue.push_back(key.clone());
        }
        drop(state);
        if again {
            self.shared.wake.notify_one();
        }
        if let Some(observer) = &self.shared.observer {
            observer.worked(now.saturating_duration_since(started));
        }
    }

    /// Shuts the queue down: adds are ignored, delayed keys dropped; workers get the keys
    /// already queued, then `None`.
    pub fn shut_down(&self) {
        let mut state = self.shared.state.lock();
        state.shutting_down = true;
        state.waiting.clear();
        state.due.clear();
        drop(state);
        self.shared.wake.notify_waiters();
        self.shared.wake.notify_one();
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// Keys waiting to be handed out.
    pub fn len(&self) -> usize {
        self.shared.state.lock().queue.len()
    }

    /// Whether no key waits to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's state now.
    pub fn stats(&self) -> QueueStats {
        let now = Instant::now();
        let state = self.shared.state.lock();
        let running = state.processing.values().map(|started| now.saturating_duration_since(*started));
        let (unfinished_work, longest_running) =
            running.fold((Duration::ZERO, Duration::ZERO), |(sum, max), d| (sum + d, max.max(d)));
        QueueStats {
            depth: state.queue.len(),
            waiting: state.waiting.len(),
            processing: state.processing.len(),
            adds: state.adds,
            retries: state.retries,
            unfinished_work,
            longest_running,
        }
    }
}

impl<K: Eq + Hash + Clone> State<K> {
    /// client-go's `Add`: whether the key was queued (a worker should be woken).
    fn add(&mut self, key: K, now: Instant) -> bool {
        if self.shutting_down || self.dirty.contains_key(&key) {
            return false;
        }
        self.adds += 1;
        let processing = self.processing.contains_key(&key);
        if !processing {
            self.queue.push_back(key.clone());
        }
        self.dirty.insert(key, now);
        !processing
    }

    /// Adds the waiting keys that are due.
    fn promote_due(&mut self, now: Instant) {
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            self.due.remove(&key);
            self.add(key, now);
        }
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;

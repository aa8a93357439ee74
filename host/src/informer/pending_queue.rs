//! A listener's queue: bounded by key, coalescing, in key order.
//!
//! client-go gives each listener an unbounded ring buffer: a handler that stalls makes its
//! buffer grow with every event. wink holds **at most one pending entry per key** instead,
//! folding a new notification into the one already waiting:
//!
//! | pending            | + new          | = pending                       |
//! |--------------------|----------------|---------------------------------|
//! | add(a)             | update(_, b)   | add(b)                          |
//! | add(a)             | delete(d)      | nothing: the handler never saw it (†) |
//! | update(o, _)       | update(_, b)   | update(o, b)                    |
//! | update(o, _)       | delete(d)      | delete(d)                       |
//! | delete(d)          | add(a)         | delete(d) then add(a)           |
//! | delete(d) then add | update(_, b)   | delete(d) then add(b)           |
//!
//! (†) For a listener that keeps vanished objects (`ListenerOptions::keep_vanished`: a
//! reconciler's key mapper), delete(d): the object's owner may have to act on it.
//!
//! So a stalled handler costs at most one entry per cached object, and when it resumes it
//! sees the newest state of each key; per key, notifications are never reordered (an entry
//! keeps its place in the queue when it absorbs a newer notification). A "delete then add"
//! entry is one entry delivered as two calls, so a re-created object is never mistaken for
//! an update of the one that was deleted.
//!
//! Entries that failed with a retryable error wait in a delay set (still one per key, still
//! absorbing newer notifications) until their backoff expires. Keys whose handler asked to
//! be called again later (a requeue) wait in a second delay set, apart from pending entries:
//! when the time comes and nothing is pending for the key, the last object delivered is
//! delivered again, as an update from itself to itself.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use hashlink::LinkedHashMap;
use tokio::time::Instant;

use super::handler::Notification;
use super::object::Object;

/// What is pending for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    /// One notification.
    One(Notification),
    /// A delete the handler has not seen, then a re-creation of the key.
    DeleteThenAdd {
        /// The deleted object.
        deleted: Object,
        /// Whether that delete was inferred on relist.
        final_state_unknown: bool,
        /// The re-created object.
        added: Object,
        /// Whether the add is part of an initial list.
        initial: bool,
    },
}

impl Pending {
    /// Whether this entry carries an initial-list add (counted for `has_synced`).
    pub fn is_initial(&self) -> bool {
        matches!(self, Self::One(Notification::Add { initial: true, .. }) | Self::DeleteThenAdd { initial: true, .. })
    }

    /// Folds a newer notification for the same key into this entry; `None` means nothing is
    /// left to deliver.
    pub fn coalesce(self, next: Notification) -> Option<Self> {
        self.coalesce_keeping(next, false)
    }

    /// [`coalesce`](Self::coalesce), where `keep_vanished` says an add then a delete leave the
    /// delete (see the module docs).
    pub fn coalesce_keeping(self, next: Notification, keep_vanished: bool) -> Option<Self> {
        use Notification::{Add, Delete, Update};
        Some(match (self, next) {
            (Self::One(Add { initial, .. }), Add { obj, initial: i2 }) => {
                Self::One(Add { obj, initial: initial || i2 })
            }
            (Self::One(Add { initial, .. }), Update { new, .. }) => Self::One(Add { obj: new, initial }),
            (Self::One(Add { .. }), delete @ Delete { .. }) if keep_vanished => Self::One(delete),
            (Self::One(Add { .. }), Delete { .. }) => return None,
            (Self::One(Update { old, .. }), Update { new, .. } | Add { obj: new, .. }) => {
                Self::One(Update { old, new })
            }
            (Self::One(Update { .. }), delete @ Delete { .. }) => Self::One(delete),
            (Self::One(Delete { obj, final_state_unknown }), Add { obj: added, initial }) => {
                Self::DeleteThenAdd { deleted: obj, final_state_unknown, added, initial }
            }
            (Self::One(Delete { obj, final_state_unknown }), Update { new, .. }) => {
                Self::DeleteThenAdd { deleted: obj, final_state_unknown, added: new, initial: false }
            }
            (Self::One(Delete { obj, final_state_unknown: false }), Delete { final_state_unknown: true, .. }) => {
                // A real delete carries more than a later tombstone.
                Self::One(Delete { obj, final_state_unknown: false })
            }
            (Self::One(Delete { .. }), delete @ Delete { .. }) => Self::One(delete),
            (
                Self::DeleteThenAdd { deleted, final_state_unknown, initial, .. },
                Add { obj, .. } | Update { new: obj, .. },
            ) => Self::DeleteThenAdd { deleted, final_state_unknown, added: obj, initial },
            (Self::DeleteThenAdd { deleted, final_state_unknown, .. }, Delete { .. }) => {
                // The re-created object was never delivered; the handler still holds `deleted`.
                Self::One(Delete { obj: deleted, final_state_unknown })
            }
        })
    }

    /// The calls this entry makes, in order.
    pub fn into_notifications(self) -> Vec<Notification> {
        let mut out = Vec::with_capacity(2);
        self.push_into(&mut out);
        out
    }

    /// Appends the calls this entry makes to `out`, in order.
    pub fn push_into(self, out: &mut Vec<Notification>) {
        match self {
            Self::One(n) => out.push(n),
            Self::DeleteThenAdd { deleted, final_state_unknown, added, initial } => {
                out.push(Notification::Delete { obj: deleted, final_state_unknown });
                out.push(Notification::Add { obj: added, initial });
            }
        }
    }

    /// Rebuilds an entry from notifications not yet delivered.
    pub fn from_notifications(notifications: impl IntoIterator<Item = Notification>) -> Option<Self> {
        let mut out: Option<Self> = None;
        for n in notifications {
            out = match out {
                None => Some(Self::One(n)),
                Some(p) => p.coalesce(n),
            };
        }
        out
    }
}

/// A queued entry: what it delivers, and when its oldest undelivered notification arrived
/// (for the delivery lag; `None` for a requeue's redelivery, which nothing awaited). Arrivals
/// are read off `quanta`'s clock (the TSC where it is invariant: a third of a system clock
/// reading's cost, paid by every event), not tokio's: they time a metric, never a wait.
#[derive(Debug)]
struct Entry {
    pending: Pending,
    arrived: Option<quanta::Instant>,
}

/// What settles a popped entry ([`PendingQueue::complete`], [`retry`](PendingQueue::retry)
/// or [`requeue`](PendingQueue::requeue)): its key, whether it counted as an initial-list
/// add, and its arrival.
#[derive(Debug)]
pub struct Taken {
    key: Arc<str>,
    initial: bool,
    arrived: Option<quanta::Instant>,
}

impl Taken {
    /// The entry's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// When its oldest undelivered notification arrived.
    pub fn arrived(&self) -> Option<quanta::Instant> {
        self.arrived
    }
}

/// Keeps the count of initial-list adds outstanding as an entry that was one (`before`)
/// becomes `after` (nothing: it left the queue).
fn recount(initial: &mut usize, before: bool, after: Option<&Pending>) {
    *initial -= usize::from(before);
    *initial += usize::from(after.is_some_and(Pending::is_initial));
}

/// The earlier of two arrivals, either perhaps unknown.
fn earliest(a: Option<quanta::Instant>, b: Option<quanta::Instant>) -> Option<quanta::Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Pending entries by key, in FIFO order of keys, plus entries waiting to be retried, and
/// the retry count of each key retried since it was last delivered.
#[derive(Debug, Default)]
pub struct PendingQueue {
    ready: LinkedHashMap<Arc<str>, Entry>,
    delayed: foldhash::HashMap<Arc<str>, (Entry, Instant, u64)>,
    timers: BTreeSet<(Instant, u64, Arc<str>)>,
    /// Keys a handler asked to see again ([`Action::RequeueAfter`]): the object last
    /// delivered, and when.
    ///
    /// [`Action::RequeueAfter`]: super::handler::Action::RequeueAfter
    requeues: foldhash::HashMap<Arc<str>, (Object, Instant, u64)>,
    requeue_timers: BTreeSet<(Instant, u64, Arc<str>)>,
    /// Retries of each key since it was last delivered (bounded by the keys pending or in
    /// delivery: a key that leaves the queue for good takes its count with it).
    attempts: foldhash::HashMap<Arc<str>, u32>,
    next_seq: u64,
    initial: usize,
    /// An add then a delete leave the delete (see the module docs).
    keep_vanished: bool,
}

impl PendingQueue {
    /// An empty queue; `keep_vanished` as `ListenerOptions::keep_vanished` says.
    pub fn new(keep_vanished: bool) -> Self {
        Self { keep_vanished, ..Self::default() }
    }

    /// Adds a notification, folding it into the key's pending entry if there is one; returns
    /// whether it was folded (coalesced) into one. A key the notification cancels out of the
    /// queue (an add waiting for its retry, then its delete) leaves it with its retry count.
    pub fn push(&mut self, n: Notification) -> bool {
        // The object's own key, shared: queueing it copies no string.
        let key = n.object().shared_key();
        // Looked up only when not empty (a lookup hashes the key even in an empty map).
        if !self.delayed.is_empty()
            && let Some((entry, at, seq)) = self.delayed.remove(&key)
        {
            let before_initial = entry.pending.is_initial();
            let merged = entry.pending.coalesce_keeping(n, self.keep_vanished);
            recount(&mut self.initial, before_initial, merged.as_ref());
            match merged {
                Some(pending) => {
                    self.delayed.insert(key, (Entry { pending, arrived: entry.arrived }, at, seq));
                }
                None => {
                    self.timers.remove(&(at, seq, key.clone()));
                    self.forget_attempts(&key);
                }
            }
            return true;
        }
        if let Some(entry) = self.ready.get_mut(&key) {
            let before_initial = entry.pending.is_initial();
            let merged = entry.pending.clone().coalesce_keeping(n, self.keep_vanished);
            recount(&mut self.initial, before_initial, merged.as_ref());
            match merged {
                Some(pending) => entry.pending = pending,
                None => {
                    self.ready.remove(&key);
                    self.forget_attempts(&key);
                }
            }
            return true;
        }
        let pending = Pending::One(n);
        self.initial += usize::from(pending.is_initial());
        self.ready.insert(key, Entry { pending, arrived: Some(quanta::Instant::now()) });
        false
    }

    /// Counts one more retry of a popped entry's key; returns how many it has had since it
    /// was last delivered.
    pub fn attempt(&mut self, taken: &Taken) -> u32 {
        let count = self.attempts.entry(taken.key.clone()).or_default();
        *count += 1;
        *count
    }

    fn forget_attempts(&mut self, key: &str) {
        if !self.attempts.is_empty() {
            self.attempts.remove(key);
        }
    }

    /// Keys with a retry count.
    #[cfg(test)]
    pub fn attempts_len(&self) -> usize {
        self.attempts.len()
    }

    /// Asks for `obj` (just delivered) to be delivered again at `at`, as an update from
    /// itself to itself, unless an entry for its key is pending by then (which delivers a
    /// newer state anyway). A request already waiting for the key keeps the earlier time.
    pub fn requeue_at(&mut self, obj: Object, at: Instant) {
        let key = obj.shared_key();
        if let Some((_, earlier, seq)) = self.requeues.get(&key) {
            if *earlier <= at {
                let (earlier, seq) = (*earlier, *seq);
                self.requeues.insert(key, (obj, earlier, seq));
                return;
            }
            self.requeue_timers.remove(&(*earlier, *seq, key.clone()));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.requeue_timers.insert((at, seq, key.clone()));
        self.requeues.insert(key, (obj, at, seq));
    }

    /// Records that a notification was delivered: a waiting requeue of its key will carry
    /// this newer state, or is cancelled when the object was deleted.
    pub fn delivered(&mut self, n: &Notification) {
        if self.requeues.is_empty() {
            return;
        }
        let Some((obj, at, seq)) = self.requeues.remove(n.key()) else { return };
        match n {
            Notification::Delete { .. } => {
                self.requeue_timers.remove(&(at, seq, obj.shared_key()));
            }
            Notification::Add { obj: newer, .. } | Notification::Update { new: newer, .. } => {
                self.requeues.insert(obj.shared_key(), (newer.clone(), at, seq));
            }
        }
    }

    /// Keys waiting to be requeued.
    #[cfg(test)]
    pub fn requeues_len(&self) -> usize {
        self.requeues.len()
    }

    /// [`promote`](Self::promote) as of now; reads the clock only if a retry or requeue
    /// waits.
    pub fn promote_due(&mut self) {
        if !self.timers.is_empty() || !self.requeue_timers.is_empty() {
            self.promote(Instant::now());
        }
    }

    /// Moves entries whose retry time has come into the ready queue, and delivers due
    /// requeues whose key has nothing pending.
    pub fn promote(&mut self, now: Instant) {
        while let Some((at, _, key)) = self.requeue_timers.first().cloned() {
            if at > now {
                break;
            }
            self.requeue_timers.pop_first();
            let Some((obj, _, _)) = self.requeues.remove(&key) else { continue };
            if !self.contains(&key) {
                let pending = Pending::One(Notification::Update { old: obj.clone(), new: obj });
                recount(&mut self.initial, false, Some(&pending));
                self.ready.insert(key, Entry { pending, arrived: None });
            }
        }
        while let Some((at, seq, key)) = self.timers.first().cloned() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some((entry, _, s)) = self.delayed.remove(&key) {
                debug_assert_eq!(s, seq);
                self.ready.insert(key, entry);
            }
        }
    }

    /// Whether an entry is ready to be taken.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the oldest ready entry: what settles it, and what it delivers. It still counts
    /// towards [`initial_outstanding`] until it is settled.
    ///
    /// [`initial_outstanding`]: Self::initial_outstanding
    pub fn pop(&mut self) -> Option<(Taken, Pending)> {
        let (key, entry) = self.ready.pop_front()?;
        // Give back the memory of a large burst (an initial list) once it has drained.
        if self.ready.is_empty() && self.ready.capacity() > 1024 {
            self.ready.shrink_to_fit();
        }
        let taken = Taken { key, initial: entry.pending.is_initial(), arrived: entry.arrived };
        Some((taken, entry.pending))
    }

    /// Settles a popped entry as done (delivered, or dropped after a fatal error): its key's
    /// retry count goes.
    pub fn complete(&mut self, taken: Taken) {
        self.initial -= usize::from(taken.initial);
        self.forget_attempts(&taken.key);
    }

    /// Puts the undelivered remainder of a popped entry back, to be retried after `delay`,
    /// merged with whatever arrived for the key meanwhile (which is newer, so it comes last).
    /// Returns false when nothing is left to retry (e.g. an add whose delete arrived); the
    /// key's retry count then goes.
    pub fn retry(&mut self, taken: Taken, remainder: Vec<Notification>, delay: Duration, now: Instant) -> bool {
        let Some(entry) = self.merge_back(&taken, remainder) else {
            self.forget_attempts(&taken.key);
            return false;
        };
        let at = now + delay;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.timers.insert((at, seq, taken.key.clone()));
        self.delayed.insert(taken.key, (entry, at, seq));
        true
    }

    /// Puts the undelivered remainder of a popped entry back at the **front** of the ready
    /// queue (the handler stopped its batch before getting to it), merged with whatever
    /// arrived for the key meanwhile. Call it for the entries of one batch in reverse order
    /// to keep their order.
    pub fn requeue(&mut self, taken: Taken, remainder: Vec<Notification>) {
        if let Some(entry) = self.merge_back(&taken, remainder) {
            self.ready.insert(taken.key.clone(), entry);
            self.ready.to_front(&taken.key);
        }
    }

    /// A popped entry's remainder followed by whatever was queued for its key since (taken
    /// out of the ready queue), as one entry from the earlier arrival; `None` if they cancel.
    fn merge_back(&mut self, taken: &Taken, remainder: Vec<Notification>) -> Option<Entry> {
        self.initial -= usize::from(taken.initial);
        let mut notifications = remainder;
        let mut arrived = taken.arrived;
        if let Some(newer) = self.ready.remove(&taken.key) {
            self.initial -= usize::from(newer.pending.is_initial());
            notifications.extend(newer.pending.into_notifications());
            arrived = earliest(arrived, newer.arrived);
        }
        let pending = Pending::from_notifications(notifications)?;
        self.initial += usize::from(pending.is_initial());
        Some(Entry { pending, arrived })
    }

    /// Whether an entry for `key` is pending (ready or waiting for a retry).
    pub fn contains(&self, key: &str) -> bool {
        self.ready.contains_key(key) || self.delayed.contains_key(key)
    }

    /// When the earliest delayed entry becomes ready.
    pub fn next_retry(&self) -> Option<Instant> {
        let retry = self.timers.first().map(|(at, _, _)| *at);
        let requeue = self.requeue_timers.first().map(|(at, _, _)| *at);
        retry.into_iter().chain(requeue).min()
    }

    /// All entries, ready or waiting to be retried (the queue's memory is bounded by this,
    /// which never exceeds the number of distinct keys).
    pub fn len(&self) -> usize {
        self.ready.len() + self.delayed.len()
    }

    /// Whether nothing is pending.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Initial-list adds not yet delivered (including one being delivered).
    pub fn initial_outstanding(&self) -> usize {
        self.initial
    }
}

#[cfg(test)]
#[path = "pending_queue_tests.rs"]
mod tests;

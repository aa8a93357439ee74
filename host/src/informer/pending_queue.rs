//! A listener's queue: bounded by key, coalescing, in key order.
//!
//! client-go gives each listener an unbounded ring buffer: a handler that stalls makes its
//! buffer grow with every event. wink holds **at most one pending entry per key** instead,
//! folding a new notification into the one already waiting:
//!
//! | pending            | + new          | = pending                       |
//! |--------------------|----------------|---------------------------------|
//! | add(a)             | update(_, b)   | add(b)                          |
//! | add(a)             | delete         | nothing: the handler never saw it |
//! | update(o, _)       | update(_, b)   | update(o, b)                    |
//! | update(o, _)       | delete(d)      | delete(d)                       |
//! | delete(d)          | add(a)         | delete(d) then add(a)           |
//! | delete(d) then add | update(_, b)   | delete(d) then add(b)           |
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
        use Notification::{Add, Delete, Update};
        Some(match (self, next) {
            (Self::One(Add { initial, .. }), Add { obj, initial: i2 }) => {
                Self::One(Add { obj, initial: initial || i2 })
            }
            (Self::One(Add { initial, .. }), Update { new, .. }) => Self::One(Add { obj: new, initial }),
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
        match self {
            Self::One(n) => vec![n],
            Self::DeleteThenAdd { deleted, final_state_unknown, added, initial } => vec![
                Notification::Delete { obj: deleted, final_state_unknown },
                Notification::Add { obj: added, initial },
            ],
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

/// Pending entries by key, in FIFO order of keys, plus entries waiting to be retried.
#[derive(Debug, Default)]
pub struct PendingQueue {
    ready: LinkedHashMap<String, Pending>,
    delayed: foldhash::HashMap<String, (Pending, Instant, u64)>,
    timers: BTreeSet<(Instant, u64, String)>,
    /// Keys a handler asked to see again ([`Action::RequeueAfter`]): the object last
    /// delivered, and when.
    ///
    /// [`Action::RequeueAfter`]: super::handler::Action::RequeueAfter
    requeues: foldhash::HashMap<String, (Object, Instant, u64)>,
    requeue_timers: BTreeSet<(Instant, u64, String)>,
    /// When each queued key's oldest undelivered notification arrived (for the delivery lag).
    arrivals: foldhash::HashMap<String, Instant>,
    next_seq: u64,
    initial: usize,
}

impl PendingQueue {
    fn account(&mut self, before: Option<&Pending>, after: Option<&Pending>) {
        self.initial -= usize::from(before.is_some_and(Pending::is_initial));
        self.initial += usize::from(after.is_some_and(Pending::is_initial));
    }

    /// Adds a notification, folding it into the key's pending entry if there is one; returns
    /// whether it was folded (coalesced) into one.
    pub fn push(&mut self, n: Notification) -> bool {
        let key = n.key().to_owned();
        // Looked up only when not empty (a lookup hashes the key even in an empty map).
        if !self.delayed.is_empty()
            && let Some((pending, at, seq)) = self.delayed.remove(&key)
        {
            let merged = pending.clone().coalesce(n);
            self.account(Some(&pending), merged.as_ref());
            match merged {
                Some(merged) => {
                    self.delayed.insert(key, (merged, at, seq));
                }
                None => {
                    self.timers.remove(&(at, seq, key.clone()));
                    self.arrivals.remove(&key);
                }
            }
            return true;
        }
        match self.ready.get(&key).cloned() {
            Some(before) => {
                let merged = before.clone().coalesce(n);
                self.account(Some(&before), merged.as_ref());
                match merged {
                    Some(merged) => {
                        if let Some(slot) = self.ready.get_mut(&key) {
                            *slot = merged;
                        }
                    }
                    None => {
                        self.ready.remove(&key);
                        self.arrivals.remove(&key);
                    }
                }
                true
            }
            None => {
                let pending = Pending::One(n);
                self.account(None, Some(&pending));
                self.arrivals.entry(key.clone()).or_insert_with(Instant::now);
                self.ready.insert(key, pending);
                false
            }
        }
    }

    /// When the oldest undelivered notification of a just popped key arrived (taken: the
    /// key's next notification starts a new count).
    pub fn take_arrival(&mut self, key: &str) -> Option<Instant> {
        self.arrivals.remove(key)
    }

    /// Gives a key put back (retried, or requeued in front) its original arrival, unless a
    /// notification queued since is older.
    pub fn restore_arrival(&mut self, key: &str, arrived: Instant) {
        if self.contains(key) {
            let slot = self.arrivals.entry(key.to_owned()).or_insert(arrived);
            *slot = (*slot).min(arrived);
        }
    }

    /// Asks for `obj` (just delivered) to be delivered again at `at`, as an update from
    /// itself to itself, unless an entry for its key is pending by then (which delivers a
    /// newer state anyway). A request already waiting for the key keeps the earlier time.
    pub fn requeue_at(&mut self, obj: Object, at: Instant) {
        let key = obj.key().to_owned();
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
                self.requeue_timers.remove(&(at, seq, obj.key().to_owned()));
            }
            Notification::Add { obj: newer, .. } | Notification::Update { new: newer, .. } => {
                self.requeues.insert(obj.key().to_owned(), (newer.clone(), at, seq));
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
                self.account(None, Some(&pending));
                self.ready.insert(key, pending);
            }
        }
        while let Some((at, seq, key)) = self.timers.first().cloned() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some((pending, _, s)) = self.delayed.remove(&key) {
                debug_assert_eq!(s, seq);
                self.ready.insert(key, pending);
            }
        }
    }

    /// Whether an entry is ready to be taken.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the oldest ready entry. It still counts towards [`initial_outstanding`]
    /// until [`complete`](Self::complete) or [`retry`](Self::retry).
    ///
    /// [`initial_outstanding`]: Self::initial_outstanding
    pub fn pop(&mut self) -> Option<(String, Pending)> {
        let entry = self.ready.pop_front();
        // Give back the memory of a large burst (an initial list) once it has drained.
        if self.ready.is_empty() && self.ready.capacity() > 1024 {
            self.ready.shrink_to_fit();
        }
        entry
    }

    /// Marks a popped entry as done (delivered, or dropped after a fatal error).
    pub fn complete(&mut self, popped: &Pending) {
        self.account(Some(popped), None);
    }

    /// Puts the undelivered remainder of a popped entry back, to be retried after `delay`,
    /// merged with whatever arrived for the key meanwhile (which is newer, so it comes last).
    /// Returns false when nothing is left to retry (e.g. an add whose delete arrived).
    pub fn retry(
        &mut self,
        key: String,
        popped: &Pending,
        remainder: Vec<Notification>,
        delay: Duration,
        now: Instant,
    ) -> bool {
        self.account(Some(popped), None);
        let mut notifications = remainder;
        if let Some(newer) = self.ready.remove(&key) {
            self.account(Some(&newer), None);
            notifications.extend(newer.into_notifications());
        }
        let Some(merged) = Pending::from_notifications(notifications) else {
            self.arrivals.remove(&key);
            return false;
        };
        self.account(None, Some(&merged));
        let at = now + delay;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.timers.insert((at, seq, key.clone()));
        self.delayed.insert(key, (merged, at, seq));
        true
    }

    /// Puts the undelivered remainder of a popped entry back at the **front** of the ready
    /// queue (the handler stopped its batch before getting to it), merged with whatever
    /// arrived for the key meanwhile. Call it for the entries of one batch in reverse order
    /// to keep their order.
    pub fn requeue(&mut self, key: String, popped: &Pending, remainder: Vec<Notification>) {
        self.account(Some(popped), None);
        let mut notifications = remainder;
        if let Some(newer) = self.ready.remove(&key) {
            self.account(Some(&newer), None);
            notifications.extend(newer.into_notifications());
        }
        let Some(merged) = Pending::from_notifications(notifications) else {
            self.arrivals.remove(&key);
            return;
        };
        self.account(None, Some(&merged));
        self.ready.insert(key.clone(), merged);
        self.ready.to_front(&key);
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

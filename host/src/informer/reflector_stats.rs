//! What a reflector did, counted for `/metrics`: lists (the first and every relist), watches
//! opened, list/watch errors, events received, and when the last one arrived.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Shared counters of one reflector (cheap to clone; the informer keeps one).
#[derive(Clone, Debug, Default)]
pub struct ReflectorStats(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    lists: AtomicU64,
    watches: AtomicU64,
    errors: AtomicU64,
    events: AtomicU64,
    /// Milliseconds since the Unix epoch of the last event (0: none yet).
    last_event_ms: AtomicU64,
}

/// A snapshot of [`ReflectorStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReflectorCounts {
    /// Completed lists (or streaming lists): the first one and every relist.
    pub lists: u64,
    /// Watches opened.
    pub watches: u64,
    /// List and watch failures (each one the watch error handler saw).
    pub errors: u64,
    /// Watch events received (added, modified, deleted, bookmarks).
    pub events: u64,
    /// When the last event arrived, in milliseconds since the Unix epoch (0: none yet).
    pub last_event_ms: u64,
}

impl ReflectorStats {
    pub(crate) fn listed(&self) {
        self.0.lists.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn watched(&self) {
        self.0.watches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) {
        self.0.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn event(&self) {
        self.0.events.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        self.0.last_event_ms.store(now, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn counts(&self) -> ReflectorCounts {
        ReflectorCounts {
            lists: self.0.lists.load(Ordering::Relaxed),
            watches: self.0.watches.load(Ordering::Relaxed),
            errors: self.0.errors.load(Ordering::Relaxed),
            events: self.0.events.load(Ordering::Relaxed),
            last_event_ms: self.0.last_event_ms.load(Ordering::Relaxed),
        }
    }
}

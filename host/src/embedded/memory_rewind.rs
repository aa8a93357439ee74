//! Rewinding a [`MemorySource`] to an earlier resourceVersion and replaying what was undone:
//! one recorded stream of changes served many times, each time as if freshly written.
//!
//! A benchmark that measures a consumer catching up on a long watch writes its changes while
//! the consumer's watch waits; writing them (every write through the API server's rules)
//! costs far more than consuming them. Rewinding puts the store back to the state before
//! those writes — objects, history and the cluster's revision — and keeps the undone changes;
//! replaying records them again, with their original resourceVersions and objects, so the next
//! consumer lists and watches exactly what the first one did.
//!
//! Both are refused when they would break the revision every store of a cluster shares: a
//! rewind only undoes the cluster's latest writes (no other store wrote after them), and a
//! replay only follows the version it was recorded after. Open watches are ended by a
//! rewind, as by a restarted server (a client relists).

use super::memory::{Change, MemorySource};
use crate::informer::Object;

/// Changes undone by [`MemorySource::rewind`], in order, to be recorded again by
/// [`MemorySource::replay`].
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// The resourceVersion the changes follow.
    after: u64,
    changes: Vec<(u64, Change)>,
}

impl Recorded {
    /// The number of changes.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Each change's resourceVersion and the object it wrote (or, for a deletion, removed).
    pub fn objects(&self) -> impl Iterator<Item = (u64, &Object)> {
        self.changes.iter().map(|(rv, change)| match change {
            Change::Added(object) | Change::Modified { object, .. } | Change::Deleted { object, .. } => (*rv, object),
        })
    }

    /// The changes in parts of at most `size` (at least 1), in order: replaying the parts one
    /// after another records what replaying the whole would, so a consumer can be served
    /// the changes at a pace.
    pub fn into_parts(self, size: usize) -> Vec<Recorded> {
        let size = size.max(1);
        let mut parts = Vec::with_capacity(self.changes.len().div_ceil(size));
        let mut after = self.after;
        let mut changes = self.changes.into_iter().peekable();
        while changes.peek().is_some() {
            let part: Vec<(u64, Change)> = changes.by_ref().take(size).collect();
            let next = part.last().map_or(after, |(rv, _)| *rv);
            parts.push(Recorded { after, changes: part });
            after = next;
        }
        parts
    }
}

/// Why a rewind or replay was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RewindError {
    /// The changes after this version are no longer all in the history.
    #[error("cannot rewind to {to}: the history only reaches back to {oldest}")]
    Compacted {
        /// The version asked for.
        to: u64,
        /// The oldest version the history can return to.
        oldest: u64,
    },
    /// Another store of the cluster wrote after this one's last change.
    #[error("cannot rewind to {to}: the cluster's revision ({revision}) is past this store's last change ({last})")]
    NotLatest {
        /// The version asked for.
        to: u64,
        /// The cluster's revision.
        revision: u64,
        /// This store's last change.
        last: u64,
    },
    /// The cluster is no longer at the version the changes were recorded after.
    #[error("cannot replay changes recorded after {after}: the cluster's revision is {revision}")]
    Moved {
        /// The version the changes follow.
        after: u64,
        /// The cluster's revision.
        revision: u64,
    },
}

impl MemorySource {
    /// Undoes every change after resourceVersion `to` and returns them: the objects are back
    /// in their state at `to`, the history ends at `to`, the cluster's revision is `to`, open
    /// watches end and continue tokens expire.
    pub fn rewind(&self, to: u64) -> Result<Recorded, RewindError> {
        let mut inner = self.inner.lock();
        let revision = self.options.revision.current();
        let last = inner.history.back().map_or(inner.oldest_watchable, |(rv, _)| *rv);
        if to >= revision {
            return Ok(Recorded { after: revision, changes: Vec::new() });
        }
        if last != revision {
            return Err(RewindError::NotLatest { to, revision, last });
        }
        if to < inner.oldest_watchable {
            return Err(RewindError::Compacted { to, oldest: inner.oldest_watchable });
        }
        inner.objects = inner.state_at(to);
        let at = inner.history.partition_point(|(rv, _)| *rv <= to);
        let changes = inner.history.split_off(at).into();
        inner.watchers.clear();
        inner.snapshots.clear();
        self.options.revision.set(to);
        Ok(Recorded { after: to, changes })
    }

    /// Records `changes` again, as when they were first written: each reaches the objects,
    /// the history and every open watch, and the cluster's revision ends at the last one.
    pub fn replay(&self, recorded: &Recorded) -> Result<(), RewindError> {
        let mut inner = self.inner.lock();
        let revision = self.options.revision.current();
        if revision != recorded.after {
            return Err(RewindError::Moved { after: recorded.after, revision });
        }
        for (rv, change) in &recorded.changes {
            match change {
                Change::Added(object) | Change::Modified { object, .. } => {
                    inner.objects.insert(object.key().to_owned(), object.clone());
                }
                Change::Deleted { object, .. } => {
                    inner.objects.remove(object.key());
                }
            }
            inner.record(*rv, change.clone(), self.options.history_limit);
            self.options.revision.set(*rv);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "memory_rewind_tests.rs"]
mod tests;

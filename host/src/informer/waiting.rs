//! How many listeners have notifications queued that their task has not taken yet: a
//! process-wide, lock-free view of the delivery backlog ([`listeners_waiting`]).
//!
//! A handler that may run a short call on the executor thread it is delivered on asks it
//! before holding that thread: with nothing else waiting, the call runs there and wakes no
//! other thread; with other listeners waiting, their deliveries would queue behind the call,
//! so the thread's work is handed over first (see `GuestPool::try_run_here`).
//!
//! Each listener holds a [`WaitingMark`], set when a notification is queued and cleared when
//! its task takes what is queued; the count moves only when a mark flips, so it never drifts,
//! and a listener dropped while marked takes its mark with it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Listeners with notifications their task has not taken yet, process-wide.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// How many listeners have notifications queued that their task has not taken yet.
pub fn listeners_waiting() -> usize {
    WAITING.load(Ordering::Relaxed)
}

/// The count behind [`listeners_waiting`], for code that reads a count it was given (tests
/// give their own).
pub(crate) fn process_count() -> &'static AtomicUsize {
    &WAITING
}

/// One listener's part in a count of waiting listeners ([`listeners_waiting`] by default).
pub(crate) struct WaitingMark {
    set: AtomicBool,
    count: &'static AtomicUsize,
}

impl Default for WaitingMark {
    fn default() -> Self {
        Self::counted_in(&WAITING)
    }
}

impl WaitingMark {
    /// A mark counted in `count`.
    pub(crate) const fn counted_in(count: &'static AtomicUsize) -> Self {
        Self { set: AtomicBool::new(false), count }
    }

    /// Something was queued for the listener's task.
    pub(crate) fn set(&self) {
        if !self.set.load(Ordering::Relaxed) && !self.set.swap(true, Ordering::Relaxed) {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The listener's task took what was queued.
    pub(crate) fn clear(&self) {
        if self.set.load(Ordering::Relaxed) && self.set.swap(false, Ordering::Relaxed) {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether the mark is set.
    #[cfg(test)]
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }
}

impl Drop for WaitingMark {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_counts_once_until_cleared_and_leaves_with_its_listener() {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let first = WaitingMark::counted_in(&COUNT);
        let second = WaitingMark::counted_in(&COUNT);
        first.set();
        first.set();
        assert_eq!(COUNT.load(Ordering::Relaxed), 1, "a listener counts once however much it has queued");
        second.set();
        assert_eq!(COUNT.load(Ordering::Relaxed), 2);
        first.clear();
        first.clear();
        assert_eq!(COUNT.load(Ordering::Relaxed), 1, "cleared once");
        drop(second);
        assert_eq!(COUNT.load(Ordering::Relaxed), 0, "a listener dropped while marked takes its mark with it");
        drop(first);
        assert_eq!(COUNT.load(Ordering::Relaxed), 0);
    }
}

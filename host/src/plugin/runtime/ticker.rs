//! [`EpochTicker`]: the thread that advances the engine's epoch while guest code runs, so
//! that a call's epoch deadline can pass ([`deadline`](super::deadline)).
//!
//! It ticks every epoch tick of real time while any [`GuestRunning`] guard lives and for
//! [`LINGER_TICKS`] after the last one is dropped, then parks: an idle host does not wake up
//! a hundred times a second, and events a few milliseconds apart do not wake the ticker each
//! time. The first guard after it parked unparks it; it stops when the ticker is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Ticks the ticker goes on ticking after the last guest call ended, before it parks: a
/// call that starts meanwhile (events a few milliseconds apart) then wakes no thread — waking
/// the parked ticker is a system call and a thread wake-up, a sizeable part of a lone event's
/// cost — while an idle host still parks it within a tenth of a second (at the default tick).
pub(crate) const LINGER_TICKS: u32 = 10;

/// Guest code running now, which is when the epoch ticker has to tick.
#[derive(Debug, Default)]
struct GuestCalls {
    running: AtomicUsize,
    ticks: AtomicU64,
    stop: AtomicBool,
    /// The ticker thread, unparked by the first guard.
    ticker: std::sync::OnceLock<std::thread::Thread>,
}

impl GuestCalls {
    fn wake(&self) {
        if let Some(thread) = self.ticker.get() {
            thread.unpark();
        }
    }
}

/// Held while guest code may run (instantiation, a call): keeps the epoch ticker ticking, so
/// that the call's epoch deadline can pass.
///
/// Borrowed from the engine, not counted in its `Arc`; and a guard taken on a thread that
/// already holds one of the same engine (each call of a batch, inside the batch's guard)
/// touches only that thread's count: every call of every plugin takes one, and a count
/// shared by all would move between cores on each.
#[derive(Debug)]
#[must_use = "the ticker ticks only while the guard lives"]
pub struct GuestRunning<'a> {
    calls: &'a GuestCalls,
    kind: Guard,
    /// Dropped on the thread that took it (its count is that thread's).
    _thread: std::marker::PhantomData<*const ()>,
}

/// Where a [`GuestRunning`] guard is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guard {
    /// The thread's first: counted in the engine's `running`, and the thread's record.
    Outermost,
    /// Inside the thread's guard of the same engine: counted in the thread's record only.
    Nested,
    /// Inside a guard of another engine: counted in this engine's `running` only.
    Foreign,
}

thread_local! {
    /// The engine whose guards this thread holds, and how many (nested).
    static HELD: std::cell::Cell<(usize, u32)> = const { std::cell::Cell::new((0, 0)) };
}

impl Drop for GuestRunning<'_> {
    fn drop(&mut self) {
        match self.kind {
            Guard::Outermost => HELD.with(|h| h.set((0, 0))),
            Guard::Nested => {
                HELD.with(|h| {
                    let (engine, depth) = h.get();
                    if engine == std::ptr::from_ref(self.calls) as usize {
                        h.set((engine, depth.saturating_sub(1)));
                    }
                });
                return;
            }
            Guard::Foreign => {}
        }
        self.calls.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The epoch ticker thread; it stops when this is dropped.
#[derive(Debug)]
pub(super) struct EpochTicker(Arc<GuestCalls>);

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.wake();
    }
}

impl EpochTicker {
    /// Starts the thread that increments `engine`'s epoch every `tick` of real time while
    /// guest code runs, and for [`LINGER_TICKS`] after; parked while none has run since.
    pub(super) fn start(engine: wasmtime::Engine, tick: Duration) -> std::io::Result<Self> {
        let guests = Arc::new(GuestCalls::default());
        let calls = guests.clone();
        let thread = std::thread::Builder::new().name("wink-epoch".into()).spawn(move || {
            // No guest has run yet: parked from the start.
            let mut idle = LINGER_TICKS;
            while !calls.stop.load(Ordering::SeqCst) {
                if calls.running.load(Ordering::SeqCst) > 0 {
                    idle = 0;
                } else if idle < LINGER_TICKS {
                    idle += 1;
                } else {
                    // A guard that came between the check and here left its unpark token:
                    // park returns at once and no wake-up is lost. A token left by a guard
                    // taken while the ticker still ticked (or a spurious wake-up) finds no
                    // guest running: the ticker parks again rather than lingering anew.
                    std::thread::park();
                    if calls.running.load(Ordering::SeqCst) > 0 {
                        idle = 0;
                    }
                    continue;
                }
                // A fresh deadline counts whole ticks from the start of the call.
                std::thread::sleep(tick);
                engine.increment_epoch();
                calls.ticks.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        let _ = guests.ticker.set(thread.thread().clone());
        Ok(Self(guests))
    }

    /// Marks guest code as running until the guard is dropped.
    pub(super) fn guest_running(&self) -> GuestRunning<'_> {
        let me = std::ptr::from_ref::<GuestCalls>(&self.0) as usize;
        let (engine, depth) = HELD.with(std::cell::Cell::get);
        let guard = |kind| GuestRunning { calls: &self.0, kind, _thread: std::marker::PhantomData };
        if engine == me && depth > 0 {
            HELD.with(|h| h.set((engine, depth + 1)));
            return guard(Guard::Nested);
        }
        // Only the first guard wakes the ticker; while it ticks, a guard costs one atomic add.
        if self.0.running.fetch_add(1, Ordering::SeqCst) == 0 {
            self.0.wake();
        }
        if depth > 0 {
            // Another engine's guard is held on this thread: that record stays its own.
            return guard(Guard::Foreign);
        }
        HELD.with(|h| h.set((me, 1)));
        guard(Guard::Outermost)
    }

    /// How many times it has ticked.
    pub(super) fn ticks(&self) -> u64 {
        self.0.ticks.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticker() -> EpochTicker {
        EpochTicker::start(wasmtime::Engine::default(), Duration::from_millis(1)).expect("a ticker thread")
    }

    fn running(ticker: &EpochTicker) -> usize {
        ticker.0.running.load(Ordering::SeqCst)
    }

    #[test]
    fn a_thread_counts_once_per_engine_however_many_guards_it_nests() {
        let (a, b) = (ticker(), ticker());
        let batch = a.guest_running();
        let call = a.guest_running();
        assert_eq!(running(&a), 1, "a call inside its batch's guard is not counted again");
        let foreign = b.guest_running();
        assert_eq!(running(&b), 1, "another engine's guard counts in its own engine");
        drop(foreign);
        assert_eq!(running(&b), 0);
        let elsewhere = std::thread::scope(|s| {
            s.spawn(|| {
                let _guard = a.guest_running();
                running(&a)
            })
            .join()
            .expect("the other thread")
        });
        assert_eq!(elsewhere, 2, "another thread's guard counts");
        drop(call);
        assert_eq!(running(&a), 1, "the batch's guard still holds");
        let next_call = a.guest_running();
        assert_eq!(running(&a), 1);
        drop(next_call);
        drop(batch);
        assert_eq!(running(&a), 0, "none held");
        let after = a.guest_running();
        assert_eq!(running(&a), 1, "a guard after the batch counts again");
        drop(after);
        assert_eq!(running(&a), 0);
    }
}

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
pub const LINGER_TICKS: u32 = 10;

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
/// Borrowed from the engine, not counted in its `Arc`: every call of every plugin takes one,
/// and a shared reference count would move between cores on each.
#[derive(Debug)]
#[must_use = "the ticker ticks only while the guard lives"]
pub struct GuestRunning<'a>(&'a GuestCalls);

impl Drop for GuestRunning<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
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
                    // park returns at once and no wake-up is lost.
                    std::thread::park();
                    idle = 0;
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
        // Only the first guard wakes the ticker; while it ticks, a guard costs one atomic add.
        if self.0.running.fetch_add(1, Ordering::SeqCst) == 0 {
            self.0.wake();
        }
        GuestRunning(&self.0)
    }

    /// How many times it has ticked.
    pub(super) fn ticks(&self) -> u64 {
        self.0.ticks.load(Ordering::Relaxed)
    }
}

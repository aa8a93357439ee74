//! [`GuestPool::try_run_here`]: a job run on the thread that asks for it.
//!
//! **A job runs where it is asked for while the pool has a place free.** Waking a sleeping
//! guest thread, and then the executor thread that awaits the result, costs two thread
//! wake-ups — tens of microseconds on a virtual machine, ten times a plugin's call — which a
//! busy pool amortizes over batches but a lone event pays in full; and a job queued behind
//! another plugin's batch waits for it. [`GuestPool::try_run_here`] runs a job on the calling
//! thread instead, when that is a worker of a multi-threaded tokio runtime and the pool has a
//! place free: the jobs of its own threads (running or queued) and the jobs run so take fewer
//! places than its size. So the jobs run here take no more places than the pool's own jobs
//! leave them, and a busy guest thread — a slow plugin's call, another plugin's batch — does
//! not send every other job to queue behind it (and keep the pool busy in turn). What happens
//! to the calling thread's other tasks meanwhile is the caller's choice ([`HandOver`]):
//! - [`HandOver::First`]: tokio's `block_in_place` hands them to another thread (a
//!   blocking-pool thread, which this one does not wait for) before the job starts, so the
//!   job holds up no task — under load that keeps the executor's other work going while the
//!   call runs, for a thread wake-up per job;
//! - [`HandOver::IfItStalls`], for a job expected to be short on an executor with nothing
//!   else waiting: the job runs at once and wakes no thread; once it has held the thread
//!   [`HAND_OVER_AFTER`] without a break, its next epoch tick ([`on_tick`]) hands the tasks
//!   over, so they wait at most that and a tick. A wait outside the guest
//!   ([`block_in_place`](super::block_in_place)) hands them over while it lasts, and is no part of that time.
//!   The runtime's global queue holding tasks makes it [`HandOver::First`].
//!
//! Such a job counts against the pool's size, in two atomics beside the pool's state rather
//! than in it: a lone event takes no lock of the pool's. It wakes neither a guest thread nor
//! the watchdog, and the watchdog does not see it: it watches itself from its guest call's epoch callback ([`on_tick`]) and gives
//! its place back once past the slow-call threshold, but keeps its thread's priority (that
//! thread returns to the executor, whose priority a process cannot raise again once lowered).
//! Callers use it only for plugins whose calls have stayed fast (see `PluginHandler`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use quanta::Instant;

use super::{GuestPool, GuestPoolError, JOB_STARTED, Shared, WORKER};
use crate::informer::crash::panic_message;
use crate::plugin::threads::executor::{self, Here};

/// How long a job run on an executor thread with [`HandOver::IfItStalls`] holds the thread's
/// other tasks without a break before its next epoch tick hands them over.
pub(crate) const HAND_OVER_AFTER: Duration = Duration::from_millis(1);

/// How long a job that stalls on an executor thread waits, as it hands the thread's tasks
/// over, for another thread to take them (tokio's `block_in_place` takes them back if none
/// did by its return).
const HAND_OVER_WAIT: Duration = Duration::from_millis(1);

/// What a job run on an executor thread ([`GuestPool::try_run_here`]) does with that
/// thread's other tasks (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandOver {
    /// Hands them to another thread before the job starts.
    First,
    /// Keeps them unless the job runs past [`HAND_OVER_AFTER`].
    IfItStalls,
}

/// A job run on the thread that asked for it ([`GuestPool::try_run_here`]). The record
/// stays on its thread between jobs (`running` false), so that a thread's next job reuses
/// the pool's handle rather than counting one more reference to it.
struct Borrowed {
    shared: Arc<Shared>,
    /// A job runs now; the fields below are its own.
    running: bool,
    /// It gave its place in the pool back (waiting outside the guest, or past the
    /// slow-call threshold).
    gave_back: bool,
    started: Instant,
    /// The thread still holds its executor's other tasks ([`HandOver::IfItStalls`], not
    /// handed over yet).
    holds_executor: bool,
    /// Since when it has held them without a break: the job's start, or the end of its last
    /// wait outside the guest (which hands them over meanwhile).
    holding_since: Instant,
    /// It held them past [`HAND_OVER_AFTER`] and handed them over then.
    stalled: bool,
}

impl Borrowed {
    /// Gives the job's place in the pool back; says whether it held one (it had not given
    /// it back already). Only its own thread does so, so no other record is needed.
    fn give_back(&mut self) -> bool {
        if self.gave_back {
            return false;
        }
        self.gave_back = true;
        self.shared.borrowed.fetch_sub(1, Ordering::AcqRel);
        true
    }
}

thread_local! {
    /// The job [`GuestPool::try_run_here`] runs on this thread (if `running`), or the
    /// record of the last one.
    static BORROWED: std::cell::RefCell<Option<Borrowed>> = const { std::cell::RefCell::new(None) };
}

/// The part of [`block_in_place`](super::block_in_place) for a job run on an executor
/// thread: gives the job's place back and runs `wait` — in tokio's `block_in_place` if the
/// thread still holds the executor's other tasks, the request itself perhaps among them, so
/// they go on on another thread. Gives `wait` back on any other thread.
pub(super) fn leave_to_wait<R, W: FnOnce() -> R>(wait: W) -> Result<R, W> {
    let borrowed = BORROWED.with_borrow_mut(|b| {
        let b = b.as_mut().filter(|b| b.running)?;
        Some((b.give_back().then(|| b.shared.clone()), b.holds_executor))
    });
    if let Some((gave_back, holds_executor)) = borrowed {
        if let Some(shared) = gave_back {
            shared.state.lock().left_to_wait += 1;
        }
        if !holds_executor {
            return Ok(wait());
        }
        let waited = tokio::task::block_in_place(wait);
        // The executor's tasks went on meanwhile; holding them starts again from here.
        BORROWED.with_borrow_mut(|b| {
            if let Some(b) = b {
                b.holding_since = Instant::now();
            }
        });
        return Ok(waited);
    }
    Err(wait)
}

/// Called on every epoch tick of a guest call, on the call's thread. For a job run on an
/// executor thread ([`GuestPool::try_run_here`]): one that still holds the executor's other
/// tasks past [`HAND_OVER_AFTER`] hands them to another thread; one past the slow-call
/// threshold gives its place in the pool back, as the watchdog does for the pool's own
/// threads (it is not woken for such jobs). Does nothing on any other thread, or before.
pub(crate) fn on_tick() {
    let due = BORROWED.with_borrow_mut(|borrowed| {
        let b = borrowed.as_mut().filter(|b| b.running)?;
        let elapsed = b.started.elapsed();
        let hand_over = b.holds_executor && b.holding_since.elapsed() >= HAND_OVER_AFTER;
        if hand_over {
            b.holds_executor = false;
            b.stalled = true;
        }
        let retired = elapsed >= b.shared.slow_call && b.give_back();
        (hand_over || retired).then(|| (b.shared.clone(), hand_over, retired))
    });
    let Some((shared, hand_over, retired)) = due else { return };
    if retired {
        shared.state.lock().retired_calls += 1;
    }
    if hand_over {
        shared.state.lock().stalled_hand_overs += 1;
        // tokio's `block_in_place` gives this thread's executor core to a blocking-pool
        // thread; the wait lets that thread take it before `block_in_place` would take it
        // back, so the call goes on here outside the executor.
        tokio::task::block_in_place(|| std::thread::sleep(HAND_OVER_WAIT));
    }
}

/// Whether the job run on this executor thread ([`GuestPool::try_run_here`]) held the
/// executor's other tasks past [`HAND_OVER_AFTER`] (and handed them over then). A job asks
/// it as it ends.
pub(crate) fn stalled_executor() -> bool {
    BORROWED.with_borrow(|b| b.as_ref().is_some_and(|b| b.running && b.stalled))
}

impl GuestPool {
    /// Runs `job` on this thread, as one of the pool's jobs, if this is a worker thread of a
    /// multi-threaded tokio runtime and no job runs or waits in the pool (see the module docs);
    /// otherwise gives `job` back. The executor's other tasks move to another thread first,
    /// or, with [`HandOver::IfItStalls`] and nothing in the runtime's global queue, only if
    /// the job runs past [`HAND_OVER_AFTER`]; `hand_over` is asked only for a job that runs
    /// here.
    pub fn try_run_here<T, F>(
        &self,
        hand_over: impl FnOnce() -> HandOver,
        job: F,
    ) -> Result<Result<T, GuestPoolError>, F>
    where
        F: FnOnce() -> T,
    {
        let Here::MultiThread { global_queue_depth } = executor::here() else { return Err(job) };
        if WORKER.with(std::cell::Cell::get).is_some()
            || BORROWED.with_borrow(|b| b.as_ref().is_some_and(|b| b.running))
        {
            return Err(job);
        }
        // The places the pool's own jobs leave: all of them while it is idle, none once it is
        // shut down.
        let free = self.shared.size.saturating_sub(self.shared.taken_by_pool.load(Ordering::Acquire));
        if self
            .shared
            .borrowed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < free).then_some(n + 1))
            .is_err()
        {
            return Err(job);
        }
        self.shared.borrowed_runs.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        // Tasks woken from outside the runtime wait in its global queue: someone is waiting.
        let first = hand_over() == HandOver::First || global_queue_depth > 0;
        // The job watches itself (`on_tick`): the watchdog is neither told nor woken.
        BORROWED.with_borrow_mut(|record| {
            let shared = match record.take() {
                Some(last) if Arc::ptr_eq(&last.shared, &self.shared) => last.shared,
                _ => self.shared.clone(),
            };
            *record = Some(Borrowed {
                shared,
                running: true,
                gave_back: false,
                started,
                holds_executor: !first,
                holding_since: started,
                stalled: false,
            });
        });
        JOB_STARTED.with(|s| s.set(Some(started)));
        let run = || std::panic::catch_unwind(AssertUnwindSafe(job));
        // First: the executor's other tasks go on on another thread meanwhile (a blocking-pool
        // thread takes this one's core; this thread does not wait for it).
        let result = if first { tokio::task::block_in_place(run) } else { run() };
        BORROWED.with_borrow_mut(|record| {
            if let Some(b) = record {
                b.give_back();
                b.running = false;
            }
        });
        JOB_STARTED.with(|s| s.set(None));
        Ok(result.map_err(|panic| GuestPoolError::Panicked(panic_message(panic.as_ref()))))
    }
}

//! [`Placement`]: where a plugin's deliveries run, kept from how its calls went.
//!
//! **A fast plugin's deliveries run where they are.** Once a plugin's last [`FAST_STREAK`]
//! calls each computed for under [`FAST_CALL`], and while the guest pool has a place free, its
//! deliveries — a lone event or a batch — run on the delivering executor thread
//! ([`GuestPool::try_run_here`]), as a native handler's would: no thread wake-up, which on a
//! virtual machine costs several times the call, and no hop to a guest thread and back. A
//! batch there stops after half of
//! [`HAND_OVER_AFTER`](crate::plugin::threads::pool::here::HAND_OVER_AFTER) and gives the rest
//! back to its listener, so the thread's other tasks wait no longer than for a native
//! handler's short batch (and tokio's other workers may take them meanwhile). A slow call
//! resets the streak: the plugin's deliveries go to the guest threads until it has earned it
//! again. What a call computed is its thread's CPU time where measured (from the call's first
//! epoch tick on, [`cpu`](crate::plugin::threads::cpu): a virtual CPU preempted
//! meanwhile is not the plugin's doing), its time on the clock otherwise; a batch is judged
//! call by call (its calls count one each, and none computed more than the batch's CPU time
//! or its longest call's time on the clock), so that a batch of a thousand short calls under
//! load, which runs past `FAST_CALL` as a whole, does not count as a slow call. A call that
//! computed past the pool's slow-call threshold on a delivering thread sends the plugin back
//! to the guest threads for good, where a stalled call is moved to the lowest priority — a
//! delivering thread keeps its priority, so such a call competes at normal priority once,
//! paused between ticks, for at most its deadline.
//!
//! **What that thread's other tasks do meanwhile** ([`HandOver`]). The call runs at once and
//! hands them over to another thread only if it runs past `HAND_OVER_AFTER`; the plugin's
//! next [`HAND_OVER_FIRST_CALLS`] calls then hand them over first (one wake-up, so they do
//! not queue behind the call), twice as many after each later such call.
//!
//! [`GuestPool::try_run_here`]: crate::plugin::threads::pool::GuestPool::try_run_here

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use crate::plugin::threads::pool::HandOver;

/// A call that computed for less than this (thread CPU time) counts towards [`FAST_STREAK`].
pub(super) const FAST_CALL: Duration = Duration::from_millis(1);

/// Fast calls in a row before a plugin's calls may run on the thread that delivers them: a
/// plugin that stalls on its first calls, or whose calls are slow, keeps to the guest
/// threads, where a stalled call is moved to the lowest priority.
pub(super) const FAST_STREAK: u32 = 8;

/// The calls that hand the delivering thread's tasks over first after a plugin's first call
/// that held them up; each later such call doubles it. A stall on the clock may be a virtual
/// CPU preempted during a short call (a preempted thread holds its tasks up all the same),
/// so it is not held against a plugin for good; a plugin that stalls on purpose gets to do
/// so ever more rarely (after 20 stalls, once per 64 million calls at most).
pub(super) const HAND_OVER_FIRST_CALLS: u32 = 64;

/// How long a job took: on the clock, and in its thread's CPU time from its guest calls'
/// first epoch tick on (`None` when no call saw a tick: they were short on the clock, or
/// the platform keeps no thread CPU clock; see `cpu::sample`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Took {
    pub(super) wall: Duration,
    pub(super) cpu: Option<Duration>,
    /// It ran on an executor thread and held that thread's other tasks past
    /// [`HAND_OVER_AFTER`](crate::plugin::threads::pool::here::HAND_OVER_AFTER) (`pool::stalled_executor`).
    pub(super) stalled_executor: bool,
    /// The guest calls it made (a plugin's start counts as one; a batch, one per event).
    pub(super) calls: u32,
    /// Its longest call on the clock.
    pub(super) longest: Duration,
}

impl Took {
    /// A job of one call, which took `wall` on the clock (and `cpu` from its first epoch tick
    /// on).
    #[cfg(test)]
    pub(super) fn one(wall: Duration, cpu: Option<Duration>, stalled_executor: bool) -> Self {
        Self { wall, cpu, stalled_executor, calls: 1, longest: wall }
    }

    /// What each of its calls computed, at most: the job's thread CPU time where measured (a
    /// virtual CPU preempted meanwhile is not the plugin's doing), its time on the clock
    /// otherwise — and no more than its longest call took on the clock (a batch of many
    /// short calls is not one long call).
    pub(super) fn computed_per_call(&self) -> Duration {
        self.cpu.unwrap_or(self.wall).min(self.longest)
    }
}

/// One plugin's record of its calls, which decides where its next deliveries run.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// Calls in a row that computed for less than [`FAST_CALL`], counted up to
    /// [`FAST_STREAK`] (a little past it when calls end at once).
    pub(super) fast_streak: AtomicU32,
    /// A call run on a delivering thread went past the pool's slow-call threshold: this
    /// plugin's calls always go to the guest threads from then on.
    pub(super) stays_on_pool: AtomicBool,
    /// Calls run on a delivering thread that held that thread's other tasks past
    /// [`HAND_OVER_AFTER`](crate::plugin::threads::pool::here::HAND_OVER_AFTER), so far.
    stalls: AtomicU32,
    /// How many of this plugin's next calls hand the delivering thread's tasks over first.
    pub(super) hand_over_first: AtomicU32,
}

impl Placement {
    /// Whether the plugin's next delivery may run on the delivering thread (see the module
    /// docs).
    pub(super) fn may_run_here(&self) -> bool {
        !self.stays_on_pool.load(Ordering::Relaxed) && self.fast_streak.load(Ordering::Relaxed) >= FAST_STREAK
    }

    /// What a call run on the delivering thread does with that thread's other tasks (see the
    /// module docs).
    pub(super) fn hand_over(&self) -> HandOver {
        if self.takes_a_call_after_a_stall() { HandOver::First } else { HandOver::IfItStalls }
    }

    /// Whether this call is one of those that hand over first after a stall (counted down).
    pub(super) fn takes_a_call_after_a_stall(&self) -> bool {
        let left = &self.hand_over_first;
        left.load(Ordering::Relaxed) > 0
            && left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok()
    }

    /// Records a call of `plugin`: how long it `took`, whether it `ran_here` (on the
    /// delivering thread), against the pool's `slow_call` threshold.
    pub(super) fn count(&self, plugin: &str, took: Took, ran_here: bool, slow_call: Duration) {
        // What its calls computed, each (`Took::computed_per_call`), for the streak and for
        // sending the plugin back alike.
        let computed = took.computed_per_call();
        // Written only while it counts up to the streak, or when a slow call ends it: past
        // the streak, every fast call of the plugin writing it would dirty the line for all.
        let streak = self.fast_streak.load(Ordering::Relaxed);
        if took.calls == 0 {
            // Nothing called (a quarantined plugin's batch): nothing to judge.
        } else if computed < FAST_CALL {
            if streak < FAST_STREAK {
                self.fast_streak.fetch_add(took.calls.min(FAST_STREAK), Ordering::Relaxed);
            }
        } else if streak != 0 {
            self.fast_streak.store(0, Ordering::Relaxed);
        }
        if ran_here && took.stalled_executor {
            let stalls = self.stalls.fetch_add(1, Ordering::Relaxed).saturating_add(1);
            let calls = HAND_OVER_FIRST_CALLS.saturating_mul(1 << (stalls - 1).min(20));
            self.hand_over_first.store(calls, Ordering::Relaxed);
            tracing::debug!(
                plugin,
                took_ms = took.wall.as_millis() as u64,
                stalls,
                calls,
                "a plugin call held up its delivering thread's other tasks; its next calls hand them over first"
            );
        }
        if ran_here && computed >= slow_call {
            self.stays_on_pool.store(true, Ordering::Relaxed);
            tracing::info!(
                plugin,
                took_ms = took.wall.as_millis() as u64,
                cpu_ms = computed.as_millis() as u64,
                "a plugin call ran long on a delivering thread; this plugin's calls keep to the guest threads from now on"
            );
        }
    }
}

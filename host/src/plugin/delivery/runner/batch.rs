//! Running a job of guest calls — a listener's batch, or a plugin's start — and keeping the
//! record of how its calls went ([`Took`]), which
//! [`Placement`](crate::plugin::delivery::placement::Placement) judges call by call: a batch
//! of a thousand short calls that together ran for milliseconds is a thousand fast calls,
//! not one slow one.

use std::sync::atomic::Ordering;
use std::time::Duration;

use quanta::Instant;

use super::policy::apply_policy;
use super::{Shared, Slot};
use crate::informer::{Action, EntryResults, HandlerError, Notification};
use crate::plugin::contract::outcome::CallOutcome;
use crate::plugin::delivery::placement::Took;
use crate::plugin::runtime::instance::PluginInstance;
use crate::plugin::threads::cpu;
use crate::plugin::threads::pool;

/// How a job's guest calls went, as the job itself saw them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ran {
    /// Its last clock reading.
    pub(super) ended: Instant,
    /// The guest calls it made (a start counts as one).
    pub(super) calls: u32,
    /// Its longest call on the clock.
    pub(super) longest: Duration,
}

impl Ran {
    /// A job of one call that ran from `started` to `ended`.
    pub(super) fn one(started: Instant, ended: Instant) -> Self {
        Self { ended, calls: 1, longest: ended.saturating_duration_since(started) }
    }
}

/// Runs a job from the instant its pool stamped ([`pool::job_started`]), which `job` is given
/// and returns with the record of its calls ([`Ran`]: its last clock reading among them — its
/// calls chain their readings, each call's end the next one's start, one reading per call),
/// and says how it went.
pub(super) fn timed<T>(job: impl FnOnce(Instant) -> (T, Ran)) -> (T, Took) {
    let started = pool::job_started().unwrap_or_else(Instant::now);
    cpu::begin_sampling();
    let (value, ran) = job(started);
    let took = Took {
        wall: ran.ended.saturating_duration_since(started),
        cpu: cpu::take_samples(),
        stalled_executor: pool::stalled_executor(),
        calls: ran.calls,
        longest: ran.longest,
    };
    (value, took)
}

/// Runs in the blocking pool: starts an instance if needed and makes the call, from
/// `started` (a clock reading just taken); returns the outcome and the reading at its end.
pub(super) fn call_guest(
    shared: &Shared,
    slot: &mut Slot,
    notification: Option<&Notification>,
    started: Instant,
) -> (CallOutcome, Instant) {
    match notification {
        Some(notification) => {
            call_with(shared, slot, started, |instance, started| instance.deliver_from(notification, started))
        }
        None => match start_instance(shared, slot, started) {
            Ok(started) => (CallOutcome::Ok, started),
            Err(failed) => failed,
        },
    }
}

/// [`call_guest`] with the call to make: starts an instance if needed, then `call`s it (not
/// when the start failed).
pub(super) fn call_with(
    shared: &Shared,
    slot: &mut Slot,
    started: Instant,
    call: impl FnOnce(&mut PluginInstance, Instant) -> CallOutcome,
) -> (CallOutcome, Instant) {
    let started = match start_instance(shared, slot, started) {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    let instance = slot.instance.as_mut().expect("instance started above");
    let outcome = call(instance, started);
    let ended = Instant::now();
    shared.metrics.call(ended.saturating_duration_since(started));
    slot.last_used = Some(ended);
    (outcome, ended)
}

/// Starts the slot's instance (instantiate and `init`, counted as a call) unless it has one:
/// the clock reading the next call starts from, or the failed start's outcome and end.
fn start_instance(shared: &Shared, slot: &mut Slot, started: Instant) -> Result<Instant, (CallOutcome, Instant)> {
    if slot.instance.is_some() {
        return Ok(started);
    }
    let mut outcome = shared.sandbox.instantiate();
    if let Some((recycler, _)) = &shared.recycler {
        // Each idle instance dropped gives its place back to the pool and its memory to the
        // budget; memory may take several (limits differ).
        while let Err(CallOutcome::Trap(trap)) = &outcome
            && trap.wants_room()
            && let Some(idle) = recycler.least_recently_used()
        {
            drop(idle);
            outcome = shared.sandbox.instantiate();
        }
    }
    let ended = Instant::now();
    shared.metrics.call(ended.saturating_duration_since(started));
    match outcome {
        Ok(instance) => {
            if slot.started_once {
                shared.metrics.restart();
            }
            slot.started_once = true;
            slot.instance = Some(instance);
            slot.last_used = Some(ended);
            if let Some((recycler, own)) = &shared.recycler {
                recycler.started(own, slot, &shared.metrics);
            }
            Ok(ended)
        }
        Err(outcome) => Err((outcome, ended)),
    }
}

/// Runs on a guest thread or the delivering one: delivers a batch from `started`, entry by
/// entry, each entry's notifications in order; stops an entry at its first `Retry`, and the
/// whole batch after a failure (trap, refused `init`) or once `budget` is spent. Entries not
/// started get no results (the listener puts them back in front). Returns the results and
/// how its calls went.
pub(super) fn run_batch<'a>(
    shared: &Shared,
    slot: &mut Slot,
    batch: impl ExactSizeIterator<Item = &'a [Notification]>,
    started: Instant,
    budget: Duration,
) -> (Vec<EntryResults>, Ran) {
    // One guard for the batch: its calls' own guards nest in it (see `GuestRunning`).
    let _running = shared.sandbox.engine().guest_running();
    let mut ran = Ran { ended: started, calls: 0, longest: Duration::ZERO };
    let mut out = Vec::with_capacity(batch.len());
    for entry in batch {
        if !out.is_empty() && ran.ended.saturating_duration_since(started) >= budget {
            break;
        }
        let mut results = Vec::with_capacity(entry.len());
        let mut failed = false;
        for notification in entry {
            if shared.quarantined.load(Ordering::Acquire) {
                shared.metrics.dropped_event();
                results.push(Ok(Action::AwaitChange));
                continue;
            }
            let (outcome, ended) = call_guest(shared, slot, Some(notification), ran.ended);
            ran.calls += 1;
            ran.longest = ran.longest.max(ended.saturating_duration_since(ran.ended));
            ran.ended = ended;
            let result = apply_policy(shared, slot, &outcome);
            failed = !matches!(outcome, CallOutcome::Ok | CallOutcome::Requeue(_) | CallOutcome::HandlerError(_));
            let retry = matches!(result, Err(HandlerError::Retry(_)));
            results.push(result);
            if retry || failed {
                break;
            }
        }
        out.push(results);
        if failed {
            break;
        }
    }
    (out, ran)
}

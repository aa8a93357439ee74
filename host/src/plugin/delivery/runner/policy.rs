//! What a call's outcome does to its plugin (the failure policy in the [`runner`](super)'s
//! module docs): counters, logs, restart backoff, quarantine, and what the listener is told.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Shared, Slot};
use crate::informer::{Action, BackoffConfig, HandlerError, HandlerResult};
use crate::plugin::contract::outcome::{CallOutcome, TrapKind};
use crate::plugin::manifest::OnError;

/// The delay before re-instantiating a plugin after `failures` consecutive failures: the
/// first restart is immediate, later ones follow `backoff` from its initial delay.
pub(super) fn restart_delay(backoff: &BackoffConfig, failures: u32) -> Duration {
    if failures <= 1 { Duration::ZERO } else { backoff.delay(failures - 1) }
}

/// The shortest requeue a plugin gets: a `requeue-after` of less (0 ms) waits this long, as
/// controller-runtime's rate-limited queue starts its delays at 5 ms, so that a plugin that
/// requeues at once cannot keep a core busy calling itself.
pub(crate) const MIN_REQUEUE_AFTER: Duration = Duration::from_millis(5);

/// The delay of a plugin's `requeue-after(delay)`: never below [`MIN_REQUEUE_AFTER`].
fn requeue_delay(asked: Duration) -> Duration {
    asked.max(MIN_REQUEUE_AFTER)
}

/// Runs in the blocking pool after each call: counters, logs, restart backoff, quarantine,
/// and what the listener is told.
pub(super) fn apply_policy(shared: &Shared, slot: &mut Slot, outcome: &CallOutcome) -> HandlerResult {
    let name = &*shared.name;
    let kind = match outcome {
        CallOutcome::Ok => {
            // Written only when it changes: every call of the plugin would dirty the line.
            if shared.consecutive_failures.load(Ordering::Relaxed) != 0 {
                shared.consecutive_failures.store(0, Ordering::Release);
            }
            return Ok(Action::AwaitChange);
        }
        CallOutcome::Requeue(delay) => {
            shared.consecutive_failures.store(0, Ordering::Release);
            return Ok(Action::RequeueAfter(requeue_delay(*delay)));
        }
        CallOutcome::HandlerError(e) => {
            shared.consecutive_failures.store(0, Ordering::Release);
            shared.metrics.handler_error(matches!(e, HandlerError::Retry(_)));
            return Err(e.clone());
        }
        CallOutcome::InitRejected(_) => "init_rejected",
        CallOutcome::Trap(kind) => kind.label(),
    };
    slot.instance = None;
    shared.metrics.trap(kind);
    if let CallOutcome::Trap(TrapKind::Instantiation(why) | TrapKind::PoolFull(why) | TrapKind::BudgetFull(why)) =
        outcome
    {
        let failures = shared.consecutive_failures.load(Ordering::Acquire).saturating_add(1);
        slot.restart_at = Some(tokio::time::Instant::now() + restart_delay(&shared.backoff, failures));
        tracing::error!(plugin = name, trap = kind, error = %why, "cannot instantiate plugin; will retry");
        return Err(HandlerError::Retry(format!("plugin {name}: {outcome}")));
    }
    let failures = shared.consecutive_failures.fetch_add(1, Ordering::AcqRel).saturating_add(1);
    // The outcome may quote the guest (an `init` refusal): it goes in a field after the host's.
    tracing::error!(plugin = name, trap = kind, consecutive = failures, error = %outcome, "plugin failed");
    let limit = shared.policy.quarantine_after;
    if limit > 0 && failures >= limit {
        shared.quarantined.store(true, Ordering::Release);
        shared.metrics.set_quarantined(true);
        shared.metrics.dropped_event();
        tracing::error!(
            plugin = name,
            trap = kind,
            consecutive = failures,
            "plugin quarantined after {failures} consecutive failures; its events are dropped until it is reloaded"
        );
        return Ok(Action::AwaitChange);
    }
    slot.restart_at = Some(tokio::time::Instant::now() + restart_delay(&shared.backoff, failures));
    match shared.policy.on_error {
        OnError::Retry => Err(HandlerError::Retry(format!("plugin {name}: {outcome}"))),
        OnError::Skip => {
            shared.metrics.skipped_event();
            tracing::warn!(plugin = name, trap = kind, "event skipped after a plugin failure (onError: skip)");
            Ok(Action::AwaitChange)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requeue_at_once_waits_the_floor_and_a_later_one_its_own_delay() {
        assert_eq!(requeue_delay(Duration::ZERO), MIN_REQUEUE_AFTER);
        assert_eq!(requeue_delay(Duration::from_micros(10)), MIN_REQUEUE_AFTER);
        assert_eq!(requeue_delay(Duration::from_secs(30)), Duration::from_secs(30));
    }
}

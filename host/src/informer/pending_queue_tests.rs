//! The coalescing rules, one test each, and the queue's bookkeeping.

use super::*;
use crate::informer::test_support::{pod, with_mock_clock};

fn add(rv: u64) -> Notification {
    Notification::Add { obj: pod("ns", "a", rv), initial: false }
}
fn update(old: u64, new: u64) -> Notification {
    Notification::Update { old: pod("ns", "a", old), new: pod("ns", "a", new) }
}
fn delete(rv: u64, unknown: bool) -> Notification {
    Notification::Delete { obj: pod("ns", "a", rv), final_state_unknown: unknown }
}
fn one(n: Notification) -> Pending {
    Pending::One(n)
}

#[test]
fn coalesce_add_then_update_is_add_of_the_new_state() {
    assert_eq!(one(add(1)).coalesce(update(1, 2)), Some(one(add(2))));
}

#[test]
fn coalesce_add_then_delete_delivers_nothing() {
    assert_eq!(one(add(1)).coalesce(delete(2, false)), None);
}

#[test]
fn coalesce_update_then_update_keeps_first_old_and_last_new() {
    assert_eq!(one(update(1, 2)).coalesce(update(2, 3)), Some(one(update(1, 3))));
}

#[test]
fn coalesce_update_then_delete_is_delete() {
    assert_eq!(one(update(1, 2)).coalesce(delete(3, true)), Some(one(delete(3, true))));
}

#[test]
fn coalesce_delete_then_add_keeps_both_as_one_entry() {
    let merged = one(delete(2, false)).coalesce(add(3)).unwrap();
    assert_eq!(merged.clone().into_notifications(), vec![delete(2, false), add(3)]);
    // A later update folds into the re-created object.
    let merged = merged.coalesce(update(3, 4)).unwrap();
    assert_eq!(merged.into_notifications(), vec![delete(2, false), add(4)]);
}

#[test]
fn coalesce_delete_then_add_then_delete_is_the_first_delete() {
    let merged = one(delete(2, false)).coalesce(add(3)).unwrap().coalesce(delete(4, false)).unwrap();
    assert_eq!(merged, one(delete(2, false)));
}

#[test]
fn coalesce_real_delete_beats_a_later_tombstone() {
    assert_eq!(one(delete(2, false)).coalesce(delete(2, true)), Some(one(delete(2, false))));
    assert_eq!(one(delete(2, true)).coalesce(delete(3, false)), Some(one(delete(3, false))));
}

#[test]
fn coalesce_keeps_the_initial_flag_of_the_add() {
    let initial = Notification::Add { obj: pod("ns", "a", 1), initial: true };
    assert!(one(initial).coalesce(update(1, 2)).unwrap().is_initial());
}

#[test]
fn queue_holds_one_entry_per_key_in_first_arrival_order() {
    let mut q = PendingQueue::default();
    q.push(Notification::Add { obj: pod("ns", "x", 1), initial: false });
    q.push(add(2));
    q.push(Notification::Update { old: pod("ns", "x", 1), new: pod("ns", "x", 3) });
    q.push(update(2, 4));
    assert_eq!(q.len(), 2);
    let (k1, p1) = q.pop().unwrap();
    let (k2, p2) = q.pop().unwrap();
    assert_eq!((k1.key(), k2.key()), ("ns/x", "ns/a"), "a key keeps its place when it absorbs newer events");
    assert_eq!(p1.into_notifications()[0].object().resource_version(), "3");
    assert_eq!(p2, one(add(4)));
}

#[test]
fn queue_add_then_delete_frees_the_entry() {
    let mut q = PendingQueue::default();
    q.push(add(1));
    q.push(delete(2, false));
    assert!(q.is_empty());
    assert!(q.pop().is_none());
}

#[test]
fn queue_counts_initial_adds_until_completed() {
    let mut q = PendingQueue::default();
    q.push(Notification::Add { obj: pod("ns", "a", 1), initial: true });
    q.push(Notification::Add { obj: pod("ns", "b", 1), initial: true });
    assert_eq!(q.initial_outstanding(), 2);
    q.push(Notification::Delete { obj: pod("ns", "b", 2), final_state_unknown: false });
    assert_eq!(q.initial_outstanding(), 1, "a cancelled initial add is no longer outstanding");
    let (taken, _) = q.pop().unwrap();
    assert_eq!(q.initial_outstanding(), 1, "in flight still counts");
    q.complete(taken);
    assert_eq!(q.initial_outstanding(), 0);
}

#[tokio::test(start_paused = true)]
async fn queue_retry_waits_for_its_delay_and_absorbs_newer_events() {
    let mut q = PendingQueue::default();
    q.push(add(1));
    let (taken, popped) = q.pop().unwrap();
    let now = Instant::now();
    q.push(update(1, 2)); // arrived while the add was being delivered
    assert!(q.retry(taken, popped.into_notifications(), Duration::from_secs(1), now));
    assert_eq!(q.len(), 1);
    assert!(q.pop().is_none(), "not ready before its delay");
    q.push(update(2, 3)); // folds into the delayed entry
    q.promote(now + Duration::from_millis(999));
    assert!(q.pop().is_none());
    assert_eq!(q.next_retry(), Some(now + Duration::from_secs(1)));
    q.promote(now + Duration::from_secs(1));
    assert_eq!(q.pop().unwrap().1, one(add(3)), "retried with the newest state of the key");
}

#[tokio::test(start_paused = true)]
async fn queue_retry_of_an_add_deleted_meanwhile_leaves_nothing() {
    let mut q = PendingQueue::default();
    q.push(add(1));
    let (taken, popped) = q.pop().unwrap();
    q.push(delete(2, false));
    let retried = q.retry(taken, popped.into_notifications(), Duration::from_secs(1), Instant::now());
    assert!(!retried, "the handler never saw the add, so the delete cancels it");
    assert!(q.is_empty());
}

#[test]
fn queue_requeue_puts_an_unstarted_entry_back_in_front_merged_with_newer_events() {
    let pod_b = |rv| Notification::Add { obj: pod("ns", "b", rv), initial: false };
    let mut q = PendingQueue::default();
    q.push(add(1));
    q.push(pod_b(1));
    let (taken, popped) = q.pop().unwrap();
    let key = taken.key().to_owned();
    // While the handler's batch ran, a newer update of the same key arrived.
    q.push(update(1, 2));
    q.requeue(taken, popped.into_notifications());
    assert_eq!(q.len(), 2);
    let (first, pending) = q.pop().unwrap();
    assert_eq!(first.key(), key, "the requeued key is delivered first");
    assert_eq!(pending, one(Notification::Add { obj: pod("ns", "a", 2), initial: false }));
    assert_eq!(q.pop().unwrap().0.key(), "ns/b");
}

#[test]
fn queue_requeue_keeps_counting_initial_adds() {
    let mut q = PendingQueue::default();
    q.push(Notification::Add { obj: pod("ns", "a", 1), initial: true });
    let (taken, popped) = q.pop().unwrap();
    q.requeue(taken, popped.into_notifications());
    assert_eq!(q.initial_outstanding(), 1);
    let (taken, _) = q.pop().unwrap();
    q.complete(taken);
    assert_eq!(q.initial_outstanding(), 0);
}

/// The delivery lag of an entry put back (retried, or requeued in front) runs from its
/// earliest arrival, whatever was queued for the key meanwhile; a requeue's redelivery has
/// no arrival (nothing waited for it).
#[test]
fn queue_an_entry_put_back_keeps_its_earliest_arrival() {
    with_mock_clock(|clock| async move { an_entry_put_back_keeps_its_earliest_arrival(&clock).await });
}

async fn an_entry_put_back_keeps_its_earliest_arrival(clock: &quanta::Mock) {
    let mut q = PendingQueue::default();
    let first = quanta::Instant::now();
    q.push(add(1));
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(taken.arrived(), Some(first));
    clock.increment(Duration::from_millis(5));
    assert_ne!(quanta::Instant::now(), first, "the mock clock moves");
    tokio::time::advance(Duration::from_millis(5)).await;
    q.push(update(1, 2));
    q.requeue(taken, popped.into_notifications());
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(taken.arrived(), Some(first), "requeued with the newer entry folded in");

    clock.increment(Duration::from_millis(5));
    tokio::time::advance(Duration::from_millis(5)).await;
    q.push(update(2, 3));
    assert!(q.retry(taken, popped.into_notifications(), Duration::from_secs(1), Instant::now()));
    q.promote(Instant::now() + Duration::from_secs(1));
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(taken.arrived(), Some(first), "retried with the newer entry folded in");
    assert_eq!(popped, one(add(3)));

    q.complete(taken);
    let obj = pod("ns", "a", 3);
    q.requeue_at(obj.clone(), Instant::now());
    q.promote(Instant::now());
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(taken.arrived(), None, "a requeue's redelivery");
    assert_eq!(popped, one(Notification::Update { old: obj.clone(), new: obj }));
}

/// A key's retry count goes when the key is delivered, and when a notification cancels it
/// out of the queue while it waits for its retry.
#[tokio::test(start_paused = true)]
async fn queue_a_key_delivered_or_cancelled_out_takes_its_retry_count_with_it() {
    let mut q = PendingQueue::default();
    q.push(add(1));
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(q.attempt(&taken), 1);
    assert!(q.retry(taken, popped.into_notifications(), Duration::from_secs(1), Instant::now()));
    q.promote(Instant::now() + Duration::from_secs(1));
    let (taken, popped) = q.pop().unwrap();
    assert_eq!(q.attempt(&taken), 2, "counted since the key was last delivered");
    assert!(q.retry(taken, popped.into_notifications(), Duration::from_secs(1), Instant::now()));
    assert_eq!(q.attempts_len(), 1);
    q.push(delete(2, false));
    assert!(q.is_empty(), "the add waiting for its retry is cancelled by its delete");
    assert_eq!(q.attempts_len(), 0);

    q.push(add(3));
    let (taken, popped) = q.pop().unwrap();
    q.attempt(&taken);
    assert!(q.retry(taken, popped.into_notifications(), Duration::ZERO, Instant::now()));
    q.promote(Instant::now());
    let (taken, _) = q.pop().unwrap();
    q.complete(taken);
    assert_eq!(q.attempts_len(), 0, "delivered");
}

#[test]
fn a_queue_keeping_vanished_objects_leaves_an_add_then_delete_as_the_delete() {
    let mut forgetting = PendingQueue::default();
    forgetting.push(add(1));
    forgetting.push(delete(2, false));
    assert_eq!(forgetting.len(), 0, "the handler never saw it: nothing to deliver");

    let mut keeping = PendingQueue::new(true);
    keeping.push(add(1));
    keeping.push(delete(2, false));
    assert_eq!(keeping.len(), 1);
    assert_eq!(keeping.pop().map(|(_, p)| p), Some(one(delete(2, false))));
}

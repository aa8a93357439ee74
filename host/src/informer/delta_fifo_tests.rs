//! Unit tests of the DeltaFIFO rules, one per rule.

use std::sync::Arc;

use super::*;
use crate::informer::indexer::Indexer;
use crate::informer::test_support::pod;

fn kinds(deltas: &[Delta]) -> Vec<DeltaType> {
    deltas.iter().map(|d| d.kind).collect()
}

async fn pop_all(fifo: &DeltaFifo) -> Vec<(String, Vec<Delta>, bool)> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        fifo.pop(|deltas, initial| {
            out.push((deltas[0].obj.object().key().to_owned(), deltas, initial));
        })
        .await
        .unwrap();
    }
    out
}

#[tokio::test]
async fn keys_pop_in_fifo_order_with_all_their_deltas() {
    let fifo = DeltaFifo::new(None, true);
    fifo.add(pod("ns", "a", 1));
    fifo.add(pod("ns", "b", 2));
    fifo.update(pod("ns", "a", 3));
    let popped = pop_all(&fifo).await;
    assert_eq!(popped.len(), 2);
    assert_eq!(popped[0].0, "ns/a");
    assert_eq!(kinds(&popped[0].1), [DeltaType::Added, DeltaType::Updated]);
    assert_eq!(popped[0].1[1].obj.object().resource_version(), "3");
    assert_eq!(popped[1].0, "ns/b");
}

#[tokio::test]
async fn replace_queues_tombstones_for_known_keys_missing_from_the_list() {
    let known = Indexer::new();
    known.add(pod("ns", "kept", 1));
    known.add(pod("ns", "gone", 1));
    let fifo = DeltaFifo::new(Some(known.store()), true);
    fifo.replace(vec![pod("ns", "kept", 2)], "2");
    let kept = fifo.deltas("ns/kept").unwrap();
    assert_eq!(kinds(&kept), [DeltaType::Replaced]);
    let gone = fifo.deltas("ns/gone").unwrap();
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].kind, DeltaType::Deleted);
    match &gone[0].obj {
        DeltaObject::DeletedFinalStateUnknown { key, obj } => {
            assert_eq!(key, "ns/gone");
            assert_eq!(obj.resource_version(), "1", "tombstone carries the last known state");
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
}

#[tokio::test]
async fn replace_queues_tombstones_for_queued_keys_missing_from_the_list() {
    let fifo = DeltaFifo::new(Some(Indexer::new().store()), true);
    fifo.add(pod("ns", "queued", 5));
    fifo.replace(vec![], "6");
    let deltas = fifo.deltas("ns/queued").unwrap();
    assert_eq!(kinds(&deltas), [DeltaType::Added, DeltaType::Deleted]);
    assert!(deltas[1].obj.is_tombstone());
    assert_eq!(deltas[1].obj.object().resource_version(), "5");
}

#[tokio::test]
async fn replace_emits_sync_when_replaced_is_not_requested() {
    let fifo = DeltaFifo::new(Some(Indexer::new().store()), false);
    fifo.replace(vec![pod("ns", "a", 1)], "1");
    assert_eq!(kinds(&fifo.deltas("ns/a").unwrap()), [DeltaType::Sync]);
}

#[tokio::test]
async fn consecutive_deletes_dedupe_keeping_the_real_delete() {
    let known = Indexer::new();
    known.add(pod("ns", "a", 1));
    let fifo = DeltaFifo::new(Some(known.store()), true);
    // A real delete, then a relist that no longer lists the object (a tombstone).
    fifo.delete(pod("ns", "a", 2));
    fifo.replace(vec![], "3");
    let deltas = fifo.deltas("ns/a").unwrap();
    assert_eq!(deltas.len(), 1);
    assert!(!deltas[0].obj.is_tombstone(), "the real delete wins over the tombstone");
    assert_eq!(deltas[0].obj.object().resource_version(), "2");
}

/// Two real deletes in a row keep the older, as client-go's `isDeletionDup` does; a tombstone
/// followed by a real delete keeps the real one.
#[tokio::test]
async fn consecutive_real_deletes_keep_the_older() {
    let known = Indexer::new();
    known.add(pod("ns", "a", 1));
    known.add(pod("ns", "b", 1));
    let fifo = DeltaFifo::new(Some(known.store()), true);
    fifo.delete(pod("ns", "a", 2));
    fifo.delete(pod("ns", "a", 3));
    let deltas = fifo.deltas("ns/a").unwrap();
    assert_eq!(deltas.len(), 1);
    assert_eq!(deltas[0].obj.object().resource_version(), "2");
    fifo.replace(vec![pod("ns", "a", 4)], "4");
    fifo.delete(pod("ns", "b", 5));
    let deltas = fifo.deltas("ns/b").unwrap();
    assert_eq!(deltas.len(), 1);
    assert!(!deltas[0].obj.is_tombstone(), "the real delete wins over the tombstone before it");
    assert_eq!(deltas[0].obj.object().resource_version(), "5");
}

#[tokio::test]
async fn delete_of_an_unknown_key_is_ignored() {
    let fifo = DeltaFifo::new(Some(Indexer::new().store()), true);
    fifo.delete(pod("ns", "never-seen", 1));
    assert!(fifo.is_empty());
}

/// A delete counts as an event even when there is nothing to delete: a queue that had no
/// list yet is populated (and, empty, synced) after it, as client-go's `Delete` sets
/// `populated` first.
#[tokio::test]
async fn a_delete_of_an_unknown_key_still_populates_the_queue() {
    let fifo = DeltaFifo::new(Some(Indexer::new().store()), true);
    assert!(!fifo.has_synced());
    fifo.delete(pod("ns", "never-seen", 1));
    assert!(fifo.has_synced());
}

#[tokio::test]
async fn resync_skips_keys_with_queued_deltas() {
    let known = Indexer::new();
    known.add(pod("ns", "idle", 1));
    known.add(pod("ns", "busy", 1));
    let fifo = DeltaFifo::new(Some(known.store()), true);
    fifo.update(pod("ns", "busy", 2));
    fifo.resync();
    assert_eq!(kinds(&fifo.deltas("ns/busy").unwrap()), [DeltaType::Updated]);
    assert_eq!(kinds(&fifo.deltas("ns/idle").unwrap()), [DeltaType::Sync]);
}

#[tokio::test]
async fn has_synced_counts_the_initial_replace_including_tombstones() {
    let known = Indexer::new();
    known.add(pod("ns", "stale", 1));
    let fifo = DeltaFifo::new(Some(known.store()), true);
    assert!(!fifo.has_synced(), "nothing populated yet");
    fifo.replace(vec![pod("ns", "a", 2), pod("ns", "b", 2)], "2");
    // Events after the replace do not extend the initial population.
    fifo.add(pod("ns", "c", 3));
    let mut initial_flags = Vec::new();
    for _ in 0..3 {
        assert!(!fifo.has_synced());
        fifo.pop(|_, initial| {
            initial_flags.push(initial);
        })
        .await
        .unwrap();
    }
    assert!(fifo.has_synced(), "a, b and the stale tombstone were popped");
    fifo.pop(|_, initial| {
        initial_flags.push(initial);
    })
    .await
    .unwrap();
    assert_eq!(initial_flags, [true, true, true, false]);
}

#[tokio::test]
async fn has_synced_after_a_first_event_before_any_replace_is_popped() {
    let fifo = DeltaFifo::new(Some(Indexer::new().store()), true);
    fifo.add(pod("ns", "a", 1));
    assert!(!fifo.has_synced());
    pop_all(&fifo).await;
    assert!(fifo.has_synced());
}

/// client-go's `DeltaFIFO.Pop`: the item is removed before `process` runs and handed to it,
/// and nothing puts it back.
#[tokio::test]
async fn pop_hands_the_deltas_over_and_keeps_nothing() {
    let fifo = DeltaFifo::new(None, true);
    fifo.add(pod("ns", "a", 1));
    fifo.update(pod("ns", "a", 2));
    let seen = fifo.pop(|deltas, _| deltas).await.unwrap();
    assert_eq!(kinds(&seen), [DeltaType::Added, DeltaType::Updated]);
    assert!(fifo.is_empty() && fifo.deltas("ns/a").is_none(), "nothing is put back");
}

/// A closed queue still hands over what was queued before `close`, then says it is closed
/// (client-go's `Pop` returns `ErrFIFOClosed` only once the queue is empty).
#[tokio::test]
async fn a_closed_queue_is_drained_before_pop_says_it_is_closed() {
    let fifo = DeltaFifo::new(None, true);
    fifo.add(pod("ns", "a", 1));
    fifo.close();
    let popped = fifo.pop(|deltas, _| DeltaFifo::key_of(&deltas[0].obj).to_owned()).await;
    assert_eq!(popped.as_deref(), Ok("ns/a"));
    assert_eq!(fifo.pop(|_, _| ()).await.unwrap_err(), FifoClosed);
}

#[tokio::test]
async fn close_wakes_a_waiting_popper() {
    let fifo = Arc::new(DeltaFifo::new(None, true));
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.pop(|_, _| ()).await }
    });
    tokio::task::yield_now().await;
    fifo.close();
    assert_eq!(popper.await.unwrap().unwrap_err(), FifoClosed);
    assert!(fifo.is_closed());
}

#[tokio::test]
async fn pop_waits_for_an_item() {
    let fifo = Arc::new(DeltaFifo::new(None, true));
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move {
            let mut key = String::new();
            fifo.pop(|d, _| {
                key = d[0].obj.object().key().to_owned();
            })
            .await
            .map(|_| key)
        }
    });
    tokio::task::yield_now().await;
    fifo.add(pod("ns", "late", 1));
    assert_eq!(popper.await.unwrap().unwrap(), "ns/late");
}

/// client-go's `DeltaFIFO.queueActionInternalLocked`: the transformer runs once for every
/// object entering through Add/Update/Delete/Replace, never for tombstones nor for the
/// `Sync` deltas of a resync (their objects come from the cache, transformed already).
#[tokio::test]
async fn the_transformer_runs_once_per_incoming_object_but_not_on_resync_or_tombstones() {
    let known = Indexer::new();
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let fifo = DeltaFifo::with_options(DeltaFifoOptions {
        known_objects: Some(known.store()),
        emit_delta_type_replaced: true,
        transformer: Some(Arc::new(move |obj: Object| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            obj.into_without_managed_fields()
        })),
        panics: Default::default(),
    });
    let calls = || calls.load(std::sync::atomic::Ordering::SeqCst);
    fifo.add(pod("ns", "a", 1));
    fifo.update(pod("ns", "a", 2));
    assert_eq!(calls(), 2);
    // A delete of a key nobody knows is dropped before it would be transformed.
    fifo.delete(pod("ns", "nobody", 1));
    assert_eq!(calls(), 2);
    known.add(pod("ns", "old", 1));
    fifo.replace(vec![pod("ns", "a", 3)], "3");
    assert_eq!(calls(), 3, "the listed object, not the tombstone for ns/old");
    let tombstone = fifo.deltas("ns/old").unwrap();
    assert!(tombstone[0].obj.is_tombstone());
    while !fifo.is_empty() {
        fifo.pop(|deltas, _| {
            for d in deltas {
                if !d.obj.is_tombstone() {
                    known.add(d.obj.object().clone());
                }
            }
        })
        .await
        .unwrap();
    }
    fifo.resync();
    assert!(!fifo.is_empty(), "resync queued the known objects");
    assert_eq!(calls(), 3, "resync's Sync deltas are not transformed again");
    assert_eq!(DeltaFifo::key_of(&tombstone[0].obj), "ns/old");
}

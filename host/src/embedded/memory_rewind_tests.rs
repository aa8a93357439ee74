//! Rewinding a memory source and replaying what was undone: the same list and watch again.

use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::embedded::{MemorySourceOptions, Revision};
use crate::informer::list_watch::{ListParams, ListerWatcher, WatchEvent, WatchParams};

fn cm(name: &str, value: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": name}, "data": {"v": value}})
}

fn state(src: &MemorySource) -> Vec<(String, String)> {
    src.objects().iter().map(|o| (o.key().to_owned(), o.json().to_owned())).collect()
}

/// The watch events from `rv` until the stream has nothing more queued.
async fn events_after(src: &MemorySource, rv: u64) -> Vec<(String, String, String)> {
    let params = WatchParams { resource_version: rv.to_string(), ..Default::default() };
    let mut stream = src.watch(&params).await.unwrap();
    let mut seen = Vec::new();
    while let Some(Some(Ok(event))) = futures::FutureExt::now_or_never(stream.next()) {
        let (kind, object) = match event {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            other => panic!("unexpected {other:?}"),
        };
        seen.push((kind.to_owned(), object.key().to_owned(), object.json().to_owned()));
    }
    seen
}

#[tokio::test]
async fn a_rewound_source_lists_its_past_and_a_replay_serves_the_same_watch() {
    let src = MemorySource::default();
    src.apply(cm("a", "1")).unwrap();
    src.apply(cm("b", "1")).unwrap();
    let base = src.resource_version();
    let before = state(&src);
    src.apply(cm("a", "2")).unwrap();
    src.apply(cm("c", "1")).unwrap();
    src.delete("ns/b").unwrap();
    let after = state(&src);
    let (end, written) = (src.resource_version(), events_after(&src, base).await);
    assert_eq!(written.len(), 3);

    let recorded = src.rewind(base).unwrap();
    assert_eq!(recorded.len(), 3);
    assert_eq!(state(&src), before, "the objects are back at the base version");
    assert_eq!(src.resource_version(), base);
    let list = src.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.resource_version, base.to_string());
    assert!(events_after(&src, base).await.is_empty(), "nothing happened after the base version");

    src.replay(&recorded).unwrap();
    assert_eq!(state(&src), after);
    assert_eq!(src.resource_version(), end);
    assert_eq!(events_after(&src, base).await, written, "the same events, versions and objects");

    // And again: a recording serves any number of rounds.
    src.rewind(base).unwrap();
    src.replay(&recorded).unwrap();
    assert_eq!(events_after(&src, base).await, written);
}

#[tokio::test]
async fn a_replay_reaches_open_watches_and_a_rewind_ends_them() {
    let src = MemorySource::default();
    src.apply(cm("a", "1")).unwrap();
    let base = src.resource_version();
    src.apply(cm("a", "2")).unwrap();
    let recorded = src.rewind(base).unwrap();

    let params = WatchParams { resource_version: base.to_string(), ..Default::default() };
    let mut stream = src.watch(&params).await.unwrap();
    src.replay(&recorded).unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Modified(o))) if o.json().contains("\"2\"")));
    src.rewind(base).unwrap();
    assert!(stream.next().await.is_none(), "a rewind ends open watches, as a restarted server would");
}

#[test]
fn a_rewind_undoes_only_the_clusters_latest_writes() {
    let revision = Revision::default();
    let options = MemorySourceOptions { revision: revision.clone(), ..MemorySourceOptions::default() };
    let (pods, maps) = (MemorySource::new(options.clone()), MemorySource::new(options));
    pods.apply(cm("a", "1")).unwrap();
    let base = revision.current();
    pods.apply(cm("a", "2")).unwrap();
    maps.apply(cm("b", "1")).unwrap();
    let err = pods.rewind(base).unwrap_err();
    assert!(matches!(err, RewindError::NotLatest { .. }), "{err}");
    assert_eq!(revision.current(), base + 2, "a refused rewind changes nothing");
    assert_eq!(pods.objects().len(), 1);
}

#[test]
fn a_replay_must_follow_the_version_it_was_recorded_after() {
    let src = MemorySource::default();
    src.apply(cm("a", "1")).unwrap();
    let base = src.resource_version();
    src.apply(cm("a", "2")).unwrap();
    let recorded = src.rewind(base).unwrap();
    src.apply(cm("z", "1")).unwrap();
    let err = src.replay(&recorded).unwrap_err();
    assert_eq!(err, RewindError::Moved { after: base, revision: base + 1 });
    assert_eq!(src.objects().len(), 2, "a refused replay changes nothing");
}

#[test]
fn a_rewind_past_the_history_is_refused() {
    let src = MemorySource::new(MemorySourceOptions { history_limit: 2, ..MemorySourceOptions::default() });
    for value in ["1", "2", "3", "4"] {
        src.apply(cm("a", value)).unwrap();
    }
    let err = src.rewind(2).unwrap_err();
    assert!(matches!(err, RewindError::Compacted { to: 2, .. }), "{err}");
    assert!(src.rewind(3).is_ok(), "the history reaches back to its oldest kept change");
}

#[tokio::test]
async fn replaying_the_parts_in_order_serves_what_the_whole_would() {
    let src = MemorySource::default();
    src.apply(cm("a", "1")).unwrap();
    let base = src.resource_version();
    for value in ["2", "3", "4", "5", "6"] {
        src.apply(cm("a", value)).unwrap();
        src.apply(cm(&format!("n{value}"), value)).unwrap();
    }
    let (end, written, after) = (src.resource_version(), events_after(&src, base).await, state(&src));
    let recorded = src.rewind(base).unwrap();
    let versions: Vec<u64> = recorded.objects().map(|(rv, _)| rv).collect();
    assert_eq!(versions, (base + 1..=end).collect::<Vec<_>>(), "each change with its version");
    assert_eq!(recorded.objects().filter(|(_, o)| o.name() == "a").count(), 5);

    let mut parts = recorded.into_parts(4);
    assert_eq!(parts.iter().map(Recorded::len).collect::<Vec<_>>(), [4, 4, 2]);
    let err = src.replay(&parts[1]).unwrap_err();
    assert!(matches!(err, RewindError::Moved { .. }), "a later part waits for the earlier ones: {err}");
    for part in parts.drain(..) {
        src.replay(&part).unwrap();
    }
    assert_eq!(state(&src), after);
    assert_eq!(src.resource_version(), end);
    assert_eq!(events_after(&src, base).await, written);
}

//! The in-memory source's storage semantics: paging, the past, compaction, watches.

use super::super::memory_read::{ResourceVersionMatch, Selects};
use super::*;
use futures::StreamExt;
use serde_json::json;

fn cm(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": name}})
}

#[tokio::test]
async fn list_pages_over_a_consistent_snapshot() {
    let src = MemorySource::default();
    for i in 0..5 {
        src.apply(cm(&format!("c{i}"))).unwrap();
    }
    let first = src.list(&ListParams { limit: Some(2), ..Default::default() }).await.unwrap();
    assert_eq!(first.items.len(), 2);
    src.apply(cm("late")).unwrap();
    let mut params = ListParams { limit: Some(2), continue_token: first.continue_token, ..Default::default() };
    let mut total = 2;
    while params.continue_token.is_some() {
        let page = src.list(&params).await.unwrap();
        assert_eq!(page.resource_version, "6", "every page is at the first page's resourceVersion");
        total += page.items.len();
        params.continue_token = page.continue_token;
    }
    assert_eq!(total, 5, "the object created during paging is not in the snapshot");
}

#[tokio::test]
async fn compaction_expires_continue_tokens_and_old_watches() {
    let src = MemorySource::default();
    for i in 0..3 {
        src.apply(cm(&format!("c{i}"))).unwrap();
    }
    let page = src.list(&ListParams { limit: Some(1), ..Default::default() }).await.unwrap();
    src.compact();
    let err = src
        .list(&ListParams { limit: Some(1), continue_token: page.continue_token, ..Default::default() })
        .await
        .unwrap_err();
    assert!(err.is_gone());
    src.apply(cm("c9")).unwrap();
    let mut stream = src.watch(&WatchParams { resource_version: "1".into(), ..Default::default() }).await.unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Error(s))) if s.is_gone()));
}

/// Regression: an object nested deeper than `serde_json` reads back was stored, and
/// deleting it (which re-reads its JSON) panicked.
#[test]
fn deleting_the_deepest_object_does_not_panic() {
    let src = MemorySource::default();
    let mut value = json!("leaf");
    // metadata's siblings: the top-level object is level 1, so 126 more levels.
    for _ in 0..MAX_DEPTH - 1 {
        value = json!([value]);
    }
    let mut doc = cm("deep");
    doc["spec"] = value;
    src.apply(doc).unwrap();
    let deleted = src.delete("ns/deep").unwrap();
    assert_eq!(deleted.resource_version(), "3");
    let mut too_deep = cm("deeper");
    too_deep["spec"] = json!([[deleted.to_value().unwrap()]]);
    assert!(matches!(src.apply(too_deep), Err(ObjectError::TooDeep)));
    assert!(src.get("ns/deeper").is_none());
}

#[tokio::test]
async fn watch_replays_history_after_the_resource_version_then_streams_live() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    src.apply(cm("b")).unwrap();
    let mut stream = src.watch(&WatchParams { resource_version: "2".into(), ..Default::default() }).await.unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Added(o))) if o.name() == "b"));
    src.apply(cm("a")).unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Modified(o))) if o.resource_version() == "4"));
    let deleted = src.delete("ns/a").unwrap();
    assert_eq!(deleted.resource_version(), "5");
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Deleted(o))) if o.name() == "a"));
    src.disconnect_watches();
    assert!(stream.next().await.is_none());
}

fn labelled(name: &str, team: &str) -> serde_json::Value {
    let mut obj = cm(name);
    obj["metadata"]["labels"] = json!({"team": team});
    obj
}

fn names(list: &ObjectList) -> Vec<&str> {
    list.items.iter().map(Object::name).collect()
}

/// The API server's LIST reading of `resourceVersion` and `resourceVersionMatch`.
#[test]
fn lists_read_the_past_exactly_or_the_present_not_older_than_asked() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap(); // 2
    src.apply(cm("b")).unwrap(); // 3
    src.delete("ns/a").unwrap(); // 4
    src.apply(cm("c")).unwrap(); // 5
    let all = |_: &Object| true;
    let exact = ListParams { resource_version: Some("3".into()), ..Default::default() };
    let past = src.list_matching(&exact, Some(ResourceVersionMatch::Exact), &all).unwrap();
    assert_eq!((names(&past.list), past.list.resource_version.as_str()), (vec!["a", "b"], "3"));
    // The legacy reading: a version with a limit is exact too.
    let legacy = ListParams { limit: Some(1), ..exact.clone() };
    let page = src.list_matching(&legacy, None, &all).unwrap();
    assert_eq!((names(&page.list), page.remaining), (vec!["a"], 1));
    let latest = src.list_matching(&exact, Some(ResourceVersionMatch::NotOlderThan), &all).unwrap();
    assert_eq!((names(&latest.list), latest.list.resource_version.as_str()), (vec!["b", "c"], "5"));
    let too_new = ListParams { resource_version: Some("9".into()), ..Default::default() };
    let err = src.list_matching(&too_new, None, &all).unwrap_err();
    assert!(matches!(err, SourceError::Api(ref s) if s.code == 504), "{err:?}");
    // "0" is any state: the watch cache answers whole, whatever the limit.
    let any = ListParams { resource_version: Some("0".into()), limit: Some(1), ..Default::default() };
    let whole = src.list_matching(&any, None, &all).unwrap();
    assert_eq!((whole.list.items.len(), whole.list.continue_token), (2, None));
    src.compact();
    assert!(src.list_matching(&exact, Some(ResourceVersionMatch::Exact), &all).unwrap_err().is_gone());
}

/// A paged list over a selection pages the selected items only.
#[test]
fn paged_lists_page_over_the_selection() {
    let src = MemorySource::default();
    for i in 0..6 {
        src.apply(labelled(&format!("c{i}"), if i % 2 == 0 { "red" } else { "blue" })).unwrap();
    }
    let red = |o: &Object| o.labels().get("team") == Some("red");
    let mut params = ListParams { limit: Some(2), ..Default::default() };
    let first = src.list_matching(&params, None, &red).unwrap();
    assert_eq!((names(&first.list), first.remaining), (vec!["c0", "c2"], 1));
    params.continue_token = first.list.continue_token;
    let second = src.list_matching(&params, None, &red).unwrap();
    assert_eq!((names(&second.list), second.list.continue_token.as_deref()), (vec!["c4"], None));
}

/// Every store of a cluster shares one revision, as etcd's.
#[test]
fn stores_sharing_a_revision_stamp_one_increasing_sequence() {
    let revision = Revision::default();
    let options = MemorySourceOptions { revision: revision.clone(), ..Default::default() };
    let (pods, cms) = (MemorySource::new(options.clone()), MemorySource::new(options));
    let a = cms.apply(cm("a")).unwrap();
    let mut pod = cm("p");
    pod["kind"] = json!("Pod");
    let p = pods.apply(pod).unwrap();
    assert_eq!((a.resource_version(), p.resource_version()), ("2", "3"));
    assert_eq!((cms.resource_version(), revision.current()), (3, 3));
}

/// Through a selection, an object moving in is ADDED and one moving out DELETED; a watch
/// from a version starts from the selection as it was then.
#[tokio::test]
async fn watches_over_a_selection_see_objects_move_in_and_out() {
    let src = MemorySource::default();
    src.apply(labelled("a", "red")).unwrap(); // 2
    src.apply(labelled("b", "blue")).unwrap(); // 3
    let red: Selects = Arc::new(|o: &Object| o.labels().get("team") == Some("red"));
    let params = WatchParams { resource_version: "3".into(), ..Default::default() };
    let mut stream = src.watch_matching(&params, Some(red)).unwrap();
    src.apply(labelled("b", "red")).unwrap();
    src.apply(labelled("a", "blue")).unwrap();
    src.apply(labelled("a", "green")).unwrap();
    src.delete("ns/b").unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(match stream.next().await {
            Some(Ok(WatchEvent::Added(o))) => format!("ADDED {}", o.name()),
            Some(Ok(WatchEvent::Modified(o))) => format!("MODIFIED {}", o.name()),
            Some(Ok(WatchEvent::Deleted(o))) => format!("DELETED {}", o.name()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, ["ADDED b", "DELETED a", "DELETED b"]);
}

/// A watch allowing bookmarks gets one every interval, at the current version.
#[tokio::test(start_paused = true)]
async fn watches_allowing_bookmarks_get_them_periodically() {
    let options =
        MemorySourceOptions { bookmark_interval: Some(std::time::Duration::from_secs(60)), ..Default::default() };
    let src = MemorySource::new(options);
    let params = WatchParams { resource_version: "1".into(), allow_bookmarks: true, ..Default::default() };
    let mut stream = src.watch(&params).await.unwrap();
    src.apply(cm("a")).unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Added(_)))));
    let next = stream.next().await;
    assert!(matches!(next, Some(Ok(WatchEvent::Bookmark { ref resource_version, .. })) if resource_version == "2"));
}

/// kube-apiserver's cadence: a bookmark every interval, one more 2 s before the watch's
/// timeout, none after it; the stream ends at the timeout.
#[tokio::test(start_paused = true)]
async fn a_watch_with_a_timeout_gets_its_last_bookmark_two_seconds_before_it() {
    use std::time::Duration;
    let options = MemorySourceOptions { bookmark_interval: Some(Duration::from_secs(60)), ..Default::default() };
    let src = MemorySource::new(options);
    let params = WatchParams {
        resource_version: "0".into(),
        allow_bookmarks: true,
        timeout: Some(Duration::from_secs(150)),
        ..Default::default()
    };
    let start = tokio::time::Instant::now();
    let mut stream = src.watch(&params).await.unwrap();
    let mut bookmarks = Vec::new();
    while let Some(event) = stream.next().await {
        assert!(matches!(event, Ok(WatchEvent::Bookmark { .. })), "{event:?}");
        bookmarks.push(start.elapsed().as_secs());
    }
    assert_eq!(bookmarks, [60, 120, 148]);
    assert_eq!(start.elapsed(), Duration::from_secs(150), "the watch ends at its timeout");
}

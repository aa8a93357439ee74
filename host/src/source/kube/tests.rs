//! The kube source: collection paths, apiVersions, error classification and the initial-events guard.

use super::*;

fn resolved(group: &str, namespaced: bool) -> ResourceDef {
    let api_version = if group.is_empty() { "v1".into() } else { format!("{group}/v1") };
    ResourceDef::custom(&api_version, "Thing", "things", namespaced)
}

#[test]
fn collection_paths_for_core_grouped_namespaced_and_cluster_scoped() {
    assert_eq!(resolved("", true).collection_path(None), "/api/v1/things");
    assert_eq!(resolved("", true).collection_path(Some("ns")), "/api/v1/namespaces/ns/things");
    assert_eq!(resolved("example.com", true).collection_path(Some("ns")), "/apis/example.com/v1/namespaces/ns/things");
    assert_eq!(resolved("example.com", false).collection_path(None), "/apis/example.com/v1/things");
}

#[test]
fn api_versions_split_into_group_and_version() {
    assert_eq!(split_api_version("v1").unwrap(), ("", "v1"));
    assert_eq!(split_api_version("apps/v1").unwrap(), ("apps", "v1"));
    for bad in ["", "apps/", "/v1", "a/b/c"] {
        assert!(matches!(split_api_version(bad), Err(SourceError::Unsupported(_))), "{bad}");
    }
}

/// An error that wraps an I/O error as its source, as hyper and kube wrap theirs.
#[derive(Debug, thiserror::Error)]
#[error("outer")]
struct Outer(#[source] std::io::Error);

#[test]
fn probable_eof_is_recognised_through_the_error_chain() {
    let eof = Outer(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "early eof"));
    assert!(is_probable_eof(&eof));
    let other = Outer(std::io::Error::other("disk on fire"));
    assert!(!is_probable_eof(&other));
}

/// client-go's `utilnet.IsConnectionRefused` (used by `isWatchErrorRetriable`): a refused
/// connection is found anywhere in the error chain and becomes
/// [`SourceError::ConnectionRefused`], which the reflector re-watches after.
#[test]
fn connection_refused_is_recognised_through_the_error_chain() {
    let refused = Outer(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connect"));
    assert!(is_connection_refused(&refused));
    assert!(!is_connection_refused(&Outer(std::io::Error::other("reset"))));
    let err = kube_error(kube::Error::Service(Box::new(refused)));
    assert!(matches!(err, SourceError::ConnectionRefused(_)), "{err:?}");
    assert!(err.rewatches());
}

#[tokio::test]
async fn initial_event_guard_latches_when_the_server_ignores_send_initial_events() {
    let obj = crate::informer::object::Object::from_str(r#"{"metadata":{"name":"a","resourceVersion":"1"}}"#).unwrap();
    let events: Vec<Result<WatchEvent, SourceError>> = vec![
        Ok(WatchEvent::Added(obj)),
        Ok(WatchEvent::Bookmark { resource_version: "5".into(), initial_events_end: false }),
    ];
    let latch = Arc::new(AtomicBool::new(false));
    let mut guarded = guard_initial_events(futures::stream::iter(events).boxed(), latch.clone());
    assert!(matches!(guarded.next().await, Some(Ok(WatchEvent::Added(_)))));
    assert!(matches!(guarded.next().await, Some(Err(SourceError::Unsupported(_)))));
    assert!(latch.load(Ordering::SeqCst));

    let events: Vec<Result<WatchEvent, SourceError>> = vec![
        Ok(WatchEvent::Bookmark { resource_version: "5".into(), initial_events_end: true }),
        Ok(WatchEvent::Bookmark { resource_version: "6".into(), initial_events_end: false }),
    ];
    let latch = Arc::new(AtomicBool::new(false));
    let guarded: Vec<_> = guard_initial_events(futures::stream::iter(events).boxed(), latch.clone()).collect().await;
    assert!(guarded.iter().all(Result::is_ok), "plain bookmarks after the initial events are fine");
    assert!(!latch.load(Ordering::SeqCst));
}

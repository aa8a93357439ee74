//! Unit tests of the reflector's streaming lists (`sendInitialEvents`), with paused time.

use super::*;

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_at_the_initial_events_end_bookmark() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    src.apply(cm("b")).unwrap();
    let config = ReflectorConfig { use_watch_list: true, ..no_jitter() };
    let r = start(Arc::new(src.clone()), config, |r| r);
    settle().await;
    assert!(src.list_requests().is_empty(), "no LIST when streaming works");
    assert!(src.watch_requests()[0].send_initial_events);
    let deltas = drain(&r).await;
    assert_eq!(deltas.len(), 2);
    assert!(deltas.iter().all(|(k, _)| *k == DeltaType::Replaced));
    assert!(r.fifo.has_synced());
    src.apply(cm("c")).unwrap();
    settle().await;
    assert_eq!(drain(&r).await[0].0, DeltaType::Added, "the same stream goes on with live events");
}

#[tokio::test(start_paused = true)]
async fn streaming_list_falls_back_to_list_when_unsupported() {
    let src = MemorySource::new(crate::embedded::MemorySourceOptions { watch_list: false, ..Default::default() });
    src.apply(cm("a")).unwrap();
    let config = ReflectorConfig { use_watch_list: true, ..no_jitter() };
    let r = start(Arc::new(src.clone()), config, |r| r);
    settle().await;
    assert_eq!(src.list_requests().len(), 1);
    assert_eq!(r.fifo.len(), 1);
}

/// client-go's `ListAndWatch` with `useWatchList`: when `watchList` fails with an error it
/// does not retry (any but 429, "connection refused" and "unsupported"), the same attempt
/// falls back to LIST/WATCH at once; a later attempt streams again.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_failing_otherwise_falls_back_to_list_at_once() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    src.fail_next_watch(SourceError::Api(Status { code: 500, reason: "InternalError".into(), message: "boom".into() }));
    let config = ReflectorConfig { use_watch_list: true, ..no_jitter() };
    let r = start(Arc::new(src.clone()), config, |r| r);
    settle().await;
    assert_eq!(src.list_requests().len(), 1, "listed at once, without backoff");
    assert_eq!(r.fifo.len(), 1);
    let watches = src.watch_requests();
    assert_eq!(watches.len(), 2);
    assert!(watches[0].send_initial_events && !watches[1].send_initial_events);
    // A failure later starts over with a streaming list.
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.send_watch_error(Status { code: 410, reason: "Expired".into(), message: "too old".into() });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(src.watch_requests()[2].send_initial_events, "streams again after the next failure");
}

/// client-go's `ListAndWatch`: a streaming list that breaks off before its initial-events-end
/// bookmark (an error in the stream) also falls back to LIST/WATCH at once.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_breaking_off_falls_back_to_list_at_once() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let lw = Arc::new(FailingWatch {
        src: src.clone(),
        error: parking_lot::Mutex::new(Some(SourceError::Transport("connection reset".into()))),
    });
    let config = ReflectorConfig { use_watch_list: true, ..no_jitter() };
    let r = start(lw, config, |r| r);
    settle().await;
    assert_eq!(src.list_requests().len(), 1, "listed at once, without backoff");
    assert_eq!(r.fifo.len(), 1);
}

/// client-go's `TestWatchList` ("checks if the reflector retries 429"): a streaming list
/// refused with 429 or "connection refused" is asked for again after backoff — no LIST,
/// the heavier request an overloaded server meant to avoid.
#[tokio::test(start_paused = true)]
async fn a_throttled_or_refused_streaming_list_is_asked_for_again_after_backoff() {
    let throttled =
        || SourceError::from(Status { code: 429, reason: "TooManyRequests".into(), message: "slow".into() });
    for error in [throttled(), SourceError::ConnectionRefused("connection refused".into())] {
        let what = error.to_string();
        let lw = Timed::default();
        lw.src.apply(cm("a")).unwrap();
        lw.src.fail_next_watch(error);
        let config = ReflectorConfig { use_watch_list: true, ..no_jitter() };
        let r = start(Arc::new(lw.clone()), config, |r| r);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(lw.src.list_requests().is_empty(), "{what}: no LIST");
        let watches = lw.src.watch_requests();
        assert_eq!(watches.len(), 2, "{what}");
        assert!(watches.iter().all(|w| w.send_initial_events), "{what}: streamed again");
        let at: Vec<Instant> = lw.calls.lock().iter().map(|(t, _)| *t).collect();
        assert!(at[1] - at[0] >= Duration::from_millis(800), "{what}: after backoff");
        assert_eq!(r.fifo.len(), 1, "{what}");
    }
    // The same for a 429 ending the stream (an ERROR event) before its initial events ended.
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    src.apply(cm("b")).unwrap();
    let lw = Arc::new(FailingWatch { src: src.clone(), error: parking_lot::Mutex::new(Some(throttled())) });
    let r = start(lw, ReflectorConfig { use_watch_list: true, ..no_jitter() }, |r| r);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(src.list_requests().is_empty(), "no LIST after a 429 in the stream");
    assert_eq!(src.watch_requests().iter().filter(|w| w.send_initial_events).count(), 2);
    assert_eq!(r.fifo.len(), 2, "only the second stream's objects, whole");
}

/// A source whose first streaming list sends `first` events, then ends before its
/// initial-events-end bookmark.
struct EndingEarly {
    src: MemorySource,
    first: parking_lot::Mutex<Option<usize>>,
}

#[async_trait]
impl ListerWatcher for EndingEarly {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.src.list(params).await
    }
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        let stream = self.src.watch(params).await?;
        Ok(match self.first.lock().take() {
            Some(events) => stream.take(events).boxed(),
            None => stream,
        })
    }
}

/// client-go's `TestWatchList` ("stopping a watcher before sync results in creating a new
/// watch-list request"): a streaming list closed before the end of its initial events, with
/// some sent, is asked for again at once and nothing of the first is kept; one closed within
/// a second without any event is a failure ("very short watch"), which falls back to LIST.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_closed_before_its_initial_events_ended_is_asked_for_again() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    src.apply(cm("b")).unwrap();
    let lw = Arc::new(EndingEarly { src: src.clone(), first: parking_lot::Mutex::new(Some(1)) });
    let r = start(lw, ReflectorConfig { use_watch_list: true, ..no_jitter() }, |r| r);
    settle().await;
    assert!(src.list_requests().is_empty(), "no LIST");
    assert_eq!(src.watch_requests().iter().filter(|w| w.send_initial_events).count(), 2, "streamed again at once");
    let deltas = drain(&r).await;
    assert_eq!(deltas.len(), 2);
    assert!(deltas.iter().all(|(k, _)| *k == DeltaType::Replaced));

    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let lw = Arc::new(EndingEarly { src: src.clone(), first: parking_lot::Mutex::new(Some(0)) });
    let r = start(lw, ReflectorConfig { use_watch_list: true, ..no_jitter() }, |r| r);
    settle().await;
    assert_eq!(src.list_requests().len(), 1, "a very short streaming list falls back to LIST at once");
    assert_eq!(r.fifo.len(), 1);
}

/// client-go's `watchList` asks for the state not older than the last synced resourceVersion
/// (`rewatchResourceVersion`): the most recent state ("") before the first sync, the synced
/// version after it; one the server no longer has makes it ask again at once for the most
/// recent state, still streaming.
#[tokio::test(start_paused = true)]
async fn a_streaming_relist_asks_for_the_last_synced_version_and_the_latest_once_it_expired() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let r = start(Arc::new(src.clone()), ReflectorConfig { use_watch_list: true, ..no_jitter() }, |r| r);
    settle().await;
    src.apply(cm("b")).unwrap();
    settle().await;
    let synced = r.rv.read().clone();
    assert!(!synced.is_empty());
    src.fail_next_watch(SourceError::Gone("too old resource version".into()));
    src.send_watch_error(Status { code: 500, reason: "InternalError".into(), message: "etcd".into() });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let asked: Vec<(String, bool)> =
        src.watch_requests().into_iter().map(|w| (w.resource_version, w.send_initial_events)).collect();
    assert_eq!(asked, [(String::new(), true), (synced, true), (String::new(), true)]);
    assert!(src.list_requests().is_empty(), "no LIST");
}

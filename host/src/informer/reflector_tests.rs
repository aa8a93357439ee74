//! Unit tests of the reflector's transitions, with paused time.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;

use super::*;
use crate::embedded::MemorySource;
use crate::informer::delta_fifo::{DeltaObject, DeltaType};
use crate::informer::indexer::Indexer;
use crate::informer::list_watch::{ObjectList, Status};

pub(super) fn cm(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": name}})
}

/// A source that records when each call happened.
#[derive(Clone, Default)]
struct Timed {
    src: MemorySource,
    calls: Arc<parking_lot::Mutex<Vec<(Instant, &'static str)>>>,
}

#[async_trait]
impl ListerWatcher for Timed {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.calls.lock().push((Instant::now(), "list"));
        self.src.list(params).await
    }
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        self.calls.lock().push((Instant::now(), "watch"));
        self.src.watch(params).await
    }
}

fn no_jitter() -> ReflectorConfig {
    ReflectorConfig { backoff: BackoffConfig { jitter: 0.0, ..BackoffConfig::default() }, ..ReflectorConfig::default() }
}

struct Running {
    fifo: Arc<DeltaFifo>,
    known: Indexer,
    rv: Arc<RwLock<String>>,
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn start(lw: Arc<dyn ListerWatcher>, config: ReflectorConfig, f: impl FnOnce(Reflector) -> Reflector) -> Running {
    let known = Indexer::new();
    let fifo = Arc::new(DeltaFifo::new(Some(known.store()), true));
    let rv = Arc::new(RwLock::new(String::new()));
    let reflector = f(Reflector::new(lw, fifo.clone(), config).with_last_sync_cell(rv.clone()));
    let cancel = CancellationToken::new();
    tokio::spawn(reflector.run(cancel.clone()));
    Running { fifo, known, rv, cancel }
}

/// Lets spawned tasks run; with paused time this advances the clock only as far as needed.
async fn settle() {
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// Pops everything queued into the known indexer, as the informer would, and returns the
/// deltas.
async fn drain(r: &Running) -> Vec<(DeltaType, DeltaObject)> {
    let mut out = Vec::new();
    while !r.fifo.is_empty() {
        r.fifo
            .pop(|deltas, _| {
                for d in deltas {
                    match d.kind {
                        DeltaType::Deleted => {
                            r.known.delete_key(d.obj.object().key());
                        }
                        _ => r.known.update(d.obj.object().clone()),
                    }
                    out.push((d.kind, d.obj));
                }
            })
            .await
            .unwrap();
    }
    out
}

#[tokio::test(start_paused = true)]
async fn lists_then_watches_from_the_lists_resource_version() {
    let src = MemorySource::default();
    for name in ["a", "b", "c"] {
        src.apply(cm(name)).unwrap();
    }
    let r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    settle().await;
    assert_eq!(r.fifo.len(), 3);
    assert_eq!(*r.rv.read(), "4");
    let watches = src.watch_requests();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].resource_version, "4");
    assert!(watches[0].allow_bookmarks);
    let timeout = watches[0].timeout.unwrap();
    assert!(timeout >= Duration::from_secs(300) && timeout < Duration::from_secs(600), "{timeout:?}");
    src.apply(cm("d")).unwrap();
    settle().await;
    assert_eq!(r.fifo.len(), 4);
    assert_eq!(*r.rv.read(), "5");
}

/// A source that pages lists at resourceVersion "0" (an API server without the watch cache
/// reading etcd), so that the reflector's paging is exercised from its first list.
fn paging_source() -> MemorySource {
    MemorySource::new(crate::embedded::MemorySourceOptions { watch_cache: false, ..Default::default() })
}

#[tokio::test(start_paused = true)]
async fn lists_in_pages() {
    let src = paging_source();
    for i in 0..5 {
        src.apply(cm(&format!("c{i}"))).unwrap();
    }
    let config = ReflectorConfig { page_size: Some(2), ..no_jitter() };
    let r = start(Arc::new(src.clone()), config, |r| r);
    settle().await;
    let lists = src.list_requests();
    assert_eq!(lists.len(), 3);
    assert!(lists.iter().all(|p| p.limit == Some(2)));
    assert!(lists[0].continue_token.is_none() && lists[1].continue_token.is_some());
    assert_eq!(r.fifo.len(), 5);
}

/// Answers the first page with a continue token that has then expired.
struct ExpiringContinue {
    src: MemorySource,
    calls: AtomicUsize,
}

#[async_trait]
impl ListerWatcher for ExpiringContinue {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0 => {
                let mut page = self.src.list(&ListParams { limit: Some(1), ..params.clone() }).await?;
                page.continue_token = Some("stale".into());
                Ok(page)
            }
            1 => Err(SourceError::Gone("continue token expired".into())),
            _ => self.src.list(params).await,
        }
    }
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        self.src.watch(params).await
    }
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_a_full_list() {
    let src = MemorySource::default();
    for i in 0..3 {
        src.apply(cm(&format!("c{i}"))).unwrap();
    }
    let lw = Arc::new(ExpiringContinue { src, calls: AtomicUsize::new(0) });
    let r = start(lw.clone(), no_jitter(), |r| r);
    settle().await;
    assert_eq!(lw.calls.load(Ordering::SeqCst), 3);
    let keys = r.fifo.list_keys();
    assert_eq!(keys.len(), 3, "the page before the expiry is not kept twice: {keys:?}");
}

#[tokio::test(start_paused = true)]
async fn bookmarks_advance_the_resource_version_used_to_rewatch() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let other = MemorySource::default();
    let r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    settle().await;
    drop(other);
    // Changes to other resources move the global resourceVersion; a bookmark tells us.
    src.apply(cm("b")).unwrap();
    src.delete("ns/b");
    settle().await;
    src.bookmark();
    settle().await;
    assert_eq!(*r.rv.read(), src.resource_version().to_string());
    src.disconnect_watches();
    settle().await;
    let watches = src.watch_requests();
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[1].resource_version, "4");
    assert_eq!(src.list_requests().len(), 1, "a dropped watch resumes without relisting");
}

#[tokio::test(start_paused = true)]
async fn dropped_watch_resumes_from_the_last_event_without_duplicates() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    settle().await;
    drain(&r).await;
    src.apply(cm("b")).unwrap();
    settle().await;
    // Advance past the "very short watch" window so the disconnect counts as a normal end.
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.disconnect_watches();
    src.apply(cm("c")).unwrap();
    settle().await;
    let seen: Vec<_> = drain(&r).await.into_iter().map(|(k, o)| (k, o.object().name().to_owned())).collect();
    assert_eq!(seen, [(DeltaType::Added, "b".to_owned()), (DeltaType::Added, "c".to_owned())]);
    assert_eq!(src.watch_requests()[1].resource_version, "3");
}

/// A source whose watch requests take `delay` to be answered (a loaded server or network).
struct SlowWatch {
    src: MemorySource,
    delay: Duration,
}

#[async_trait]
impl ListerWatcher for SlowWatch {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.src.list(params).await
    }
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        tokio::time::sleep(self.delay).await;
        self.src.watch(params).await
    }
}

/// As client-go's `start`, a watch's age counts from before its request: a watch whose
/// answer took 800 ms and which then ended 300 ms later, without events, lasted over a
/// second — a normal end that rewatches, not a "very short watch" that relists.
#[tokio::test(start_paused = true)]
async fn a_watchs_age_counts_from_its_request() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let slow = SlowWatch { src: src.clone(), delay: Duration::from_millis(800) };
    let r = start(Arc::new(slow), no_jitter(), |r| r);
    tokio::time::sleep(Duration::from_millis(810)).await;
    settle().await;
    drain(&r).await;
    assert_eq!(src.watch_requests().len(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    src.disconnect_watches();
    tokio::time::sleep(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(src.watch_requests().len(), 2, "watched again");
    assert_eq!(src.list_requests().len(), 1, "a watch that lasted over a second does not relist");
}

#[tokio::test(start_paused = true)]
async fn relists_on_410_gone_and_infers_missed_deletes_as_tombstones() {
    let src = MemorySource::default();
    src.apply(cm("stays")).unwrap();
    src.apply(cm("goes")).unwrap();
    let r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    settle().await;
    drain(&r).await;
    // Disconnected, the object is deleted and history compacted: the resume gets 410.
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.disconnect_watches();
    let _ = src.delete("ns/goes");
    src.compact();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(src.list_requests().len(), 2, "relisted after 410");
    let deltas = drain(&r).await;
    let tombstone = deltas.iter().find(|(_, o)| o.object().name() == "goes").expect("delete inferred");
    assert_eq!(tombstone.0, DeltaType::Deleted);
    assert!(tombstone.1.is_tombstone());
    assert!(deltas.iter().any(|(k, o)| *k == DeltaType::Replaced && o.object().name() == "stays"));
}

#[tokio::test(start_paused = true)]
async fn list_failures_back_off_800ms_doubling() {
    let lw = Timed::default();
    for _ in 0..3 {
        lw.src.fail_next_list(SourceError::Transport("connection refused".into()));
    }
    let errors = Arc::new(AtomicUsize::new(0));
    let counted = errors.clone();
    let r = start(Arc::new(lw.clone()), no_jitter(), |r| {
        r.with_error_handler(Arc::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        }))
    });
    tokio::time::sleep(Duration::from_secs(20)).await;
    let calls = lw.calls.lock().clone();
    let lists: Vec<_> = calls.iter().filter(|(_, k)| *k == "list").map(|(t, _)| *t).collect();
    assert_eq!(lists.len(), 4);
    let gaps: Vec<u128> = lists.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    assert_eq!(gaps, [800, 1600, 3200]);
    assert_eq!(errors.load(Ordering::SeqCst), 3, "the watch error handler saw every failure");
    assert_eq!(r.fifo.len(), 0, "nothing listed: the source is empty");
}

/// client-go's `isWatchErrorRetriable`: a watch refused with "connection refused" or 429 is
/// retried as a watch from the same resourceVersion after backoff, without relisting.
#[tokio::test(start_paused = true)]
async fn watch_refused_or_throttled_backs_off_and_rewatches_from_the_same_version() {
    let lw = Timed::default();
    lw.src.apply(cm("a")).unwrap();
    lw.src.fail_next_watch(SourceError::ConnectionRefused("connect: connection refused".into()));
    lw.src.fail_next_watch(SourceError::TooManyRequests("slow down".into()));
    let _r = start(Arc::new(lw.clone()), no_jitter(), |r| r);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let watches = lw.src.watch_requests();
    assert_eq!(watches.len(), 3);
    assert!(watches.iter().all(|w| w.resource_version == "2"));
    assert_eq!(lw.src.list_requests().len(), 1);
    let times: Vec<_> = lw.calls.lock().iter().filter(|(_, k)| *k == "watch").map(|(t, _)| *t).collect();
    assert_eq!((times[1] - times[0]).as_millis(), 800);
    assert_eq!((times[2] - times[1]).as_millis(), 1600);
}

/// client-go's `ListAndWatch`: a watch that cannot start for any other reason (here a 500)
/// returns an error, and `Run` relists after backoff.
#[tokio::test(start_paused = true)]
async fn watch_start_failing_otherwise_relists_after_backoff() {
    let lw = Timed::default();
    lw.src.apply(cm("a")).unwrap();
    lw.src.fail_next_watch(SourceError::Api(Status {
        code: 500,
        reason: "InternalError".into(),
        message: "boom".into(),
    }));
    let _r = start(Arc::new(lw.clone()), no_jitter(), |r| r);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kinds: Vec<_> = lw.calls.lock().iter().map(|(_, k)| *k).collect();
    assert_eq!(kinds, ["list", "watch", "list", "watch"]);
    let times: Vec<_> = lw.calls.lock().iter().map(|(t, _)| *t).collect();
    assert_eq!((times[2] - times[1]).as_millis(), 800, "the relist waits for backoff");
}

/// Ends its first watch with the given error after one event; later watches are the
/// memory source's.
pub(super) struct FailingWatch {
    src: MemorySource,
    error: parking_lot::Mutex<Option<SourceError>>,
}

#[async_trait]
impl ListerWatcher for FailingWatch {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.src.list(params).await
    }
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        let stream = self.src.watch(params).await?;
        match self.error.lock().take() {
            Some(err) => Ok(stream.take(1).chain(futures::stream::iter([Err(err)])).boxed()),
            None => Ok(stream),
        }
    }
}

/// client-go's `handleWatch`: an error ending a running watch (a transport error, a decode
/// error, an ERROR event that is not 410/429) makes `ListAndWatch` return, and the reflector
/// relists; a 429 or a refused connection re-watches from the last resourceVersion.
#[tokio::test(start_paused = true)]
async fn watch_ending_with_an_error_relists_unless_refused_or_throttled() {
    let cases = [
        (SourceError::Transport("connection reset by peer".into()), 2),
        (SourceError::Decode("malformed watch frame".into()), 2),
        (SourceError::from(Status { code: 500, reason: "InternalError".into(), message: "etcd".into() }), 2),
        (SourceError::ConnectionRefused("connection refused".into()), 1),
        (SourceError::from(Status { code: 429, reason: "TooManyRequests".into(), message: "slow".into() }), 1),
    ];
    for (error, lists) in cases {
        let src = MemorySource::default();
        src.apply(cm("a")).unwrap();
        let what = error.to_string();
        let lw = Arc::new(FailingWatch { src: src.clone(), error: parking_lot::Mutex::new(Some(error)) });
        let r = start(lw, no_jitter(), |r| r);
        settle().await;
        src.apply(cm("b")).unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(src.list_requests().len(), lists, "{what}");
        let watches = src.watch_requests();
        assert_eq!(watches.len(), 2, "{what}");
        assert_eq!(watches[1].resource_version, "3", "{what}: resumes after the last event applied");
        assert_eq!(*r.rv.read(), "3", "{what}");
    }
}

/// client-go's `handleWatch`: a watch that ends normally (server timeout, stream closed)
/// re-watches from the last resourceVersion, without relisting.
#[tokio::test(start_paused = true)]
async fn watch_ending_normally_rewatches_without_relisting() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let _r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.disconnect_watches();
    settle().await;
    assert_eq!(src.list_requests().len(), 1);
    assert_eq!(src.watch_requests().len(), 2);
    assert_eq!(src.watch_requests()[1].resource_version, "2");
}

#[tokio::test(start_paused = true)]
async fn a_watch_closed_at_once_without_events_backs_off() {
    let lw = Timed::default();
    let _r = start(Arc::new(lw.clone()), no_jitter(), |r| r);
    settle().await;
    for _ in 0..3 {
        lw.src.disconnect_watches();
        settle().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let watches = lw.calls.lock().iter().filter(|(_, k)| *k == "watch").count();
    assert!(watches <= 3, "short watches must not spin: {watches} watches in ~1.3 s");
}

#[tokio::test(start_paused = true)]
async fn resync_timer_resyncs_only_when_a_listener_is_due() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let due = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    let config = ReflectorConfig { resync_period: Duration::from_secs(10), ..no_jitter() };
    let (d, a) = (due.clone(), asked.clone());
    let r = start(Arc::new(src.clone()), config, move |r| {
        r.with_should_resync(Arc::new(move || {
            a.fetch_add(1, Ordering::SeqCst);
            d.load(Ordering::SeqCst)
        }))
    });
    settle().await;
    drain(&r).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    settle().await;
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(r.fifo.is_empty(), "nobody due: no resync");
    due.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(10)).await;
    settle().await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let deltas = drain(&r).await;
    assert_eq!(deltas.len(), 1);
    assert_eq!(deltas[0].0, DeltaType::Sync);
}

/// client-go's `relistResourceVersion` and `Reflector.list`: the first LIST asks for "0"
/// (paged: the watch cache ignores the limit, an unpaged server pages); a relist asks for the
/// last synced resourceVersion without a limit, so the server may serve it from its watch
/// cache (client-go's `TestReflectorListExtract`/`TestRelistResourceVersion` cases).
#[tokio::test(start_paused = true)]
async fn first_list_asks_for_version_0_and_a_relist_for_the_last_synced_one_unpaged() {
    let src = MemorySource::default();
    src.apply(cm("a")).unwrap();
    let _r = start(Arc::new(src.clone()), no_jitter(), |r| r);
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.apply(cm("b")).unwrap();
    settle().await;
    src.send_watch_error(Status { code: 410, reason: "Expired".into(), message: "too old resource version".into() });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lists = src.list_requests();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0], ListParams { limit: Some(500), continue_token: None, resource_version: Some("0".into()) });
    assert_eq!(lists[1], ListParams { limit: None, continue_token: None, resource_version: Some("3".into()) });
}

/// client-go's pager and `paginatedResult`: continue pages carry no resourceVersion; once a
/// list at "0" came back in pages the server pages, and relists at a version stay paged.
#[tokio::test(start_paused = true)]
async fn paged_lists_send_the_version_only_on_the_first_page_and_keep_paging_once_paged() {
    let src = paging_source();
    for i in 0..3 {
        src.apply(cm(&format!("c{i}"))).unwrap();
    }
    let config = ReflectorConfig { page_size: Some(2), ..no_jitter() };
    let _r = start(Arc::new(src.clone()), config, |r| r);
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.send_watch_error(Status { code: 410, reason: "Expired".into(), message: "too old resource version".into() });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lists: Vec<_> = src.list_requests().into_iter().map(|p| (p.limit, p.resource_version)).collect();
    assert_eq!(lists, [(Some(2), Some("0".into())), (Some(2), None), (Some(2), Some("4".into())), (Some(2), None)]);
}

/// client-go's `Reflector.list` (`TestReflectorResyncWithResourceVersion`-style expiry cases):
/// a LIST at an expired or too large resourceVersion is repeated at once as a consistent read
/// (no resourceVersion), and the relist after that asks for the last synced version again.
#[tokio::test(start_paused = true)]
async fn an_unavailable_list_version_is_retried_at_once_as_a_consistent_read() {
    let too_large = SourceError::Api(Status {
        code: 504,
        reason: "Timeout".into(),
        message: "Too large resource version: 9, current: 3".into(),
    });
    for error in [SourceError::Gone("too old resource version: 2".into()), too_large] {
        let lw = Timed::default();
        lw.src.apply(cm("a")).unwrap();
        let what = error.to_string();
        let _r = start(Arc::new(lw.clone()), no_jitter(), |r| r);
        tokio::time::sleep(Duration::from_secs(2)).await;
        lw.src.fail_next_list(error);
        lw.src.send_watch_error(Status { code: 410, reason: "Expired".into(), message: "too old".into() });
        tokio::time::sleep(Duration::from_secs(2)).await;
        lw.src.send_watch_error(Status { code: 410, reason: "Expired".into(), message: "too old".into() });
        tokio::time::sleep(Duration::from_secs(5)).await;
        let lists: Vec<_> = lw.src.list_requests().into_iter().map(|p| (p.resource_version, p.limit)).collect();
        assert_eq!(
            lists,
            [(Some("0".into()), Some(500)), (Some("2".into()), None), (None, None), (Some("2".into()), None)],
            "{what}: the consistent read keeps the failed list's page size"
        );
        let lists: Vec<_> = lw.calls.lock().iter().filter(|(_, k)| *k == "list").map(|(t, _)| *t).collect();
        assert_eq!(lists[1], lists[2], "{what}: the consistent read follows at once");
    }
}

/// client-go's `watchWithResync`: each watch asks for `timeoutSeconds` random in
/// `[minWatchTimeout, 2*minWatchTimeout)` with `minWatchTimeout` 5 minutes; the public
/// option cannot go below it, only the test-only setting can.
#[tokio::test(start_paused = true)]
async fn watch_timeouts_are_random_from_5_minutes_and_only_a_test_setting_lowers_them() {
    let timeouts = |config: ReflectorConfig| async move {
        let src = MemorySource::default();
        let r = start(Arc::new(src.clone()), config, |r| r);
        tokio::time::sleep(Duration::from_secs(2)).await;
        for _ in 0..20 {
            src.disconnect_watches();
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        drop(r);
        src.watch_requests().into_iter().map(|w| w.timeout.unwrap()).collect::<Vec<_>>()
    };
    let lowered = timeouts(ReflectorConfig { min_watch_timeout: Duration::from_secs(1), ..no_jitter() }).await;
    assert!(lowered.len() > 10);
    assert!(lowered.iter().all(|t| *t >= MIN_WATCH_TIMEOUT && *t < MIN_WATCH_TIMEOUT * 2), "{lowered:?}");
    assert!(lowered.iter().any(|t| *t != lowered[0]), "random: {lowered:?}");
    let test = ReflectorConfig { test_only_min_watch_timeout: Some(Duration::from_secs(1)), ..no_jitter() };
    let short = timeouts(test).await;
    assert!(short.iter().all(|t| *t >= Duration::from_secs(1) && *t < Duration::from_secs(2)), "{short:?}");
}

#[path = "reflector_watch_list_tests.rs"]
mod watch_list;

//! Behaviour of the whole informer, one rule per test, with paused time.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Semaphore;

use super::*;
use crate::embedded::MemorySource;
use crate::informer::handler::{HandlerError, HandlerResult};
use crate::informer::list_watch::Status;
use crate::informer::object::Object;

fn cm(ns: &str, name: &str, data: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name}, "data": {"v": data}})
}

/// Records every notification; can be stalled until released.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Notification>>,
    gate: Option<Arc<Semaphore>>,
}

impl Recorder {
    fn gated(gate: Arc<Semaphore>) -> Arc<Self> {
        Arc::new(Self { events: Mutex::default(), gate: Some(gate) })
    }

    async fn record(&self, n: Notification) -> HandlerResult {
        if let Some(gate) = &self.gate {
            gate.acquire().await.expect("gate open").forget();
        }
        self.events.lock().push(n);
        crate::informer::DONE
    }

    fn take(&self) -> Vec<Notification> {
        std::mem::take(&mut *self.events.lock())
    }

    /// Applies the notifications to a map: the handler's view of the world.
    fn view(&self) -> BTreeMap<String, String> {
        let mut view = BTreeMap::new();
        for n in self.events.lock().iter() {
            match n {
                Notification::Add { obj, .. } => {
                    view.insert(obj.key().to_owned(), obj.resource_version().to_owned());
                }
                Notification::Update { new, .. } => {
                    view.insert(new.key().to_owned(), new.resource_version().to_owned());
                }
                Notification::Delete { obj, .. } => {
                    view.remove(obj.key());
                }
            }
        }
        view
    }
}

#[async_trait]
impl EventHandler for Recorder {
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        self.record(Notification::Add { obj: obj.clone(), initial: is_initial_list }).await
    }
    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        self.record(Notification::Update { old: old.clone(), new: new.clone() }).await
    }
    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        self.record(Notification::Delete { obj: obj.clone(), final_state_unknown }).await
    }
}

fn source_view(src: &MemorySource) -> BTreeMap<String, String> {
    src.objects().into_iter().map(|o| (o.key().to_owned(), o.resource_version().to_owned())).collect()
}

fn informer(src: &MemorySource) -> SharedIndexInformer {
    let mut config = InformerConfig { name: "v1/ConfigMap".into(), ..InformerConfig::default() };
    config.reflector.backoff.jitter = 0.0;
    SharedIndexInformer::new(Arc::new(src.clone()), config).unwrap()
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn start(inf: &SharedIndexInformer) -> CancellationToken {
    let cancel = CancellationToken::new();
    tokio::spawn(inf.clone().run(cancel.clone()));
    cancel
}

fn resync_counts(events: &[Notification]) -> usize {
    events.iter().filter(|n| matches!(n, Notification::Update { old, new } if old == new)).count()
}

#[tokio::test(start_paused = true)]
async fn initial_list_arrives_as_initial_adds_then_live_events_in_order() {
    let src = MemorySource::default();
    src.apply(cm("a", "one", "1")).unwrap();
    src.apply(cm("a", "two", "1")).unwrap();
    let inf = informer(&src);
    let rec = Arc::new(Recorder::default());
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    assert!(inf.has_synced() && reg.has_synced());
    let initial = rec.take();
    assert_eq!(initial.len(), 2);
    assert!(initial.iter().all(|n| matches!(n, Notification::Add { initial: true, .. })));
    src.apply(cm("a", "one", "2")).unwrap();
    src.apply(cm("a", "three", "1")).unwrap();
    src.delete("a/two");
    settle().await;
    let live = rec.take();
    assert!(
        matches!(&live[0], Notification::Update { old, new } if old.resource_version() == "2" && new.resource_version() == "4")
    );
    assert!(matches!(&live[1], Notification::Add { initial: false, obj } if obj.name() == "three"));
    assert!(matches!(&live[2], Notification::Delete { final_state_unknown: false, obj } if obj.name() == "two"));
    assert_eq!(inf.last_sync_resource_version(), "6");
}

#[tokio::test(start_paused = true)]
async fn indexer_is_updated_before_handlers_are_told() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let indexer = inf.store().clone();
    let seen_in_cache = Arc::new(Mutex::new(Vec::new()));
    let seen = seen_in_cache.clone();
    inf.add_event_handler(crate::informer::handler::handler_fn(move |n| {
        let cached = indexer.get_by_key(n.key()).map(|o| o.resource_version().to_owned());
        seen.lock().push(cached);
        crate::informer::DONE
    }))
    .unwrap();
    let _cancel = start(&inf);
    settle().await;
    src.apply(cm("a", "x", "1")).unwrap();
    settle().await;
    src.apply(cm("a", "x", "2")).unwrap();
    settle().await;
    assert_eq!(*seen_in_cache.lock(), [Some("2".to_owned()), Some("3".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn late_handler_receives_the_current_cache_then_live_events() {
    let src = MemorySource::default();
    src.apply(cm("a", "old", "1")).unwrap();
    let inf = informer(&src);
    let _cancel = start(&inf);
    settle().await;
    src.apply(cm("a", "newer", "1")).unwrap();
    settle().await;
    let gate = Arc::new(Semaphore::new(0));
    let late = Recorder::gated(gate.clone());
    let reg = inf.add_event_handler(late.clone()).unwrap();
    settle().await;
    assert!(inf.has_synced());
    assert!(!reg.has_synced(), "its own initial adds are not delivered yet");
    src.apply(cm("a", "live", "1")).unwrap();
    gate.add_permits(100);
    settle().await;
    assert!(reg.has_synced());
    let events = late.take();
    let adds: Vec<_> = events
        .iter()
        .map(|n| match n {
            Notification::Add { obj, initial } => (obj.name().to_owned(), *initial),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(adds.len(), 3);
    assert!(adds[..2].iter().all(|(_, initial)| *initial), "the replayed cache is an initial list");
    assert_eq!(adds[2], ("live".to_owned(), false));
}

#[tokio::test(start_paused = true)]
async fn removing_a_handler_under_load_leaves_the_others_undisturbed() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let kept = Arc::new(Recorder::default());
    let removed = Arc::new(Recorder::default());
    inf.add_event_handler(kept.clone()).unwrap();
    let reg = inf.add_event_handler(removed.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    for i in 0..50 {
        src.apply(cm("a", &format!("o{i}"), "1")).unwrap();
        if i == 20 {
            settle().await;
            inf.remove_event_handler(&reg).unwrap();
        }
    }
    settle().await;
    let removed_count = removed.take().len();
    assert!(removed_count <= 21, "nothing after removal: {removed_count}");
    assert_eq!(kept.view(), source_view(&src));
    assert!(matches!(inf.remove_event_handler(&reg), Err(InformerError::NotRegistered(_))));
}

#[tokio::test(start_paused = true)]
async fn a_stalled_handler_never_delays_another() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let stalled = Recorder::gated(Arc::new(Semaphore::new(0)));
    let fast = Arc::new(Recorder::default());
    inf.add_event_handler(stalled.clone()).unwrap();
    inf.add_event_handler(fast.clone()).unwrap();
    let _cancel = start(&inf);
    for i in 0..20 {
        src.apply(cm("a", &format!("o{i}"), "1")).unwrap();
    }
    settle().await;
    assert_eq!(fast.view(), source_view(&src));
    assert!(stalled.take().is_empty());
}

#[tokio::test(start_paused = true)]
async fn stalled_handler_queue_stays_bounded_by_keys_and_ends_with_latest_state() {
    let src = MemorySource::new(crate::embedded::MemorySourceOptions { history_limit: 100, ..Default::default() });
    for k in 0..100 {
        src.apply(cm("a", &format!("k{k}"), "0")).unwrap();
    }
    let inf = informer(&src);
    let gate = Arc::new(Semaphore::new(0));
    let stalled = Recorder::gated(gate.clone());
    let reg = inf.add_event_handler(stalled.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    let mut max_queue = 0;
    for round in 0..1000 {
        for k in 0..100 {
            src.apply(cm("a", &format!("k{k}"), &round.to_string())).unwrap();
        }
        if round % 50 == 0 {
            settle().await;
            max_queue = max_queue.max(reg.listener().queue_len());
        }
    }
    settle().await;
    max_queue = max_queue.max(reg.listener().queue_len());
    assert!(max_queue <= 100, "at most one pending entry per key, saw {max_queue}");
    assert!(max_queue >= 99, "the handler really was stalled: {max_queue}");
    gate.add_permits(1_000_000);
    settle().await;
    assert_eq!(stalled.view(), source_view(&src), "the handler ends with the latest state of every key");
    assert!(stalled.take().len() <= 201, "one stalled call, then one coalesced entry per key");
}

#[tokio::test(start_paused = true)]
async fn relist_after_410_delivers_missed_deletes_with_final_state_unknown() {
    let src = MemorySource::default();
    src.apply(cm("a", "stays", "1")).unwrap();
    src.apply(cm("a", "goes", "1")).unwrap();
    let inf = informer(&src);
    let rec = Arc::new(Recorder::default());
    inf.add_event_handler(rec.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    rec.take();
    tokio::time::sleep(Duration::from_secs(2)).await;
    src.disconnect_watches();
    src.delete("a/goes");
    src.compact();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let events = rec.take();
    assert_eq!(events.len(), 1, "an unchanged relisted object is a sync, not an update: {events:?}");
    assert!(matches!(&events[0], Notification::Delete { obj, final_state_unknown: true } if obj.name() == "goes"));
    assert_eq!(rec.view(), BTreeMap::new(), "view of the recorder after take is empty by construction");
}

#[tokio::test(start_paused = true)]
/// client-go's `watchWithResync`/`handleWatch`: an ERROR event that is neither 410 nor 429
/// ends `ListAndWatch`, so the reflector relists (after backoff).
async fn watch_error_event_with_other_status_relists() {
    let src = MemorySource::default();
    src.apply(cm("a", "x", "1")).unwrap();
    let inf = informer(&src);
    let rec = Arc::new(Recorder::default());
    inf.add_event_handler(rec.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    src.send_watch_error(Status { code: 500, reason: "InternalError".into(), message: "etcd hiccup".into() });
    src.apply(cm("a", "x", "2")).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(src.list_requests().len(), 2, "relisted after the ERROR event");
    assert_eq!(rec.view(), source_view(&src));
}

#[tokio::test(start_paused = true)]
async fn resync_goes_only_to_due_listeners_at_their_own_periods() {
    let src = MemorySource::default();
    src.apply(cm("a", "x", "1")).unwrap();
    let inf = informer(&src);
    let fast = Arc::new(Recorder::default());
    let slow = Arc::new(Recorder::default());
    let never = Arc::new(Recorder::default());
    inf.add_event_handler_with_options(fast.clone(), ListenerOptions::new("fast", Duration::from_secs(2))).unwrap();
    inf.add_event_handler_with_options(slow.clone(), ListenerOptions::new("slow", Duration::from_secs(5))).unwrap();
    inf.add_event_handler_with_options(never.clone(), ListenerOptions::new("never", Duration::ZERO)).unwrap();
    assert_eq!(
        inf.resync_check_period(),
        Duration::from_secs(2),
        "check period is the smallest requested before start"
    );
    let _cancel = start(&inf);
    settle().await;
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    // Ticks at 2, 4, 6, 8, 10 s: fast is due at every tick, slow (next due at 5 s) at 6 s.
    assert_eq!(resync_counts(&fast.take()), 5);
    assert_eq!(resync_counts(&slow.take()), 1);
    assert_eq!(resync_counts(&never.take()), 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(resync_counts(&slow.take()), 1, "slow's next resync was due at 11 s, delivered at the 12 s tick");
}

#[tokio::test(start_paused = true)]
async fn resync_periods_below_one_second_are_raised_to_one_second() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let reg = inf
        .add_event_handler_with_options(
            Arc::new(Recorder::default()),
            ListenerOptions::new("eager", Duration::from_millis(10)),
        )
        .unwrap();
    assert_eq!(reg.listener().resync_period(), Duration::from_secs(1));
    assert_eq!(inf.resync_check_period(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn late_handler_with_a_smaller_period_is_raised_to_the_check_period() {
    let src = MemorySource::default();
    src.apply(cm("a", "x", "1")).unwrap();
    let inf = informer(&src);
    let early = inf
        .add_event_handler_with_options(
            Arc::new(Recorder::default()),
            ListenerOptions::new("early", Duration::from_secs(4)),
        )
        .unwrap();
    let _cancel = start(&inf);
    settle().await;
    let late = Arc::new(Recorder::default());
    let reg =
        inf.add_event_handler_with_options(late.clone(), ListenerOptions::new("late", Duration::from_secs(1))).unwrap();
    assert_eq!(inf.resync_check_period(), Duration::from_secs(4), "the check period does not change after start");
    assert_eq!(reg.listener().resync_period(), Duration::from_secs(4));
    assert_eq!(early.listener().resync_period(), Duration::from_secs(4));
    // Registered just after the 0 s mark, first due just after 4 s: delivered at the 8 s and
    // 12 s ticks.
    tokio::time::sleep(Duration::from_millis(12_500)).await;
    assert_eq!(resync_counts(&late.take()), 2, "resyncs every 4 s, not every second");
}

#[tokio::test(start_paused = true)]
async fn a_late_handler_sets_a_zero_check_period_instead_of_losing_its_resync() {
    // client-go silently disables resync here; wink lets the first handler that asks for a
    // resync set the check period, even after start.
    let src = MemorySource::default();
    src.apply(cm("a", "x", "1")).unwrap();
    let inf = informer(&src);
    let _cancel = start(&inf);
    settle().await;
    let late = Arc::new(Recorder::default());
    let reg =
        inf.add_event_handler_with_options(late.clone(), ListenerOptions::new("late", Duration::from_secs(3))).unwrap();
    assert_eq!(inf.resync_check_period(), Duration::from_secs(3));
    assert_eq!(reg.listener().resync_period(), Duration::from_secs(3));
    tokio::time::sleep(Duration::from_millis(9_500)).await;
    assert_eq!(resync_counts(&late.take()), 3);
}

/// Fails the first call for every object labelled `retry`.
#[derive(Default)]
struct FlakyOnce {
    inner: Recorder,
    failed: Mutex<std::collections::HashSet<String>>,
}

#[async_trait]
impl EventHandler for FlakyOnce {
    async fn on_add(&self, obj: &Object, initial: bool) -> HandlerResult {
        if obj.name().starts_with("flaky") && self.failed.lock().insert(obj.key().to_owned()) {
            return Err(HandlerError::Retry("not yet".into()));
        }
        self.inner.on_add(obj, initial).await
    }
    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        self.inner.on_update(old, new).await
    }
}

#[tokio::test(start_paused = true)]
async fn retry_errors_are_retried_per_key_with_the_newest_state_without_blocking_other_keys() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let flaky = Arc::new(FlakyOnce::default());
    inf.add_event_handler(flaky.clone()).unwrap();
    let _cancel = start(&inf);
    settle().await;
    src.apply(cm("a", "flaky", "1")).unwrap();
    src.apply(cm("a", "steady", "1")).unwrap();
    settle().await;
    let first = flaky.inner.take();
    assert_eq!(first.len(), 1, "the other key is not held up by the failing one");
    assert_eq!(first[0].object().name(), "steady");
    src.apply(cm("a", "flaky", "2")).unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let retried = flaky.inner.take();
    assert_eq!(retried.len(), 1);
    assert!(matches!(&retried[0], Notification::Add { obj, .. } if obj.resource_version() == "4"), "{retried:?}");
}

#[tokio::test(start_paused = true)]
async fn run_returns_after_cancel_and_a_stopped_informer_refuses_handlers() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let cancel = CancellationToken::new();
    let run = tokio::spawn(inf.clone().run(cancel.clone()));
    settle().await;
    assert!(inf.has_started());
    cancel.cancel();
    run.await.unwrap();
    assert!(inf.is_stopped());
    assert!(matches!(inf.add_event_handler(Arc::new(Recorder::default())), Err(InformerError::Stopped(_))));
}

#[tokio::test(start_paused = true)]
async fn namespace_filtered_listeners_see_only_their_namespaces_and_label_transitions() {
    let src = MemorySource::default();
    let inf = informer(&src);
    let rec = Arc::new(Recorder::default());
    let mut options = ListenerOptions::new("tenant-a", Duration::ZERO);
    options.namespaces = Some(["a".to_owned()].into());
    options.filter = Some(Arc::new(|o: &Object| o.json().contains("\"v\":\"match")));
    inf.add_event_handler_with_options(rec.clone(), options).unwrap();
    let _cancel = start(&inf);
    settle().await;
    // Settle after each change: a queued add followed by its delete would coalesce away.
    for (ns, data) in [("b", "match"), ("a", "nope"), ("a", "match-now"), ("a", "not-anymore")] {
        src.apply(cm(ns, "x", data)).unwrap();
        settle().await;
    }
    let events = rec.take();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(&events[0], Notification::Add { initial: false, obj } if obj.namespace() == Some("a")));
    assert!(matches!(&events[1], Notification::Delete { final_state_unknown: false, .. }));
}

/// client-go's `RemoveEventHandler` finds the handle among its own listeners (by identity)
/// and answers "not registered" for any other: a handle of another informer removes nothing.
#[tokio::test(start_paused = true)]
async fn a_registration_of_another_informer_is_not_registered_and_removes_nothing() {
    let src = MemorySource::default();
    let ours = informer(&src);
    let theirs = informer(&src);
    let rec = Arc::new(Recorder::default());
    let our_reg = ours.add_event_handler(rec.clone()).unwrap();
    let their_reg = theirs.add_event_handler(Arc::new(Recorder::default())).unwrap();
    assert_ne!(our_reg.id(), their_reg.id());
    assert!(matches!(ours.remove_event_handler(&their_reg), Err(InformerError::NotRegistered(_))));
    let _cancel = start(&ours);
    settle().await;
    src.apply(cm("a", "x", "1")).unwrap();
    settle().await;
    assert_eq!(rec.view(), source_view(&src), "our handler is still registered");
    theirs.remove_event_handler(&their_reg).unwrap();
    ours.remove_event_handler(&our_reg).unwrap();
}

/// client-go's `threadSafeMap.AddIndexers` refuses a name that already exists ("indexer
/// conflict"), the built-in `namespace` index included: the informer reports it as an error.
#[tokio::test(start_paused = true)]
async fn duplicate_or_reserved_indexer_names_are_errors_not_panics() {
    let src = MemorySource::default();
    let func: IndexFunc = Arc::new(|_: &Object| Vec::new());
    for indexers in [
        vec![(crate::informer::NAMESPACE_INDEX.to_owned(), func.clone())],
        vec![("app".to_owned(), func.clone()), ("app".to_owned(), func.clone())],
    ] {
        let config = InformerConfig { indexers, ..InformerConfig::default() };
        let err = SharedIndexInformer::new(Arc::new(src.clone()), config).unwrap_err();
        assert!(matches!(err, InformerError::Index(IndexerError::IndexExists(_))), "{err}");
    }
    let inf = informer(&src);
    inf.add_indexers(vec![("app".to_owned(), func.clone())]).unwrap();
    assert!(matches!(
        inf.add_indexers(vec![("app".to_owned(), func.clone())]),
        Err(InformerError::Index(IndexerError::IndexExists(_)))
    ));
    assert!(inf.add_indexers(vec![(crate::informer::NAMESPACE_INDEX.to_owned(), func)]).is_err());
}

fn obj(ns: &str, name: &str, rv: &str) -> Object {
    let mut value = cm(ns, name, "1");
    value["metadata"]["resourceVersion"] = json!(rv);
    Object::from_string(value.to_string()).unwrap()
}

fn delta(kind: DeltaType, obj: Object) -> Vec<Delta> {
    vec![Delta { kind, obj: DeltaObject::Object(obj) }]
}

/// client-go's `processDeltas`: a `Sync` delta is distributed with `isSync` (syncing
/// listeners only), a `Replaced` delta only when the relist left the resourceVersion
/// unchanged, and watch deltas (`Added`/`Updated`) to every listener whatever their
/// resourceVersion.
#[tokio::test(start_paused = true)]
async fn relisted_unchanged_objects_and_syncs_reach_only_syncing_listeners_watch_updates_reach_all() {
    let src = MemorySource::default();
    let inf = informer(&src);
    for name in ["sync", "same", "changed", "update"] {
        inf.handle_deltas(delta(DeltaType::Added, obj("a", name, "1")), true);
    }
    let syncing = inf
        .add_event_handler_with_options(
            Arc::new(Recorder::default()),
            ListenerOptions::new("s", Duration::from_secs(1)),
        )
        .unwrap();
    let other = inf.add_event_handler(Arc::new(Recorder::default())).unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(inf.inner.processor.should_resync(), "the 1 s listener is due");
    let lens = || (syncing.listener().queue_len(), other.listener().queue_len());
    inf.handle_deltas(delta(DeltaType::Sync, obj("a", "sync", "1")), false);
    assert_eq!(lens(), (1, 0), "a sync goes to syncing listeners only");
    inf.handle_deltas(delta(DeltaType::Replaced, obj("a", "same", "1")), false);
    assert_eq!(lens(), (2, 0), "a relisted, unchanged object is a sync");
    inf.handle_deltas(delta(DeltaType::Replaced, obj("a", "changed", "2")), false);
    assert_eq!(lens(), (3, 1), "a relisted, changed object is an update for everyone");
    inf.handle_deltas(delta(DeltaType::Updated, obj("a", "update", "1")), false);
    assert_eq!(lens(), (4, 2), "a watch update is never a sync");
}

/// client-go's `AddEventHandlerWithResyncPeriod` after start adds the listener to those
/// `shouldResync` considers: a late handler is resynced at its period from then on, and an
/// unchanged object of a relist reaches it as a sync (`processDeltas`) when it is due.
#[tokio::test(start_paused = true)]
async fn a_handler_added_after_start_takes_part_in_every_later_resync() {
    let src = MemorySource::default();
    src.apply(cm("a", "x", "1")).unwrap();
    let inf = informer(&src);
    let early = Arc::new(Recorder::default());
    inf.add_event_handler_with_options(early.clone(), ListenerOptions::new("early", Duration::from_secs(2))).unwrap();
    let _cancel = start(&inf);
    settle().await;
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let late = Arc::new(Recorder::default());
    let reg =
        inf.add_event_handler_with_options(late.clone(), ListenerOptions::new("late", Duration::from_secs(2))).unwrap();
    settle().await;
    assert!(reg.has_synced());
    assert_eq!(late.take().len(), 1, "the current cache, as an initial add");
    // Registered at ~3 s, first due at ~5 s: delivered at the 6, 8 and 10 s ticks.
    tokio::time::sleep(Duration::from_millis(7_500)).await;
    assert_eq!(resync_counts(&late.take()), 3);
    assert_eq!(resync_counts(&early.take()), 5);
}

//! The listener's delivery rules: batches, retries, requeues, delivery lag and coalescing.

use async_trait::async_trait;

use super::*;
use crate::informer::HandlerResult;
use crate::informer::test_support::{pod, with_mock_clock};

/// Records each batch's keys; completes at most `take` entries of a batch.
struct Batches {
    take: usize,
    seen: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl EventHandler for Batches {
    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        let done = batch.len().min(self.take);
        self.seen.lock().push(batch[..done].iter().map(|e| e[0].key().to_owned()).collect());
        batch[..done].iter().map(|e| e.iter().map(|_| crate::informer::DONE).collect()).collect()
    }
}

async fn deliver_all(take: usize) -> Vec<Vec<String>> {
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    for name in ["a", "b", "c", "d", "e"] {
        listener.add(Notification::Add { obj: pod("ns", name, 1), initial: true });
    }
    let handler = Arc::new(Batches { take, seen: Mutex::default() });
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(handler.clone(), cancel.clone()));
    while !listener.has_synced() {
        tokio::task::yield_now().await;
    }
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(listener.stats().delivered.load(Ordering::Relaxed), 5);
    handler.seen.lock().clone()
}

/// Fails every add with `Retry`; counts deletes.
struct RetryAdds;

#[async_trait]
impl EventHandler for RetryAdds {
    async fn on_add(&self, _: &Object, _: bool) -> HandlerResult {
        Err(HandlerError::Retry("not yet".into()))
    }
}

/// client-go's `processorListener` keeps no per-key state; wink's retry counts must not
/// outlive their keys: an add waiting for its retry and then deleted (coalesced away,
/// `Pending::coalesce`) takes its count with it, so churn cannot grow the map.
#[tokio::test(start_paused = true)]
async fn retry_counts_of_keys_deleted_while_waiting_for_their_retry_are_dropped() {
    const KEYS: u64 = 10_000;
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(Arc::new(RetryAdds), cancel.clone()));
    let names: Vec<String> = (0..KEYS).map(|i| format!("o{i}")).collect();
    for name in &names {
        listener.add(Notification::Add { obj: pod("ns", name, 1), initial: false });
    }
    while listener.stats().retries.load(Ordering::Relaxed) < KEYS {
        tokio::task::yield_now().await;
    }
    assert_eq!(listener.retry_attempts_len(), KEYS as usize, "each key waits for its retry");
    for name in &names {
        listener.add(Notification::Delete { obj: pod("ns", name, 1), final_state_unknown: false });
    }
    assert_eq!(listener.queue_len(), 0, "each add was cancelled by its delete");
    assert_eq!(listener.retry_attempts_len(), 0);
    cancel.cancel();
    task.await.unwrap();
}

/// Asks to see every object again after 30 s; records each call as (kind, rv).
#[derive(Default)]
struct Requeuing {
    calls: Mutex<Vec<(&'static str, String, tokio::time::Instant)>>,
}

#[async_trait]
impl EventHandler for Requeuing {
    async fn on_add(&self, obj: &Object, _: bool) -> HandlerResult {
        self.calls.lock().push(("add", obj.resource_version().to_owned(), tokio::time::Instant::now()));
        Ok(Action::RequeueAfter(Duration::from_secs(30)))
    }
    async fn on_update(&self, _: &Object, new: &Object) -> HandlerResult {
        self.calls.lock().push(("update", new.resource_version().to_owned(), tokio::time::Instant::now()));
        Ok(Action::AwaitChange)
    }
}

async fn settle() {
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

/// controller-runtime's `Result{RequeueAfter}`: the handler is called again for the same
/// object after the delay, with the newest state it was delivered, even without a change;
/// a delete in between cancels it.
#[tokio::test(start_paused = true)]
async fn a_requeue_delivers_the_newest_state_after_the_delay_and_a_delete_cancels_it() {
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    let handler = Arc::new(Requeuing::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(handler.clone(), cancel.clone()));
    let start = tokio::time::Instant::now();
    listener.add(Notification::Add { obj: pod("ns", "a", 1), initial: false });
    listener.add(Notification::Add { obj: pod("ns", "gone", 1), initial: false });
    settle().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    listener.add(Notification::Update { old: pod("ns", "a", 1), new: pod("ns", "a", 2) });
    listener.add(Notification::Delete { obj: pod("ns", "gone", 1), final_state_unknown: false });
    settle().await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    settle().await;
    let calls = handler.calls.lock().clone();
    let seen: Vec<(&str, &str, u64)> =
        calls.iter().map(|(k, rv, at)| (*k, rv.as_str(), (*at - start).as_secs())).collect();
    assert_eq!(seen, [("add", "1", 0), ("add", "1", 0), ("update", "2", 10), ("update", "2", 30)]);
    assert_eq!(listener.stats().requeues.load(Ordering::Relaxed), 2);
    assert_eq!(listener.queue.lock().requeues_len(), 0, "the deleted key's requeue was cancelled");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn ready_entries_are_handed_over_as_one_batch_in_queue_order() {
    assert_eq!(deliver_all(usize::MAX).await, [["ns/a", "ns/b", "ns/c", "ns/d", "ns/e"]]);
}

#[tokio::test]
async fn entries_a_handler_did_not_start_come_back_first_in_their_order() {
    assert_eq!(deliver_all(2).await, [vec!["ns/a", "ns/b"], vec!["ns/c", "ns/d"], vec!["ns/e"]]);
}

/// Delivers everything at once, after a fixed time.
struct Slow(Arc<quanta::Mock>);

#[async_trait]
impl EventHandler for Slow {
    async fn on_add(&self, _: &Object, _: bool) -> HandlerResult {
        tokio::time::sleep(Duration::from_secs(2)).await;
        self.0.increment(Duration::from_secs(2));
        Ok(Action::AwaitChange)
    }
    async fn on_update(&self, _: &Object, _: &Object) -> HandlerResult {
        Ok(Action::AwaitChange)
    }
}

/// Records what the listener tells of its deliveries.
#[derive(Default)]
struct Observed {
    lags: Mutex<Vec<Duration>>,
    coalesced: AtomicU64,
}

impl DeliveryObserver for Observed {
    fn delivered(&self, lag: Duration) {
        self.lags.lock().push(lag);
    }
    fn coalesced(&self) {
        self.coalesced.fetch_add(1, Ordering::Relaxed);
    }
}

/// The delivery lag runs from the arrival of an entry's oldest notification (not the newest
/// folded into it) to the return of the batch of calls that handled it; a notification
/// folded into a queued one is counted as coalesced.
#[test]
fn the_delivery_lag_runs_from_the_oldest_arrival_and_folded_notifications_are_counted() {
    with_mock_clock(delivery_lag_from_the_oldest_arrival);
}

async fn delivery_lag_from_the_oldest_arrival(clock: Arc<quanta::Mock>) {
    let observed = Arc::new(Observed::default());
    let options = ListenerOptions { observer: Some(observed.clone()), ..ListenerOptions::default() };
    let listener = Arc::new(Listener::new(1, options, Duration::ZERO, Arc::new(|| true)));
    // Two keys queued before the handler runs; the second gets an update folded in later.
    listener.add(Notification::Add { obj: pod("ns", "a", 1), initial: false });
    listener.add(Notification::Add { obj: pod("ns", "b", 1), initial: false });
    clock.increment(Duration::from_secs(1));
    listener.add(Notification::Update { old: pod("ns", "b", 1), new: pod("ns", "b", 2) });
    assert_eq!(observed.coalesced.load(Ordering::Relaxed), 1);
    assert_eq!(listener.stats().coalesced.load(Ordering::Relaxed), 1);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(Arc::new(Slow(clock)), cancel.clone()));
    while observed.lags.lock().len() < 2 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lags = observed.lags.lock().clone();
    // Queued 1 s before the handler started; the two entries go as one batch whose calls
    // take 2 s each: both are settled when the batch returns.
    assert_eq!(lags.iter().map(Duration::as_secs).collect::<Vec<_>>(), [5, 5], "{lags:?}");
    cancel.cancel();
    task.await.unwrap();
}

/// Cancels its listener's token while it handles its first batch, after queueing one more
/// notification.
struct CancelDuring {
    listener: Arc<Listener>,
    cancel: CancellationToken,
}

#[async_trait]
impl EventHandler for CancelDuring {
    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        self.listener.add(Notification::Add { obj: pod("ns", "late", 1), initial: false });
        self.cancel.cancel();
        batch.iter().map(|e| e.iter().map(|_| crate::informer::DONE).collect()).collect()
    }
}

/// As client-go's `processorListener` stops: the batch in progress when the listener is
/// cancelled completes; what is still queued is not delivered.
#[tokio::test]
async fn a_cancelled_listener_completes_its_batch_and_delivers_nothing_more() {
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    listener.add(Notification::Add { obj: pod("ns", "a", 1), initial: false });
    let cancel = CancellationToken::new();
    let handler = Arc::new(CancelDuring { listener: listener.clone(), cancel: cancel.clone() });
    let run = listener.clone().run(handler, cancel.clone());
    tokio::time::timeout(Duration::from_secs(10), run).await.expect("the listener stopped");
    assert_eq!(listener.stats().delivered.load(Ordering::Relaxed), 1, "the batch in progress completed");
    assert_eq!(listener.queue_len(), 1, "the notification queued meanwhile stays undelivered");
}

/// Delivers lone entries at once and declines batches; its at-once path panics on a key
/// named "boom".
#[derive(Default)]
struct AtOnce {
    at_once: Mutex<Vec<String>>,
    batched: Mutex<Vec<String>>,
}

#[async_trait]
impl EventHandler for AtOnce {
    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        self.batched.lock().extend(batch.iter().map(|e| e[0].key().to_owned()));
        batch.iter().map(|e| e.iter().map(|_| crate::informer::DONE).collect()).collect()
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let [entry] = batch else { return None };
        assert_ne!(entry[0].key(), "ns/boom", "a handler's bug");
        self.at_once.lock().push(entry[0].key().to_owned());
        Some(vec![vec![crate::informer::DONE; entry.len()]])
    }
}

/// Delivers every batch at once and queues one more event from each, up to `limit`: a
/// listener that never has to wait.
struct Endless {
    listener: std::sync::OnceLock<Arc<Listener>>,
    delivered: AtomicU64,
    limit: u64,
}

#[async_trait]
impl EventHandler for Endless {
    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        self.deliver_now(batch).expect("delivered at once")
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let delivered = self.delivered.fetch_add(1, Ordering::Relaxed) + 1;
        if delivered < self.limit {
            let name = if delivered.is_multiple_of(2) { "a" } else { "b" };
            let listener = self.listener.get().expect("set before the run");
            listener.add(Notification::Add { obj: pod("ns", name, delivered), initial: false });
        }
        Some(batch.iter().map(|e| vec![crate::informer::DONE; e.len()]).collect())
    }
}

/// A listener whose handler never suspends still yields to its thread's other tasks while
/// its queue keeps refilling (tokio's cooperative budget), rather than holding the thread
/// until the queue runs dry.
#[tokio::test]
async fn a_listener_that_never_waits_still_lets_its_threads_other_tasks_run() {
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    let handler =
        Arc::new(Endless { listener: std::sync::OnceLock::new(), delivered: AtomicU64::new(0), limit: 2_000 });
    assert!(handler.listener.set(listener.clone()).is_ok());
    listener.add(Notification::Add { obj: pod("ns", "a", 1), initial: false });
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(handler.clone(), cancel.clone()));
    let counter = handler.clone();
    let seen = tokio::spawn(async move { counter.delivered.load(Ordering::Relaxed) }).await.unwrap();
    assert!(seen > 0, "the listener ran first");
    assert!(seen < handler.limit, "the other task ran after {seen} of {} deliveries", handler.limit);
    while handler.delivered.load(Ordering::Relaxed) < handler.limit {
        tokio::task::yield_now().await;
    }
    cancel.cancel();
    task.await.unwrap();
}

/// The listener offers each batch to the handler's at-once path first and awaits
/// `deliver_batch` only when it declines; a panic there is a panicked delivery (retried
/// with backoff), as one in `deliver_batch` is.
#[tokio::test(start_paused = true)]
async fn a_batch_the_handler_delivers_at_once_is_not_delivered_again() {
    let listener = Arc::new(Listener::new(1, ListenerOptions::default(), Duration::ZERO, Arc::new(|| true)));
    let handler = Arc::new(AtOnce::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(listener.clone().run(handler.clone(), cancel.clone()));
    listener.add(Notification::Add { obj: pod("ns", "alone", 1), initial: false });
    settle().await;
    for name in ["a", "b"] {
        listener.add(Notification::Add { obj: pod("ns", name, 1), initial: false });
    }
    settle().await;
    listener.add(Notification::Add { obj: pod("ns", "boom", 1), initial: false });
    settle().await;
    assert_eq!(*handler.at_once.lock(), ["ns/alone"]);
    assert_eq!(*handler.batched.lock(), ["ns/a", "ns/b"]);
    let stats = listener.stats();
    assert_eq!(stats.delivered.load(Ordering::Relaxed), 3, "each entry delivered once");
    assert_eq!(stats.panics.load(Ordering::Relaxed), 1);
    assert_eq!(listener.queue_len(), 1, "the panicked entry waits for its retry");
    cancel.cancel();
    task.await.unwrap();
}

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new(RateLimits::default(), None)
}

/// A key handed out right now, or `None` if `get` would wait.
async fn now(queue: &WorkQueue<&'static str>) -> Option<&'static str> {
    tokio::time::timeout(Duration::ZERO, queue.get()).await.ok().flatten()
}

#[tokio::test(start_paused = true)]
async fn a_key_waiting_is_not_queued_twice() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.add("a");
    assert_eq!(q.len(), 2);
    assert_eq!((now(&q).await, now(&q).await, now(&q).await), (Some("a"), Some("b"), None));
    assert_eq!(q.stats().adds, 2, "the second add of a waiting key is not counted");
}

#[tokio::test(start_paused = true)]
async fn a_key_added_while_processed_runs_once_more_after_never_at_once() {
    let q = queue();
    q.add("a");
    let key = now(&q).await.unwrap();
    q.add("a");
    q.add("a");
    assert_eq!(now(&q).await, None, "not handed out while it is processed");
    assert_eq!(q.stats().processing, 1);
    q.done(&key);
    assert_eq!(now(&q).await, Some("a"), "once more after its processing");
    q.done(&"a");
    assert_eq!(now(&q).await, None, "and only once");
}

#[tokio::test(start_paused = true)]
async fn two_workers_never_hold_the_same_key() {
    let q = queue();
    let held = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut workers = Vec::new();
    for _ in 0..2 {
        let (q, held, most) = (q.clone(), held.clone(), most.clone());
        workers.push(tokio::spawn(async move {
            while let Some(key) = q.get().await {
                let holding = held.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(holding, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                held.fetch_sub(1, Ordering::SeqCst);
                q.done(&key);
            }
        }));
    }
    for _ in 0..20 {
        q.add("same");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    q.shut_down();
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "one key is processed by one worker at a time");
}

#[tokio::test(start_paused = true)]
async fn a_delayed_key_comes_when_due_and_the_earliest_delay_wins() {
    let q = queue();
    q.add_after("a", Duration::from_secs(10));
    q.add_after("a", Duration::from_secs(3));
    q.add_after("a", Duration::from_secs(5));
    assert_eq!(q.stats().waiting, 1);
    let started = tokio::time::Instant::now();
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    q.done(&"a");
    assert_eq!(now(&q).await, None, "the later delays were dropped");
}

#[tokio::test(start_paused = true)]
async fn a_worker_waiting_for_a_late_key_takes_an_earlier_one_in_time() {
    let q = queue();
    q.add_after("late", Duration::from_secs(60));
    let worker = {
        let q = q.clone();
        tokio::spawn(async move {
            let key = q.get().await;
            (key, tokio::time::Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = tokio::time::Instant::now();
    q.add_after("early", Duration::from_secs(2));
    let (key, at) = worker.await.unwrap();
    assert_eq!((key, at - started), (Some("early"), Duration::from_secs(2)));
}

#[tokio::test(start_paused = true)]
async fn a_failing_key_backs_off_while_others_proceed() {
    let q = queue();
    q.add("bad");
    q.add("good");
    let mut seen = Vec::new();
    let started = tokio::time::Instant::now();
    for _ in 0..1000 {
        let key = q.get().await.unwrap();
        seen.push((key, started.elapsed().as_millis()));
        if key == "bad" {
            q.add_rate_limited(key);
        } else {
            q.forget(&key);
            q.add_after(key, Duration::from_millis(1));
        }
        q.done(&key);
        if seen.iter().filter(|(k, _)| *k == "bad").count() == 4 {
            break;
        }
    }
    let bad: Vec<u128> = seen.iter().filter(|(k, _)| *k == "bad").map(|(_, at)| *at).collect();
    // Retried after 5, then 10, then 20 ms: 0, 5, 15, 35.
    assert_eq!(bad, [0, 5, 15, 35], "{seen:?}");
    assert!(seen.iter().filter(|(k, _)| *k == "good").count() >= 2, "the other key kept being processed: {seen:?}");
    assert_eq!(q.num_requeues(&"bad"), 4);
    assert_eq!(q.stats().retries, 4);
}

#[tokio::test(start_paused = true)]
async fn stats_report_depth_and_the_longest_running_processing() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.add("c");
    let a = q.get().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let b = q.get().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stats = q.stats();
    assert_eq!((stats.depth, stats.processing, stats.adds), (1, 2, 3));
    assert_eq!(stats.longest_running, Duration::from_secs(3));
    assert_eq!(stats.unfinished_work, Duration::from_secs(4));
    q.done(&a);
    q.done(&b);
    assert_eq!(q.stats().unfinished_work, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn shutting_down_hands_out_what_is_queued_then_ends_every_worker() {
    let q = queue();
    q.add("a");
    q.add_after("later", Duration::from_secs(1));
    let idle = {
        let q = q.clone();
        tokio::spawn(async move {
            let first = q.get().await;
            (first, q.get().await)
        })
    };
    tokio::task::yield_now().await;
    q.shut_down();
    q.add("ignored");
    assert_eq!(idle.await.unwrap(), (Some("a"), None), "the delayed key is dropped, the add ignored");
    assert_eq!(q.get().await, None);
}

struct Durations(parking_lot::Mutex<Vec<(&'static str, Duration)>>);

impl QueueObserver for Durations {
    fn queued(&self, waited: Duration) {
        self.0.lock().push(("queued", waited));
    }
    fn worked(&self, took: Duration) {
        self.0.lock().push(("worked", took));
    }
}

#[tokio::test(start_paused = true)]
async fn the_observer_is_told_how_long_a_key_waited_and_was_processed() {
    let observer = Arc::new(Durations(parking_lot::Mutex::new(Vec::new())));
    let q = WorkQueue::new(RateLimits::default(), Some(observer.clone() as Arc<dyn QueueObserver>));
    q.add("a");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let key = q.get().await.unwrap();
    tokio::time::sleep(Duration::from_millis(70)).await;
    q.done(&key);
    let seen = observer.0.lock().clone();
    assert_eq!(seen, [("queued", Duration::from_millis(30)), ("worked", Duration::from_millis(70))]);
}

//! Tests of the failure policy and of where guest code runs. Real time, short deadlines:
//! the assertions on time are lower bounds only.

use std::time::Instant;

use super::policy::restart_delay;
use super::*;
use crate::plugin::delivery::placement::{FAST_STREAK, Placement};
use crate::plugin::manifest::OnError;
use crate::plugin::runtime::engine::{EngineConfig, PluginEngine, PoolLimits};
use crate::plugin::test_guests::{Behaviour, Guest, MESSAGE, engine, pod, sandbox_with};
use crate::plugin::threads::pool::HandOver;

const TIMEOUT: Duration = Duration::from_millis(50);

fn policy(on_error: OnError, quarantine_after: u32) -> FailurePolicy {
    FailurePolicy { on_error, quarantine_after }
}

fn handler_on(engine: &PluginEngine, guest: Guest, policy: FailurePolicy, pool: GuestPool) -> PluginHandler {
    handler_with_deadline(engine, guest, policy, pool, TIMEOUT)
}

/// A handler whose calls have `deadline`: a test that counts calls, not deadlines, gives
/// them one that a loaded machine's descheduling cannot reach.
fn handler_with_deadline(
    engine: &PluginEngine,
    guest: Guest,
    policy: FailurePolicy,
    pool: GuestPool,
    deadline: Duration,
) -> PluginHandler {
    let sandbox = Arc::new(sandbox_with(engine, guest, 4 << 20, deadline));
    let backoff = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(100),
        ..BackoffConfig::PLUGIN_RESTART
    };
    PluginHandler::new(sandbox, policy, backoff, PluginMetrics::detached("test-guest"), pool)
}

/// Gives `h` the streak of fast calls after which its deliveries may run on the delivering
/// thread (how calls earn it is another test's business: calls timed on a loaded machine
/// would make a test's premise flaky).
fn earn_the_streak(h: &PluginHandler) {
    for _ in 0..FAST_STREAK {
        h.count_call(Took::one(Duration::from_micros(50), None, false), false);
    }
}

fn handler(guest: Guest, policy: FailurePolicy) -> PluginHandler {
    handler_on(&engine(), guest, policy, GuestPool::new(2))
}

#[test]
fn restart_backoff_is_immediate_then_doubles_to_the_cap() {
    let b = BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
        ..BackoffConfig::PLUGIN_RESTART
    };
    let delays: Vec<_> = (0..7).map(|n| restart_delay(&b, n).as_millis()).collect();
    assert_eq!(delays, [0, 0, 100, 200, 400, 800, 1000]);
    assert_eq!(restart_delay(&b, u32::MAX), Duration::from_secs(1));
}

#[tokio::test]
async fn ok_calls_and_guest_errors() {
    let h = handler(
        Guest { on_update: Behaviour::Retry, on_delete: Behaviour::Fatal, ..Guest::default() },
        FailurePolicy::default(),
    );
    assert_eq!(h.on_add(&pod("a"), true).await, crate::informer::DONE);
    assert_eq!(h.on_update(&pod("a"), &pod("a")).await, Err(HandlerError::Retry(MESSAGE.into())));
    assert_eq!(h.on_delete(&pod("a"), false).await, Err(HandlerError::Fatal(MESSAGE.into())));
    let m = h.metrics();
    assert_eq!(m.calls(), 4, "init and three handler calls");
    assert_eq!(m.handler_errors(), (1, 1));
    assert_eq!((m.traps(), m.restarts()), (0, 0));
    assert_eq!(h.consecutive_failures(), 0);
}

#[tokio::test]
async fn a_trap_with_retry_policy_asks_for_a_retry_and_restarts_the_instance() {
    let h = handler(Guest::on_add(Behaviour::Loop), policy(OnError::Retry, 5));
    let err = h.on_add(&pod("a"), false).await.unwrap_err();
    assert!(matches!(&err, HandlerError::Retry(why) if why.contains("deadline exceeded")), "{err:?}");
    assert_eq!(h.metrics().traps_of("interrupt"), 1);
    assert_eq!(h.consecutive_failures(), 1);
    assert_eq!(h.on_update(&pod("a"), &pod("a")).await, crate::informer::DONE);
    assert_eq!(h.metrics().restarts(), 1);
    assert_eq!(h.consecutive_failures(), 0, "a call that runs resets the count");
}

#[tokio::test]
async fn a_trap_with_skip_policy_drops_the_event() {
    let h = handler(Guest::on_add(Behaviour::Unreachable), policy(OnError::Skip, 5));
    assert_eq!(h.on_add(&pod("a"), false).await, crate::informer::DONE);
    assert_eq!(h.metrics().skipped_events(), 1);
    assert_eq!(h.metrics().traps_of("other"), 1);
}

#[tokio::test]
async fn consecutive_traps_quarantine_the_plugin() {
    let h = handler(Guest::on_add(Behaviour::Grow), policy(OnError::Retry, 3));
    assert!(h.on_add(&pod("a"), false).await.is_err());
    assert!(h.on_add(&pod("a"), false).await.is_err());
    assert_eq!(h.on_add(&pod("a"), false).await, crate::informer::DONE, "the quarantining event is dropped");
    assert!(h.is_quarantined());
    let m = h.metrics();
    assert!(m.is_quarantined());
    assert_eq!(m.traps_of("out_of_memory"), 3);
    let calls = m.calls();
    assert_eq!(h.on_update(&pod("a"), &pod("a")).await, crate::informer::DONE);
    assert_eq!(m.calls(), calls, "a quarantined plugin is not called");
    assert_eq!(m.dropped_events(), 2);
    assert!(m.summary().contains("quarantined=yes"), "{}", m.summary());
}

#[tokio::test]
async fn init_refusals_count_towards_quarantine() {
    let h = handler(Guest { init: Behaviour::Reject, ..Guest::default() }, policy(OnError::Retry, 2));
    assert!(matches!(h.warm_up().await, CallOutcome::InitRejected(_)));
    assert_eq!(h.on_add(&pod("a"), false).await, crate::informer::DONE);
    assert!(h.is_quarantined());
    assert_eq!(h.metrics().traps_of("init_rejected"), 2);
}

#[tokio::test]
async fn repeated_traps_back_off_before_restarting() {
    let sandbox = Arc::new(sandbox_with(&engine(), Guest::on_add(Behaviour::Unreachable), 4 << 20, TIMEOUT));
    let backoff = BackoffConfig {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(1),
        ..BackoffConfig::PLUGIN_RESTART
    };
    let h = PluginHandler::new(
        sandbox,
        policy(OnError::Retry, 0),
        backoff,
        PluginMetrics::detached("b"),
        GuestPool::new(1),
    );
    let started = Instant::now();
    assert!(h.on_add(&pod("a"), false).await.is_err());
    assert!(h.on_add(&pod("a"), false).await.is_err()); // first restart: immediate
    let fast = started.elapsed();
    assert!(h.on_add(&pod("a"), false).await.is_err()); // second restart: after 200 ms
    assert!(started.elapsed() - fast >= Duration::from_millis(190), "{:?}", started.elapsed() - fast);
    assert!(!h.is_quarantined(), "quarantineAfter: 0 never quarantines");
    assert_eq!(h.metrics().restarts(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn guest_code_never_runs_on_the_executor_thread() {
    // One executor thread: if the looping guest ran on it, neither the ticker below nor the
    // epoch ticker could run, and the call would never be interrupted. The call loops for
    // 300 ms, sixty of the ticker's periods: a loaded machine that deschedules the test's
    // thread still lets it tick the few times asked.
    let (engine, pool) = (engine(), GuestPool::new(2));
    let guest = Guest::on_add(Behaviour::Loop);
    let h = handler_with_deadline(&engine, guest, policy(OnError::Skip, 5), pool, Duration::from_millis(300));
    let ticks = Arc::new(AtomicU32::new(0));
    let counter = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(h.on_add(&pod("a"), false).await, crate::informer::DONE);
    ticker.abort();
    assert_eq!(h.metrics().traps_of("interrupt"), 1);
    assert!(ticks.load(Ordering::Relaxed) >= 3, "the executor was blocked: {} ticks", ticks.load(Ordering::Relaxed));
}

#[tokio::test]
async fn the_guest_pool_bounds_concurrent_calls() {
    let engine = engine();
    // Calls slower than a second would leave the pool; these stop at their 50 ms deadline.
    let pool = GuestPool::with_slow_call(1, Duration::from_secs(1));
    let a = handler_on(&engine, Guest::on_add(Behaviour::Loop), policy(OnError::Skip, 0), pool.clone());
    let b = handler_on(&engine, Guest::on_add(Behaviour::Loop), policy(OnError::Skip, 0), pool.clone());
    a.warm_up().await;
    b.warm_up().await;
    let started = Instant::now();
    let (p, q) = (pod("a"), pod("b"));
    let (x, y) = tokio::join!(a.on_add(&p, false), b.on_add(&q, false));
    assert_eq!((x, y), (crate::informer::DONE, crate::informer::DONE));
    assert!(started.elapsed() >= TIMEOUT * 2, "calls overlapped: {:?}", started.elapsed());
    assert_eq!(pool.busy(), 0);
}

#[tokio::test]
async fn calls_into_one_plugin_are_serial() {
    let h = handler(Guest::on_add(Behaviour::Loop), policy(OnError::Skip, 0));
    h.warm_up().await;
    let started = Instant::now();
    let (p, q) = (pod("a"), pod("b"));
    let (x, y) = tokio::join!(h.on_add(&p, false), h.on_add(&q, false));
    assert_eq!((x, y), (crate::informer::DONE, crate::informer::DONE));
    assert!(started.elapsed() >= TIMEOUT * 2, "calls overlapped: {:?}", started.elapsed());
}

#[tokio::test]
async fn an_exhausted_instance_pool_is_retried_without_quarantine() {
    let limits = PoolLimits { total_component_instances: 1, ..PoolLimits::small() };
    let engine = PluginEngine::new(EngineConfig { pool: Some(limits), ..EngineConfig::default() }).unwrap();
    if !matches!(engine.allocation(), crate::plugin::runtime::engine::Allocation::Pooling(_)) {
        eprintln!("skipped: this machine cannot reserve the pooling allocator");
        return;
    }
    let holder = handler_on(&engine, Guest::default(), FailurePolicy::default(), GuestPool::new(2));
    assert_eq!(holder.warm_up().await, CallOutcome::Ok);
    let starved = handler_on(&engine, Guest::default(), policy(OnError::Skip, 1), GuestPool::new(2));
    let err = starved.on_add(&pod("a"), false).await.unwrap_err();
    assert!(
        matches!(&err, HandlerError::Retry(why) if why.contains("cannot instantiate: the instance pool is full")),
        "{err:?}"
    );
    assert!(!starved.is_quarantined());
    assert_eq!(starved.metrics().traps_of("instantiation"), 1);
}

fn updates(keys: &[&str]) -> Vec<Vec<Notification>> {
    keys.iter().map(|k| vec![Notification::Update { old: pod(k), new: pod(k) }]).collect()
}

#[tokio::test]
async fn a_batch_runs_every_entry_in_one_blocking_task_in_order() {
    // A budget no loaded machine spends, so the whole batch runs in one go.
    let h = handler(Guest { on_update: Behaviour::Log, ..Guest::default() }, FailurePolicy::default())
        .with_batch_budget(Duration::from_secs(3600));
    let results = h.deliver_many(&updates(&["a", "b", "c"])).await;
    assert_eq!(results, vec![vec![crate::informer::DONE], vec![crate::informer::DONE], vec![crate::informer::DONE]]);
    assert_eq!(h.metrics().calls(), 4, "init and three calls");
}

#[tokio::test]
async fn a_spent_budget_leaves_the_rest_of_the_batch_unstarted() {
    // The first entry always runs; with no budget left after it, the rest go back unstarted.
    let h = handler(Guest { on_update: Behaviour::Log, ..Guest::default() }, FailurePolicy::default())
        .with_batch_budget(Duration::ZERO);
    let results = h.deliver_many(&updates(&["a", "b", "c"])).await;
    assert_eq!(results, vec![vec![crate::informer::DONE]]);
    assert_eq!(h.metrics().calls(), 2, "init and one call");
}

#[tokio::test]
async fn a_trap_stops_the_batch_and_leaves_the_rest_unstarted() {
    let h = handler(Guest { on_update: Behaviour::Unreachable, ..Guest::default() }, policy(OnError::Retry, 0));
    let results = h.deliver_many(&updates(&["a", "b", "c"])).await;
    assert_eq!(results.len(), 1, "entries after the trap are not started: {results:?}");
    assert!(matches!(&results[0][..], [Err(HandlerError::Retry(_))]), "{results:?}");
    assert_eq!(h.metrics().traps_of("other"), 1);
}

#[tokio::test]
async fn a_quarantined_plugin_drops_a_whole_batch_without_calling_the_guest() {
    let h = handler(Guest { on_update: Behaviour::Unreachable, ..Guest::default() }, policy(OnError::Skip, 1));
    let first = h.deliver_many(&updates(&["a"])).await;
    assert_eq!(first, vec![vec![crate::informer::DONE]], "the quarantining event is dropped");
    assert!(h.is_quarantined());
    let calls = h.metrics().calls();
    let results = h.deliver_many(&updates(&["b", "c"])).await;
    assert_eq!(results, vec![vec![crate::informer::DONE], vec![crate::informer::DONE]]);
    assert_eq!(h.metrics().calls(), calls);
    assert_eq!(h.metrics().dropped_events(), 3);
}

#[tokio::test]
async fn a_stuck_call_leaves_the_pool_and_its_neighbours_keep_running() {
    // One guest thread. The stuck plugin loops until its 5 s deadline; the pool moves it out
    // after 10 ms, so the neighbour's call runs while the stuck one still spins.
    let engine = engine();
    let pool = GuestPool::with_slow_call(1, Duration::from_millis(10));
    let stuck_sandbox =
        Arc::new(sandbox_with(&engine, Guest::on_add(Behaviour::Loop), 4 << 20, Duration::from_secs(5)));
    let stuck = PluginHandler::new(
        stuck_sandbox,
        policy(OnError::Skip, 0),
        BackoffConfig::PLUGIN_RESTART,
        PluginMetrics::detached("stuck"),
        pool.clone(),
    );
    let neighbour = handler_on(&engine, Guest::default(), FailurePolicy::default(), pool.clone());
    stuck.warm_up().await;
    neighbour.warm_up().await;
    let spinning = tokio::spawn(async move { stuck.on_add(&pod("a"), false).await });
    while pool.slow_calls() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(neighbour.on_add(&pod("b"), false).await, crate::informer::DONE);
    assert!(!spinning.is_finished(), "the neighbour ran while the stuck call was still running");
    assert_eq!(pool.busy(), 0, "the stuck call no longer counts against the pool");
    spinning.abort();
}

/// controller-runtime starts a controller's workers after `WaitForCacheSync`: a plugin is
/// first called once every cache it reads has synced, so it never acts on a cache still
/// filling.
#[tokio::test(start_paused = true)]
async fn nothing_is_delivered_until_the_start_gate_opens() {
    let synced = Arc::new(AtomicBool::new(false));
    let gate = synced.clone();
    let h = handler(Guest::default(), FailurePolicy::default())
        .with_start_gate(Arc::new(move || gate.load(Ordering::Acquire)));
    let calls_before = h.metrics().calls();
    let delivering = tokio::spawn({
        let h = h.clone();
        async move { h.on_add(&pod("a"), true).await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(h.metrics().calls(), calls_before, "no call while a cache is still filling");
    assert!(!delivering.is_finished());
    synced.store(true, Ordering::Release);
    assert_eq!(delivering.await.unwrap(), crate::informer::DONE);
    assert!(h.metrics().calls() > calls_before);
}

/// Calls of a plugin that stayed fast run on the delivering thread: a lone event does not
/// pay for waking a guest thread and then the executor thread again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_plugins_calls_move_to_the_delivering_thread_after_a_streak() {
    let pool = GuestPool::new(2);
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool.clone());
    let (old, new) = (pod("a"), pod("a"));
    // Calls timed on a loaded machine may not all count as fast: call until the streak is
    // earned (what earns it is `a_preempted_short_call_keeps_the_fast_streak`'s business), every call on the guest threads.
    let mut calls = 0;
    while !h.shared.placement.may_run_here() {
        assert_eq!(h.on_update(&old, &new).await, crate::informer::DONE);
        calls += 1;
        assert!(calls < 10_000, "no streak of fast calls in {calls} calls");
    }
    assert!(calls >= FAST_STREAK, "the streak took {calls} calls, fewer than {FAST_STREAK}");
    assert_eq!(pool.borrowed_runs(), 0, "the calls before the streak go to the guest threads");
    assert_eq!(h.on_update(&old, &new).await, crate::informer::DONE);
    assert_eq!(pool.borrowed_runs(), 1, "after a streak of fast calls, the call ran here");
    assert_eq!(pool.busy(), 0);
}

/// A plugin's batches go to the guest threads until its calls have earned the streak of fast
/// calls, then run on the delivering thread, batch after batch (no hop, no wake-up) — also
/// while other listeners have work queued, as a native handler's would — until a slow call
/// sends the plugin back to the guest threads for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_plugins_batches_run_on_the_delivering_thread() {
    let other = crate::informer::Listener::new(1, Default::default(), Duration::ZERO, Arc::new(|| true));
    other.add(Notification::Add { obj: pod("queued"), initial: true });
    let pool = GuestPool::new(2);
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool.clone());
    let batch = updates(&["b", "c"]);
    let all_ok = |results: Vec<EntryResults>| results.iter().flatten().all(Result::is_ok);
    assert!(all_ok(h.deliver_many(&batch).await));
    assert_eq!(pool.borrowed_runs(), 0, "no streak of fast calls yet: the guest threads");
    earn_the_streak(&h);
    for _ in 0..3 {
        assert!(all_ok(h.deliver_many(&batch).await));
    }
    assert_eq!(pool.borrowed_runs(), 3, "every batch of a fast plugin ran here");
    assert!(matches!(h.shared.placement.hand_over(), HandOver::IfItStalls), "at once, its thread's tasks kept");
    h.shared.placement.stays_on_pool.store(true, Ordering::Relaxed);
    assert!(all_ok(h.deliver_many(&batch).await));
    assert_eq!(pool.borrowed_runs(), 3, "sent back after a slow call: the guest threads");
}

/// A batch run on its delivering thread stops once it has run for half of
/// [`HAND_OVER_AFTER`], whatever the handler's own batch budget, so that a batch of fast calls
/// never holds that thread's other tasks up long enough to hand them over; the same batch on
/// the guest threads runs to the handler's budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_on_its_delivering_thread_keeps_within_half_the_hand_over_time() {
    let pool = GuestPool::new(2);
    let handler = || {
        let deadline = Duration::from_secs(60);
        handler_with_deadline(&engine(), Guest::default(), FailurePolicy::default(), pool.clone(), deadline)
            .with_batch_budget(Duration::from_secs(3600))
    };
    let h = handler();
    earn_the_streak(&h);
    // A thousand calls take longer than half a millisecond on any machine.
    let keys: Vec<String> = (0..1_000).map(|i| format!("p{i}")).collect();
    let batch = updates(&keys.iter().map(String::as_str).collect::<Vec<_>>());
    let here = h.deliver_many(&batch).await;
    assert_eq!(pool.borrowed_runs(), 1, "the batch ran on this thread");
    assert!(!here.is_empty() && here.len() < batch.len(), "{} of {} entries", here.len(), batch.len());
    assert_eq!(pool.stalled_hand_overs(), 0, "it never held the thread's tasks past the hand-over time");
    let there = handler().deliver_many(&batch).await;
    assert_eq!(pool.borrowed_runs(), 1, "a plugin without the streak: the guest threads");
    assert_eq!(there.len(), batch.len(), "the handler's own budget");
}

/// The listener's at-once path (`EventHandler::deliver_now`) delivers a fast plugin's lone
/// event on the calling thread and declines whatever would have to wait or hop: the calls
/// before the streak, a batch, a slot in use, a closed start gate, a quarantined plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_plugins_lone_event_is_delivered_at_once_and_anything_else_is_declined() {
    let pool = GuestPool::new(2);
    let open = Arc::new(AtomicBool::new(false));
    let gate = open.clone();
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool.clone())
        .with_start_gate(Arc::new(move || gate.load(Ordering::Acquire)));
    let lone = updates(&["a"]);
    assert!(h.deliver_now(&lone).is_none(), "no streak of fast calls yet: the guest threads");
    earn_the_streak(&h);
    assert!(h.deliver_now(&lone).is_none(), "a cache the plugin reads is still filling");
    open.store(true, Ordering::Release);
    assert!(h.deliver_now(&updates(&["b", "c"])).is_none(), "a batch pays the hop once for all its events");
    let held = h.slot.try_lock().expect("the slot is free");
    assert!(h.deliver_now(&lone).is_none(), "the slot is in use: the event waits for it");
    drop(held);
    assert_eq!(h.metrics().calls(), 0);
    let delivered = h.deliver_now(&lone).expect("delivered at once");
    assert_eq!(delivered, vec![vec![crate::informer::DONE]]);
    assert_eq!(h.metrics().calls(), 2, "instantiation (init) and the call");
    assert_eq!(pool.borrowed_runs(), 1, "on this thread");
    h.shared.quarantined.store(true, Ordering::Release);
    assert!(h.deliver_now(&lone).is_none(), "a quarantined plugin's events are dropped on the other path");
    assert_eq!(h.metrics().calls(), 2);
}

/// A call on the delivering thread keeps that thread's priority (it goes back to the
/// executor), so a plugin whose call ran long there goes back to the guest threads for good,
/// where a stalled call is moved to the lowest priority.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_whose_call_ran_long_on_the_delivering_thread_keeps_to_the_guest_threads() {
    let pool = GuestPool::with_slow_call(2, Duration::from_millis(10));
    // on-update returns at once; on-add loops until its deadline: 500 ms, so that it computes
    // past the 10 ms threshold in thread CPU time even on a machine whose other load takes
    // most of the CPU (the deadline's pauses and descheduling are not computing).
    let looping = Guest::on_add(Behaviour::Loop);
    let h =
        handler_with_deadline(&engine(), looping, policy(OnError::Skip, 0), pool.clone(), Duration::from_millis(500));
    h.warm_up().await;
    earn_the_streak(&h);
    assert_eq!(h.on_add(&pod("b"), false).await, crate::informer::DONE, "skipped after the deadline");
    assert_eq!(pool.borrowed_runs(), 1, "the looping call ran on the delivering thread");
    assert_eq!(pool.slow_calls(), 1, "past the threshold, it gave its place in the pool back");
    let (old, new) = (pod("a"), pod("a"));
    for _ in 0..FAST_STREAK * 2 {
        h.on_update(&old, &new).await.unwrap();
    }
    assert_eq!(pool.borrowed_runs(), 1, "no call of this plugin ran here again");
    assert_eq!(pool.busy(), 0);
}

/// What sends a plugin back for good is CPU spent on the delivering thread, not time on the
/// clock: a virtual CPU preempted for milliseconds during a short call is not the plugin's
/// doing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_descheduled_on_the_delivering_thread_does_not_send_the_plugin_back() {
    let pool = GuestPool::with_slow_call(2, Duration::from_millis(10));
    let h = handler_on(&engine(), Guest::on_add(Behaviour::Loop), policy(OnError::Skip, 0), pool);
    let stays = |h: &PluginHandler| h.shared.placement.stays_on_pool.load(Ordering::Relaxed);
    h.count_call(Took::one(Duration::from_millis(50), Some(Duration::from_micros(100)), false), true);
    assert!(!stays(&h), "50 ms on the clock but 0.1 ms of CPU: descheduled, not computing");
    h.count_call(Took::one(Duration::from_millis(50), Some(Duration::from_millis(20)), false), false);
    assert!(!stays(&h), "a long call on a guest thread is the watchdog's business");
    h.count_call(Took::one(Duration::from_millis(50), Some(Duration::from_millis(20)), false), true);
    assert!(stays(&h), "20 ms of CPU on the delivering thread");
    let pool = GuestPool::with_slow_call(2, Duration::from_millis(10));
    let h = handler_on(&engine(), Guest::on_add(Behaviour::Loop), policy(OnError::Skip, 0), pool);
    h.count_call(Took::one(Duration::from_millis(50), None, false), true);
    assert!(stays(&h), "without a thread CPU clock, the clock decides");
}

/// The streak that lets a plugin's calls run on the delivering thread counts what the calls
/// computed: a short call whose thread was preempted (a loaded node) still counts as fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempted_short_call_keeps_the_fast_streak() {
    let pool = GuestPool::new(2);
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool);
    let preempted = Took::one(Duration::from_millis(5), Some(Duration::from_micros(100)), false);
    for _ in 0..FAST_STREAK {
        assert!(!h.shared.placement.may_run_here());
        h.count_call(preempted, false);
    }
    assert!(h.shared.placement.may_run_here(), "short calls in CPU time, however long on the clock");
    h.count_call(Took::one(Duration::from_millis(5), Some(Duration::from_millis(2)), false), false);
    assert!(!h.shared.placement.may_run_here(), "a call that computed for 2 ms resets the streak");
    for _ in 0..FAST_STREAK {
        h.count_call(Took::one(Duration::from_micros(100), None, false), false);
    }
    assert!(h.shared.placement.may_run_here(), "calls that saw no epoch tick: the clock decides");
    h.count_call(Took::one(Duration::from_millis(2), None, false), false);
    assert!(!h.shared.placement.may_run_here(), "2 ms on the clock, no CPU measured: slow");
}

/// A call that held its delivering thread's other tasks up (it ran past the hand-over
/// bound before handing them over) makes this plugin's next calls hand them over first: 64
/// after the first such call, twice as many after each later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_held_up_the_executor_makes_later_calls_hand_it_over_first() {
    let pool = GuestPool::new(2);
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool);
    let short = Took::one(Duration::from_micros(100), None, false);
    let stalled = Took::one(Duration::from_millis(5), Some(Duration::from_micros(100)), true);
    let first_calls =
        |h: &PluginHandler| (0..10_000).take_while(|_| h.shared.placement.takes_a_call_after_a_stall()).count();
    h.count_call(stalled, false);
    h.count_call(short, true);
    assert_eq!(
        h.shared.placement.hand_over_first.load(Ordering::Relaxed),
        0,
        "on a guest thread, or short: nothing held up"
    );
    h.count_call(stalled, true);
    assert_eq!(
        h.shared.placement.hand_over(),
        HandOver::First,
        "held the executor up past the bound, if only preempted"
    );
    assert_eq!(first_calls(&h), 63);
    h.count_call(stalled, true);
    assert_eq!(first_calls(&h), 128, "a second time: twice as long");
    assert!(!h.shared.placement.stays_on_pool.load(Ordering::Relaxed), "its calls still run where they are delivered");
}

/// A batch is judged call by call: under load a listener's batch of short calls runs past
/// `FAST_CALL` as a whole, and counted as one call it would keep a fast plugin on the guest
/// threads (a hop per batch) for as long as the load lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_judged_call_by_call() {
    let pool = GuestPool::with_slow_call(2, Duration::from_millis(10));
    let h = handler_on(&engine(), Guest::default(), FailurePolicy::default(), pool);
    let placement = &h.shared.placement;
    let batch = |wall: Duration, cpu: Option<Duration>, calls: u32, longest: Duration| Took {
        wall,
        cpu,
        stalled_executor: false,
        calls,
        longest,
    };
    let busy = Duration::from_millis(5);
    h.count_call(batch(busy, None, 1000, Duration::from_micros(5)), false);
    assert!(placement.may_run_here(), "a thousand 5 µs calls are a thousand fast calls, not one of 5 ms");
    h.count_call(batch(busy, None, 10, Duration::from_millis(2)), false);
    assert!(!placement.may_run_here(), "one of its calls took 2 ms on the clock, no CPU measured: slow");
    h.count_call(batch(busy, Some(Duration::from_micros(300)), 3, Duration::from_millis(2)), false);
    assert_eq!(placement.fast_streak.load(Ordering::Relaxed), 3, "each call computed 0.3 ms at most: three fast calls");
    h.count_call(batch(busy, None, 0, Duration::ZERO), false);
    assert_eq!(placement.fast_streak.load(Ordering::Relaxed), 3, "a batch that called nothing is not judged");
    h.count_call(batch(Duration::from_millis(20), None, 4000, Duration::from_micros(5)), true);
    assert!(
        !placement.stays_on_pool.load(Ordering::Relaxed),
        "20 ms of short calls on the delivering thread: none of them ran long"
    );
}

/// What a batch records of its calls: one per event, and the longest on the clock.
#[tokio::test]
async fn a_batch_records_each_of_its_calls() {
    let h = handler(Guest { on_update: Behaviour::Log, ..Guest::default() }, FailurePolicy::default());
    assert!(matches!(h.warm_up().await, CallOutcome::Ok));
    let entries = updates(&["a", "b", "c"]);
    let mut slot = h.slot.try_lock().expect("no call in progress");
    let started = quanta::Instant::now();
    let (results, ran) =
        run_batch(&h.shared, &mut slot, entries.iter().map(Vec::as_slice), started, Duration::from_secs(3600));
    assert_eq!(results.len(), 3);
    assert_eq!(ran.calls, 3, "one call per event");
    let wall = ran.ended.saturating_duration_since(started);
    assert!(ran.longest > Duration::ZERO && ran.longest <= wall, "{:?} of {wall:?}", ran.longest);
}

/// Starts are placed as a plugin's calls are, on a record the host keeps of every start: they
/// run on a guest thread until starts have stayed fast, then on the thread that begins them
/// (no hop to a guest thread and back), until a slow one sends the next ones back to the
/// guest threads. A handler's own `warm_up` always starts on a guest thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_run_where_they_are_begun_once_starts_have_stayed_fast() {
    let (engine, pool) = (engine(), GuestPool::new(2));
    let starts = Placement::default();
    let plugin = |guest| handler_on(&engine, guest, FailurePolicy::default(), pool.clone());
    assert_eq!(plugin(Guest::default()).warm_up_placed(&starts).await, CallOutcome::Ok);
    assert_eq!(pool.borrowed_runs(), 0, "before starts have stayed fast, a start goes to a guest thread");
    for _ in 0..FAST_STREAK {
        starts.count("earlier", Took::one(Duration::from_micros(50), None, false), false, pool.slow_call());
    }
    assert_eq!(plugin(Guest::default()).warm_up().await, CallOutcome::Ok);
    assert_eq!(pool.borrowed_runs(), 0, "warm_up starts on a guest thread");
    assert_eq!(plugin(Guest::default()).warm_up_placed(&starts).await, CallOutcome::Ok);
    assert_eq!(pool.borrowed_runs(), 1, "once starts have stayed fast, a start runs here");
    let slow = plugin(Guest { init: Behaviour::Loop, ..Guest::default() }).warm_up_placed(&starts).await;
    assert!(slow.to_string().contains("deadline exceeded"), "{slow}");
    assert_eq!(pool.borrowed_runs(), 2, "the slow start ran here too");
    assert_eq!(plugin(Guest::default()).warm_up_placed(&starts).await, CallOutcome::Ok);
    assert_eq!(pool.borrowed_runs(), 2, "after a slow start, starts go to the guest threads again");
}

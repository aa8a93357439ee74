//! Recycling: idle instances dropped after their period (paused time), and the least
//! recently used one when the pool is full.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::informer::{BackoffConfig, DONE, EventHandler, HandlerError};
use crate::plugin::delivery::runner::{GuestPool, PluginHandler};
use crate::plugin::manifest::FailurePolicy;
use crate::plugin::runtime::engine::{Allocation, EngineConfig, PluginEngine, PoolLimits};
use crate::plugin::test_guests::{Guest, engine, pod, sandbox_with};

const IDLE: Duration = Duration::from_secs(60);

fn handler_on(engine: &PluginEngine, name: &str, recycler: &Recycler) -> PluginHandler {
    let sandbox = Arc::new(sandbox_with(engine, Guest::default(), 4 << 20, Duration::from_secs(30)));
    let metrics = PluginMetrics::detached(name);
    PluginHandler::new(sandbox, FailurePolicy::default(), BackoffConfig::PLUGIN_RESTART, metrics, GuestPool::new(1))
        .with_recycler(recycler)
}

fn has_instance(h: &PluginHandler) -> bool {
    h.slot.try_lock().is_ok_and(|slot| slot.instance.is_some())
}

#[tokio::test(start_paused = true)]
async fn an_instance_idle_for_its_period_is_dropped_and_the_next_event_starts_a_new_one() {
    let recycler = Recycler::new(RecyclePolicy { idle_after: Some(IDLE) });
    let h = handler_on(&engine(), "idle", &recycler);
    assert_eq!(h.on_add(&pod("a"), false).await, DONE);
    assert_eq!(h.metrics().calls(), 2, "init and one call");

    tokio::time::sleep(IDLE / 2).await;
    assert!(has_instance(&h), "not idle long enough yet");
    tokio::time::sleep(IDLE * 2).await;
    assert!(!has_instance(&h), "idle for its period: recycled");
    assert_eq!(h.metrics().recycled(), 1);

    assert_eq!(h.on_update(&pod("a"), &pod("a")).await, DONE);
    assert_eq!(h.metrics().calls(), 4, "a new instance: init runs again, then the call");
    assert_eq!(h.metrics().restarts(), 0, "a recycled instance's successor is not a restart");
}

#[tokio::test(start_paused = true)]
async fn an_instance_called_within_its_period_stays() {
    let recycler = Recycler::new(RecyclePolicy { idle_after: Some(IDLE) });
    let h = handler_on(&engine(), "busy", &recycler);
    for _ in 0..8 {
        assert_eq!(h.on_add(&pod("a"), false).await, DONE);
        tokio::time::sleep(IDLE / 2).await;
    }
    assert!(has_instance(&h));
    assert_eq!((h.metrics().recycled(), h.metrics().calls()), (0, 9), "one init, eight calls");
}

#[tokio::test(start_paused = true)]
async fn an_instance_in_a_call_is_not_dropped_and_keep_idle_never_drops() {
    let recycler = Recycler::new(RecyclePolicy { idle_after: Some(IDLE) });
    let h = handler_on(&engine(), "held", &recycler);
    assert_eq!(h.on_add(&pod("a"), false).await, DONE);
    let held = h.slot.clone().lock_owned().await;
    tokio::time::sleep(IDLE * 3).await;
    drop(held);
    assert!(has_instance(&h), "a slot held by a call is in use");

    let keep = Recycler::new(RecyclePolicy::keep_idle());
    let kept = handler_on(&engine(), "kept", &keep);
    assert_eq!(kept.on_add(&pod("a"), false).await, DONE);
    tokio::time::sleep(IDLE * 100).await;
    assert!(has_instance(&kept));
}

/// An engine whose pool has `places` instances, or `None` (said) where the pool cannot be
/// reserved.
fn pool_of(places: u32) -> Option<PluginEngine> {
    let limits = PoolLimits { total_component_instances: places, ..PoolLimits::small() };
    let engine = PluginEngine::new(EngineConfig { pool: Some(limits), ..EngineConfig::default() }).unwrap();
    let pooled = matches!(engine.allocation(), Allocation::Pooling(_));
    if !pooled {
        eprintln!("skipped: this machine cannot reserve the pooling allocator");
    }
    pooled.then_some(engine)
}

#[tokio::test]
async fn a_full_pool_takes_the_least_recently_used_idle_instance() {
    let Some(engine) = pool_of(2) else { return };
    let recycler = Recycler::new(RecyclePolicy::keep_idle());
    let [a, b, c] = ["a", "b", "c"].map(|name| handler_on(&engine, name, &recycler));
    assert_eq!(a.on_add(&pod("x"), false).await, DONE);
    assert_eq!(b.on_add(&pod("x"), false).await, DONE);
    assert_eq!(a.on_update(&pod("x"), &pod("x")).await, DONE, "a is now used more recently than b");

    assert_eq!(c.on_add(&pod("x"), false).await, DONE, "the pool is full: b's place is taken");
    assert_eq!((has_instance(&a), has_instance(&b), has_instance(&c)), (true, false, true));
    assert_eq!((a.metrics().recycled(), b.metrics().recycled()), (0, 1));

    // With every live instance in a call, the refusal stands: retried, never quarantined.
    let (held_a, held_c) = (a.slot.clone().lock_owned().await, c.slot.clone().lock_owned().await);
    let err = b.on_add(&pod("x"), false).await.unwrap_err();
    assert!(matches!(&err, HandlerError::Retry(why) if why.contains("the instance pool is full")), "{err:?}");
    assert!(!b.is_quarantined());
    drop((held_a, held_c));
}

#[tokio::test]
async fn a_dropped_handler_is_unlisted() {
    let recycler = Recycler::new(RecyclePolicy::keep_idle());
    let h = handler_on(&engine(), "gone", &recycler);
    assert_eq!(h.on_add(&pod("a"), false).await, DONE);
    assert_eq!(recycler.inner.live.lock().len(), 1, "listed once its instance started");
    assert_eq!(h.on_add(&pod("b"), false).await, DONE);
    assert_eq!(recycler.inner.live.lock().len(), 1, "listed once");
    drop(h);
    let (swept, left) = recycler.inner.sweep(tokio::time::Instant::now(), IDLE);
    assert!(swept.is_empty() && left == 0);
    assert!(recycler.inner.live.lock().is_empty());
}

/// The clock spares an instance used since it last looked: on a full pool of three, a
/// fourth start takes the oldest (every instance had been used since it was listed: one
/// round notes them all, the next takes the first); then b, used again, is passed over for
/// c, though c is the newer in the clock's order.
#[tokio::test]
async fn the_clock_spares_an_instance_used_since_its_last_look() {
    let Some(engine) = pool_of(3) else { return };
    let recycler = Recycler::new(RecyclePolicy::keep_idle());
    let handlers = ["a", "b", "c", "d", "e"].map(|name| handler_on(&engine, name, &recycler));
    let [a, b, c, d, e] = &handlers;
    for h in [a, b, c, d] {
        assert_eq!(h.on_add(&pod("x"), false).await, DONE);
    }
    assert_eq!(handlers.each_ref().map(has_instance), [false, true, true, true, false]);
    assert_eq!(b.on_update(&pod("x"), &pod("x")).await, DONE);
    assert_eq!(e.on_add(&pod("x"), false).await, DONE);
    assert_eq!(handlers.each_ref().map(has_instance), [false, true, false, true, true]);
}

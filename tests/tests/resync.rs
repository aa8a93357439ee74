//! Per-plugin resync periods, in real time: two plugins watching the same resource (so
//! sharing one informer) with `resyncPeriod: 1s` and `3s` each receive resyncs — updates
//! with old == new resourceVersion — at their own rate.
//!
//! Paused time cannot drive real files and real wasm, so this is a counted window: over about
//! seven seconds the 1 s plugin must get at least four resyncs per object, the 3 s plugin at
//! least one, and neither more than its period allows in the window's measured length (+1
//! for the phase). Load only delays timers, so the fast plugin's lower bound is far below its
//! expected seven and the bounds never depend on timing precision; a host that gave both
//! plugins the same period fails one of them.
//!
//! The plugins' names sort the slow one first, so the registry deploys it first: a host that
//! started the informer with the first plugin's period would raise the second plugin's 1 s
//! to 3 s (client-go's rule for handlers added after start) and fail here.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test resync`.

use std::time::{Duration, Instant};

use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::recorder::Seen;
use wink_tests::wait::wait_for;

const SLOW: &str = "resync-a-every-3s";
const FAST: &str = "resync-b-every-1s";
const KEYS: [&str; 2] = ["shop/web-1", "shop/web-2"];

fn manifest_tail(period: &str) -> String {
    format!("resources:\n  - apiVersion: v1\n    kind: Pod\n    resyncPeriod: {period}\n")
}

/// Resyncs a plugin received per key.
fn resyncs(plugin: &str) -> Vec<usize> {
    let lines = logs().recorded(plugin);
    KEYS.iter().map(|k| lines.iter().filter(|l| l.seen.key() == *k && l.seen.is_resync()).count()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_plugins_resync_at_their_own_periods() {
    let cluster = Cluster::new();
    for key in KEYS {
        let (ns, name) = key.split_once('/').unwrap();
        cluster.put_pod(ns, name, &[("app", "web")]);
    }
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), SLOW, Some(&manifest_tail("3s")));
    install_plugin("event-recorder", plugins.path(), FAST, Some(&manifest_tail("1s")));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;
    let initial_adds =
        |p: &str| logs().recorded(p).iter().filter(|l| matches!(l.seen, Seen::Add { initial: true, .. })).count() == 2;
    wait_for("the initial adds", || initial_adds(SLOW) && initial_adds(FAST), || logs().dump(FAST)).await;

    let (slow_before, fast_before) = (resyncs(SLOW), resyncs(FAST));
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(7)).await;
    let (slow_after, fast_after) = (resyncs(SLOW), resyncs(FAST));
    // A late wake-up lengthens the window: the upper bounds follow its measured length.
    let window_ms = window.elapsed().as_millis();
    let secs = window.elapsed().as_secs_f64();
    host.stop().await;

    for (i, key) in KEYS.iter().enumerate() {
        let fast = fast_after[i] - fast_before[i];
        let slow = slow_after[i] - slow_before[i];
        let at_most = |period_ms: u128| usize::try_from(window_ms / period_ms).unwrap() + 1;
        assert!(
            (4..=at_most(1000)).contains(&fast),
            "{key}: the 1s plugin got {fast} resyncs in {secs:.1}s (expected about 7)\n{}",
            logs().dump(FAST)
        );
        assert!(
            (1..=at_most(3000)).contains(&slow),
            "{key}: the 3s plugin got {slow} resyncs in {secs:.1}s (expected about 2)\n{}",
            logs().dump(SLOW)
        );
        assert!(fast > slow, "{key}: fast {fast} vs slow {slow}");
    }
    // A resync is only ever an update with old == new, and none came as anything else.
    for plugin in [SLOW, FAST] {
        let lines = logs().recorded(plugin);
        let other =
            lines.iter().filter(|l| !l.seen.is_resync() && !matches!(l.seen, Seen::Add { initial: true, .. })).count();
        assert_eq!(other, 0, "{plugin}: only initial adds and resyncs expected\n{}", logs().dump(plugin));
    }
}

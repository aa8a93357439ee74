//! Hostile plugins are contained: a plugin that traps, one that loops forever and one that
//! allocates past its memory cap each run beside an `event-recorder` neighbour on the same
//! informer, with real components built from plugins/hostile/.
//!
//! Specifies, for each: the neighbour receives every event; the host reports the failure
//! (an error record carrying the plugin's name and the kind of trap: `other` for
//! `unreachable`, `interrupt` for the deadline, `out_of_memory` for the cap); the instance
//! is re-instantiated for the next call (the `restarts` metric); and the failure policy is
//! applied — `onError: skip` drops the event (never delivered again), `onError: retry`
//! delivers it again, with the newest state of the object, until it succeeds. Finally a
//! plugin that fails `quarantineAfter` times in a row is quarantined: flagged in its
//! metrics and status, its later events dropped without calling it, its neighbour
//! unaffected. A plugin that reads through an `event-object` handle it was not lent (a forged
//! handle index) traps like any other failure, having read nothing.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test hostile`.

use std::sync::Arc;

use tempfile::TempDir;
use tracing::Level;
use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::{Record, logs};
use wink_tests::recorder::Seen;
use wink_tests::wait::{TIMEOUT, eventually_async, settle, wait_for};

const TRAP: (&str, &str) = ("wink.test/trap", "true");

/// A manifest tail: watch Pods, with these limits and failure policy.
fn policy(on_error: &str, quarantine_after: u32, memory: &str, call_timeout: &str) -> String {
    format!(
        "resources:\n  - apiVersion: v1\n    kind: Pod\nlimits:\n  memory: {memory}\n  callTimeout: {call_timeout}\n\
         failurePolicy:\n  onError: {on_error}\n  quarantineAfter: {quarantine_after}\n"
    )
}

/// A host with one hostile plugin and an event-recorder neighbour.
struct Scenario {
    cluster: Cluster,
    host: TestHost,
    hostile: &'static str,
    neighbour: String,
    _plugins: TempDir,
}

impl Scenario {
    async fn start(cluster: Cluster, built: &str, hostile: &'static str, manifest_tail: &str) -> Self {
        let plugins = tempfile::tempdir().unwrap();
        let neighbour = format!("{hostile}-neighbour");
        install_plugin(built, plugins.path(), hostile, Some(manifest_tail));
        install_plugin(
            "event-recorder",
            plugins.path(),
            &neighbour,
            Some("resources:\n  - {apiVersion: v1, kind: Pod}"),
        );
        let host = TestHost::start(cluster.path(), plugins.path()).await;
        Self { cluster, host, hostile, neighbour, _plugins: plugins }
    }

    fn dump(&self) -> String {
        format!("{}\n{}", logs().dump(self.hostile), logs().dump(&self.neighbour))
    }

    /// Waits until the neighbour has been told `event`.
    async fn neighbour_sees(&self, what: &str, event: impl Fn(&Seen) -> bool) {
        let seen = || logs().recorded(&self.neighbour).iter().any(|l| event(&l.seen));
        wait_for(&format!("the neighbour to see {what}"), seen, || self.dump()).await;
    }

    /// Waits until the neighbour has the initial add of every key.
    async fn neighbour_has_initial_adds(&self, keys: &[String]) {
        for key in keys {
            let rv = self.host.pod_rv(key).expect("in the cache");
            self.neighbour_sees(&format!("the add of {key}"), |s| {
                *s == Seen::Add { key: key.clone(), rv: rv.clone(), initial: true }
            })
            .await;
        }
    }

    /// Edits a pod and waits for the neighbour to be told.
    async fn edit_and_wait(&self, key: &str, labels: &[(&str, &str)]) {
        let (ns, name) = key.split_once('/').unwrap();
        let old = self.host.pod_rv(key);
        self.cluster.put_pod(ns, name, labels);
        self.neighbour_sees(&format!("the edit of {key}"), |s| {
            matches!(s, Seen::Update { key: k, old_rv, new_rv } if k == key && Some(old_rv) == old.as_ref() && old_rv != new_rv)
        })
        .await;
    }

    /// Waits for a condition on the hostile plugin's metrics and status.
    async fn wait_hostile(&self, what: &str, cond: impl Fn(&wink::plugin::PluginMetrics) -> bool) {
        let metrics = self.host.metrics(self.hostile);
        if !wink_tests::wait::eventually(TIMEOUT, || cond(&metrics)).await {
            panic!("timed out waiting for {what}: {}\n{}", metrics.summary(), self.dump());
        }
    }

    /// Waits until the hostile plugin's queue is empty.
    async fn wait_drained(&self) {
        let drained =
            eventually_async(TIMEOUT, || async { self.host.status(self.hostile).await.is_some_and(|s| s.queued == 0) })
                .await;
        assert!(drained, "the hostile plugin's queue never drained\n{}", self.dump());
    }

    /// Error records in which the host reported a failure of the hostile plugin.
    fn failures_reported(&self, trap: &str) -> Vec<Arc<Record>> {
        logs()
            .host_records(self.hostile)
            .into_iter()
            .filter(|r| {
                r.level == Level::ERROR && r.message.starts_with("plugin failed") && r.field("trap") == Some(trap)
            })
            .collect()
    }

    /// How many lines the hostile plugin logged that start with `prefix`.
    fn hostile_lines(&self, prefix: &str) -> usize {
        logs().guest_lines(self.hostile).iter().filter(|l| l.starts_with(prefix)).count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_restarts_the_instance_and_skip_drops_the_event() {
    let cluster = Cluster::new();
    let keys = vec![
        cluster.put_pod("shop", "ok-1", &[]),
        cluster.put_pod("shop", "bad-1", &[TRAP]),
        cluster.put_pod("shop", "ok-2", &[]),
        cluster.put_pod("shop", "bad-2", &[TRAP]),
    ];
    let s = Scenario::start(cluster, "hostile/trap", "trap-skip", &policy("skip", 0, "16Mi", "1s")).await;
    s.neighbour_has_initial_adds(&keys).await;
    s.wait_hostile("two traps, two skipped events", |m| m.traps_of("other") == 2 && m.skipped_events() == 2).await;
    s.wait_drained().await;
    assert_eq!(s.failures_reported("other").len(), 2, "each trap is reported with the plugin's name\n{}", s.dump());

    // The next call runs on a fresh instance.
    s.edit_and_wait(&keys[0], &[("edited", "yes")]).await;
    s.wait_hostile("an instance restarted after each trap", |m| m.restarts() == 2).await;
    s.wait_drained().await;

    // Skipped events are never delivered again.
    settle().await;
    assert_eq!(s.hostile_lines("trap key=shop/bad-1"), 1, "{}", s.dump());
    assert_eq!(s.hostile_lines("trap key=shop/bad-2"), 1, "{}", s.dump());
    let m = s.host.metrics(s.hostile);
    assert_eq!((m.traps(), m.skipped_events(), m.is_quarantined()), (2, 2, false), "{}", m.summary());
    s.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_the_call_was_not_lent_traps_and_reads_nothing() {
    let cluster = Cluster::new();
    let keys = vec![
        cluster.put_pod("shop", "ok-1", &[]),
        cluster.put_pod("shop", "forger", &[("wink.test/forge", "true")]),
        cluster.put_pod("shop", "ok-2", &[]),
    ];
    let s = Scenario::start(cluster, "hostile/trap", "trap-forge", &policy("skip", 0, "16Mi", "1s")).await;
    s.neighbour_has_initial_adds(&keys).await;
    s.wait_hostile("the forged handle traps, the event is skipped", |m| m.traps() == 1 && m.skipped_events() == 1)
        .await;
    s.wait_drained().await;
    assert_eq!(s.hostile_lines("forge key=shop/forger"), 1, "{}", s.dump());
    assert_eq!(s.hostile_lines("forged read"), 0, "the forged handle read nothing\n{}", s.dump());

    // The plugin goes on, on a fresh instance, with handles it was lent.
    s.edit_and_wait(&keys[0], &[("edited", "yes")]).await;
    s.wait_hostile("an instance restarted after the trap", |m| m.restarts() == 1).await;
    let m = s.host.metrics(s.hostile);
    assert_eq!((m.traps(), m.is_quarantined()), (1, false), "{}", m.summary());
    s.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_with_retry_redelivers_the_newest_state_until_it_succeeds() {
    let cluster = Cluster::new();
    let bad = cluster.put_pod("shop", "bad", &[TRAP]);
    let ok = cluster.put_pod("shop", "ok", &[]);
    let s = Scenario::start(cluster, "hostile/trap", "trap-retry", &policy("retry", 0, "16Mi", "1s")).await;
    s.neighbour_has_initial_adds(&[bad.clone(), ok.clone()]).await;
    let retried = || s.hostile_lines("trap key=shop/bad") >= 2;
    wait_for("the trapping event to be delivered again", retried, || s.dump()).await;
    assert!(s.host.metrics(s.hostile).restarts() >= 1);
    // While the trap plugin keeps failing, its neighbour keeps getting events.
    s.edit_and_wait(&ok, &[("edited", "yes")]).await;

    // Fix the object: the pending retry picks up the newest state, which does not trap.
    s.edit_and_wait(&bad, &[("fixed", "yes")]).await;
    s.wait_drained().await;
    let traps = s.host.metrics(s.hostile).traps();
    settle().await;
    let m = s.host.metrics(s.hostile);
    assert_eq!(m.traps(), traps, "retries stop once the event succeeds\n{}", s.dump());
    assert_eq!(s.hostile_lines("trap key=shop/bad"), usize::try_from(traps).unwrap(), "{}", s.dump());
    assert_eq!((m.skipped_events(), m.is_quarantined()), (0, false), "{}", m.summary());
    assert!(s.failures_reported("other").len() >= 2, "{}", s.dump());
    s.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_is_interrupted_at_the_call_deadline() {
    let cluster = Cluster::new();
    let keys = vec![cluster.put_pod("shop", "loop-1", &[]), cluster.put_pod("shop", "loop-2", &[])];
    let s = Scenario::start(cluster, "hostile/spin", "spin-deadline", &policy("skip", 0, "16Mi", "100ms")).await;
    s.neighbour_has_initial_adds(&keys).await;
    s.wait_hostile("two interrupted calls", |m| m.traps_of("interrupt") == 2 && m.skipped_events() == 2).await;
    assert_eq!(s.hostile_lines("spin key="), 2, "{}", s.dump());
    assert_eq!(s.failures_reported("interrupt").len(), 2, "{}", s.dump());

    // spin handles updates normally, on a fresh instance.
    s.edit_and_wait(&keys[0], &[("edited", "yes")]).await;
    s.wait_hostile("an instance restarted after each interrupt", |m| m.restarts() == 2).await;
    s.wait_drained().await;
    let m = s.host.metrics(s.hostile);
    assert_eq!((m.traps(), m.is_quarantined()), (2, false), "{}", m.summary());
    s.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bomb_is_stopped_at_its_cap() {
    let cluster = Cluster::new();
    let keys = vec![cluster.put_pod("shop", "bomb-1", &[]), cluster.put_pod("shop", "bomb-2", &[])];
    let s = Scenario::start(cluster, "hostile/memory-bomb", "memory-bomb-16mi", &policy("skip", 0, "16Mi", "5s")).await;
    s.neighbour_has_initial_adds(&keys).await;
    s.wait_hostile("two out-of-memory traps", |m| m.traps_of("out_of_memory") == 2 && m.skipped_events() == 2).await;
    assert_eq!(s.hostile_lines("memory-bomb key="), 2, "{}", s.dump());
    assert_eq!(s.failures_reported("out_of_memory").len(), 2, "{}", s.dump());

    s.edit_and_wait(&keys[0], &[("edited", "yes")]).await;
    s.wait_hostile("an instance restarted after each trap", |m| m.restarts() == 2).await;
    s.wait_drained().await;
    s.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_plugin_is_quarantined_after_the_configured_count() {
    let cluster = Cluster::new();
    let keys: Vec<String> = (1..=5).map(|i| cluster.put_pod("shop", &format!("crash-{i}"), &[TRAP])).collect();
    let s = Scenario::start(cluster, "hostile/trap", "trap-quarantine", &policy("skip", 3, "16Mi", "1s")).await;
    s.neighbour_has_initial_adds(&keys).await;
    s.wait_hostile("quarantine", |m| m.is_quarantined()).await;
    s.wait_drained().await;
    // An empty queue can still have its last batch in flight: wait for its two events too.
    s.wait_hostile("the events after the quarantine dropped", |m| m.dropped_events() >= 3).await;
    let status = s.host.status(s.hostile).await.unwrap();
    assert!(status.quarantined, "{status:?}");
    let reported = logs()
        .host_records(s.hostile)
        .iter()
        .any(|r| r.level == Level::ERROR && r.message.starts_with("plugin quarantined after 3 consecutive failures"));
    assert!(reported, "the quarantine is reported with the plugin's name\n{}", s.dump());

    // Exactly three calls trapped; the other two events were dropped without a call.
    let m = s.host.metrics(s.hostile);
    assert_eq!(m.traps(), 3, "{}", m.summary());
    assert_eq!(s.hostile_lines("trap key="), 3, "{}", s.dump());
    assert_eq!(m.dropped_events(), 3, "the third failed event and the two after it: {}", m.summary());

    // Later events are dropped too; the neighbour gets them.
    let later = s.cluster.put_pod("shop", "crash-6", &[TRAP]);
    s.neighbour_sees("the later pod", |e| e.key() == later).await;
    s.wait_hostile("the later event dropped", |m| m.dropped_events() == 4).await;
    settle().await;
    assert_eq!(s.hostile_lines("trap key="), 3, "{}", s.dump());
    assert_eq!(s.host.metrics(s.hostile).traps(), 3);
    s.host.stop().await;
}

//! Deploying, replacing and removing plugins while the host runs, through the plugins folder
//! the registry watches (the real file watcher, real components).
//!
//! Specifies that:
//! - a plugin added to the folder receives the *current* objects as initial adds, then live
//!   events;
//! - a replaced plugin (here its manifest's `config.tag` changes, so the two versions log
//!   differently) is a new registration: under a stream of edits, the new version first
//!   receives every current object once as an initial-list add (so it can rebuild its
//!   state), then live events; each version's events per key form one unbroken chain of
//!   resourceVersions — none lost, none delivered twice — ending, for the new version, at the
//!   cache's;
//! - a replacement that fails to load is reported and leaves the old version running;
//! - a removed plugin receives nothing more, while its neighbour carries on.
//!
//! Listeners coalesce a key's pending updates (update+update → update(first old, last new),
//! see DESIGN.md), so a plugin may skip intermediate resourceVersions of a key it is behind
//! on; the chain check allows exactly that and nothing else.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test hot_reload`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::recorder::{RecorderLine, Seen, by_key, wait_seen};
use wink_tests::wait::{TIMEOUT, eventually_async, settle, wait_for};

const POD: &str = "resources:\n  - apiVersion: v1\n    kind: Pod\n";

fn tagged(tag: &str) -> String {
    format!("{POD}config: {{tag: {tag}}}\n")
}

fn pods(cluster: &Cluster, prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| cluster.put_pod("shop", &format!("{prefix}-{i}"), &[("app", prefix)])).collect()
}

/// Edits a pod (a new label value) and returns its new resourceVersion once cached.
async fn edit(host: &TestHost, cluster: &Cluster, key: &str, generation: usize) -> String {
    let (ns, name) = key.split_once('/').unwrap();
    let before = host.pod_rv(key);
    cluster.put_pod(ns, name, &[("app", "edited"), ("generation", &generation.to_string())]);
    wait_for(&format!("the edit of {key} to reach the cache"), || host.pod_rv(key) != before, String::new).await;
    host.pod_rv(key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_added_while_running_gets_the_current_objects_then_live_events() {
    const NEIGHBOUR: &str = "late-neighbour";
    const LATE: &str = "late-comer";
    let cluster = Cluster::new();
    let keys = pods(&cluster, "late", 3);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), NEIGHBOUR, Some(POD));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;

    // The cluster moves on before the plugin arrives: it must get the current state only.
    let first_rv = host.pod_rv(&keys[0]).unwrap();
    let edited_rv = edit(&host, &cluster, &keys[0], 1).await;
    wait_seen(NEIGHBOUR, &Seen::Update { key: keys[0].clone(), old_rv: first_rv, new_rv: edited_rv.clone() }).await;

    install_plugin("event-recorder", plugins.path(), LATE, Some(POD));
    let current: Vec<String> = keys.iter().map(|k| host.pod_rv(k).unwrap()).collect();
    for (key, rv) in keys.iter().zip(&current) {
        wait_seen(LATE, &Seen::Add { key: key.clone(), rv: rv.clone(), initial: true }).await;
    }
    assert_eq!(current[0], edited_rv);
    let synced = eventually_async(TIMEOUT, || async { host.status(LATE).await.is_some_and(|s| s.synced) }).await;
    assert!(synced, "the late plugin reports synced once it has its initial objects");

    // Then live events.
    let old = current[1].clone();
    let new = edit(&host, &cluster, &keys[1], 2).await;
    let update = Seen::Update { key: keys[1].clone(), old_rv: old, new_rv: new };
    wait_seen(LATE, &update).await;
    wait_seen(NEIGHBOUR, &update).await;

    settle().await;
    let mut expected: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    for (key, rv) in keys.iter().zip(&current) {
        expected.insert(key.clone(), vec![Seen::Add { key: key.clone(), rv: rv.clone(), initial: true }]);
    }
    expected.get_mut(&keys[1]).unwrap().push(update);
    assert_eq!(by_key(&logs().recorded(LATE)), expected, "{}", logs().dump(LATE));
    host.stop().await;
}

/// Checks one version's events of `key`: an add, then updates each starting where the previous
/// ended with a newer version; returns the last resourceVersion.
fn chain(key: &str, events: &[&RecorderLine], dump: impl Fn() -> String) -> String {
    let Seen::Add { rv: mut at, .. } = events[0].seen.clone() else {
        panic!("{key}: first event is not an add\n{}", dump());
    };
    for line in &events[1..] {
        match &line.seen {
            Seen::Update { old_rv, new_rv, .. } => {
                assert_eq!(old_rv, &at, "{key}: an update was lost or repeated\n{}", dump());
                assert!(
                    new_rv.parse::<u64>().unwrap() > at.parse::<u64>().unwrap(),
                    "{key}: {new_rv} delivered again\n{}",
                    dump()
                );
                at = new_rv.clone();
            }
            other => panic!("{key}: unexpected {other:?}\n{}", dump()),
        }
    }
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_plugin_gets_the_current_objects_as_initial_adds_then_live_events() {
    const SWAP: &str = "swap-recorder";
    const PODS: usize = 6;
    let cluster = Cluster::new();
    let keys = pods(&cluster, "swap", PODS);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), SWAP, Some(&tagged("v1")));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;

    // A steady stream of edits; the new version is dropped in after a few, and the stream
    // goes on until the new version has handled a good number of them.
    let v2_updates = || {
        logs()
            .recorded(SWAP)
            .iter()
            .filter(|l| l.tag.as_deref() == Some("v2") && matches!(l.seen, Seen::Update { .. }))
            .count()
    };
    let started = Instant::now();
    let mut edits = 0;
    while edits < 10 || v2_updates() < 10 {
        assert!(
            started.elapsed() < TIMEOUT,
            "the new version never took over after {edits} edits\n{}",
            logs().dump(SWAP)
        );
        let key = &keys[edits % PODS];
        let (ns, name) = key.split_once('/').unwrap();
        cluster.put_pod(ns, name, &[("app", "swap"), ("generation", &edits.to_string())]);
        edits += 1;
        if edits == 10 {
            install_plugin("event-recorder", plugins.path(), SWAP, Some(&tagged("v2")));
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }

    // Quiet: every key's last version delivered to v2 is the cache's.
    let last_v2_rv = |key: &str| {
        logs().recorded(SWAP).iter().rev().find(|l| l.tag.as_deref() == Some("v2") && l.seen.key() == key).map(|l| {
            match &l.seen {
                Seen::Add { rv, .. } => rv.clone(),
                Seen::Update { new_rv, .. } => new_rv.clone(),
                Seen::Delete { rv, .. } => rv.clone(),
            }
        })
    };
    wait_for(
        "the new version to catch up with the cluster",
        || keys.iter().all(|k| last_v2_rv(k) == host.pod_rv(k)),
        || logs().dump(SWAP),
    )
    .await;
    settle().await;

    let lines = logs().recorded(SWAP);
    let dump = || logs().dump(SWAP);
    let version =
        |tag: &str| -> Vec<&RecorderLine> { lines.iter().filter(|l| l.tag.as_deref() == Some(tag)).collect() };
    let (v1, v2) = (version("v1"), version("v2"));
    assert_eq!(v1.len() + v2.len(), lines.len(), "{}", dump());
    assert!(
        v1.iter().any(|l| matches!(l.seen, Seen::Update { .. })),
        "the swap happened during the stream, not before it\n{}",
        dump()
    );
    for key in &keys {
        // v1: the initial list, then live updates, until it was replaced.
        let old: Vec<&RecorderLine> = v1.iter().copied().filter(|l| l.seen.key() == key).collect();
        assert!(matches!(old[0].seen, Seen::Add { initial: true, .. }), "{key}\n{}", dump());
        chain(key, &old, dump);
        // v2: exactly one add per key, with initial-list = true (the replay of the cache),
        // then live updates ending at the cache's version.
        let new: Vec<&RecorderLine> = v2.iter().copied().filter(|l| l.seen.key() == key).collect();
        let adds: Vec<&Seen> = new.iter().map(|l| &l.seen).filter(|s| matches!(s, Seen::Add { .. })).collect();
        assert!(
            matches!(adds.as_slice(), [Seen::Add { initial: true, .. }]),
            "{key}: the new version gets the object once, as an initial-list add\n{}",
            dump()
        );
        assert_eq!(
            Some(chain(key, &new, dump)),
            host.pod_rv(key),
            "{key}: the new version ends at the cache's version"
        );
    }
    let replaced = logs().host_records(SWAP).iter().filter(|r| r.message == "plugin replaced").count();
    assert_eq!(replaced, 1, "{}", dump());
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_that_fails_to_load_leaves_the_old_version_running() {
    const KEEP: &str = "broken-upgrade";
    let cluster = Cluster::new();
    let keys = pods(&cluster, "broken", 2);
    let plugins = tempfile::tempdir().unwrap();
    let dir = install_plugin("event-recorder", plugins.path(), KEEP, Some(&tagged("v1")));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;

    install_plugin("event-recorder", plugins.path(), KEEP, Some(&format!("{}colour: blue\n", tagged("v2"))));
    let reported = || {
        logs().records().iter().any(|r| {
            r.message == "plugin not deployed"
                && r.field("dir").is_some_and(|d| d == dir.display().to_string())
                && r.field("error").is_some_and(|e| e.contains("colour"))
        })
    };
    wait_for("the broken manifest to be reported, naming the field", reported, || logs().dump(KEEP)).await;

    let old = host.pod_rv(&keys[0]).unwrap();
    let new = edit(&host, &cluster, &keys[0], 1).await;
    wait_seen(KEEP, &Seen::Update { key: keys[0].clone(), old_rv: old, new_rv: new }).await;
    assert!(logs().recorded(KEEP).iter().all(|l| l.tag.as_deref() == Some("v1")), "{}", logs().dump(KEEP));
    assert!(host.status(KEEP).await.is_some(), "still deployed");
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_plugin_gets_nothing_more() {
    const KEEP: &str = "removal-neighbour";
    const GONE: &str = "removal-target";
    let cluster = Cluster::new();
    let keys = pods(&cluster, "removal", 2);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), KEEP, Some(POD));
    let gone_dir = install_plugin("event-recorder", plugins.path(), GONE, Some(POD));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;
    for key in &keys {
        let rv = host.pod_rv(key).unwrap();
        wait_seen(GONE, &Seen::Add { key: key.clone(), rv, initial: true }).await;
    }

    std::fs::remove_dir_all(&gone_dir).unwrap();
    let removed = || logs().host_records(GONE).iter().any(|r| r.message == "plugin removed");
    wait_for("the plugin to be removed", removed, || logs().dump(GONE)).await;
    assert!(host.status(GONE).await.is_none());
    let before = logs().guest_lines(GONE).len();

    let old = host.pod_rv(&keys[0]).unwrap();
    let new = edit(&host, &cluster, &keys[0], 1).await;
    let added = cluster.put_pod("shop", "removal-new", &[]);
    wait_seen(KEEP, &Seen::Update { key: keys[0].clone(), old_rv: old, new_rv: new }).await;
    wait_for(
        "the neighbour to see the new pod",
        || logs().recorded(KEEP).iter().any(|l| l.seen.key() == added),
        || logs().dump(KEEP),
    )
    .await;
    settle().await;
    assert_eq!(logs().guest_lines(GONE).len(), before, "a removed plugin was called\n{}", logs().dump(GONE));
    host.stop().await;
}

//! Scale-out across processes: `wink run --shard-group` replicas on the local API server
//! (Leases with optimistic concurrency) share 30 recording plugins and one shardable plugin.
//!
//! - Three replicas: every plugin runs on exactly one; the shardable plugin runs on all three
//!   and sees every object exactly once in total; every plugin's view converges to the
//!   server's state.
//! - SIGKILL one: its plugins move to the others within a Lease duration plus a renew period
//!   (plus the test's polling), and their views converge again, no object missing.
//! - A fourth replica (joining the two left): about a third of the plugins move to it, none
//!   between the others.
//! - SIGTERM one: its plugins move once it has drained, within a renew period.
//! - A member that cannot renew its Lease (every write refused) stops all its plugins before
//!   its Lease, as last renewed, expires (fencing); once writes go through again it renews,
//!   runs them again, and they see the state the cluster reached meanwhile.
//!
//! The figures (handover times, plugins moved) are printed: `cargo test --test scale_out --
//! --nocapture`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use wink_tests::apiserver::{ApiServer, Verb};
use wink_tests::shard_group::{
    Group, LEASE, PLUGINS, RENEW, Replica, SLACK, converged, install_plugins, last_stop, ok_if, owners, plugin_name,
    running, settled, wait,
};

fn pod(ns: &str, name: &str, generation: u32) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": name,
           "labels": {"generation": generation.to_string()}}, "spec": {"containers": []}})
}

/// Pods on `server`, and a folder of the recording plugins and the sharded one (with a
/// cache folder beside): (the folder's guard, the group's replicas' settings).
fn fixture(server: &ApiServer) -> (tempfile::TempDir, Group) {
    for (i, ns) in ["a", "b", "c", "d"].iter().cycle().take(24).enumerate() {
        server.apply(pod(ns, &format!("pod-{i}"), 1)).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    install_plugins(&plugins, None);
    let group = Group {
        plugins,
        cache: work.path().join("cache"),
        kubeconfig: PathBuf::from(server.kubeconfig()),
        name: "test".into(),
        namespace: "wink".into(),
    };
    (work, group)
}

/// Whether every plugin's view is the server's Pods.
fn converged_on(server: &ApiServer, replicas: &[Replica]) -> Result<(), String> {
    converged(&server.versions("v1", "Pod"), replicas)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_plugins_through_leases_and_hand_them_over_without_loss() {
    let server = ApiServer::start().await.unwrap();
    let (_work, group) = fixture(&server);

    // Three replicas.
    let mut replicas: Vec<Replica> = ["a", "b", "c"].iter().map(|n| group.spawn(n)).collect();
    wait("three replicas to share the plugins", Duration::from_secs(60), || settled(&replicas)).await;
    wait("every view to converge", Duration::from_secs(30), || converged_on(&server, &replicas)).await;
    assert!(server.objects("coordination.k8s.io/v1", "Lease").len() >= 3, "one Lease per member");

    // Changes while stable: seen once, by the plugins that run.
    server.apply(pod("a", "pod-0", 2)).unwrap();
    server.delete("v1", "Pod", "b/pod-1").unwrap();
    server.apply(pod("e", "late", 1)).unwrap();
    wait("the changes to be seen", Duration::from_secs(30), || converged_on(&server, &replicas)).await;

    // SIGKILL b: its plugins move to a and c.
    let before = owners(&replicas);
    replicas.remove(1).child.kill();
    let bound = LEASE + RENEW + SLACK;
    let crash_handover = wait("b's plugins to move after SIGKILL", bound, || settled(&replicas)).await;
    server.apply(pod("c", "after-crash", 1)).unwrap();
    wait("views to converge after the crash", Duration::from_secs(30), || converged_on(&server, &replicas)).await;
    let moved_by_crash = before.values().filter(|o| o.contains(&"b".to_owned())).count() - 1;

    // A fourth replica (d, with a and c): about a quarter of the plugins move to it.
    let before = owners(&replicas);
    replicas.push(group.spawn("d"));
    wait("d to take its share", Duration::from_secs(60), || settled(&replicas)).await;
    let after = owners(&replicas);
    let moved: Vec<String> = (0..PLUGINS).map(plugin_name).filter(|p| before.get(p) != after.get(p)).collect();
    assert!(moved.iter().all(|p| after[p] == ["d"]), "plugins move only to the newcomer: {moved:?}");
    // Two members become three: about a third of the plugins move.
    assert!((4..=16).contains(&moved.len()), "about a third of {PLUGINS} moved: {}", moved.len());
    wait("views to converge with d", Duration::from_secs(30), || converged_on(&server, &replicas)).await;

    // SIGTERM a: it drains and releases its Lease; its plugins move within a renew period.
    replicas.remove(0).leave().await;
    let left = Instant::now();
    let orderly_handover = wait("a's plugins to move after SIGTERM", RENEW + SLACK, || settled(&replicas)).await;
    server.apply(pod("d", "after-leave", 1)).unwrap();
    wait("views to converge after a left", Duration::from_secs(30), || converged_on(&server, &replicas)).await;
    println!(
        "scale-out: SIGKILL handover {crash_handover:?} (bound {:?}) moving {moved_by_crash} plugins; a fourth member took {} of {PLUGINS}; SIGTERM handover {:?} after the drain",
        LEASE + RENEW,
        moved.len(),
        left.elapsed().min(orderly_handover),
    );
    for replica in replicas {
        replica.leave().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_cannot_renew_its_lease_fences_itself_before_it_expires_and_comes_back() {
    let server = ApiServer::start().await.unwrap();
    let (_work, group) = fixture(&server);
    let solo = group.spawn("solo");
    let replicas = std::slice::from_ref(&solo);
    wait("the member to run every plugin", Duration::from_secs(60), || settled(replicas)).await;
    wait("every view to converge", Duration::from_secs(30), || converged_on(&server, replicas)).await;

    // Every write is refused from now on: the member's Lease renewals (its plugins only read).
    server.fail_next(&[Verb::Write], 1_000_000, 503);
    wait("the member to stop its plugins", LEASE + SLACK, || {
        ok_if(running(&solo).is_empty(), || format!("still running {:?}", running(&solo)))
    })
    .await;
    let lease = server.get("coordination.k8s.io/v1", "Lease", "wink/wink-test-solo").expect("the member's Lease");
    let renewed = lease["spec"]["renewTime"].as_str().expect("a renewTime");
    let expires = humantime::parse_rfc3339(renewed).expect("an RFC 3339 renewTime") + LEASE;
    let stopped = last_stop(&solo).expect("plugins stopped");
    // The member counts itself out two renew periods before its Lease can expire; its look
    // that finds so comes within a renew period and acts within half of one (its renewal's
    // timeout: listing still works): at least half a renew period is left.
    assert!(
        stopped + RENEW / 2 <= expires,
        "the last plugin stopped at {} but the Lease renewed at {renewed} expired at {}",
        humantime::format_rfc3339_micros(stopped),
        humantime::format_rfc3339_micros(expires)
    );

    // The cluster changes meanwhile; writes go through again: the member renews, runs its
    // plugins again, and they see the current state.
    server.apply(pod("a", "pod-0", 2)).unwrap();
    server.delete("v1", "Pod", "b/pod-1").unwrap();
    server.clear_failures();
    let replicas = std::slice::from_ref(&solo);
    wait("the member to run its plugins again", Duration::from_secs(30), || settled(replicas)).await;
    wait("every view to converge again", Duration::from_secs(30), || converged_on(&server, replicas)).await;
    solo.leave().await;
}

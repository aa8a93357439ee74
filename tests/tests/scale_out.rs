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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use wink::shard::Assignment;
use wink_tests::apiserver::{ApiServer, Verb};
use wink_tests::binary::wink_binary;
use wink_tests::process::Running;
use wink_tests::recorder::{RecorderLine, Seen};
use wink_tests::{install_plugin, write_atomic};

const PLUGINS: usize = 30;
const SHARDED: &str = "sharded";
const LEASE: Duration = Duration::from_secs(4);
const RENEW: Duration = Duration::from_secs(1);
/// The test's own slack on top of the bounds (polling, process start, loaded machine).
const SLACK: Duration = Duration::from_secs(4);

fn plugin_name(i: usize) -> String {
    format!("rec-{i:02}")
}

fn pod(ns: &str, name: &str, generation: u32) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": name,
           "labels": {"generation": generation.to_string()}}, "spec": {"containers": []}})
}

struct Replica {
    name: String,
    child: Running,
}

fn spawn(server: &ApiServer, plugins: &Path, cache: &Path, name: &str) -> Replica {
    let child = Running::spawn(
        Command::new(wink_binary())
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .args(["run", "--plugins"])
            .arg(plugins)
            .arg("--cache-dir")
            .arg(cache)
            .arg("--source")
            .arg(format!("kube:{}", server.kubeconfig().display()))
            .args(["--shard-group", "test", "--shard-namespace", "wink", "--shard-identity", name])
            .args(["--lease-duration", "4s", "--lease-renew", "1s", "--metrics-interval", "0"]),
    );
    Replica { name: name.to_owned(), child }
}

/// The value of `plugin=` in a registry log line.
fn plugin_field(line: &str) -> Option<&str> {
    line.split_whitespace().find_map(|w| w.strip_prefix("plugin="))
}

/// The plugins a replica runs now, from its log: deployed or replaced, and not removed since.
fn running(replica: &Replica) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for line in replica.child.stderr.snapshot() {
        let Some(plugin) = plugin_field(&line) else { continue };
        if line.contains("plugin deployed") || line.contains("plugin replaced") {
            set.insert(plugin.to_owned());
        } else if line.contains("plugin removed") {
            set.remove(plugin);
        }
    }
    set
}

/// What `plugin` was told on `replica` since it was last deployed there (key → rv).
fn view(replica: &Replica, plugin: &str) -> BTreeMap<String, String> {
    let lines = replica.child.stderr.snapshot();
    let marker = format!("plugin={plugin}");
    let start = lines
        .iter()
        .rposition(|l| {
            (l.contains("plugin deployed") || l.contains("plugin replaced"))
                && l.split_whitespace().any(|w| w == marker)
        })
        .map_or(lines.len(), |i| i + 1);
    let guest = format!("plugin=\"{plugin}\"");
    let mut view = BTreeMap::new();
    for line in &lines[start..] {
        if line.contains(&guest)
            && let Some(parsed) = RecorderLine::parse(line)
        {
            Seen::apply_to(parsed.seen, &mut view);
        }
    }
    view
}

fn truth(server: &ApiServer) -> BTreeMap<String, String> {
    server.versions("v1", "Pod")
}

/// Who runs each recording plugin (every replica's claims).
fn owners(replicas: &[Replica]) -> BTreeMap<String, Vec<String>> {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for replica in replicas {
        for plugin in running(replica) {
            owners.entry(plugin).or_default().push(replica.name.clone());
        }
    }
    owners
}

/// Whether every recording plugin runs on exactly one replica — the one rendezvous hashing
/// over the replicas' names picks — and the sharded one on all.
fn settled(replicas: &[Replica]) -> bool {
    let names: Vec<String> = replicas.iter().map(|r| r.name.clone()).collect();
    let expected = Assignment::new(&names[0], names.clone());
    let owners = owners(replicas);
    (0..PLUGINS).all(|i| {
        let plugin = plugin_name(i);
        owners.get(&plugin).is_some_and(|o| o.len() == 1 && expected.owner(&plugin) == Some(o[0].as_str()))
    }) && owners.get(SHARDED).is_some_and(|o| o.len() == replicas.len())
}

/// Whether every plugin's view (the sharded one's, summed) is the server's state.
fn converged(server: &ApiServer, replicas: &[Replica]) -> Result<(), String> {
    let truth = truth(server);
    let owners = owners(replicas);
    for i in 0..PLUGINS {
        let plugin = plugin_name(i);
        let Some([owner]) = owners.get(&plugin).map(Vec::as_slice) else {
            return Err(format!("{plugin} runs on {:?}", owners.get(&plugin)));
        };
        let replica = replicas.iter().find(|r| r.name == *owner).unwrap();
        let seen = view(replica, &plugin);
        if seen != truth {
            return Err(format!("{plugin} on {owner}: {seen:?} != {truth:?}"));
        }
    }
    let mut total = BTreeMap::new();
    for replica in replicas {
        for (key, rv) in view(replica, SHARDED) {
            if total.insert(key.clone(), rv).is_some() {
                return Err(format!("{key} delivered by two members of the sharded plugin"));
            }
        }
    }
    if total != truth {
        return Err(format!("the sharded plugin's slices add up to {total:?}, not {truth:?}"));
    }
    Ok(())
}

async fn wait(what: &str, limit: Duration, mut done: impl FnMut() -> Result<(), String>) -> Duration {
    let started = Instant::now();
    loop {
        match done() {
            Ok(()) => return started.elapsed(),
            Err(why) => assert!(started.elapsed() < limit, "{what} within {limit:?}: {why}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ok_if(condition: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(why()) }
}

/// Pods on `server`, and a folder of the recording plugins and the sharded one (with a
/// cache folder beside): (the folder's guard, plugins, cache).
fn fixture(server: &ApiServer) -> (tempfile::TempDir, PathBuf, PathBuf) {
    for (i, ns) in ["a", "b", "c", "d"].iter().cycle().take(24).enumerate() {
        server.apply(pod(ns, &format!("pod-{i}"), 1)).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    for i in 0..PLUGINS {
        install_plugin("event-recorder", &plugins, &plugin_name(i), None);
    }
    let sharded = install_plugin("event-recorder", &plugins, SHARDED, None);
    let manifest = std::fs::read_to_string(sharded.join("plugin.yaml")).unwrap();
    write_atomic(&sharded.join("plugin.yaml"), &format!("{manifest}shardBy: object\n"));
    let cache = work.path().join("cache");
    (work, plugins, cache)
}

/// When a log line was written (its leading RFC 3339 timestamp).
fn logged_at(line: &str) -> SystemTime {
    let stamp = line.split_whitespace().next().unwrap_or_default();
    humantime::parse_rfc3339(stamp).unwrap_or_else(|e| panic!("no timestamp in {line:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_plugins_through_leases_and_hand_them_over_without_loss() {
    let server = ApiServer::start().await.unwrap();
    let (_work, plugins, cache) = fixture(&server);

    // Three replicas.
    let mut replicas: Vec<Replica> = ["a", "b", "c"].iter().map(|n| spawn(&server, &plugins, &cache, n)).collect();
    wait("three replicas to share the plugins", Duration::from_secs(60), || {
        ok_if(settled(&replicas), || format!("{:?}", owners(&replicas)))
    })
    .await;
    wait("every view to converge", Duration::from_secs(30), || converged(&server, &replicas)).await;
    assert!(server.objects("coordination.k8s.io/v1", "Lease").len() >= 3, "one Lease per member");

    // Changes while stable: seen once, by the plugins that run.
    server.apply(pod("a", "pod-0", 2)).unwrap();
    server.delete("v1", "Pod", "b/pod-1").unwrap();
    server.apply(pod("e", "late", 1)).unwrap();
    wait("the changes to be seen", Duration::from_secs(30), || converged(&server, &replicas)).await;

    // SIGKILL b: its plugins move to a and c.
    let before = owners(&replicas);
    let killed = replicas.remove(1);
    let mut killed_child = killed.child;
    killed_child.kill();
    let bound = LEASE + RENEW + SLACK;
    let crash_handover = wait("b's plugins to move after SIGKILL", bound, || {
        ok_if(settled(&replicas), || format!("{:?}", owners(&replicas)))
    })
    .await;
    server.apply(pod("c", "after-crash", 1)).unwrap();
    wait("views to converge after the crash", Duration::from_secs(30), || converged(&server, &replicas)).await;
    let moved_by_crash = before.values().filter(|o| o.contains(&"b".to_owned())).count() - 1;

    // A fourth replica (d, with a and c): about a quarter of the plugins move to it.
    let before = owners(&replicas);
    replicas.push(spawn(&server, &plugins, &cache, "d"));
    wait("d to take its share", Duration::from_secs(60), || {
        ok_if(settled(&replicas), || format!("{:?}", owners(&replicas)))
    })
    .await;
    let after = owners(&replicas);
    let moved: Vec<String> = (0..PLUGINS).map(plugin_name).filter(|p| before.get(p) != after.get(p)).collect();
    assert!(moved.iter().all(|p| after[p] == ["d"]), "plugins move only to the newcomer: {moved:?}");
    // Two members become three: about a third of the plugins move.
    assert!((4..=16).contains(&moved.len()), "about a third of {PLUGINS} moved: {}", moved.len());
    wait("views to converge with d", Duration::from_secs(30), || converged(&server, &replicas)).await;

    // SIGTERM a: it drains and releases its Lease; its plugins move within a renew period.
    let a = replicas.remove(0);
    let mut a_child = a.child;
    a_child.sigterm();
    let exit = a_child.wait_exit().await;
    assert!(exit.success(), "a exited with {exit}");
    let left = Instant::now();
    let orderly_handover = wait("a's plugins to move after SIGTERM", RENEW + SLACK, || {
        ok_if(settled(&replicas), || format!("{:?}", owners(&replicas)))
    })
    .await;
    server.apply(pod("d", "after-leave", 1)).unwrap();
    wait("views to converge after a left", Duration::from_secs(30), || converged(&server, &replicas)).await;
    println!(
        "scale-out: SIGKILL handover {crash_handover:?} (bound {:?}) moving {moved_by_crash} plugins; a fourth member took {} of {PLUGINS}; SIGTERM handover {:?} after the drain",
        LEASE + RENEW,
        moved.len(),
        left.elapsed().min(orderly_handover),
    );
    for replica in &mut replicas {
        replica.child.sigterm();
        let exit = replica.child.wait_exit().await;
        assert!(exit.success(), "{} exited with {exit}", replica.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_cannot_renew_its_lease_fences_itself_before_it_expires_and_comes_back() {
    let server = ApiServer::start().await.unwrap();
    let (_work, plugins, cache) = fixture(&server);
    let mut solo = spawn(&server, &plugins, &cache, "solo");
    let replicas = std::slice::from_ref(&solo);
    wait("the member to run every plugin", Duration::from_secs(60), || {
        ok_if(settled(replicas), || format!("{:?}", owners(replicas)))
    })
    .await;
    wait("every view to converge", Duration::from_secs(30), || converged(&server, replicas)).await;

    // Every write is refused from now on: the member's Lease renewals (its plugins only read).
    server.fail_next(&[Verb::Write], 1_000_000, 503);
    wait("the member to stop its plugins", LEASE + SLACK, || {
        ok_if(running(&solo).is_empty(), || format!("still running {:?}", running(&solo)))
    })
    .await;
    let lease = server.get("coordination.k8s.io/v1", "Lease", "wink/wink-test-solo").expect("the member's Lease");
    let renewed = lease["spec"]["renewTime"].as_str().expect("a renewTime");
    let expires = humantime::parse_rfc3339(renewed).expect("an RFC 3339 renewTime") + LEASE;
    let stopped =
        solo.child.stderr.snapshot().iter().filter(|l| l.contains("plugin removed")).map(|l| logged_at(l)).max();
    let stopped = stopped.expect("plugins stopped");
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
    wait("the member to run its plugins again", Duration::from_secs(30), || {
        ok_if(settled(replicas), || format!("{:?}", owners(replicas)))
    })
    .await;
    wait("every view to converge again", Duration::from_secs(30), || converged(&server, replicas)).await;
    solo.child.sigterm();
    let exit = solo.child.wait_exit().await;
    assert!(exit.success(), "solo exited with {exit}");
}

//! Tests of the registry's bookkeeping: rescans that read no unchanged file, failed deploys
//! retried with backoff, and informers that live only while a plugin needs them.

use std::time::{Duration, SystemTime};

use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::embedded::MemorySource;
use crate::informer::{Backoff, BackoffConfig, ListerWatcher, SourceError, SourceProvider};
use crate::plugin::manifest::MANIFEST_FILE;
use crate::plugin::test_guests::{Behaviour, Guest, engine};

fn pods_manifest(name: &str) -> String {
    format!("name: {name}\ncomponent: {name}.wasm\nresources:\n  - {{apiVersion: v1, kind: Pod}}\n")
}

/// Backdates a file, as if it had been written long ago.
fn age(path: &Path) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
}

/// Writes the plugin folder `root/name` (the files backdated).
fn write_plugin(root: &Path, name: &str, guest: Guest) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(MANIFEST_FILE), pods_manifest(name)).unwrap();
    std::fs::write(dir.join(format!("{name}.wasm")), guest.component()).unwrap();
    age(&dir.join(MANIFEST_FILE));
    age(&dir.join(format!("{name}.wasm")));
    dir
}

/// A Pod `shop/<name>`.
fn shop_pod(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop", "name": name}})
}

fn registry_over(pods: &MemorySource) -> PluginRegistry {
    registry_on(engine(), pods)
}

fn registry_on(engine: PluginEngine, pods: &MemorySource) -> PluginRegistry {
    let pods = pods.clone();
    let provider: Arc<dyn SourceProvider> =
        Arc::new(move |_: &ResourceKey| Ok::<_, SourceError>(Arc::new(pods.clone()) as Arc<dyn ListerWatcher>));
    PluginRegistry::new(engine, Arc::new(InformerFactory::new(provider)), MetricsRegistry::new(), GuestPool::new(2))
}

/// Polls `condition` (real time) until it holds; panics after 20 s.
async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_rescan_of_an_unchanged_folder_reads_no_plugin_file() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "quiet", Guest::default());
    let registry = registry_over(&MemorySource::default());
    assert!(registry.sync_dir(root.path()).await.unwrap().is_empty());
    let deployed = registry.scan_stats();
    assert_eq!((deployed.files_hashed, deployed.deploy_attempts), (2, 1));
    for _ in 0..10 {
        std::fs::read(dir.join(MANIFEST_FILE)).unwrap();
        std::fs::read(dir.join("quiet.wasm")).unwrap();
        assert!(registry.sync_dir(root.path()).await.unwrap().is_empty());
    }
    let after = registry.scan_stats();
    assert_eq!(after.scans, 11);
    assert_eq!((after.files_hashed, after.bytes_hashed), (deployed.files_hashed, deployed.bytes_hashed));
    assert_eq!(after.deploy_attempts, 1, "nothing redeployed");
    registry.factory().shutdown().await;
}

/// Regression: every rescan read the plugin files, the reads woke the folder watcher, which
/// rescanned — about 20 times a second on an idle host. (Which events wake the watcher is
/// pinned down by the `fswatch` tests; this one checks the registry end to end.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_plugin_files_does_not_wake_the_watching_registry() {
    let root = tempfile::tempdir().unwrap();
    let staging = tempfile::tempdir_in(root.path().parent().unwrap()).unwrap();
    let dir = write_plugin(root.path(), "quiet", Guest::default());
    let registry = Arc::new(registry_over(&MemorySource::default()));
    registry.sync_dir(root.path()).await.unwrap();
    let cancel = CancellationToken::new();
    registry.watch_dir(root.path(), cancel.clone()).unwrap();
    wait_until("the watch's catch-up rescan", || registry.scan_stats().scans == 2).await;
    let before = registry.scan_stats();
    for _ in 0..20 {
        std::fs::read(dir.join(MANIFEST_FILE)).unwrap();
        std::fs::read(dir.join("quiet.wasm")).unwrap();
        std::fs::read_dir(&dir).unwrap().for_each(drop);
    }
    // The sentinel: a second plugin, moved in whole (one change), so exactly one rescan is due.
    let sentinel = write_plugin(staging.path(), "sentinel", Guest::default());
    std::fs::rename(&sentinel, root.path().join("sentinel")).unwrap();
    wait_until("the sentinel plugin's deploy to begin", || registry.scan_stats().deploy_attempts == 2).await;
    // An attempt is counted as its read begins: its files are hashed after.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !registry.status().await.iter().any(|s| s.name == "sentinel") {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for the sentinel plugin to deploy");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let after = registry.scan_stats();
    assert_eq!(after.scans - before.scans, 1, "one rescan, for the sentinel");
    assert_eq!(after.files_hashed - before.files_hashed, 2, "only the sentinel's files were hashed");
    cancel.cancel();
    registry.factory().shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_deploy_is_retried_with_backoff_and_at_once_when_its_files_change() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "picky", Guest { init: Behaviour::Reject, ..Guest::default() });
    let registry = registry_over(&MemorySource::default())
        .with_start(PluginStart::OnDeploy)
        .with_deploy_retry(BackoffConfig { jitter: 0.0, ..DEPLOY_RETRY });
    let attempts = || registry.scan_stats().deploy_attempts;
    let failed = registry.sync_dir(root.path()).await.unwrap();
    assert!(matches!(failed.as_slice(), [RegistryError::Start { .. }]), "{failed:?}");
    assert_eq!(attempts(), 1);

    // Rescans before the retry is due leave it alone; the delays double.
    for delay in [1, 2, 4, 8] {
        let due = registry.next_retry().unwrap();
        assert_eq!(due - Instant::now(), Duration::from_secs(delay));
        let before = attempts();
        assert!(registry.sync_dir(root.path()).await.unwrap().is_empty(), "not retried yet");
        tokio::time::advance(due - Instant::now() - Duration::from_millis(1)).await;
        registry.sync_dir(root.path()).await.unwrap();
        assert_eq!(attempts(), before, "not due {delay} s - 1 ms after");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(registry.sync_dir(root.path()).await.unwrap().len(), 1, "retried and failed again");
        assert_eq!(attempts(), before + 1);
    }
    assert_eq!(registry.next_retry().unwrap() - Instant::now(), Duration::from_secs(16));

    // Changed files are retried at once, on a fresh schedule.
    std::fs::write(dir.join(MANIFEST_FILE), format!("{}config: {{edited: true}}\n", pods_manifest("picky"))).unwrap();
    assert_eq!(registry.sync_dir(root.path()).await.unwrap().len(), 1);
    assert_eq!(attempts(), 6);
    assert_eq!(registry.next_retry().unwrap() - Instant::now(), Duration::from_secs(1));

    // Fixed: deployed, and nothing left to retry.
    std::fs::write(dir.join("picky.wasm"), Guest::default().component()).unwrap();
    assert!(registry.sync_dir(root.path()).await.unwrap().is_empty());
    assert_eq!(attempts(), 7);
    assert_eq!(registry.status().await.len(), 1);
    assert_eq!(registry.next_retry(), None);
    registry.factory().shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn deploy_retries_double_up_to_five_minutes() {
    let mut backoff = Backoff::new(BackoffConfig { jitter: 0.0, ..DEPLOY_RETRY });
    let delays: Vec<u64> = (0..11).map(|_| backoff.next_delay().as_secs()).collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    let mut jittered = Backoff::with_seed(DEPLOY_RETRY, 3);
    for _ in 0..20 {
        tokio::time::advance(Duration::from_secs(300)).await;
        assert!(jittered.next_delay() < Duration::from_secs(330), "the cap stretched by up to 10 %");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_deploy_is_retried_by_the_watching_registry_when_due() {
    let root = tempfile::tempdir().unwrap();
    write_plugin(root.path(), "picky", Guest { init: Behaviour::Reject, ..Guest::default() });
    let registry = Arc::new(
        registry_over(&MemorySource::default())
            .with_start(PluginStart::OnDeploy)
            .with_deploy_retry(BackoffConfig { jitter: 0.0, ..DEPLOY_RETRY }),
    );
    registry.sync_dir(root.path()).await.unwrap();
    let cancel = CancellationToken::new();
    registry.watch_dir(root.path(), cancel.clone()).unwrap();
    let attempts = || registry.scan_stats().deploy_attempts;
    for expected in 2..=4 {
        let due = registry.next_retry().unwrap();
        tokio::time::advance(due - Instant::now()).await;
        // Yielding keeps the paused clock where it is while the retry runs on other threads.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !(attempts() == expected && registry.next_retry().is_some_and(|at| at > Instant::now())) {
            assert!(std::time::Instant::now() < deadline, "retry {expected} did not happen by itself");
            tokio::task::yield_now().await;
        }
    }
    cancel.cancel();
}

/// Regression: the informer of a resource kept listing and watching after the last plugin
/// watching it was removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_only_plugin_of_a_resource_stops_its_informer_and_a_new_one_lists_again() {
    let pods = MemorySource::default();
    for name in ["a", "b"] {
        pods.apply(shop_pod(name)).unwrap();
    }
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "watcher", Guest::default());
    let registry = registry_over(&pods);
    let key = ResourceKey::new("v1", "Pod");
    registry.deploy(&dir).await.unwrap();
    let metrics = registry.metrics().plugin("watcher");
    wait_until("init and two initial adds", || metrics.calls() == 3).await;
    wait_until("the watch", || pods.open_watches() == 1).await;
    assert_eq!(pods.list_requests().len(), 1);

    assert!(registry.remove("watcher").await);
    wait_until("the watch to end", || pods.open_watches() == 0).await;
    assert!(registry.factory().existing(&key).is_none(), "the informer and its cache are gone");

    registry.deploy(&dir).await.unwrap();
    let metrics = registry.metrics().plugin("watcher");
    wait_until("init and two initial adds again", || metrics.calls() == 3).await;
    assert_eq!(pods.list_requests().len(), 2, "a fresh list");
    wait_until("a new watch", || pods.open_watches() == 1).await;
    registry.factory().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_shared_by_two_plugins_outlives_the_first_removed() {
    let pods = MemorySource::default();
    let root = tempfile::tempdir().unwrap();
    let first = write_plugin(root.path(), "first", Guest::default());
    let second = write_plugin(root.path(), "second", Guest::default());
    let registry = registry_over(&pods);
    registry.deploy(&first).await.unwrap();
    registry.deploy(&second).await.unwrap();
    wait_until("one shared watch", || pods.open_watches() == 1).await;
    assert!(registry.remove("first").await);
    let informer = registry.factory().existing(&ResourceKey::new("v1", "Pod")).expect("still needed");
    assert!(!informer.is_stopped());
    assert_eq!(pods.list_requests().len(), 1);
    assert!(registry.remove("second").await);
    wait_until("the watch to end", || pods.open_watches() == 0).await;
    registry.factory().shutdown().await;
}

/// A replaced plugin is a new registration: the new version is told the current objects
/// (initial-list adds, as a handler added to a running informer is), so that it can rebuild
/// its state; then it gets the live events. The old version gets nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_plugin_receives_the_current_objects_then_live_events() {
    let pods = MemorySource::default();
    for name in ["a", "b"] {
        pods.apply(shop_pod(name)).unwrap();
    }
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "swapped", Guest::default());
    let registry = registry_over(&pods);
    registry.deploy(&dir).await.unwrap();
    let metrics = registry.metrics().plugin("swapped");
    wait_until("init and two initial adds", || metrics.calls() == 3).await;
    wait_until("the watch", || pods.open_watches() == 1).await;

    // A new component: the new version starts (init) and replays the two pods.
    std::fs::write(dir.join("swapped.wasm"), Guest { on_update: Behaviour::Log, ..Guest::default() }.component())
        .unwrap();
    registry.deploy(&dir).await.unwrap();
    wait_until("init and two replayed adds", || metrics.calls() == 6).await;
    // A listener counts an add as delivered once its call has returned (just after the call
    // is counted): wait for that, then check nothing more came.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !registry.status().await[0].synced {
        assert!(std::time::Instant::now() < deadline, "the new listeners never had their initial adds");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(metrics.calls(), 6, "init and the two replayed adds, nothing more");
    assert_eq!(pods.list_requests().len(), 1, "the informer was not restarted: the replay comes from its cache");

    // Then live events.
    pods.apply(shop_pod("c")).unwrap();
    wait_until("the live add", || metrics.calls() == 7).await;
    registry.factory().shutdown().await;
}

/// A replacement that cannot listen (a resource without a source) is refused before anything
/// changes: the old version keeps its listeners and receives nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_watching_a_resource_without_a_source_leaves_the_old_version_running() {
    let pods = MemorySource::default();
    pods.apply(shop_pod("a")).unwrap();
    let source = pods.clone();
    let provider: Arc<dyn SourceProvider> = Arc::new(move |key: &ResourceKey| match key.kind.as_str() {
        "Pod" => Ok(Arc::new(source.clone()) as Arc<dyn ListerWatcher>),
        _ => Err(SourceError::Decode(format!("no source for {key}").into())),
    });
    let registry = PluginRegistry::new(
        engine(),
        Arc::new(InformerFactory::new(provider)),
        MetricsRegistry::new(),
        GuestPool::new(2),
    );
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "keeper", Guest::default());
    registry.deploy(&dir).await.unwrap();
    let metrics = registry.metrics().plugin("keeper");
    wait_until("init and the initial add", || metrics.calls() == 2).await;

    let manifest = format!("{}  - {{apiVersion: v1, kind: Secret}}\n", pods_manifest("keeper"));
    std::fs::write(dir.join(MANIFEST_FILE), manifest).unwrap();
    let err = registry.deploy(&dir).await.unwrap_err();
    assert!(matches!(&err, RegistryError::Source { resource, .. } if resource == "v1/Secret"), "{err}");
    // The new version was started (its init counts as a call), then dropped.
    assert_eq!(registry.status().await.len(), 1, "still deployed");
    pods.apply(shop_pod("b")).unwrap();
    wait_until("the live add, to the old version's listener", || metrics.calls() == 4).await;
    assert_eq!(registry.factory().existing(&ResourceKey::new("v1", "Pod")).map(|i| i.is_stopped()), Some(false));
    registry.factory().shutdown().await;
}

/// A folder scan owns only the plugins deployed from that folder: a plugin deployed from
/// elsewhere (another folder, an OCI reference's pull folder) survives it.
#[tokio::test]
async fn a_folder_scan_leaves_plugins_deployed_from_elsewhere() {
    let (scanned, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let registry = registry_over(&MemorySource::default());
    let outside = write_plugin(elsewhere.path(), "outside", Guest::default());
    registry.deploy(&outside).await.unwrap();
    write_plugin(scanned.path(), "inside", Guest::default());
    assert!(registry.sync_dir(scanned.path()).await.unwrap().is_empty());
    assert_eq!(registry.status().await.len(), 2, "both deployed");
    std::fs::remove_dir_all(scanned.path().join("inside")).unwrap();
    registry.sync_dir(scanned.path()).await.unwrap();
    let names: Vec<_> = registry.status().await.into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["outside"], "the scan removed its own plugin only");
    registry.factory().shutdown().await;
}

/// Started on its first event, a plugin deploys and listens without an instance; the event
/// starts it (`init`, then the call). One whose `init` refuses is deployed all the same, and
/// its refusal comes with its first event, under the failure policy — where started as it
/// deploys, it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_started_on_its_first_event_holds_no_instance_until_then() {
    let pods = MemorySource::default();
    let root = tempfile::tempdir().unwrap();
    let idle = write_plugin(root.path(), "idle", Guest::default());
    let picky = write_plugin(root.path(), "picky", Guest { init: Behaviour::Reject, ..Guest::default() });
    let registry = registry_over(&pods).with_start(PluginStart::OnFirstEvent);
    registry.deploy(&idle).await.unwrap();
    registry.deploy(&picky).await.unwrap();
    wait_until("the shared watch", || pods.open_watches() == 1).await;
    let (idle_metrics, picky_metrics) = (registry.metrics().plugin("idle"), registry.metrics().plugin("picky"));
    assert_eq!((idle_metrics.calls(), picky_metrics.calls()), (0, 0), "no init, no call: nothing came");
    assert_eq!(registry.status().await.len(), 2);

    pods.apply(shop_pod("a")).unwrap();
    wait_until("init and the add", || idle_metrics.calls() == 2).await;
    wait_until("the refusal", || picky_metrics.traps_of("init_rejected") >= 1).await;
    assert_eq!(registry.status().await.len(), 2, "a refusal after deploy does not remove the plugin");
    registry.factory().shutdown().await;

    let eager = registry_over(&MemorySource::default()).with_start(PluginStart::OnDeploy);
    let err = eager.deploy(&picky).await.unwrap_err();
    assert!(matches!(err, RegistryError::Start { .. }), "{err}");
    eager.factory().shutdown().await;
}

/// Started on their first event (the default), plugins still start a new version before it
/// replaces the old one: a new version whose `init` refuses is reported, and the old version
/// keeps running and receiving events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_that_cannot_start_leaves_the_old_version_running_by_default() {
    let pods = MemorySource::default();
    pods.apply(shop_pod("a")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = write_plugin(root.path(), "keeper", Guest::default());
    let registry = registry_over(&pods);
    registry.deploy(&dir).await.unwrap();
    let metrics = registry.metrics().plugin("keeper");
    wait_until("init and the initial add", || metrics.calls() == 2).await;

    write_plugin(root.path(), "keeper", Guest { init: Behaviour::Reject, ..Guest::default() });
    let err = registry.deploy(&dir).await.unwrap_err();
    assert!(matches!(err, RegistryError::Start { .. }), "{err}");
    assert_eq!(registry.status().await.len(), 1, "the old version stays deployed");
    pods.apply(shop_pod("b")).unwrap();
    wait_until("the old version's live add", || metrics.calls() == 4).await;
    assert_eq!(metrics.traps_of("init_rejected"), 1, "the new version's refusal, counted under the plugin");
    registry.factory().shutdown().await;
}

/// Started as they deploy, plugins' files are read several at once, but their memory is
/// reserved in the folder's order: of two plugins that do not fit together, the first
/// deploys, whichever read ends first; a smaller plugin after them still fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_reserve_memory_in_the_folder_order_while_their_files_are_read_at_once() {
    for round in 0..5 {
        let root = tempfile::tempdir().unwrap();
        for (name, memory) in [("a", "64Mi"), ("b", "64Mi"), ("c", "8Mi")] {
            let dir = write_plugin(root.path(), name, Guest::default());
            std::fs::write(dir.join(MANIFEST_FILE), format!("{}limits: {{memory: {memory}}}\n", pods_manifest(name)))
                .unwrap();
            age(&dir.join(MANIFEST_FILE));
        }
        let budget = MemoryBudget::new((64 + 8) << 20);
        let registry = registry_over(&MemorySource::default())
            .with_start(PluginStart::OnDeploy)
            .with_memory_budget(budget.clone());
        let failed = registry.sync_dir(root.path()).await.unwrap();
        assert!(
            matches!(failed.as_slice(), [RegistryError::Budget(e)] if e.plugin == "b"),
            "round {round}: {failed:?}"
        );
        let deployed: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
        assert_eq!(deployed, ["a", "c"], "round {round}");
        assert_eq!(budget.reserved(), (64 + 8) << 20);
    }
}

/// Started on their first event (the default), a plugin is only checked at deploy to fit
/// in the whole memory budget, and each instance reserves its limit while it lives: two
/// plugins that do not fit together both deploy and both get their events — the second's
/// instance made room for by recycling the first's, idle, not refused — and a plugin larger
/// than the whole budget is refused at deploy. (Each watches its own namespace, so that the
/// first is idle when the second starts: a busy instance is not recycled.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_started_on_first_event_share_the_memory_budget_least_recently_used_first() {
    let pods = MemorySource::default();
    let root = tempfile::tempdir().unwrap();
    for (name, memory) in [("a", "64Mi"), ("b", "64Mi"), ("huge", "128Mi")] {
        let dir = write_plugin(root.path(), name, Guest::default());
        let manifest = format!(
            "name: {name}\ncomponent: {name}.wasm\nresources:\n  - {{apiVersion: v1, kind: Pod, namespaces: [{name}]}}\nlimits: {{memory: {memory}}}\n"
        );
        std::fs::write(dir.join(MANIFEST_FILE), manifest).unwrap();
        age(&dir.join(MANIFEST_FILE));
    }
    let budget = MemoryBudget::new(100 << 20);
    let registry = registry_over(&pods).with_memory_budget(budget.clone());
    let failed = registry.sync_dir(root.path()).await.unwrap();
    assert!(matches!(failed.as_slice(), [RegistryError::Budget(e)] if e.plugin == "huge"), "{failed:?}");
    let deployed: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
    assert_eq!(deployed, ["a", "b"]);
    assert_eq!(budget.reserved(), 0, "no instance, nothing reserved");

    let (a, b) = (registry.metrics().plugin("a"), registry.metrics().plugin("b"));
    for (round, name) in ["a", "b", "a"].into_iter().enumerate() {
        let metrics = if name == "a" { &a } else { &b };
        let before = metrics.calls();
        pods.apply(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": name, "name": format!("p{round}")}}),
        )
        .unwrap();
        wait_until("the plugin's init and add", || metrics.calls() == before + 2).await;
        assert_eq!(budget.reserved(), 64 << 20, "round {round}: one live instance");
    }
    assert_eq!((a.recycled(), b.recycled()), (1, 1), "each start recycled the other's instance");
    assert_eq!(a.traps_of("instantiation") + b.traps_of("instantiation"), 0, "room was made, no start refused");
    registry.factory().shutdown().await;
}

/// A folder's plugins start several at once: each start's outcome is its own plugin's — a
/// plugin whose `init` refuses or traps is reported and not deployed, and its neighbours,
/// starting beside it, are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_starting_at_once_each_report_their_own_start() {
    let root = tempfile::tempdir().unwrap();
    let refuses = Guest { init: Behaviour::Reject, ..Guest::default() };
    let traps = Guest { init: Behaviour::Unreachable, ..Guest::default() };
    let guests = [("a", Guest::default()), ("b", refuses), ("c", Guest::default()), ("d", traps)];
    for (name, guest) in guests.iter().chain(&[("e", Guest::default()), ("f", Guest::default())]) {
        write_plugin(root.path(), name, *guest);
    }
    let registry = registry_over(&MemorySource::default()).with_start(PluginStart::OnDeploy);
    let failed = registry.sync_dir(root.path()).await.unwrap();
    let names: Vec<&str> = failed
        .iter()
        .map(|e| match e {
            RegistryError::Start { name, .. } => name.as_str(),
            other => panic!("not a start failure: {other}"),
        })
        .collect();
    assert_eq!(names, ["b", "d"]);
    let deployed: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
    assert_eq!(deployed, ["a", "c", "e", "f"]);
}

/// A plugin that does not fit beside one still starting is decided once that one is done,
/// as if plugins deployed one at a time: here the first's `init` refuses, its memory is
/// given back, and the second, which fits alone, deploys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_held_by_a_plugin_that_fails_to_start_goes_to_the_next() {
    let root = tempfile::tempdir().unwrap();
    let refuses = Guest { init: Behaviour::Reject, ..Guest::default() };
    for (name, guest) in [("a", refuses), ("b", Guest::default())] {
        let dir = write_plugin(root.path(), name, guest);
        std::fs::write(dir.join(MANIFEST_FILE), format!("{}limits: {{memory: 64Mi}}\n", pods_manifest(name))).unwrap();
        age(&dir.join(MANIFEST_FILE));
    }
    let budget = MemoryBudget::new((64 + 8) << 20);
    let registry = registry_over(&MemorySource::default()).with_start(PluginStart::OnDeploy).with_memory_budget(budget);
    let failed = registry.sync_dir(root.path()).await.unwrap();
    assert!(matches!(failed.as_slice(), [RegistryError::Start { name, .. }] if name == "a"), "{failed:?}");
    let deployed: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
    assert_eq!(deployed, ["b"]);
}

/// The instance pool's last places go to plugins in the folder's order, as memory does, not
/// to whichever start runs first; once it is full, a start takes the place of the least
/// recently used instance: with places for two, the third plugin's start recycles the
/// first's instance, every time (several scans, since the order of racing starts varies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_take_the_instance_pools_last_places_in_the_folder_order() {
    use crate::plugin::runtime::engine::{Allocation, EngineConfig, PoolLimits};
    let root = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        write_plugin(root.path(), name, Guest::default());
    }
    for _ in 0..20 {
        let limits = PoolLimits { total_component_instances: 2, ..PoolLimits::small() };
        let engine = PluginEngine::new(EngineConfig { pool: Some(limits), ..EngineConfig::default() }).unwrap();
        if !matches!(engine.allocation(), Allocation::Pooling(_)) {
            eprintln!("skipped: this machine cannot reserve the pooling allocator");
            return;
        }
        let registry = registry_on(engine, &MemorySource::default()).with_start(PluginStart::OnDeploy);
        let failed = registry.sync_dir(root.path()).await.unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        let deployed: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
        assert_eq!(deployed, ["a", "b", "c"]);
        let recycled = ["a", "b", "c"].map(|name| registry.metrics().plugin(name).recycled());
        assert_eq!(recycled, [1, 0, 0], "the least recently used instance made room");
    }
}

//! End to end through the library, as `wink run` wires it: real plugins built from source,
//! the directory source over a temporary folder (watched by the real file watcher), shared
//! informers and the plugin registry.
//!
//! Specifies that the initial list reaches every plugin as adds flagged `initial`, with the
//! resourceVersion of the cache; that editing a file is an update with the right old and new
//! resourceVersion; that removing an object from a file, or the file, is a delete; that
//! host-side namespace filters apply; that an object written without a namespace reaches a
//! plugin watching `default`; and that nothing is delivered twice. (The same flow
//! through the `wink` binary is in tests/cli.rs.)
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test dir_source_e2e`.

use std::collections::BTreeMap;

use wink::informer::ResourceKey;
use wink_tests::cluster::{Cluster, pod_yaml};
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::recorder::{Seen, by_key, wait_seen};
use wink_tests::wait::{settle, wait_for};

const ALL_A: &str = "e2e-recorder-a";
const ALL_B: &str = "e2e-recorder-b";
const SHOP_ONLY: &str = "e2e-recorder-shop";
const DEFAULT_ONLY: &str = "e2e-recorder-default";

fn recorded(plugin: &str) -> BTreeMap<String, Vec<Seen>> {
    by_key(&logs().recorded(plugin))
}

/// Waits for the delete of `key` and returns its resourceVersion.
async fn wait_delete(plugin: &str, key: &str) -> u64 {
    let find = || {
        logs().recorded(plugin).into_iter().find_map(|l| match l.seen {
            Seen::Delete { key: k, rv, unknown: false } if k == key => Some(rv.parse::<u64>().unwrap()),
            _ => None,
        })
    };
    wait_for(&format!("{plugin} to see the delete of {key}"), || find().is_some(), || logs().dump(plugin)).await;
    find().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_updates_and_deletes_reach_every_plugin_with_the_right_versions() {
    let cluster = Cluster::new();
    let two_pods = format!(
        "{}---\n{}",
        pod_yaml("shop", "web-1", &[("app", "web")]),
        pod_yaml("shop", "web-2", &[("app", "web")])
    );
    cluster.write("shop.yaml", &two_pods);
    let api = cluster.put_pod("payments", "api", &[("app", "api")]);

    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), ALL_A, None);
    install_plugin(
        "event-recorder",
        plugins.path(),
        ALL_B,
        Some("resources:\n  - {apiVersion: v1, kind: Pod}\nconfig: {tag: b}"),
    );
    install_plugin(
        "event-recorder",
        plugins.path(),
        SHOP_ONLY,
        Some("resources:\n  - apiVersion: v1\n    kind: Pod\n    namespaces: [shop]"),
    );
    let host = TestHost::start(cluster.path(), plugins.path()).await;

    // The initial list: one add per object, flagged initial, at the cache's resourceVersion.
    let keys = ["shop/web-1", "shop/web-2", api.as_str()];
    let rv: BTreeMap<&str, String> = keys.iter().map(|k| (*k, host.pod_rv(k).expect("in the cache"))).collect();
    for (plugin, expected) in [(ALL_A, &keys[..]), (ALL_B, &keys[..]), (SHOP_ONLY, &keys[..2])] {
        for key in expected {
            wait_seen(plugin, &Seen::Add { key: (*key).into(), rv: rv[key].clone(), initial: true }).await;
        }
    }
    host.wait_synced().await;
    assert!(
        logs().recorded(ALL_B).iter().all(|l| l.tag.as_deref() == Some("b")),
        "each plugin instance runs with its own config"
    );

    // An edit of one object in a multi-object file: an update of that object only.
    let edited = format!(
        "{}---\n{}",
        pod_yaml("shop", "web-1", &[("app", "web"), ("version", "2")]),
        pod_yaml("shop", "web-2", &[("app", "web")])
    );
    cluster.write("shop.yaml", &edited);
    let web1_new = {
        let old = rv["shop/web-1"].clone();
        wait_for("the edit to reach the cache", || host.pod_rv("shop/web-1").is_some_and(|r| r != old), String::new)
            .await;
        host.pod_rv("shop/web-1").unwrap()
    };
    assert!(web1_new.parse::<u64>().unwrap() > rv["shop/web-1"].parse::<u64>().unwrap());
    let update = Seen::Update { key: "shop/web-1".into(), old_rv: rv["shop/web-1"].clone(), new_rv: web1_new.clone() };
    for plugin in [ALL_A, ALL_B, SHOP_ONLY] {
        wait_seen(plugin, &update).await;
    }

    // An object removed from its file, then a whole file removed: deletes, final state
    // known, carrying the deletion's own (newer) resourceVersion as an API server's watch
    // does — the same one for every plugin.
    cluster.write("shop.yaml", &pod_yaml("shop", "web-1", &[("app", "web"), ("version", "2")]));
    let web2_deleted_at = wait_delete(ALL_A, "shop/web-2").await;
    assert!(web2_deleted_at > web1_new.parse().unwrap(), "a deletion is a new resourceVersion");
    let delete_web2 = Seen::Delete { key: "shop/web-2".into(), rv: web2_deleted_at.to_string(), unknown: false };
    for plugin in [ALL_B, SHOP_ONLY] {
        wait_seen(plugin, &delete_web2).await;
    }
    cluster.remove_pod("payments", "api");
    let api_deleted_at = wait_delete(ALL_A, &api).await;
    assert!(api_deleted_at > web2_deleted_at);
    let delete_api = Seen::Delete { key: api.clone(), rv: api_deleted_at.to_string(), unknown: false };
    wait_seen(ALL_B, &delete_api).await;
    assert_eq!(host.pod_rv("shop/web-2"), None);
    assert_eq!(host.pod_rv(&api), None);

    // Exactly these events, each once, in this order per key; nothing outside the filter.
    settle().await;
    let add = |key: &str| Seen::Add { key: key.into(), rv: rv[key].clone(), initial: true };
    let mut expected: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    expected.insert("shop/web-1".into(), vec![add("shop/web-1"), update.clone()]);
    expected.insert("shop/web-2".into(), vec![add("shop/web-2"), delete_web2.clone()]);
    let shop_only = expected.clone();
    expected.insert(api.clone(), vec![add(&api), delete_api.clone()]);
    assert_eq!(recorded(ALL_A), expected, "{}", logs().dump(ALL_A));
    assert_eq!(recorded(ALL_B), expected, "{}", logs().dump(ALL_B));
    assert_eq!(recorded(SHOP_ONLY), shop_only, "{}", logs().dump(SHOP_ONLY));

    let summary = host.metrics(ALL_A).summary();
    assert!(summary.contains("traps=0") && summary.contains("quarantined=no"), "{summary}");
    host.stop().await;
}

/// Regression: a Service written without a namespace got a cluster-scoped key, so a plugin
/// watching `namespaces: [default]` never saw it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_watching_default_sees_a_service_written_without_a_namespace() {
    let cluster = Cluster::new();
    cluster.write("web.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n");
    let plugins = tempfile::tempdir().unwrap();
    install_plugin(
        "event-recorder",
        plugins.path(),
        DEFAULT_ONLY,
        Some("resources:\n  - apiVersion: v1\n    kind: Service\n    namespaces: [default]"),
    );
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    let informer = host.factory.existing(&ResourceKey::new("v1", "Service")).expect("the plugin's informer");
    let service = informer.store().get_by_key("default/web").expect("in the cache as default/web");
    assert_eq!(service.namespace(), Some("default"));
    assert!(!service.uid().is_empty(), "a uid is given");
    let rv = service.resource_version().to_owned();
    wait_seen(DEFAULT_ONLY, &Seen::Add { key: "default/web".into(), rv, initial: true }).await;
    host.wait_synced().await;
    settle().await;
    assert_eq!(recorded(DEFAULT_ONLY).keys().collect::<Vec<_>>(), ["default/web"], "{}", logs().dump(DEFAULT_ONLY));
    host.stop().await;
}

//! The `wink` binary against the local API server, end to end: `wink run --kubeconfig` with
//! real plugins built from `plugins/` — a copy of `event-recorder` (all Pods) and
//! `owner-lookup` (Pods, ReplicaSets labelled `ready=yes`, Deployments; it follows
//! ownerReferences with `cache::get` and counts a ReplicaSet's pods with the `owner-uid`
//! index) — checked through what the plugins log on stderr.
//!
//! Specifies that:
//! - objects that exist at start reach the recorder as adds flagged `initial`, at the
//!   server's resourceVersion, once each;
//! - a ReplicaSet relabelled into owner-lookup's selector is an add for it, and reading the
//!   cache by index then finds its two pods; a pod update is an update with the right old and
//!   new resourceVersion, and owner-lookup finds the pod's owners in the cache by key;
//! - a delete made on the server is a delete at the deletion's resourceVersion, final state
//!   known;
//! - on SIGTERM wink exits 0 and prints one summary line per plugin on stdout.
//!
//! The binary comes from [`wink_tests::binary::wink_binary`] (built once with cargo, since
//! only wink-host's own tests get `CARGO_BIN_EXE_wink`, and wink-host cannot depend on the
//! API server of this crate). The API server runs on this test's tokio runtime, which stays
//! alive (and unblocked: the test waits with tokio's timers) while the child runs. Run with
//! `cargo test -p wink-tests --test wink_run_kube`.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};
use wink_tests::apiserver::ApiServer;
use wink_tests::binary::wink_binary;
use wink_tests::install_plugin;
use wink_tests::process::{Running, field};
use wink_tests::recorder::Seen;

const RECORDER: &str = "kube-e2e-recorder";
const OWNER_LOOKUP: &str = "kube-e2e-owners";

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"].as_str().expect("stored objects have a resourceVersion").to_owned()
}

/// A controller ownerReference to `owner`.
fn owned_by(owner: &Value) -> Value {
    json!([{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": true}])
}

fn pod(ns: &str, name: &str, labels: Value, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"namespace": ns, "name": name, "labels": labels, "ownerReferences": owners},
           "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}})
}

fn replica_set(ready: &str, deployment: &Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"namespace": "shop", "name": "web-5d8", "labels": {"app": "web", "ready": ready},
                        "ownerReferences": owned_by(deployment)},
           "spec": {"replicas": 2}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wink_run_delivers_a_kube_servers_events_to_plugins_and_reports_on_sigterm() {
    let binary = wink_binary();
    let server = ApiServer::start().await.expect("starting the API server");
    // A Deployment, its ReplicaSet (not yet in owner-lookup's selector), two pods of it, and
    // a pod nobody owns.
    let deployment = server
        .apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"namespace": "shop", "name": "web", "labels": {"app": "web"}},
                      "spec": {"replicas": 2}}))
        .unwrap();
    let rs = server.apply(replica_set("no", &deployment)).unwrap();
    let web_a = server.apply(pod("shop", "web-5d8-a", json!({"app": "web"}), owned_by(&rs))).unwrap();
    let web_b = server.apply(pod("shop", "web-5d8-b", json!({"app": "web"}), owned_by(&rs))).unwrap();
    let api = server.apply(pod("payments", "api", json!({"app": "api"}), json!([]))).unwrap();

    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), RECORDER, None);
    install_plugin(
        "owner-lookup",
        plugins.path(),
        OWNER_LOOKUP,
        Some(
            "resources:
  - {apiVersion: v1, kind: Pod}
  - {apiVersion: apps/v1, kind: ReplicaSet, labelSelector: ready=yes}
  - {apiVersion: apps/v1, kind: Deployment}
limits:
  memory: 32Mi
  callTimeout: 5s
failurePolicy:
  onError: retry",
        ),
    );

    let mut child = Running::spawn(
        Command::new(binary)
            .args(["run", "--no-cache", "--no-watch", "--metrics-interval", "0", "--plugins"])
            .arg(plugins.path())
            .arg("--kubeconfig")
            .arg(server.kubeconfig())
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG"),
    );
    let (stdout, stderr) = (child.stdout.clone(), child.stderr.clone());

    // The initial list: an add per pod, flagged initial, at the server's resourceVersion.
    for obj in [&web_a, &web_b, &api] {
        let ns = obj["metadata"]["namespace"].as_str().unwrap();
        let key = format!("{ns}/{}", obj["metadata"]["name"].as_str().unwrap());
        stderr.wait_seen(RECORDER, &Seen::Add { key, rv: rv(obj), initial: true }).await;
    }
    stderr.wait_for("the caches to sync", |l| l.contains("caches synced").then_some(())).await;

    // The ReplicaSet enters owner-lookup's selector: an add, which counts its pods by index.
    server.apply(replica_set("yes", &deployment)).unwrap();
    stderr.wait_for_text(OWNER_LOOKUP, "ReplicaSet shop/web-5d8 owns 2 pods", 0).await;

    // An update of a pod: the right old and new versions; its owners are found by key (the
    // initial add may have found them too, if the ReplicaSets were listed first).
    let explained = "pod shop/web-5d8-a belongs to Deployment shop/web via ReplicaSet shop/web-5d8";
    let before = stderr.count(OWNER_LOOKUP, explained);
    let web_a2 = server.apply(pod("shop", "web-5d8-a", json!({"app": "web", "v": "2"}), owned_by(&rs))).unwrap();
    let update = Seen::Update { key: "shop/web-5d8-a".into(), old_rv: rv(&web_a), new_rv: rv(&web_a2) };
    stderr.wait_seen(RECORDER, &update).await;
    stderr.wait_for_text(OWNER_LOOKUP, explained, before).await;

    // A delete on the server: at the deletion's resourceVersion, final state known.
    let deleted = server.delete("v1", "Pod", "shop/web-5d8-b").unwrap().expect("the pod existed");
    assert!(rv(&deleted).parse::<u64>().unwrap() > rv(&web_a2).parse::<u64>().unwrap());
    let delete = Seen::Delete { key: "shop/web-5d8-b".into(), rv: rv(&deleted), unknown: false };
    stderr.wait_seen(RECORDER, &delete).await;

    // SIGTERM: drain, exit 0, one summary line per plugin.
    child.sigterm();
    let exit = child.wait_exit().await;
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));
    for plugin in [RECORDER, OWNER_LOOKUP] {
        let prefix = format!("plugin={plugin} ");
        let summary =
            stdout.wait_for(&format!("{plugin}'s summary"), |l| l.starts_with(&prefix).then(|| l.to_owned())).await;
        assert!(summary.contains(" traps=0 ") && summary.ends_with("quarantined=no"), "{summary}");
    }
    assert_eq!(stdout.snapshot().len(), 2, "one line per plugin: {:?}", stdout.snapshot());

    // Each event exactly once, in order per key.
    let add = |obj: &Value, key: &str| Seen::Add { key: key.into(), rv: rv(obj), initial: true };
    let expected: BTreeMap<String, Vec<Seen>> = [
        ("shop/web-5d8-a".to_owned(), vec![add(&web_a, "shop/web-5d8-a"), update]),
        ("shop/web-5d8-b".to_owned(), vec![add(&web_b, "shop/web-5d8-b"), delete]),
        ("payments/api".to_owned(), vec![add(&api, "payments/api")]),
    ]
    .into();
    assert_eq!(stderr.recorded(RECORDER), expected, "stderr:\n{}", stderr.snapshot().join("\n"));
    let calls: u64 = stdout
        .snapshot()
        .iter()
        .find_map(|l| field(l, "calls").filter(|_| l.contains(RECORDER)))
        .expect("the recorder's summary")
        .parse()
        .unwrap();
    assert!(calls >= 6, "init, three adds, an update and a delete: {calls}");
}

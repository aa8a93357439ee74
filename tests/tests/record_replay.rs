//! `wink record` and `wink replay`, the plugin author's loop: record what the informers
//! deliver from a folder, replay it to the reloader (a reconciler) offline (its patch shown
//! as a dry run, exit 0), to a plugin that traps (exit 1), and with an unreadable line in the recording
//! (named by its number, the rest replayed, exit 2); and `wink run --record` records what the
//! plugins' informers deliver.

use std::path::Path;
use std::process::{Command, Output};

use wink_tests::binary::wink_binary;
use wink_tests::process::Running;
use wink_tests::{plugin, write_atomic};

const CLUSTER: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {reloader.wink.dev/configmaps: settings}\nspec:\n  replicas: 1\n  template: {metadata: {labels: {app: web}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {currency: EUR}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop, labels: {wink.test/trap: \"true\"}}\nspec: {containers: []}\n";

fn wink(args: &[&str], extra: &[&Path]) -> Output {
    Command::new(wink_binary()).args(args).args(extra).env("RUST_LOG", "info").output().expect("running wink")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_recording_replays_to_a_plugin_offline_with_its_writes_as_a_dry_run() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(&cluster.join("all.yaml"), CLUSTER);
    let recording = work.path().join("rec.jsonl");
    let source = format!("dir:{}", cluster.display());
    let out = wink(
        &["record", "--source", &source, "--resources", "apps/v1/Deployment,v1/ConfigMap,v1/Pod", "--max-events", "3"],
        &[&recording],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&recording).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4, "a header and 3 events: {lines:?}");
    assert_eq!((lines[0]["type"].as_str(), lines[0]["version"].as_u64()), (Some("header"), Some(1)));
    assert!(
        lines[1..]
            .iter()
            .all(|l| l["type"] == "add" && l["initial"] == true && l["object"]["metadata"]["name"].is_string())
    );

    // The reloader (a reconciler): its patch of web, shown and not sent; exit 0.
    let replayed = wink(&["replay"], &[&plugin("reloader"), &recording]);
    let stdout = text(&replayed.stdout);
    assert_eq!(replayed.status.code(), Some(0), "{stdout}\n{}", text(&replayed.stderr));
    assert!(stdout.contains("add apps/v1/Deployment shop/web → reconcile shop/web: ok"), "{stdout}");
    assert!(stdout.contains("would patch apps/v1 Deployment shop/web (merge)"), "{stdout}");
    assert!(stdout.contains("reloader.wink.dev/config-hash"), "{stdout}");
    assert!(std::fs::read_to_string(cluster.join("all.yaml")).unwrap() == CLUSTER, "nothing was written back");

    // A plugin that traps on its Pod: exit 1, the trap reported.
    let trapped = wink(&["replay"], &[&plugin("hostile/trap"), &recording]);
    let stdout = text(&trapped.stdout);
    assert_eq!(trapped.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("add v1/Pod shop/web-1: trapped"), "{stdout}");

    // An unreadable line: named, the rest replayed, exit 2.
    let mut damaged = std::fs::read_to_string(&recording).unwrap();
    damaged.push_str("{\"type\":\"update\",\n");
    std::fs::write(&recording, damaged).unwrap();
    let partial = wink(&["replay"], &[&plugin("reloader"), &recording]);
    let stdout = text(&partial.stdout);
    assert_eq!(partial.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("rec.jsonl:5:") && stdout.contains("would patch"), "{stdout}");
}

#[tokio::test]
async fn run_records_what_its_plugins_informers_deliver() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(&cluster.join("all.yaml"), CLUSTER);
    let plugins = work.path().join("plugins");
    wink_tests::install_plugin("reloader", &plugins, "reloader", None);
    let recording = work.path().join("run.jsonl");
    let mut child = Running::spawn(
        Command::new(wink_binary())
            .args(["run", "--no-cache", "--plugins"])
            .arg(&plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .arg("--record")
            .arg(&recording)
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    );
    child.stderr.wait_for("the reloader's patch", |l| l.contains("pod template annotated").then_some(())).await;
    child.sigterm();
    assert!(child.wait_exit().await.success());
    let text = std::fs::read_to_string(&recording).unwrap();
    let resources: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["resource"].as_str().unwrap().to_owned())
        .collect();
    for expected in ["apps/v1/Deployment", "v1/ConfigMap"] {
        assert!(resources.iter().any(|r| r == expected), "{expected} in {resources:?}");
    }
    assert!(resources.iter().all(|r| r != "v1/Pod"), "only what the plugins watch");
}

/// A reconciler is replayed its keys: each notification it watches goes through the same
/// mapping as live, and each key is reconciled at once, its writes shown as a dry run — the
/// Deployment with three replicas gets its budget created, the one with one replica nothing,
/// and the deletion of an owned budget reconciles its owner again.
#[test]
fn a_recording_replays_to_a_reconciler_key_by_key() {
    let work = tempfile::tempdir().unwrap();
    let recording = work.path().join("rec.jsonl");
    let deployment = |name: &str, replicas: u32| {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "resourceVersion": "1"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "a", "image": "a"}]}}},
        })
    };
    let budget = serde_json::json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-pdb", "resourceVersion": "2",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-web", "controller": true}]},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    });
    let line = |value: serde_json::Value| value.to_string() + "\n";
    let recorded = [
        line(serde_json::json!({"type": "header", "format": "wink-recording", "version": 1, "started": "2026-12-01T00:00:00Z",
            "source": "dir:x", "resources": ["apps/v1/Deployment", "policy/v1/PodDisruptionBudget"]})),
        line(serde_json::json!({"type": "add", "atMs": 0, "resource": "apps/v1/Deployment", "initial": true, "object": deployment("web", 3)})),
        line(serde_json::json!({"type": "add", "atMs": 0, "resource": "apps/v1/Deployment", "initial": true, "object": deployment("api", 1)})),
        line(serde_json::json!({"type": "add", "atMs": 5, "resource": "policy/v1/PodDisruptionBudget", "initial": false, "object": budget})),
        line(serde_json::json!({"type": "delete", "atMs": 9, "resource": "policy/v1/PodDisruptionBudget", "unknown": false, "object": budget})),
    ]
    .concat();
    write_atomic(&recording, &recorded);
    let out = wink(&["replay"], &[&plugin("pdb-for-deployment"), &recording]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let at =
        |prefix: &str| lines.iter().position(|l| l.contains(prefix)).unwrap_or_else(|| panic!("{prefix}: {stdout}"));
    let web = at("add apps/v1/Deployment shop/web → reconcile shop/web: ok");
    assert!(lines[web + 1].contains("would create policy/v1 PodDisruptionBudget shop/web"), "{stdout}");
    let api = at("add apps/v1/Deployment shop/api → reconcile shop/api: ok");
    assert!(!lines[api + 1].contains("would"), "one replica, no write: {stdout}");
    // The owned budget's events map to its controller owner.
    at("add policy/v1/PodDisruptionBudget shop/web → reconcile shop/web: ok");
    let deleted = at("delete policy/v1/PodDisruptionBudget shop/web → reconcile shop/web: ok");
    assert!(lines[deleted + 1].contains("would create policy/v1 PodDisruptionBudget shop/web"), "recreated: {stdout}");
    assert!(stdout.contains("4 calls, 0 failed"), "{stdout}");
}

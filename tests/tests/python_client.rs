//! `wink run --serve-api` driven by the official Kubernetes Python client (`kubernetes` from
//! PyPI), which `cargo xtask test` installs in its own venv and passes as
//! `WINK_PYTHON_KUBERNETES`: the client reads `/version` (which it refuses when a field of
//! `version.Info` is missing), creates, lists and deletes ConfigMaps, and deletes a
//! collection of them by label (`delete_collection_namespaced_config_map`), and scales a
//! Deployment through its scale subresource (`patch_namespaced_deployment_scale`).
//!
//! Without the client (`WINK_PYTHON_KUBERNETES` unset, or the install failed and
//! `WINK_PYTHON_KUBERNETES_MISSING` says why) the test says so and passes without running.
//!
//! Run by hand with
//! `WINK_PYTHON_KUBERNETES=.wink/toolchains/python-kubernetes-37.0.2/bin/python cargo test -p wink-tests --test python_client`.

use std::process::Command;

use serde_json::Value;
use wink_tests::binary::serve_api;
use wink_tests::write_atomic;

/// What the client does; prints one JSON document of what it saw.
const SCRIPT: &str = r#"
import json, sys
from kubernetes import client

config = client.Configuration()
config.host = sys.argv[1]
api = client.ApiClient(config)
seen = {}
version = client.VersionApi(api).get_code()
seen["version"] = {"major": version.major, "minor": version.minor, "platform": version.platform}
core = client.CoreV1Api(api)
for name, app in [("a", "web"), ("b", "web"), ("c", "db")]:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"app": app}), data={"k": name})
    core.create_namespaced_config_map("shop", body)
names = lambda: sorted(i.metadata.name for i in core.list_namespaced_config_map("shop").items)
seen["created"] = names()
# The client decodes a DELETE's answer as a plain object: a Status, or the object for some kinds.
status = core.delete_namespaced_config_map("c", "shop")
seen["deleted"] = {"status": status["status"], "name": status["details"]["name"], "uid": bool(status["details"]["uid"])}
seen["after_delete"] = names()
core.delete_collection_namespaced_config_map("shop", label_selector="app=web", dry_run="All")
seen["after_dry_run_collection"] = names()
core.delete_collection_namespaced_config_map("shop", label_selector="app=web")
seen["after_collection"] = names()
apps = client.AppsV1Api(api)
template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}
deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}}
apps.create_namespaced_deployment("shop", deployment)
apps.patch_namespaced_deployment_scale("web", "shop", {"spec": {"replicas": 3}})
scale = apps.read_namespaced_deployment_scale("web", "shop")
seen["scale"] = {"replicas": scale.spec.replicas, "selector": scale.status.selector}
seen["deployment_replicas"] = apps.read_namespaced_deployment("web", "shop").spec.replicas
print(json.dumps(seen))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_reads_writes_and_deletes_collections() {
    let Some(python) = std::env::var_os("WINK_PYTHON_KUBERNETES").filter(|p| !p.is_empty()) else {
        let why = std::env::var("WINK_PYTHON_KUBERNETES_MISSING")
            .unwrap_or_else(|_| "WINK_PYTHON_KUBERNETES is not set (run the tests with `cargo xtask test`)".into());
        eprintln!("skipped: no Kubernetes Python client: {why}");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (cluster, plugins) = (work.path().join("cluster"), work.path().join("plugins"));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(&cluster.join("shop.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    let (child, server) = serve_api(&cluster, &plugins).await;
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python).args(["-c", SCRIPT, &server]).output().expect("running python")
    })
    .await
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the Python client failed:\n{stderr}\n{stdout}");
    let seen: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON");
    assert_eq!(seen["version"]["major"], "1", "{seen}");
    assert_eq!(seen["created"], serde_json::json!(["a", "b", "c"]));
    assert_eq!(seen["deleted"], serde_json::json!({"status": "Success", "name": "c", "uid": true}));
    assert_eq!(seen["after_delete"], serde_json::json!(["a", "b"]));
    assert_eq!(seen["after_dry_run_collection"], serde_json::json!(["a", "b"]));
    assert_eq!(seen["after_collection"], serde_json::json!([]));
    assert_eq!(seen["scale"], serde_json::json!({"replicas": 3, "selector": "app=web"}));
    assert_eq!(seen["deployment_replicas"], 3);
    child.sigterm();
}

//! Plugins as `WinkPlugin` objects, end to end: the CRD (`wink crd`, as `deploy/crd.yaml`
//! holds it) and the objects applied and deleted with the real `kubectl` on the local API
//! server, the plugin published to a real registry with `wink push`, and `wink run
//! --source kube --winkplugins` deploying it from its object — with the object's spec as its
//! manifest (its permissions let the reloader patch a Deployment), writing its status, and
//! removing it when the object is deleted. An object whose image cannot be resolved is
//! reported `Failed` with the reason, and the other keeps running.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use wink_tests::apiserver::ApiServer;
use wink_tests::binary::wink_binary;
use wink_tests::install_plugin;
use wink_tests::kubectl::kubectl_ok;
use wink_tests::oci_registry::Registry;
use wink_tests::process::{Running, field};
use wink_tests::wait::wait_for;

/// A `WinkPlugin` whose spec is a built plugin's manifest (without its name and component)
/// and `image`.
fn winkplugin(name: &str, namespace: &str, image: &str, manifest: &Path) -> String {
    let mut spec: Value = serde_norway::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let map = spec.as_object_mut().unwrap();
    map.remove("name");
    map.remove("component");
    map.insert("image".into(), image.into());
    let object = serde_json::json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec});
    serde_norway::to_string(&object).unwrap()
}

fn status(server: &ApiServer, key: &str) -> Value {
    server.get("wink.dev/v1alpha1", "WinkPlugin", key).map(|o| o["status"].clone()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_and_delete_of_winkplugins_deploy_and_remove_plugins() {
    let registry = Registry::start().unwrap();
    let server = ApiServer::start().await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let crd = work.path().join("crd.yaml");
    std::fs::write(&crd, wink::crd::crd_yaml()).unwrap();
    kubectl_ok(server.kubeconfig(), &["apply", "--validate=false", "-f", crd.to_str().unwrap()]);
    let web = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "annotations": {"reloader.wink.dev/configmaps": "settings"}},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}}}});
    server.apply(web).unwrap();
    server
        .apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop"}, "data": {"currency": "EUR"}}))
        .unwrap();

    // Publish the reloader.
    let built = install_plugin("reloader", &work.path().join("src"), "reloader", None);
    let image = format!("{}/team/reloader:v1", registry.host);
    let cache = work.path().join("cache");
    let push = Command::new(wink_binary())
        .args(["push", "--insecure-registry", &registry.host, "--oci-cache-dir"])
        .arg(&cache)
        .arg(&built)
        .arg(&image)
        .output()
        .unwrap();
    assert!(push.status.success(), "{}", String::from_utf8_lossy(&push.stderr));

    let mut wink = Running::spawn(
        Command::new(wink_binary())
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .args(["run", "--winkplugins", "--no-cache", "--plugin-ref-refresh", "1s", "--insecure-registry"])
            .arg(&registry.host)
            .arg("--oci-cache-dir")
            .arg(&cache)
            .arg("--source")
            .arg(format!("kube:{}", server.kubeconfig().display())),
    );
    let stderr = wink.stderr.clone();

    // kubectl apply: deployed from the registry, with the object's spec as its manifest.
    let object = work.path().join("reloader.yaml");
    std::fs::write(&object, winkplugin("reloader", "team-a", &image, &built.join("plugin.yaml"))).unwrap();
    kubectl_ok(server.kubeconfig(), &["apply", "--validate=false", "-f", object.to_str().unwrap()]);
    wait_for(
        "the WinkPlugin's status to say Deployed",
        || status(&server, "team-a/reloader")["phase"] == "Deployed",
        || format!("{}\n{}", status(&server, "team-a/reloader"), stderr.snapshot().join("\n")),
    )
    .await;
    let deployed = status(&server, "team-a/reloader");
    assert_eq!(deployed["pluginName"], "team-a-reloader");
    assert!(deployed["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{deployed}");
    assert_eq!(deployed["observedGeneration"], 1);
    let hash = || {
        server
            .get("apps/v1", "Deployment", "shop/web")
            .and_then(|w| w.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash").cloned())
    };
    wait_for(
        "the reloader to roll web out (its spec's permissions allow the patch)",
        || hash().is_some(),
        || stderr.snapshot().join("\n"),
    )
    .await;
    wait_for(
        "the status to count its calls",
        || status(&server, "team-a/reloader")["calls"].as_u64() > Some(0),
        || status(&server, "team-a/reloader").to_string(),
    )
    .await;

    // An image that does not exist: Failed, with the reason; the reloader keeps running.
    let missing = format!("{}/team/missing:v1", registry.host);
    let broken = work.path().join("broken.yaml");
    std::fs::write(&broken, winkplugin("broken", "team-b", &missing, &built.join("plugin.yaml"))).unwrap();
    kubectl_ok(server.kubeconfig(), &["apply", "--validate=false", "-f", broken.to_str().unwrap()]);
    wait_for(
        "the broken WinkPlugin to be Failed with the reason",
        || {
            let s = status(&server, "team-b/broken");
            s["phase"] == "Failed" && s["message"].as_str().is_some_and(|m| m.contains(&missing))
        },
        || status(&server, "team-b/broken").to_string(),
    )
    .await;
    assert_eq!(status(&server, "team-a/reloader")["phase"], "Deployed");

    // kubectl delete: the plugin is removed.
    kubectl_ok(server.kubeconfig(), &["delete", "winkplugin", "reloader", "-n", "team-a"]);
    stderr
        .wait_for("the plugin removed", |l| {
            (l.contains("WinkPlugin removed") && field(l, "plugin") == Some("team-a-reloader")).then_some(())
        })
        .await;
    wink.sigterm();
    let exit = tokio::time::timeout(Duration::from_secs(30), wink.wait_exit()).await.unwrap();
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));
}

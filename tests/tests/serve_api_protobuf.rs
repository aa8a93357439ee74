//! `wink run --serve-api` driven by a current kubectl (`WINK_KUBECTL_CURRENT`, built from the
//! release `tests/control-plane/go.mod` pins), which sends its imperative creates, reviews
//! and dry runs in protobuf (kubectl from 1.32) and asks for protobuf answers.
//!
//! Specifies that `kubectl create namespace|configmap|secret|deployment|job` store what they
//! say (as `get -o yaml` and `-o json` show), that `create --dry-run=server` stores nothing,
//! and that `auth can-i` and `auth whoami` are answered. Without a current kubectl (no Go to
//! build it) the tests are skipped, saying why. kubectl's creates ask for server-side field
//! validation (`fieldValidation=Strict`) and read no OpenAPI document: none needs
//! `--validate=false`. `apply -f` does read the OpenAPI documents: a misspelt field of a
//! built-in kind or a custom resource is refused, and `explain` describes both.

use std::path::{Path, PathBuf};

use wink_tests::binary::serve_api;
use wink_tests::kubectl::{Kubectl, kubectl_current};
use wink_tests::process::Running;
use wink_tests::write_atomic;

/// A current kubectl, or `None` after saying why the test is skipped.
fn current() -> Option<PathBuf> {
    match kubectl_current() {
        Ok(binary) => Some(binary),
        Err(why) => {
            eprintln!("skipped: {why:#}");
            None
        }
    }
}

/// `wink run --serve-api` over an empty folder, and a kubectl of it.
async fn serve(work: &Path, binary: PathBuf) -> (Running, Kubectl) {
    let (cluster, plugins) = (work.join("cluster"), work.join("plugins"));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(&cluster.join("shop.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    let (child, server) = serve_api(&cluster, &plugins).await;
    (child, Kubectl { binary, server })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_in_protobuf_are_stored() {
    let Some(binary) = current() else { return };
    let work = tempfile::tempdir().unwrap();
    let (child, k) = serve(work.path(), binary).await;
    tokio::task::spawn_blocking(move || {
        // The request is protobuf: kubectl's own log of its request says so.
        let (ok, out, err) = k.run(&["create", "namespace", "team", "-v=8"]);
        assert!(ok && out.contains("namespace/team created"), "{err}\n{out}");
        assert!(err.contains("application/vnd.kubernetes.protobuf"), "kubectl sent no protobuf:\n{err}");
        let yaml = k.ok(&["get", "namespace", "team", "-o", "yaml"]);
        assert!(yaml.contains("name: team") && yaml.contains("uid:"), "{yaml}");

        let created = k.ok(&["create", "configmap", "settings", "-n", "team", "--from-literal=a=b"]);
        assert!(created.contains("configmap/settings created"), "{created}");
        let yaml = k.ok(&["get", "configmap", "settings", "-n", "team", "-o", "yaml"]);
        assert!(yaml.contains("a: b") && yaml.contains("namespace: team"), "{yaml}");
        // An empty value is stored as Go's JSON writes it, present.
        k.ok(&["create", "configmap", "blank", "-n", "team", "--from-literal=empty="]);
        assert_eq!(k.json(&["get", "configmap", "blank", "-n", "team"])["data"], serde_json::json!({"empty": ""}));

        k.ok(&["create", "secret", "generic", "login", "-n", "team", "--from-literal=password=hunter2"]);
        let secret = k.json(&["get", "secret", "login", "-n", "team"]);
        assert_eq!(secret["data"]["password"], "aHVudGVyMg==", "bytes are base64: {secret}");
        assert_eq!(secret["type"], "Opaque", "{secret}");

        k.ok(&["create", "deployment", "web", "-n", "team", "--image=nginx:1.27"]);
        let web = k.json(&["get", "deployment", "web", "-n", "team"]);
        assert_eq!(web["spec"]["replicas"], 1, "{web}");
        assert_eq!(web["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27", "{web}");
        assert_eq!(web["spec"]["selector"]["matchLabels"]["app"], "web", "{web}");
        assert_eq!(web["spec"]["template"]["metadata"]["labels"]["app"], "web", "{web}");

        k.ok(&["create", "job", "once", "-n", "team", "--image=busybox", "--", "true"]);
        let job = k.json(&["get", "job", "once", "-n", "team"]);
        let container = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!((&container["image"], &container["command"][0]), (&"busybox".into(), &"true".into()), "{job}");
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never", "{job}");

        let yaml = k.ok(&["get", "deployment", "web", "-n", "team", "-o", "yaml"]);
        assert!(yaml.contains("image: nginx:1.27"), "{yaml}");
    })
    .await
    .unwrap();
    child.sigterm();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_dry_run_creates_in_protobuf_store_nothing() {
    let Some(binary) = current() else { return };
    let work = tempfile::tempdir().unwrap();
    let (child, k) = serve(work.path(), binary).await;
    tokio::task::spawn_blocking(move || {
        for args in [
            vec!["create", "namespace", "ghost"],
            vec!["create", "configmap", "ghost", "-n", "shop", "--from-literal=a=b"],
            vec!["create", "secret", "generic", "ghost", "-n", "shop", "--from-literal=a=b"],
            vec!["create", "deployment", "ghost", "-n", "shop", "--image=nginx"],
        ] {
            let mut dry = args.clone();
            dry.push("--dry-run=server");
            let out = k.ok(&dry);
            assert!(out.contains("(server dry run)"), "{args:?}: {out}");
        }
        for what in [
            &["namespace", "ghost"][..],
            &["configmap", "ghost", "-n", "shop"],
            &["secret", "ghost", "-n", "shop"],
            &["deployment", "ghost", "-n", "shop"],
        ] {
            let mut get = vec!["get"];
            get.extend(what);
            let (found, _, err) = k.run(&get);
            assert!(!found && err.contains("NotFound") || err.contains("not found"), "{what:?} was stored: {err}");
        }
        // A dry-run delete (its DeleteOptions in the body) keeps the object.
        k.ok(&["create", "configmap", "kept", "-n", "shop", "--from-literal=a=b"]);
        let out = k.ok(&["delete", "configmap", "kept", "-n", "shop", "--dry-run=server"]);
        assert!(out.contains("(server dry run)"), "{out}");
        k.ok(&["get", "configmap", "kept", "-n", "shop"]);
    })
    .await
    .unwrap();
    child.sigterm();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_reviews_in_protobuf_are_answered() {
    let Some(binary) = current() else { return };
    let work = tempfile::tempdir().unwrap();
    let (child, k) = serve(work.path(), binary).await;
    tokio::task::spawn_blocking(move || {
        // The operator (no impersonation) may do everything.
        assert_eq!(k.ok(&["auth", "can-i", "create", "pods", "-n", "shop"]).trim(), "yes");
        // A user no binding names may not: kubectl says `no` (RBAC gives no reason) and
        // exits 1.
        let (allowed, out, err) = k.run(&["auth", "can-i", "create", "pods", "-n", "shop", "--as", "jane"]);
        assert!(!allowed && out.trim() == "no", "{out}\n{err}");
        let whoami = k.ok(&["auth", "whoami"]);
        assert!(whoami.contains("system:admin") && whoami.contains("system:masters"), "{whoami}");
        let whoami = k.json(&["auth", "whoami", "--as", "jane", "--as-group", "dev"]);
        assert_eq!(whoami["status"]["userInfo"]["username"], "jane", "{whoami}");
        assert_eq!(whoami["status"]["userInfo"]["groups"][0], "dev", "{whoami}");
    })
    .await
    .unwrap();
    child.sigterm();
}

const WIDGETS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer, description: How big the widget is.}\n";

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: web:1}]}\n";

/// A current kubectl validates `apply -f` against the served OpenAPI documents: misspelt
/// fields are refused with its message and nothing is stored; `explain` describes the
/// fields of built-in kinds and of a custom resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_kubectl_validates_and_explains_against_the_served_openapi() {
    let Some(binary) = current() else { return };
    let work = tempfile::tempdir().unwrap();
    let (child, k) = serve(work.path(), binary).await;
    let manifest = work.path().join("manifest.yaml");
    tokio::task::spawn_blocking(move || {
        let apply = |text: &str| {
            std::fs::write(&manifest, text).unwrap();
            k.run(&["apply", "-f", manifest.to_str().unwrap()])
        };
        let (ok, out, err) = apply(&WEB.replace("replicas: 2", "replica: 2"));
        assert!(!ok && err.contains("unknown field \"replica\""), "{out}{err}");
        let (found, _, _) = k.run(&["get", "deployment", "web", "-n", "shop"]);
        assert!(!found, "a refused manifest stores nothing");
        let (ok, out, err) = apply(WEB);
        assert!(ok && out.contains("deployment.apps/web created"), "{out}{err}");

        let (ok, out, err) = apply(WIDGETS_CRD);
        assert!(ok, "{out}{err}");
        let widget =
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: small, namespace: shop}\nspec: {size: 1}\n";
        let (ok, out, err) = apply(&widget.replace("size", "sise"));
        assert!(!ok && err.contains("unknown field \"sise\""), "{out}{err}");
        let (ok, out, err) = apply(widget);
        assert!(ok && out.contains("widget.example.com/small created"), "{out}{err}");

        let explained = k.ok(&["explain", "deployment.spec.replicas"]);
        assert!(explained.contains("Number of desired pods"), "{explained}");
        let explained = k.ok(&["explain", "widgets.spec.size"]);
        assert!(explained.contains("How big the widget is."), "{explained}");
    })
    .await
    .unwrap();
    child.sigterm();
}

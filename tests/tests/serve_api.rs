//! `wink run --serve-api`: the embedded cluster over the Kubernetes API, driven by the real
//! `kubectl` (Debian's package), with plugins reacting to what kubectl writes.
//!
//! Specifies that kubectl can create with `apply` (a Deployment and its ConfigMap), list
//! (with short names, label and field selectors), get, update with a second `apply` (a
//! strategic merge patch), read Events plugins recorded (in both groups, and in `describe`),
//! and delete; and that the reloader plugin annotates the Deployment kubectl created and
//! rolls it out again when kubectl changes the ConfigMap, as `kubectl get -o json` shows.
//!
//! `kubectl get` prints the columns kube-apiserver's Tables give built-in kinds and a custom
//! resource's printer columns; `kubectl scale` sets a Deployment's replicas through its
//! scale subresource; deletes
//! cascade as the garbage collector makes them (foreground, background, orphan),
//! and deleting a namespace deletes its content, then the namespace.
//!
//! Debian's kubectl is 1.20: it validates manifests and explains fields against the
//! OpenAPI v2 document the endpoint serves (gnostic's protobuf), so `apply` runs with
//! validation on, for built-in kinds and custom resources alike.

use std::path::Path;

use serde_json::Value;
use wink_tests::binary::serve_api;
use wink_tests::kubectl::{Kubectl, kubectl};
use wink_tests::process::Running;
use wink_tests::wait::{TIMEOUT, eventually_blocking};
use wink_tests::{install_plugin, write_atomic};

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  labels: {app: web}\n  annotations: {reloader.wink.dev/configmaps: settings}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: web:1}]}\n";

fn settings(currency: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  currency: {currency}\n"
    )
}

fn template_hash(k: &Kubectl) -> Option<String> {
    let web = k.json(&["get", "deploy", "web", "-n", "shop"]);
    web.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// `wink run --serve-api` over the folder `cluster` with the plugins under `plugins`, and a
/// kubectl (Debian's) of it.
async fn serve(cluster: &Path, plugins: &Path) -> (Running, Kubectl) {
    let (child, server) = serve_api(cluster, plugins).await;
    (child, Kubectl { binary: kubectl().expect("kubectl"), server })
}

/// A temporary folder whose cluster holds the Namespace `shop` and `files` (name, text),
/// served with no plugins: the folder, the process and a kubectl of it.
async fn serve_shop(files: &[(&str, &str)]) -> (tempfile::TempDir, Running, Kubectl) {
    let work = tempfile::tempdir().unwrap();
    let (cluster, plugins) = (work.path().join("cluster"), work.path().join("plugins"));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(&cluster.join("shop.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    for (name, text) in files {
        write_atomic(&cluster.join(name), text);
    }
    let (child, k) = serve(&cluster, &plugins).await;
    (work, child, k)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_and_writes_the_embedded_cluster_and_plugins_react() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    // Only the Namespace comes from a file: the Deployment and its ConfigMap come from kubectl.
    write_atomic(&cluster.join("shop.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    let plugins = work.path().join("plugins");
    install_plugin("reloader", &plugins, "reloader", None);
    let (child, k) = serve(&cluster, &plugins).await;
    let blocking = tokio::task::spawn_blocking(move || {
        let manifest = Path::new(&std::env::temp_dir()).join(format!("wink-settings-{}.yaml", std::process::id()));
        std::fs::write(&manifest, format!("{WEB}---\n{}", settings("EUR"))).unwrap();
        let applied = k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
        assert!(
            applied.contains("deployment.apps/web created") && applied.contains("configmap/settings created"),
            "{applied}"
        );

        // Reads: short names, selectors, one object.
        let listed = k.ok(&["get", "deploy", "-n", "shop"]);
        assert!(listed.contains("web"), "{listed}");
        let by_label = k.json(&["get", "deployments", "-A", "-l", "app=web"]);
        assert_eq!(by_label["items"].as_array().map(Vec::len), Some(1), "{by_label}");
        let by_field = k.json(&["get", "cm", "-n", "shop", "--field-selector", "metadata.name=nothing"]);
        assert_eq!(by_field["items"].as_array().map(Vec::len), Some(0), "{by_field}");

        // The reloader annotated the Deployment kubectl created; kubectl changes its ConfigMap.
        assert!(eventually_blocking(TIMEOUT, || template_hash(&k).is_some()), "the reloader never wrote");
        let first = template_hash(&k).unwrap();
        std::fs::write(&manifest, settings("USD")).unwrap();
        let applied = k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
        assert!(applied.contains("configmap/settings configured"), "{applied}");
        assert!(eventually_blocking(TIMEOUT, || template_hash(&k).is_some_and(|h| h != first)), "no rollout");
        let cm = k.json(&["get", "configmap", "settings", "-n", "shop"]);
        assert_eq!(cm["data"]["currency"], "USD");
        let events = k.json(&["get", "events.events.k8s.io", "-n", "shop"]);
        let reasons: Vec<&str> =
            events["items"].as_array().unwrap().iter().filter_map(|e| e["reason"].as_str()).collect();
        assert!(reasons.contains(&"ConfigChanged"), "{events}");
        // The same Events in the core group: kubectl get events and describe show them.
        let table = k.ok(&["get", "events", "-n", "shop"]);
        assert!(table.contains("ConfigChanged") && table.contains("deployment/web"), "{table}");
        let described = k.ok(&["describe", "deployment", "web", "-n", "shop"]);
        assert!(described.contains("ConfigChanged"), "{described}");

        // Create with apply, then delete.
        std::fs::write(&manifest, settings("GBP").replace("name: settings", "name: extra")).unwrap();
        let created = k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
        assert!(created.contains("configmap/extra created"), "{created}");
        let (exists, _, err) = k.run(&["create", "configmap", "extra", "-n", "shop"]);
        assert!(!exists && err.contains("AlreadyExists") || err.contains("already exists"), "{err}");
        let deleted = k.ok(&["delete", "configmap", "extra", "-n", "shop"]);
        assert!(deleted.contains("deleted"), "{deleted}");
        let (found, _, err) = k.run(&["get", "configmap", "extra", "-n", "shop"]);
        assert!(!found && err.contains("NotFound") || err.contains("not found"), "{err}");
        let _ = std::fs::remove_file(&manifest);
    });
    blocking.await.unwrap();
    child.sigterm();
}

/// kubectl's server-side dry runs store nothing: `delete --dry-run=server` (whose `dryRun` is
/// in the DeleteOptions body: ignoring it once deleted the object), `apply --dry-run=server`
/// and `create --dry-run=server`. kubectl before 1.26 checks the OpenAPI document for dry-run
/// support first and stops without sending anything when the server has none; kubectl from
/// 1.32 sends an imperative create as protobuf. Either way the object must stay as stored,
/// and when kubectl did send the request, it must say the change was only a dry run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_dry_runs_store_nothing() {
    let (work, child, k) = serve_shop(&[]).await;
    let manifest = work.path().join("settings.yaml");
    tokio::task::spawn_blocking(move || {
        let currency = |k: &Kubectl| {
            let (found, out, _) =
                k.run(&["get", "configmap", "settings", "-n", "shop", "-o", "jsonpath={.data.currency}"]);
            found.then_some(out)
        };
        let dry_run_said = |(ok, out, err): (bool, String, String)| {
            assert!(!ok || out.contains("(server dry run)"), "kubectl succeeded without a dry run: {out}");
            (ok, err)
        };

        std::fs::write(&manifest, settings("EUR")).unwrap();
        let applied = dry_run_said(k.run(&["apply", "--dry-run=server", "-f", manifest.to_str().unwrap()]));
        assert_eq!(currency(&k), None, "a dry-run apply created the object ({applied:?})");
        let created = dry_run_said(k.run(&["create", "configmap", "settings", "-n", "shop", "--dry-run=server"]));
        assert_eq!(currency(&k), None, "a dry-run create created the object ({created:?})");

        k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
        assert_eq!(currency(&k).as_deref(), Some("EUR"));
        std::fs::write(&manifest, settings("USD")).unwrap();
        let changed = dry_run_said(k.run(&["apply", "--dry-run=server", "-f", manifest.to_str().unwrap()]));
        assert_eq!(currency(&k).as_deref(), Some("EUR"), "a dry-run apply changed the object ({changed:?})");
        let deleted = dry_run_said(k.run(&["delete", "configmap", "settings", "-n", "shop", "--dry-run=server"]));
        assert_eq!(currency(&k).as_deref(), Some("EUR"), "a dry-run delete deleted the object ({deleted:?})");
    })
    .await
    .unwrap();
    child.sigterm();
}

/// A ReplicaSet `name` in `shop` owned by the Deployment whose uid is `owner_uid`.
fn owned_replica_set(name: &str, owner: &str, owner_uid: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: {name}\n  namespace: shop\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: Deployment, name: {owner}, uid: {owner_uid}, controller: true, blockOwnerDeletion: true}}\nspec:\n  selector: {{matchLabels: {{app: {owner}}}}}\n  template:\n    metadata: {{labels: {{app: {owner}}}}}\n    spec: {{containers: [{{name: c, image: c:1}}]}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scales_deletes_cascade_and_namespaces_have_a_lifecycle() {
    let (work, child, k) = serve_shop(&[]).await;
    let manifests = work.path().to_owned();
    tokio::task::spawn_blocking(move || {
        let namespaces = k.ok(&["get", "namespaces", "-o", "name"]);
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease", "shop"] {
            assert!(namespaces.contains(&format!("namespace/{ns}\n")), "{ns} missing from {namespaces}");
        }
        // A Deployment and a ReplicaSet it owns, for each way of deleting.
        let owned = |name: &str| {
            let deployment = WEB.replace("name: web", &format!("name: {name}"));
            let path = manifests.join(format!("{name}.yaml"));
            std::fs::write(&path, deployment).unwrap();
            k.ok(&["apply", "-f", path.to_str().unwrap()]);
            let uid = k.ok(&["get", "deploy", name, "-n", "shop", "-o", "jsonpath={.metadata.uid}"]);
            std::fs::write(&path, owned_replica_set(&format!("{name}-1"), name, &uid)).unwrap();
            k.ok(&["apply", "-f", path.to_str().unwrap()]);
        };
        let exists = |kind: &str, name: &str| k.run(&["get", kind, name, "-n", "shop"]).0;

        owned("fore");
        k.ok(&["delete", "deploy", "fore", "-n", "shop", "--cascade=foreground", "--timeout=20s"]);
        assert!(!exists("deploy", "fore") && !exists("rs", "fore-1"), "foreground: owner and dependent gone");

        owned("back");
        k.ok(&["delete", "deploy", "back", "-n", "shop", "--timeout=20s"]);
        assert!(!exists("rs", "back-1"), "background: the dependent is collected");

        owned("orphan");
        k.ok(&["delete", "deploy", "orphan", "-n", "shop", "--cascade=orphan", "--timeout=20s"]);
        assert!(!exists("deploy", "orphan"), "orphan: the owner goes");
        let kept = k.json(&["get", "rs", "orphan-1", "-n", "shop"]);
        assert!(kept["metadata"].get("ownerReferences").is_none(), "orphan: the reference is cleared: {kept}");

        // `kubectl scale` goes through the Deployment's scale subresource.
        let scaled = manifests.join("scaled.yaml");
        std::fs::write(&scaled, WEB.replace("name: web", "name: scaled")).unwrap();
        k.ok(&["apply", "-f", scaled.to_str().unwrap()]);
        k.ok(&["scale", "deploy", "scaled", "-n", "shop", "--replicas=3"]);
        let replicas = k.ok(&["get", "deploy", "scaled", "-n", "shop", "-o", "jsonpath={.spec.replicas}"]);
        assert_eq!(replicas, "3");

        k.ok(&["delete", "namespace", "shop", "--timeout=20s"]);
        let (found, _, _) = k.run(&["get", "namespace", "shop"]);
        assert!(!found, "the namespace goes once its content is gone");
        let (_, left, _) = k.run(&["get", "rs", "-n", "shop", "-o", "name"]);
        assert_eq!(left.trim(), "", "the namespace's content is deleted");
        let (created, _, err) = k.run(&["create", "configmap", "c", "-n", "nowhere"]);
        assert!(!created && err.contains("namespaces \"nowhere\" not found"), "{err}");
    })
    .await
    .unwrap();
    child.sigterm();
}

/// A CustomResourceDefinition with printer columns, and one of its objects.
const WIDGETS: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Colour, type: string, jsonPath: .spec.colour, priority: 1}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: gear, namespace: shop}
spec: {size: 7, colour: blue}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_the_columns_of_built_in_kinds_and_custom_resources() {
    let (_work, child, k) = serve_shop(&[("web.yaml", WEB), ("widgets.yaml", WIDGETS)]).await;
    tokio::task::spawn_blocking(move || {
        let header = |args: &[&str]| {
            let out = k.ok(args);
            out.lines().next().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ")
        };
        assert_eq!(header(&["get", "deploy", "-n", "shop"]), "NAME READY UP-TO-DATE AVAILABLE AGE");
        assert_eq!(
            header(&["get", "deploy", "-n", "shop", "-o", "wide"]),
            "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR"
        );
        let row = k.ok(&["get", "deploy", "web", "-n", "shop", "--no-headers"]);
        assert!(row.starts_with("web") && row.contains("0/1"), "{row}");
        assert_eq!(header(&["get", "ns"]), "NAME STATUS AGE");
        assert_eq!(header(&["get", "widgets", "-n", "shop"]), "NAME SIZE");
        assert_eq!(header(&["get", "widgets", "-n", "shop", "-o", "wide"]), "NAME SIZE COLOUR");
        let row = k.ok(&["get", "widgets", "-n", "shop", "-o", "wide", "--no-headers"]);
        assert_eq!(row.split_whitespace().collect::<Vec<_>>(), ["gear", "7", "blue"]);
    })
    .await
    .unwrap();
    child.sigterm();
}

const WIDGETS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            description: What the widget should be.\n            properties:\n              size: {type: integer, description: How big the widget is.}\n";

const GADGETS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Gadget, plural: gadgets, singular: gadget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              colour: {type: string, description: The gadget's colour.}\n";

/// kubectl validates manifests against the served OpenAPI document (no `--validate=false`):
/// a Deployment and custom resources (of a CustomResourceDefinition of the folder and of
/// one kubectl created) apply, a misspelt field is refused by kubectl with its message, and
/// `kubectl explain` describes built-in and custom fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_validates_and_explains_against_the_served_openapi() {
    let (work, child, k) = serve_shop(&[("widgets.yaml", WIDGETS_CRD)]).await;
    let manifest = work.path().join("manifest.yaml");
    tokio::task::spawn_blocking(move || {
        let apply = |text: &str| {
            std::fs::write(&manifest, text).unwrap();
            k.run(&["apply", "-f", manifest.to_str().unwrap()])
        };
        let (ok, out, err) = apply(WEB);
        assert!(ok && out.contains("deployment.apps/web created"), "{out}{err}");
        let widget =
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: small, namespace: shop}\nspec: {size: 1}\n";
        let (ok, out, err) = apply(widget);
        assert!(ok && out.contains("widget.example.com/small created"), "{out}{err}");
        let (ok, out, err) = apply(GADGETS_CRD);
        assert!(ok, "{out}{err}");
        let gadget = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: red}\nspec: {colour: red}\n";
        let (ok, out, err) = apply(gadget);
        assert!(ok && out.contains("gadget.example.com/red created"), "{out}{err}");

        // Misspelt fields: kubectl refuses them before sending anything.
        let (ok, out, err) = apply(&WEB.replace("replicas: 1", "replica: 2"));
        assert!(!ok && err.contains("unknown field \"replica\""), "{out}{err}");
        let (ok, out, err) = apply(&widget.replace("size: 1", "sise: 1"));
        assert!(!ok && err.contains("unknown field \"sise\""), "{out}{err}");
        let (ok, out, err) = apply(&gadget.replace("colour", "color"));
        assert!(!ok && err.contains("unknown field \"color\""), "{out}{err}");

        let explained = k.ok(&["explain", "deployment.spec.replicas"]);
        assert!(explained.contains("replicas") && explained.contains("Number of desired pods"), "{explained}");
        let explained = k.ok(&["explain", "widgets.spec"]);
        assert!(explained.contains("What the widget should be.") && explained.contains("How big"), "{explained}");
        let explained = k.ok(&["explain", "gadgets.spec.colour"]);
        assert!(explained.contains("The gadget's colour."), "{explained}");
    })
    .await
    .unwrap();
    child.sigterm();
}

/// An editor for `kubectl edit`: a script that replaces `from` with `to` in the file.
fn editor(dir: &Path, name: &str, from: &str, to: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nsed -i 's/{from}/{to}/' \"$1\"\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// With validation on, `apply -k` (kustomize), `apply --server-side` and `edit` work, and
/// an edit that misspells a field is refused by kubectl and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_kustomizes_applies_server_side_and_edits_with_validation_on() {
    let (work, child, k) = serve_shop(&[]).await;
    let dir = work.path().to_owned();
    tokio::task::spawn_blocking(move || {
        let kustomized = dir.join("kustomized");
        std::fs::create_dir(&kustomized).unwrap();
        std::fs::write(kustomized.join("web.yaml"), WEB.replace("  namespace: shop\n", "")).unwrap();
        std::fs::write(kustomized.join("kustomization.yaml"), "namespace: shop\nresources: [web.yaml]\n").unwrap();
        let applied = k.ok(&["apply", "-k", kustomized.to_str().unwrap()]);
        assert!(applied.contains("deployment.apps/web created"), "{applied}");

        let manifest = dir.join("web.yaml");
        std::fs::write(&manifest, WEB.replace("image: web:1", "image: web:2")).unwrap();
        let applied = k.ok(&["apply", "--server-side", "--force-conflicts", "-f", manifest.to_str().unwrap()]);
        assert!(applied.contains("deployment.apps/web serverside-applied"), "{applied}");
        let image =
            k.ok(&["get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.template.spec.containers[0].image}"]);
        assert_eq!(image, "web:2");

        let scaled = editor(&dir, "scale.sh", "replicas: 1", "replicas: 3");
        let (ok, out, err) = k.run_with(&["edit", "deploy", "web", "-n", "shop"], &[("EDITOR", &scaled)]);
        assert!(ok && out.contains("deployment.apps/web edited"), "{out}{err}");
        let misspelt = editor(&dir, "misspell.sh", "replicas: 3", "replica: 1");
        let (ok, out, err) = k.run_with(&["edit", "deploy", "web", "-n", "shop"], &[("EDITOR", &misspelt)]);
        assert!(!ok && err.contains("invalid"), "{out}{err}");
        let replicas = k.ok(&["get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.replicas}"]);
        assert_eq!(replicas, "3", "the refused edit changed nothing");
    })
    .await
    .unwrap();
    child.sigterm();
}

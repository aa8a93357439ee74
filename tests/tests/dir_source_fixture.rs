//! The directory source over a realistic folder of manifests (`tests/fixtures/manifests/`):
//! three projects in subfolders plus their cluster-wide pieces, in multi-document YAML,
//! `kind: List` (YAML and JSON), CustomResourceDefinitions (one namespaced, one
//! cluster-scoped) and objects of them, with and without namespaces.
//!
//! Specifies that the source holds exactly what `kubectl apply -f tests/fixtures/manifests
//! --recursive` creates in an empty cluster (applied until the CustomResourceDefinitions are
//! established): the expected keys below are reasoned out document by document, in the
//! comments. One difference from a cluster is kept on purpose: an object is served at the
//! apiVersion it is written in (a cluster serves it at every version of its kind).
//!
//! Run with `cargo test -p wink-tests --test dir_source_fixture`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use wink::informer::ListParams;
use wink::informer::{ResourceKey, SourceProvider};
use wink::source::DirSource;

fn fixture() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/manifests"))
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// What the source serves: (apiVersion, kind) → keys → the object's JSON.
async fn served(src: &DirSource) -> BTreeMap<(String, String), BTreeMap<String, serde_json::Value>> {
    let mut all = BTreeMap::new();
    for (api_version, kind) in src.kinds() {
        let lw = src.lister_watcher(&ResourceKey::new(&api_version, &kind)).unwrap();
        let list = lw.list(&ListParams::default()).await.unwrap();
        let objects: BTreeMap<String, serde_json::Value> =
            list.items.iter().map(|o| (o.key().to_owned(), serde_json::from_str(o.json()).unwrap())).collect();
        if !objects.is_empty() {
            all.insert((api_version, kind), objects);
        }
    }
    all
}

fn expected() -> BTreeMap<(String, String), BTreeSet<String>> {
    let rows: &[(&str, &str, &[&str])] = &[
        // 00-cluster/crds.yaml: both definitions (cluster-scoped).
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &["backups.ops.example.io", "tenants.platform.example.io"],
        ),
        // 00-cluster/namespaces.yaml: a comment-only first part, then three Namespaces; and
        // the four every cluster has.
        (
            "v1",
            "Namespace",
            &["default", "kube-node-lease", "kube-public", "kube-system", "ledger", "shop", "telemetry"],
        ),
        // 00-cluster/platform.json: a List of three cluster-scoped objects.
        ("storage.k8s.io/v1", "StorageClass", &["fast-ssd"]),
        ("scheduling.k8s.io/v1", "PriorityClass", &["business-critical"]),
        ("networking.k8s.io/v1", "IngressClass", &["public"]),
        // 00-cluster/rbac.yaml: tenant-viewer's namespace is dropped (cluster-scoped).
        ("rbac.authorization.k8s.io/v1", "ClusterRole", &["metrics-reader", "tenant-viewer"]),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &["telemetry-metrics-reader"]),
        // 00-cluster/tenants.yaml: Tenant is cluster-scoped by its definition, at v1 and
        // v1beta1 (both served); finance's namespace is dropped.
        ("platform.example.io/v1", "Tenant", &["storefront"]),
        ("platform.example.io/v1beta1", "Tenant", &["finance"]),
        // Deployments: shop/web.yaml; ledger/api.json's List item without a namespace goes
        // to default; telemetry/collector.yaml.
        ("apps/v1", "Deployment", &["default/ledger-api", "shop/web", "telemetry/aggregator"]),
        // ledger/database.yaml.
        ("apps/v1", "StatefulSet", &["ledger/postgres"]),
        // telemetry/collector.yaml.
        ("apps/v1", "DaemonSet", &["telemetry/node-agent"]),
        // shop/web.yaml, ledger/api.json (default), ledger/database.yaml,
        // telemetry/collector.yaml.
        ("v1", "Service", &["default/ledger-api", "ledger/postgres", "shop/web", "telemetry/aggregator"]),
        // shop/web.yaml, ledger/api.json (default), ledger/database.yaml (whose SQL holds an
        // indented `---`, not a document marker), telemetry/dashboards.yaml (a List).
        (
            "v1",
            "ConfigMap",
            &[
                "default/app-config",
                "ledger/postgres-init",
                "shop/web-config",
                "telemetry/app-config",
                "telemetry/dashboard-ledger",
                "telemetry/dashboard-shop",
            ],
        ),
        // shop/identity.yaml, ledger/database.yaml.
        ("v1", "Secret", &["ledger/postgres-credentials", "shop/payment-gateway", "shop/web-tls"]),
        // shop/identity.yaml, ledger/rbac.yml, telemetry/collector.yaml.
        ("v1", "ServiceAccount", &["ledger/migrator", "shop/web", "telemetry/collector"]),
        // shop/ingress.yaml.
        ("networking.k8s.io/v1", "Ingress", &["shop/web"]),
        // shop/jobs.yaml, ledger/jobs.yaml.
        ("batch/v1", "CronJob", &["ledger/monthly-report", "shop/cart-cleanup"]),
        ("batch/v1", "Job", &["ledger/schema-migrate-42"]),
        // shop/jobs.yaml (orders-weekly has no namespace: Backup is namespaced by its
        // definition, so default), ledger/jobs.yaml.
        ("ops.example.io/v1", "Backup", &["default/orders-weekly", "ledger/postgres-hourly", "shop/orders-nightly"]),
        // ledger/rbac.yml.
        ("rbac.authorization.k8s.io/v1", "Role", &["ledger/migrator"]),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", &["ledger/migrator"]),
        // telemetry/policies.yaml.
        ("autoscaling/v2", "HorizontalPodAutoscaler", &["telemetry/aggregator"]),
        ("policy/v1", "PodDisruptionBudget", &["telemetry/aggregator"]),
        ("networking.k8s.io/v1", "NetworkPolicy", &["telemetry/allow-otlp", "telemetry/default-deny-ingress"]),
    ];
    rows.iter()
        .map(|(api_version, kind, keys)| {
            (((*api_version).to_owned(), (*kind).to_owned()), keys.iter().map(|k| (*k).to_owned()).collect())
        })
        .collect()
}

#[tokio::test]
async fn a_realistic_folder_holds_what_kubectl_apply_would_create() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    copy_tree(fixture(), dir.path());
    let mut warnings: Vec<String> = src.rescan().unwrap().iter().map(ToString::to_string).collect();
    warnings.sort();
    let root = dir.path().display();
    assert_eq!(
        warnings,
        [
            format!(
                "{root}/00-cluster/rbac.yaml: document 3 (ClusterRole shop/tenant-viewer): ClusterRole is cluster-scoped; \
                 its namespace `shop` is ignored"
            ),
            format!(
                "{root}/00-cluster/tenants.yaml: document 2 (Tenant ledger/finance): Tenant is cluster-scoped; its \
                 namespace `ledger` is ignored"
            ),
        ]
    );

    let served = served(&src).await;
    let keys: BTreeMap<(String, String), BTreeSet<String>> =
        served.iter().map(|(kind, objects)| (kind.clone(), objects.keys().cloned().collect())).collect();
    let expected = expected();
    for (kind, want) in &expected {
        assert_eq!(keys.get(kind), Some(want), "{kind:?}");
    }
    assert_eq!(keys, expected, "no other kinds");
    assert_eq!(keys.values().map(BTreeSet::len).sum::<usize>(), 51);

    // Every object has a uid of its own.
    let uids: BTreeSet<&str> =
        served.values().flat_map(|o| o.values()).filter_map(|o| o["metadata"]["uid"].as_str()).collect();
    assert_eq!(uids.len(), 51);

    // The merge key of telemetry/collector.yaml is applied; the alias of shop/web.yaml too.
    let agent = &served[&("apps/v1".to_owned(), "DaemonSet".to_owned())]["telemetry/node-agent"];
    assert_eq!(
        agent["spec"]["template"]["spec"]["containers"][1]["resources"],
        serde_json::json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})
    );
    let web = &served[&("apps/v1".to_owned(), "Deployment".to_owned())]["shop/web"];
    assert_eq!(web["spec"]["selector"]["matchLabels"]["app.kubernetes.io/part-of"], "shop");
    // The SQL's indented `---` stays in the ConfigMap.
    let init = &served[&("v1".to_owned(), "ConfigMap".to_owned())]["ledger/postgres-init"];
    assert!(init["data"]["01-schema.sql"].as_str().unwrap().ends_with("follows, indented:\n---\n"), "{init}");
}

//! Controllers that act: plugins writing to the embedded cluster through `wink:plugin/cluster`.
//!
//! Specifies that:
//! - the reloader (a Rust plugin) annotates a Deployment's pod template with the hash of the
//!   ConfigMaps it names, rolls it out again when one changes, records an Event each time,
//!   and stops there: its own write, which it watches, makes no further write;
//! - a plugin whose manifest grants no write is refused before any request, and the object
//!   stays as it was;
//! - namespace-defaults (a Python reconciler) gives a team's Namespace its ResourceQuota and
//!   RoleBinding, which it controls (a deleted quota comes back), leaves other Namespaces
//!   alone, and records a Warning Event when a write fails;
//! - the label auditor records a Warning Event on an object that lacks required labels, one
//!   per object however often it is audited (the host aggregates repeats).
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test controllers`.

use serde_json::Value;
use wink::cluster::{DeleteOptions, Request, Verb};
use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::wait::wait_for;

const HASH: &str = "reloader.wink.dev/config-hash";

fn deployment() -> String {
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {reloader.wink.dev/configmaps: web-settings}\nspec:\n  replicas: 2\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: web:1}]}\n".to_owned()
}

fn config_map(currency: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web-settings, namespace: shop}}\ndata: {{currency: {currency}}}\n"
    )
}

fn template_hash(host: &TestHost) -> Option<String> {
    let web = host.object("apps/v1", "Deployment", "shop/web")?;
    web.pointer("/spec/template/metadata/annotations")
        .and_then(|a| a.get(HASH))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn generation(host: &TestHost) -> i64 {
    host.object("apps/v1", "Deployment", "shop/web").and_then(|w| w["metadata"]["generation"].as_i64()).unwrap_or(0)
}

fn events(host: &TestHost) -> Vec<Value> {
    host.objects("events.k8s.io/v1", "Event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reloader_rolls_a_deployment_out_when_its_config_map_changes_and_stops_there() {
    let cluster = Cluster::new();
    cluster.write("web.yaml", &deployment());
    cluster.write("settings.yaml", &config_map("EUR"));
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("reloader", plugins.path(), "reloader", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    wait_for("the pod template to get the config hash", || template_hash(&host).is_some(), String::new).await;
    let first = template_hash(&host).unwrap();
    let rolled_out_once = generation(&host);

    cluster.write("settings.yaml", &config_map("USD"));
    wait_for(
        "a new hash after the ConfigMap changed",
        || template_hash(&host).is_some_and(|h| h != first),
        String::new,
    )
    .await;
    assert_eq!(generation(&host), rolled_out_once + 1, "one write per change: the plugin's own update made none");

    // A ConfigMap edit that changes nothing it hashes: the plugin runs, writes nothing.
    let second = template_hash(&host).unwrap();
    let calls = host.metrics("reloader").calls();
    cluster.write("settings.yaml", &format!("{}  # a comment\n", config_map("USD").trim_end()));
    cluster.write("other.yaml", &config_map("GBP").replace("web-settings", "unrelated"));
    wait_for("the plugin to see the unrelated ConfigMap", || host.metrics("reloader").calls() > calls, String::new)
        .await;
    assert_eq!(template_hash(&host).as_deref(), Some(second.as_str()));
    assert_eq!(generation(&host), rolled_out_once + 1, "no write without a change");

    let events = events(&host);
    let reloads: Vec<&Value> = events.iter().filter(|e| e["reason"] == "ConfigChanged").collect();
    assert_eq!(reloads.len(), 2, "one Event per write: {events:?}");
    for event in reloads {
        assert_eq!(event["regarding"]["name"], "web");
        assert_eq!(event["reportingController"], "reloader");
        assert_eq!(event["type"], "Normal");
    }
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_manifest_does_not_grant_is_refused_before_any_request() {
    let cluster = Cluster::new();
    cluster.write("web.yaml", &deployment());
    cluster.write("settings.yaml", &config_map("EUR"));
    let plugins = tempfile::tempdir().unwrap();
    // The same plugin, without its `permissions:`.
    let tail = wink_tests::reloader_reconcile(None);
    install_plugin("reloader", plugins.path(), "reloader", Some(&tail));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    wait_for("the refused write to fail the handler", || host.metrics("reloader").handler_errors().1 > 0, String::new)
        .await;
    assert_eq!(template_hash(&host), None, "the Deployment is unchanged");
    assert!(events(&host).is_empty());
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_label_auditor_records_a_warning_event_on_the_offending_object() {
    let cluster = Cluster::new();
    let pod = |labels: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: debug, namespace: shop, labels: {{{labels}}}}}\n")
    };
    cluster.write("debug.yaml", &pod("app: debug"));
    cluster.write(
        "ok.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: shop, labels: {app: a, team: t}}\n",
    );
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("label-auditor", plugins.path(), "label-auditor", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    wait_for("a Warning Event about shop/debug", || !events(&host).is_empty(), String::new).await;
    // Audited again (an edit that keeps the label missing): the same Event, counted.
    cluster.write("debug.yaml", &pod("app: debug, tier: tools"));
    let series = || events(&host).first().is_some_and(|e| e["series"]["count"] == 2);
    wait_for("the repeat to become a series of two", series, || format!("{:?}", events(&host))).await;
    let events = events(&host);
    assert_eq!(events.len(), 1, "one Event, counted: {events:?}");
    let event = &events[0];
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["reason"], "MissingLabels");
    assert_eq!(event["regarding"]["name"], "debug");
    assert_eq!(event["note"], "missing required labels: team");
    host.stop().await;
}

const NAMESPACES: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: payments, labels: {team: payments}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: scratch}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_defaults_gives_a_team_namespace_its_quota_and_role_binding() {
    let cluster = Cluster::new();
    cluster.write("namespaces.yaml", NAMESPACES);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("namespace-defaults", plugins.path(), "namespace-defaults", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    let binding = || host.object("rbac.authorization.k8s.io/v1", "RoleBinding", "payments/team-payments");
    wait_for("the RoleBinding of team payments", || binding().is_some(), String::new).await;
    let quota = host.object("v1", "ResourceQuota", "payments/team-defaults").expect("the quota comes first");
    assert_eq!(quota["spec"]["hard"]["pods"], "50");
    let binding = binding().unwrap();
    assert_eq!(binding["roleRef"]["name"], "edit");
    assert_eq!(binding["subjects"][0]["name"], "team-payments");
    assert_eq!(host.objects("v1", "ResourceQuota").len(), 1, "the Namespace without a team gets nothing");
    assert!(events(&host).is_empty());
    assert_eq!(quota["metadata"]["ownerReferences"][0]["kind"], "Namespace", "the Namespace controls its defaults");

    // A reconciler: the quota it owns deleted, its Namespace is reconciled and the quota is back.
    let first = quota["metadata"]["uid"].clone();
    let delete = Request::new(
        Verb::Delete(DeleteOptions::default()),
        "v1",
        "ResourceQuota",
        Some("payments".into()),
        "team-defaults",
    );
    host.client().execute_now(delete).expect("deleting the quota");
    wait_for(
        "the quota recreated",
        || host.object("v1", "ResourceQuota", "payments/team-defaults").is_some_and(|q| q["metadata"]["uid"] != first),
        String::new,
    )
    .await;
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_defaults_records_a_warning_event_when_a_write_fails() {
    let cluster = Cluster::new();
    cluster.write("namespaces.yaml", NAMESPACES);
    let plugins = tempfile::tempdir().unwrap();
    // Without the permission to write RoleBindings.
    let tail = "reconcile:\n  for: {apiVersion: v1, kind: Namespace}\npermissions:\n  - {apiGroups: [\"\"], resources: [resourcequotas], verbs: [get, create, update]}\n  - {apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}\nconfig: {quota: {pods: \"5\"}}\n";
    install_plugin("namespace-defaults", plugins.path(), "namespace-defaults", Some(tail));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    wait_for("a DefaultsFailed Event", || events(&host).iter().any(|e| e["reason"] == "DefaultsFailed"), String::new)
        .await;
    let event = events(&host).into_iter().find(|e| e["reason"] == "DefaultsFailed").unwrap();
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["regarding"]["kind"], "Namespace");
    assert!(event["note"].as_str().unwrap().contains("not-permitted"), "{event}");
    assert!(host.object("v1", "ResourceQuota", "payments/team-defaults").is_some(), "what it may write, it wrote");
    host.stop().await;
}

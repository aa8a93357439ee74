//! Reconcilers (`wink:plugin@0.4.0`'s `reconciler-plugin` world) over a cluster folder.
//!
//! Specifies that:
//! - `service-for-deployment` (a Python reconciler that owns Services) gives an annotated
//!   Deployment a Service it controls; deleting the Service (an event on an owned object)
//!   reconciles its owner, which recreates it; a change of the Deployment's ports updates
//!   it; a Deployment without the annotation gets none, and losing the annotation deletes it;
//! - `pdb-for-deployment` (a Rust reconciler written with the SDK's typed `Api`) gives every
//!   Deployment with two or more replicas a PodDisruptionBudget it controls, selecting its
//!   Pods; deleting or editing the budget reconciles its owner, which restores it; scaled
//!   below two, the Deployment loses it;
//! - a reconciler may enqueue another primary's key, which is then reconciled;
//! - a watched resource mapped by the plugin (`mapTo: {plugin: true}`) reconciles the keys
//!   its `map-to-keys` returns;
//! - a failing key is retried (with backoff) until it succeeds, while the other keys are
//!   reconciled meanwhile;
//! - the work queue is reported as controller-runtime's `workqueue_*` metrics.
//!
//! The work queue's own rules (never one key twice at once, once more after a change during
//! a reconcile, exponential backoff, the bucket) are specified in `host/src/workqueue`.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test reconcilers`.

use serde_json::Value;
use wink::cluster::{DeleteOptions, Request, Verb};
use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::wait::wait_for;

fn deployment(name: &str, expose: bool, ports: &str) -> String {
    let annotations = if expose { "{wink.dev/expose: \"true\"}" } else { "{}" };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations: {annotations}\n\
         spec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    \
         spec: {{containers: [{{name: {name}, image: {name}:1, ports: {ports}}}]}}\n"
    )
}

/// The ports of the Service `shop/<name>`, as `(name, port)`, if it exists.
fn service_ports(host: &TestHost, name: &str) -> Option<Vec<(String, i64)>> {
    let service = host.object("v1", "Service", &format!("shop/{name}"))?;
    let ports = service.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    Some(ports.iter().map(|p| (p["name"].as_str().unwrap_or("").to_owned(), p["port"].as_i64().unwrap_or(0))).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_for_deployment_keeps_an_owned_service_for_each_annotated_deployment() {
    service_scenario("service-for-deployment", None).await;
}

/// The same with two workers: two instances reconcile at once, never the same key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_for_deployment_with_two_workers_does_the_same() {
    let manifest = std::fs::read_to_string(wink_tests::plugin("service-for-deployment").join("plugin.yaml")).unwrap();
    let tail = manifest.split_once("component: service-for-deployment.wasm").unwrap().1;
    let tail = tail.split_once('\n').unwrap().1.replace("reconcile:\n", "reconcile:\n  workers: 2\n");
    assert!(tail.contains("workers: 2"), "{tail}");
    service_scenario("services-two-workers", Some(&tail)).await;
}

async fn service_scenario(name: &'static str, manifest_tail: Option<&str>) {
    let cluster = Cluster::new();
    cluster.write("web.yaml", &deployment("web", true, "[{containerPort: 8080}]"));
    cluster.write("api.yaml", &deployment("api", false, "[{containerPort: 9000}]"));
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("service-for-deployment", plugins.path(), name, manifest_tail);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    let plugin_logs = || logs().dump(name);

    wait_for("the Service of web", || service_ports(&host, "web").is_some(), plugin_logs).await;
    assert_eq!(service_ports(&host, "web").unwrap(), [("port-8080".to_owned(), 8080)]);
    let service = host.object("v1", "Service", "shop/web").unwrap();
    let web_uid = host.object("apps/v1", "Deployment", "shop/web").unwrap()["metadata"]["uid"].clone();
    let owner = &service["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["controller"].as_bool()), (Some("Deployment"), Some(true)));
    assert_eq!(owner["uid"], web_uid, "the Service is controlled by its Deployment");
    assert_eq!(service.pointer("/spec/selector/app").and_then(Value::as_str), Some("web"));

    // Deleted by someone: the event on the owned Service reconciles its Deployment.
    let first_uid = service["metadata"]["uid"].clone();
    let delete = Request::new(Verb::Delete(DeleteOptions::default()), "v1", "Service", Some("shop".into()), "web");
    host.client().execute_now(delete).expect("deleting the Service");
    wait_for(
        "the Service recreated",
        || host.object("v1", "Service", "shop/web").is_some_and(|s| s["metadata"]["uid"] != first_uid),
        plugin_logs,
    )
    .await;

    // The ports change: the Service follows.
    cluster
        .write("web.yaml", &deployment("web", true, "[{containerPort: 8080}, {containerPort: 9090, name: metrics}]"));
    let want = vec![("port-8080".to_owned(), 8080), ("metrics".to_owned(), 9090)];
    wait_for("the Service's ports updated", || service_ports(&host, "web") == Some(want.clone()), plugin_logs).await;

    // Not annotated: no Service; the annotation removed: the Service goes.
    assert_eq!(service_ports(&host, "api"), None, "{}", plugin_logs());
    cluster.write("web.yaml", &deployment("web", false, "[{containerPort: 8080}]"));
    wait_for("the Service deleted", || service_ports(&host, "web").is_none(), plugin_logs).await;

    let reasons = event_reasons(&host);
    assert!(
        reasons.contains(&"ServiceCreated".to_owned()) && reasons.contains(&"ServiceUpdated".to_owned()),
        "{reasons:?}"
    );
    assert_eq!(host.metrics(name).traps(), 0, "{}", plugin_logs());
    host.stop().await;
}

/// The reasons of the Events the embedded cluster holds.
fn event_reasons(host: &TestHost) -> Vec<String> {
    let events = host.objects("events.k8s.io/v1", "Event");
    events.iter().map(|e| e["reason"].as_str().unwrap_or_default().to_owned()).collect()
}

fn scaled(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: shop}}\n\
         spec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    \
         metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: {name}, image: {name}:1}}]}}\n"
    )
}

/// The budget `shop/<name>`, if it exists.
fn budget(host: &TestHost, name: &str) -> Option<Value> {
    host.object("policy/v1", "PodDisruptionBudget", &format!("shop/{name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_for_deployment_keeps_a_budget_for_each_replicated_deployment() {
    let cluster = Cluster::new();
    cluster.write("web.yaml", &scaled("web", 3));
    cluster.write("api.yaml", &scaled("api", 1));
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("pdb-for-deployment", plugins.path(), "pdb-for-deployment", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    let plugin_logs = || logs().dump("pdb-for-deployment");

    wait_for("the budget of web", || budget(&host, "web").is_some(), plugin_logs).await;
    let pdb = budget(&host, "web").unwrap();
    let web_uid = host.object("apps/v1", "Deployment", "shop/web").unwrap()["metadata"]["uid"].clone();
    let owner = &pdb["metadata"]["ownerReferences"][0];
    assert_eq!((owner["kind"].as_str(), owner["controller"].as_bool()), (Some("Deployment"), Some(true)));
    assert_eq!(owner["uid"], web_uid, "the budget is controlled by its Deployment");
    assert_eq!(pdb.pointer("/spec/selector/matchLabels/app").and_then(Value::as_str), Some("web"));
    assert_eq!(pdb.pointer("/spec/maxUnavailable").and_then(Value::as_i64), Some(1));
    assert_eq!(budget(&host, "api"), None, "one replica: no budget");

    // Deleted by someone: the event on the owned budget reconciles its Deployment.
    let first_uid = pdb["metadata"]["uid"].clone();
    let delete = Request::new(
        Verb::Delete(DeleteOptions::default()),
        "policy/v1",
        "PodDisruptionBudget",
        Some("shop".into()),
        "web",
    );
    host.client().execute_now(delete).expect("deleting the budget");
    wait_for(
        "the budget recreated",
        || budget(&host, "web").is_some_and(|b| b["metadata"]["uid"] != first_uid),
        plugin_logs,
    )
    .await;

    // Edited by someone: restored.
    let patch = Request::new(
        Verb::Patch(wink::cluster::PatchType::Merge),
        "policy/v1",
        "PodDisruptionBudget",
        Some("shop".into()),
        "web",
    )
    .with_body(r#"{"spec": {"maxUnavailable": 3}}"#.to_owned());
    host.client().execute_now(patch).expect("editing the budget");
    wait_for(
        "the budget restored",
        || budget(&host, "web").and_then(|b| b.pointer("/spec/maxUnavailable").and_then(Value::as_i64)) == Some(1),
        plugin_logs,
    )
    .await;

    // Scaled up: api gets one; scaled down: web loses its own.
    cluster.write("api.yaml", &scaled("api", 2));
    wait_for("the budget of api", || budget(&host, "api").is_some(), plugin_logs).await;
    cluster.write("web.yaml", &scaled("web", 1));
    wait_for("the budget of web deleted", || budget(&host, "web").is_none(), plugin_logs).await;

    // Its own writes come back to it as events on the owned budget, and find nothing to do.
    // (Each write is logged as its call returns, a moment after the store has it.)
    let writes = || {
        let count = |prefix: &str| lines("pdb-for-deployment", prefix).len();
        (count("created budget=shop/web"), count("updated budget=shop/web"), count("deleted budget=shop/web"))
    };
    let logged = || matches!(writes(), (c, u, d) if c >= 2 && u >= 1 && d >= 1);
    wait_for("web's writes logged", logged, plugin_logs).await;
    assert_eq!(writes(), (2, 1, 1), "no more writes than asked for: {}", plugin_logs());
    let reasons = event_reasons(&host);
    assert!(
        reasons.contains(&"BudgetCreated".to_owned()) && reasons.contains(&"BudgetUpdated".to_owned()),
        "{reasons:?}"
    );
    assert_eq!(host.metrics("pdb-for-deployment").traps(), 0, "{}", plugin_logs());
    host.stop().await;
}

fn config_map(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: probe}}\ndata: {data}\n")
}

/// The probe's log lines that start with `prefix`.
fn lines(plugin: &str, prefix: &str) -> Vec<String> {
    logs().guest_lines(plugin).into_iter().filter(|l| l.starts_with(prefix)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_enqueued_by_the_plugin_and_failures_retried_while_others_proceed_python() {
    probe_scenario("probes/reconcile-probe", "probe-python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_enqueued_by_the_plugin_and_failures_retried_while_others_proceed_rust() {
    probe_scenario("probes/reconcile-probe-rust", "probe-rust").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_enqueued_by_the_plugin_and_failures_retried_while_others_proceed_go() {
    probe_scenario("probes/reconcile-probe-go", "probe-go").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_enqueued_by_the_plugin_and_failures_retried_while_others_proceed_c() {
    probe_scenario("probes/reconcile-probe-c", "probe-c").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_enqueued_by_the_plugin_and_failures_retried_while_others_proceed_javascript() {
    probe_scenario("probes/reconcile-probe-js", "probe-javascript").await;
}

/// The probe scenario, run by the probe built at `built` deployed as `name`: the same
/// outcomes whatever language the reconciler is written in.
async fn probe_scenario(built: &str, name: &str) {
    let cluster = Cluster::new();
    // `a` enqueues a key no event would: a primary that does not exist (yet).
    cluster.write("a.yaml", &config_map("a", "{enqueue: elsewhere}"));
    cluster.write("b.yaml", &config_map("b", "{}"));
    cluster.write("c.yaml", &config_map("c", "{fail: \"3\"}"));
    let plugins = tempfile::tempdir().unwrap();
    install_plugin(built, plugins.path(), name, None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;

    wait_for(
        "c to recover after three failures",
        || !lines(name, "recovered key=probe/c").is_empty(),
        || logs().dump(name),
    )
    .await;
    let failures = lines(name, "fail key=probe/c");
    assert_eq!(failures, ["fail key=probe/c attempt=1", "fail key=probe/c attempt=2", "fail key=probe/c attempt=3"]);
    assert_eq!(lines(name, "enqueued other="), ["enqueued other=probe/elsewhere"]);
    wait_for(
        "the enqueued key reconciled",
        || !lines(name, "gone key=probe/elsewhere").is_empty(),
        || logs().dump(name),
    )
    .await;
    // The other keys did not wait for c's backoff: both were reconciled before c recovered.
    let all = logs().guest_lines(name);
    let recovered = all.iter().position(|l| l == "recovered key=probe/c").unwrap();
    for key in ["probe/a", "probe/b"] {
        let first = all.iter().position(|l| *l == format!("reconcile key={key}")).unwrap();
        assert!(first < recovered, "{key} waited for c: {all:?}");
    }

    // A Secret maps (by the plugin's own map-to-keys) to the ConfigMap it names.
    let before = lines(name, "reconcile key=probe/b").len();
    cluster.write(
        "s.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: probe, annotations: {probe/for: b}}\n",
    );
    wait_for(
        "b reconciled for the Secret",
        || lines(name, "reconcile key=probe/b").len() > before,
        || logs().dump(name),
    )
    .await;
    assert_eq!(lines(name, "map secret=")[0], "map secret=probe/s to=probe/b");

    // A deleted primary is reconciled once more, and finds it gone.
    cluster.remove("a.yaml");
    wait_for("a reconciled after its deletion", || !lines(name, "gone key=probe/a").is_empty(), || logs().dump(name))
        .await;

    let metrics = host.prometheus_text();
    let series = |family: &str| {
        let label = format!("{family}{{name=\"{name}\",controller=\"{name}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&label)).and_then(|v| v.parse::<f64>().ok())
    };
    assert!(series("workqueue_adds_total").is_some_and(|adds| adds >= 5.0), "{metrics}");
    assert_eq!(series("workqueue_retries_total"), Some(3.0), "{metrics}");
    assert_eq!(series("workqueue_depth"), Some(0.0), "{metrics}");
    assert!(series("workqueue_longest_running_processor_seconds").is_some(), "{metrics}");
    assert!(metrics.contains(&format!("workqueue_work_duration_seconds_count{{name=\"{name}\"")), "{metrics}");
    host.stop().await;
}

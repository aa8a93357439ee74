//! The API server's rules on the embedded cluster: each request kind and each error, against
//! a directory source.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::cluster::{DeleteOptions, PatchType, Request, RequestError, Subresource, Verb};
use crate::source::DirSource;

/// A cluster of `files`, plus the namespace `shop` that the tests write into.
fn cluster(files: &[(&str, &str)]) -> (tempfile::TempDir, Arc<DirSource>, EmbeddedClient) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("namespace.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
        .unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let source = DirSource::open(dir.path()).unwrap();
    let client = EmbeddedClient::new(source.clone());
    (dir, source, client)
}

fn request(
    verb: Verb,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: &str,
    body: serde_json::Value,
) -> Request {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    Request::new(verb, api_version, kind, ns.map(str::to_owned), name).with_body(body)
}

async fn run(client: &EmbeddedClient, request: Request) -> Result<Option<Object>, RequestError> {
    client.execute(request, None).await
}

fn config_map(name: &str, data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}, "data": data})
}

const DEPLOYMENT: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 1}\n";

#[tokio::test]
async fn create_assigns_identity_and_refuses_a_second_object_of_the_same_name() {
    let (_dir, _source, client) = cluster(&[]);
    let create =
        || request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", config_map("settings", json!({"a": "1"})));
    let created = run(&client, create()).await.unwrap().unwrap();
    assert!(!created.uid().is_empty());
    assert!(!created.resource_version().is_empty());
    assert!(created.to_value().unwrap()["metadata"]["creationTimestamp"].is_string());
    let err = run(&client, create()).await.unwrap_err();
    assert_eq!(err, RequestError::AlreadyExists("configmaps \"settings\" already exists".into()));
    let got = run(&client, request(Verb::Get, "v1", "ConfigMap", Some("shop"), "settings", json!(null))).await.unwrap();
    assert_eq!(got.unwrap().uid(), created.uid());
}

#[tokio::test]
async fn generate_name_makes_a_name_and_a_missing_name_is_invalid() {
    let (_dir, _source, client) = cluster(&[]);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-"}});
    let created =
        run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", body)).await.unwrap().unwrap();
    assert!(created.name().starts_with("job-") && created.name().len() == 9, "{}", created.name());
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
    let err = run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", nameless)).await.unwrap_err();
    assert!(matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "metadata.name"), "{err:?}");
}

#[tokio::test]
async fn an_update_from_a_stale_version_is_a_conflict_and_one_that_changes_nothing_is_no_write() {
    let (_dir, _source, client) = cluster(&[]);
    let created =
        run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", config_map("s", json!({"a": "1"}))))
            .await
            .unwrap()
            .unwrap();
    let mut edit = created.to_value().unwrap();
    edit["data"]["a"] = "2".into();
    let updated =
        run(&client, request(Verb::Update, "v1", "ConfigMap", Some("shop"), "s", edit.clone())).await.unwrap().unwrap();
    assert_ne!(updated.resource_version(), created.resource_version());
    // `edit` still carries the first resourceVersion.
    edit["data"]["a"] = "3".into();
    let err = run(&client, request(Verb::Update, "v1", "ConfigMap", Some("shop"), "s", edit)).await.unwrap_err();
    assert!(matches!(&err, RequestError::Conflict(m) if m.contains("the object has been modified")), "{err:?}");
    let same = run(&client, request(Verb::Update, "v1", "ConfigMap", Some("shop"), "s", updated.to_value().unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(same.resource_version(), updated.resource_version(), "no change, no new version");
}

#[tokio::test]
async fn status_is_its_own_subresource_and_generation_follows_the_spec() {
    let (_dir, _source, client) = cluster(&[("d.yaml", DEPLOYMENT)]);
    let get = || request(Verb::Get, "apps/v1", "Deployment", Some("shop"), "web", json!(null));
    let live = run(&client, get()).await.unwrap().unwrap().to_value().unwrap();
    let mut status = live.clone();
    status["status"] = json!({"readyReplicas": 1});
    status["spec"]["replicas"] = 5.into();
    let mut req = request(Verb::Update, "apps/v1", "Deployment", Some("shop"), "web", status);
    req.subresource = Some(Subresource::Status);
    let after = run(&client, req).await.unwrap().unwrap().to_value().unwrap();
    assert_eq!(after["status"]["readyReplicas"], 1);
    assert_eq!(after["spec"]["replicas"], 1, "a status update changes only the status");
    let generation = after["metadata"]["generation"].as_i64();
    let mut spec = after.clone();
    spec["spec"]["replicas"] = 3.into();
    spec["status"] = json!({"readyReplicas": 99});
    let after =
        run(&client, request(Verb::Update, "apps/v1", "Deployment", Some("shop"), "web", spec)).await.unwrap().unwrap();
    let after = after.to_value().unwrap();
    assert_eq!(after["spec"]["replicas"], 3);
    assert_eq!(after["status"]["readyReplicas"], 1, "an update of the object ignores its status");
    assert_eq!(after["metadata"]["generation"].as_i64(), Some(generation.unwrap_or(0) + 1));
}

#[tokio::test]
async fn patches_merge_json_and_refuse_strategic_merge_on_custom_resources() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.acme.io}\nspec:\n  group: acme.io\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true}]\n---\napiVersion: acme.io/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\nspec: {size: 1}\n";
    let (_dir, _source, client) = cluster(&[("d.yaml", DEPLOYMENT), ("w.yaml", crd)]);
    let patch = |t: PatchType, body: serde_json::Value| (Verb::Patch(t), body);
    let (verb, body) = patch(PatchType::Merge, json!({"metadata": {"annotations": {"a": "b"}}}));
    let patched =
        run(&client, request(verb, "apps/v1", "Deployment", Some("shop"), "web", body)).await.unwrap().unwrap();
    assert_eq!(patched.meta().annotations.get("a"), Some("b"));
    let (verb, body) = patch(PatchType::Json, json!([{"op": "test", "path": "/spec/replicas", "value": 7}]));
    let err = run(&client, request(verb, "apps/v1", "Deployment", Some("shop"), "web", body)).await.unwrap_err();
    assert!(matches!(err, RequestError::Invalid { .. }), "{err:?}");
    let (verb, body) = patch(PatchType::StrategicMerge, json!({"spec": {"size": 2}}));
    let err = run(&client, request(verb, "acme.io/v1", "Widget", Some("shop"), "w", body)).await.unwrap_err();
    assert!(matches!(&err, RequestError::BadRequest(m) if m.contains("application/merge-patch+json")), "{err:?}");
}

#[tokio::test]
async fn a_delete_waits_for_finalizers_and_the_last_one_removed_deletes() {
    let (_dir, source, client) = cluster(&[]);
    let mut body = config_map("held", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/hold"]);
    run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", body)).await.unwrap();
    let pending = run(
        &client,
        request(Verb::Delete(DeleteOptions::default()), "v1", "ConfigMap", Some("shop"), "held", json!(null)),
    )
    .await
    .unwrap()
    .expect("the object stays while finalizers run");
    assert!(pending.meta().deletion_timestamp.is_some());
    let mut release = pending.to_value().unwrap();
    release["metadata"]["finalizers"] = json!([]);
    let gone = run(&client, request(Verb::Update, "v1", "ConfigMap", Some("shop"), "held", release)).await.unwrap();
    assert!(gone.is_none(), "removing the last finalizer deletes the object");
    assert!(source.store("v1", "ConfigMap").get("shop/held").is_none());
    let err = run(
        &client,
        request(Verb::Delete(DeleteOptions::default()), "v1", "ConfigMap", Some("shop"), "held", json!(null)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RequestError::NotFound(_)));
}

#[tokio::test]
async fn delete_preconditions_are_checked() {
    let (_dir, _source, client) = cluster(&[]);
    run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", config_map("c", json!({})))).await.unwrap();
    let preconditions = crate::cluster::Preconditions { uid: Some("not-its-uid".into()), resource_version: None };
    let options = DeleteOptions { preconditions, ..DeleteOptions::default() };
    let err = run(&client, request(Verb::Delete(options), "v1", "ConfigMap", Some("shop"), "c", json!(null)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RequestError::Conflict(m) if m.contains("Precondition failed: UID in precondition")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_file_edit_wins_but_keeps_the_status_and_uid_plugins_wrote() {
    let (dir, source, client) = cluster(&[("d.yaml", DEPLOYMENT)]);
    let live = run(&client, request(Verb::Get, "apps/v1", "Deployment", Some("shop"), "web", json!(null)))
        .await
        .unwrap()
        .unwrap();
    let mut status = live.to_value().unwrap();
    status["status"] = json!({"observedGeneration": 1});
    let mut req = request(Verb::Update, "apps/v1", "Deployment", Some("shop"), "web", status);
    req.subresource = Some(Subresource::Status);
    run(&client, req).await.unwrap();
    std::fs::write(dir.path().join("d.yaml"), DEPLOYMENT.replace("replicas: 1", "replicas: 4")).unwrap();
    source.rescan().unwrap();
    let after = source.store("apps/v1", "Deployment").get("shop/web").unwrap().to_value().unwrap();
    assert_eq!(after["spec"]["replicas"], 4, "the file's change applies");
    assert_eq!(after["status"]["observedGeneration"], 1, "the plugin's status stays");
    assert_eq!(after["metadata"]["uid"], live.uid());
}

#[tokio::test]
async fn unknown_kinds_and_missing_namespaces_are_refused() {
    let (_dir, _source, client) = cluster(&[]);
    let err = client.resolve("acme.io/v1", "Gadget").await.unwrap_err();
    assert!(matches!(err, RequestError::NotFound(_)));
    let err = run(&client, request(Verb::Get, "v1", "ConfigMap", None, "x", json!(null))).await.unwrap_err();
    assert!(matches!(&err, RequestError::BadRequest(m) if m.contains("needs a namespace")), "{err:?}");
    let info = client.resolve("networking.k8s.io/v1", "NetworkPolicy").await.unwrap();
    assert_eq!(
        (info.group.as_str(), info.plural.as_str(), info.namespaced),
        ("networking.k8s.io", "networkpolicies", true)
    );
}

/// A CustomResourceDefinition created through the API (kubectl apply on `--serve-api`) is
/// established and serves its kind at once, as the folder's do: its objects can be created and listed, and
/// discovery lists it; deleting the definition stops serving it.
#[tokio::test]
async fn a_definition_created_through_the_api_serves_its_kind() {
    use crate::embedded::http::ServedCluster;
    let (_dir, source, client) = cluster(&[]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]},
    });
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "shop"}});
    let create_widget = || request(Verb::Create, "example.com/v1", "Widget", Some("shop"), "", widget.clone());
    assert!(run(&client, create_widget()).await.is_err(), "no such kind yet");
    let crds = "apiextensions.k8s.io/v1";
    let created = run(&client, request(Verb::Create, crds, "CustomResourceDefinition", None, "", crd)).await.unwrap();
    // Established at once, as `kubectl wait --for=condition=Established` expects.
    let status = created.unwrap().to_value().unwrap()["status"].clone();
    assert_eq!(status["conditions"][1]["type"], "Established");
    assert_eq!(status["conditions"][1]["status"], "True");
    run(&client, create_widget()).await.unwrap();
    assert!(
        source
            .served()
            .iter()
            .any(|s| s.def.kind == "Widget" && s.def.has_api_version("example.com/v1") && s.def.namespaced)
    );
    let gone = DeleteOptions::default();
    run(
        &client,
        request(Verb::Delete(gone), crds, "CustomResourceDefinition", None, "widgets.example.com", json!(null)),
    )
    .await
    .unwrap();
    assert!(!source.served().iter().any(|s| s.def.kind == "Widget"));
}

/// Discovery lists the built-in kinds a current API server serves, at each stable version
/// of their group: not PodSecurityPolicy (removed in 1.25), whose scope the table keeps for old
/// manifests.
#[tokio::test]
async fn discovery_lists_no_removed_kind() {
    use crate::embedded::http::ServedCluster;
    let (_dir, source, _client) = cluster(&[]);
    let served = source.served();
    assert!(served.iter().any(|s| s.def.kind == "PodDisruptionBudget" && s.def.has_api_version("policy/v1")));
    assert!(!served.iter().any(|s| s.def.kind == "PodSecurityPolicy"), "{served:?}");
    // Both stable autoscaling versions, the preferred (v2) first, as a 1.23+ server.
    let hpa: Vec<String> =
        served.iter().filter(|s| s.def.kind == "HorizontalPodAutoscaler").map(|s| s.def.api_version()).collect();
    assert_eq!(hpa, ["autoscaling/v2", "autoscaling/v1"]);
    let why = crate::kube::versions::unknown_kind("policy/v1", "PodSecurityPolicy");
    assert_eq!(
        why.as_deref(),
        Some("PodSecurityPolicy was removed in Kubernetes 1.25: no current API server serves it")
    );
}

/// A dry run (`dryRun=All`) is decided by the same rules and answers what would be stored,
/// but stores nothing: a create, a patch and a delete leave the object as it was, and a dry
/// run that breaks a rule fails as the write would.
#[tokio::test]
async fn a_dry_run_decides_but_stores_nothing() {
    let (_dir, source, client) = cluster(&[]);
    let create = || request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", config_map("c", json!({"a": "1"})));
    let dry = run(&client, create().with_dry_run(true)).await.unwrap().unwrap();
    assert_eq!(dry.to_value().unwrap()["data"], json!({"a": "1"}));
    assert!(source.objects("v1", "ConfigMap").is_empty(), "a dry-run create stores nothing");
    run(&client, create()).await.unwrap();
    let patch =
        request(Verb::Patch(PatchType::Merge), "v1", "ConfigMap", Some("shop"), "c", json!({"data": {"a": "2"}}));
    let patched = run(&client, patch.with_dry_run(true)).await.unwrap().unwrap();
    assert_eq!(patched.to_value().unwrap()["data"], json!({"a": "2"}));
    let delete = request(Verb::Delete(DeleteOptions::default()), "v1", "ConfigMap", Some("shop"), "c", json!(null));
    run(&client, delete.with_dry_run(true)).await.unwrap();
    let stored = source.objects("v1", "ConfigMap");
    assert_eq!(stored.len(), 1, "a dry-run delete removes nothing");
    assert_eq!(stored[0].to_value().unwrap()["data"], json!({"a": "1"}), "a dry-run patch changes nothing");
    assert!(run(&client, create().with_dry_run(true)).await.is_err(), "already exists, dry run or not");
}

#[path = "client_limits_tests.rs"]
mod limits;

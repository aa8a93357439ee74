//! Plugins' requests to a real API server go through the kube client ([`KubeClient`]): here
//! against wink's own `--serve-api` endpoint, so every request crosses HTTP as it would to a
//! cluster. Specifies that each request kind reaches the server and each API error comes back
//! typed: create, get, update from a stale version (conflict), merge and JSON patches,
//! status updates, delete, already-exists, not-found, invalid, and an unknown kind; and that
//! a controller (the reloader) runs on a kube source, its informers and its writes both
//! going through that API server; and that with a `serviceAccount` its writes are made as
//! that account (impersonation), refused by the server's RBAC until a RoleBinding grants
//! them. On the tests' API server (the same endpoint with a request log): a write wink's own
//! check refuses never reaches the server, and Leases are renewed with optimistic
//! concurrency.

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wink::cluster::{
    ClusterClient, DeleteOptions, Identity, KubeClient, PatchType, Request, RequestError, Subresource, Verb,
};
use wink::embedded::http::serve_api;
use wink::informer::InformerConfig;
use wink::source::{DirSource, KubeSource};
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::wait::wait_for;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_kind_and_error_crosses_the_kube_client() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 1}\n",
    )
    .unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let (addr, _task) = serve_api("127.0.0.1:0".parse().unwrap(), source.clone(), cancel.clone()).await.unwrap();
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let client = KubeClient::new(config).unwrap();

    let info = client.resolve("apps/v1", "Deployment").await.unwrap();
    assert_eq!((info.plural.as_str(), info.namespaced), ("deployments", true));
    let err = client.resolve("acme.io/v1", "Gadget").await.unwrap_err();
    assert!(matches!(err, RequestError::NotFound(_)), "{err:?}");

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"}, "data": {"a": "1"}});
    let created = client
        .execute(request(Verb::Create, "v1", "ConfigMap", Some("shop"), "c", cm.clone()), None)
        .await
        .unwrap()
        .unwrap();
    assert!(!created.uid().is_empty());
    let err = client.execute(request(Verb::Create, "v1", "ConfigMap", Some("shop"), "c", cm), None).await.unwrap_err();
    assert!(matches!(err, RequestError::AlreadyExists(_)), "{err:?}");

    let mut edit = created.to_value().unwrap();
    edit["data"]["a"] = "2".into();
    client.execute(request(Verb::Update, "v1", "ConfigMap", Some("shop"), "c", edit.clone()), None).await.unwrap();
    edit["data"]["a"] = "3".into();
    let err =
        client.execute(request(Verb::Update, "v1", "ConfigMap", Some("shop"), "c", edit), None).await.unwrap_err();
    assert!(matches!(&err, RequestError::Conflict(m) if m.contains("modified")), "a stale update: {err:?}");

    let merged = client
        .execute(
            request(Verb::Patch(PatchType::Merge), "v1", "ConfigMap", Some("shop"), "c", json!({"data": {"b": "x"}})),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(merged.to_value().unwrap()["data"], json!({"a": "2", "b": "x"}));
    let failed_test = json!([{"op": "test", "path": "/data/a", "value": "nope"}]);
    let err = client
        .execute(request(Verb::Patch(PatchType::Json), "v1", "ConfigMap", Some("shop"), "c", failed_test), None)
        .await
        .unwrap_err();
    assert!(matches!(err, RequestError::Invalid { .. }), "{err:?}");

    let web = client
        .execute(request(Verb::Get, "apps/v1", "Deployment", Some("shop"), "web", json!(null)), None)
        .await
        .unwrap()
        .unwrap();
    let mut status = web.to_value().unwrap();
    status["status"] = json!({"readyReplicas": 1});
    let mut update_status = request(Verb::Update, "apps/v1", "Deployment", Some("shop"), "web", status);
    update_status.subresource = Some(Subresource::Status);
    let after = client.execute(update_status, None).await.unwrap().unwrap();
    assert_eq!(after.to_value().unwrap()["status"]["readyReplicas"], 1);

    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "shop"}});
    let err =
        client.execute(request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", nameless), None).await.unwrap_err();
    assert!(matches!(&err, RequestError::Invalid { causes, .. } if !causes.is_empty()), "{err:?}");

    let gone = client
        .execute(
            request(Verb::Delete(DeleteOptions::default()), "v1", "ConfigMap", Some("shop"), "c", json!(null)),
            None,
        )
        .await
        .unwrap();
    assert!(gone.is_none(), "deleted at once: no finalizers");
    let err =
        client.execute(request(Verb::Get, "v1", "ConfigMap", Some("shop"), "c", json!(null)), None).await.unwrap_err();
    assert!(matches!(err, RequestError::NotFound(_)), "{err:?}");
    assert!(source.objects("v1", "ConfigMap").is_empty());

    // As a service account no binding names: the server's RBAC refuses, as a real one does.
    let nobody = Identity::service_account("team-a", "nobody");
    let err = client
        .execute(request(Verb::Get, "apps/v1", "Deployment", Some("shop"), "web", json!(null)), Some(&nobody))
        .await
        .unwrap_err();
    let expected = "deployments \"web\" is forbidden: User \"system:serviceaccount:team-a:nobody\" cannot get resource \"deployments\" in API group \"apps\" in the namespace \"shop\"";
    assert_eq!(err, RequestError::Forbidden(expected.into()));
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_on_a_kube_source_writes_through_the_kube_client() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {reloader.wink.dev/configmaps: settings}\nspec:\n  replicas: 1\n  template: {metadata: {labels: {app: web}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {currency: EUR}\n",
    )
    .unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let (addr, _task) = serve_api("127.0.0.1:0".parse().unwrap(), source.clone(), cancel.clone()).await.unwrap();
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let cluster: std::sync::Arc<dyn wink::cluster::ClusterClient> =
        std::sync::Arc::new(KubeClient::new(config.clone()).unwrap());
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("reloader", plugins.path(), "reloader", None);
    let kube = KubeSource::from_config(config).unwrap();
    let host = TestHost::start_kube_with(kube, InformerConfig::default(), plugins.path(), Some(cluster)).await;
    let hash = || {
        let web = source.objects("apps/v1", "Deployment").into_iter().next()?.to_value().ok()?;
        web.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash")?.as_str().map(str::to_owned)
    };
    wait_for("the reloader's patch, through the kube client", || hash().is_some(), String::new).await;
    host.stop().await;
    cancel.cancel();
}

const RELOADER_AS_ACCOUNT: &str = "reconcile:\n  for: {apiVersion: apps/v1, kind: Deployment}\n  watches:\n    - {apiVersion: v1, kind: ConfigMap, mapTo: {plugin: true}}\npermissions:\n  - {apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}\nserviceAccount: team-a/reloader\n";

const GRANT: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reloader, namespace: shop}\nrules:\n  - {apiGroups: [apps], resources: [deployments], verbs: [patch]}\n  - {apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: reloader, namespace: shop}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reloader}\nsubjects:\n  - {kind: ServiceAccount, name: reloader, namespace: team-a}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_acting_as_its_service_account_is_held_to_the_servers_rbac() {
    let dir = tempfile::tempdir().unwrap();
    let objects = |currency: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {{reloader.wink.dev/configmaps: settings}}\nspec:\n  replicas: 1\n  template: {{metadata: {{labels: {{app: web}}}}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: shop}}\ndata: {{currency: {currency}}}\n"
        )
    };
    std::fs::write(dir.path().join("web.yaml"), objects("EUR")).unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let (addr, _task) = serve_api("127.0.0.1:0".parse().unwrap(), source.clone(), cancel.clone()).await.unwrap();
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let cluster: std::sync::Arc<dyn wink::cluster::ClusterClient> =
        std::sync::Arc::new(KubeClient::new(config.clone()).unwrap());
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("reloader", plugins.path(), "reloader", Some(RELOADER_AS_ACCOUNT));
    let kube = KubeSource::from_config(config).unwrap();
    let host = TestHost::start_kube_with(kube, InformerConfig::default(), plugins.path(), Some(cluster)).await;
    let hash = || {
        let web = source.objects("apps/v1", "Deployment").into_iter().next()?.to_value().ok()?;
        web.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash")?.as_str().map(str::to_owned)
    };
    // wink's own check lets everything through; the server's RBAC does not.
    wait_for("the write to be refused by RBAC", || host.metrics("reloader").handler_errors().1 > 0, String::new).await;
    assert_eq!(hash(), None, "nothing was written");

    // A RoleBinding for the service account, and a change to react to.
    std::fs::write(dir.path().join("rbac.yaml"), GRANT).unwrap();
    std::fs::write(dir.path().join("web.yaml"), objects("USD")).unwrap();
    source.rescan().unwrap();
    wait_for("the write, now allowed", || hash().is_some(), String::new).await;
    host.stop().await;
    cancel.cancel();
}

/// On the tests' API server (the same endpoint, with a request log): a write wink's own
/// permission check refuses never leaves the process, while the granted one arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_manifest_does_not_grant_never_reaches_the_server() {
    use wink_tests::apiserver::{ApiServer, Verb as Seen};
    let server = ApiServer::start().await.unwrap();
    server
        .apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "annotations": {"reloader.wink.dev/configmaps": "settings"}},
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}}}}))
        .unwrap();
    server
        .apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop"},
            "data": {"currency": "EUR"}}))
        .unwrap();
    let config = kube::Config::new(server.url().parse().unwrap());
    let cluster: std::sync::Arc<dyn wink::cluster::ClusterClient> =
        std::sync::Arc::new(KubeClient::new(config.clone()).unwrap());
    let plugins = tempfile::tempdir().unwrap();
    // The reloader without its `permissions:`.
    let tail = wink_tests::reloader_reconcile(None);
    install_plugin("reloader", plugins.path(), "reloader", Some(&tail));
    let kube = KubeSource::from_config(config).unwrap();
    let host = TestHost::start_kube_with(kube, InformerConfig::default(), plugins.path(), Some(cluster)).await;
    wait_for("the refused write to fail the handler", || host.metrics("reloader").handler_errors().1 > 0, String::new)
        .await;
    assert!(!server.requests_of(Seen::List).is_empty(), "the informers did reach the server");
    assert_eq!(server.requests_of(Seen::Write), [], "no write left the process");
    let web = server.get("apps/v1", "Deployment", "shop/web").unwrap();
    assert_eq!(web.pointer("/spec/template/metadata/annotations"), None);
    host.stop().await;
}

/// The tests' API server takes writes with the API server's rules, Leases included: create,
/// a renewal at the version read, and a stale renewal refused as a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_created_and_renewed_with_optimistic_concurrency() {
    let server = wink_tests::apiserver::ApiServer::start().await.unwrap();
    let client = KubeClient::new(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "member-a", "namespace": "wink"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00.000000Z"}});
    let create = request(Verb::Create, "coordination.k8s.io/v1", "Lease", Some("wink"), "member-a", lease.clone());
    let created = client.execute(create, None).await.unwrap().unwrap();
    let mut renewed = created.to_value().unwrap();
    renewed["spec"]["renewTime"] = json!("2026-01-01T00:00:05.000000Z");
    let update = request(Verb::Update, "coordination.k8s.io/v1", "Lease", Some("wink"), "member-a", renewed.clone());
    let after = client.execute(update, None).await.unwrap().unwrap();
    assert_ne!(after.resource_version(), created.resource_version());
    // A replica renewing from the version it read before: refused.
    let stale = request(Verb::Update, "coordination.k8s.io/v1", "Lease", Some("wink"), "member-a", renewed);
    let err = client.execute(stale, None).await.unwrap_err();
    assert!(matches!(err, RequestError::Conflict(_)), "{err:?}");
    let stored = server.get("coordination.k8s.io/v1", "Lease", "wink/member-a").unwrap();
    assert_eq!(stored["spec"]["renewTime"], "2026-01-01T00:00:05.000000Z");
}

//! The endpoint's answers to writes, request by request over the router: every way a dry
//! run is asked stores nothing, and each answer has the shape kube-apiserver gives it.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::super::test_support::{endpoint, send};

const CONFIGMAPS: &str = "/api/v1/namespaces/shop/configmaps";

fn settings(currency: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"currency": currency}})
}

/// An endpoint holding the ConfigMap `shop/settings` with currency EUR.
async fn with_settings() -> axum::Router {
    let app = endpoint();
    let (status, _) = send(&app, "POST", CONFIGMAPS, "application/json", Some(settings("EUR"))).await;
    assert_eq!(status, StatusCode::CREATED);
    app
}

async fn stored_currency(app: &axum::Router) -> Option<String> {
    let (status, body) = send(app, "GET", &format!("{CONFIGMAPS}/settings"), "", None).await;
    (status == StatusCode::OK).then(|| body["data"]["currency"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn a_dry_run_create_answers_the_object_and_stores_nothing() {
    let app = endpoint();
    let (status, answer) =
        send(&app, "POST", &format!("{CONFIGMAPS}?dryRun=All"), "application/json", Some(settings("EUR"))).await;
    assert_eq!((status, answer["metadata"]["name"].as_str()), (StatusCode::CREATED, Some("settings")));
    assert_eq!(stored_currency(&app).await, None);
}

#[tokio::test]
async fn a_dry_run_update_answers_the_change_and_stores_nothing() {
    let app = with_settings().await;
    let uri = format!("{CONFIGMAPS}/settings?dryRun=All");
    let (status, answer) = send(&app, "PUT", &uri, "application/json", Some(settings("USD"))).await;
    assert_eq!((status, &answer["data"]["currency"]), (StatusCode::OK, &json!("USD")));
    assert_eq!(stored_currency(&app).await.as_deref(), Some("EUR"));
}

#[tokio::test]
async fn a_dry_run_patch_and_apply_answer_the_change_and_store_nothing() {
    let app = with_settings().await;
    let uri = format!("{CONFIGMAPS}/settings?dryRun=All");
    let patch = json!({"data": {"currency": "JPY"}});
    let (status, answer) = send(&app, "PATCH", &uri, "application/merge-patch+json", Some(patch)).await;
    assert_eq!((status, &answer["data"]["currency"]), (StatusCode::OK, &json!("JPY")));
    let apply = format!("{CONFIGMAPS}/settings?dryRun=All&fieldManager=me&force=true");
    let (status, answer) = send(&app, "PATCH", &apply, "application/apply-patch+yaml", Some(settings("GBP"))).await;
    assert_eq!((status, &answer["data"]["currency"]), (StatusCode::OK, &json!("GBP")));
    assert_eq!(stored_currency(&app).await.as_deref(), Some("EUR"));
}

#[tokio::test]
async fn a_dry_run_delete_by_query_keeps_the_object() {
    let app = with_settings().await;
    let (status, answer) = send(&app, "DELETE", &format!("{CONFIGMAPS}/settings?dryRun=All"), "", None).await;
    assert_eq!((status, &answer["status"]), (StatusCode::OK, &json!("Success")));
    assert_eq!(stored_currency(&app).await.as_deref(), Some("EUR"));
}

/// The data-loss bug this guards: `kubectl delete --dry-run=server` sends `dryRun` in the
/// DeleteOptions body, which was ignored, so the object was deleted.
#[tokio::test]
async fn a_dry_run_delete_by_delete_options_keeps_the_object() {
    let app = with_settings().await;
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]});
    let (status, answer) =
        send(&app, "DELETE", &format!("{CONFIGMAPS}/settings"), "application/json", Some(options)).await;
    assert_eq!((status, &answer["status"]), (StatusCode::OK, &json!("Success")));
    assert_eq!(stored_currency(&app).await.as_deref(), Some("EUR"));
}

#[tokio::test]
async fn delete_preconditions_that_do_not_hold_answer_409_and_keep_the_object() {
    let app = with_settings().await;
    let path = format!("{CONFIGMAPS}/settings");
    for preconditions in [json!({"uid": "not-its-uid"}), json!({"resourceVersion": "1"})] {
        let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": preconditions});
        let (status, answer) = send(&app, "DELETE", &path, "application/json", Some(options)).await;
        assert_eq!((status, &answer["reason"]), (StatusCode::CONFLICT, &json!("Conflict")), "{answer}");
    }
    assert_eq!(stored_currency(&app).await.as_deref(), Some("EUR"));
}

#[tokio::test]
async fn a_delete_that_removes_a_configmap_answers_a_status_with_its_uid() {
    let app = with_settings().await;
    let (_, stored) = send(&app, "GET", &format!("{CONFIGMAPS}/settings"), "", None).await;
    let (status, answer) = send(&app, "DELETE", &format!("{CONFIGMAPS}/settings"), "", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "settings", "kind": "configmaps", "uid": stored["metadata"]["uid"]}})
    );
    assert_eq!(stored_currency(&app).await, None);
}

#[tokio::test]
async fn a_delete_that_removes_a_pod_answers_the_pod() {
    let app = endpoint();
    let pods = "/api/v1/namespaces/shop/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"},
                     "spec": {"containers": [{"name": "main", "image": "busybox"}]}});
    assert_eq!(send(&app, "POST", pods, "application/json", Some(pod)).await.0, StatusCode::CREATED);
    let (status, answer) = send(&app, "DELETE", &format!("{pods}/solo"), "", None).await;
    assert_eq!((status, &answer["kind"], &answer["metadata"]["name"]), (StatusCode::OK, &json!("Pod"), &json!("solo")));
}

/// Operators remove their finalizer from an object being deleted and decode the answer as
/// the object: it must be the object, not a Status.
#[tokio::test]
async fn removing_the_last_finalizer_of_an_object_being_deleted_answers_the_object() {
    let app = endpoint();
    let mut kept = settings("EUR");
    kept["metadata"]["finalizers"] = json!(["example.com/keep"]);
    assert_eq!(send(&app, "POST", CONFIGMAPS, "application/json", Some(kept)).await.0, StatusCode::CREATED);
    let path = format!("{CONFIGMAPS}/settings");
    let (status, marked) = send(&app, "DELETE", &path, "", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{marked}");
    let release = json!({"metadata": {"finalizers": null}});
    let (status, answer) = send(&app, "PATCH", &path, "application/merge-patch+json", Some(release)).await;
    assert_eq!(
        (status, &answer["kind"], &answer["metadata"]["name"]),
        (StatusCode::OK, &json!("ConfigMap"), &json!("settings"))
    );
    assert_eq!(stored_currency(&app).await, None, "the object is gone");
}

//! Specifications of the scale subresource.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::embedded::http::test_support::{endpoint, send};

const WEB: &str = "/apis/apps/v1/namespaces/shop/deployments/web";

async fn with_web() -> axum::Router {
    let app = endpoint();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "c"}]}}},
    });
    let (status, _) =
        send(&app, "POST", "/apis/apps/v1/namespaces/shop/deployments", "application/json", Some(deployment)).await;
    assert_eq!(status, StatusCode::CREATED);
    app
}

async fn replicas(app: &axum::Router) -> Value {
    send(app, "GET", WEB, "", None).await.1["spec"]["replicas"].clone()
}

#[tokio::test]
async fn a_deployment_reads_as_a_scale() {
    let app = with_web().await;
    let (status, scale) = send(&app, "GET", &format!("{WEB}/scale"), "", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["metadata"]["name"], "web");
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"], json!({"replicas": 0, "selector": "app=web"}));
}

#[tokio::test]
async fn a_put_and_each_patch_type_set_the_replicas() {
    let app = with_web().await;
    let scale =
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
    let (status, answer) = send(&app, "PUT", &format!("{WEB}/scale"), "application/json", Some(scale)).await;
    assert_eq!((status, answer["spec"]["replicas"].clone()), (StatusCode::OK, json!(3)));
    assert_eq!(replicas(&app).await, 3);
    let generation = send(&app, "GET", WEB, "", None).await.1["metadata"]["generation"].clone();
    assert_eq!(generation, 2, "a new desired state is a new generation");
    for (content_type, body, expected) in [
        ("application/merge-patch+json", json!({"spec": {"replicas": 4}}), 4),
        ("application/strategic-merge-patch+json", json!({"spec": {"replicas": 5}}), 5),
        ("application/json-patch+json", json!([{"op": "replace", "path": "/spec/replicas", "value": 6}]), 6),
    ] {
        let (status, _) = send(&app, "PATCH", &format!("{WEB}/scale"), content_type, Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{content_type}");
        assert_eq!(replicas(&app).await, expected, "{content_type}");
    }
}

#[tokio::test]
async fn a_dry_run_scale_changes_nothing() {
    let app = with_web().await;
    let uri = format!("{WEB}/scale?dryRun=All");
    let (status, answer) =
        send(&app, "PATCH", &uri, "application/merge-patch+json", Some(json!({"spec": {"replicas": 9}}))).await;
    assert_eq!((status, answer["spec"]["replicas"].clone()), (StatusCode::OK, json!(9)));
    assert_eq!(replicas(&app).await, 1);
}

#[tokio::test]
async fn a_stale_resource_version_conflicts_and_negative_replicas_are_invalid() {
    let app = with_web().await;
    let stale = json!({"metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 2}});
    let (status, answer) = send(&app, "PUT", &format!("{WEB}/scale"), "application/json", Some(stale)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let negative = json!({"metadata": {"name": "web"}, "spec": {"replicas": -1}});
    let (status, answer) = send(&app, "PUT", &format!("{WEB}/scale"), "application/json", Some(negative)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["details"]["causes"][0]["field"], "spec.replicas");
    let renamed = json!({"metadata": {"name": "api"}, "spec": {"replicas": 2}});
    let (status, _) = send(&app, "PUT", &format!("{WEB}/scale"), "application/json", Some(renamed)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(replicas(&app).await, 1);
}

#[tokio::test]
async fn kinds_without_a_scale_and_missing_objects_are_not_found() {
    let app = with_web().await;
    let (status, _) = send(&app, "GET", "/api/v1/namespaces/shop/configmaps/c/scale", "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(&app, "GET", "/apis/apps/v1/namespaces/shop/deployments/nothing/scale", "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn discovery_lists_the_scale_subresource() {
    let app = endpoint();
    let (_, apps) = send(&app, "GET", "/apis/apps/v1", "", None).await;
    let scale = apps["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").cloned();
    let scale = scale.expect("deployments/scale listed");
    assert_eq!((scale["group"].clone(), scale["kind"].clone()), (json!("autoscaling"), json!("Scale")));
    let (_, core) = send(&app, "GET", "/api/v1", "", None).await;
    assert!(core["resources"].as_array().unwrap().iter().all(|r| r["name"] != "configmaps/scale"));
}

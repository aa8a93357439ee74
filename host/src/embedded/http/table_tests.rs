//! Specifications of Table answers: negotiation by `Accept`, lists and single objects,
//! `includeObject`, and custom resources' columns.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::embedded::http::test_support::{endpoint, send, send_with};

const TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

async fn with_configmaps() -> axum::Router {
    let app = endpoint();
    for (name, data) in [("a", json!({"k": "1"})), ("b", json!({"k": "1", "l": "2"}))] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
        let (status, _) = send(&app, "POST", "/api/v1/namespaces/shop/configmaps", "application/json", Some(cm)).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    app
}

fn names(table: &Value) -> Vec<String> {
    table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_list_asked_as_a_table_is_one_row_per_object_with_its_metadata() {
    let app = with_configmaps().await;
    let (status, table) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps", &[("accept", TABLE)], None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((table["kind"].clone(), table["apiVersion"].clone()), (json!("Table"), json!("meta.k8s.io/v1")));
    assert_eq!(names(&table), ["Name", "Data", "Age"]);
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["cells"].as_array().unwrap()[..2], [json!("b"), json!(2)]);
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(rows[0]["object"]["metadata"]["name"], "a");
    assert!(rows[0]["object"].get("data").is_none());
    assert!(table["metadata"]["resourceVersion"].is_string());
}

#[tokio::test]
async fn include_object_and_a_single_object() {
    let app = with_configmaps().await;
    let (_, whole) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps?includeObject=Object", &[("accept", TABLE)], None)
            .await;
    assert_eq!(whole["rows"][0]["object"]["data"], json!({"k": "1"}));
    let (_, bare) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps?includeObject=None", &[("accept", TABLE)], None)
            .await;
    assert!(bare["rows"][0].get("object").is_none());
    let (status, _) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps?includeObject=All", &[("accept", TABLE)], None)
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, one) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps/b", &[("accept", TABLE)], None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);
    let (status, _) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps/zzz", &[("accept", TABLE)], None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn plain_json_first_or_only_is_answered_as_objects() {
    let app = with_configmaps().await;
    let (_, list) =
        send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps", &[("accept", "application/json")], None).await;
    assert_eq!(list["kind"], "ConfigMapList");
    let accept = "application/json, application/json;as=Table;v=v1;g=meta.k8s.io";
    let (_, list) = send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps", &[("accept", accept)], None).await;
    assert_eq!(list["kind"], "ConfigMapList", "the first acceptable type wins");
    let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
    let (_, table) = send_with(&app, "GET", "/api/v1/namespaces/shop/configmaps", &[("accept", beta)], None).await;
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1beta1");
}

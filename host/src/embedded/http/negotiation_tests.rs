//! Protobuf bodies over the router: what a protobuf client (kubectl from 1.32, client-go)
//! sends is stored as its JSON would be, and what it asks for comes back in protobuf.

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::super::protobuf::{MEDIA_TYPE, WATCH_MEDIA_TYPE, answer_body, request_json};
use super::super::test_support::{endpoint, send};

/// What client-go asks for.
const PREFERS_PROTOBUF: &str = "application/vnd.kubernetes.protobuf,application/json";

const CONFIGMAPS: &str = "/api/v1/namespaces/shop/configmaps";

/// Sends one request; the status, the answer's media type and its body.
async fn send_bytes(
    app: &axum::Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (StatusCode, String, Bytes) {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app.clone().oneshot(request.body(Body::from(body)).unwrap()).await.unwrap();
    let status = response.status();
    let media_type = response.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, media_type.unwrap_or_default(), bytes)
}

fn protobuf_of(json: Value) -> Vec<u8> {
    answer_body(&json).unwrap()
}

fn json_of(protobuf: &[u8]) -> Value {
    serde_json::from_slice(&request_json(protobuf, "", "").unwrap()).unwrap()
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}, "binaryData": {"bin": "AAE="}})
}

#[tokio::test]
async fn a_protobuf_create_is_stored_as_its_json_and_answered_in_json_unless_asked() {
    let app = endpoint();
    let namespace = include_bytes!("protobuf/fixtures/namespace.pb").to_vec();
    let (status, media_type, body) =
        send_bytes(&app, "POST", "/api/v1/namespaces", &[("content-type", MEDIA_TYPE)], namespace).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::CREATED, "application/json"), "{body:?}");
    let (status, stored) = send(&app, "GET", "/api/v1/namespaces/x", "", None).await;
    assert_eq!((status, &stored["metadata"]["name"]), (StatusCode::OK, &json!("x")));
}

#[tokio::test]
async fn a_client_that_prefers_protobuf_is_answered_in_protobuf() {
    let app = endpoint();
    let headers = [("content-type", MEDIA_TYPE), ("accept", PREFERS_PROTOBUF)];
    let (status, media_type, body) = send_bytes(&app, "POST", CONFIGMAPS, &headers, protobuf_of(config_map("c"))).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::CREATED, MEDIA_TYPE));
    let created = json_of(&body);
    assert_eq!((&created["data"], &created["binaryData"]), (&json!({"a": "b"}), &json!({"bin": "AAE="})));
    assert!(created["metadata"]["uid"].is_string(), "{created}");
    // A list, and a Status.
    let accept = [("accept", PREFERS_PROTOBUF)];
    let (status, media_type, body) = send_bytes(&app, "GET", CONFIGMAPS, &accept, Vec::new()).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::OK, MEDIA_TYPE));
    let list = json_of(&body);
    assert_eq!((&list["kind"], &list["items"][0]["metadata"]["name"]), (&json!("ConfigMapList"), &json!("c")));
    let (status, media_type, body) =
        send_bytes(&app, "GET", &format!("{CONFIGMAPS}/missing"), &accept, Vec::new()).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::NOT_FOUND, MEDIA_TYPE));
    assert_eq!(json_of(&body)["reason"], "NotFound");
    // A client that prefers JSON gets JSON.
    let accept = [("accept", "application/json, application/vnd.kubernetes.protobuf")];
    let (_, media_type, _) = send_bytes(&app, "GET", CONFIGMAPS, &accept, Vec::new()).await;
    assert_eq!(media_type, "application/json");
}

#[tokio::test]
async fn a_protobuf_delete_options_dry_run_keeps_the_object() {
    let app = endpoint();
    let (status, _) = send(&app, "POST", CONFIGMAPS, "application/json", Some(config_map("c"))).await;
    assert_eq!(status, StatusCode::CREATED);
    let options = protobuf_of(json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "dryRun": ["All"]}));
    let uri = format!("{CONFIGMAPS}/c");
    let (status, _, body) = send_bytes(&app, "DELETE", &uri, &[("content-type", MEDIA_TYPE)], options).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    let (status, _) = send(&app, "GET", &uri, "", None).await;
    assert_eq!(status, StatusCode::OK, "a dry run deleted the object");
}

#[tokio::test]
async fn a_protobuf_review_is_answered() {
    let app = endpoint();
    let review = include_bytes!("protobuf/fixtures/selfsubjectaccessreview.pb").to_vec();
    let headers = [("content-type", MEDIA_TYPE), ("accept", PREFERS_PROTOBUF)];
    let uri = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (status, media_type, body) = send_bytes(&app, "POST", uri, &headers, review).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::CREATED, MEDIA_TYPE));
    let answered = json_of(&body);
    assert_eq!(answered["status"]["allowed"], true, "{answered}");
    assert_eq!(answered["spec"]["resourceAttributes"]["resource"], "pods");
}

#[tokio::test]
async fn a_protobuf_body_that_is_not_one_is_a_bad_request() {
    let app = endpoint();
    let (status, _, _) =
        send_bytes(&app, "POST", CONFIGMAPS, &[("content-type", MEDIA_TYPE)], b"{\"kind\":\"ConfigMap\"}".to_vec())
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_custom_resource_in_protobuf_is_refused_as_unsupported() {
    let app = endpoint();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (status, _) = send(&app, "POST", uri, "application/json", Some(crd)).await;
    assert_eq!(status, StatusCode::CREATED);
    let widgets = "/apis/example.com/v1/namespaces/shop/widgets";
    let (status, _, body) = send_bytes(&app, "POST", widgets, &[("content-type", MEDIA_TYPE)], b"k8s\0".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body:?}");
    // And answered in JSON, whatever the client prefers.
    let (status, media_type, _) = send_bytes(&app, "GET", widgets, &[("accept", PREFERS_PROTOBUF)], Vec::new()).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::OK, "application/json"));
}

#[tokio::test]
async fn a_watch_in_protobuf_frames_each_event() {
    let app = endpoint();
    let (status, _) = send(&app, "POST", CONFIGMAPS, "application/json", Some(config_map("c"))).await;
    assert_eq!(status, StatusCode::CREATED);
    let uri = format!("{CONFIGMAPS}?watch=true&timeoutSeconds=1");
    let (status, media_type, body) = send_bytes(&app, "GET", &uri, &[("accept", PREFERS_PROTOBUF)], Vec::new()).await;
    assert_eq!((status, media_type.as_str()), (StatusCode::OK, WATCH_MEDIA_TYPE));
    let length = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
    let event = &body[4..4 + length];
    // WatchEvent: field 1 the type, field 2 the object (a RawExtension whose raw is field 1).
    assert!(event.windows(5).any(|w| w == b"ADDED"), "{event:?}");
    let sealed = event.windows(4).position(|w| w == b"k8s\0").unwrap();
    assert_eq!(json_of(&event[sealed..])["metadata"]["name"], "c");
}

//! `/openapi/v2` and `/openapi/v3` over an in-memory cluster, with a CustomResourceDefinition
//! created through the API.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use prost_reflect::{DynamicMessage, ReflectMessage as _};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::gnostic::document_descriptor;
use crate::embedded::http::test_support::{endpoint, send};

fn widgets() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "description": "What the widget should be.",
                    "properties": {"size": {"type": "integer", "description": "How big."}}}}
            }}}]
        }
    })
}

async fn create_widgets(app: &axum::Router) {
    let uri = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (status, body) = send(app, "POST", uri, "application/json", Some(widgets())).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// GETs `uri` with `accept`; the status and the body's bytes.
async fn get_bytes(app: &axum::Router, uri: &str, accept: &str) -> (StatusCode, Vec<u8>) {
    let request = Request::builder().uri(uri).header("accept", accept).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    (status, axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec())
}

/// kubectl reads each group-version's document from the URL the root gives.
#[tokio::test]
async fn the_v3_root_lists_every_served_group_version_a_crds_included() {
    let app = endpoint();
    create_widgets(&app).await;
    let (status, root) = send(&app, "GET", "/openapi/v3", "", None).await;
    assert_eq!(status, StatusCode::OK);
    for path in ["api/v1", "apis/apps/v1", "apis/batch/v1", "apis/example.com/v1"] {
        let url = root["paths"][path]["serverRelativeURL"].as_str().unwrap_or_else(|| panic!("{path}: {root}"));
        assert!(url.starts_with(&format!("/openapi/v3/{path}?hash=")), "{url}");
        let (status, document) = send(&app, "GET", url, "", None).await;
        assert_eq!(status, StatusCode::OK, "{url}");
        assert!(document["paths"].is_object(), "kubectl refuses a document without paths: {url}");
    }
}

/// `kubectl explain deployment` finds the schema by its kind.
#[tokio::test]
async fn a_v3_group_version_document_has_the_built_in_kinds_with_their_kind() {
    let (status, document) = send(&endpoint(), "GET", "/openapi/v3/apis/apps/v1", "", None).await;
    assert_eq!(status, StatusCode::OK);
    let deployment = &document["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let spec = &document["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"];
    assert!(spec["properties"]["replicas"]["description"].as_str().is_some_and(|d| d.contains("desired pods")));
    let (status, _) = send(&endpoint(), "GET", "/openapi/v3/apis/nothing.example/v1", "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The embedded cluster does not refuse unknown fields: no PATCH may list
/// `fieldValidation`, or kubectl would leave validation to the server.
#[tokio::test]
async fn no_patch_operation_offers_field_validation() {
    let app = endpoint();
    let (_, document) = send(&app, "GET", "/openapi/v3/apis/apps/v1", "", None).await;
    let patch = &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    let names: Vec<&str> = patch["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"dryRun") && !names.contains(&"fieldValidation"), "{names:?}");
    let (_, v2) = send(&app, "GET", "/openapi/v2", "", None).await;
    let text = v2["paths"].to_string();
    assert!(text.contains("dryRun") && !text.contains("fieldValidation"));
}

/// A CustomResourceDefinition created through the API is in the documents from then on.
#[tokio::test]
async fn a_crd_created_at_run_time_gets_its_schemas() {
    let app = endpoint();
    let (status, _) = send(&app, "GET", "/openapi/v3/apis/example.com/v1", "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    create_widgets(&app).await;
    let (status, document) = send(&app, "GET", "/openapi/v3/apis/example.com/v1", "", None).await;
    assert_eq!(status, StatusCode::OK);
    let schemas = &document["components"]["schemas"];
    let widget = &schemas["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(widget["properties"]["spec"]["properties"]["size"]["description"], "How big.");
    let meta = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    assert_eq!(widget["properties"]["metadata"]["allOf"][0]["$ref"], meta);
    for referred in ["ObjectMeta", "ListMeta", "ManagedFieldsEntry", "Time"] {
        let name = format!("io.k8s.apimachinery.pkg.apis.meta.v1.{referred}");
        assert!(schemas[&name].is_object(), "{name} is missing");
    }
    assert_eq!(schemas["com.example.v1.WidgetList"]["x-kubernetes-group-version-kind"][0]["kind"], "WidgetList");
    let (_, v2) = send(&app, "GET", "/openapi/v2", "", None).await;
    assert_eq!(v2["definitions"]["com.example.v1.Widget"]["properties"]["spec"]["type"], "object");
}

/// client-go's `OpenAPISchema()` reads only gnostic's protobuf; kubectl finds kinds by the
/// `x-kubernetes-group-version-kind` extension of the definitions.
#[tokio::test]
async fn v2_protobuf_decodes_to_a_document_with_built_in_and_custom_definitions() {
    let app = endpoint();
    create_widgets(&app).await;
    let (status, bytes) = get_bytes(&app, "/openapi/v2", super::V2_PROTOBUF_DEPRECATED).await;
    assert_eq!(status, StatusCode::OK);
    let document = DynamicMessage::decode(document_descriptor().unwrap(), bytes.as_slice()).unwrap();
    assert_eq!(document.get_field_by_name("swagger").unwrap().as_str(), Some("2.0"));
    let definitions = document.get_field_by_name("definitions").unwrap();
    let entries = definitions.as_message().unwrap().get_field_by_name("additional_properties").unwrap();
    let named: Vec<DynamicMessage> =
        entries.as_list().unwrap().iter().map(|e| e.as_message().unwrap().clone()).collect();
    let find = |name: &str| {
        named
            .iter()
            .find(|e| e.get_field_by_name("name").unwrap().as_str() == Some(name))
            .map(|e| e.get_field_by_name("value").unwrap().as_message().unwrap().clone())
    };
    for (name, kind) in [("io.k8s.api.apps.v1.Deployment", "Deployment"), ("com.example.v1.Widget", "Widget")] {
        let schema = find(name).unwrap_or_else(|| panic!("{name} is not among the definitions"));
        assert_eq!(schema.descriptor().name(), "Schema");
        let extensions = schema.get_field_by_name("vendor_extension").unwrap();
        let gvk = extensions
            .as_list()
            .unwrap()
            .iter()
            .map(|e| e.as_message().unwrap())
            .find(|e| e.get_field_by_name("name").unwrap().as_str() == Some("x-kubernetes-group-version-kind"))
            .unwrap_or_else(|| panic!("{name} has no kind"));
        let any = gvk.get_field_by_name("value").unwrap();
        let yaml = any.as_message().unwrap().get_field_by_name("yaml").unwrap();
        let parsed: Value = serde_norway::from_str(yaml.as_str().unwrap()).unwrap();
        assert_eq!(parsed[0]["kind"], kind, "{yaml:?}");
    }
    let (_, json) = get_bytes(&app, "/openapi/v2", "application/json").await;
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert!(json["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
}

/// As kube-openapi's handler: the first media range that admits a form picks it; the
/// protobuf form, asked for by either name, is answered by the one Go's `mime` parses (an
/// `@` is not a token character: client-go fails on it); no form admitted is 406.
#[tokio::test]
async fn v2_forms_follow_the_accept_header() {
    let app = endpoint();
    let content_type = |accept: Option<&str>| {
        let app = app.clone();
        let accept = accept.map(str::to_owned);
        async move {
            let mut request = Request::builder().uri("/openapi/v2");
            if let Some(accept) = accept {
                request = request.header("accept", accept);
            }
            let response = app.oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
            let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
            (response.status(), kind.unwrap_or_default())
        }
    };
    let protobuf = (StatusCode::OK, super::V2_PROTOBUF.to_owned());
    let json = (StatusCode::OK, "application/json".to_owned());
    assert_eq!(content_type(Some(super::V2_PROTOBUF_DEPRECATED)).await, protobuf);
    assert_eq!(content_type(Some(super::V2_PROTOBUF)).await, protobuf);
    assert!(!super::V2_PROTOBUF.contains('@'));
    assert_eq!(content_type(Some("application/json, */*")).await, json);
    assert_eq!(content_type(Some("*/*")).await, json);
    assert_eq!(content_type(None).await, json);
    let both = format!("application/json;q=0.5, {}", super::V2_PROTOBUF);
    assert_eq!(content_type(Some(&both)).await, protobuf);
    assert_eq!(content_type(Some("text/html")).await.0, StatusCode::NOT_ACCEPTABLE);
}

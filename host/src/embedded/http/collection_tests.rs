use axum::http::StatusCode;
use serde_json::{Value, json};

use super::super::test_support::{endpoint, send, send_with};

const CONFIGMAPS: &str = "/api/v1/namespaces/shop/configmaps";

fn labelled(name: &str, app: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}})
}

/// An endpoint holding ConfigMaps `a` and `b` labelled `app=web`, `c` labelled `app=db`.
async fn three() -> axum::Router {
    let app = endpoint();
    for (name, label) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let (status, _) = send(&app, "POST", CONFIGMAPS, "application/json", Some(labelled(name, label))).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    app
}

async fn names(app: &axum::Router) -> Vec<String> {
    let (_, list) = send(app, "GET", CONFIGMAPS, "", None).await;
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()).collect()
}

fn item_names(list: &Value) -> Vec<&str> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn deleting_a_collection_deletes_what_its_selector_picks_and_answers_the_list() {
    let app = three().await;
    let (status, list) = send(&app, "DELETE", &format!("{CONFIGMAPS}?labelSelector=app%3Dweb"), "", None).await;
    assert_eq!((status, &list["kind"]), (StatusCode::OK, &json!("ConfigMapList")));
    assert_eq!(item_names(&list), ["a", "b"]);
    assert_eq!(names(&app).await, ["c"]);
    let (_, list) = send(&app, "DELETE", &format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Dc"), "", None).await;
    assert_eq!(item_names(&list), ["c"]);
    assert!(names(&app).await.is_empty());
}

#[tokio::test]
async fn a_dry_run_collection_delete_deletes_nothing() {
    let app = three().await;
    let (status, list) = send(&app, "DELETE", &format!("{CONFIGMAPS}?dryRun=All"), "", None).await;
    assert_eq!((status, item_names(&list).len()), (StatusCode::OK, 3));
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]});
    let (status, _) = send(&app, "DELETE", CONFIGMAPS, "application/json", Some(options)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&app).await, ["a", "b", "c"]);
}

#[tokio::test]
async fn deleting_a_collection_needs_the_deletecollection_verb() {
    let app = three().await;
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "deleter"},
                      "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete", "list"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "deleter"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deleter"},
                         "subjects": [{"kind": "User", "name": "ann"}]});
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/shop";
    send(&app, "POST", &format!("{rbac}/roles"), "application/json", Some(role)).await;
    send(&app, "POST", &format!("{rbac}/rolebindings"), "application/json", Some(binding)).await;
    let (status, answer) = send_with(&app, "DELETE", CONFIGMAPS, &[("impersonate-user", "ann")], None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("cannot deletecollection"), "{answer}");
    assert_eq!(names(&app).await.len(), 3);
    let (status, _) = send_with(&app, "DELETE", &format!("{CONFIGMAPS}/a"), &[("impersonate-user", "ann")], None).await;
    assert_eq!(status, StatusCode::OK, "one object, with delete");
}

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::super::test_support::{endpoint, send, send_with};

const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const AS_READER: [(&str, &str); 2] = [("content-type", "application/json"), ("impersonate-user", "reader")];

fn can_i(verb: &str, resource: &str, namespace: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
           "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}}})
}

/// An endpoint where the user `reader` may get and list ConfigMaps in `shop`.
async fn with_reader() -> axum::Router {
    let app = endpoint();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
                      "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "reader"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                         "subjects": [{"kind": "User", "name": "reader"}]});
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/shop";
    assert_eq!(
        send(&app, "POST", &format!("{rbac}/roles"), "application/json", Some(role)).await.0,
        StatusCode::CREATED
    );
    let (status, _) = send(&app, "POST", &format!("{rbac}/rolebindings"), "application/json", Some(binding)).await;
    assert_eq!(status, StatusCode::CREATED);
    app
}

#[tokio::test]
async fn an_access_review_answers_by_the_requesters_rbac_and_is_not_stored() {
    let app = with_reader().await;
    let (status, review) = send_with(&app, "POST", SSAR, &AS_READER, Some(can_i("list", "configmaps", "shop"))).await;
    assert_eq!((status, &review["status"]["allowed"]), (StatusCode::CREATED, &json!(true)), "{review}");
    let (_, review) = send_with(&app, "POST", SSAR, &AS_READER, Some(can_i("delete", "configmaps", "shop"))).await;
    assert_eq!(review["status"]["allowed"], false, "{review}");
    assert!(review["status"].get("reason").is_none(), "a denial gives no reason, as RBAC's: {review}");
    let (_, review) = send_with(&app, "POST", SSAR, &AS_READER, Some(can_i("list", "configmaps", "elsewhere"))).await;
    assert_eq!(review["status"]["allowed"], false, "a Role binds in its namespace only: {review}");
    let (_, review) = send(&app, "POST", SSAR, "application/json", Some(can_i("delete", "nodes", ""))).await;
    assert_eq!(review["status"]["allowed"], true, "the operator may do everything: {review}");
    let (status, _) = send(&app, "GET", SSAR, "", None).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "a review is only created");
}

#[tokio::test]
async fn a_rules_review_lists_the_rules_bound_in_the_namespace() {
    let app = with_reader().await;
    let uri = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "shop"}});
    let (status, answer) = send_with(&app, "POST", uri, &AS_READER, Some(review)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        answer["status"]["resourceRules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}])
    );
}

#[tokio::test]
async fn a_self_subject_review_names_the_requester_and_a_token_review_authenticates_nothing() {
    let app = endpoint();
    let uri = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let headers = [("content-type", "application/json"), ("impersonate-user", "ann"), ("impersonate-group", "devs")];
    let (status, answer) = send_with(&app, "POST", uri, &headers, Some(review.clone())).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(answer["status"]["userInfo"], json!({"username": "ann", "groups": ["devs"]}));
    let (_, answer) = send(&app, "POST", uri, "application/json", Some(review)).await;
    assert_eq!(answer["status"]["userInfo"]["username"], "system:admin");

    let tokens = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "abc"}});
    let (status, answer) = send(&app, "POST", tokens, "application/json", Some(review)).await;
    assert_eq!((status, &answer["status"]["authenticated"]), (StatusCode::CREATED, &json!(false)));
}

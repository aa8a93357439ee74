//! Reviews: the kinds a client creates to ask the API server a question, answered in their
//! `status` and never stored (kube-apiserver's `authorization.k8s.io` and
//! `authentication.k8s.io` registries):
//!
//! - `SelfSubjectAccessReview` (`kubectl auth can-i VERB RESOURCE`): whether the requester
//!   may make a request, by the cluster's RBAC;
//! - `SelfSubjectRulesReview` (`kubectl auth can-i --list`): the rules that apply to the
//!   requester in a namespace;
//! - `SelfSubjectReview` (`kubectl auth whoami`): who the requester is;
//! - `TokenReview`: whether a bearer token is valid. The embedded cluster issues no tokens
//!   and authenticates none, so every token is unauthenticated.
//!
//! The requester is the user a request impersonates (`--as`); a request that impersonates no
//! one is the endpoint's operator's, which may do everything (the endpoint has no
//! authentication), as `system:admin` in `system:masters`.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::ServedCluster;
use super::discovery::Served;
use super::rbac::{self, User};
use super::status::{json_response, status_failure};
use crate::cluster::RequestError;
use crate::kube::Attributes;

/// The user name and groups of the endpoint's operator (a request impersonating no one).
const OPERATOR: (&str, &[&str]) = ("system:admin", &["system:masters", "system:authenticated"]);

/// The review kinds answered here: (apiVersion, kind).
const REVIEWS: [(&str, &str); 4] = [
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenReview"),
];

/// Whether `kind` is a review this module answers.
pub(super) fn is_review(kind: &Served) -> bool {
    REVIEWS.iter().any(|(api_version, name)| kind.def.api_version() == *api_version && kind.def.kind == *name)
}

/// The answer to `method` on the review kind `kind`, by `user` (none: the operator), with
/// the request's `body`. Only a create (POST) is served, as by kube-apiserver.
pub(super) fn answer(
    cluster: &dyn ServedCluster,
    user: Option<&User>,
    method: &axum::http::Method,
    kind: &Served,
    body: &[u8],
) -> Response {
    if method != axum::http::Method::POST {
        return status_failure(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
    }
    let mut review: Value = match serde_json::from_slice(body) {
        Ok(review @ Value::Object(_)) => review,
        _ => {
            let e = RequestError::BadRequest(format!("the body is not a {} in JSON", kind.def.kind));
            return super::status::failure(&e);
        }
    };
    let status = match kind.def.kind.as_str() {
        "SelfSubjectAccessReview" => access(cluster, user, &review["spec"]),
        "SelfSubjectRulesReview" => rules(cluster, user, &review["spec"]),
        "SelfSubjectReview" => json!({"userInfo": user_info(user)}),
        _ => json!({
            "authenticated": false,
            "user": {},
            "error": "the embedded cluster (wink --serve-api) issues no tokens and authenticates none",
        }),
    };
    review["apiVersion"] = json!(kind.def.api_version());
    review["kind"] = json!(kind.def.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = status;
    json_response(StatusCode::CREATED, &review)
}

fn user_info(user: Option<&User>) -> Value {
    match user {
        Some(user) => json!({"username": user.name, "groups": user.groups}),
        None => json!({"username": OPERATOR.0, "groups": OPERATOR.1}),
    }
}

/// A SelfSubjectAccessReview's status: `allowed`, and why.
fn access(cluster: &dyn ServedCluster, user: Option<&User>, spec: &Value) -> Value {
    // The operator is in `system:masters`, which kube-apiserver allows without a reason.
    let Some(user) = user else { return json!({"allowed": true}) };
    let attributes = &spec["resourceAttributes"];
    if !attributes.is_object() {
        // Non-resource URLs (`/healthz`, ...) are granted by no rule the embedded RBAC reads.
        return json!({"allowed": false});
    }
    let text = |field: &str| attributes[field].as_str().unwrap_or_default();
    let resource = match text("subresource") {
        "" => text("resource").to_owned(),
        sub => format!("{}/{sub}", text("resource")),
    };
    let namespace = Some(text("namespace")).filter(|ns| !ns.is_empty());
    let request =
        Attributes { group: text("group"), resource: &resource, verb: text("verb"), namespace, name: text("name") };
    match rbac::authorize(cluster, user, &request) {
        Ok(()) => json!({"allowed": true, "reason": "RBAC: allowed by the cluster's RBAC"}),
        // As kube-apiserver's RBAC authorizer, a denial gives no reason (kubectl prints `no`).
        Err(why) => {
            tracing::debug!(user = %user.name, %why, "an access review is denied");
            json!({"allowed": false})
        }
    }
}

/// A SelfSubjectRulesReview's status: the resource rules that apply in `spec.namespace`.
fn rules(cluster: &dyn ServedCluster, user: Option<&User>, spec: &Value) -> Value {
    let Some(user) = user else {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    };
    let namespace = spec["namespace"].as_str().filter(|ns| !ns.is_empty());
    let resource_rules: Vec<Value> = rbac::rules_for(cluster, user, namespace)
        .into_iter()
        .map(|rule| {
            let mut out = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources});
            if !rule.resource_names.is_empty() {
                out["resourceNames"] = json!(rule.resource_names);
            }
            out
        })
        .collect();
    json!({"resourceRules": resource_rules, "nonResourceRules": [], "incomplete": false})
}

#[cfg(test)]
#[path = "reviews_tests.rs"]
mod tests;

use axum::http::{HeaderValue, StatusCode, Uri, header};

use super::*;

fn query(q: &str) -> Query {
    Query::of(&format!("/api/v1/namespaces/a/configmaps/b?{q}").parse::<Uri>().unwrap())
}

fn json() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers
}

/// The bug this guards: `kubectl delete --dry-run=server` sends `dryRun` in the body, which
/// was ignored, so the dry run deleted.
#[test]
fn dry_run_in_the_body_is_a_dry_run() {
    let body = br#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}"#;
    assert!(delete_options(&json(), body, &query("")).unwrap().dry_run);
    assert!(delete_options(&HeaderMap::new(), body, &query("")).unwrap().dry_run, "a body without a type is JSON");
}

#[test]
fn dry_run_in_the_query_is_a_dry_run_when_there_is_no_body() {
    assert!(delete_options(&HeaderMap::new(), b"", &query("dryRun=All")).unwrap().dry_run);
    assert!(!delete_options(&HeaderMap::new(), b"", &query("")).unwrap().dry_run);
}

#[test]
fn a_body_is_read_instead_of_the_query_never_beside_it() {
    // kube-apiserver decodes the query only when the body is empty.
    let body = br#"{"propagationPolicy":"Orphan"}"#;
    let deletion = delete_options(&json(), body, &query("dryRun=All&gracePeriodSeconds=5")).unwrap();
    assert!(!deletion.dry_run);
    assert_eq!(deletion.options.grace_period_seconds, None);
    assert_eq!(deletion.options.propagation_policy, Some(PropagationPolicy::Orphan));
}

#[test]
fn every_field_of_the_body_is_read() {
    let body = br#"{"dryRun":["All"],"gracePeriodSeconds":0,"propagationPolicy":"Foreground",
                    "preconditions":{"uid":"u-1","resourceVersion":"42"}}"#;
    let deletion = delete_options(&json(), body, &query("")).unwrap();
    assert!(deletion.dry_run);
    assert_eq!(deletion.options.grace_period_seconds, Some(0));
    assert_eq!(deletion.options.propagation_policy, Some(PropagationPolicy::Foreground));
    assert_eq!(deletion.options.preconditions.uid.as_deref(), Some("u-1"));
    assert_eq!(deletion.options.preconditions.resource_version.as_deref(), Some("42"));
}

#[test]
fn every_option_of_the_query_is_read() {
    let deletion =
        delete_options(&HeaderMap::new(), b"", &query("gracePeriodSeconds=7&propagationPolicy=Background")).unwrap();
    assert_eq!(deletion.options.grace_period_seconds, Some(7));
    assert_eq!(deletion.options.propagation_policy, Some(PropagationPolicy::Background));
    let orphan = delete_options(&HeaderMap::new(), b"", &query("orphanDependents=true")).unwrap();
    assert_eq!(orphan.options.propagation_policy, Some(PropagationPolicy::Orphan));
    assert_eq!(orphan.orphan_dependents, Some(true));
    let bad = delete_options(&HeaderMap::new(), b"", &query("gracePeriodSeconds=soon")).unwrap_err();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

#[test]
fn options_are_validated_as_the_api_server_validates_them() {
    let invalid = |body: &[u8]| delete_options(&json(), body, &query("")).unwrap_err().status();
    assert_eq!(invalid(br#"{"dryRun":["Some"]}"#), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(invalid(br#"{"propagationPolicy":"Sideways"}"#), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(invalid(br#"{"propagationPolicy":"Orphan","orphanDependents":true}"#), StatusCode::UNPROCESSABLE_ENTITY);
    let query_policy = delete_options(&HeaderMap::new(), b"", &query("propagationPolicy=Sideways")).unwrap_err();
    assert_eq!(query_policy.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[test]
fn a_body_that_cannot_be_read_is_refused_not_ignored() {
    assert_eq!(delete_options(&json(), b"{not json", &query("")).unwrap_err().status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        delete_options(&json(), br#"{"dryRun":"All"}"#, &query("")).unwrap_err().status(),
        StatusCode::BAD_REQUEST
    );
    let mut protobuf = HeaderMap::new();
    protobuf.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/vnd.kubernetes.protobuf"));
    let refused = delete_options(&protobuf, b"k8s\x00...", &query("")).unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

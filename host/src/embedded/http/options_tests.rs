use axum::http::{HeaderValue, StatusCode, Uri};
use serde_json::Value;

use super::*;

pub(super) fn query(q: &str) -> Query {
    Query::of(&format!("/api/v1/namespaces/a/configmaps/b?{q}").parse::<Uri>().unwrap())
}

fn content(mime: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(mime).unwrap());
    headers
}

async fn body(refused: Refused) -> Value {
    let bytes = axum::body::to_bytes(refused.into_body(), usize::MAX).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn dry_run_is_asked_by_every_value_being_all() {
    assert!(!write_options(&Method::POST, &query(""), None).unwrap().dry_run);
    assert!(write_options(&Method::POST, &query("dryRun=All"), None).unwrap().dry_run);
    assert!(write_options(&Method::PUT, &query("dryRun=All&dryRun=All"), None).unwrap().dry_run);
    assert!(write_options(&Method::PATCH, &query("dryRun=All"), Some(&PatchType::Merge)).unwrap().dry_run);
}

#[tokio::test]
async fn a_dry_run_value_other_than_all_is_invalid_options_of_the_writes_kind() {
    let refused = write_options(&Method::PUT, &query("dryRun=All&dryRun=Some"), None).unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let status = body(refused).await;
    assert_eq!(
        status["message"],
        "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"All\",\"Some\"]: supported values: \"All\""
    );
    assert_eq!(status["details"]["causes"][0]["field"], "dryRun");
}

#[tokio::test]
async fn field_validation_takes_the_api_servers_values_only() {
    for value in ["Ignore", "Warn", "Strict", ""] {
        assert!(write_options(&Method::POST, &query(&format!("fieldValidation={value}")), None).is_ok(), "{value}");
    }
    let refused = write_options(&Method::POST, &query("fieldValidation=Loose"), None).unwrap_err();
    let status = body(refused).await;
    assert_eq!(status["details"]["causes"][0]["field"], "fieldValidation");
    assert_eq!(status["details"]["kind"], "CreateOptions");
}

#[tokio::test]
async fn a_field_manager_over_128_bytes_is_too_long_and_errors_are_all_listed() {
    let long = "m".repeat(129);
    let refused = write_options(&Method::POST, &query(&format!("fieldManager={long}&dryRun=No")), None).unwrap_err();
    let status = body(refused).await;
    let fields: Vec<&str> =
        status["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["fieldManager", "dryRun"]);
    assert!(status["message"].as_str().unwrap().contains(": [fieldManager: Too long"), "{status}");
}

#[test]
fn force_belongs_to_an_apply_only() {
    let refused = write_options(&Method::PATCH, &query("force=true"), Some(&PatchType::Merge)).unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let apply = PatchType::Apply { field_manager: "me".into(), force: true };
    assert!(write_options(&Method::PATCH, &query("force=true&fieldManager=me"), Some(&apply)).is_ok());
    assert!(write_options(&Method::POST, &query("force=true"), None).is_ok(), "a create has no force to check");
}

#[test]
fn a_patch_type_comes_from_the_content_type_and_an_apply_needs_a_manager() {
    assert_eq!(patch_type(&HeaderMap::new(), &query("")).unwrap(), PatchType::Merge);
    let strategic = content("application/strategic-merge-patch+json; charset=utf-8");
    assert_eq!(patch_type(&strategic, &query("")).unwrap(), PatchType::StrategicMerge);
    let apply = content("application/apply-patch+yaml");
    assert_eq!(
        patch_type(&apply, &query("fieldManager=me&force=true")).unwrap(),
        PatchType::Apply { field_manager: "me".into(), force: true }
    );
    let unmanaged = patch_type(&apply, &query("")).unwrap();
    let refused = write_options(&Method::PATCH, &query(""), Some(&unmanaged)).unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let text = content("text/plain");
    assert_eq!(patch_type(&text, &query("")).unwrap_err().status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[test]
fn force_is_read_as_apimachinery_reads_a_flag() {
    let apply = content("application/apply-patch+yaml");
    let force = |q: &str| match patch_type(&apply, &query(q)).unwrap() {
        PatchType::Apply { force, .. } => force,
        other => panic!("{other:?}"),
    };
    assert!(force("fieldManager=m&force=1"));
    assert!(force("fieldManager=m&force="), "present and empty is true");
    assert!(!force("fieldManager=m&force=False"));
    assert!(!force("fieldManager=m"));
}

#[test]
fn a_writes_manager_is_its_field_manager_or_its_user_agents_first_part() {
    let mut agent = HeaderMap::new();
    agent.insert(header::USER_AGENT, HeaderValue::from_static("kubectl/v1.37.2 (linux/amd64) kubernetes/abc"));
    let options = |q: &str| write_options(&Method::POST, &query(q), None).unwrap();
    assert_eq!(field_manager(&agent, &options("fieldManager=mine")), "mine");
    assert_eq!(field_manager(&agent, &options("")), "kubectl");
    assert_eq!(field_manager(&HeaderMap::new(), &options("")), "unknown");
}

//! Specifications of `Status`: the API server's messages and its wire JSON.

use serde_json::json;

use super::*;
use crate::test_support::{deployments, pods, widgets};

#[test]
fn not_found_names_the_resource_and_object() {
    let status = Status::not_found(&pods(), "web");
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, StatusReason::NotFound);
    assert_eq!(status.message, r#"pods "web" not found"#);
    assert_eq!(status.to_string(), status.message);
}

#[test]
fn messages_qualify_resources_of_named_groups() {
    assert_eq!(Status::not_found(&deployments(), "web").message, r#"deployments.apps "web" not found"#);
    assert_eq!(Status::already_exists(&widgets(), "w").message, r#"widgets.example.com "w" already exists"#);
}

#[test]
fn a_stale_write_is_a_conflict_with_the_api_servers_words() {
    let status = Status::modified(&pods(), "web");
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        r#"Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again"#
    );
}

#[test]
fn invalid_lists_one_cause_alone_and_several_in_brackets() {
    let one = Status::invalid(&pods(), "Web", &[FieldError::invalid("metadata.name", "Web", "bad")]);
    assert_eq!(one.code, 422);
    assert_eq!(one.message, r#"Pod "Web" is invalid: metadata.name: Invalid value: "Web": bad"#);
    let two = Status::invalid(
        &deployments(),
        "x",
        &[FieldError::required("metadata.name", "needed"), FieldError::forbidden("spec", "no")],
    );
    assert_eq!(
        two.message,
        r#"Deployment.apps "x" is invalid: [metadata.name: Required value: needed, spec: Forbidden: no]"#
    );
    let details = two.details.expect("details");
    assert_eq!(details.kind, "Deployment");
    assert_eq!(details.group, "apps");
    assert_eq!(details.causes[0].reason, "FieldValueRequired");
    assert_eq!(details.causes[0].message, "Required value: needed");
    assert_eq!(details.causes[0].field, "metadata.name");
}

#[test]
fn serializes_to_the_wire_form() {
    let status = Status::not_found(&pods(), "web");
    assert_eq!(
        serde_json::to_value(&status).expect("serialize"),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"web\" not found", "reason": "NotFound",
            "details": {"name": "web", "kind": "pods"}, "code": 404,
        })
    );
}

#[test]
fn parses_the_wire_form_back() {
    let status =
        Status::invalid(&deployments(), "x", &[FieldError::invalid_raw("spec.replicas", "-1", "must be >= 0")]);
    let wire = serde_json::to_string(&status).expect("serialize");
    assert_eq!(serde_json::from_str::<Status>(&wire).expect("parse"), status);
}

#[test]
fn an_unknown_or_missing_reason_parses_as_unknown() {
    let status: Status = serde_json::from_value(
        json!({"kind": "Status", "status": "Failure", "message": "m", "reason": "Novel", "code": 500}),
    )
    .expect("parse");
    assert_eq!(status.reason, StatusReason::Unknown);
    let status: Status = serde_json::from_value(json!({"message": "m", "code": 500})).expect("parse");
    assert_eq!(status.reason, StatusReason::Unknown);
    assert!(!serde_json::to_value(&status).expect("serialize").as_object().expect("map").contains_key("reason"));
}

#[test]
fn an_object_of_another_kind_is_not_a_status() {
    assert!(serde_json::from_value::<Status>(json!({"kind": "Pod", "code": 200})).is_err());
}

#[test]
fn strategic_merge_refusal_lists_the_accepted_types() {
    let status = Status::unsupported_media_type(&["a/b", "c/d"]);
    assert_eq!(status.code, 415);
    assert_eq!(
        status.message,
        "the body of the request was in an unknown format - accepted media types include: a/b, c/d"
    );
}

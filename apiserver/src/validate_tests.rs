//! Specifications of metadata validation, with the API server's messages.

use serde_json::json;

use super::*;
use crate::test_support::{configmaps, pods};

#[test]
fn a_name_with_capitals_is_not_a_subdomain() {
    assert_eq!(
        dns1123_subdomain("Web"),
        vec![
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ]
    );
    assert!(dns1123_subdomain("web.example-1.com").is_empty());
    assert!(!dns1123_subdomain("web..com").is_empty());
    assert!(!dns1123_subdomain("-web").is_empty());
}

#[test]
fn subdomains_hold_at_most_253_characters() {
    let long = "a".repeat(254);
    assert_eq!(dns1123_subdomain(&long), vec!["must be no more than 253 characters"]);
    assert!(dns1123_subdomain(&"a".repeat(253)).is_empty());
}

#[test]
fn labels_hold_at_most_63_characters_and_no_dots() {
    assert_eq!(dns1123_label(&"a".repeat(64)), vec!["must be no more than 63 characters"]);
    assert_eq!(
        dns1123_label("a.b"),
        vec![
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
}

#[test]
fn dns1035_labels_start_with_a_letter() {
    assert!(dns1035_label("web-1").is_empty());
    assert_eq!(dns1035_label("1web").len(), 1);
}

#[test]
fn qualified_names_have_an_optional_subdomain_prefix() {
    assert!(qualified_name("app.kubernetes.io/name").is_empty());
    assert!(qualified_name("My_Name.1").is_empty());
    assert_eq!(qualified_name("/name"), vec!["prefix part must be non-empty"]);
    assert_eq!(
        qualified_name("a/"),
        vec![
            "name part must be non-empty",
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ]
    );
    assert!(qualified_name("a/b/c")[0].starts_with("a qualified name must consist of"));
    assert_eq!(qualified_name(&"n".repeat(64)), vec!["name part must be no more than 63 characters"]);
}

#[test]
fn label_values_may_be_empty_but_not_longer_than_63() {
    assert!(label_value("").is_empty());
    assert!(label_value("v1.2_3").is_empty());
    assert_eq!(label_value(&"v".repeat(64)), vec!["must be no more than 63 characters"]);
    assert_eq!(label_value("-v").len(), 1);
}

#[test]
fn object_meta_reports_each_broken_rule_at_its_field() {
    let obj = json!({"metadata": {"name": "Web", "labels": {"a/b/c": "ok", "ok": "-bad"}}});
    let errors = object_meta(&pods(), &obj);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["metadata.name", "metadata.labels", "metadata.labels"]);
    assert_eq!(errors[1].value.as_deref(), Some("\"a/b/c\""));
    assert_eq!(errors[2].value.as_deref(), Some("\"-bad\""));
}

#[test]
fn namespace_names_are_labels() {
    let namespaces = ResourceDef::built_in("", "v1", "Namespace", "namespaces", false, true);
    assert_eq!(object_meta(&namespaces, &json!({"metadata": {"name": "a.b"}})).len(), 1);
    assert!(object_meta(&configmaps(), &json!({"metadata": {"name": "a.b"}})).is_empty());
}

#[test]
fn annotations_hold_at_most_256_kib_in_total() {
    let big = "x".repeat(TOTAL_ANNOTATION_SIZE_MAX);
    let errors = object_meta(&configmaps(), &json!({"metadata": {"annotations": {"a": big}}}));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), "metadata.annotations: Too long: may not be more than 262144 bytes");
    let fits = "x".repeat(TOTAL_ANNOTATION_SIZE_MAX - 1);
    assert!(object_meta(&configmaps(), &json!({"metadata": {"annotations": {"a": fits}}})).is_empty());
}

#[test]
fn annotation_keys_are_qualified_names_of_any_case() {
    let obj = json!({"metadata": {"annotations": {"Example.COM/Key": "v", "bad key": "v"}}});
    let errors = object_meta(&configmaps(), &obj);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].value.as_deref(), Some("\"bad key\""));
}

/// RBAC's roles and bindings are named like `system:metrics-server`: their names need only
/// be path segments (apimachinery's `ValidatePathSegmentName`).
#[test]
fn rbac_names_are_path_segments() {
    let roles = ResourceDef::built_in("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, true);
    assert!(object_meta(&roles, &json!({"metadata": {"name": "system:metrics-server"}})).is_empty());
    assert_eq!(object_meta(&configmaps(), &json!({"metadata": {"name": "system:metrics-server"}})).len(), 1);
    assert_eq!(path_segment(".."), ["may not be '..'"]);
    assert_eq!(path_segment("a/b%c"), ["may not contain '/'", "may not contain '%'"]);
}

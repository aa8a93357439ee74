//! Specifications of create.

use serde_json::{Value, json};

use super::*;
use crate::test_support::{configmaps, ctx, deployment, deployments, pods, put, widgets};

fn create_in_default(def: &ResourceDef, obj: Value) -> Result<Write, Status> {
    create(def, None, Some("default"), obj, &WriteOptions::default(), &ctx())
}

#[test]
fn create_stamps_uid_creation_time_and_namespace() {
    let obj = put(create_in_default(&configmaps(), json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).unwrap());
    assert_eq!(
        obj,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "c", "namespace": "default",
                "uid": "00000000-0000-4000-8000-000000000001",
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "data": {"a": "1"},
        })
    );
}

#[test]
fn create_sets_generation_one_for_kinds_that_keep_it() {
    let obj = put(create_in_default(&deployments(), deployment()).unwrap());
    assert_eq!(obj["metadata"]["generation"], 1);
    let widget = put(create_in_default(&widgets(), json!({"metadata": {"name": "w", "generation": 7}})).unwrap());
    assert_eq!(widget["metadata"]["generation"], 1);
    let cm = put(create_in_default(&configmaps(), json!({"metadata": {"name": "c", "generation": 7}})).unwrap());
    assert_eq!(cm["metadata"].get("generation"), None);
}

#[test]
fn create_with_another_api_version_or_kind_is_a_bad_request() {
    let err = create_in_default(&pods(), json!({"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "p"}}))
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(err.message, "the API version in the data (apps/v1) does not match the expected API version (v1)");
    let err = create_in_default(&pods(), json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}}))
        .unwrap_err();
    assert_eq!(err.reason, StatusReason::BadRequest);
}

#[test]
fn create_in_another_namespace_than_the_request_is_a_bad_request() {
    let err = create_in_default(&pods(), json!({"metadata": {"name": "p", "namespace": "other"}})).unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(err.message, "the namespace of the provided object does not match the namespace sent on the request");
}

#[test]
fn cluster_scoped_objects_have_no_namespace() {
    let namespaces = ResourceDef::built_in("", "v1", "Namespace", "namespaces", false, true);
    let obj = json!({"metadata": {"name": "team", "namespace": "x"}});
    let ns = put(create(&namespaces, None, None, obj, &WriteOptions::default(), &ctx()).unwrap());
    assert_eq!(ns["metadata"].get("namespace"), None);
}

#[test]
fn create_without_name_or_generate_name_is_invalid() {
    let err = create_in_default(&pods(), json!({"metadata": {}})).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(err.message, r#"Pod "" is invalid: metadata.name: Required value: name or generateName is required"#);
}

#[test]
fn generate_name_gets_a_five_character_suffix() {
    let obj = put(create_in_default(&pods(), json!({"metadata": {"generateName": "web-"}})).unwrap());
    assert_eq!(obj["metadata"]["name"], "web-bbbbc");
    assert_eq!(obj["metadata"]["generateName"], "web-");
}

#[test]
fn a_long_generate_name_is_cut_to_fit_a_label() {
    let mut obj = json!({"metadata": {"generateName": "a".repeat(70)}});
    assign_name(&mut obj, &ctx()).unwrap();
    assert_eq!(object::name(&obj).len(), 63);
}

#[test]
fn the_system_context_draws_suffixes_from_the_api_servers_alphabet() {
    let suffix = crate::SystemContext.name_suffix();
    assert_eq!(suffix.len(), NAME_SUFFIX_LEN);
    assert!(suffix.bytes().all(|b| crate::NAME_SUFFIX_ALPHABET.contains(&b)));
}

#[test]
fn create_of_an_existing_name_already_exists() {
    let existing = json!({"metadata": {"name": "p"}});
    let err = create(&pods(), Some(&existing), Some("default"), existing.clone(), &WriteOptions::default(), &ctx())
        .unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, StatusReason::AlreadyExists);
    assert_eq!(err.message, r#"pods "p" already exists"#);
}

#[test]
fn create_with_an_invalid_name_is_invalid() {
    let err = create_in_default(&pods(), json!({"metadata": {"name": "Web"}})).unwrap_err();
    assert!(
        err.message.starts_with(
            r#"Pod "Web" is invalid: metadata.name: Invalid value: "Web": a lowercase RFC 1123 subdomain"#
        )
    );
}

#[test]
fn create_with_a_resource_version_fails_as_in_the_api_server() {
    let err = create_in_default(&pods(), json!({"metadata": {"name": "p", "resourceVersion": "12"}})).unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(err.message, "resourceVersion should not be set on objects to be created");
    let obj = put(create_in_default(&pods(), json!({"metadata": {"name": "p", "resourceVersion": "x"}})).unwrap());
    assert_eq!(obj["metadata"].get("resourceVersion"), None);
}

#[test]
fn create_replaces_the_status_of_kinds_with_a_status_subresource() {
    let obj =
        put(create_in_default(&pods(), json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}})).unwrap());
    assert_eq!(obj["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}), "the status a Pod starts with");
    let cm = json!({"metadata": {"name": "c"}, "status": {"x": 1}});
    assert_eq!(put(create_in_default(&configmaps(), cm).unwrap())["status"], json!({"x": 1}));
}

#[test]
fn create_ignores_a_deletion_timestamp_from_the_client() {
    let obj = json!({"metadata": {"name": "p", "deletionTimestamp": "2020-01-01T00:00:00Z", "uid": "mine"}});
    let obj = put(create_in_default(&pods(), obj).unwrap());
    assert_eq!(obj["metadata"].get("deletionTimestamp"), None);
    assert_eq!(obj["metadata"]["uid"], "00000000-0000-4000-8000-000000000001");
}

#[test]
fn create_with_a_field_manager_records_its_fields() {
    let opts = WriteOptions::default().with_manager("kubectl");
    let obj = json!({"metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k": "v"}});
    let obj = put(create(&configmaps(), None, Some("default"), obj, &opts, &ctx()).unwrap());
    assert_eq!(
        obj["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}},
        }])
    );
}

#[test]
fn a_malformed_object_is_a_bad_request() {
    let err = create_in_default(&pods(), json!({"metadata": []})).unwrap_err();
    assert_eq!(err.code, 400);
}

/// A Secret's `stringData` is stored folded into its `data`; a value that is not a string
/// is a bad request.
#[test]
fn create_folds_a_secrets_string_data_into_its_data() {
    let secrets = ResourceDef::built_in("", "v1", "Secret", "secrets", true, false);
    let obj =
        put(create_in_default(&secrets, json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}})).unwrap());
    assert_eq!(obj["data"], json!({"user": "YWRtaW4="}));
    assert!(obj.get("stringData").is_none());
    let err = create_in_default(&secrets, json!({"metadata": {"name": "t"}, "stringData": {"n": 1}})).unwrap_err();
    assert_eq!(err.code, 400);
}

//! Specifications of update and of the update rules patches share.

use serde_json::{Value, json};

use super::*;
use crate::create;
use crate::test_support::{configmaps, ctx, deployment, deployments, put, stored, widgets};

fn update_with(def: &ResourceDef, current: &Value, obj: Value) -> Result<Write, Status> {
    update(def, Some(current), obj, &WriteOptions::default(), &ctx())
}

#[test]
fn update_of_a_missing_object_is_not_found() {
    let err = update(&deployments(), None, deployment(), &WriteOptions::default(), &ctx()).unwrap_err();
    assert_eq!(err.code, 404);
    assert_eq!(err.message, r#"deployments.apps "web" not found"#);
}

#[test]
fn update_with_stale_resource_version_is_a_conflict() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["metadata"]["resourceVersion"] = json!("0");
    let err = update_with(&deployments(), &current, obj).unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        r#"Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again"#
    );
}

#[test]
fn update_without_resource_version_is_unconditional_for_built_ins() {
    let current = stored(&deployments(), deployment());
    let mut obj = deployment();
    obj["spec"]["replicas"] = json!(5);
    let new = put(update_with(&deployments(), &current, obj).unwrap());
    assert_eq!(new["spec"]["replicas"], 5);
}

#[test]
fn update_without_resource_version_is_invalid_for_custom_resources() {
    let current = stored(&widgets(), json!({"metadata": {"name": "w"}, "spec": {"size": 1}}));
    let err = update_with(&widgets(), &current, json!({"metadata": {"name": "w"}, "spec": {"size": 2}})).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"Widget.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"#
    );
}

#[test]
fn update_with_another_uid_is_a_failed_precondition() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["metadata"]["uid"] = json!("other");
    let err = update_with(&deployments(), &current, obj).unwrap_err();
    assert_eq!(err.code, 409);
    assert!(err.message.ends_with(
        "Precondition failed: UID in precondition: other, UID in object meta: 00000000-0000-4000-8000-000000000001"
    ));
}

#[test]
fn update_with_another_name_is_a_bad_request() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["metadata"]["name"] = json!("other");
    let err = update_with(&deployments(), &current, obj).unwrap_err();
    assert_eq!(err.message, "the name of the object (other) does not match the name on the URL (web)");
}

#[test]
fn update_keeps_immutable_metadata_from_the_stored_object() {
    let current = stored(&deployments(), deployment());
    let mut obj = deployment();
    obj["metadata"]["creationTimestamp"] = json!("1999-01-01T00:00:00Z");
    obj["metadata"]["deletionTimestamp"] = json!("1999-01-01T00:00:00Z");
    obj["metadata"]["generation"] = json!(40);
    obj["metadata"]["labels"]["tier"] = json!("front");
    let new = put(update_with(&deployments(), &current, obj).unwrap());
    assert_eq!(new["metadata"]["creationTimestamp"], current["metadata"]["creationTimestamp"]);
    assert_eq!(new["metadata"]["uid"], current["metadata"]["uid"]);
    assert_eq!(new["metadata"]["namespace"], "default");
    assert_eq!(new["metadata"].get("deletionTimestamp"), None);
    assert_eq!(new["metadata"]["generation"], 1);
    assert_eq!(new["metadata"]["labels"]["tier"], "front");
}

#[test]
fn a_main_resource_update_keeps_the_stored_status() {
    let mut current = stored(&deployments(), deployment());
    current["status"] = json!({"replicas": 3});
    let mut obj = current.clone();
    obj["status"] = json!({"replicas": 99});
    obj["spec"]["replicas"] = json!(4);
    let new = put(update_with(&deployments(), &current, obj).unwrap());
    assert_eq!(new["status"], json!({"replicas": 3}));
    assert_eq!(new["spec"]["replicas"], 4);
}

#[test]
fn a_status_update_changes_only_status() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["status"] = json!({"replicas": 3});
    obj["spec"]["replicas"] = json!(9);
    obj["metadata"]["labels"]["sneaky"] = json!("yes");
    let new = put(update(&deployments(), Some(&current), obj, &WriteOptions::status(), &ctx()).unwrap());
    assert_eq!(new["status"], json!({"replicas": 3}));
    assert_eq!(new["spec"], current["spec"]);
    assert_eq!(new["metadata"]["labels"], current["metadata"]["labels"]);
    assert_eq!(new["metadata"]["generation"], 1);
}

#[test]
fn a_status_update_of_a_kind_without_status_subresource_is_not_found() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let err = update(&configmaps(), Some(&current), current.clone(), &WriteOptions::status(), &ctx()).unwrap_err();
    assert_eq!(err.code, 404);
}

#[test]
fn generation_increments_when_the_spec_changes() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["spec"]["replicas"] = json!(1);
    let new = put(update_with(&deployments(), &current, obj).unwrap());
    assert_eq!(new["metadata"]["generation"], 2);
}

#[test]
fn generation_stays_when_only_metadata_changes() {
    let current = stored(&deployments(), deployment());
    let mut obj = current.clone();
    obj["metadata"]["annotations"] = json!({"note": "x"});
    let new = put(update_with(&deployments(), &current, obj).unwrap());
    assert_eq!(new["metadata"]["generation"], 1);
}

#[test]
fn generation_follows_status_for_kinds_without_status_subresource() {
    let mut plain = widgets();
    plain.status_subresource = false;
    let current = stored(&plain, json!({"metadata": {"name": "w"}, "status": {"ok": false}}));
    let mut obj = current.clone();
    obj["status"] = json!({"ok": true});
    let new = put(update_with(&plain, &current, obj).unwrap());
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(new["status"], json!({"ok": true}));
}

#[test]
fn an_update_that_changes_nothing_makes_no_event() {
    let current = stored(&deployments(), deployment());
    assert_eq!(update_with(&deployments(), &current, current.clone()).unwrap(), Write::Unchanged(current.clone()));
    let mut without_version = current.clone();
    object::remove_meta(&mut without_version, "resourceVersion");
    assert!(matches!(update_with(&deployments(), &current, without_version).unwrap(), Write::Unchanged(_)));
}

#[test]
fn an_object_being_deleted_cannot_gain_finalizers() {
    let mut current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["a"]}}));
    current["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let mut obj = current.clone();
    obj["metadata"]["finalizers"] = json!(["a", "b"]);
    let err = update_with(&configmaps(), &current, obj).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"ConfigMap "c" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"b"}"#
    );
}

#[test]
fn removing_the_last_finalizer_of_an_object_being_deleted_deletes_it() {
    let mut current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["a", "b"]}}));
    current["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let mut obj = current.clone();
    obj["metadata"]["finalizers"] = json!(["b"]);
    let partial = put(update_with(&configmaps(), &current, obj).unwrap());
    let mut last = partial.clone();
    object::remove_meta(&mut last, "finalizers");
    match update_with(&configmaps(), &partial, last).unwrap() {
        Write::Delete(final_state) => assert_eq!(final_state["metadata"].get("finalizers"), None),
        other => panic!("expected Delete, got {other:?}"),
    }
}

#[test]
fn removing_finalizers_of_a_live_object_keeps_it() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["a"]}}));
    let mut obj = current.clone();
    object::remove_meta(&mut obj, "finalizers");
    assert!(matches!(update_with(&configmaps(), &current, obj).unwrap(), Write::Put(_)));
}

#[test]
fn update_validates_labels() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let mut obj = current.clone();
    obj["metadata"]["labels"] = json!({"k": "-"});
    let err = update_with(&configmaps(), &current, obj).unwrap_err();
    assert!(err.message.starts_with(r#"ConfigMap "c" is invalid: metadata.labels: Invalid value: "-": a valid label"#));
}

#[test]
fn update_with_a_field_manager_takes_the_fields_it_changes() {
    let opts = WriteOptions::default().with_manager("first");
    let obj = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "1"}});
    let mut current = put(create(&configmaps(), None, Some("default"), obj, &opts, &ctx()).unwrap());
    current["metadata"]["resourceVersion"] = json!("1");
    let mut obj = current.clone();
    obj["data"]["b"] = json!("2");
    let new =
        put(update(&configmaps(), Some(&current), obj, &WriteOptions::default().with_manager("second"), &ctx())
            .unwrap());
    let entries = crate::managed_fields::read(&new);
    let owners: Vec<(&str, Value)> = entries.iter().map(|e| (e.manager.as_str(), e.fields.to_fields_v1())).collect();
    assert_eq!(owners, vec![("first", json!({"f:data": {"f:a": {}}})), ("second", json!({"f:data": {"f:b": {}}}))]);
}

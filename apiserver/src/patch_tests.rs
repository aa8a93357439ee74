//! Specifications of patch (JSON, merge, strategic merge).

use serde_json::{Value, json};

use super::*;
use crate::test_support::{configmaps, ctx, deployment, deployments, put, stored, widgets};

fn patch_with(def: &ResourceDef, current: &Value, body: Value, patch_type: PatchType) -> Result<Write, Status> {
    let body = serde_json::to_vec(&body).unwrap();
    patch(
        def,
        crate::object::name(current),
        Some("default"),
        Some(current),
        &body,
        &patch_type,
        &WriteOptions::default(),
        &ctx(),
    )
}

#[test]
fn patch_of_a_missing_object_is_not_found() {
    let err =
        patch(&configmaps(), "c", Some("default"), None, b"{}", &PatchType::Merge, &WriteOptions::default(), &ctx())
            .unwrap_err();
    assert_eq!(err.code, 404);
}

#[test]
fn merge_patch_merges_maps_and_null_deletes() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}));
    let new =
        put(patch_with(&configmaps(), &current, json!({"data": {"a": null, "c": "3"}}), PatchType::Merge).unwrap());
    assert_eq!(new["data"], json!({"b": "2", "c": "3"}));
}

#[test]
fn a_patch_that_changes_nothing_makes_no_event() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}, "data": {"a": "1"}}));
    let write = patch_with(&configmaps(), &current, json!({"data": {"a": "1"}}), PatchType::Merge).unwrap();
    assert_eq!(write, Write::Unchanged(current));
}

#[test]
fn a_resource_version_in_a_patch_is_a_precondition() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}, "data": {"a": "1"}}));
    let stale = json!({"metadata": {"resourceVersion": "0"}, "data": {"a": "2"}});
    assert_eq!(patch_with(&configmaps(), &current, stale, PatchType::Merge).unwrap_err().code, 409);
    let fresh = json!({"metadata": {"resourceVersion": "1"}, "data": {"a": "2"}});
    assert!(matches!(patch_with(&configmaps(), &current, fresh, PatchType::Merge).unwrap(), Write::Put(_)));
}

#[test]
fn a_patch_of_a_custom_resource_needs_no_resource_version() {
    let current = stored(&widgets(), json!({"metadata": {"name": "w"}, "spec": {"size": 1}}));
    let new = put(patch_with(&widgets(), &current, json!({"spec": {"size": 2}}), PatchType::Merge).unwrap());
    assert_eq!(new["spec"]["size"], 2);
    assert_eq!(new["metadata"]["generation"], 2);
}

#[test]
fn json_patch_applies_operations() {
    let current = stored(&deployments(), deployment());
    let ops = json!([
        {"op": "test", "path": "/spec/replicas", "value": 3},
        {"op": "replace", "path": "/spec/replicas", "value": 5},
    ]);
    let new = put(patch_with(&deployments(), &current, ops, PatchType::Json).unwrap());
    assert_eq!(new["spec"]["replicas"], 5);
}

#[test]
fn a_json_patch_test_that_fails_is_invalid() {
    let current = stored(&deployments(), deployment());
    let ops = json!([{"op": "test", "path": "/spec/replicas", "value": 4}, {"op": "remove", "path": "/spec"}]);
    let err = patch_with(&deployments(), &current, ops, PatchType::Json).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, StatusReason::Invalid);
    assert_eq!(err.message, "testing value /spec/replicas failed: test failed");
}

#[test]
fn a_json_patch_on_a_missing_path_is_invalid() {
    let current = stored(&deployments(), deployment());
    let err = patch_with(&deployments(), &current, json!([{"op": "remove", "path": "/spec/nothing"}]), PatchType::Json)
        .unwrap_err();
    assert_eq!(err.code, 422);
}

#[test]
fn a_malformed_json_patch_is_a_bad_request() {
    let current = stored(&deployments(), deployment());
    let err = patch_with(&deployments(), &current, json!({"op": "remove"}), PatchType::Json).unwrap_err();
    assert_eq!(err.code, 400);
    let body = b"not json";
    let err = patch(
        &deployments(),
        "web",
        Some("default"),
        Some(&current),
        body,
        &PatchType::Merge,
        &WriteOptions::default(),
        &ctx(),
    )
    .unwrap_err();
    assert_eq!(err.code, 400);
}

#[test]
fn strategic_merge_of_a_deployment_merges_containers_by_name() {
    let current = stored(&deployments(), deployment());
    let body = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}});
    let new = put(patch_with(&deployments(), &current, body, PatchType::StrategicMerge).unwrap());
    let containers = &new["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().unwrap().len(), 1, "merged by name");
    assert_eq!(
        (containers[0]["image"].clone(), containers[0]["ports"][0]["containerPort"].clone()),
        (json!("app:2"), json!(80))
    );
    assert_eq!(new["metadata"]["generation"], 2);
}

#[test]
fn strategic_merge_of_a_custom_resource_is_an_unsupported_media_type() {
    let current = stored(&widgets(), json!({"metadata": {"name": "w"}}));
    let err = patch_with(&widgets(), &current, json!({}), PatchType::StrategicMerge).unwrap_err();
    assert_eq!(err.code, 415);
    assert_eq!(
        err.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[test]
fn a_status_patch_changes_only_status() {
    let current = stored(&deployments(), deployment());
    let body = serde_json::to_vec(&json!({"status": {"replicas": 3}, "spec": {"replicas": 0}})).unwrap();
    let new = put(patch(
        &deployments(),
        "web",
        Some("default"),
        Some(&current),
        &body,
        &PatchType::Merge,
        &WriteOptions::status(),
        &ctx(),
    )
    .unwrap());
    assert_eq!(new["status"], json!({"replicas": 3}));
    assert_eq!(new["spec"]["replicas"], 3);
}

#[test]
fn a_patch_that_removes_the_last_finalizer_of_a_deleting_object_deletes_it() {
    let mut current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["f"]}}));
    current["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let write =
        patch_with(&configmaps(), &current, json!({"metadata": {"finalizers": null}}), PatchType::Merge).unwrap();
    assert!(matches!(write, Write::Delete(_)));
}

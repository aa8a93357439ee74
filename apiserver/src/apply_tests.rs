//! Specifications of server-side apply.

use serde_json::{Value, json};

use crate::managed_fields::read;
use crate::test_support::{configmaps, ctx, deployment, deployments, put, widgets};
use crate::{PatchType, ResourceDef, Status, StatusReason, Write, WriteOptions, patch};

fn apply_as(
    def: &ResourceDef,
    current: Option<&Value>,
    manager: &str,
    force: bool,
    config: Value,
) -> Result<Write, Status> {
    let body = serde_json::to_vec(&config).unwrap();
    let patch_type = PatchType::Apply { field_manager: manager.into(), force };
    patch(def, "web", Some("default"), current, &body, &patch_type, &WriteOptions::default(), &ctx())
}

/// The object after a successful apply, stamped with resourceVersion "1" as a store would.
fn applied(def: &ResourceDef, current: Option<&Value>, manager: &str, config: Value) -> Value {
    let mut obj = put(apply_as(def, current, manager, false, config).unwrap());
    obj["metadata"]["resourceVersion"] = json!("1");
    obj
}

fn owners(obj: &Value) -> Vec<(String, String, Value)> {
    read(obj).into_iter().map(|e| (e.manager, e.operation, e.fields.to_fields_v1())).collect()
}

#[test]
fn apply_with_no_object_creates_it_owned_by_the_applier() {
    let obj = applied(&deployments(), None, "ci", deployment());
    assert_eq!(obj["metadata"]["uid"], "00000000-0000-4000-8000-000000000001");
    assert_eq!(obj["metadata"]["generation"], 1);
    let entries = read(&obj);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].manager, "ci");
    assert_eq!(entries[0].operation, "Apply");
    assert_eq!(entries[0].api_version, "apps/v1");
    assert_eq!(obj["metadata"]["managedFields"][0]["fieldsType"], "FieldsV1");
    assert_eq!(
        obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"]
            ["f:image"],
        json!({})
    );
}

#[test]
fn apply_changing_a_field_another_manager_owns_is_a_conflict() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let config =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let err = apply_as(&deployments(), Some(&obj), "autoscaler", false, config).unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, StatusReason::Conflict);
    assert_eq!(err.message, r#"Apply failed with 1 conflict: conflict with "ci": .spec.replicas"#);
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(cause.reason, "FieldManagerConflict");
    assert_eq!(cause.field, ".spec.replicas");
    assert_eq!(cause.message, r#"conflict with "ci""#);
}

#[test]
fn several_conflicts_are_listed_by_manager() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let mut config = deployment();
    config["spec"]["replicas"] = json!(1);
    config["metadata"]["labels"]["app"] = json!("other");
    let err = apply_as(&deployments(), Some(&obj), "me", false, config).unwrap_err();
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"ci\":\n- .metadata.labels.app\n- .spec.replicas"
    );
}

#[test]
fn forced_apply_takes_the_field() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let config =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let new = put(apply_as(&deployments(), Some(&obj), "autoscaler", true, config).unwrap());
    assert_eq!(new["spec"]["replicas"], 5);
    assert_eq!(new["metadata"]["generation"], 2);
    let owners = owners(&new);
    // Entries of one operation and second are ordered by manager, as the API server orders them.
    assert_eq!(owners[0], ("autoscaler".into(), "Apply".into(), json!({"f:spec": {"f:replicas": {}}})));
    assert_eq!(owners[1].0, "ci");
    assert!(owners[1].2["f:spec"].get("f:replicas").is_none());
    assert!(owners[1].2["f:spec"].get("f:template").is_some());
}

#[test]
fn applying_the_same_value_shares_the_field() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let config =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
    let new = put(apply_as(&deployments(), Some(&obj), "other", false, config).unwrap());
    let owners = owners(&new);
    assert!(owners[0].2["f:spec"].get("f:replicas").is_some());
    assert_eq!(owners[1].2, json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn fields_the_manager_no_longer_applies_are_removed() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let mut config = deployment();
    config["metadata"].as_object_mut().unwrap().remove("labels");
    config["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("ports");
    let new = put(apply_as(&deployments(), Some(&obj), "ci", false, config).unwrap());
    assert_eq!(new["metadata"].get("labels").and_then(|l| l.get("app")), None);
    assert_eq!(new["spec"]["template"]["spec"]["containers"][0].get("ports").and_then(|p| p.get(0)), None);
    assert_eq!(new["spec"]["template"]["spec"]["containers"][0]["image"], "app:1");
}

#[test]
fn fields_another_manager_also_owns_are_kept_when_omitted() {
    let obj = applied(
        &configmaps(),
        None,
        "a",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1", "y": "1"}}),
    );
    let obj =
        applied(&configmaps(), Some(&obj), "b", json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"}}));
    let new =
        put(apply_as(&configmaps(), Some(&obj), "a", false, json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap());
    assert_eq!(new["data"], json!({"x": "1"}));
}

#[test]
fn apply_merges_into_fields_others_set() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "proxy"}]}}}});
    let new = put(apply_as(&deployments(), Some(&obj), "mesh", false, config).unwrap());
    let names: Vec<&str> = new["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "sidecar"]);
}

#[test]
fn the_first_apply_to_an_unmanaged_object_finds_its_fields_owned_before_first_apply() {
    let current = crate::test_support::stored(&deployments(), deployment());
    let config =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 1}});
    let err = apply_as(&deployments(), Some(&current), "ci", false, config).unwrap_err();
    assert_eq!(
        err.message,
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1 at 2024-01-01T00:00:00Z: .spec.replicas"#
    );
}

#[test]
fn a_reapply_of_the_same_configuration_makes_no_event() {
    let obj = applied(&deployments(), None, "ci", deployment());
    assert!(matches!(apply_as(&deployments(), Some(&obj), "ci", false, deployment()).unwrap(), Write::Unchanged(_)));
}

#[test]
fn apply_with_another_name_than_the_url_is_a_bad_request() {
    let mut config = deployment();
    config["metadata"]["name"] = json!("other");
    assert_eq!(apply_as(&deployments(), None, "ci", false, config).unwrap_err().code, 400);
}

#[test]
fn an_update_takes_fields_from_the_applier_without_conflict() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let body = serde_json::to_vec(&json!({"spec": {"replicas": 7}})).unwrap();
    let opts = WriteOptions::default().with_manager("kubectl-scale");
    let new = put(
        patch(&deployments(), "web", Some("default"), Some(&obj), &body, &PatchType::Merge, &opts, &ctx()).unwrap()
    );
    let owners = owners(&new);
    assert!(owners[0].2["f:spec"].get("f:replicas").is_none());
    assert_eq!(owners[1], ("kubectl-scale".into(), "Update".into(), json!({"f:spec": {"f:replicas": {}}})));
}

#[test]
fn custom_resource_lists_are_applied_atomically() {
    let config =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"items": [{"name": "a"}, {"name": "b"}]}});
    let obj = applied(&widgets(), None, "ci", config);
    let config = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"items": [{"name": "c"}]}});
    let new = put(apply_as(&widgets(), Some(&obj), "ci", false, config).unwrap());
    assert_eq!(new["spec"]["items"], json!([{"name": "c"}]));
    assert_eq!(read(&new)[0].fields.to_fields_v1(), json!({"f:spec": {"f:items": {}}}));
}

#[test]
fn apply_to_status_owns_only_status() {
    let obj = applied(&deployments(), None, "ci", deployment());
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 0}, "status": {"readyReplicas": 3}});
    let body = serde_json::to_vec(&config).unwrap();
    let patch_type = PatchType::Apply { field_manager: "controller".into(), force: false };
    let new = put(patch(
        &deployments(),
        "web",
        Some("default"),
        Some(&obj),
        &body,
        &patch_type,
        &WriteOptions::status(),
        &ctx(),
    )
    .unwrap());
    assert_eq!(new["status"], json!({"readyReplicas": 3}));
    assert_eq!(new["spec"]["replicas"], 3);
    let entry = read(&new).into_iter().find(|e| e.manager == "controller").unwrap();
    assert_eq!(entry.subresource, "status");
    assert_eq!(entry.fields.to_fields_v1(), json!({"f:status": {"f:readyReplicas": {}}}));
}

//! Specifications of field sets and their FieldsV1 form.

use serde_json::json;

use super::*;
use crate::test_support::{deployment, deployments, widgets};

#[test]
fn an_object_owns_its_leaves_and_keyed_list_items() {
    let set = FieldSet::of_object(&deployments(), &deployment(), None);
    assert_eq!(
        set.to_fields_v1(),
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                    "k:{\"containerPort\":80}": {".": {}, "f:containerPort": {}},
                }},
            }}}},
        })
    );
}

/// Go reads a built-in kind's null as unset: nobody owns it. A custom resource keeps it.
#[test]
fn nulls_of_built_in_kinds_are_owned_by_no_one() {
    let mut object = deployment();
    object["spec"]["paused"] = serde_json::Value::Null;
    let set = FieldSet::of_object(&deployments(), &object, None);
    assert!(!set.to_fields_v1()["f:spec"].as_object().unwrap().contains_key("f:paused"));
    let widget = json!({"metadata": {"name": "w"}, "spec": {"size": null}});
    let set = FieldSet::of_object(&widgets(), &widget, None);
    assert_eq!(set.to_fields_v1()["f:spec"], json!({"f:size": {}}));
}

#[test]
fn fields_v1_reads_back_as_the_same_set() {
    let set = FieldSet::of_object(&deployments(), &deployment(), None);
    assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), set);
}

#[test]
fn server_fields_and_status_of_a_status_subresource_are_left_out() {
    let obj = json!({
        "apiVersion": "v1", "kind": "Widget",
        "metadata": {"name": "w", "uid": "u", "resourceVersion": "1", "finalizers": ["a"]},
        "spec": {"list": [1, 2]}, "status": {"ok": true},
    });
    let main = FieldSet::of_object(&widgets(), &obj, None);
    assert_eq!(main.to_fields_v1(), json!({"f:metadata": {"f:finalizers": {"v:\"a\"": {}}}, "f:spec": {"f:list": {}}}));
    let status = FieldSet::of_object(&widgets(), &obj, Some(Subresource::Status));
    assert_eq!(status.to_fields_v1(), json!({"f:status": {"f:ok": {}}}));
}

#[test]
fn paths_print_as_in_conflict_messages() {
    let path: FieldPath = vec!["f:spec".into(), "f:containers".into(), r#"k:{"name":"app"}"#.into(), "f:image".into()];
    assert_eq!(display(&path), r#".spec.containers[name="app"].image"#);
    assert_eq!(
        display(&["f:metadata".into(), "f:finalizers".into(), "v:\"a\"".into()]),
        r#".metadata.finalizers[="a"]"#
    );
}

#[test]
fn values_are_found_and_removed_by_path() {
    let mut obj = deployment();
    let image: FieldPath =
        ["f:spec", "f:template", "f:spec", "f:containers", r#"k:{"name":"app"}"#, "f:image"].map(String::from).to_vec();
    assert_eq!(value_at(&obj, &image), Some(&json!("app:1")));
    assert!(remove_at(&mut obj, &image));
    assert_eq!(value_at(&obj, &image), None);
    let item = image[..5].to_vec();
    assert!(remove_at(&mut obj, &item));
    assert_eq!(obj["spec"]["template"]["spec"]["containers"], json!([]));
}

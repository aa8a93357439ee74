//! Specifications of strategic merge.

use serde_json::json;

use super::*;

/// A strategic merge patch, lists ordered as a real API server orders them.
fn smp(built_in: bool, target: &Value, patch: &Value) -> Result<Value, Status> {
    merge(built_in, ListOrder::Patch, target, patch)
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap_or_else(|| c.as_str().unwrap())).collect()
}

fn pod_spec() -> Value {
    json!({"spec": {"containers": [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "sidecar", "image": "proxy:1"},
    ]}})
}

#[test]
fn containers_merge_by_name() {
    let patch = json!({"spec": {"containers": [{"name": "app", "image": "app:2"}]}});
    let merged = smp(true, &pod_spec(), &patch).unwrap();
    assert_eq!(
        merged["spec"]["containers"][0],
        json!({"name": "app", "image": "app:2", "env": [{"name": "A", "value": "1"}]})
    );
    assert_eq!(merged["spec"]["containers"][1]["name"], "sidecar");
}

#[test]
fn a_new_container_comes_before_the_live_ones_as_apimachinery_orders_it() {
    let patch = json!({"spec": {"containers": [{"name": "debug", "image": "busybox", "tty": null}]}});
    let merged = smp(true, &pod_spec(), &patch).unwrap();
    assert_eq!(merged["spec"]["containers"][0], json!({"name": "debug", "image": "busybox"}));
    assert_eq!(names(&merged["spec"]["containers"]), ["debug", "app", "sidecar"]);
}

/// apimachinery's `normalizeElementOrder`: the patch's items in its order; a live-only item
/// goes before the next patch item when the live list had it before that item.
#[test]
fn merged_lists_take_the_patch_order_with_live_only_items_kept_in_place() {
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]}});
    let patch = json!({"spec": {"containers": [{"name": "d"}, {"name": "new"}, {"name": "b"}]}});
    let merged = smp(true, &live, &patch).unwrap();
    assert_eq!(names(&merged["spec"]["containers"]), ["a", "c", "d", "new", "b"]);
    let finalizers =
        smp(true, &json!({"metadata": {"finalizers": ["a", "b"]}}), &json!({"metadata": {"finalizers": ["z"]}}));
    assert_eq!(finalizers.unwrap()["metadata"]["finalizers"], json!(["z", "a", "b"]));
}

#[test]
fn set_element_order_orders_the_merged_list_and_an_unpatched_one() {
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
        "containers": [{"name": "a", "image": "2"}],
    }});
    let merged = smp(true, &live, &patch).unwrap();
    assert_eq!(names(&merged["spec"]["containers"]), ["c", "a", "b"]);
    assert_eq!(merged["spec"]["containers"][1]["image"], "2");
    let only_order = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}]}});
    assert_eq!(names(&smp(true, &live, &only_order).unwrap()["spec"]["containers"]), ["b", "a", "c"]);
}

#[test]
fn an_apply_keeps_the_live_order_and_appends_new_items() {
    let merged = merge(true, ListOrder::Live, &pod_spec(), &json!({"spec": {"containers": [{"name": "debug"}]}}));
    assert_eq!(names(&merged.unwrap()["spec"]["containers"]), ["app", "sidecar", "debug"]);
}

#[test]
fn patch_delete_on_a_list_item_removes_it() {
    let patch = json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}});
    let merged = smp(true, &pod_spec(), &patch).unwrap();
    assert_eq!(merged["spec"]["containers"].as_array().unwrap().len(), 1);
    assert_eq!(merged["spec"]["containers"][0]["name"], "app");
}

#[test]
fn patch_delete_on_a_map_removes_it() {
    let target = json!({"spec": {"selector": {"a": "b"}, "x": 1}});
    let merged = smp(true, &target, &json!({"spec": {"selector": {"$patch": "delete"}}})).unwrap();
    assert_eq!(merged, json!({"spec": {"x": 1}}));
}

#[test]
fn patch_replace_on_a_map_replaces_it() {
    let target = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let merged = smp(true, &target, &json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}})).unwrap();
    assert_eq!(merged, json!({"metadata": {"labels": {"c": "3"}}}));
}

#[test]
fn patch_replace_in_a_list_replaces_the_list() {
    let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}});
    let merged = smp(true, &pod_spec(), &patch).unwrap();
    assert_eq!(merged["spec"]["containers"], json!([{"name": "only", "image": "x"}]));
}

#[test]
fn nested_lists_merge_by_their_own_keys() {
    let patch = json!({"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}});
    let merged = smp(true, &pod_spec(), &patch).unwrap();
    assert_eq!(
        merged["spec"]["containers"][0]["env"],
        json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
    );
}

#[test]
fn container_ports_merge_by_container_port_and_service_ports_by_port() {
    let target = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}});
    let patch = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}});
    let merged = smp(true, &target, &patch).unwrap();
    assert_eq!(
        merged["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
    );
    let service = json!({"spec": {"ports": [{"port": 80, "name": "http"}]}});
    let merged = smp(true, &service, &json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}})).unwrap();
    assert_eq!(merged["spec"]["ports"], json!([{"port": 80, "name": "http", "targetPort": 8080}]));
}

#[test]
fn conditions_merge_by_type() {
    let target =
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Synced", "status": "True"}]}});
    let merged = smp(true, &target, &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})).unwrap();
    assert_eq!(
        merged["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}])
    );
}

#[test]
fn finalizers_merge_as_a_set_and_can_be_deleted() {
    let target = json!({"metadata": {"finalizers": ["a", "b"]}});
    let merged = smp(true, &target, &json!({"metadata": {"finalizers": ["b", "c"]}})).unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let merged = smp(true, &target, &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})).unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn other_lists_are_replaced() {
    let target = json!({"spec": {"args": ["a", "b"]}});
    assert_eq!(smp(true, &target, &json!({"spec": {"args": ["c"]}})).unwrap(), json!({"spec": {"args": ["c"]}}));
}

#[test]
fn custom_resource_lists_are_atomic() {
    let target = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}});
    let merged = smp(false, &target, &json!({"spec": {"containers": [{"name": "a", "image": "2"}]}})).unwrap();
    assert_eq!(merged["spec"]["containers"], json!([{"name": "a", "image": "2"}]));
}

#[test]
fn null_removes_a_field_as_in_a_merge_patch() {
    let target = json!({"data": {"a": "1", "b": "2"}});
    assert_eq!(smp(true, &target, &json!({"data": {"a": null}})).unwrap(), json!({"data": {"b": "2"}}));
}

#[test]
fn a_list_item_without_its_merge_key_is_a_bad_request() {
    let err = smp(true, &pod_spec(), &json!({"spec": {"containers": [{"image": "x"}]}})).unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.contains("does not contain declared merge key: name"));
}

#[test]
fn an_unknown_patch_directive_is_a_bad_request() {
    assert_eq!(smp(true, &pod_spec(), &json!({"spec": {"$patch": "explode"}})).unwrap_err().code, 400);
}

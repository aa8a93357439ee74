//! Specifications of delete.

use serde_json::json;

use super::*;
use crate::test_support::{configmaps, ctx, deployment, deployments, pods, put, stored};
use crate::{WriteOptions, create};

fn delete_with(current: &Value, opts: &DeleteOptions) -> Result<Write, Status> {
    delete(&configmaps(), "c", Some(current), opts, &ctx())
}

#[test]
fn delete_of_a_missing_object_is_not_found() {
    let err = delete(&configmaps(), "c", None, &DeleteOptions::default(), &ctx()).unwrap_err();
    assert_eq!(err.message, r#"configmaps "c" not found"#);
}

#[test]
fn an_object_without_finalizers_is_deleted_at_once() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    assert_eq!(delete_with(&current, &DeleteOptions::default()).unwrap(), Write::Delete(current.clone()));
}

#[test]
fn a_pod_goes_at_once_but_its_last_state_shows_the_graceful_deletion() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let current = stored(&pods(), pod);
    let Write::Delete(last) = delete(&pods(), "p", Some(&current), &DeleteOptions::default(), &ctx()).unwrap() else {
        panic!("expected Delete")
    };
    assert_eq!(last["metadata"]["deletionTimestamp"], "2024-01-01T00:00:00Z");
    assert_eq!(last["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(last["metadata"]["generation"], 2, "a Pod keeps a generation");
}

#[test]
fn a_uid_precondition_that_fails_is_a_conflict() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let opts = DeleteOptions {
        preconditions: Preconditions { uid: Some("x".into()), resource_version: None },
        ..DeleteOptions::default()
    };
    let err = delete_with(&current, &opts).unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        r#"Operation cannot be fulfilled on configmaps "c": Precondition failed: UID in precondition: x, UID in object meta: 00000000-0000-4000-8000-000000000001"#
    );
}

#[test]
fn a_resource_version_precondition_that_fails_is_a_conflict() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let opts = DeleteOptions {
        preconditions: Preconditions { uid: None, resource_version: Some("7".into()) },
        ..DeleteOptions::default()
    };
    let err = delete_with(&current, &opts).unwrap_err();
    assert!(
        err.message
            .ends_with("Precondition failed: ResourceVersion in precondition: 7, ResourceVersion in object meta: 1")
    );
    let ok = DeleteOptions {
        preconditions: Preconditions { uid: None, resource_version: Some("1".into()) },
        ..DeleteOptions::default()
    };
    assert!(matches!(delete_with(&current, &ok).unwrap(), Write::Delete(_)));
}

#[test]
fn an_object_with_finalizers_is_marked_for_deletion() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["example.com/cleanup"]}}));
    let Write::Put(marked) = delete_with(&current, &DeleteOptions::default()).unwrap() else { panic!("expected Put") };
    assert_eq!(marked["metadata"]["deletionTimestamp"], "2024-01-01T00:00:00Z");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["finalizers"], json!(["example.com/cleanup"]));
}

#[test]
fn marking_for_deletion_bumps_the_generation_of_kinds_that_keep_it() {
    let mut obj = deployment();
    obj["metadata"]["finalizers"] = json!(["f"]);
    let current = stored(&deployments(), obj);
    let Write::Put(marked) = delete(&deployments(), "web", Some(&current), &DeleteOptions::default(), &ctx()).unwrap()
    else {
        panic!("expected Put")
    };
    assert_eq!(marked["metadata"]["generation"], 2);
}

#[test]
fn a_second_delete_of_an_object_being_deleted_changes_nothing() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c", "finalizers": ["f"]}}));
    let Write::Put(mut marked) = delete_with(&current, &DeleteOptions::default()).unwrap() else {
        panic!("expected Put")
    };
    marked["metadata"]["resourceVersion"] = json!("2");
    assert_eq!(delete_with(&marked, &DeleteOptions::default()).unwrap(), Write::Unchanged(marked.clone()));
}

#[test]
fn foreground_deletion_adds_its_finalizer() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let opts = DeleteOptions { propagation_policy: Some(PropagationPolicy::Foreground), ..DeleteOptions::default() };
    let Write::Put(marked) = delete_with(&current, &opts).unwrap() else { panic!("expected Put") };
    assert_eq!(marked["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn orphan_deletion_adds_its_finalizer_and_background_removes_both() {
    let current = stored(&configmaps(), json!({"metadata": {"name": "c"}}));
    let orphan = DeleteOptions { propagation_policy: Some(PropagationPolicy::Orphan), ..DeleteOptions::default() };
    let Write::Put(marked) = delete_with(&current, &orphan).unwrap() else { panic!("expected Put") };
    assert_eq!(marked["metadata"]["finalizers"], json!(["orphan"]));
    let background =
        DeleteOptions { propagation_policy: Some(PropagationPolicy::Background), ..DeleteOptions::default() };
    assert!(matches!(delete_with(&marked, &background).unwrap(), Write::Delete(_)));
}

fn namespaces() -> ResourceDef {
    ResourceDef::built_in("", "v1", "Namespace", "namespaces", false, true)
}

#[test]
fn the_first_delete_of_a_namespace_starts_its_termination() {
    let current =
        put(create(&namespaces(), None, None, json!({"metadata": {"name": "shop"}}), &WriteOptions::default(), &ctx())
            .unwrap());
    let Write::Put(marked) = delete(&namespaces(), "shop", Some(&current), &DeleteOptions::default(), &ctx()).unwrap()
    else {
        panic!("expected Put")
    };
    assert_eq!(marked["metadata"]["deletionTimestamp"], "2024-01-01T00:00:00Z");
    assert_eq!(marked["status"]["phase"], "Terminating");
    assert_eq!(marked["spec"]["finalizers"], json!(["kubernetes"]), "the namespace controller's finalizer stays");
    assert!(marked["metadata"].get("deletionGracePeriodSeconds").is_none());
    // Deleted again while the namespace controller has not finished: nothing changes.
    let again = delete(&namespaces(), "shop", Some(&marked), &DeleteOptions::default(), &ctx()).unwrap();
    assert_eq!(again, Write::Unchanged(marked.clone()));
    // Once spec.finalizers is empty, the next delete removes it.
    let mut finalized = marked.clone();
    finalized["spec"]["finalizers"] = json!([]);
    assert!(matches!(
        delete(&namespaces(), "shop", Some(&finalized), &DeleteOptions::default(), &ctx()).unwrap(),
        Write::Delete(_)
    ));
}

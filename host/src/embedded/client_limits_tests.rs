//! The API server's limits and admission on the embedded cluster: kinds at versions it does
//! not serve, namespaces that do not exist, sizes, types, finalizers, Events, and applies
//! that would create without leave to.

use super::*;

fn apply(name: &str, may_create: bool) -> Request {
    let apply = PatchType::Apply { field_manager: "tester".into(), force: false };
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}, "data": {"a": "1"}});
    Request { may_create, ..request(Verb::Patch(apply), "v1", "ConfigMap", Some("shop"), name, body) }
}

#[tokio::test]
async fn an_apply_without_leave_to_create_updates_but_never_creates() {
    let (_dir, source, client) = cluster(&[]);
    let err = run(&client, apply("settings", false)).await.unwrap_err();
    assert!(matches!(&err, RequestError::NotPermitted(m) if m.contains("needs `create`")), "{err}");
    assert!(source.objects("v1", "ConfigMap").is_empty());
    run(&client, apply("settings", true)).await.expect("allowed to create");
    run(&client, apply("settings", false)).await.expect("an existing object is only patched");
}

#[tokio::test]
async fn a_version_the_group_does_not_serve_is_not_found_and_makes_no_store() {
    let (_dir, source, client) = cluster(&[]);
    let body = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"}});
    let err = run(&client, request(Verb::Create, "v2", "ConfigMap", Some("shop"), "", body)).await.unwrap_err();
    assert!(matches!(err, RequestError::NotFound(_)), "{err}");
    assert!(!source.kinds().iter().any(|(v, _)| v == "v2"), "{:?}", source.kinds());
}

#[tokio::test]
async fn nothing_is_created_in_a_namespace_that_does_not_exist_or_is_being_deleted() {
    let (_dir, _source, client) = cluster(&[]);
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leaving", "finalizers": ["example.com/wait"]}});
    run(&client, request(Verb::Create, "v1", "Namespace", None, "", namespace)).await.unwrap();
    run(&client, request(Verb::Delete(DeleteOptions::default()), "v1", "Namespace", None, "leaving", json!(null)))
        .await
        .unwrap();
    let create = |ns: &str| {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}});
        request(Verb::Create, "v1", "ConfigMap", Some(ns), "", body)
    };
    let err = run(&client, create("nowhere")).await.unwrap_err();
    assert_eq!(err, RequestError::NotFound("namespaces \"nowhere\" not found".into()));
    let err = run(&client, create("leaving")).await.unwrap_err();
    assert!(matches!(&err, RequestError::Forbidden(m) if m.contains("being terminated")), "{err}");
    run(&client, create("kube-system")).await.expect("a namespace every cluster has");
    run(&client, create("shop")).await.expect("a namespace of the folder");
}

#[tokio::test]
async fn bodies_over_3_mib_and_objects_over_1_5_mib_are_refused_and_stored_nowhere() {
    let (_dir, source, client) = cluster(&[]);
    let with_data = |bytes: usize| {
        let body = config_map("big", json!({"a": "x".repeat(bytes)}));
        request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", body)
    };
    let err = run(&client, with_data(4 << 20)).await.unwrap_err();
    assert!(matches!(&err, RequestError::TooLarge(m) if m.contains("limit is 3145728")), "{err}");
    let err = run(&client, with_data(2 << 20)).await.unwrap_err();
    assert!(matches!(&err, RequestError::TooLarge(m) if m.contains("request is too large")), "{err}");
    assert!(source.objects("v1", "ConfigMap").is_empty());
    run(&client, with_data(1 << 20)).await.expect("1 MiB fits");
}

#[tokio::test]
async fn objects_of_built_in_kinds_must_decode_as_their_types() {
    let (_dir, source, client) = cluster(&[]);
    let body = config_map("typed", json!({"n": 5}));
    let err = run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", body)).await.unwrap_err();
    assert!(matches!(&err, RequestError::BadRequest(m) if m.contains("data.n")), "{err}");
    run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", config_map("typed", json!({"n": "5"}))))
        .await
        .unwrap();
    let hide =
        request(Verb::Patch(PatchType::Merge), "v1", "ConfigMap", Some("shop"), "typed", json!({"data": {"n": [1]}}));
    assert!(matches!(run(&client, hide).await, Err(RequestError::BadRequest(_))), "a patch is checked on its result");
    assert_eq!(source.objects("v1", "ConfigMap")[0].to_value().unwrap()["data"]["n"], "5");
}

#[tokio::test]
async fn finalizers_must_be_qualified_names() {
    let (_dir, _source, client) = cluster(&[]);
    let mut body = config_map("f", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/ok", "not a name"]);
    let err = run(&client, request(Verb::Create, "v1", "ConfigMap", Some("shop"), "", body)).await.unwrap_err();
    assert!(
        matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "metadata.finalizers[1]"),
        "{err}"
    );
}

#[tokio::test]
async fn events_over_their_field_limits_are_invalid() {
    let (_dir, _source, client) = cluster(&[]);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e", "namespace": "shop"}, "eventTime": "2025-01-01T00:00:00.000000Z",
        "reportingController": "x.io/c", "reportingInstance": "i", "action": "A", "reason": "R".repeat(129),
        "regarding": {"kind": "Pod", "name": "p", "namespace": "shop"}, "type": "Normal"});
    let err =
        run(&client, request(Verb::Create, "events.k8s.io/v1", "Event", Some("shop"), "", event)).await.unwrap_err();
    assert!(matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "reason"), "{err}");
}

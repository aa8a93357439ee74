//! The garbage collector and the namespace controller on a directory source's writes: each
//! propagation policy, dependents with several owners, blocking dependents, a namespace's
//! deletion, and the namespaces every cluster has.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::cluster::{DeleteOptions, PropagationPolicy, Request, RequestError, Verb};
use crate::embedded::EmbeddedCluster;
use crate::embedded::{EmbeddedClient, NamespacePhase};
use crate::source::DirSource;

fn cluster() -> (tempfile::TempDir, Arc<DirSource>, EmbeddedClient) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n").unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let client = EmbeddedClient::new(source.clone());
    (dir, source, client)
}

fn create(client: &EmbeddedClient, api_version: &str, kind: &str, name: &str, extra: Value) -> Value {
    let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "shop"}});
    merge(&mut body, extra);
    let request = Request::new(Verb::Create, api_version, kind, Some("shop".into()), "").with_body(body.to_string());
    client.execute_now(request).unwrap().object.to_value().unwrap()
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        for (k, v) in extra {
            match (into.get_mut(&k), v) {
                (Some(existing @ Value::Object(_)), v @ Value::Object(_)) => merge(existing, v),
                (_, v) => {
                    into.insert(k, v);
                }
            }
        }
    }
}

/// An owner reference to `owner`.
fn owned_by(owner: &Value, block: bool) -> Value {
    json!({"metadata": {"ownerReferences": [{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": block,
    }]}})
}

fn get(client: &EmbeddedClient, api_version: &str, kind: &str, name: &str) -> Option<Value> {
    let request = Request::new(Verb::Get, api_version, kind, Some("shop".into()), name);
    match client.execute_now(request) {
        Ok(outcome) => Some(outcome.object.to_value().unwrap()),
        Err(RequestError::NotFound(_)) => None,
        Err(e) => panic!("{e}"),
    }
}

fn delete(client: &EmbeddedClient, api_version: &str, kind: &str, name: &str, policy: Option<PropagationPolicy>) {
    let options = DeleteOptions { propagation_policy: policy, ..DeleteOptions::default() };
    let request = Request::new(Verb::Delete(options), api_version, kind, Some("shop".into()), name);
    client.execute_now(request).unwrap();
}

/// A Deployment `web` owning a ReplicaSet `web-1` owning a Pod `web-1-a`.
fn chain(client: &EmbeddedClient, block: bool) -> (Value, Value, Value) {
    let deployment = create(client, "apps/v1", "Deployment", "web", json!({}));
    let replicas = create(client, "apps/v1", "ReplicaSet", "web-1", owned_by(&deployment, block));
    let pod = create(client, "v1", "Pod", "web-1-a", owned_by(&replicas, block));
    (deployment, replicas, pod)
}

#[test]
fn a_background_delete_removes_the_dependents_down_the_chain() {
    let (_dir, _source, client) = cluster();
    chain(&client, false);
    delete(&client, "apps/v1", "Deployment", "web", Some(PropagationPolicy::Background));
    assert!(get(&client, "apps/v1", "Deployment", "web").is_none());
    assert!(get(&client, "apps/v1", "ReplicaSet", "web-1").is_none());
    assert!(get(&client, "v1", "Pod", "web-1-a").is_none());
}

#[test]
fn a_delete_without_a_policy_collects_dependents_too() {
    let (_dir, _source, client) = cluster();
    chain(&client, true);
    delete(&client, "apps/v1", "Deployment", "web", None);
    assert!(get(&client, "apps/v1", "ReplicaSet", "web-1").is_none());
    assert!(get(&client, "v1", "Pod", "web-1-a").is_none());
}

#[test]
fn a_foreground_delete_removes_the_dependents_then_the_owner() {
    let (_dir, _source, client) = cluster();
    chain(&client, true);
    delete(&client, "apps/v1", "Deployment", "web", Some(PropagationPolicy::Foreground));
    assert!(get(&client, "v1", "Pod", "web-1-a").is_none());
    assert!(get(&client, "apps/v1", "ReplicaSet", "web-1").is_none());
    assert!(get(&client, "apps/v1", "Deployment", "web").is_none(), "released once nothing blocks it");
}

#[test]
fn a_foreground_owner_waits_for_a_blocking_dependent_with_a_finalizer() {
    let (_dir, _source, client) = cluster();
    let deployment = create(&client, "apps/v1", "Deployment", "web", json!({}));
    let mut extra = owned_by(&deployment, true);
    extra["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&client, "v1", "ConfigMap", "held", extra);
    delete(&client, "apps/v1", "Deployment", "web", Some(PropagationPolicy::Foreground));
    let waiting = get(&client, "apps/v1", "Deployment", "web").expect("waits for its blocking dependent");
    assert_eq!(waiting["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    let held = get(&client, "v1", "ConfigMap", "held").unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "the dependent is being deleted");
    // Its finalizer removed, the dependent goes, and then the owner.
    let mut released = held.clone();
    released["metadata"]["finalizers"] = json!([]);
    let update =
        Request::new(Verb::Update, "v1", "ConfigMap", Some("shop".into()), "held").with_body(released.to_string());
    client.execute_now(update).unwrap();
    assert!(get(&client, "v1", "ConfigMap", "held").is_none());
    assert!(get(&client, "apps/v1", "Deployment", "web").is_none());
}

#[test]
fn a_non_blocking_dependent_does_not_hold_a_foreground_owner() {
    let (_dir, _source, client) = cluster();
    let deployment = create(&client, "apps/v1", "Deployment", "web", json!({}));
    let mut extra = owned_by(&deployment, false);
    extra["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&client, "v1", "ConfigMap", "loose", extra);
    delete(&client, "apps/v1", "Deployment", "web", Some(PropagationPolicy::Foreground));
    assert!(get(&client, "apps/v1", "Deployment", "web").is_none());
    assert!(get(&client, "v1", "ConfigMap", "loose").unwrap()["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn an_orphan_delete_clears_the_dependents_references_and_finishes() {
    let (_dir, _source, client) = cluster();
    chain(&client, true);
    delete(&client, "apps/v1", "Deployment", "web", Some(PropagationPolicy::Orphan));
    assert!(get(&client, "apps/v1", "Deployment", "web").is_none(), "the orphan finalizer is removed");
    let replicas = get(&client, "apps/v1", "ReplicaSet", "web-1").expect("the dependent stays");
    assert!(replicas["metadata"].get("ownerReferences").is_none(), "{replicas}");
    assert!(get(&client, "v1", "Pod", "web-1-a").unwrap()["metadata"]["ownerReferences"].is_array(), "one level only");
}

#[test]
fn a_dependent_with_another_owner_loses_only_the_reference() {
    let (_dir, _source, client) = cluster();
    let first = create(&client, "v1", "ConfigMap", "first", json!({}));
    let second = create(&client, "v1", "ConfigMap", "second", json!({}));
    let mut extra = owned_by(&first, false);
    let other = owned_by(&second, false)["metadata"]["ownerReferences"][0].clone();
    extra["metadata"]["ownerReferences"].as_array_mut().unwrap().push(other);
    create(&client, "v1", "Secret", "shared", extra);
    delete(&client, "v1", "ConfigMap", "first", None);
    let shared = get(&client, "v1", "Secret", "shared").expect("another owner holds it");
    let owners: Vec<&str> =
        shared["metadata"]["ownerReferences"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(owners, ["second"]);
    delete(&client, "v1", "ConfigMap", "second", None);
    assert!(get(&client, "v1", "Secret", "shared").is_none());
}

#[test]
fn a_reference_to_a_recreated_owner_of_the_same_name_is_dangling() {
    let (_dir, _source, client) = cluster();
    let owner = create(&client, "v1", "ConfigMap", "owner", json!({}));
    let mut stale = owned_by(&owner, false);
    stale["metadata"]["ownerReferences"][0]["uid"] = json!("not-the-owners-uid");
    create(&client, "v1", "Secret", "stale", stale);
    create(&client, "v1", "Secret", "kept", owned_by(&owner, false));
    // Deleting something else does not collect what points at a wrong uid; deleting the
    // named owner does, as it does the right one's dependents.
    delete(&client, "v1", "ConfigMap", "owner", None);
    assert!(get(&client, "v1", "Secret", "kept").is_none());
    assert!(get(&client, "v1", "Secret", "stale").is_some(), "only removals of that uid are looked at");
}

#[test]
fn a_dependent_of_an_unserved_kind_s_owner_is_left_alone() {
    let (_dir, _source, client) = cluster();
    let owner = create(&client, "v1", "ConfigMap", "owner", json!({}));
    let mut extra = owned_by(&owner, false);
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Nothing", "name": "n", "uid": "u"});
    extra["metadata"]["ownerReferences"].as_array_mut().unwrap().push(unknown);
    create(&client, "v1", "Secret", "guarded", extra);
    delete(&client, "v1", "ConfigMap", "owner", None);
    assert!(get(&client, "v1", "Secret", "guarded").is_some(), "an owner that cannot be looked up is not gone");
}

#[test]
fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    let (_dir, source, client) = cluster();
    create(&client, "v1", "ConfigMap", "settings", json!({}));
    let mut held = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    held["data"] = json!({"a": "MQ=="});
    create(&client, "v1", "Secret", "held", held);
    let request = Request::new(Verb::Delete(DeleteOptions::default()), "v1", "Namespace", None, "shop");
    let answer = client.execute_now(request).unwrap().object.to_value().unwrap();
    assert_eq!(answer["status"]["phase"], "Terminating");
    assert!(get(&client, "v1", "ConfigMap", "settings").is_none());
    assert_eq!(source.namespace_phase("shop"), NamespacePhase::Terminating, "a finalizer holds its content");
    let refused = Request::new(Verb::Create, "v1", "ConfigMap", Some("shop".into()), "")
        .with_body(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}).to_string());
    assert!(matches!(client.execute_now(refused), Err(RequestError::Forbidden(_))));
    let mut released = get(&client, "v1", "Secret", "held").unwrap();
    released["metadata"]["finalizers"] = json!([]);
    let update =
        Request::new(Verb::Update, "v1", "Secret", Some("shop".into()), "held").with_body(released.to_string());
    client.execute_now(update).unwrap();
    let namespaces = source.collection("v1", "Namespace").unwrap().source;
    assert!(namespaces.get("shop").is_none(), "the namespace goes once it is empty");
}

#[test]
fn namespaces_exist_as_objects_for_the_system_and_every_namespace_the_files_use() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team-a}\n",
    )
    .unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let mut names: Vec<String> = source.objects("v1", "Namespace").iter().map(|o| o.name().to_owned()).collect();
    names.sort();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system", "team-a"]);
    let team = source.collection("v1", "Namespace").unwrap().source.get("team-a").unwrap().to_value().unwrap();
    assert_eq!(team["status"]["phase"], "Active");
    assert_eq!(team["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
    assert!(team["metadata"]["uid"].is_string() && team["metadata"]["creationTimestamp"].is_string());
}

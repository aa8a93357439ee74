//! Tests of cache scoping, calling the generated `Host` trait directly (no wasm).

use std::path::Path;

use super::*;
use crate::informer::indexer::owner_uid_index_func;
use crate::informer::{Indexer, OWNER_UID_INDEX};

fn obj(kind: &str, ns: Option<&str>, name: &str, owner: Option<&str>) -> Object {
    let mut meta = serde_json::json!({ "name": name });
    if let Some(ns) = ns {
        meta["namespace"] = ns.into();
    }
    if let Some(uid) = owner {
        meta["ownerReferences"] =
            serde_json::json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid}]);
    }
    let api_version = if kind == "ReplicaSet" { "apps/v1" } else { "v1" };
    Object::from_string(serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": meta}).to_string())
        .unwrap()
}

fn manifest(extra: &str) -> Manifest {
    let text = format!(
        "name: p\ncomponent: p.wasm\nresources:\n  - apiVersion: v1\n    kind: Pod\n    namespaces: [shop]\n{extra}"
    );
    Manifest::parse(&text, Path::new("plugin.yaml")).unwrap()
}

/// A host caching Pods, ReplicaSets and Nodes in `shop` and `other`.
fn access(extra: &str) -> CacheAccess {
    let pods = Indexer::new();
    pods.add_indexers([(OWNER_UID_INDEX.to_owned(), owner_uid_index_func())]).unwrap();
    pods.add(obj("Pod", Some("shop"), "web-2", Some("rs1")));
    pods.add(obj("Pod", Some("shop"), "web-1", Some("rs1")));
    pods.add(obj("Pod", Some("other"), "web-3", Some("rs1")));
    let replica_sets = Indexer::new();
    replica_sets.add(obj("ReplicaSet", Some("shop"), "rs", None));
    replica_sets.add(obj("ReplicaSet", Some("other"), "rs", None));
    let nodes = Indexer::new();
    nodes.add(obj("Node", None, "n1", None));
    let resolver = move |api_version: &str, kind: &str| match (api_version, kind) {
        ("v1", "Pod") => Some(pods.store()),
        ("apps/v1", "ReplicaSet") => Some(replica_sets.store()),
        ("v1", "Node") => Some(nodes.store()),
        _ => None,
    };
    CacheAccess::new(Arc::new(CacheScope::from_manifest(&manifest(extra))), Arc::new(resolver))
}

fn res(api_version: &str, kind: &str) -> Resource {
    Resource { api_version: api_version.into(), kind: kind.into() }
}

fn names(objects: &[WitObject]) -> Vec<String> {
    objects.iter().map(|o| format!("{}/{}", o.meta.namespace.as_deref().unwrap_or(""), o.meta.name)).collect()
}

fn not_permitted(result: Result<impl std::fmt::Debug, CacheError>) -> String {
    match result {
        Err(CacheError::NotPermitted(message)) => message,
        other => panic!("expected not-permitted, got {other:?}"),
    }
}

#[test]
fn get_reads_granted_namespaces_only() {
    let mut cache = access("");
    let pod = cache.get(res("v1", "Pod"), "shop/web-1".into()).unwrap().unwrap();
    assert_eq!(pod.meta.name, "web-1");
    assert!(pod.json.contains("\"web-1\""));
    assert!(cache.get(res("v1", "Pod"), "shop/missing".into()).unwrap().is_none());
    let why = not_permitted(cache.get(res("v1", "Pod"), "other/web-3".into()));
    assert!(why.contains("namespace `other`"), "{why}");
    let why = not_permitted(cache.get(res("v1", "Pod"), "web-3".into()));
    assert!(why.contains("cluster-scoped"), "{why}");
}

#[test]
fn ungranted_resources_are_not_permitted() {
    let mut cache = access("");
    let why = not_permitted(cache.get(res("apps/v1", "ReplicaSet"), "shop/rs".into()));
    assert!(why.contains("cache:"), "{why}");
    not_permitted(cache.list(res("apps/v1", "ReplicaSet"), None));
    not_permitted(cache.by_index(res("apps/v1", "ReplicaSet"), "namespace".into(), "shop".into()));
    // Same kind, other group/version: not the granted resource.
    not_permitted(cache.list(res("v2", "Pod"), None));
}

#[test]
fn cache_grants_extend_the_scope() {
    let mut cache = access(
        "cache:\n  - apiVersion: apps/v1\n    kind: ReplicaSet\n    namespaces: [shop]\n  - apiVersion: v1\n    kind: Node\n",
    );
    assert!(cache.get(res("apps/v1", "ReplicaSet"), "shop/rs".into()).unwrap().is_some());
    not_permitted(cache.get(res("apps/v1", "ReplicaSet"), "other/rs".into()));
    // A grant without namespaces covers cluster-scoped objects.
    assert_eq!(names(&cache.list(res("v1", "Node"), None).unwrap()), ["/n1"]);
}

#[test]
fn a_resource_both_watched_and_granted_gets_the_union_of_namespaces() {
    let mut cache = access("cache:\n  - apiVersion: v1\n    kind: Pod\n    namespaces: [other]\n");
    assert_eq!(names(&cache.list(res("v1", "Pod"), None).unwrap()), ["other/web-3", "shop/web-1", "shop/web-2"]);
    let mut all = access("cache:\n  - apiVersion: v1\n    kind: Pod\n");
    assert_eq!(all.scope().namespaces("v1", "Pod"), Some(&NamespaceGrant::All));
    assert!(all.get(res("v1", "Pod"), "other/web-3".into()).unwrap().is_some());
}

#[test]
fn list_is_filtered_and_sorted() {
    let mut cache = access("");
    assert_eq!(names(&cache.list(res("v1", "Pod"), None).unwrap()), ["shop/web-1", "shop/web-2"]);
    assert_eq!(names(&cache.list(res("v1", "Pod"), Some("shop".into())).unwrap()), ["shop/web-1", "shop/web-2"]);
    not_permitted(cache.list(res("v1", "Pod"), Some("other".into())));
}

#[test]
fn by_index_filters_by_namespace_and_reports_unknown_indexes() {
    let mut cache = access("");
    let owned = cache.by_index(res("v1", "Pod"), OWNER_UID_INDEX.into(), "rs1".into()).unwrap();
    assert_eq!(names(&owned), ["shop/web-1", "shop/web-2"]);
    assert_eq!(names(&cache.by_index(res("v1", "Pod"), "namespace".into(), "shop".into()).unwrap()).len(), 2);
    not_permitted(cache.by_index(res("v1", "Pod"), "namespace".into(), "other".into()));
    let unknown = cache.by_index(res("v1", "Pod"), "no-such-index".into(), "x".into());
    assert!(matches!(unknown, Err(CacheError::UnknownIndex(ref name)) if name == "no-such-index"), "{unknown:?}");
}

#[test]
fn granted_but_uncached_resources_say_so() {
    let mut cache = access("cache:\n  - apiVersion: batch/v1\n    kind: Job\n");
    let why = not_permitted(cache.list(res("batch/v1", "Job"), None));
    assert!(why.contains("not cached"), "{why}");
}

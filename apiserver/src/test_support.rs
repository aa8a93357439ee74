//! Fixtures shared by the unit tests: resource definitions, a fixed context, stored objects.

use serde_json::{Value, json};

use crate::{FixedContext, ResourceDef, Write, WriteOptions, create};

/// Pods: built-in, namespaced, with a status subresource.
pub fn pods() -> ResourceDef {
    ResourceDef::built_in("", "v1", "Pod", "pods", true, true)
}

/// Deployments: built-in, in the apps group, with a status subresource.
pub fn deployments() -> ResourceDef {
    ResourceDef::built_in("apps", "v1", "Deployment", "deployments", true, true)
}

/// ConfigMaps: built-in, no status subresource, no generation.
pub fn configmaps() -> ResourceDef {
    ResourceDef::built_in("", "v1", "ConfigMap", "configmaps", true, false)
}

/// Widgets: a custom resource with a status subresource.
pub fn widgets() -> ResourceDef {
    ResourceDef {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        namespaced: true,
        status_subresource: true,
        built_in: false,
    }
}

/// A context at 2024-01-01T00:00:00Z.
pub fn ctx() -> FixedContext {
    FixedContext::at_unix(1_704_067_200)
}

/// The object of a `Put`; panics on any other outcome.
pub fn put(write: Write) -> Value {
    match write {
        Write::Put(v) => v,
        other => panic!("expected Put, got {other:?}"),
    }
}

/// Creates `obj` in namespace `default` and stamps resourceVersion "1", as a store would.
pub fn stored(def: &ResourceDef, obj: Value) -> Value {
    let mut v = put(create(def, None, Some("default"), obj, &WriteOptions::default(), &ctx()).expect("create"));
    v["metadata"]["resourceVersion"] = json!("1");
    v
}

/// A deployment `web` with 3 replicas and one container `app`.
pub fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}
        ]}}},
    })
}

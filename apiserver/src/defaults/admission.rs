//! What kube-apiserver's default admission plugins and create strategies add to a created
//! object once it has a uid, beyond its kind's `SetDefaults`:
//!
//! - a Pod: its service account (`ServiceAccount`: `default`, and the service account
//!   token's projected volume `kube-api-access-xxxxx` mounted read-only in every container
//!   unless the pod opts out with `automountServiceAccountToken: false` or mounts something
//!   there itself), the not-ready and unreachable tolerations of 300 s
//!   (`DefaultTolerationSeconds`), and its priority (`Priority`: 0, or a system class's);
//! - a Job: the selector and template labels its create strategy generates from its uid
//!   (unless `manualSelector`), and those labels as its own when it has none.

use serde_json::{Map, Value, json};

use super::or_insert;
use crate::context::Context;
use crate::resource::ResourceDef;

/// Where the service account token is mounted.
const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The tolerations `DefaultTolerationSeconds` adds, unless the pod tolerates the taint.
const DEFAULT_TOLERATIONS: &[&str] = &["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];

/// The priority classes every cluster has, and their values.
const SYSTEM_PRIORITIES: &[(&str, i64)] =
    &[("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];

/// Adds what admission adds to `obj`, an object of `def` being created (with its uid).
pub fn admit_create(def: &ResourceDef, obj: &mut Value, ctx: &dyn Context) {
    if !def.built_in {
        return;
    }
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                service_account(spec, ctx);
                tolerations(spec);
                priority(spec);
            }
        }
        ("batch", "Job") => job_selector(obj),
        _ => {}
    }
}

/// The `ServiceAccount` admission plugin's: the account, and its token's volume.
fn service_account(spec: &mut Map<String, Value>, ctx: &dyn Context) {
    let account = match spec.get("serviceAccountName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(account) => account.to_owned(),
        None => {
            spec.get("serviceAccount").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or("default").to_owned()
        }
    };
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    if spec.get("automountServiceAccountToken") == Some(&Value::Bool(false)) || mounts_token_path(spec) {
        return;
    }
    let volume = format!("kube-api-access-{}", ctx.name_suffix());
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_PATH});
    for list in ["initContainers", "containers"] {
        for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(container) = container.as_object_mut() {
                let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
                if let Some(mounts) = mounts.as_array_mut() {
                    mounts.push(mount.clone());
                }
            }
        }
    }
    let projected = json!({
        "name": volume,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]
        }
    });
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(projected);
    }
}

/// Whether a container already mounts something at the token's path.
fn mounts_token_path(spec: &Map<String, Value>) -> bool {
    ["initContainers", "containers"].iter().any(|list| {
        spec.get(*list).and_then(Value::as_array).into_iter().flatten().any(|container| {
            container["volumeMounts"].as_array().into_iter().flatten().any(|m| m["mountPath"] == TOKEN_PATH)
        })
    })
}

/// `DefaultTolerationSeconds`: tolerate a not-ready or unreachable node for 300 s.
fn tolerations(spec: &mut Map<String, Value>) {
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else { return };
    for key in DEFAULT_TOLERATIONS {
        let tolerated = list.iter().any(|t| {
            let effect = t["effect"].as_str().unwrap_or_default();
            (t["key"] == *key || (t["operator"] == "Exists" && t.get("key").is_none_or(|k| k == "")))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// `Priority`: the value of the pod's class (0 without one), and how it preempts.
fn priority(spec: &mut Map<String, Value>) {
    let class = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or_default();
    let value = match class {
        "" => Some(0),
        class => SYSTEM_PRIORITIES.iter().find(|(name, _)| *name == class).map(|(_, value)| *value),
    };
    if let Some(value) = value {
        or_insert(spec, "priority", json!(value));
        or_insert(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// The Job strategy's `generateSelector`, and `SetDefaults_Job`'s labels from the template.
fn job_selector(job: &mut Value) {
    let uid = job.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    spec.insert("manualSelector".into(), json!(false));
    spec.insert("selector".into(), json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
    let template = spec.entry("template").or_insert_with(|| json!({}));
    let Some(template) = template.as_object_mut() else { return };
    let meta = template.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else { return };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    let Some(labels) = labels.as_object_mut() else { return };
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        labels.insert(key.into(), json!(value));
    }
    let labels = Value::Object(labels.clone());
    if let Some(meta) = job.get_mut("metadata").and_then(Value::as_object_mut) {
        let own = meta.get("labels").and_then(Value::as_object).is_some_and(|l| !l.is_empty());
        if !own {
            meta.insert("labels".into(), labels);
        }
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;

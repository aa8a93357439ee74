//! The defaults of workloads, as `SetDefaults_Deployment`, `_ReplicaSet`, `_StatefulSet`,
//! `_DaemonSet`, `_Job` and `_CronJob` do: replicas 1, rolling updates of 25% (a
//! Deployment), 1 (a DaemonSet) or partition 0 (a StatefulSet, whose claim templates are
//! typed and `Filesystem`), ten revisions kept, a
//! Deployment's progress deadline of 600 s, a Job's completions, parallelism, backoff limit
//! and completion mode, a CronJob's concurrency policy and history limits (not its job
//! template's Job fields) — and their pod
//! templates' ([`super::pods`]).

use serde_json::{Value, json};

use super::{or_insert, pods};

/// Fills in the defaults of the workload `obj` of `kind` (in the `apps` or `batch` group).
pub(super) fn apply(group: &str, kind: &str, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    match (group, kind) {
        ("apps", "Deployment") => {
            or_insert(spec, "replicas", json!(1));
            or_insert(spec, "strategy", json!({"type": "RollingUpdate"}));
            if let Some(strategy) = spec.get_mut("strategy").and_then(Value::as_object_mut)
                && strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            {
                or_insert(strategy, "rollingUpdate", json!({}));
                if let Some(rolling) = strategy.get_mut("rollingUpdate").and_then(Value::as_object_mut) {
                    or_insert(rolling, "maxUnavailable", json!("25%"));
                    or_insert(rolling, "maxSurge", json!("25%"));
                }
            }
            or_insert(spec, "revisionHistoryLimit", json!(10));
            or_insert(spec, "progressDeadlineSeconds", json!(600));
        }
        ("apps", "ReplicaSet") => or_insert(spec, "replicas", json!(1)),
        ("apps", "StatefulSet") => {
            or_insert(spec, "replicas", json!(1));
            or_insert(spec, "podManagementPolicy", json!("OrderedReady"));
            or_insert(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if let Some(strategy) = spec.get_mut("updateStrategy").and_then(Value::as_object_mut)
                && strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            {
                or_insert(strategy, "rollingUpdate", json!({"partition": 0}));
                if let Some(rolling) = strategy.get_mut("rollingUpdate").and_then(Value::as_object_mut) {
                    or_insert(rolling, "partition", json!(0));
                    or_insert(rolling, "maxUnavailable", json!(1));
                }
            }
            for claim in spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(claim) = claim.as_object_mut() {
                    or_insert(claim, "apiVersion", json!("v1"));
                    or_insert(claim, "kind", json!("PersistentVolumeClaim"));
                    or_insert(claim, "status", json!({"phase": "Pending"}));
                    if let Some(claim_spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
                        or_insert(claim_spec, "volumeMode", json!("Filesystem"));
                    }
                }
            }
            or_insert(spec, "revisionHistoryLimit", json!(10));
            or_insert(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        ("apps", "DaemonSet") => {
            or_insert(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if let Some(strategy) = spec.get_mut("updateStrategy").and_then(Value::as_object_mut)
                && strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            {
                or_insert(strategy, "rollingUpdate", json!({"maxUnavailable": 1, "maxSurge": 0}));
            }
            or_insert(spec, "revisionHistoryLimit", json!(10));
        }
        ("batch", "Job") => job_fields(spec),
        ("batch", "CronJob") => {
            or_insert(spec, "concurrencyPolicy", json!("Allow"));
            or_insert(spec, "suspend", json!(false));
            or_insert(spec, "successfulJobsHistoryLimit", json!(3));
            or_insert(spec, "failedJobsHistoryLimit", json!(1));
            // The job template's own fields stay as written (SetDefaults_Job is the Job's);
            // its pod template gets the pod defaults.
            if let Some(template) = spec.get_mut("jobTemplate").and_then(|t| t.pointer_mut("/spec/template/spec")) {
                pods::pod_spec(template);
            }
            return;
        }
        _ => return,
    }
    if let Some(template) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
        pods::pod_spec(template);
    }
}

/// A Job's spec defaults.
fn job_fields(spec: &mut serde_json::Map<String, Value>) {
    if spec.get("completions").is_none_or(Value::is_null) && spec.get("parallelism").is_none_or(Value::is_null) {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    or_insert(spec, "parallelism", json!(1));
    or_insert(spec, "backoffLimit", json!(6));
    or_insert(spec, "completionMode", json!("NonIndexed"));
    or_insert(spec, "suspend", json!(false));
    let replacement =
        if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) { "Failed" } else { "TerminatingOrFailed" };
    or_insert(spec, "podReplacementPolicy", json!(replacement));
}

//! Fields kube-apiserver fills in on built-in objects it stores (its `SetDefaults_*`
//! functions and the kinds' create strategies): a Namespace gets the
//! `kubernetes.io/metadata.name` label (always its name), `spec.finalizers: [kubernetes]`
//! and `status.phase: Active`; a Secret gets `type: Opaque`; Pods and every pod template
//! their spec's and containers' defaults ([`pods`]); Services their type, ports and a
//! cluster IP ([`service`]); workloads their replicas, strategies and limits
//! ([`workloads`]). A field the object sets is kept (but the Namespace's name label, which
//! the API server always sets). [`initial_status`] is the status a create starts with;
//! [`admit_create`] adds what admission plugins and create strategies add to a created Pod
//! or Job once it has a uid ([`admission`]).

mod admission;
mod pods;
mod service;
mod workloads;

use serde_json::{Map, Value, json};

use crate::resource::ResourceDef;

pub use admission::admit_create;

/// Sets `key` to `value` unless it is there (and not null); returns nothing.
fn or_insert(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// A NetworkPolicy's: its ports' protocol, and `policyTypes` from the rules it has
/// (`Ingress` always, `Egress` when it has egress rules).
fn network_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for direction in ["ingress", "egress"] {
        for rule in spec.get_mut(direction).and_then(Value::as_array_mut).into_iter().flatten() {
            for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(port) = port.as_object_mut() {
                    or_insert(port, "protocol", json!("TCP"));
                }
            }
        }
    }
    let egress = spec.get("egress").is_some_and(|e| !e.is_null());
    let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
    or_insert(spec, "policyTypes", types);
}

/// A CustomResourceDefinition's: `conversion: None`, and its list kind and singular name
/// from its kind.
fn definition(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    or_insert(spec, "conversion", json!({"strategy": "None"}));
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !kind.is_empty() {
            or_insert(names, "listKind", json!(format!("{kind}List")));
            or_insert(names, "singular", json!(kind.to_lowercase()));
        }
    }
}

/// The status a created object of `def` starts with, where kube-apiserver gives one (its
/// create strategies and the fields of the status types that are never omitted): set on
/// `obj` after the request's own status is dropped.
pub fn initial_status(def: &ResourceDef, obj: &mut Value) {
    if !def.built_in {
        return;
    }
    let status = match (def.group.as_str(), def.kind.as_str()) {
        ("", "Namespace") => json!({"phase": "Active"}),
        ("", "Pod") => {
            let qos = obj.get("spec").map_or("BestEffort", pods::qos_class);
            json!({"phase": "Pending", "qosClass": qos})
        }
        ("", "Service") => json!({"loadBalancer": {}}),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("", "ReplicationController") | ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0,
        }),
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") => json!({}),
        _ => return,
    };
    if let Some(map) = obj.as_object_mut() {
        map.insert("status".into(), status);
    }
}

/// The fields of a `v1` Event Go's JSON writes even when unset (they have no `omitempty`),
/// with their zero values: what kube-apiserver's answers always carry.
pub fn core_event_zeros(event: &mut Map<String, Value>) {
    for (field, zero) in [
        ("involvedObject", json!({})),
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
    ] {
        event.entry(field).or_insert(zero);
    }
}

/// The label every Namespace carries: its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Fills in the defaults of `obj`, an object of `def` about to be stored.
pub fn apply(def: &ResourceDef, obj: &mut Value) {
    if !def.built_in {
        return;
    }
    match (def.group.as_str(), def.kind.as_str()) {
        ("apps" | "batch", kind) => return workloads::apply(&def.group, kind, obj),
        ("networking.k8s.io", "NetworkPolicy") => return network_policy(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => return definition(obj),
        ("", "Service") => return service::apply(obj),
        ("", "Pod") => {
            if let Some(spec) = obj.get_mut("spec") {
                pods::pod_spec(spec);
                if let Some(spec) = spec.as_object_mut() {
                    or_insert(spec, "enableServiceLinks", json!(true));
                }
            }
            return;
        }
        ("", "PodTemplate") => {
            if let Some(spec) = obj.pointer_mut("/template/spec") {
                pods::pod_spec(spec);
            }
            return;
        }
        ("", "ReplicationController") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                or_insert(spec, "replicas", json!(1));
            }
            if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
                pods::pod_spec(spec);
            }
            return;
        }
        ("", _) => {}
        _ => return,
    }
    let Some(map) = obj.as_object_mut() else { return };
    match def.kind.as_str() {
        "Namespace" => {
            let name = map.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(str::to_owned);
            if let (Some(name), Some(Value::Object(meta))) = (name, map.get_mut("metadata")) {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels[NAMESPACE_NAME_LABEL] = json!(name);
            }
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if spec.is_object() && spec.get("finalizers").is_none() {
                spec["finalizers"] = json!(["kubernetes"]);
            }
            let status = map.entry("status").or_insert_with(|| json!({}));
            if status.is_object() && status.get("phase").is_none() {
                status["phase"] = json!("Active");
            }
        }
        "Event" => core_event_zeros(map),
        "Secret" if map.get("type").is_none_or(|t| t.as_str().is_some_and(str::is_empty)) => {
            map.insert("type".into(), json!("Opaque"));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(kind: &str, plural: &str) -> ResourceDef {
        ResourceDef::built_in("", "v1", kind, plural, kind == "Namespace", false)
    }

    #[test]
    fn a_namespace_gets_its_name_label_finalizer_and_phase() {
        let mut ns = json!({"metadata": {"name": "shop", "labels": {"kubernetes.io/metadata.name": "forged"}}});
        apply(&def("Namespace", "namespaces"), &mut ns);
        assert_eq!(ns["metadata"]["labels"][NAMESPACE_NAME_LABEL], "shop", "the label is always the name");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"]["phase"], "Active");
        let mut terminating =
            json!({"metadata": {"name": "old"}, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}});
        apply(&def("Namespace", "namespaces"), &mut terminating);
        assert_eq!(terminating["spec"]["finalizers"], json!([]), "set fields are kept");
        assert_eq!(terminating["status"]["phase"], "Terminating");
    }

    #[test]
    fn a_core_event_has_the_fields_go_always_writes() {
        let mut event = json!({"metadata": {"name": "e"}, "message": "m", "firstTimestamp": "2026-01-01T00:00:00Z"});
        apply(&def("Event", "events"), &mut event);
        assert_eq!(event["source"], json!({}));
        assert_eq!(event["lastTimestamp"], Value::Null);
        assert!(event.as_object().unwrap().contains_key("eventTime"));
        assert_eq!(event["reportingComponent"], "");
        assert_eq!(event["firstTimestamp"], "2026-01-01T00:00:00Z", "set fields are kept");
    }

    #[test]
    fn a_secret_without_a_type_is_opaque() {
        let mut secret = json!({"metadata": {"name": "s"}});
        apply(&def("Secret", "secrets"), &mut secret);
        assert_eq!(secret["type"], "Opaque");
        let mut typed = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
        apply(&def("Secret", "secrets"), &mut typed);
        assert_eq!(typed["type"], "kubernetes.io/tls");
        let mut config = json!({"metadata": {"name": "c"}});
        apply(&def("ConfigMap", "configmaps"), &mut config);
        assert_eq!(config, json!({"metadata": {"name": "c"}}), "other kinds get nothing");
    }

    #[test]
    fn a_deployment_gets_its_strategy_limits_and_template_defaults() {
        let def = ResourceDef::built_in("apps", "v1", "Deployment", "deployments", true, true);
        let mut deployment = json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry.example:5000/b:1.2"},
        ]}}}});
        apply(&def, &mut deployment);
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(
            (spec["revisionHistoryLimit"].clone(), spec["progressDeadlineSeconds"].clone()),
            (json!(10), json!(600))
        );
        let pod = &spec["template"]["spec"];
        assert_eq!((pod["restartPolicy"].clone(), pod["dnsPolicy"].clone()), (json!("Always"), json!("ClusterFirst")));
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always", "no tag is latest");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "IfNotPresent", "a port is not a tag");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["containers"][0]["terminationMessagePath"], "/dev/termination-log");
        let mut recreate = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        apply(&def, &mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}), "set fields are kept");
        assert_eq!(recreate["spec"]["replicas"], 0);
    }

    #[test]
    fn a_job_and_a_pod_get_theirs_and_a_created_pod_starts_pending() {
        let job_def = ResourceDef::built_in("batch", "v1", "Job", "jobs", true, true);
        let mut job = json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "c:1"}]}}}});
        apply(&job_def, &mut job);
        assert_eq!((job["spec"]["completions"].clone(), job["spec"]["parallelism"].clone()), (json!(1), json!(1)));
        assert_eq!(
            (job["spec"]["backoffLimit"].clone(), job["spec"]["completionMode"].clone()),
            (json!(6), json!("NonIndexed"))
        );
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let pod_def = ResourceDef::built_in("", "v1", "Pod", "pods", true, true);
        let limits = json!({"cpu": "1", "memory": "1Gi"});
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "c:1", "resources": {"limits": limits}}]}});
        apply(&pod_def, &mut pod);
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
        initial_status(&pod_def, &mut pod);
        assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "Guaranteed"}));
    }
}

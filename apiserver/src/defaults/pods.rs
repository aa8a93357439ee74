//! The defaults of a pod spec (a Pod's, or a workload's template), as
//! `SetDefaults_PodSpec`, `SetDefaults_Container`, `SetDefaults_ContainerPort`, the probes'
//! and the volumes' do: DNS and restart policies, the scheduler, the grace period, an empty
//! security context; each container's image pull policy (`Always` for `:latest` or no tag),
//! termination message path and policy, an empty `resources`, ports' protocol, probes'
//! timings; ConfigMap, Secret and projected volumes' mode 0644, an `emptyDir`'s nothing.

use serde_json::{Map, Value, json};

use super::or_insert;

/// Fills in the defaults of the pod spec `spec`.
pub(super) fn pod_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else { return };
    or_insert(map, "restartPolicy", json!("Always"));
    or_insert(map, "terminationGracePeriodSeconds", json!(30));
    or_insert(map, "dnsPolicy", json!("ClusterFirst"));
    or_insert(map, "securityContext", json!({}));
    or_insert(map, "schedulerName", json!("default-scheduler"));
    // The deprecated `serviceAccount` mirrors `serviceAccountName`.
    if let Some(account) = map.get("serviceAccountName").filter(|a| a.as_str().is_some_and(|a| !a.is_empty())).cloned()
    {
        or_insert(map, "serviceAccount", account);
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in map.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(container) = container.as_object_mut() {
                self::container(container);
            }
        }
    }
    for volume in map.get_mut("volumes").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(volume) = volume.as_object_mut() {
            self::volume(volume);
        }
    }
}

/// The image pull policy of `image`: `Always` when its tag is `latest` or missing (and it
/// has no digest), else `IfNotPresent`.
pub(super) fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None | Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default().to_owned();
    or_insert(c, "imagePullPolicy", json!(pull_policy(&image)));
    or_insert(c, "terminationMessagePath", json!("/dev/termination-log"));
    or_insert(c, "terminationMessagePolicy", json!("File"));
    or_insert(c, "resources", json!({}));
    for port in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(port) = port.as_object_mut() {
            or_insert(port, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(probe).and_then(Value::as_object_mut) {
            or_insert(probe, "timeoutSeconds", json!(1));
            or_insert(probe, "periodSeconds", json!(10));
            or_insert(probe, "successThreshold", json!(1));
            or_insert(probe, "failureThreshold", json!(3));
            if let Some(get) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
                or_insert(get, "path", json!("/"));
                or_insert(get, "scheme", json!("HTTP"));
            }
        }
    }
    for env in c.get_mut("env").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(field) = env.pointer_mut("/valueFrom/fieldRef").and_then(Value::as_object_mut) {
            or_insert(field, "apiVersion", json!("v1"));
        }
    }
}

fn volume(v: &mut Map<String, Value>) {
    for source in ["configMap", "secret", "projected", "downwardAPI"] {
        if let Some(source) = v.get_mut(source).and_then(Value::as_object_mut) {
            or_insert(source, "defaultMode", json!(420));
        }
    }
}

/// A Pod's quality of service class, as `GetPodQOS` decides it from its containers'
/// requests and limits.
pub(super) fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .collect();
    let resources = |c: &Value, which: &str| -> Map<String, Value> {
        c.pointer(&format!("/resources/{which}")).and_then(Value::as_object).cloned().unwrap_or_default()
    };
    let relevant = |m: &Map<String, Value>| m.keys().any(|k| k == "cpu" || k == "memory");
    if containers.iter().all(|c| !relevant(&resources(c, "requests")) && !relevant(&resources(c, "limits"))) {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (requests, limits) = (resources(c, "requests"), resources(c, "limits"));
        ["cpu", "memory"].iter().all(|r| {
            let limit = limits.get(*r);
            limit.is_some() && requests.get(*r).is_none_or(|q| Some(q) == limit)
        })
    });
    if guaranteed { "Guaranteed" } else { "Burstable" }
}

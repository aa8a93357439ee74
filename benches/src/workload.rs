//! The benchmarks' workload: generated, realistic Pods of about 4 KB and about 16 KB.
//!
//! A Pod here looks like one a Deployment's ReplicaSet created and a kubelet runs: labels
//! (`app`, `pod-template-hash`, the `app.kubernetes.io/*` set), annotations, an owner
//! reference to its ReplicaSet, `managedFields` written by kube-controller-manager and by the
//! kubelet (their `fieldsV1` built from the fields actually present, as the API server
//! records them), containers with ports, environment, resources, probes and volume mounts,
//! volumes, tolerations, and a `Running` status with conditions and container statuses.
//!
//! - [`PodSize::Small`] (~4 KB of JSON): one container, a handful of environment variables.
//! - [`PodSize::Large`] (~16 KB): an init container, the application, two sidecars, many
//!   environment variables and a `last-applied-configuration`-sized annotation.
//!
//! Pods are spread over several namespaces ([`namespace`]); [`touch`] makes the change a
//! kubelet status update makes (a container restart count, a condition's probe time), which
//! is what most MODIFIED events of Pods in a cluster are.

use serde_json::{Map, Value, json};

/// How big the generated Pods are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodSize {
    /// About 4 KB of JSON (managedFields included).
    Small,
    /// About 16 KB of JSON (managedFields included).
    Large,
}

impl PodSize {
    /// Both sizes, small first.
    pub const ALL: [PodSize; 2] = [PodSize::Small, PodSize::Large];

    /// A short label for benchmark ids and tables: `4KB` or `16KB`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Small => "4KB",
            Self::Large => "16KB",
        }
    }

    fn shape(self) -> Shape {
        match self {
            Self::Small => Shape { sidecars: 0, init: false, env: 0, mounts: 0, rich: false, annotation_bytes: 0 },
            Self::Large => Shape { sidecars: 1, init: true, env: 6, mounts: 2, rich: true, annotation_bytes: 600 },
        }
    }
}

struct Shape {
    sidecars: usize,
    init: bool,
    env: usize,
    mounts: usize,
    /// Liveness probes and container security contexts.
    rich: bool,
    annotation_bytes: usize,
}

/// The number of namespaces Pods are spread over by default.
pub const NAMESPACES: usize = 8;

/// The namespace of the `index`-th Pod when spreading over `namespaces` namespaces.
pub fn namespace(index: usize, namespaces: usize) -> String {
    format!("bench-{:02}", index % namespaces.max(1))
}

/// A stable pseudo-random hex string (no RNG state: Pods are the same in every run).
fn hex(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x2545_F491_4F6C_DD1D);
    let mut out = String::with_capacity(len);
    while out.len() < len {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 29;
        out.push_str(&format!("{x:016x}"));
    }
    out.truncate(len);
    out
}

fn app_of(index: usize) -> String {
    const APPS: [&str; 6] = ["checkout", "catalog", "payments", "search", "frontend", "ledger"];
    APPS[index % APPS.len()].to_owned()
}

fn container(name: &str, image: &str, index: usize, shape: &Shape, port: u16) -> Value {
    let env: Vec<Value> = (0..shape.env)
        .map(|i| match i % 3 {
            0 => json!({"name": format!("FEATURE_FLAG_{i}"), "value": if i.is_multiple_of(2) { "true" } else { "false" }}),
            1 => json!({"name": format!("SERVICE_{i}_ENDPOINT"),
                        "value": format!("http://svc-{i}.platform.svc.cluster.local:{}", 8000 + i)}),
            _ => json!({"name": format!("POD_FIELD_{i}"),
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
        })
        .collect();
    let mounts: Vec<Value> = (0..shape.mounts)
        .map(|i| {
            json!({"name": format!("{name}-data-{i}"), "mountPath": format!("/var/lib/{name}/{i}"),
                        "readOnly": i % 2 == 1})
        })
        .chain(std::iter::once(json!({"name": "kube-api-access", "readOnly": true,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})))
        .collect();
    let mut container = json!({
        "name": name,
        "image": format!("{image}:{}.{}.{}", 1 + index % 3, index % 10, index % 7),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
        "volumeMounts": mounts,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    });
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    if shape.rich {
        container["readinessProbe"] = json!({"httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3});
        container["livenessProbe"] = json!({"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
            "failureThreshold": 3});
        container["securityContext"] = json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
            "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}});
    }
    container
}

fn container_status(name: &str, image: &str, seed: u64) -> Value {
    json!({
        "name": name,
        "ready": true,
        "restartCount": 0,
        "started": true,
        "image": image,
        "imageID": format!("{}@sha256:{}", image.split(':').next().unwrap_or(image), hex(seed, 64)),
        "containerID": format!("containerd://{}", hex(seed + 1, 64)),
        "state": {"running": {"startedAt": "2025-01-06T09:12:44Z"}},
        "lastState": {},
    })
}

/// The `fieldsV1` a manager owns for a JSON value: every member as `f:<name>`, list items of
/// named objects as `k:{"name":…}`, as the API server records server-side field ownership.
fn fields_v1(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(format!("f:{k}"), fields_v1(v));
            }
            Value::Object(out)
        }
        Value::Array(items) if items.iter().all(|i| i.get("name").is_some()) => {
            let mut out = Map::new();
            for item in items {
                let mut entry = fields_v1(item);
                if let Value::Object(m) = &mut entry {
                    m.insert(".".into(), json!({}));
                }
                let key = format!("k:{{\"name\":\"{}\"}}", item["name"].as_str().unwrap_or_default());
                out.insert(key, entry);
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// The `index`-th generated Pod of `size` in `namespace`, without the fields the API server
/// sets (uid, resourceVersion, creationTimestamp, generation).
pub fn pod(size: PodSize, namespace: &str, index: usize) -> Value {
    let shape = size.shape();
    let app = app_of(index);
    let hash = hex(index as u64 / 16, 10);
    let name = format!("{app}-{hash}-{}", hex(index as u64, 5));
    let image = format!("registry.example.com/shop/{app}");
    let mut containers = vec![container(&app, &image, index, &shape, 8080)];
    for s in 0..shape.sidecars {
        let sidecar = ["istio-proxy", "log-shipper"][s % 2];
        containers.push(container(sidecar, &format!("registry.example.com/platform/{sidecar}"), index, &shape, 15000));
    }
    let init: Vec<Value> = if shape.init {
        vec![container("init-schema", &format!("{image}-migrations"), index, &shape, 9000)]
    } else {
        Vec::new()
    };
    let mut volumes: Vec<Value> = containers
        .iter()
        .chain(&init)
        .flat_map(|c| c["volumeMounts"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["name"] != "kube-api-access")
        .map(|m| json!({"name": m["name"], "emptyDir": {}}))
        .collect();
    volumes.push(json!({"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}));
    let team = ["checkout", "discovery", "core"][index % 3];
    let mut labels = json!({
        "app": app,
        "pod-template-hash": hash,
        "app.kubernetes.io/instance": format!("{app}-prod"),
        "team": team,
    });
    let mut annotations = json!({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9080",
    });
    if shape.rich {
        labels["app.kubernetes.io/name"] = json!(app);
        labels["app.kubernetes.io/version"] = json!(format!("1.{}.{}", index % 10, index % 7));
        labels["app.kubernetes.io/part-of"] = json!("shop");
        labels["tier"] = json!(if index.is_multiple_of(2) { "backend" } else { "frontend" });
        annotations["kubectl.kubernetes.io/restartedAt"] = json!("2025-01-06T09:10:00Z");
        annotations["checksum/config"] = json!(hex(index as u64 + 7, 64));
    }
    if shape.annotation_bytes > 0 {
        // The kind of large annotation real Pods carry (rendered configs, injected templates).
        annotations["sidecar.istio.io/status"] = json!(format!(
            "{{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":[\"istio-envoy\"],\"imagePullSecrets\":null,\"revision\":\"{}\"}}",
            hex(index as u64 + 3, shape.annotation_bytes)
        ));
    }
    let mut spec = json!({
        "containers": containers,
        "initContainers": init,
        "volumes": volumes,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": app,
        "serviceAccount": app,
        "nodeName": format!("node-{:03}", index % 50),
        "schedulerName": "default-scheduler",
    });
    if shape.rich {
        spec["priority"] = json!(0);
        spec["enableServiceLinks"] = json!(true);
        spec["preemptionPolicy"] = json!("PreemptLowerPriority");
        spec["tolerations"] = json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ]);
        spec["securityContext"] =
            json!({"runAsUser": 1000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}});
    }
    let statuses: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(i, c)| {
            container_status(
                c["name"].as_str().unwrap_or_default(),
                c["image"].as_str().unwrap_or_default(),
                index as u64 * 8 + i as u64,
            )
        })
        .collect();
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "lastProbeTime": null,
                                         "lastTransitionTime": "2025-01-06T09:12:45Z"})
    };
    let conditions =
        ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"].map(condition);
    let mut status = json!({
        "phase": "Running",
        "conditions": conditions,
        "hostIP": format!("10.0.{}.{}", index % 50, 10 + index % 200),
        "podIP": format!("10.244.{}.{}", index % 250, index % 253 + 2),
        "startTime": "2025-01-06T09:12:40Z",
        "containerStatuses": statuses,
        "qosClass": "Burstable",
    });
    if shape.rich {
        status["hostIPs"] = json!([{"ip": status["hostIP"]}]);
        status["podIPs"] = json!([{"ip": status["podIP"]}]);
    }
    let controller_fields = json!({"f:metadata": fields_v1(&json!({"labels": labels, "annotations": annotations,
        "generateName": "", "ownerReferences": {}})), "f:spec": fields_v1(&spec)});
    let kubelet_fields = json!({"f:status": fields_v1(&status)});
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{app}-{hash}-"),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{hash}"),
                "uid": format!("{}-{}-{}-{}-{}", hex(index as u64 / 16, 8), hex(1, 4), hex(2, 4), hex(3, 4), hex(4, 12)),
                "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2025-01-06T09:12:40Z", "fieldsType": "FieldsV1", "fieldsV1": controller_fields},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2025-01-06T09:12:45Z",
                 "fieldsType": "FieldsV1", "fieldsV1": kubelet_fields, "subresource": "status"},
            ],
        },
        "spec": spec,
        "status": status,
    })
}

/// The `count` Pods of a workload, spread over [`NAMESPACES`] namespaces.
pub fn pods(size: PodSize, count: usize) -> Vec<Value> {
    (0..count).map(|i| pod(size, &namespace(i, NAMESPACES), i)).collect()
}

/// The change a kubelet status update makes: the first container's restart count becomes
/// `seq` and the Ready condition's probe time moves.
pub fn touch(pod: &mut Value, seq: u64) {
    if let Some(status) = pod.pointer_mut("/status/containerStatuses/0") {
        status["restartCount"] = json!(seq);
    }
    if let Some(ready) = pod.pointer_mut("/status/conditions/2") {
        ready["lastProbeTime"] = json!(format!("2025-01-06T10:{:02}:{:02}Z", (seq / 60) % 60, seq % 60));
    }
}

/// The namespace and name of a generated Pod, as a store key.
pub fn key_of(pod: &Value) -> String {
    let meta = &pod["metadata"];
    format!("{}/{}", meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_about_4_and_16_kb_and_pods_are_distinct() {
        for (size, low, high) in [(PodSize::Small, 3_800, 4_600), (PodSize::Large, 15_000, 17_000)] {
            let pods = pods(size, 64);
            for p in &pods {
                let len = p.to_string().len();
                assert!((low..high).contains(&len), "{size:?} pod is {len} bytes");
            }
            let keys: std::collections::HashSet<_> = pods.iter().map(key_of).collect();
            assert_eq!(keys.len(), pods.len());
        }
    }

    #[test]
    fn managed_fields_are_a_large_share_as_in_real_clusters() {
        let pod = pod(PodSize::Small, "ns", 1);
        let total = pod.to_string().len();
        let managed = pod["metadata"]["managedFields"].to_string().len();
        assert!(managed * 4 > total, "managedFields are {managed} of {total} bytes");
    }

    #[test]
    fn touch_changes_status_only() {
        let mut p = pod(PodSize::Small, "ns", 3);
        let before = p.clone();
        touch(&mut p, 5);
        assert_ne!(p, before);
        assert_eq!(p["spec"], before["spec"]);
        assert_eq!(p["metadata"], before["metadata"]);
    }
}

//! The printers of configuration, networking, RBAC and cluster kinds: Services,
//! ConfigMaps, Secrets, Namespaces, ServiceAccounts, Events, Nodes, PersistentVolumeClaims,
//! Ingresses, Leases, RBAC's roles and bindings, CustomResourceDefinitions.

use serde_json::{Value, json};

use super::{AGE, NAME, Printer, age, col, int, items, or_none, since, text};

pub(super) fn printer(group: &str, kind: &str) -> Option<Printer> {
    Some(match (group, kind) {
        ("", "Service") => SERVICE,
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Namespace") => NAMESPACE,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        ("", "Event") => EVENT,
        ("", "Node") => NODE,
        ("", "PersistentVolumeClaim") => CLAIM,
        ("networking.k8s.io", "Ingress") => INGRESS,
        ("coordination.k8s.io", "Lease") => LEASE,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => ROLE,
        ("rbac.authorization.k8s.io", "RoleBinding") => ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => ROLE_BINDING,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => CREATED_AT,
        _ => return None,
    })
}

const SERVICE: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", 0, "The type of the service."),
        col("Cluster-IP", "string", 0, "The cluster IP of the service."),
        col("External-IP", "string", 0, "The external IP of the service."),
        col("Port(s)", "string", 0, "The ports of the service."),
        AGE,
        col("Selector", "string", 1, "The selector of the service."),
    ],
    cells: |s, now| {
        let kind = match text(s, "/spec/type") {
            "" => "ClusterIP",
            kind => kind,
        };
        let ports: Vec<String> = items(s, "/spec/ports")
            .iter()
            .map(|p| {
                let protocol = match text(p, "/protocol") {
                    "" => "TCP",
                    protocol => protocol,
                };
                match int(p, "/nodePort") {
                    0 => format!("{}/{protocol}", int(p, "/port")),
                    node => format!("{}:{node}/{protocol}", int(p, "/port")),
                }
            })
            .collect();
        let external: Vec<&str> = items(s, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
        let external = match (kind, external.is_empty()) {
            ("ExternalName", _) => text(s, "/spec/externalName").to_owned(),
            ("LoadBalancer", true) => "<pending>".to_owned(),
            (_, true) => "<none>".to_owned(),
            (_, false) => external.join(","),
        };
        let cluster_ip = if kind == "ExternalName" { "<none>".into() } else { or_none(text(s, "/spec/clusterIP")) };
        vec![
            json!(super::name(s)),
            json!(kind),
            json!(cluster_ip),
            json!(external),
            json!(if ports.is_empty() { "<none>".to_owned() } else { ports.join(",") }),
            age(s, now),
            json!(super::labels(s, "/spec/selector")),
        ]
    },
};

/// The number of keys under `data` and `binaryData`.
fn data_count(object: &Value) -> usize {
    ["/data", "/binaryData"].iter().filter_map(|p| object.pointer(p).and_then(Value::as_object)).map(|m| m.len()).sum()
}

const CONFIG_MAP: Printer = Printer {
    columns: &[NAME, col("Data", "string", 0, CONFIG_MAP_DATA_DOC), AGE],
    cells: |c, now| vec![json!(super::name(c)), json!(data_count(c)), age(c, now)],
};

/// ConfigMap's documentation of `data`, which kube-apiserver's Table quotes.
const CONFIG_MAP_DATA_DOC: &str = "Data contains the configuration data. Each key must consist of alphanumeric \
    characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys \
    stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation \
    process.";

const SECRET: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", 0, "The type of the secret."),
        col("Data", "integer", 0, "The number of keys in the secret."),
        AGE,
    ],
    cells: |s, now| vec![json!(super::name(s)), json!(text(s, "/type")), json!(data_count(s)), age(s, now)],
};

const NAMESPACE: Printer = Printer {
    columns: &[NAME, col("Status", "string", 0, "The status of the namespace"), AGE],
    cells: |n, now| vec![json!(super::name(n)), json!(text(n, "/status/phase")), age(n, now)],
};

const SERVICE_ACCOUNT: Printer = Printer {
    columns: &[NAME, col("Secrets", "string", 0, "The number of secrets of the service account."), AGE],
    cells: |s, now| vec![json!(super::name(s)), json!(items(s, "/secrets").len()), age(s, now)],
};

const EVENT: Printer = Printer {
    columns: &[
        col("Last Seen", "string", 0, "The last time the event was seen."),
        col("Type", "string", 0, "The type of the event."),
        col("Reason", "string", 0, "The reason of the event."),
        col("Object", "string", 0, "The object the event is about."),
        col("Subobject", "string", 1, "The part of the object the event is about."),
        col("Source", "string", 1, "The component that reported the event."),
        col("Message", "string", 0, "The message of the event."),
        col("First Seen", "string", 1, "The first time the event was seen."),
        col("Count", "string", 1, "How many times the event was seen."),
        NAME,
    ],
    cells: |e, now| {
        // printEvent: the first time is firstTimestamp, else eventTime; the last is
        // lastTimestamp, else the first; a series' last observation and count win.
        let first = match text(e, "/firstTimestamp") {
            "" => since(text(e, "/eventTime"), now),
            first => since(first, now),
        };
        let mut last = match text(e, "/lastTimestamp") {
            "" => first.clone(),
            last => since(last, now),
        };
        let mut count = int(e, "/count");
        if e.pointer("/series").is_some_and(|s| s.is_object()) {
            last = since(text(e, "/series/lastObservedTime"), now);
            count = int(e, "/series/count");
        } else if count == 0 {
            count = 1;
        }
        let object = format!("{}/{}", text(e, "/involvedObject/kind").to_lowercase(), text(e, "/involvedObject/name"));
        let source = match (text(e, "/source/component"), text(e, "/source/host")) {
            ("", _) => text(e, "/reportingComponent").to_owned(),
            (component, "") => component.to_owned(),
            (component, host) => format!("{component}, {host}"),
        };
        vec![
            json!(last),
            json!(text(e, "/type")),
            json!(text(e, "/reason")),
            json!(object),
            json!(text(e, "/involvedObject/fieldPath")),
            json!(source),
            json!(text(e, "/message").trim()),
            json!(first),
            json!(count.to_string()),
            json!(super::name(e)),
        ]
    },
};

const NODE: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0, "The status of the node"),
        col("Roles", "string", 0, "The roles of the node"),
        AGE,
        col("Version", "string", 0, "Kubelet Version reported by the node."),
    ],
    cells: |n, now| {
        let ready = items(n, "/status/conditions").iter().find(|c| text(c, "/type") == "Ready");
        let status = match ready.map(|c| text(c, "/status")) {
            Some("True") => "Ready",
            _ => "NotReady",
        };
        let mut roles: Vec<&str> = n
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
            .collect();
        roles.sort_unstable();
        vec![
            json!(super::name(n)),
            json!(status),
            json!(if roles.is_empty() { "<none>".to_owned() } else { roles.join(",") }),
            age(n, now),
            json!(text(n, "/status/nodeInfo/kubeletVersion")),
        ]
    },
};

const CLAIM: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0, "The phase of the claim."),
        col("Volume", "string", 0, "The volume bound to the claim."),
        col("Capacity", "string", 0, "The capacity of the volume."),
        col("Access Modes", "string", 0, "The access modes of the volume."),
        col("StorageClass", "string", 0, "The storage class of the claim."),
        col("VolumeAttributesClass", "string", 0, "The volume attributes class of the claim."),
        AGE,
    ],
    cells: |c, now| {
        let modes: Vec<&str> = items(c, "/status/accessModes")
            .iter()
            .filter_map(Value::as_str)
            .map(|m| match m {
                "ReadWriteOnce" => "RWO",
                "ReadOnlyMany" => "ROX",
                "ReadWriteMany" => "RWX",
                "ReadWriteOncePod" => "RWOP",
                other => other,
            })
            .collect();
        vec![
            json!(super::name(c)),
            json!(text(c, "/status/phase")),
            json!(text(c, "/spec/volumeName")),
            json!(text(c, "/status/capacity/storage")),
            json!(modes.join(",")),
            json!(or_none(text(c, "/spec/storageClassName"))),
            json!(or_none(text(c, "/spec/volumeAttributesClassName"))),
            age(c, now),
        ]
    },
};

const INGRESS: Printer = Printer {
    columns: &[
        NAME,
        col("Class", "string", 0, "The name of the IngressClass resource that should be used for ingress class."),
        col("Hosts", "string", 0, "Hosts that incoming requests are matched against before the ingress rule"),
        col("Address", "string", 0, "Address is a list containing ingress points for the load-balancer"),
        col("Ports", "string", 0, "Ports of TLS configurations that open"),
        AGE,
    ],
    cells: |i, now| {
        let hosts: Vec<&str> =
            items(i, "/spec/rules").iter().map(|r| text(r, "/host")).filter(|h| !h.is_empty()).collect();
        let address: Vec<&str> = items(i, "/status/loadBalancer/ingress")
            .iter()
            .map(|a| if text(a, "/ip").is_empty() { text(a, "/hostname") } else { text(a, "/ip") })
            .collect();
        let ports = if items(i, "/spec/tls").is_empty() { "80" } else { "80, 443" };
        vec![
            json!(super::name(i)),
            json!(or_none(text(i, "/spec/ingressClassName"))),
            json!(if hosts.is_empty() { "*".to_owned() } else { hosts.join(",") }),
            json!(address.join(",")),
            json!(ports),
            age(i, now),
        ]
    },
};

const LEASE: Printer = Printer {
    columns: &[NAME, col("Holder", "string", 0, "The holder of the lease."), AGE],
    cells: |l, now| vec![json!(super::name(l)), json!(text(l, "/spec/holderIdentity")), age(l, now)],
};

/// Roles, ClusterRoles and CustomResourceDefinitions: `Name` and `Created At`.
const CREATED_AT: Printer = Printer {
    columns: &[NAME, col("Created At", "date", 0, "The time the object was created.")],
    cells: |o, _| vec![json!(super::name(o)), json!(text(o, "/metadata/creationTimestamp"))],
};

const ROLE: Printer = CREATED_AT;

const ROLE_BINDING: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", 0, "The role the binding grants."),
        AGE,
        col("Users", "string", 1, "Users in the binding."),
        col("Groups", "string", 1, "Groups in the binding."),
        col("ServiceAccounts", "string", 1, "ServiceAccounts in the binding."),
    ],
    cells: |b, now| {
        let subjects = |kind: &str| {
            let names: Vec<String> = items(b, "/subjects")
                .iter()
                .filter(|s| text(s, "/kind") == kind)
                .map(|s| match (kind, text(s, "/namespace")) {
                    ("ServiceAccount", ns) => format!("{ns}/{}", text(s, "/name")),
                    _ => text(s, "/name").to_owned(),
                })
                .collect();
            names.join(", ")
        };
        vec![
            json!(super::name(b)),
            json!(format!("{}/{}", text(b, "/roleRef/kind"), text(b, "/roleRef/name"))),
            age(b, now),
            json!(subjects("User")),
            json!(subjects("Group")),
            json!(subjects("ServiceAccount")),
        ]
    },
};

//! Specifications of server-side printing: human durations, the built-in printers' cells,
//! the default printer and custom resources' columns.

use serde_json::json;

use super::*;

/// 2024-01-01T00:00:00Z.
const NOW: i64 = 1_704_067_200;

#[test]
fn durations_read_as_kubectl_prints_them() {
    for (seconds, text) in [
        (-5, "<invalid>"),
        (-1, "0s"),
        (45, "45s"),
        (119, "119s"),
        (330, "5m30s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (9 * 3600, "9h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (10 * 86400, "10d"),
        (3 * 365 * 86400 + 5 * 86400, "3y5d"),
        (9 * 365 * 86400, "9y"),
    ] {
        assert_eq!(human_duration(seconds), text, "{seconds}");
    }
    assert_eq!(since("2023-12-31T23:55:00Z", NOW), "5m");
    assert_eq!(since("", NOW), "<unknown>");
}

#[test]
fn a_deployment_prints_ready_up_to_date_available_and_wide_columns() {
    let deployment = json!({
        "metadata": {"name": "web", "creationTimestamp": "2023-12-31T23:00:00Z"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    });
    let p = printer("apps", "Deployment");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]);
    assert_eq!(p.columns.iter().filter(|c| c.priority == 1).count(), 3, "-o wide adds three");
    assert_eq!(
        (p.cells)(&deployment, NOW),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("60m"),
            json!("a,b"),
            json!("a:1,b:2"),
            json!("app=web")
        ]
    );
}

#[test]
fn a_pod_prints_readiness_status_restarts_ip_and_node() {
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": "2023-12-31T23:59:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
            {"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
    });
    let cells = (printer("", "Pod").cells)(&pod, NOW);
    assert_eq!(cells[..5], [json!("p"), json!("1/2"), json!("CrashLoopBackOff"), json!("3"), json!("60s")]);
    assert_eq!(cells[5..7], [json!("10.0.0.5"), json!("n1")]);
    let pending = json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a"}]}});
    assert_eq!((printer("", "Pod").cells)(&pending, NOW)[2], "Pending", "a pod nothing runs");
}

#[test]
fn services_configmaps_secrets_and_namespaces() {
    let svc = json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "10.96.0.1",
        "ports": [{"port": 80}, {"port": 443, "protocol": "TCP", "nodePort": 30443}], "selector": {"app": "web"}}});
    let cells = (printer("", "Service").cells)(&svc, NOW);
    assert_eq!(
        cells[..5],
        [json!("s"), json!("ClusterIP"), json!("10.96.0.1"), json!("<none>"), json!("80/TCP,443:30443/TCP")]
    );
    let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!((printer("", "ConfigMap").cells)(&cm, NOW)[1], 3);
    let secret = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "MQ=="}});
    assert_eq!((printer("", "Secret").cells)(&secret, NOW)[1..3], [json!("Opaque"), json!(1)]);
    let ns = json!({"metadata": {"name": "shop"}, "status": {"phase": "Terminating"}});
    assert_eq!((printer("", "Namespace").cells)(&ns, NOW)[1], "Terminating");
}

#[test]
fn kinds_without_a_printer_get_name_and_created_at() {
    let p = printer("example.com", "Widget");
    let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
    assert_eq!(names, ["Name", "Created At"]);
    let widget = json!({"metadata": {"name": "w", "creationTimestamp": "2023-01-01T00:00:00Z"}});
    assert_eq!((p.cells)(&widget, NOW), vec![json!("w"), json!("2023-01-01T00:00:00Z")]);
}

#[test]
fn a_custom_resource_prints_its_definitions_columns() {
    let crd = json!({"spec": {"versions": [{"name": "v1", "additionalPrinterColumns": [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Mode", "type": "string", "priority": 1, "jsonPath": ".spec.mode"},
        {"name": "Started", "type": "date", "jsonPath": ".status.started"},
    ]}, {"name": "v2"}]}});
    let columns = custom_columns(&crd, "v1");
    let names: Vec<Value> = columns.definitions().iter().map(|d| d["name"].clone()).collect();
    assert_eq!(names, [json!("Name"), json!("Replicas"), json!("Ready"), json!("Mode"), json!("Started")]);
    assert_eq!(columns.definitions()[3]["priority"], 1);
    let widget = json!({"metadata": {"name": "w"}, "spec": {"replicas": 2},
        "status": {"started": "2023-12-31T22:00:00Z", "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
    assert_eq!(columns.cells(&widget, NOW), vec![json!("w"), json!(2), json!("True"), Value::Null, json!("120m")]);
    // A version without columns shows its age.
    let plain = custom_columns(&crd, "v2");
    let names: Vec<Value> = plain.definitions().iter().map(|d| d["name"].clone()).collect();
    assert_eq!(names, [json!("Name"), json!("Age")]);
}

#[test]
fn json_paths_read_fields_indexes_and_filters() {
    let v = json!({"a": {"b": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]}});
    assert_eq!(custom::find(&v, ".a.b[1].v"), Some(&json!(2)));
    assert_eq!(custom::find(&v, "{.a.b[?(@.k=='x')].v}"), Some(&json!(1)));
    assert_eq!(custom::find(&v, ".a.c"), None);
    assert_eq!(custom::find(&v, ".a.b[7]"), None);
}

//! The `scale` subresource: which kinds have one and where their replicas and selector live
//! (the built-in Deployments, ReplicaSets, StatefulSets and ReplicationControllers; a
//! CustomResourceDefinition's `subresources.scale` paths), and the `autoscaling/v1` Scale
//! an object is seen as through it.

use serde_json::{Value, json};

use super::LabelSelector;

/// Where an object keeps what its Scale shows, as JSON pointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas (`.spec.replicas`).
    pub spec_replicas: String,
    /// The observed replicas (`.status.replicas`).
    pub status_replicas: String,
    /// Where the selector is, and in which form.
    pub selector: SelectorAt,
}

/// Where a kind keeps the label selector its Scale reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorAt {
    /// A `metav1.LabelSelector` (Deployments, ReplicaSets, StatefulSets).
    LabelSelector(String),
    /// A map of labels (ReplicationControllers).
    Labels(String),
    /// A selector already in its string form (a custom resource's `labelSelectorPath`).
    Text(String),
    /// None (a custom resource without `labelSelectorPath`).
    None,
}

/// The scale paths of a built-in kind, if it has the subresource.
pub fn built_in(group: &str, kind: &str) -> Option<ScalePaths> {
    let selector = match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") => SelectorAt::LabelSelector("/spec/selector".into()),
        ("", "ReplicationController") => SelectorAt::Labels("/spec/selector".into()),
        _ => return None,
    };
    Some(ScalePaths { spec_replicas: "/spec/replicas".into(), status_replicas: "/status/replicas".into(), selector })
}

/// The scale paths a CustomResourceDefinition version's `subresources.scale` declares
/// (`specReplicasPath: .spec.replicas`...), if it declares them.
pub fn custom(scale: &Value) -> Option<ScalePaths> {
    let path = |field: &str| scale.get(field).and_then(Value::as_str).map(pointer);
    Some(ScalePaths {
        spec_replicas: path("specReplicasPath")?,
        status_replicas: path("statusReplicasPath")?,
        selector: path("labelSelectorPath").map_or(SelectorAt::None, SelectorAt::Text),
    })
}

/// A simple JSONPath (`.spec.replicas`) as a JSON pointer (`/spec/replicas`).
fn pointer(path: &str) -> String {
    path.trim_start_matches('.')
        .split('.')
        .map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// `object` seen through its scale subresource: an `autoscaling/v1` Scale with the object's
/// name, namespace, uid, resourceVersion and creation time.
pub(crate) fn scale_of(object: &Value, paths: &ScalePaths) -> Value {
    let meta = &object["metadata"];
    let mut metadata = json!({});
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = meta.get(field).filter(|v| !v.is_null()) {
            metadata[field] = value.clone();
        }
    }
    let replicas = |at: &str| object.pointer(at).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    if let Some(selector) = selector_text(object, &paths.selector) {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": status,
    })
}

/// `object` with its desired replicas set to `replicas` (the fields on the way created).
pub(crate) fn with_replicas(object: &Value, paths: &ScalePaths, replicas: i64) -> Value {
    let mut scaled = object.clone();
    let mut at = &mut scaled;
    let parts: Vec<String> =
        paths.spec_replicas.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~")).collect();
    for (i, part) in parts.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let map = at.as_object_mut().expect("made an object");
        if i + 1 == parts.len() {
            map.insert(part.clone(), json!(replicas));
            break;
        }
        at = map.entry(part.clone()).or_insert_with(|| json!({}));
    }
    scaled
}

/// The selector's string form (`app=web,tier in (a,b)`), as `LabelSelectorAsSelector`
/// writes it.
fn selector_text(object: &Value, at: &SelectorAt) -> Option<String> {
    match at {
        SelectorAt::None => None,
        SelectorAt::Text(path) => object.pointer(path).and_then(Value::as_str).map(str::to_owned),
        SelectorAt::Labels(path) => Some(LabelSelector::of_labels(object.pointer(path)?).to_string()),
        SelectorAt::LabelSelector(path) => Some(LabelSelector::of_object(object.pointer(path)?).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_workloads_have_a_scale_and_others_do_not() {
        assert!(built_in("apps", "Deployment").is_some());
        assert!(built_in("", "ReplicationController").is_some());
        assert!(built_in("apps", "DaemonSet").is_none());
        assert!(built_in("", "ConfigMap").is_none());
    }

    #[test]
    fn a_deployment_seen_as_a_scale() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2},
        });
        let scale = scale_of(&deployment, &built_in("apps", "Deployment").unwrap());
        assert_eq!(
            scale,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web,tier in (a,b)"}})
        );
    }

    #[test]
    fn a_replication_controller_s_selector_is_its_labels() {
        let rc = json!({"metadata": {"name": "rc"}, "spec": {"selector": {"b": "2", "a": "1"}}});
        let scale = scale_of(&rc, &built_in("", "ReplicationController").unwrap());
        assert_eq!(scale["status"], json!({"replicas": 0, "selector": "a=1,b=2"}));
        assert_eq!(scale["spec"]["replicas"], 0, "an unset replicas reads 0");
    }

    #[test]
    fn a_custom_resource_s_paths_come_from_its_definition() {
        let declared = json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready", "labelSelectorPath": ".status.selector"});
        let paths = custom(&declared).unwrap();
        let widget =
            json!({"metadata": {"name": "w"}, "spec": {"size": 4}, "status": {"ready": 1, "selector": "app=w"}});
        let scale = scale_of(&widget, &paths);
        assert_eq!(scale["spec"]["replicas"], 4);
        assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
        assert_eq!(with_replicas(&widget, &paths, 6)["spec"]["size"], 6);
        assert!(custom(&json!({"specReplicasPath": ".spec.size"})).is_none(), "both replicas paths are required");
    }

    #[test]
    fn setting_replicas_creates_the_fields_on_the_way() {
        let paths = built_in("apps", "StatefulSet").unwrap();
        assert_eq!(with_replicas(&json!({"metadata": {}}), &paths, 2)["spec"], json!({"replicas": 2}));
    }
}

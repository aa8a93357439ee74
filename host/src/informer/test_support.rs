//! Helpers shared by the informer's unit tests.

use super::object::Object;

/// A Pod in `ns` named `name` at resourceVersion `rv`.
pub(crate) fn pod(ns: &str, name: &str, rv: u64) -> Object {
    pod_with_labels(ns, name, rv, &[])
}

/// A Pod with labels.
pub(crate) fn pod_with_labels(ns: &str, name: &str, rv: u64, labels: &[(&str, &str)]) -> Object {
    let labels: serde_json::Map<_, _> = labels.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
    Object::from_string(
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}"),
                          "resourceVersion": rv.to_string(), "labels": labels},
        })
        .to_string(),
    )
    .expect("test pod is valid")
}

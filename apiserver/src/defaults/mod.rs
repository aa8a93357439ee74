//! Fields kube-apiserver fills in on built-in objects it stores (its `SetDefaults_*`
//! functions and the kinds' create strategies), for what the embedded cluster covers so
//! far: a Namespace gets the `kubernetes.io/metadata.name` label (always its name),
//! `spec.finalizers: [kubernetes]` and `status.phase: Active`; a Secret gets `type: Opaque`.
//! A field the object sets is kept (but the Namespace's name label, which the API server
//! always sets).

use serde_json::{Value, json};

use crate::resource::ResourceDef;

/// The label every Namespace carries: its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Fills in the defaults of `obj`, an object of `def` about to be stored.
pub fn apply(def: &ResourceDef, obj: &mut Value) {
    if !def.built_in || !def.group.is_empty() {
        return;
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
}

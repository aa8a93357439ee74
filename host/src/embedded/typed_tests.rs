//! Objects of built-in kinds decode as their types, as the API server's decoder reads them.

use serde_json::json;

use super::check;
use crate::cluster::RequestError;

fn refusal(api_version: &str, kind: &str, value: serde_json::Value) -> String {
    match check(api_version, kind, &value) {
        Err(RequestError::BadRequest(message)) => message,
        other => panic!("expected a refusal of {value}, got {other:?}"),
    }
}

#[test]
fn a_config_map_whose_data_holds_a_number_is_refused_at_its_field() {
    let message = refusal("v1", "ConfigMap", json!({"metadata": {"name": "c"}, "data": {"n": 5}}));
    assert!(message.starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: data.n:"), "{message}");
}

#[test]
fn replicas_must_be_an_integer() {
    let deployment = json!({"metadata": {"name": "web"}, "spec": {
        "replicas": "many",
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    }});
    assert!(refusal("apps/v1", "Deployment", deployment).contains("spec.replicas"));
}

#[test]
fn init_containers_must_be_a_list() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}], "initContainers": "x"}});
    assert!(refusal("v1", "Pod", pod).contains("spec.initContainers"));
}

#[test]
fn well_typed_objects_and_unknown_fields_pass() {
    let pod = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}, "requests": {"cpu": 0.5}}}],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": 100}}],
        "someFutureField": {"x": 1}
    }});
    check("v1", "Pod", &pod).expect("numbers are quantities, unknown fields are left alone");
    check("v1", "ConfigMap", &json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).unwrap();
    let empty = json!({"metadata": {"name": "c", "labels": null}, "data": {"a": null}});
    check("v1", "ConfigMap", &empty).expect("null is Go's zero value");
}

#[test]
fn kinds_without_a_type_here_are_not_checked() {
    check("example.com/v1", "Widget", &json!({"spec": {"replicas": "many"}})).unwrap();
    check("apps/v1beta1", "Deployment", &json!({"spec": {"replicas": "many"}})).unwrap();
}

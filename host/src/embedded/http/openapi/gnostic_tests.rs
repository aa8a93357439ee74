//! JSON to gnostic's protobuf, field by field.

use prost_reflect::DynamicMessage;
use serde_json::json;

use super::*;

fn decoded(json: &Value) -> DynamicMessage {
    let bytes = document(json).unwrap();
    DynamicMessage::decode(document_descriptor().unwrap(), bytes.as_slice()).unwrap()
}

fn field(message: &DynamicMessage, path: &str) -> Proto {
    let mut value = Proto::Message(message.clone());
    for part in path.split('.') {
        value = match part.parse::<usize>() {
            Ok(index) => value.as_list().unwrap()[index].clone(),
            Err(_) => value.as_message().unwrap().get_field_by_name(part).unwrap().into_owned(),
        };
    }
    value
}

#[test]
fn maps_are_named_entries_and_refs_are_underscore_ref() {
    let document = decoded(&json!({"swagger": "2.0", "definitions": {"a.B": {
        "type": "object",
        "required": ["c"],
        "properties": {"c": {"$ref": "#/definitions/a.C", "description": "see C"}},
        "additionalProperties": false,
        "x-kubernetes-patch-strategy": "merge",
    }}}));
    let entry = "definitions.additional_properties.0";
    assert_eq!(field(&document, &format!("{entry}.name")).as_str(), Some("a.B"));
    let schema = format!("{entry}.value");
    assert_eq!(field(&document, &format!("{schema}.type.value.0")).as_str(), Some("object"));
    assert_eq!(field(&document, &format!("{schema}.required.0")).as_str(), Some("c"));
    let c = format!("{schema}.properties.additional_properties.0.value");
    assert_eq!(field(&document, &format!("{c}._ref")).as_str(), Some("#/definitions/a.C"));
    assert_eq!(field(&document, &format!("{schema}.additional_properties.boolean")).as_bool(), Some(false));
    let extension = format!("{schema}.vendor_extension.0");
    assert_eq!(field(&document, &format!("{extension}.name")).as_str(), Some("x-kubernetes-patch-strategy"));
    assert_eq!(field(&document, &format!("{extension}.value.yaml")).as_str(), Some("merge\n"));
}

/// kubectl 1.20 finds `dryRun` support as a query parameter of the kind's PATCH.
#[test]
fn parameters_take_their_case_from_in_and_ref() {
    let document = decoded(&json!({"paths": {"/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {"patch": {
        "parameters": [
            {"$ref": "#/parameters/body-x"},
            {"in": "query", "name": "dryRun", "type": "string", "uniqueItems": true},
            {"in": "body", "name": "body", "required": true, "schema": {"type": "object"}},
        ],
        "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"},
    }}}}));
    let patch = "paths.path.0.value.patch";
    let parameters = format!("{patch}.parameters");
    assert_eq!(field(&document, &format!("{parameters}.0.json_reference._ref")).as_str(), Some("#/parameters/body-x"));
    let query = format!("{parameters}.1.parameter.non_body_parameter.query_parameter_sub_schema");
    assert_eq!(field(&document, &format!("{query}.name")).as_str(), Some("dryRun"));
    assert_eq!(field(&document, &format!("{query}.unique_items")).as_bool(), Some(true));
    let body = format!("{parameters}.2.parameter.body_parameter");
    assert_eq!(field(&document, &format!("{body}.schema.type.value.0")).as_str(), Some("object"));
    let gvk = field(&document, &format!("{patch}.vendor_extension.0.value.yaml"));
    let gvk: Value = serde_norway::from_str(gvk.as_str().unwrap()).unwrap();
    assert_eq!(gvk["kind"], "Deployment");
}

#[test]
fn defaults_and_enums_are_yaml_and_items_take_one_schema() {
    let document = decoded(&json!({"definitions": {"a.B": {
        "type": "array", "items": {"type": "string", "enum": ["Always", "Never"]}, "default": [],
    }}}));
    let schema = "definitions.additional_properties.0.value";
    assert_eq!(field(&document, &format!("{schema}.items.schema.0.enum.1.yaml")).as_str(), Some("Never\n"));
    assert_eq!(field(&document, &format!("{schema}.default.yaml")).as_str(), Some("[]\n"));
}

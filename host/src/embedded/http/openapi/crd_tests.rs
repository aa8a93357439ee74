//! The custom resources' schemas as kube-apiserver publishes them.

use serde_json::json;

use super::*;

fn kind(schema: Option<Value>) -> CustomKind {
    CustomKind {
        group: "stable.example.com".into(),
        version: "v1".into(),
        kind: "CronTab".into(),
        list_kind: "CronTabList".into(),
        plural: "crontabs".into(),
        namespaced: true,
        schema,
    }
}

#[test]
fn a_definition_is_named_by_the_group_reversed() {
    assert_eq!(kind(None).definition_name(), "com.example.stable.v1.CronTab");
}

/// Without a schema kubectl must let anything through: no metadata properties are added.
#[test]
fn a_version_without_a_schema_publishes_only_its_kind() {
    let schemas = kind(None).schemas(Dialect::V3);
    assert_eq!(
        schemas[0].1,
        json!({"x-kubernetes-group-version-kind": [{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}]})
    );
    assert_eq!(schemas[1].0, "com.example.stable.v1.CronTabList");
    assert_eq!(
        schemas[1].1["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/com.example.stable.v1.CronTab"
    );
}

#[test]
fn a_schema_gets_api_version_kind_and_metadata() {
    let schema = json!({"type": "object", "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}});
    let v2 = kind(Some(schema)).schemas(Dialect::V2);
    let properties = &v2[0].1["properties"];
    assert_eq!(properties["metadata"]["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(properties["apiVersion"]["type"], "string");
    assert_eq!(properties["spec"], json!({"type": "object"}));
}

/// kube-apiserver's `ToStructuralOpenAPIV2`: what v2 (and kubectl 1.20) cannot read goes.
#[test]
fn v2_drops_what_it_cannot_express() {
    let schema = json!({"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "string", "nullable": true},
        "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"c": {"type": "string"}}},
        "d": {"type": "array"},
        "e": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
    }});
    assert_eq!(
        to_v2(schema),
        json!({"type": "object", "required": ["b"], "properties": {
            "a": {},
            "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "d": {},
            "e": {"x-kubernetes-int-or-string": true},
        }})
    );
    let open = kind(Some(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})));
    assert_eq!(open.schemas(Dialect::V2)[0].1.as_object().unwrap().len(), 1, "only the kind remains");
}

#[test]
fn unserved_versions_define_nothing() {
    let crd = json!({"spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [{"name": "v1", "served": true}, {"name": "v2", "served": false}]}});
    let kinds = custom_kinds(&[crd]);
    assert_eq!(kinds.len(), 1);
    assert_eq!((kinds[0].list_kind.as_str(), kinds[0].namespaced), ("GadgetList", false));
    assert_eq!(kinds[0].patch_path(Dialect::V2).0, "/apis/example.com/v1/gadgets/{name}");
}

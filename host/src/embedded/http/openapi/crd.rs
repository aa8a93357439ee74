//! The OpenAPI schemas of custom resources, built from their CustomResourceDefinitions as
//! kube-apiserver builds them: each served version's `openAPIV3Schema` with `apiVersion`,
//! `kind` and `metadata` (a reference to `ObjectMeta`) added, the list kind beside it, both
//! marked with `x-kubernetes-group-version-kind`; and, for OpenAPI v2, the schema reduced to
//! what v2 and kubectl's validation can read (no `allOf`/`anyOf`/`oneOf`/`not`, a nullable
//! or unknown-fields-preserving node typed loosely).

use serde_json::{Map, Value, json};

/// `apiVersion`'s description, as kube-apiserver writes it.
const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
/// `kind`'s description.
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// An object's `metadata` description.
const OBJECT_META: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// A list's `metadata` description.
const LIST_META: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The schema names of the two metas.
const OBJECT_META_NAME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META_NAME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// Which OpenAPI version a schema is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// OpenAPI v2: references under `#/definitions/`.
    V2,
    /// OpenAPI v3: references under `#/components/schemas/`.
    V3,
}

impl Dialect {
    fn reference(self, name: &str) -> String {
        match self {
            Dialect::V2 => format!("#/definitions/{name}"),
            Dialect::V3 => format!("#/components/schemas/{name}"),
        }
    }

    /// A property referring to the schema `name`, with a description: v3 wraps the
    /// reference in `allOf`, as the built-in kinds' documents do.
    fn property(self, name: &str, description: &str) -> Value {
        match self {
            Dialect::V2 => json!({"$ref": self.reference(name), "description": description}),
            Dialect::V3 => json!({"allOf": [{"$ref": self.reference(name)}], "description": description}),
        }
    }
}

/// One served version of a kind a CustomResourceDefinition defines.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CustomKind {
    /// Its group.
    pub group: String,
    /// Its version.
    pub version: String,
    /// Its kind.
    pub kind: String,
    /// Its list kind (`WidgetList` unless the definition names another).
    pub list_kind: String,
    /// Its plural resource name.
    pub plural: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// The version's `openAPIV3Schema`, if it has one.
    pub schema: Option<Value>,
}

impl CustomKind {
    /// The group-version's path under `/openapi/v3/`: `apis/GROUP/VERSION`.
    pub fn group_version_path(&self) -> String {
        format!("apis/{}/{}", self.group, self.version)
    }

    /// Its schema's name: the group reversed, the version, the kind (`com.example.v1.Widget`).
    pub fn definition_name(&self) -> String {
        definition_name(&self.group, &self.version, &self.kind)
    }

    fn gvk(&self, kind: &str) -> Value {
        json!([{"group": self.group, "version": self.version, "kind": kind}])
    }

    /// The kind's schema and its list's, named, for `dialect`.
    pub fn schemas(&self, dialect: Dialect) -> Vec<(String, Value)> {
        let name = self.definition_name();
        let mut schema = match (&self.schema, dialect) {
            (None, _) => json!({}),
            (Some(schema), Dialect::V2) if preserves_unknown_fields(schema) => json!({}),
            (Some(schema), Dialect::V2) => to_v2(schema.clone()),
            (Some(schema), Dialect::V3) => schema.clone(),
        };
        // Only a kind with a schema gets the metadata properties: kubectl validates against
        // what is published, and an empty schema lets anything through.
        if !schema.as_object().is_some_and(Map::is_empty)
            && let Some(properties) = properties(&mut schema)
        {
            properties.insert("apiVersion".into(), json!({"type": "string", "description": API_VERSION}));
            properties.insert("kind".into(), json!({"type": "string", "description": KIND}));
            properties.insert("metadata".into(), dialect.property(OBJECT_META_NAME, OBJECT_META));
        }
        schema["x-kubernetes-group-version-kind"] = self.gvk(&self.kind);
        let items = format!(
            "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
            self.plural
        );
        let list = json!({
            "type": "object",
            "description": format!("{} is a list of {}", self.list_kind, self.kind),
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": API_VERSION},
                "kind": {"type": "string", "description": KIND},
                "items": {"type": "array", "description": items, "items": {"$ref": dialect.reference(&name)}},
                "metadata": dialect.property(LIST_META_NAME, LIST_META),
            },
            "x-kubernetes-group-version-kind": self.gvk(&self.list_kind),
        });
        let list_name = definition_name(&self.group, &self.version, &self.list_kind);
        vec![(name, schema), (list_name, list)]
    }

    /// The PATCH operation of an object of the kind (its path and the operation), with
    /// the query parameters the embedded cluster honours — `dryRun`, `fieldManager`, `force`
    /// — and not `fieldValidation`, which it does not enforce.
    pub fn patch_path(&self, dialect: Dialect) -> (String, Value) {
        let scope = if self.namespaced { "namespaces/{namespace}/" } else { "" };
        let path = format!("/apis/{}/{}/{scope}{}/{{name}}", self.group, self.version, self.plural);
        let parameter = |name: &str, kind: &str| match dialect {
            Dialect::V2 => json!({"in": "query", "name": name, "type": kind, "uniqueItems": true}),
            Dialect::V3 => json!({"in": "query", "name": name, "schema": {"type": kind, "uniqueItems": true}}),
        };
        let operation = json!({"patch": {
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "parameters": [parameter("dryRun", "string"), parameter("fieldManager", "string"), parameter("force", "boolean")],
        }});
        (path, operation)
    }
}

/// A schema's name: the group's labels reversed, the version and the kind, dotted.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let group: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", group.join("."))
}

/// The kinds the CustomResourceDefinitions `crds` define, each served version once.
pub(crate) fn custom_kinds(crds: &[Value]) -> Vec<CustomKind> {
    let mut kinds = Vec::new();
    for crd in crds {
        let spec = &crd["spec"];
        let (Some(group), Some(kind), Some(plural)) =
            (spec["group"].as_str(), spec["names"]["kind"].as_str(), spec["names"]["plural"].as_str())
        else {
            continue;
        };
        let list_kind = spec["names"]["listKind"].as_str().map_or_else(|| format!("{kind}List"), str::to_owned);
        for version in spec["versions"].as_array().into_iter().flatten() {
            let Some(name) = version["name"].as_str() else { continue };
            if version["served"].as_bool() == Some(false) {
                continue;
            }
            kinds.push(CustomKind {
                group: group.to_owned(),
                version: name.to_owned(),
                kind: kind.to_owned(),
                list_kind: list_kind.clone(),
                plural: plural.to_owned(),
                namespaced: spec["scope"].as_str() != Some("Cluster"),
                schema: version.pointer("/schema/openAPIV3Schema").cloned(),
            });
        }
    }
    kinds
}

fn preserves_unknown_fields(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true)
}

/// A schema's `properties`, made an object when the schema has none.
fn properties(schema: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = schema.as_object_mut()?;
    map.entry("properties").or_insert_with(|| json!({})).as_object_mut()
}

/// A structural schema as OpenAPI v2 publishes it (kube-apiserver's
/// `ToStructuralOpenAPIV2`): v2 has no `allOf`, `anyOf`, `oneOf`, `not` or `nullable`,
/// and kubectl cannot read a nullable or unknown-fields-preserving node with properties or
/// items, nor an array without items.
pub(crate) fn to_v2(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else { return schema };
    for junctor in ["allOf", "anyOf", "oneOf", "not"] {
        map.remove(junctor);
    }
    if map.remove("nullable").and_then(|n| n.as_bool()) == Some(true) {
        map.remove("type");
        map.remove("items");
        map.remove("properties");
    }
    if map.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true) {
        map.remove("items");
        map.remove("properties");
    }
    if map.get("type").and_then(Value::as_str) == Some("array") && !map.contains_key("items") {
        map.remove("type");
    }
    // A nullable field may be absent: it is not required in v2.
    let nullable: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(_, s)| s["nullable"].as_bool() == Some(true)).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable.iter().any(|n| n == r)));
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            *property = to_v2(property.take());
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key)
            && child.is_object()
        {
            *child = to_v2(child.take());
        }
    }
    schema
}

/// Every `$ref` under `value`, as the name it refers to (the part after the last `/`).
pub fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "$ref"
                    && let Some(name) = child.as_str().and_then(|r| r.rsplit('/').next())
                {
                    if !out.iter().any(|n| n == name) {
                        out.push(name.to_owned());
                    }
                } else {
                    references(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}

#[cfg(test)]
#[path = "crd_tests.rs"]
mod tests;

//! OpenAPI v3, what kubectl from 1.27 explains with and checks `fieldValidation` support in:
//! `/openapi/v3` lists a document per group-version the endpoint serves, each at
//! `/openapi/v3/<api/v1 | apis/GROUP/VERSION>?hash=…`; a built-in group-version's is the
//! upstream one as vendored, a custom resources' is built from their definitions (with the
//! metas they refer to), and a group-version with both gets the upstream one with the
//! custom kinds added.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Result;
use super::crd::{CustomKind, Dialect, references};
use super::upstream;

/// One group-version's document: its JSON text and hash.
pub(crate) struct Document {
    /// The JSON text.
    pub text: String,
    /// Its hash (the `hash` of its URL).
    pub hash: String,
}

/// The path under `/openapi/v3/` of an `apiVersion`: `api/v1`, `apis/apps/v1`.
pub(crate) fn group_version_path(api_version: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("apis/{group}/{version}"),
        None => format!("api/{api_version}"),
    }
}

/// `/openapi/v3`: a URL for each of `api_versions` that has a document.
pub fn root(api_versions: &[String], customs: &[CustomKind]) -> Result<Value> {
    let upstream = upstream::v3()?;
    let mut paths = BTreeMap::new();
    for api_version in api_versions {
        let path = group_version_path(api_version);
        if paths.contains_key(&path) {
            continue;
        }
        let hash = if customs.iter().any(|c| c.group_version_path() == path) {
            document(&path, customs)?.map(|d| d.hash)
        } else {
            upstream.get(&path).map(|d| d.hash.clone())
        };
        if let Some(hash) = hash {
            let url = format!("/openapi/v3/{path}?hash={hash}");
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    Ok(json!({"paths": paths}))
}

/// `/openapi/v3/<path>`: the document of one group-version, `None` when it has none.
pub fn document(path: &str, customs: &[CustomKind]) -> Result<Option<Document>> {
    let upstream = upstream::v3()?;
    let mine: Vec<&CustomKind> = customs.iter().filter(|c| c.group_version_path() == path).collect();
    let built_in = upstream.get(path);
    if mine.is_empty() {
        return Ok(built_in.map(|d| Document { text: d.text.get().to_owned(), hash: d.hash.clone() }));
    }
    let mut document = match built_in {
        Some(d) => serde_json::from_str(d.text.get()).map_err(|e| super::Error::Vendored(e.to_string()))?,
        None => json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "paths": {},
            "components": {"schemas": {}, "securitySchemes": {"BearerToken": {
                "type": "apiKey", "name": "authorization", "in": "header",
                "description": "Bearer Token authentication"}}},
        }),
    };
    let mut added = Map::new();
    for custom in mine {
        added.extend(custom.schemas(Dialect::V3));
        let (path, operation) = custom.patch_path(Dialect::V3);
        if let Some(paths) = document["paths"].as_object_mut() {
            paths.insert(path, operation);
        }
    }
    // The metas the custom kinds refer to, and what those refer to.
    let metas = upstream::v3_meta_schemas()?;
    let mut wanted = Vec::new();
    added.values().for_each(|schema| references(schema, &mut wanted));
    let mut next = 0;
    while next < wanted.len() {
        if let Some(schema) = metas.get(&wanted[next])
            && !added.contains_key(&wanted[next])
        {
            references(schema, &mut wanted);
            added.insert(wanted[next].clone(), schema.clone());
        }
        next += 1;
    }
    if let Some(schemas) = document.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        for (name, schema) in added {
            schemas.entry(name).or_insert(schema);
        }
    }
    let text = document.to_string();
    let hash = upstream::hash(text.as_bytes());
    Ok(Some(Document { text, hash }))
}

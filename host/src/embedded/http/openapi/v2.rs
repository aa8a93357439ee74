//! OpenAPI v2, what kubectl validates manifests against (every version: client-side
//! validation reads v2 only) and what kubectl before 1.27 explains with: the upstream
//! document with the custom resources' definitions (and their PATCH paths) added, as JSON
//! or as gnostic's protobuf message. The protobuf of the upstream part is encoded once;
//! the custom part is encoded on each request and appended — protobuf merges a message
//! field that occurs twice, so the two make one document.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::crd::{CustomKind, Dialect};
use super::{Error, Result, gnostic, upstream};

/// The custom kinds' part of the document: their definitions and PATCH paths.
fn custom_part(customs: &[CustomKind]) -> Value {
    let (mut definitions, mut paths) = (Map::new(), Map::new());
    for custom in customs {
        definitions.extend(custom.schemas(Dialect::V2));
        let (path, operation) = custom.patch_path(Dialect::V2);
        paths.insert(path, operation);
    }
    json!({"definitions": definitions, "paths": paths})
}

/// The document as JSON.
pub fn json(customs: &[CustomKind]) -> Result<Value> {
    let mut document = upstream::swagger()?.clone();
    let custom = custom_part(customs);
    for key in ["definitions", "paths"] {
        if let (Some(all), Value::Object(mine)) = (document[key].as_object_mut(), &custom[key]) {
            for (name, value) in mine {
                all.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    Ok(document)
}

/// The document as gnostic's `openapi.v2.Document` message.
pub fn protobuf(customs: &[CustomKind]) -> Result<Vec<u8>> {
    static UPSTREAM: OnceLock<std::result::Result<Vec<u8>, String>> = OnceLock::new();
    let upstream = UPSTREAM.get_or_init(|| {
        let document = upstream::swagger().map_err(|e| e.to_string())?;
        gnostic::document(document).map_err(|e| e.to_string())
    });
    let mut bytes = upstream.as_ref().map_err(|e| Error::Vendored(e.clone()))?.clone();
    if !customs.is_empty() {
        bytes.extend(gnostic::document(&custom_part(customs))?);
    }
    Ok(bytes)
}

//! The upstream OpenAPI specification of the built-in kinds, vendored under `host/openapi/`
//! (the release the tests' kube-apiserver pins; `cargo xtask openapi-spec` regenerates it):
//! `swagger.json.zst`, the OpenAPI v2 document, and `v3.json.zst`, the OpenAPI v3 document
//! of every group-version (`api/v1`, `apis/GROUP/VERSION`) in one object. Both keep their
//! schemas whole; of the paths only the PATCH operations remain, each with its kind and
//! its parameters but `fieldValidation` (the embedded cluster does not refuse unknown
//! fields, so kubectl must validate on its side).
//!
//! Each is decompressed once, on first use.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha512};

use super::{Error, Result};

const SWAGGER: &[u8] = include_bytes!("../../../../openapi/swagger.json.zst");
const V3: &[u8] = include_bytes!("../../../../openapi/v3.json.zst");

fn decompress(what: &'static str, bytes: &[u8]) -> Result<Vec<u8>> {
    zstd::stream::decode_all(bytes).map_err(|source| Error::Decompress { what, source })
}

/// The upstream OpenAPI v2 document.
pub fn swagger() -> Result<&'static Value> {
    static SPEC: OnceLock<std::result::Result<Value, String>> = OnceLock::new();
    let spec = SPEC.get_or_init(|| {
        let text = decompress("swagger.json", SWAGGER).map_err(|e| e.to_string())?;
        serde_json::from_slice(&text).map_err(|e| format!("swagger.json: {e}"))
    });
    spec.as_ref().map_err(|e| Error::Vendored(e.clone()))
}

/// One upstream OpenAPI v3 document: its JSON text and its hash.
pub(crate) struct V3Document {
    /// The JSON text, served as it is.
    pub text: Box<RawValue>,
    /// Its SHA-512 in upper-case hex, as kube-apiserver names a document's version.
    pub hash: String,
}

/// The upstream OpenAPI v3 documents, by group-version path (`api/v1`, `apis/apps/v1`).
pub fn v3() -> Result<&'static BTreeMap<String, V3Document>> {
    static SPEC: OnceLock<std::result::Result<BTreeMap<String, V3Document>, String>> = OnceLock::new();
    let spec = SPEC.get_or_init(|| {
        let text = decompress("v3.json", V3).map_err(|e| e.to_string())?;
        let documents: BTreeMap<String, Box<RawValue>> =
            serde_json::from_slice(&text).map_err(|e| format!("v3.json: {e}"))?;
        Ok(documents
            .into_iter()
            .map(|(path, text)| {
                let hash = hash(text.get().as_bytes());
                (path, V3Document { text, hash })
            })
            .collect())
    });
    spec.as_ref().map_err(|e| Error::Vendored(e.clone()))
}

/// The schemas of one upstream v3 document (`components.schemas`), parsed once: where the
/// documents of custom resources take `ObjectMeta`, `ListMeta` and what they refer to.
pub(crate) fn v3_meta_schemas() -> Result<&'static serde_json::Map<String, Value>> {
    static SCHEMAS: OnceLock<std::result::Result<serde_json::Map<String, Value>, String>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| {
        // The smallest document with both metas: CustomResourceDefinitions' own.
        let documents = v3().map_err(|e| e.to_string())?;
        let document = documents
            .get("apis/apiextensions.k8s.io/v1")
            .ok_or_else(|| "v3.json has no apis/apiextensions.k8s.io/v1".to_owned())?;
        let mut document: Value = serde_json::from_str(document.text.get()).map_err(|e| e.to_string())?;
        match document.pointer_mut("/components/schemas").map(Value::take) {
            Some(Value::Object(schemas)) => Ok(schemas),
            _ => Err("apis/apiextensions.k8s.io/v1 has no components.schemas".to_owned()),
        }
    });
    schemas.as_ref().map_err(|e| Error::Vendored(e.clone()))
}

/// A document's hash: SHA-512 in upper-case hex.
pub fn hash(bytes: &[u8]) -> String {
    hex::encode_upper(Sha512::digest(bytes))
}

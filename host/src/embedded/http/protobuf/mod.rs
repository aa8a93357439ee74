//! Protobuf bodies (`application/vnd.kubernetes.protobuf`), as kube-apiserver reads and
//! writes them for its built-in kinds: kubectl from 1.32 sends its imperative creates
//! (`kubectl create namespace`, `auth can-i`, ...) in protobuf, and client-go programs ask
//! for protobuf answers (`Accept: application/vnd.kubernetes.protobuf,application/json`).
//!
//! A request's protobuf body is converted to the JSON the API server would read, so every
//! write rule applies unchanged; an answer in JSON is converted to protobuf when the client
//! prefers it. Conversion is driven by the descriptors of the API's own `generated.proto`
//! files ([`descriptors`]), with Kubernetes' JSON rules ([`convert`], [`special`]) inside
//! the wire's envelope ([`envelope`]). Custom resources have no protobuf form: their
//! protobuf bodies are refused (415), and they are answered in JSON, as by kube-apiserver.

mod convert;
mod descriptors;
mod envelope;
mod special;

use axum::http::HeaderMap;
use serde_json::Value;

use super::media::{accepted, content_type};
use envelope::Unknown;

/// The media type of protobuf bodies.
pub(super) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub(super) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Why a body could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body does not start with `k8s\0`.
    #[error("the body does not start with the protobuf envelope's magic number")]
    NoMagic,
    /// The bytes are not the message they should be.
    #[error("the protobuf cannot be decoded: {0}")]
    Decode(String),
    /// The API has no message for this kind.
    #[error("no protobuf message for kind {kind:?} of {api_version:?}")]
    UnknownKind {
        /// The apiVersion asked for.
        api_version: String,
        /// The kind asked for.
        kind: String,
    },
    /// A value has not the shape its field needs.
    #[error("expected {expected}, found {found}")]
    Shape {
        /// What the field holds.
        expected: String,
        /// What the JSON held.
        found: String,
    },
    /// A field's value is wrong.
    #[error("{field}: {source}")]
    Field {
        /// The field's name.
        field: String,
        /// What is wrong with it.
        #[source]
        source: Box<Error>,
    },
    /// Raw bytes that should be JSON (`RawExtension`, `FieldsV1`) are not.
    #[error("raw bytes that are not JSON: {0}")]
    RawNotJson(String),
    /// A time beyond what RFC 3339 writes.
    #[error("a time out of range: {0} seconds")]
    Time(i64),
}

impl Error {
    fn at(self, field: &str) -> Self {
        Error::Field { field: field.to_owned(), source: Box::new(self) }
    }
}

/// Whether a request's `Content-Type` is protobuf.
pub(super) fn is_protobuf(headers: &HeaderMap) -> bool {
    content_type(headers).eq_ignore_ascii_case(MEDIA_TYPE)
}

/// Whether a request's `Accept` prefers protobuf: its first media range of the highest
/// quality is protobuf, not as another kind (`as=Table`).
pub(super) fn prefers_protobuf(headers: &HeaderMap) -> bool {
    accepted(headers).first().is_some_and(|best| {
        best.mime().eq_ignore_ascii_case(MEDIA_TYPE) && !best.params.iter().any(|(name, _)| name == "as")
    })
}

/// The JSON of a protobuf request body: the object its envelope names (or, when it names
/// none, `kind` of `api_version`, the endpoint's), with its apiVersion and kind.
pub(super) fn request_json(body: &[u8], api_version: &str, kind: &str) -> Result<Vec<u8>, Error> {
    let object = envelope::open(body)?;
    let (api_version, kind) = if object.kind.is_empty() {
        (api_version.to_owned(), kind.to_owned())
    } else {
        (object.api_version.clone(), object.kind.clone())
    };
    let descriptor = descriptors::message_of(&api_version, &kind)
        .ok_or_else(|| Error::UnknownKind { api_version: api_version.clone(), kind: kind.clone() })?;
    let message = prost_reflect::DynamicMessage::decode(descriptor, object.raw.as_slice())
        .map_err(|e| Error::Decode(e.to_string()))?;
    let mut json = convert::to_json(&message)?;
    if let Value::Object(fields) = &mut json {
        fields.insert("kind".into(), Value::String(kind));
        fields.insert("apiVersion".into(), Value::String(api_version));
    }
    Ok(json.to_string().into_bytes())
}

/// The protobuf of an answer's JSON (an object, a list or a Status), by its apiVersion and
/// kind.
pub(super) fn answer_body(json: &Value) -> Result<Vec<u8>, Error> {
    envelope::seal(&unknown_of(json)?)
}

fn unknown_of(json: &Value) -> Result<Unknown, Error> {
    let text = |field: &str| json.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let descriptor = descriptors::message_of(&api_version, &kind)
        .ok_or_else(|| Error::UnknownKind { api_version: api_version.clone(), kind: kind.clone() })?;
    let message = convert::from_json(descriptor, json)?;
    use prost_reflect::prost::Message as _;
    Ok(Unknown { api_version, kind, raw: message.encode_to_vec() })
}

/// One frame of a protobuf watch stream: an event of `event_type` (`ADDED`, ...) about
/// `object` (an object or, for `ERROR`, a Status).
pub(super) fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, Error> {
    envelope::watch_frame(event_type, &unknown_of(object)?)
}

#[cfg(test)]
#[path = "conversion_tests.rs"]
mod conversion_tests;

#[cfg(test)]
#[path = "fixture_tests.rs"]
mod fixture_tests;

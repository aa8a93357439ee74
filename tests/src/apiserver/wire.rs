//! What the local API server puts on the wire besides stored objects: watch event frames
//! (one JSON object and a newline each), bookmarks, ERROR events, and continue tokens in the
//! API server's own format.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::resources::ResourceDef;
use super::store::{ApiError, INITIAL_EVENTS_END};

pub(crate) fn event_frame(kind: &str, json: &str) -> Bytes {
    let mut frame = String::with_capacity(json.len() + 32);
    frame.push_str("{\"type\":\"");
    frame.push_str(kind);
    frame.push_str("\",\"object\":");
    frame.push_str(json);
    frame.push_str("}\n");
    Bytes::from(frame)
}

pub(crate) fn bookmark_frame(def: &ResourceDef, rv: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_events_end {
        metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
    }
    let object = json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": metadata});
    event_frame("BOOKMARK", &object.to_string())
}

/// The ERROR event carrying `error`.
pub(crate) fn error_frame(error: &ApiError) -> Bytes {
    event_frame("ERROR", &error.status().to_string())
}

/// A continue token as the API server makes them: base64 of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"<next key>"}`.
pub(crate) fn encode_continue(rv: u64, start: &str) -> String {
    use base64::Engine as _;
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

pub(crate) fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    use base64::Engine as _;
    let invalid = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|e| invalid(&e.to_string()))?;
    let value: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| invalid(&e.to_string()))?;
    if value.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"));
    }
    let rv = value.get("rv").and_then(Value::as_u64).filter(|rv| *rv > 0).ok_or_else(|| invalid("no rv"))?;
    let start = value.get("start").and_then(Value::as_str).ok_or_else(|| invalid("no start"))?;
    Ok((rv, start.to_owned()))
}

//! The `Status` bodies of failed requests, as kube-apiserver writes them: the code and
//! reason of the error, and `details` naming the object (`name`, `group`, `kind` — the
//! resource for a missing, existing or conflicting object, the kind with the `causes` for an
//! invalid one) or, for a request's own options, the options kind (`CreateOptions` ...).

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::cluster::RequestError;

/// The object a request is about, for a Status's `details`.
pub(super) struct About<'a> {
    pub name: &'a str,
    pub group: &'a str,
    pub plural: &'a str,
    pub kind: &'a str,
}

impl About<'_> {
    fn details(&self, kind: &str) -> Value {
        let mut details = json!({"kind": kind});
        if !self.name.is_empty() {
            details["name"] = json!(self.name);
        }
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        details
    }
}

pub(super) fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// A `Status` failure, as the API server answers errors.
pub(super) fn failure(e: &RequestError) -> Response {
    failure_about(e, None)
}

/// A `Status` failure whose details name the object `about`, when known.
pub(super) fn failure_about(e: &RequestError, about: Option<&About<'_>>) -> Response {
    let (code, reason) = match e {
        RequestError::NotPermitted(_) | RequestError::Forbidden(_) => (403, "Forbidden"),
        RequestError::NotFound(_) => (404, "NotFound"),
        RequestError::AlreadyExists(_) => (409, "AlreadyExists"),
        RequestError::Conflict(_) => (409, "Conflict"),
        RequestError::Invalid { .. } => (422, "Invalid"),
        RequestError::TooLarge(_) => (413, "RequestEntityTooLarge"),
        RequestError::BadRequest(_) => (400, "BadRequest"),
        RequestError::RateLimited(_) => (429, "TooManyRequests"),
        RequestError::TimedOut(_) => (504, "Timeout"),
        RequestError::Unavailable(_) => (503, "ServiceUnavailable"),
    };
    let message = match e {
        RequestError::Invalid { message, .. } => message.clone(),
        other => other.to_string().split_once(": ").map_or_else(|| other.to_string(), |(_, m)| m.to_owned()),
    };
    let mut status = status_object(code, reason, &message);
    match (e, about) {
        (RequestError::Invalid { causes, .. }, about) => {
            let causes: Vec<Value> =
                causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect();
            let mut details = about.map_or_else(|| json!({}), |a| a.details(a.kind));
            details["causes"] = json!(causes);
            status["details"] = details;
        }
        (RequestError::NotFound(_) | RequestError::AlreadyExists(_) | RequestError::Conflict(_), Some(about)) => {
            status["details"] = about.details(about.plural);
        }
        _ => {}
    }
    json_response(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &status)
}

fn status_object(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code})
}

/// A `Status` failure with this code, reason and message.
pub(super) fn status_failure(code: u16, reason: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &status_object(code, reason, message))
}

/// One field of a request's options that breaks a rule: the field, the reason
/// (`FieldValueNotSupported`, ...) and what is wrong, as apimachinery's `field.Error` says it
/// (`Unsupported value: ["Some"]: supported values: "All"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct OptionError {
    pub field: &'static str,
    pub reason: &'static str,
    pub detail: String,
}

/// A request whose options (`options`: `CreateOptions`, `DeleteOptions`, ...) break rules:
/// 422 with one cause per error, as the API server validates them (several errors are listed
/// in brackets, as Go's aggregate error prints them).
pub(super) fn invalid_options(options: &str, errors: &[OptionError]) -> Response {
    let listed: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect();
    let listed = if listed.len() == 1 { listed[0].clone() } else { format!("[{}]", listed.join(", ")) };
    let message = format!("{options}.meta.k8s.io \"\" is invalid: {listed}");
    let mut status = status_object(422, "Invalid", &message);
    let causes: Vec<Value> =
        errors.iter().map(|e| json!({"reason": e.reason, "message": e.detail, "field": e.field})).collect();
    status["details"] = json!({"causes": causes, "group": "meta.k8s.io", "kind": options});
    json_response(StatusCode::UNPROCESSABLE_ENTITY, &status)
}

/// 415: a PATCH whose `Content-Type` names no patch the API server knows.
pub(super) fn unsupported_media_type() -> Response {
    let mut status = status_object(415, "UnsupportedMediaType", "415: Unsupported Media Type");
    status["details"] = json!({});
    json_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &status)
}

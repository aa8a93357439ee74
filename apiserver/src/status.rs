//! `Status`: the API server's error, a metav1.Status with code, reason, message and details.
//!
//! Every rule of this crate refuses a request with one of these. It serializes to and parses
//! from the wire JSON the API server sends (`{"kind":"Status","apiVersion":"v1",...}`), and the
//! constructors write the API server's own messages, so a client (kubectl, kube-rs, client-go)
//! sees exactly what a real cluster would answer.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::field_error::FieldError;
use crate::resource::ResourceDef;

/// Why a request failed, in machine-readable form (`status.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatusReason {
    /// 401: the request carries no valid credentials.
    Unauthorized,
    /// 403: the request is not allowed.
    Forbidden,
    /// 404: the object does not exist.
    NotFound,
    /// 409: an object of that name already exists.
    AlreadyExists,
    /// 409: the write conflicts with the stored object (stale resourceVersion, failed precondition).
    Conflict,
    /// 410: the requested resource version is too old.
    Gone,
    /// 422: the object breaks a validation rule; `details.causes` lists them.
    Invalid,
    /// 504-ish: the server could not finish in time and the client may retry.
    ServerTimeout,
    /// 504: the request timed out.
    Timeout,
    /// 429: too many requests.
    TooManyRequests,
    /// 400: the request itself is malformed.
    BadRequest,
    /// 405: the verb is not supported on this resource.
    MethodNotAllowed,
    /// 406: no acceptable response format.
    NotAcceptable,
    /// 413: the request body is too large.
    RequestEntityTooLarge,
    /// 415: the request body's content type is not accepted.
    UnsupportedMediaType,
    /// 500: the server failed.
    InternalError,
    /// 410: the content (e.g. a continue token) has expired.
    Expired,
    /// 503: the server cannot serve the request now.
    ServiceUnavailable,
    /// No reason given (`""`), or one this crate does not know; the code says what happened.
    #[serde(rename = "", other)]
    Unknown,
}

/// One reason a request failed, usually a field that broke a rule.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (`FieldValueInvalid`, `FieldValueRequired`, `FieldManagerConflict`...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable description of the cause.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field the cause is about (`metadata.name`, `.spec.replicas`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// What object the failure is about, and its causes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusDetails {
    /// The object's name, when one applies.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The API group of the resource (empty for the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind or resource: a plural resource name (`pods`) for NotFound, AlreadyExists and
    /// Conflict, a kind (`Pod`) for Invalid, as the API server fills it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
}

/// A failed request: a metav1.Status with `status: Failure`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Status {
    /// The HTTP status code.
    pub code: u16,
    /// The machine-readable reason.
    pub reason: StatusReason,
    /// The human-readable message.
    pub message: String,
    /// The object concerned and the causes, when known (boxed: errors stay small).
    pub details: Option<Box<StatusDetails>>,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The wire form of a failure Status.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(default = "unknown", skip_serializing_if = "is_unknown")]
    reason: StatusReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<StatusDetails>,
    #[serde(default)]
    code: u16,
}

fn unknown() -> StatusReason {
    StatusReason::Unknown
}

fn is_unknown(reason: &StatusReason) -> bool {
    *reason == StatusReason::Unknown
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: serde_json::Map::new(),
            status: "Failure".into(),
            message: self.message.clone(),
            reason: self.reason,
            details: self.details.as_deref().cloned(),
            code: self.code,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        if !wire.kind.is_empty() && wire.kind != "Status" {
            return Err(serde::de::Error::custom(format!("expected kind Status, found {}", wire.kind)));
        }
        Ok(Status { code: wire.code, reason: wire.reason, message: wire.message, details: wire.details.map(Box::new) })
    }
}

impl Status {
    /// A Status with no details.
    pub fn new(code: u16, reason: StatusReason, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None }
    }

    fn about_resource(mut self, def: &ResourceDef, name: &str) -> Self {
        self.details = Some(Box::new(StatusDetails {
            name: name.into(),
            group: def.group.clone(),
            kind: def.plural.clone(),
            causes: Vec::new(),
        }));
        self
    }

    /// 404: `pods "web" not found`.
    pub fn not_found(def: &ResourceDef, name: &str) -> Self {
        let message = format!("{} {} not found", def.group_resource(), crate::field_error::quote(name));
        Self::new(404, StatusReason::NotFound, message).about_resource(def, name)
    }

    /// 409: `pods "web" already exists`.
    pub fn already_exists(def: &ResourceDef, name: &str) -> Self {
        let message = format!("{} {} already exists", def.group_resource(), crate::field_error::quote(name));
        Self::new(409, StatusReason::AlreadyExists, message).about_resource(def, name)
    }

    /// 409: `Operation cannot be fulfilled on pods "web": <why>`.
    pub fn conflict(def: &ResourceDef, name: &str, why: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {} {}: {why}",
            def.group_resource(),
            crate::field_error::quote(name)
        );
        Self::new(409, StatusReason::Conflict, message).about_resource(def, name)
    }

    /// 409: the write was based on a stale resourceVersion.
    pub fn modified(def: &ResourceDef, name: &str) -> Self {
        Self::conflict(
            def,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422: `Pod "web" is invalid: <errors>`; one error is written alone, several as `[a, b]`.
    pub fn invalid(def: &ResourceDef, name: &str, errors: &[FieldError]) -> Self {
        let mut message = format!("{} {} is invalid", def.group_kind(), crate::field_error::quote(name));
        match errors {
            [] => {}
            [one] => message.push_str(&format!(": {one}")),
            many => {
                let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
                message.push_str(&format!(": [{}]", parts.join(", ")));
            }
        }
        let causes = errors
            .iter()
            .map(|e| StatusCause { reason: e.kind.cause_type().into(), message: e.body(), field: e.field.clone() })
            .collect();
        Self {
            code: 422,
            reason: StatusReason::Invalid,
            message,
            details: Some(Box::new(StatusDetails {
                name: name.into(),
                group: def.group.clone(),
                kind: def.kind.clone(),
                causes,
            })),
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, message)
    }

    /// 415: the patch type is not accepted for this resource.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        let message = format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        );
        Self::new(415, StatusReason::UnsupportedMediaType, message)
    }

    /// 405: the verb is not supported on this resource.
    pub fn method_not_allowed(def: &ResourceDef, verb: &str) -> Self {
        let message = format!("{verb} is not supported on resources of kind {}", def.group_kind());
        Self::new(405, StatusReason::MethodNotAllowed, message)
    }

    /// 500 with reason `InternalError`: `Internal error occurred: <why>`.
    pub fn internal(why: &str) -> Self {
        Self::new(500, StatusReason::InternalError, format!("Internal error occurred: {why}"))
    }

    /// Whether this is a 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.reason == StatusReason::NotFound
    }

    /// Whether this is a 409 Conflict (not AlreadyExists).
    pub fn is_conflict(&self) -> bool {
        self.reason == StatusReason::Conflict
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;

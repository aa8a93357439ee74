//! Field errors: one broken rule at one field path, as the API server's validation reports it.
//!
//! An `Invalid` [`Status`](crate::Status) is built from a list of these; each becomes one
//! `details.causes` entry and one part of the message, in the API server's wording
//! (`metadata.name: Invalid value: "Web": ...`, `metadata.name: Required value: ...`).

use std::fmt;

/// What kind of rule a field broke; its wire name is a `StatusCause`'s `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is missing (`FieldValueRequired`).
    Required,
    /// A field's value breaks a rule (`FieldValueInvalid`).
    Invalid,
    /// A field may not be set or changed here (`FieldValueForbidden`).
    Forbidden,
    /// A value is longer than allowed (`FieldValueTooLong`).
    TooLong,
    /// A value appears twice where it must be unique (`FieldValueDuplicate`).
    Duplicate,
}

impl FieldErrorKind {
    /// The cause type on the wire (`FieldValueInvalid`...).
    pub fn cause_type(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
        }
    }

    fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::Duplicate => "Duplicate value",
        }
    }
}

/// One validation failure at one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The kind of rule broken.
    pub kind: FieldErrorKind,
    /// The field path, dotted as the API server writes it (`metadata.labels`).
    pub field: String,
    /// The offending value as the API server prints it (strings quoted), when it is shown.
    pub value: Option<String>,
    /// What the rule says.
    pub detail: String,
}

impl FieldError {
    /// A required field is missing.
    pub fn required(field: &str, detail: &str) -> Self {
        Self { kind: FieldErrorKind::Required, field: field.into(), value: None, detail: detail.into() }
    }

    /// A string value breaks a rule; the value is printed quoted.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self::invalid_raw(field, &quote(value), detail)
    }

    /// A value breaks a rule; `value` is printed as given (e.g. `0x0`, `5`).
    pub fn invalid_raw(field: &str, value: &str, detail: &str) -> Self {
        Self { kind: FieldErrorKind::Invalid, field: field.into(), value: Some(value.into()), detail: detail.into() }
    }

    /// A field may not be set or changed.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self { kind: FieldErrorKind::Forbidden, field: field.into(), value: None, detail: detail.into() }
    }

    /// A value is longer than `max` bytes.
    pub fn too_long(field: &str, max: usize) -> Self {
        Self {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: None,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// A string value appears twice.
    pub fn duplicate(field: &str, value: &str) -> Self {
        Self { kind: FieldErrorKind::Duplicate, field: field.into(), value: Some(quote(value)), detail: String::new() }
    }

    /// The cause's message: the error without its field (`Invalid value: "Web": ...`).
    pub fn body(&self) -> String {
        let mut body = self.kind.label().to_string();
        if let Some(value) = &self.value {
            body.push_str(": ");
            body.push_str(value);
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A string quoted as Go's `%q` prints it (JSON string escaping is the same for printable text).
pub(crate) fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

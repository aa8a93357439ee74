//! The options of a create, update or patch (`CreateOptions`, `UpdateOptions`,
//! `PatchOptions`), read from the query and checked as the API server checks them
//! (apimachinery's `ValidateCreateOptions` and its siblings): `dryRun` (every value `All`),
//! `fieldManager` (at most 128 bytes, printable), `fieldValidation` (`Ignore`, `Warn`,
//! `Strict` or none), and for a patch the type its `Content-Type` names, with an apply's
//! required `fieldManager` and `force` (which no other patch may carry). A DELETE's options
//! are [`delete_options`](super::delete_options)'.

use axum::http::{HeaderMap, Method, header};
use axum::response::Response;

use super::media::content_type;
use super::query::Query;
use super::status::{OptionError, invalid_options, unsupported_media_type};
use crate::cluster::PatchType;

/// The answer to a request whose options are refused (boxed: a `Response` is large).
pub(super) type Refused = Box<Response>;

/// The options kind of a write by `method`, as the API server names it in errors.
fn options_kind(method: &Method) -> &'static str {
    match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::DELETE => "DeleteOptions",
        _ => "PatchOptions",
    }
}

/// The longest field manager name (apimachinery's `FieldManagerMaxLength`).
const MANAGER_MAX_BYTES: usize = 128;

/// The values `fieldValidation` takes (apimachinery's `allowedFieldValidationValues`).
const FIELD_VALIDATIONS: [&str; 4] = ["", "Ignore", "Strict", "Warn"];

/// What a create, update or patch asks besides its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct WriteOptions {
    /// `dryRun=All`: decided, not stored.
    pub dry_run: bool,
    /// The `fieldManager` query, when given and not empty.
    pub field_manager: Option<String>,
}

/// The errors of a `dryRun` list: every value must be `All` (apimachinery's `ValidateDryRun`).
pub(super) fn dry_run_errors(values: &[String]) -> Vec<OptionError> {
    if values.iter().all(|v| v == "All") {
        return Vec::new();
    }
    let listed = serde_json::to_string(values).unwrap_or_default();
    vec![OptionError {
        field: "dryRun",
        reason: "FieldValueNotSupported",
        detail: format!("Unsupported value: {listed}: supported values: \"All\""),
    }]
}

fn field_manager_errors(manager: &str) -> Vec<OptionError> {
    let mut errors = Vec::new();
    if manager.len() > MANAGER_MAX_BYTES {
        errors.push(OptionError {
            field: "fieldManager",
            reason: "FieldValueTooLong",
            detail: format!("Too long: may not be more than {MANAGER_MAX_BYTES} bytes"),
        });
    }
    for (at, c) in manager.char_indices().filter(|(_, c)| c.is_control()) {
        errors.push(OptionError {
            field: "fieldManager",
            reason: "FieldValueInvalid",
            detail: format!(
                "Invalid value: {}: invalid character U+{:04X} (at position {at})",
                serde_json::to_string(manager).unwrap_or_default(),
                u32::from(c)
            ),
        });
    }
    errors
}

/// The options of a create (POST), update (PUT) or patch (PATCH of `patch`), or the 422 the
/// API server answers when they break its rules (every error, as it lists them).
pub(super) fn write_options(
    method: &Method,
    query: &Query,
    patch: Option<&PatchType>,
) -> Result<WriteOptions, Refused> {
    let dry_run: Vec<String> = query.all("dryRun").into_iter().map(str::to_owned).collect();
    let field_manager = query.get("fieldManager").filter(|m| !m.is_empty()).map(str::to_owned);
    let mut errors = Vec::new();
    match patch {
        Some(PatchType::Apply { field_manager: manager, .. }) if manager.is_empty() => errors.push(OptionError {
            field: "fieldManager",
            reason: "FieldValueRequired",
            detail: "Required value: is required for apply patch".into(),
        }),
        Some(PatchType::Apply { .. }) | None => {}
        Some(_) if query.get("force").is_some() => errors.push(OptionError {
            field: "force",
            reason: "FieldValueForbidden",
            detail: "Forbidden: may not be specified for non-apply patch".into(),
        }),
        Some(_) => {}
    }
    errors.extend(field_manager.as_deref().map(field_manager_errors).unwrap_or_default());
    errors.extend(dry_run_errors(&dry_run));
    let validation = query.get("fieldValidation").unwrap_or_default();
    if !FIELD_VALIDATIONS.contains(&validation) {
        errors.push(OptionError {
            field: "fieldValidation",
            reason: "FieldValueNotSupported",
            detail: format!(
                "Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                serde_json::to_string(validation).unwrap_or_default()
            ),
        });
    }
    if !errors.is_empty() {
        return Err(Box::new(invalid_options(options_kind(method), &errors)));
    }
    Ok(WriteOptions { dry_run: !dry_run.is_empty(), field_manager })
}

/// A flag of the query as apimachinery converts one (`Convert_Slice_string_To_Pointer_bool`):
/// absent is `None`; `0` and `false` (any case) are false; anything else, even empty, true.
pub(super) fn go_flag(query: &Query, name: &str) -> Option<bool> {
    query.get(name).map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
}

/// The kind of patch a PATCH's `Content-Type` names: a merge patch when it names none, 415
/// for a type that is no patch. An apply carries its `fieldManager` (empty when the query
/// has none: [`write_options`] refuses it) and `force`.
pub(super) fn patch_type(headers: &HeaderMap, query: &Query) -> Result<PatchType, Refused> {
    match content_type(headers) {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
        "application/apply-patch+yaml" => Ok(PatchType::Apply {
            field_manager: query.get("fieldManager").unwrap_or_default().to_owned(),
            force: go_flag(query, "force").unwrap_or(false),
        }),
        "application/merge-patch+json" | "" => Ok(PatchType::Merge),
        _ => Err(Box::new(unsupported_media_type())),
    }
}

/// The manager of a write other than an apply, as the API server names it: the
/// `fieldManager` query, else the `User-Agent` up to its first `/` (printable characters, at
/// most 128 bytes), else `unknown`.
pub(super) fn field_manager(headers: &HeaderMap, options: &WriteOptions) -> String {
    if let Some(manager) = &options.field_manager {
        return manager.clone();
    }
    let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut manager = String::new();
    for c in agent.split('/').next().unwrap_or_default().chars().filter(|c| !c.is_control()) {
        if manager.len() + c.len_utf8() > MANAGER_MAX_BYTES {
            break;
        }
        manager.push(c);
    }
    if manager.is_empty() { "unknown".to_owned() } else { manager }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;

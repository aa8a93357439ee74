//! A DELETE's options (`DeleteOptions`), read where kube-apiserver reads them
//! (`handlers/delete.go`): from the body when it has one (kubectl sends them there,
//! `--dry-run=server` as `"dryRun": ["All"]`), else from the query (`dryRun`,
//! `gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`); never from both. They are
//! checked as `ValidateDeleteOptions` checks them. A body that cannot be read as options is
//! refused, never ignored: ignoring it would delete what a dry run only asked about.

use axum::http::HeaderMap;
use serde::Deserialize;

use super::media::content_type;
use super::options::{Refused, dry_run_errors, go_flag};
use super::query::Query;
use super::status::{OptionError, failure, invalid_options, unsupported_media_type};
use crate::cluster::{DeleteOptions, Preconditions, PropagationPolicy, RequestError};

/// What a DELETE asks besides its target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Deletion {
    /// Preconditions, propagation and grace period, for the write rules.
    pub options: DeleteOptions,
    /// `dryRun: ["All"]`: decided, not stored.
    pub dry_run: bool,
    /// The deprecated `orphanDependents`, when given: `false` answers 202 Accepted to a
    /// delete that does not remove the object at once, as kube-apiserver does.
    pub orphan_dependents: Option<bool>,
}

/// `metav1.DeleteOptions` as JSON (kind and apiVersion, when given, are not checked).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(default)]
    dry_run: Option<Vec<String>>,
    #[serde(default)]
    grace_period_seconds: Option<i64>,
    #[serde(default)]
    propagation_policy: Option<String>,
    #[serde(default)]
    orphan_dependents: Option<bool>,
    #[serde(default)]
    preconditions: Option<BodyPreconditions>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BodyPreconditions {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

fn bad_request(message: String) -> Refused {
    Box::new(failure(&RequestError::BadRequest(message)))
}

/// The options of the query, as apimachinery converts URL values to `DeleteOptions`.
fn from_query(query: &Query) -> Result<Body, Refused> {
    let grace_period_seconds = match query.get("gracePeriodSeconds") {
        Some(text) => Some(
            text.parse::<i64>()
                .map_err(|_| bad_request(format!("strconv.ParseInt: parsing \"{text}\": invalid syntax")))?,
        ),
        None => None,
    };
    let dry_run = query.all("dryRun");
    Ok(Body {
        dry_run: (!dry_run.is_empty()).then(|| dry_run.into_iter().map(str::to_owned).collect()),
        grace_period_seconds,
        propagation_policy: query.get("propagationPolicy").map(str::to_owned),
        orphan_dependents: go_flag(query, "orphanDependents"),
        preconditions: None,
    })
}

/// The options of a JSON body.
fn from_body(headers: &HeaderMap, body: &[u8]) -> Result<Body, Refused> {
    let mime = content_type(headers);
    // JSON, or no type at all (read as JSON, as the API server's default serializer does);
    // anything else (protobuf, CBOR) cannot be read here, and is refused rather than ignored.
    if !(mime.is_empty() || mime == "application/json") {
        return Err(Box::new(unsupported_media_type()));
    }
    let options: Option<Body> = serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("the DeleteOptions in the body cannot be read: {e}")))?;
    Ok(options.unwrap_or_default())
}

/// A DELETE's options, from its body or (without one) its query, or the answer refusing them.
pub(super) fn delete_options(headers: &HeaderMap, body: &[u8], query: &Query) -> Result<Deletion, Refused> {
    let read = if body.is_empty() { from_query(query)? } else { from_body(headers, body)? };
    let mut errors = Vec::new();
    if let (Some(_), Some(policy)) = (read.orphan_dependents, &read.propagation_policy) {
        errors.push(OptionError {
            field: "propagationPolicy",
            reason: "FieldValueInvalid",
            detail: format!(
                "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                serde_json::to_string(policy).unwrap_or_default()
            ),
        });
    }
    let propagation_policy = match read.propagation_policy.as_deref() {
        None => read
            .orphan_dependents
            .map(|orphan| if orphan { PropagationPolicy::Orphan } else { PropagationPolicy::Background }),
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        Some("Background") => Some(PropagationPolicy::Background),
        Some(other) => {
            errors.push(OptionError {
                field: "propagationPolicy",
                reason: "FieldValueNotSupported",
                detail: format!(
                    "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                    serde_json::to_string(other).unwrap_or_default()
                ),
            });
            None
        }
    };
    let dry_run = read.dry_run.unwrap_or_default();
    errors.extend(dry_run_errors(&dry_run));
    if !errors.is_empty() {
        return Err(Box::new(invalid_options("DeleteOptions", &errors)));
    }
    let preconditions = read.preconditions.unwrap_or_default();
    Ok(Deletion {
        options: DeleteOptions {
            preconditions: Preconditions { uid: preconditions.uid, resource_version: preconditions.resource_version },
            propagation_policy,
            grace_period_seconds: read.grace_period_seconds,
        },
        dry_run: !dry_run.is_empty(),
        orphan_dependents: read.orphan_dependents,
    })
}

#[cfg(test)]
#[path = "delete_options_tests.rs"]
mod tests;

//! A write's options, read from its query and body and checked as the API server checks
//! them: `dryRun`, the patch type of a PATCH's `Content-Type` (with an apply's
//! `fieldManager` and `force`), and a DELETE's `DeleteOptions`.

use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::Value;

use super::query::Query;
use super::status::{invalid_options, unsupported_media_type};
use crate::cluster::{DeleteOptions, PatchType, Preconditions, PropagationPolicy};

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

/// `dryRun=All`: the write is decided, not stored (its one value, as the API server's).
pub(super) fn dry_run(method: &Method, query: &Query) -> Result<bool, Refused> {
    match query.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(Box::new(invalid_options(
            options_kind(method),
            "dryRun",
            "FieldValueNotSupported",
            &format!("Unsupported value: [\"{other}\"]: supported values: \"All\""),
        ))),
    }
}

/// The kind of patch a PATCH's `Content-Type` names: a merge patch when it names none, 415
/// for a type that is no patch; an apply needs a `fieldManager`.
pub(super) fn patch_type(headers: &HeaderMap, query: &Query) -> Result<PatchType, Refused> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    match content_type.split(';').next().unwrap_or_default().trim() {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
        "application/apply-patch+yaml" => match query.get("fieldManager") {
            Some(manager) if !manager.is_empty() => {
                Ok(PatchType::Apply { field_manager: manager.to_owned(), force: query.get("force") == Some("true") })
            }
            _ => Err(Box::new(invalid_options(
                "PatchOptions",
                "fieldManager",
                "FieldValueRequired",
                "Required value: is required for apply patch",
            ))),
        },
        "application/merge-patch+json" | "" => Ok(PatchType::Merge),
        _ => Err(Box::new(unsupported_media_type())),
    }
}

/// The manager of a write other than an apply, as the API server names it: the
/// `fieldManager` query, else the `User-Agent` up to its first `/` (printable characters, at
/// most 128 bytes), else `unknown`.
pub(super) fn field_manager(headers: &HeaderMap, query: &Query) -> String {
    if let Some(manager) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return manager.to_owned();
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

/// The longest field manager name (apimachinery's `FieldManagerMaxLength`).
const MANAGER_MAX_BYTES: usize = 128;

/// A DELETE's options, from its body (`DeleteOptions`) or query.
pub(super) fn delete_options(body: &str, query: &Query) -> Result<DeleteOptions, Refused> {
    let options: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let propagation = options["propagationPolicy"].as_str().or_else(|| query.get("propagationPolicy"));
    let propagation_policy = match propagation {
        None => None,
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        Some("Background") => Some(PropagationPolicy::Background),
        Some(other) => {
            return Err(Box::new(invalid_options(
                "DeleteOptions",
                "propagationPolicy",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            )));
        }
    };
    Ok(DeleteOptions {
        preconditions: Preconditions {
            uid: text(&options["preconditions"]["uid"]),
            resource_version: text(&options["preconditions"]["resourceVersion"]),
        },
        propagation_policy,
        grace_period_seconds: options["gracePeriodSeconds"]
            .as_i64()
            .or_else(|| query.get("gracePeriodSeconds").and_then(|g| g.parse().ok())),
    })
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderValue, StatusCode, Uri};

    use super::*;

    fn query(q: &str) -> Query {
        Query::of(&format!("/api/v1/namespaces/a/configmaps/b?{q}").parse::<Uri>().unwrap())
    }

    fn content(mime: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(mime).unwrap());
        headers
    }

    #[test]
    fn dry_run_takes_all_and_refuses_other_values_as_invalid_options() {
        assert!(!dry_run(&Method::POST, &query("")).unwrap());
        assert!(dry_run(&Method::POST, &query("dryRun=All")).unwrap());
        let refused = dry_run(&Method::PUT, &query("dryRun=Some")).unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    }

    #[test]
    fn a_patch_type_comes_from_the_content_type_and_an_apply_needs_a_manager() {
        assert_eq!(patch_type(&HeaderMap::new(), &query("")).unwrap(), PatchType::Merge);
        let strategic = content("application/strategic-merge-patch+json; charset=utf-8");
        assert_eq!(patch_type(&strategic, &query("")).unwrap(), PatchType::StrategicMerge);
        let apply = content("application/apply-patch+yaml");
        assert_eq!(
            patch_type(&apply, &query("fieldManager=me&force=true")).unwrap(),
            PatchType::Apply { field_manager: "me".into(), force: true }
        );
        assert_eq!(patch_type(&apply, &query("")).unwrap_err().status(), StatusCode::UNPROCESSABLE_ENTITY);
        let text = content("text/plain");
        assert_eq!(patch_type(&text, &query("")).unwrap_err().status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn a_writes_manager_is_its_field_manager_or_its_user_agents_first_part() {
        let mut agent = HeaderMap::new();
        agent.insert(header::USER_AGENT, HeaderValue::from_static("kubectl/v1.37.2 (linux/amd64) kubernetes/abc"));
        assert_eq!(field_manager(&agent, &query("fieldManager=mine")), "mine");
        assert_eq!(field_manager(&agent, &query("")), "kubectl");
        assert_eq!(field_manager(&HeaderMap::new(), &query("")), "unknown");
    }

    #[test]
    fn delete_options_come_from_the_body_or_query_and_an_unknown_policy_is_invalid() {
        let body = r#"{"propagationPolicy": "Foreground", "preconditions": {"uid": "u"}}"#;
        let options = delete_options(body, &query("gracePeriodSeconds=5")).unwrap();
        assert_eq!(options.propagation_policy, Some(PropagationPolicy::Foreground));
        assert_eq!(options.preconditions.uid.as_deref(), Some("u"));
        assert_eq!(options.grace_period_seconds, Some(5));
        let refused = delete_options("", &query("propagationPolicy=Sideways")).unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    }
}

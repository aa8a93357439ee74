//! LIST and WATCH of a collection, as the API server answers them.
//!
//! - LIST: one JSON document, `{kind}List` with `metadata.resourceVersion`, `continue` and
//!   (when no selector filters) `remainingItemCount`; the items of built-in kinds come without
//!   `apiVersion` and `kind`, custom resources keep them. Objects are written from their stored
//!   JSON, not re-encoded.
//! - WATCH: a chunked stream of JSON lines (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`,
//!   `ERROR`); bookmarks only when the client allows them, typed with the kind and, at the end
//!   of a streaming list's initial events, annotated `k8s.io/initial-events-end`; an ERROR
//!   event (e.g. 410 for a version the history lost) ends the stream; `timeoutSeconds` ends
//!   it normally.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::json;
use serde_json::value::RawValue;

use super::query::Query;
use super::selection::Selection;
use super::status::{failure, status_failure};
use crate::cluster::RequestError;
use crate::embedded::{Collection, ListPage};
use crate::informer::{Object, SourceError, Status, WatchEvent};

/// The annotation of the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

fn source_failure(e: SourceError) -> Response {
    let status = match e {
        SourceError::Api(status) => status,
        SourceError::Gone(message) => Status { code: 410, reason: "Expired".into(), message },
        other => Status { code: 500, reason: "InternalError".into(), message: other.to_string() },
    };
    status_failure(status.code, &status.reason, &status.message)
}

/// An object's JSON without `apiVersion` and `kind` (as built-in kinds' list items are).
fn untyped(obj: &Object) -> String {
    obj.json_without_type().unwrap_or_else(|| reencoded_without_type(obj.json()))
}

/// [`untyped`] for an object whose members could not be cut out as they lie.
fn reencoded_without_type(json: &str) -> String {
    match serde_json::from_str::<BTreeMap<std::borrow::Cow<'_, str>, &RawValue>>(json) {
        Ok(mut fields) => {
            fields.remove("apiVersion");
            fields.remove("kind");
            serde_json::to_string(&fields).unwrap_or_else(|_| json.to_owned())
        }
        Err(_) => json.to_owned(),
    }
}

/// One page of `collection` as a LIST reads it (the query's `limit`, `continue`,
/// `resourceVersion` and `resourceVersionMatch`), or the answer refusing the query.
pub(super) fn page(collection: &Collection, selection: &Selection, query: &Query) -> Result<ListPage, Box<Response>> {
    let (params, rv_match) = query.list().map_err(|e| Box::new(failure(&e)))?;
    collection
        .source
        .list_matching(&params, rv_match, &|o| selection.selects(o))
        .map_err(|e| Box::new(source_failure(e)))
}

/// A LIST of `collection`.
pub fn list(collection: &Collection, api_version: &str, kind: &str, selection: &Selection, query: &Query) -> Response {
    match page(collection, selection, query) {
        Ok(page) => list_response(collection, api_version, kind, selection, &page),
        Err(refused) => *refused,
    }
}

/// The `metadata` of a list answering `page`: its resourceVersion, and where the next page
/// starts.
pub(super) fn list_metadata(selection: &Selection, page: &ListPage) -> serde_json::Value {
    let mut metadata = json!({"resourceVersion": page.list.resource_version});
    if let Some(token) = &page.list.continue_token {
        metadata["continue"] = token.clone().into();
        if !selection.filters() {
            metadata["remainingItemCount"] = page.remaining.into();
        }
    }
    metadata
}

/// `page` answered as a `{kind}List`.
pub(super) fn list_response(
    collection: &Collection,
    api_version: &str,
    kind: &str,
    selection: &Selection,
    page: &ListPage,
) -> Response {
    let metadata = list_metadata(selection, page);
    let mut body = String::with_capacity(page.list.items.iter().map(|o| o.json().len() + 1).sum::<usize>() + 256);
    body.push_str(&format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{metadata},\"items\":[",
        json!(format!("{kind}List")),
        json!(api_version)
    ));
    for (i, obj) in page.list.items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        if collection.def.built_in {
            body.push_str(&untyped(obj));
        } else {
            body.push_str(obj.json());
        }
    }
    body.push_str("]}");
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn object_frame(kind: &str, obj: &Object) -> String {
    // One allocation of the frame's size (`format!` grows its buffer through the object).
    ["{\"type\":\"", kind, "\",\"object\":", obj.json(), "}\n"].concat()
}

/// A WATCH of `collection`.
pub fn watch(
    collection: &Collection,
    api_version: &str,
    kind: &str,
    selection: Selection,
    query: &Query,
    default_timeout: Duration,
) -> Response {
    let params = match query.watch(default_timeout) {
        Ok(p) => p,
        Err(e) => return failure(&e),
    };
    let stream = match collection.source.watch_matching(&params, selection.into_selects()) {
        Ok(stream) => stream,
        Err(SourceError::Unsupported(what)) => {
            let message = format!(
                "ListOptions.meta.k8s.io \"\" is invalid: {what}: Forbidden: {what} is forbidden for watch unless the WatchList feature gate is enabled"
            );
            return failure(&RequestError::Invalid { message, causes: Vec::new() });
        }
        Err(e) => return source_failure(e),
    };
    let (api_version, kind) = (api_version.to_owned(), kind.to_owned());
    let allow_bookmarks = params.allow_bookmarks;
    let frames = stream
        .filter_map(move |event| {
            let frame = match event {
                Ok(WatchEvent::Added(o)) => Some((object_frame("ADDED", &o), false)),
                Ok(WatchEvent::Modified(o)) => Some((object_frame("MODIFIED", &o), false)),
                Ok(WatchEvent::Deleted(o)) => Some((object_frame("DELETED", &o), false)),
                Ok(WatchEvent::Bookmark { resource_version, initial_events_end }) if allow_bookmarks => {
                    let mut metadata = json!({"resourceVersion": resource_version, "creationTimestamp": null});
                    if initial_events_end {
                        metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
                    }
                    let object = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
                    Some((format!("{}\n", json!({"type": "BOOKMARK", "object": object})), false))
                }
                Ok(WatchEvent::Bookmark { .. }) => None,
                Ok(WatchEvent::Error(status)) => Some((error_frame(&status), true)),
                Err(e) => {
                    let status = Status { code: 500, reason: "InternalError".into(), message: e.to_string() };
                    Some((error_frame(&status), true))
                }
            };
            std::future::ready(frame)
        })
        .scan(false, |ended, (frame, last)| {
            if *ended {
                return std::future::ready(None);
            }
            *ended = last;
            std::future::ready(Some(Ok::<_, std::io::Error>(Bytes::from(frame))))
        });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// An ERROR event carrying `status`.
pub fn error_frame(status: &Status) -> String {
    let object = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": status.message, "reason": status.reason, "code": status.code});
    format!("{}\n", json!({"type": "ERROR", "object": object}))
}

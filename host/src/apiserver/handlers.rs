//! The requests of the Kubernetes API: LIST, WATCH and GET read the kinds' stores; writes go
//! through the [`EmbeddedClient`], with the API server's rules.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State as Extract;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

use super::ServedCluster;
use super::discovery::{self, Served};
use super::paths::{ResourcePath, Route, route};
use super::rbac::{self, User};
use crate::cluster::{
    ClusterClient, Collection, DeleteOptions, EmbeddedClient, PatchType, Preconditions, PropagationPolicy, Request,
    RequestError, Subresource, Verb,
};
use crate::informer::{ListParams, ListerWatcher, Object, WatchEvent, WatchParams};
use crate::plugin::{Attributes, LabelSelector};

/// What every request reads.
#[derive(Clone)]
pub struct State {
    cluster: Arc<dyn ServedCluster>,
    client: EmbeddedClient,
}

impl State {
    /// The state of an endpoint serving `cluster`.
    pub fn new(cluster: Arc<dyn ServedCluster>) -> Self {
        let client = EmbeddedClient::new(cluster.clone());
        Self { cluster, client }
    }
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// A `Status` failure, as the API server answers errors.
fn failure(e: &RequestError) -> Response {
    let (code, reason) = match e {
        RequestError::NotPermitted(_) | RequestError::Forbidden(_) => (403, "Forbidden"),
        RequestError::NotFound(_) => (404, "NotFound"),
        RequestError::AlreadyExists(_) => (409, "AlreadyExists"),
        RequestError::Conflict(_) => (409, "Conflict"),
        RequestError::Invalid { .. } => (422, "Invalid"),
        RequestError::BadRequest(_) => (400, "BadRequest"),
        RequestError::RateLimited(_) => (429, "TooManyRequests"),
        RequestError::TimedOut(_) => (504, "Timeout"),
        RequestError::Unavailable(_) => (503, "ServiceUnavailable"),
    };
    let message = match e {
        RequestError::Invalid { message, .. } => message.clone(),
        other => other.to_string().split_once(": ").map_or_else(|| other.to_string(), |(_, m)| m.to_owned()),
    };
    let mut status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code});
    if let RequestError::Invalid { causes, .. } = e {
        let causes: Vec<Value> =
            causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect();
        status["details"] = json!({"causes": causes});
    }
    json_response(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &status)
}

fn not_found(what: &str) -> Response {
    failure(&RequestError::NotFound(format!("the server could not find the requested resource ({what})")))
}

fn query(uri: &Uri) -> Vec<(String, String)> {
    uri.query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn value(obj: &Object) -> Value {
    obj.to_value().unwrap_or(Value::Null)
}

/// Every request.
pub async fn handle(
    Extract(state): Extract<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match route(uri.path()) {
        Route::Version => json_response(StatusCode::OK, &discovery::version()),
        Route::CoreVersions => json_response(StatusCode::OK, &discovery::core_versions()),
        Route::Groups => json_response(StatusCode::OK, &discovery::groups(&state.cluster.served())),
        Route::Resources { group, version } => match discovery::resources(&state.cluster.served(), &group, &version) {
            Some(list) => json_response(StatusCode::OK, &list),
            None => not_found(uri.path()),
        },
        Route::NotFound => not_found(uri.path()),
        Route::Resource(path) => {
            let Some(kind) = state
                .cluster
                .served()
                .into_iter()
                .find(|s| s.api_version == path.api_version() && s.plural == path.plural)
            else {
                return not_found(uri.path());
            };
            resource(&state, method, &uri, &headers, body, &path, &kind).await
        }
    }
}

async fn resource(
    state: &State,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
    path: &ResourcePath,
    kind: &Served,
) -> Response {
    let Some(collection) = state.cluster.collection(&kind.api_version, &kind.kind) else {
        return not_found(uri.path());
    };
    let params = query(uri);
    let namespace = if kind.namespaced { path.namespace.clone() } else { None };
    let name = path.name.clone().unwrap_or_default();
    if let Some(user) = impersonated(headers) {
        let watching = param(&params, "watch").is_some_and(|w| w == "true" || w == "1");
        let verb = match (&method, path.name.is_some()) {
            (&Method::GET, false) if watching => "watch",
            (&Method::GET, false) => "list",
            (&Method::GET, true) => "get",
            (&Method::POST, _) => "create",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, _) => "delete",
            _ => "unknown",
        };
        let resource = if path.status { format!("{}/status", kind.plural) } else { kind.plural.clone() };
        let group = kind.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let attributes = Attributes { group, resource: &resource, verb, namespace: namespace.as_deref(), name: &name };
        if let Err(message) = rbac::authorize(state.cluster.as_ref(), &user, &attributes) {
            return failure(&RequestError::Forbidden(message));
        }
    }
    let request = |verb: Verb, body: String| Request {
        verb,
        api_version: kind.api_version.clone(),
        kind: kind.kind.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        subresource: path.status.then_some(Subresource::Status),
        body,
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    let write = match (method, path.name.is_some()) {
        (Method::GET, false) if param(&params, "watch").is_some_and(|w| w == "true" || w == "1") => {
            return watch(&collection, namespace, &params).await;
        }
        (Method::GET, false) => return list(&collection, kind, namespace, &params).await,
        (Method::GET, true) => request(Verb::Get, String::new()),
        (Method::POST, false) => request(Verb::Create, text),
        (Method::PUT, true) => request(Verb::Update, text),
        (Method::PATCH, true) => {
            let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
            let patch_type = match content_type.split(';').next().unwrap_or_default().trim() {
                "application/json-patch+json" => PatchType::Json,
                "application/strategic-merge-patch+json" => PatchType::StrategicMerge,
                "application/apply-patch+yaml" => PatchType::Apply {
                    field_manager: param(&params, "fieldManager").unwrap_or("unknown").to_owned(),
                    force: param(&params, "force") == Some("true"),
                },
                _ => PatchType::Merge,
            };
            // An apply body is YAML (JSON is YAML too).
            let text = match patch_type {
                PatchType::Apply { .. } => match serde_norway::from_str::<Value>(&text) {
                    Ok(v) => v.to_string(),
                    Err(e) => return failure(&RequestError::BadRequest(format!("the apply body is not YAML: {e}"))),
                },
                _ => text,
            };
            request(Verb::Patch(patch_type), text)
        }
        (Method::DELETE, true) => request(Verb::Delete(delete_options(&text, &params)), String::new()),
        (method, _) => {
            let e = RequestError::BadRequest(format!("the server does not allow {method} on {}", uri.path()));
            return failure(&e);
        }
    };
    let creating = matches!(write.verb, Verb::Create);
    match state.client.execute(write, None).await {
        Ok(Some(obj)) => json_response(if creating { StatusCode::CREATED } else { StatusCode::OK }, &value(&obj)),
        Ok(None) => json_response(
            StatusCode::OK,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, "kind": path.plural}}),
        ),
        Err(e) => failure(&e),
    }
}

/// The user a request impersonates (`Impersonate-User`, `Impersonate-Group`), if any.
fn impersonated(headers: &HeaderMap) -> Option<User> {
    let name = headers.get("impersonate-user")?.to_str().ok()?.to_owned();
    let groups =
        headers.get_all("impersonate-group").iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect();
    Some(User { name, groups })
}

fn delete_options(body: &str, params: &[(String, String)]) -> DeleteOptions {
    let options: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let propagation = options["propagationPolicy"].as_str().or_else(|| param(params, "propagationPolicy"));
    DeleteOptions {
        preconditions: Preconditions {
            uid: text(&options["preconditions"]["uid"]),
            resource_version: text(&options["preconditions"]["resourceVersion"]),
        },
        propagation_policy: match propagation {
            Some("Orphan") => Some(PropagationPolicy::Orphan),
            Some("Foreground") => Some(PropagationPolicy::Foreground),
            Some("Background") => Some(PropagationPolicy::Background),
            _ => None,
        },
        grace_period_seconds: options["gracePeriodSeconds"]
            .as_i64()
            .or_else(|| param(params, "gracePeriodSeconds").and_then(|g| g.parse().ok())),
    }
}

/// What a LIST or WATCH selects: a namespace, labels, and fields (`metadata.name`,
/// `metadata.namespace`, with `=`, `==` or `!=`, as every resource supports).
struct Selection {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Vec<(String, bool, String)>,
}

impl Selection {
    fn of(namespace: Option<String>, params: &[(String, String)]) -> Result<Self, RequestError> {
        let bad = RequestError::BadRequest;
        let labels = match param(params, "labelSelector").filter(|s| !s.is_empty()) {
            Some(text) => {
                Some(text.parse::<LabelSelector>().map_err(|e| bad(format!("unable to parse requirement: {e}")))?)
            }
            None => None,
        };
        let mut fields = Vec::new();
        for term in param(params, "fieldSelector").unwrap_or_default().split(',').filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(bad(format!("invalid selector: '{term}'; can't understand '{term}'")));
            };
            if !matches!(field.trim(), "metadata.name" | "metadata.namespace") {
                return Err(bad(format!("field label not supported: {}", field.trim())));
            }
            fields.push((field.trim().to_owned(), equal, value.trim().to_owned()));
        }
        Ok(Self { namespace, labels, fields })
    }

    fn selects(&self, obj: &Object) -> bool {
        let field = |name: &str| if name == "metadata.name" { obj.name() } else { obj.namespace().unwrap_or_default() };
        self.namespace.as_deref().is_none_or(|ns| obj.namespace() == Some(ns))
            && self.labels.as_ref().is_none_or(|s| s.matches(obj.labels()))
            && self.fields.iter().all(|(name, equal, value)| (field(name) == value) == *equal)
    }
}

async fn list(
    collection: &Collection,
    kind: &Served,
    namespace: Option<String>,
    params: &[(String, String)],
) -> Response {
    let selection = match Selection::of(namespace, params) {
        Ok(s) => s,
        Err(e) => return failure(&e),
    };
    let list_params = ListParams {
        limit: param(params, "limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0),
        continue_token: param(params, "continue").filter(|c| !c.is_empty()).map(str::to_owned),
        resource_version: param(params, "resourceVersion").filter(|rv| !rv.is_empty()).map(str::to_owned),
    };
    match collection.source.list(&list_params).await {
        Ok(page) => {
            let items: Vec<Value> = page.items.iter().filter(|o| selection.selects(o)).map(value).collect();
            let mut metadata = json!({"resourceVersion": page.resource_version});
            if let Some(token) = page.continue_token {
                metadata["continue"] = token.into();
            }
            let list = json!({"kind": format!("{}List", kind.kind), "apiVersion": kind.api_version, "metadata": metadata, "items": items});
            json_response(StatusCode::OK, &list)
        }
        Err(e) => failure(&RequestError::from_status(500, "InternalError", e.to_string(), Vec::new())),
    }
}

async fn watch(collection: &Collection, namespace: Option<String>, params: &[(String, String)]) -> Response {
    let selection = match Selection::of(namespace, params) {
        Ok(s) => s,
        Err(e) => return failure(&e),
    };
    let resource_version = param(params, "resourceVersion")
        .filter(|rv| !rv.is_empty() && *rv != "0")
        .map_or_else(|| collection.source.resource_version().to_string(), str::to_owned);
    let watch_params = WatchParams {
        resource_version,
        timeout: param(params, "timeoutSeconds").and_then(|t| t.parse().ok()).map(Duration::from_secs),
        allow_bookmarks: param(params, "allowWatchBookmarks") == Some("true"),
        send_initial_events: false,
    };
    let stream = match collection.source.watch(&watch_params).await {
        Ok(stream) => stream,
        Err(e) => return failure(&RequestError::from_status(500, "InternalError", e.to_string(), Vec::new())),
    };
    let timeout = watch_params.timeout.unwrap_or(Duration::from_secs(1800));
    let frames = stream
        .filter_map(move |event| {
            let line = match event {
                Ok(WatchEvent::Added(o)) if selection.selects(&o) => Some(("ADDED", value(&o))),
                Ok(WatchEvent::Modified(o)) if selection.selects(&o) => Some(("MODIFIED", value(&o))),
                Ok(WatchEvent::Deleted(o)) if selection.selects(&o) => Some(("DELETED", value(&o))),
                Ok(WatchEvent::Bookmark { resource_version, .. }) => {
                    Some(("BOOKMARK", json!({"metadata": {"resourceVersion": resource_version}})))
                }
                _ => None,
            };
            std::future::ready(line.map(|(kind, object)| {
                Ok::<_, std::io::Error>(Bytes::from(format!("{}\n", json!({"type": kind, "object": object}))))
            }))
        })
        .take_until(tokio::time::sleep(timeout));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

//! The requests of the Kubernetes API: LIST, WATCH and GET read the kinds' stores; writes go
//! through the [`EmbeddedClient`], with the API server's rules.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::discovery::{self, Served};
use super::options::{delete_options, dry_run, field_manager, patch_type};
use super::paths::{ResourcePath, Route, route};
use super::query::Query;
use super::rbac::{self, User};
use super::read;
use super::selection::Selection;
use super::status::{About, failure, failure_about, json_response};
use super::{ApiOptions, ServedCluster};
use crate::cluster::{ClusterClient, PatchType, Request, RequestError, Subresource, Verb};
use crate::embedded::{Collection, EmbeddedClient};
use crate::informer::Object;
use crate::kube::Attributes;

/// What every request reads.
#[derive(Clone)]
pub struct State {
    cluster: Arc<dyn ServedCluster>,
    client: EmbeddedClient,
    options: ApiOptions,
}

impl State {
    /// The state of an endpoint serving `cluster`.
    pub fn new(cluster: Arc<dyn ServedCluster>, options: ApiOptions) -> Self {
        let client = EmbeddedClient::new(cluster.clone());
        Self { cluster, client, options }
    }
}

fn not_found(what: &str) -> Response {
    failure(&RequestError::NotFound(format!("the server could not find the requested resource ({what})")))
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
    body: axum::body::Body,
) -> Response {
    // The API server reads at most 3 MiB of a body, and answers a longer one with a Status.
    let Ok(body) = axum::body::to_bytes(body, crate::cluster::MAX_BODY_BYTES).await else {
        let message = format!("Request entity too large: limit is {}", crate::cluster::MAX_BODY_BYTES);
        return failure(&RequestError::TooLarge(message));
    };
    match route(uri.path()) {
        Route::Version => json_response(StatusCode::OK, &discovery::version()),
        // Serving at all is being healthy: the cluster is in this process.
        Route::Health => (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response(),
        Route::CoreVersions => json_response(StatusCode::OK, &discovery::core_versions()),
        Route::Groups => json_response(StatusCode::OK, &discovery::groups(&state.cluster.served())),
        Route::Group(name) => match discovery::group(&state.cluster.served(), &name) {
            Some(group) => json_response(StatusCode::OK, &group),
            None => not_found(uri.path()),
        },
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
    if !kind.namespaced && path.namespace.is_some() {
        // Cluster-scoped kinds have no namespaced path.
        return not_found(uri.path());
    }
    let query = Query::of(uri);
    let watching = match query.watching() {
        Ok(w) => w,
        Err(e) => return failure(&e),
    };
    let namespace = if kind.namespaced { path.namespace.clone() } else { None };
    let name = path.name.clone().unwrap_or_default();
    // An apply that finds no object creates it: allowed only to whom may also create.
    let may_create = match authorize(state, headers, &method, path, kind, watching, namespace.as_deref(), &name) {
        Ok(may_create) => may_create,
        Err(e) => return failure(&e),
    };
    let dry_run = match dry_run(&method, &query) {
        Ok(dry_run) => dry_run,
        Err(refused) => return *refused,
    };
    let request = |verb: Verb, body: String| {
        Request::new(verb, &kind.api_version, &kind.kind, namespace.clone(), &name)
            .with_body(body)
            .with_subresource(path.status.then_some(Subresource::Status))
            .with_dry_run(dry_run)
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    let write = match (method, path.name.is_some()) {
        (Method::GET, false) => return list_or_watch(state, &collection, kind, namespace, &query, watching),
        (Method::GET, true) => request(Verb::Get, String::new()),
        (Method::POST, false) => request(Verb::Create, text),
        (Method::PUT, true) => request(Verb::Update, text),
        (Method::PATCH, true) => {
            let patch_type = match patch_type(headers, &query) {
                Ok(patch_type) => patch_type,
                Err(refused) => return *refused,
            };
            // An apply body is YAML (JSON is YAML too), read as the API server reads it.
            let text = match patch_type {
                PatchType::Apply { .. } => match crate::kube::yaml11::one_document(&text) {
                    Ok(v) => v.to_string(),
                    Err(e) => return failure(&RequestError::BadRequest(format!("the apply body is not YAML: {e}"))),
                },
                _ => text,
            };
            Request { may_create, ..request(Verb::Patch(patch_type), text) }
        }
        (Method::DELETE, true) => match delete_options(&text, &query) {
            Ok(options) => request(Verb::Delete(options), String::new()),
            Err(refused) => return *refused,
        },
        (method, _) => {
            let e = RequestError::BadRequest(format!("the server does not allow {method} on {}", uri.path()));
            return failure(&e);
        }
    };
    // Every write but an apply (which names its own) and a delete is recorded in managedFields.
    let write = match &write.verb {
        Verb::Create | Verb::Update => write.with_field_manager(field_manager(headers, &query)),
        Verb::Patch(patch) if !matches!(patch, PatchType::Apply { .. }) => {
            write.with_field_manager(field_manager(headers, &query))
        }
        _ => write,
    };
    let creating = match &write.verb {
        Verb::Create => true,
        // An apply answers 201 when it created the object.
        Verb::Patch(PatchType::Apply { .. }) => {
            let probe = request(Verb::Get, String::new()).with_dry_run(false);
            matches!(state.client.execute(probe, None).await, Err(RequestError::NotFound(_)))
        }
        _ => false,
    };
    let body_name = serde_json::from_str::<Value>(&write.body)
        .ok()
        .and_then(|b| b.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned));
    let group = kind.api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let object_name = if name.is_empty() { body_name.as_deref().unwrap_or_default() } else { name.as_str() };
    let about = About { name: object_name, group, plural: &path.plural, kind: &kind.kind };
    match state.client.execute(write, None).await {
        Ok(Some(obj)) => json_response(if creating { StatusCode::CREATED } else { StatusCode::OK }, &value(&obj)),
        Ok(None) => {
            let mut details = json!({"name": name, "kind": path.plural});
            if !group.is_empty() {
                details["group"] = json!(group);
            }
            let success =
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
            json_response(StatusCode::OK, &success)
        }
        Err(e) => failure_about(&e, Some(&about)),
    }
}

/// A LIST, or a WATCH, of a collection, with the request's selection.
fn list_or_watch(
    state: &State,
    collection: &Collection,
    kind: &Served,
    namespace: Option<String>,
    query: &Query,
    watching: bool,
) -> Response {
    let selection =
        match Selection::parse(collection, namespace, query.get("labelSelector"), query.get("fieldSelector")) {
            Ok(s) => s,
            Err(e) => return failure(&e),
        };
    if watching {
        read::watch(collection, &kind.api_version, &kind.kind, selection, query, state.options.default_watch_timeout)
    } else {
        read::list(collection, &kind.api_version, &kind.kind, &selection, query)
    }
}

/// Authorizes a request that impersonates a user (`kubectl --as`) by the cluster's RBAC;
/// returns whether a server-side apply that finds no object may create it (`create` as
/// well as `patch`). A request that impersonates no one is the cluster admin's.
#[allow(clippy::too_many_arguments, reason = "the parts of one request, read where they were parsed")]
fn authorize(
    state: &State,
    headers: &HeaderMap,
    method: &Method,
    path: &ResourcePath,
    kind: &Served,
    watching: bool,
    namespace: Option<&str>,
    name: &str,
) -> Result<bool, RequestError> {
    let Some(user) = impersonated(headers) else { return Ok(true) };
    let verb = match (method, path.name.is_some()) {
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
    let attributes = Attributes { group, resource: &resource, verb, namespace, name };
    rbac::authorize(state.cluster.as_ref(), &user, &attributes).map_err(RequestError::Forbidden)?;
    let create = Attributes { verb: "create", ..attributes };
    Ok(verb != "patch" || rbac::authorize(state.cluster.as_ref(), &user, &create).is_ok())
}

/// The user a request impersonates (`Impersonate-User`, `Impersonate-Group`), if any. As the
/// API server does, a service account impersonated without groups gets its own
/// (`system:serviceaccounts`, `system:serviceaccounts:<namespace>`, `system:authenticated`).
fn impersonated(headers: &HeaderMap) -> Option<User> {
    let name = headers.get("impersonate-user")?.to_str().ok()?.to_owned();
    let mut groups: Vec<String> =
        headers.get_all("impersonate-group").iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect();
    if groups.is_empty()
        && let Some((namespace, account)) = name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':'))
        && !account.contains(':')
    {
        groups = crate::cluster::Identity::service_account(namespace, account).groups;
    }
    Some(User { name, groups })
}

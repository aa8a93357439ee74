//! The requests of the Kubernetes API: LIST, WATCH and GET read the kinds' stores; writes go
//! through the [`EmbeddedClient`], with the API server's rules.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::collection::delete_collection;
use super::delete_options::{Deletion, delete_options};
use super::discovery::{self, Served};
use super::negotiation;
use super::options::{field_manager, patch_type, write_options};
use super::paths::{ResourcePath, Route, route};
use super::protobuf;
use super::query::Query;
use super::rbac::{self, User};
use super::read;
use super::reviews;
use super::scale::ScaleRequest;
use super::selection::Selection;
use super::status::{About, failure, failure_about, json_response};
use super::table::TableRequest;
use super::unserved::unserved;
use super::{ApiOptions, ServedCluster};
use crate::cluster::{ClusterClient, PatchType, Request, RequestError, Subresource, Verb};
use crate::embedded::{Collection, EmbeddedClient};
use crate::informer::Object;
use crate::kube::Attributes;
use crate::kube::scope::group_of;

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
        Route::OpenApi(which) => super::openapi::answer(state.cluster.as_ref(), &which, &headers),
        Route::NotFound => not_found(uri.path()),
        Route::Unserved(what) => unserved(&what),
        Route::Resource(path) => {
            let Some(kind) = state
                .cluster
                .served()
                .into_iter()
                .find(|s| s.api_version == path.api_version() && s.plural == path.plural)
            else {
                return not_found(uri.path());
            };
            // Built-in kinds (and the reviews) have a protobuf form; custom resources do not.
            let built_in = reviews::is_review(&kind)
                || crate::embedded::memory_cluster::built_in_kind(&kind.api_version, &kind.kind).is_some();
            let mut headers = headers;
            let body =
                match negotiation::json_body(&method, &mut headers, body, &kind.api_version, &kind.kind, built_in) {
                    Ok(body) => body,
                    Err(refused) => return *refused,
                };
            let protobuf = built_in && protobuf::prefers_protobuf(&headers);
            let answer = if reviews::is_review(&kind) {
                let user = impersonated(&headers);
                reviews::answer(state.cluster.as_ref(), user.as_ref(), &method, &kind, &body)
            } else {
                resource(&state, method.clone(), &uri, &headers, body, &path, &kind).await
            };
            if !protobuf {
                return answer;
            }
            let watching = method == Method::GET && Query::of(&uri).watching().unwrap_or(false);
            negotiation::protobuf_answer(answer, watching).await
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
    if path.scale {
        let scale = ScaleRequest { client: &state.client, kind, collection: &collection, namespace, name: &name };
        return scale.answer(&method, headers, &query, &body);
    }
    let table = match TableRequest::of(headers, &query) {
        Ok(table) => table.filter(|_| method == Method::GET && !path.status),
        Err(e) => return failure(&e),
    };
    if let Some(table) = table
        && path.name.is_some()
    {
        let get = Request::new(Verb::Get, &kind.api_version, &kind.kind, namespace.clone(), &name);
        return match state.client.execute_now(get) {
            Ok(outcome) => {
                let metadata = json!({"resourceVersion": outcome.object.resource_version()});
                table.answer(state.cluster.as_ref(), kind, &collection, &[outcome.object], metadata)
            }
            Err(e) => failure_about(
                &e,
                Some(&About {
                    name: &name,
                    group: group_of(&kind.api_version),
                    plural: &path.plural,
                    kind: &kind.kind,
                }),
            ),
        };
    }
    let request = |verb: Verb, body: String| {
        Request::new(verb, &kind.api_version, &kind.kind, namespace.clone(), &name)
            .with_body(body)
            .with_subresource(path.status.then_some(Subresource::Status))
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    // A create, update or patch other than an apply is recorded in managedFields under its
    // manager (an apply names its own).
    let managed = |write: Request, patch: Option<&PatchType>| match write_options(&method, &query, patch) {
        Ok(options) if matches!(patch, Some(PatchType::Apply { .. })) => Ok(write.with_dry_run(options.dry_run)),
        Ok(options) => Ok(write.with_dry_run(options.dry_run).with_field_manager(field_manager(headers, &options))),
        Err(refused) => Err(refused),
    };
    let mut deletion = Deletion::default();
    let write = match (&method, path.name.is_some()) {
        (&Method::GET, false) => return list_or_watch(state, &collection, kind, namespace, &query, watching, table),
        (&Method::GET, true) => Ok(request(Verb::Get, String::new())),
        (&Method::POST, false) => managed(request(Verb::Create, text), None),
        (&Method::PUT, true) => managed(request(Verb::Update, text), None),
        (&Method::PATCH, true) => {
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
            let write = Request { may_create, ..request(Verb::Patch(patch_type.clone()), text) };
            managed(write, Some(&patch_type))
        }
        (&Method::DELETE, false) => {
            let deletion = match delete_options(headers, &body, &query) {
                Ok(deletion) => deletion,
                Err(refused) => return *refused,
            };
            let (labels, fields) = (query.get("labelSelector"), query.get("fieldSelector"));
            return match Selection::parse(&collection, namespace, labels, fields) {
                Ok(selection) => delete_collection(&state.client, &collection, kind, &selection, &query, &deletion),
                Err(e) => failure(&e),
            };
        }
        (&Method::DELETE, true) => delete_options(headers, &body, &query).map(|read| {
            let write = request(Verb::Delete(read.options.clone()), String::new()).with_dry_run(read.dry_run);
            deletion = read;
            write
        }),
        (method, _) => {
            let e = RequestError::BadRequest(format!("the server does not allow {method} on {}", uri.path()));
            return failure(&e);
        }
    };
    let write = match write {
        Ok(write) => write,
        Err(refused) => return *refused,
    };
    let creating = match &write.verb {
        Verb::Create => true,
        // An apply answers 201 when it created the object.
        Verb::Patch(PatchType::Apply { .. }) => {
            let probe = request(Verb::Get, String::new());
            matches!(state.client.execute(probe, None).await, Err(RequestError::NotFound(_)))
        }
        _ => false,
    };
    let body_name = serde_json::from_str::<Value>(&write.body)
        .ok()
        .and_then(|b| b.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned));
    let group = group_of(&kind.api_version);
    let object_name = if name.is_empty() { body_name.as_deref().unwrap_or_default() } else { name.as_str() };
    let about = About { name: object_name, group, plural: &path.plural, kind: &kind.kind };
    let deleting = matches!(write.verb, Verb::Delete(_));
    match state.client.execute_now(write) {
        // A DELETE that removed the object answers it, or (for most kinds) a Status naming it.
        Ok(outcome) if outcome.removed && deleting => {
            if collection.built_in && crate::kube::deletion::returns_deleted_object(group, &kind.kind) {
                return json_response(StatusCode::OK, &value(&outcome.object));
            }
            let mut details = json!({"name": name, "kind": path.plural, "uid": outcome.object.uid()});
            if !group.is_empty() {
                details["group"] = json!(group);
            }
            let success =
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
            json_response(StatusCode::OK, &success)
        }
        // A delete that only marked the object (its finalizers remain) answers 202 when
        // `orphanDependents: false` asked for cascading, as kube-apiserver does.
        Ok(outcome) if deleting && deletion.orphan_dependents == Some(false) => {
            json_response(StatusCode::ACCEPTED, &value(&outcome.object))
        }
        // Anything else answers the object: created, written, or (an update or patch that
        // removed the last finalizer of an object being deleted) as it was last written.
        Ok(outcome) => {
            json_response(if creating { StatusCode::CREATED } else { StatusCode::OK }, &value(&outcome.object))
        }
        Err(e) => failure_about(&e, Some(&about)),
    }
}

/// A LIST, or a WATCH, of a collection, with the request's selection; a LIST as a Table
/// when the request asks for one.
fn list_or_watch(
    state: &State,
    collection: &Collection,
    kind: &Served,
    namespace: Option<String>,
    query: &Query,
    watching: bool,
    table: Option<TableRequest>,
) -> Response {
    let selection =
        match Selection::parse(collection, namespace, query.get("labelSelector"), query.get("fieldSelector")) {
            Ok(s) => s,
            Err(e) => return failure(&e),
        };
    if watching {
        read::watch(collection, &kind.api_version, &kind.kind, selection, query, state.options.default_watch_timeout)
    } else if let Some(table) = table {
        match read::page(collection, &selection, query) {
            Ok(page) => {
                let metadata = read::list_metadata(&selection, &page);
                table.answer(state.cluster.as_ref(), kind, collection, &page.list.items, metadata)
            }
            Err(refused) => *refused,
        }
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
        (&Method::DELETE, false) => "deletecollection",
        (&Method::DELETE, true) => "delete",
        _ => "unknown",
    };
    let resource = match (path.status, path.scale) {
        (true, _) => format!("{}/status", kind.plural),
        (_, true) => format!("{}/scale", kind.plural),
        _ => kind.plural.clone(),
    };
    let group = group_of(&kind.api_version);
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

#[cfg(test)]
#[path = "handlers_tests.rs"]
mod tests;

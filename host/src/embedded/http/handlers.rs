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
                .find(|s| s.def.api_version() == path.api_version() && s.def.plural == path.plural)
            else {
                return not_found(uri.path());
            };
            // Built-in kinds (and the reviews) have a protobuf form; custom resources do not.
            let built_in = reviews::is_review(&kind)
                || crate::kube::resource::built_in(&kind.def.api_version(), &kind.def.kind).is_some();
            let mut headers = headers;
            let body = match negotiation::json_body(
                &method,
                &mut headers,
                body,
                &kind.def.api_version(),
                &kind.def.kind,
                built_in,
            ) {
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

/// One request to a kind's resource path, once routed and authorized.
struct Call<'a> {
    state: &'a State,
    method: Method,
    uri: &'a Uri,
    headers: &'a HeaderMap,
    path: &'a ResourcePath,
    kind: &'a Served,
    collection: Collection,
    query: Query,
    namespace: Option<String>,
    name: String,
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
    let Some(collection) = state.cluster.collection(&kind.def.api_version(), &kind.def.kind) else {
        return not_found(uri.path());
    };
    if !kind.def.namespaced && path.namespace.is_some() {
        // Cluster-scoped kinds have no namespaced path.
        return not_found(uri.path());
    }
    let query = Query::of(uri);
    let watching = match query.watching() {
        Ok(w) => w,
        Err(e) => return failure(&e),
    };
    let namespace = if kind.def.namespaced { path.namespace.clone() } else { None };
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
    let call = Call { state, method, uri, headers, path, kind, collection, query, namespace, name };
    match (table, path.name.is_some()) {
        (Some(table), true) => call.table_row(&table),
        (table, false) if call.method == Method::GET => call.list_or_watch(watching, table),
        (_, false) if call.method == Method::DELETE => call.delete_collection(&body),
        _ => call.write(may_create, &body).await,
    }
}

impl Call<'_> {
    /// The request for `verb` on the addressed object (or its status).
    fn request(&self, verb: Verb, body: String) -> Request {
        Request::new(verb, self.kind.def.api_version(), &self.kind.def.kind, self.namespace.clone(), &self.name)
            .with_body(body)
            .with_subresource(self.path.status.then_some(Subresource::Status))
    }

    /// A GET of one object as a Table.
    fn table_row(&self, table: &TableRequest) -> Response {
        let get = Request::new(
            Verb::Get,
            self.kind.def.api_version(),
            &self.kind.def.kind,
            self.namespace.clone(),
            &self.name,
        );
        match self.state.client.execute_now(get) {
            Ok(outcome) => {
                let metadata = json!({"resourceVersion": outcome.object.resource_version()});
                table.answer(self.state.cluster.as_ref(), self.kind, &self.collection, &[outcome.object], metadata)
            }
            Err(e) => failure_about(&e, Some(&self.about(&self.name))),
        }
    }

    /// What a failure is about: the object `name` of this kind.
    fn about<'b>(&'b self, name: &'b str) -> About<'b> {
        About { name, group: &self.kind.def.group, plural: &self.path.plural, kind: &self.kind.def.kind }
    }

    /// A LIST, or a WATCH, of the collection, with the request's selection; a LIST as a
    /// Table when the request asks for one.
    fn list_or_watch(&self, watching: bool, table: Option<TableRequest>) -> Response {
        let (state, collection, kind, query) = (self.state, &self.collection, self.kind, &self.query);
        let (labels, fields) = (query.get("labelSelector"), query.get("fieldSelector"));
        let selection = match Selection::parse(collection, self.namespace.clone(), labels, fields) {
            Ok(s) => s,
            Err(e) => return failure(&e),
        };
        if watching {
            let timeout = state.options.default_watch_timeout;
            read::watch(collection, &kind.def.api_version(), &kind.def.kind, selection, query, timeout)
        } else if let Some(table) = table {
            match read::page(collection, &selection, query) {
                Ok(page) => {
                    let metadata = read::list_metadata(&selection, &page);
                    table.answer(state.cluster.as_ref(), kind, collection, &page.list.items, metadata)
                }
                Err(refused) => *refused,
            }
        } else {
            read::list(collection, &kind.def.api_version(), &kind.def.kind, &selection, query)
        }
    }

    /// A DELETE of the collection: every object the selection names.
    fn delete_collection(&self, body: &Bytes) -> Response {
        let deletion = match delete_options(self.headers, body, &self.query) {
            Ok(deletion) => deletion,
            Err(refused) => return *refused,
        };
        let (labels, fields) = (self.query.get("labelSelector"), self.query.get("fieldSelector"));
        match Selection::parse(&self.collection, self.namespace.clone(), labels, fields) {
            Ok(selection) => {
                delete_collection(&self.state.client, &self.collection, self.kind, &selection, &self.query, &deletion)
            }
            Err(e) => failure(&e),
        }
    }

    /// A GET, create, update, patch or delete of one object.
    async fn write(&self, may_create: bool, body: &Bytes) -> Response {
        let mut deletion = Deletion::default();
        let write = match self.write_request(may_create, body, &mut deletion) {
            Ok(write) => write,
            Err(refused) => return *refused,
        };
        let creating = match &write.verb {
            Verb::Create => true,
            // An apply answers 201 when it created the object.
            Verb::Patch(PatchType::Apply { .. }) => {
                let probe = self.request(Verb::Get, String::new());
                matches!(self.state.client.execute(probe, None).await, Err(RequestError::NotFound(_)))
            }
            _ => false,
        };
        let body_name = serde_json::from_str::<Value>(&write.body)
            .ok()
            .and_then(|b| b.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned));
        let object_name = if self.name.is_empty() { body_name.as_deref().unwrap_or_default() } else { &self.name };
        let deleting = matches!(write.verb, Verb::Delete(_));
        match self.state.client.execute_now(write) {
            Ok(outcome) if outcome.removed && deleting => self.deleted(&outcome.object),
            // A delete that only marked the object (its finalizers remain) answers 202 when
            // `orphanDependents: false` asked for cascading, as kube-apiserver does.
            Ok(outcome) if deleting && deletion.orphan_dependents == Some(false) => {
                json_response(StatusCode::ACCEPTED, &value(&outcome.object))
            }
            // Anything else answers the object: created, written, or (an update or patch
            // that removed the last finalizer of an object being deleted) as it was last
            // written.
            Ok(outcome) => {
                json_response(if creating { StatusCode::CREATED } else { StatusCode::OK }, &value(&outcome.object))
            }
            Err(e) => failure_about(&e, Some(&self.about(object_name))),
        }
    }

    /// The request the method asks for; a DELETE's options are left in `deletion`.
    fn write_request(&self, may_create: bool, body: &Bytes, deletion: &mut Deletion) -> Result<Request, Box<Response>> {
        let text = String::from_utf8_lossy(body).into_owned();
        match (&self.method, self.path.name.is_some()) {
            (&Method::GET, true) => Ok(self.request(Verb::Get, String::new())),
            (&Method::POST, false) => self.managed(self.request(Verb::Create, text), None),
            (&Method::PUT, true) => self.managed(self.request(Verb::Update, text), None),
            (&Method::PATCH, true) => {
                let patch_type = patch_type(self.headers, &self.query)?;
                // An apply body is YAML (JSON is YAML too), read as the API server reads it.
                let text = match patch_type {
                    PatchType::Apply { .. } => match crate::kube::yaml11::one_document(&text) {
                        Ok(v) => v.to_string(),
                        Err(e) => {
                            let e = RequestError::BadRequest(format!("the apply body is not YAML: {e}"));
                            return Err(Box::new(failure(&e)));
                        }
                    },
                    _ => text,
                };
                let write = Request { may_create, ..self.request(Verb::Patch(patch_type.clone()), text) };
                self.managed(write, Some(&patch_type))
            }
            (&Method::DELETE, true) => {
                let read = delete_options(self.headers, body, &self.query)?;
                let write = self.request(Verb::Delete(read.options.clone()), String::new()).with_dry_run(read.dry_run);
                *deletion = read;
                Ok(write)
            }
            (method, _) => {
                let e = RequestError::BadRequest(format!("the server does not allow {method} on {}", self.uri.path()));
                Err(Box::new(failure(&e)))
            }
        }
    }

    /// `write` with the request's dry run and, for a create, update or patch other than an
    /// apply (which names its own), the manager `managedFields` records it under.
    fn managed(&self, write: Request, patch: Option<&PatchType>) -> Result<Request, Box<Response>> {
        let options = write_options(&self.method, &self.query, patch)?;
        if matches!(patch, Some(PatchType::Apply { .. })) {
            return Ok(write.with_dry_run(options.dry_run));
        }
        Ok(write.with_dry_run(options.dry_run).with_field_manager(field_manager(self.headers, &options)))
    }

    /// The answer to a DELETE that removed the object: the object, or (for most kinds) a
    /// Status naming it.
    fn deleted(&self, object: &Object) -> Response {
        let group = &self.kind.def.group;
        if self.collection.def.built_in && crate::kube::deletion::returns_deleted_object(group, &self.kind.def.kind) {
            return json_response(StatusCode::OK, &value(object));
        }
        let mut details = json!({"name": self.name, "kind": self.path.plural, "uid": object.uid()});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        let success =
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
        json_response(StatusCode::OK, &success)
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
        (true, _) => format!("{}/status", kind.def.plural),
        (_, true) => format!("{}/scale", kind.def.plural),
        _ => kind.def.plural.clone(),
    };
    let group = &kind.def.group;
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

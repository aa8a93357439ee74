//! A real API server as the source: a [`ListerWatcher`] over the `kube` crate's client, for
//! any resource named by apiVersion + kind (core or grouped, namespaced or cluster-scoped,
//! custom resources).
//!
//! - **Configuration** is kube's own: a kubeconfig file ([`KubeSource::from_kubeconfig`]),
//!   the default kubeconfig or the in-cluster service account ([`KubeSource::infer`]), or a
//!   ready [`kube::Client`] ([`KubeSource::new`]).
//! - **Discovery** resolves a kind to its plural resource path and scope with
//!   [`kube::discovery::pinned_kind`] (one request to `/api/v1` or `/apis/{group}/{version}`),
//!   lazily on a lister-watcher's first request, so a custom resource whose CRD is installed
//!   later is found once it exists (until then the reflector backs off and retries).
//! - **Requests** are raw `GET`s sent with [`kube::Client::send`]: the paths and query
//!   parameters (`limit`, `continue`, `resourceVersion`, selectors, `watch=1`,
//!   `allowWatchBookmarks`, `timeoutSeconds`, `sendInitialEvents` +
//!   `resourceVersionMatch=NotOlderThan`) are built here so that bodies are decoded once from
//!   the bytes received (see the `decode` module): no `DynamicObject` or
//!   `serde_json::Value` per object.
//! - **Errors** keep the distinctions the reflector acts on: `410`, reason `Expired` or
//!   "too old resource version" → [`SourceError::Gone`] (relist); `429` →
//!   [`SourceError::TooManyRequests`]; other codes → [`SourceError::Api`]; connection
//!   failures → [`SourceError::Transport`] (a refused connection →
//!   [`SourceError::ConnectionRefused`]); a malformed watch frame → [`SourceError::Decode`]
//!   for that watch (the reflector relists). kube's client itself retries `429`/`503`/`504`
//!   answers honouring `Retry-After`, as client-go's REST client does, unless
//!   [`kube::Config::default_retry`] is turned off.
//! - **Watches** end normally when the server closes them or the connection drops mid-stream
//!   (client-go treats a probable EOF the same way), and a client-side deadline of the
//!   requested timeout plus [`WATCH_DEADLINE_GRACE`] ends a watch whose server went silent.
//! - **Streaming lists**: a server that rejects `sendInitialEvents` (`400`/`422`), or that
//!   ignores it (a bookmark without `k8s.io/initial-events-end` during the initial events),
//!   makes the lister-watcher answer [`SourceError::Unsupported`] to streaming requests from
//!   then on, so the reflector falls back to LIST.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use http_body_util::BodyExt;
use kube::client::Body;
use kube::config::{InferConfigError, KubeconfigError};
use kube::core::GroupVersionKind;

use kube::{Client, Config};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::errors::Cause;
use crate::informer::factory::{ResourceKey, SourceProvider};
use crate::informer::list_watch::{
    ListParams, ListerWatcher, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream,
};
use crate::kube::ResourceDef;
use crate::kube::resource::discovered;

mod decode;

use decode::{FrameSplitter, decode_event, decode_list, status_from_body};

/// How long after its requested timeout a watch may stay open before the client ends it.
pub(crate) const WATCH_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// Why a [`KubeSource`] could not be created.
#[derive(Debug, thiserror::Error)]
pub enum KubeSourceError {
    /// The kubeconfig file could not be read or parsed.
    #[error("cannot read kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: KubeconfigError,
    },
    /// The kubeconfig was read but its context, cluster or user is unusable.
    #[error("cannot use kubeconfig {path}: {source}")]
    Context {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: KubeconfigError,
    },
    /// Neither a default kubeconfig nor an in-cluster service account was found.
    #[error("no kubeconfig found and not running in a cluster: {0}")]
    Infer(#[source] InferConfigError),
    /// The client could not be built from the configuration (e.g. bad TLS material).
    #[error("cannot build a Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// Lists and watches resources of a Kubernetes API server. Cheap to clone (clones share the
/// client and the discovery cache).
#[derive(Clone)]
pub struct KubeSource {
    client: Client,
    discovered: Arc<Mutex<HashMap<(String, String), ResourceDef>>>,
}

impl std::fmt::Debug for KubeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeSource").field("discovered", &self.discovered.lock().len()).finish()
    }
}

impl KubeSource {
    /// A source over a ready client.
    pub fn new(client: Client) -> Self {
        Self { client, discovered: Arc::default() }
    }

    /// A source over a client built from `config`.
    pub fn from_config(config: Config) -> Result<Self, KubeSourceError> {
        Ok(Self::new(Client::try_from(config).map_err(KubeSourceError::Client)?))
    }

    /// A source configured by the kubeconfig file at `path`, using `context` or the file's
    /// current context.
    pub async fn from_kubeconfig(path: &Path, context: Option<&str>) -> Result<Self, KubeSourceError> {
        Self::from_config(super::kube_config::kubeconfig(path, context).await?)
    }

    /// A source configured as kubectl would be: `$KUBECONFIG` or `~/.kube/config`, else the
    /// in-cluster service account.
    pub async fn infer() -> Result<Self, KubeSourceError> {
        Self::from_config(Config::infer().await.map_err(KubeSourceError::Infer)?)
    }

    /// [`from_kubeconfig`](Self::from_kubeconfig) when a path is given, else
    /// [`infer`](Self::infer): what `wink run [--kubeconfig PATH]` does.
    pub async fn from_kubeconfig_or_infer(path: Option<&Path>) -> Result<Self, KubeSourceError> {
        Self::from_config(super::kube_config::load_config(path).await?)
    }

    /// The underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Resolves a kind to its resource path and scope through discovery (cached once found).
    pub async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, SourceError> {
        let cache_key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.discovered.lock().get(&cache_key) {
            return Ok(found.clone());
        }
        let (group, version) = split_api_version(api_version)?;
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) =
            kube::discovery::pinned_kind(&self.client, &gvk).await.map_err(|err| match err {
                kube::Error::Discovery(err) => SourceError::Api(Status {
                    code: 404,
                    reason: "NotFound".into(),
                    message: format!("{api_version} {kind} is not served by the API server: {err}"),
                }),
                other => kube_error(other),
            })?;
        let resolved = discovered(&resource, &capabilities);
        self.discovered.lock().insert(cache_key, resolved.clone());
        Ok(resolved)
    }

    /// The lister-watcher of `resource` (discovery happens on its first request).
    pub fn lister_watcher_for(&self, resource: &ResourceKey) -> Result<KubeListerWatcher, SourceError> {
        split_api_version(&resource.api_version)?;
        if resource.kind.is_empty() {
            return Err(SourceError::Unsupported(format!("{resource}: no kind")));
        }
        Ok(KubeListerWatcher {
            source: self.clone(),
            resource: resource.clone(),
            resolved: OnceCell::new(),
            watch_list_unsupported: Arc::new(AtomicBool::new(false)),
        })
    }
}

impl SourceProvider for KubeSource {
    fn lister_watcher(&self, resource: &ResourceKey) -> Result<Arc<dyn ListerWatcher>, SourceError> {
        Ok(Arc::new(self.lister_watcher_for(resource)?))
    }
}

/// Splits `group/version` (or a core `version`).
fn split_api_version(api_version: &str) -> Result<(&str, &str), SourceError> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if version.is_empty() || version.contains('/') || (api_version.contains('/') && group.is_empty()) {
        return Err(SourceError::Unsupported(format!("invalid apiVersion `{api_version}`")));
    }
    Ok((group, version))
}

/// Lists and watches one resource (a kind, optionally one namespace, optional selectors) of
/// an API server.
pub struct KubeListerWatcher {
    source: KubeSource,
    resource: ResourceKey,
    resolved: OnceCell<ResourceDef>,
    /// Set once the server showed it does not support streaming lists.
    watch_list_unsupported: Arc<AtomicBool>,
}

impl std::fmt::Debug for KubeListerWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeListerWatcher").field("resource", &self.resource.to_string()).finish()
    }
}

impl KubeListerWatcher {
    /// The resource this lister-watcher serves.
    pub fn resource(&self) -> &ResourceKey {
        &self.resource
    }

    /// Whether the server was found not to support streaming lists.
    pub fn watch_list_unsupported(&self) -> bool {
        self.watch_list_unsupported.load(Ordering::SeqCst)
    }

    async fn collection_path(&self) -> Result<(String, &ResourceDef), SourceError> {
        let resolved = self
            .resolved
            .get_or_try_init(|| self.source.resolve(&self.resource.api_version, &self.resource.kind))
            .await?;
        if !resolved.namespaced && self.resource.namespace.is_some() {
            return Err(SourceError::Api(Status {
                code: 400,
                reason: "BadRequest".into(),
                message: format!("{}: {} is cluster-scoped and has no namespaces", self.resource, resolved.kind),
            }));
        }
        Ok((resolved.collection_path(self.resource.namespace.as_deref()), resolved))
    }

    fn selectors(&self, query: &mut form_urlencoded::Serializer<'_, String>) {
        if let Some(selector) = self.resource.label_selector.as_deref().filter(|s| !s.is_empty()) {
            query.append_pair("labelSelector", selector);
        }
        if let Some(selector) = self.resource.field_selector.as_deref().filter(|s| !s.is_empty()) {
            query.append_pair("fieldSelector", selector);
        }
    }

    /// The query string of a LIST request.
    fn list_query(&self, params: &ListParams) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(limit) = params.limit {
            query.append_pair("limit", &limit.to_string());
        }
        if let Some(token) = params.continue_token.as_deref().filter(|t| !t.is_empty()) {
            query.append_pair("continue", token);
        }
        if let Some(rv) = params.resource_version.as_deref() {
            query.append_pair("resourceVersion", rv);
        }
        self.selectors(&mut query);
        query.finish()
    }

    /// The query string of a WATCH request (a streaming list when `send_initial_events`).
    fn watch_query(&self, params: &WatchParams) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("watch", "1");
        if !params.resource_version.is_empty() {
            query.append_pair("resourceVersion", &params.resource_version);
        }
        if params.allow_bookmarks || params.send_initial_events {
            query.append_pair("allowWatchBookmarks", "true");
        }
        if let Some(timeout) = params.timeout {
            query.append_pair("timeoutSeconds", &timeout.as_secs().max(1).to_string());
        }
        if params.send_initial_events {
            query.append_pair("sendInitialEvents", "true");
            query.append_pair("resourceVersionMatch", "NotOlderThan");
        }
        self.selectors(&mut query);
        query.finish()
    }

    async fn get(&self, path: &str, query: String) -> Result<http::Response<Body>, SourceError> {
        let uri = if query.is_empty() { path.to_owned() } else { format!("{path}?{query}") };
        let request = http::Request::get(uri.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| SourceError::Transport(Cause::with_source(format!("building request {uri}"), e)))?;
        self.source.client.send(request).await.map_err(kube_error)
    }
}

#[async_trait]
impl ListerWatcher for KubeListerWatcher {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        let (path, resolved) = self.collection_path().await?;
        let query = self.list_query(params);
        let response = self.get(&path, query).await?;
        if !response.status().is_success() {
            return Err(error_response(response).await.into());
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| SourceError::Transport(Cause::with_source(format!("reading list of {}", self.resource), e)))?
            .to_bytes();
        decode_list(&body, &resolved.api_version(), &resolved.kind)
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        if params.send_initial_events && self.watch_list_unsupported() {
            return Err(SourceError::Unsupported("the server does not support streaming lists".into()));
        }
        let (path, _) = self.collection_path().await?;
        let query = self.watch_query(params);
        let response = self.get(&path, query).await?;
        if !response.status().is_success() {
            let status = error_response(response).await;
            if params.send_initial_events && matches!(status.code, 400 | 422) {
                self.watch_list_unsupported.store(true, Ordering::SeqCst);
                return Err(SourceError::Unsupported(format!("streaming list rejected: {}", status.message)));
            }
            return Err(status.into());
        }
        let deadline = params.timeout.map(|t| t + WATCH_DEADLINE_GRACE);
        let events = event_stream(response.into_body(), deadline);
        Ok(if params.send_initial_events {
            guard_initial_events(events, self.watch_list_unsupported.clone())
        } else {
            events
        })
    }
}

/// The `Status` of a non-2xx response.
async fn error_response(response: http::Response<Body>) -> Status {
    let code = response.status().as_u16();
    let retry_after =
        response.headers().get(http::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    // A body that cannot be read still leaves the HTTP code to act on.
    let body = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let mut status = status_from_body(code, &body);
    if let Some(after) = retry_after {
        status.message = format!("{} (retry after {after}s)", status.message);
    }
    status
}

/// Maps a kube client error (sending a request) to a [`SourceError`].
fn kube_error(err: kube::Error) -> SourceError {
    match err {
        kube::Error::Api(status) => {
            Status { code: status.code, reason: status.reason.clone(), message: status.message.clone() }.into()
        }
        kube::Error::SerdeError(err) => SourceError::Decode(Cause::with_source("decoding a response", err)),
        other if is_connection_refused(&other) => {
            SourceError::ConnectionRefused(Cause::with_source("sending a request", other))
        }
        other => SourceError::Transport(Cause::with_source("sending a request", other)),
    }
}

/// Whether an error was caused by a refused connection (an `io::Error` of kind
/// `ConnectionRefused` anywhere in its source chain), as client-go's
/// `utilnet.IsConnectionRefused`.
fn is_connection_refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// The events of a watch response body: split into frames, each decoded once. A malformed
/// frame is an error that ends the stream; a connection that drops mid-stream ends it
/// normally (the reflector re-watches from the last resourceVersion).
fn event_stream(body: Body, deadline: Option<Duration>) -> WatchStream {
    struct Reading {
        body: Body,
        frames: FrameSplitter,
        done: bool,
    }
    let reading = Reading { body, frames: FrameSplitter::default(), done: false };
    let events = futures::stream::unfold(reading, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            if let Some(frame) = st.frames.next_frame() {
                let event = decode_event(&frame);
                st.done = event.is_err();
                return Some((event, st));
            }
            match st.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        st.frames.push(&data);
                    }
                }
                Some(Err(err)) if is_probable_eof(&err) => {
                    tracing::debug!(error = %err, "watch connection closed mid-stream");
                    return None;
                }
                Some(Err(err)) => {
                    st.done = true;
                    return Some((Err(SourceError::Transport(Cause::with_source("reading watch", err))), st));
                }
                None => {
                    // A clean end after a frame without its newline: decode it (a truncated
                    // frame is a decode error, never dropped silently).
                    let tail = st.frames.finish()?;
                    st.done = true;
                    return Some((decode_event(&tail), st));
                }
            }
        }
    });
    match deadline {
        Some(deadline) => events.take_until(tokio::time::sleep(deadline)).boxed(),
        None => events.boxed(),
    }
}

/// Whether a body error means the connection went away (EOF, reset) rather than a failure
/// worth reporting: client-go's `IsProbableEOF`.
fn is_probable_eof(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    for _ in 0..16 {
        let Some(err) = current else { return false };
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if let Some(hyper) = err.downcast_ref::<hyper::Error>()
            && (hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled())
        {
            return true;
        }
        let text = err.to_string();
        if text.contains("unexpected EOF")
            || text.contains("connection reset")
            || text.contains("before message completed")
        {
            return true;
        }
        current = err.source();
    }
    false
}

/// Watches a streaming list's initial events for signs that the server ignores or rejects
/// `sendInitialEvents`; if so, remembers it (the next streaming request is refused with
/// [`SourceError::Unsupported`], so the reflector falls back to LIST) and ends the stream.
fn guard_initial_events(events: WatchStream, unsupported: Arc<AtomicBool>) -> WatchStream {
    let mut initial = true;
    events
        .map(move |item| {
            if !initial {
                return item;
            }
            let reason = match &item {
                Ok(WatchEvent::Bookmark { initial_events_end: true, .. }) => {
                    initial = false;
                    return item;
                }
                Ok(WatchEvent::Bookmark { initial_events_end: false, .. }) => {
                    "a bookmark without k8s.io/initial-events-end arrived during the initial events".to_owned()
                }
                Ok(WatchEvent::Error(status)) if matches!(status.code, 400 | 422) => {
                    format!("streaming list rejected: {}", status.message)
                }
                _ => return item,
            };
            unsupported.store(true, Ordering::SeqCst);
            Err(SourceError::Unsupported(format!("the server does not support streaming lists: {reason}")))
        })
        .boxed()
}

#[cfg(test)]
mod tests;

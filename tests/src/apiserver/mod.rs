//! A local Kubernetes API server for tests: an HTTP server on `127.0.0.1` (random port) that
//! speaks the API server's list/watch protocol to the **real** kube client, configured
//! through a generated kubeconfig (plain `http://`, which kube's client accepts).
//!
//! It is meant to be faithful to the protocol, not shaped to one test:
//! - an in-memory store with one global, increasing resourceVersion; writes set `uid`,
//!   `creationTimestamp`, `generation` and `resourceVersion` as the API server does, driven
//!   by the test through [`ApiServer::apply`] and [`ApiServer::delete`];
//! - LIST with `limit`/`continue` (consistent snapshots; tokens expire with `410 Expired`
//!   after compaction), `resourceVersion` (`""` most recent, `"0"` any, `N` not older than or
//!   exactly `N`) and `resourceVersionMatch`, label selectors (equality, sets, existence),
//!   field selectors (`metadata.name`, `metadata.namespace`, a few per-kind fields), all-
//!   and one-namespace paths, core and grouped kinds, cluster-scoped kinds, custom resources
//!   ([`ApiServer::register`]); built-in kinds' list items come without `apiVersion`/`kind`;
//! - WATCH as a chunked stream of JSON lines (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) from
//!   a resourceVersion, replayed from a bounded history (a too-old version gets a `410` ERROR
//!   event, as the watch cache answers), `allowWatchBookmarks` (periodic bookmarks),
//!   `timeoutSeconds`, selectors (objects moving in or out of a selection become ADDED or
//!   DELETED), and streaming lists (`sendInitialEvents`) — or not ([`WatchListSupport`]);
//! - discovery (`/api`, `/api/v1`, `/apis`, `/apis/{group}[/{version}]`, `/version`);
//! - faults under the test's control: drop or close every watch, compact the history,
//!   answer the next N requests with an error (429 with `Retry-After`), delay answers, split
//!   frames across chunks, send a malformed frame or an ERROR event;
//! - every request recorded (method, path, query) for assertions.
//!
//! ```no_run
//! # async fn example() -> std::io::Result<()> {
//! use wink_tests::apiserver::ApiServer;
//! let server = ApiServer::start().await?;
//! server.apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"namespace": "default", "name": "a"}, "data": {"k": "v"}})).unwrap();
//! // KubeSource::from_kubeconfig(server.kubeconfig(), None) now sees it.
//! # Ok(()) }
//! ```
//!
//! Deliberate simplifications: only GET is served (writes go through the handle), namespaces
//! need not exist before objects are created in them, there is no authentication, and the
//! history is one window for all kinds (the real watch cache has one per resource).

pub mod faults;
mod http;
pub mod resources;
pub mod selector;
mod store;
pub mod testing;
mod wire;
pub mod workload;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use faults::{Verb, WatchListSupport};
pub use resources::ResourceDef;

use faults::Faults;
use store::{ApiError, Store, WatchMsg, error_frame};

/// Why the test's own use of the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiServerError {
    /// The object's apiVersion/kind is not served (register custom resources first).
    #[error("unknown kind: {0}")]
    UnknownKind(String),
    /// The object cannot be stored (no name, no namespace for a namespaced kind, ...).
    #[error("invalid object: {0}")]
    Invalid(String),
    /// The kind is already served.
    #[error("cannot register: {0}")]
    Conflict(String),
}

/// Settings of a server.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Changes kept for watches that resume and for paginated lists (the watch cache
    /// window). Default 10 000.
    pub history_limit: usize,
    /// How often watches that allow bookmarks get one (`None`: only on
    /// [`ApiServer::bookmark_now`]). The real server sends one about every minute; the
    /// default here is 1 s so tests see them.
    pub bookmark_interval: Option<Duration>,
    /// How long a watch without `timeoutSeconds` lasts. Default 30 minutes.
    pub default_watch_timeout: Duration,
    /// Streaming-list support. Default [`WatchListSupport::Supported`].
    pub watch_list: WatchListSupport,
    /// `Retry-After` of 429 answers, in seconds. Default 1, as the API server's priority and
    /// fairness sends.
    pub retry_after_secs: u64,
    /// Seed of the server's randomness (uids, split points).
    pub seed: u64,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            history_limit: 10_000,
            bookmark_interval: Some(Duration::from_secs(1)),
            default_watch_timeout: Duration::from_secs(1800),
            watch_list: WatchListSupport::Supported,
            retry_after_secs: 1,
            seed: 0,
        }
    }
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path, e.g. `/api/v1/namespaces/ns/pods`.
    pub path: String,
    /// Query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// What kind of request it was.
    pub verb: Verb,
}

impl RecordedRequest {
    /// The first value of a query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// State shared by the handle and the connections.
pub(crate) struct Shared {
    pub(crate) store: Mutex<Store>,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    pub(crate) options: ServerOptions,
    pub(crate) addr: SocketAddr,
}

/// A running local API server; it stops when dropped.
pub struct ApiServer {
    shared: Arc<Shared>,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    _stop: DropGuard,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer").field("addr", &self.shared.addr).finish()
    }
}

impl ApiServer {
    /// Starts a server with default options on the current tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(ServerOptions::default()).await
    }

    /// Starts a server with `options` on the current tokio runtime.
    pub async fn start_with(options: ServerOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new(options.history_limit, options.seed)),
            faults: Mutex::new(Faults::new(options.seed, options.watch_list, options.retry_after_secs)),
            requests: Mutex::default(),
            options: options.clone(),
            addr,
        });
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(&format!("http://{addr}")))?;
        let cancel = CancellationToken::new();
        tokio::spawn(http::serve(listener, shared.clone(), cancel.clone()));
        if let Some(interval) = options.bookmark_interval {
            let (shared, cancel) = (shared.clone(), cancel.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(interval);
                tick.tick().await;
                loop {
                    tokio::select! {
                        _ = tick.tick() => { shared.store.lock().bookmark_all(); }
                        () = cancel.cancelled() => return,
                    }
                }
            });
        }
        Ok(Self { shared, kubeconfig, _dir: dir, _stop: cancel.drop_guard() })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// A kubeconfig file pointing at this server (context `wink-test`, namespace `default`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Serves another kind (e.g. a custom resource, as installing its CRD would).
    pub fn register(&self, def: ResourceDef) -> Result<(), ApiServerError> {
        self.shared.store.lock().register(def).map_err(ApiServerError::Conflict)
    }

    /// Creates or updates an object (by apiVersion, kind, namespace and name); returns it as
    /// stored. An update that changes nothing is a no-op.
    pub fn apply(&self, object: Value) -> Result<Value, ApiServerError> {
        let mut store = self.shared.store.lock();
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        store.resource(api_version, kind).map_err(ApiServerError::UnknownKind)?;
        store.apply(object).map(|s| s.value.clone()).map_err(ApiServerError::Invalid)
    }

    /// Deletes the object with this key (`namespace/name`, or `name` when cluster-scoped);
    /// returns its final state, or `None` if it did not exist. An object with finalizers is
    /// only marked for deletion.
    pub fn delete(&self, api_version: &str, kind: &str, key: &str) -> Result<Option<Value>, ApiServerError> {
        let mut store = self.shared.store.lock();
        let resource = store.resource(api_version, kind).map_err(ApiServerError::UnknownKind)?;
        Ok(store.delete(resource, key).map(|s| s.value.clone()))
    }

    /// The object with this key.
    pub fn get(&self, api_version: &str, kind: &str, key: &str) -> Option<Value> {
        let store = self.shared.store.lock();
        let resource = store.resource(api_version, kind).ok()?;
        store.get(resource, key).map(|s| s.value.clone())
    }

    /// Every object of a kind, in key order.
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let store = self.shared.store.lock();
        let Ok(resource) = store.resource(api_version, kind) else { return Vec::new() };
        store.objects(resource).map(|s| s.value.clone()).collect()
    }

    /// Key → resourceVersion of every object of a kind: the state to compare caches with.
    pub fn versions(&self, api_version: &str, kind: &str) -> BTreeMap<String, String> {
        let store = self.shared.store.lock();
        let Ok(resource) = store.resource(api_version, kind) else { return BTreeMap::new() };
        store.objects(resource).map(|s| (s.key.clone(), s.resource_version().to_string())).collect()
    }

    /// The current (global) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().resource_version()
    }

    /// Breaks every open watch connection mid-response (as a network failure would);
    /// returns how many there were.
    pub fn drop_watches(&self) -> usize {
        self.shared.store.lock().send_to_all_watches(|| vec![WatchMsg::Abort], true)
    }

    /// Ends every open watch normally (as a server-side timeout does).
    pub fn close_watches(&self) -> usize {
        self.shared.store.lock().send_to_all_watches(|| vec![WatchMsg::End], true)
    }

    /// Ends every open watch with an ERROR event carrying this status.
    pub fn send_watch_error(&self, code: u16, reason: &'static str, message: &str) -> usize {
        let frame = error_frame(&ApiError::new(code, reason, message));
        self.shared.store.lock().send_to_all_watches(|| vec![WatchMsg::Frame(frame.clone()), WatchMsg::End], true)
    }

    /// Sends a truncated, unparseable frame to every open watch (which stay open: it is the
    /// client's to give up on them).
    pub fn send_malformed_frame(&self) -> usize {
        let frame = bytes::Bytes::from_static(b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\n");
        self.shared.store.lock().send_to_all_watches(|| vec![WatchMsg::Frame(frame.clone())], false)
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that allows them.
    pub fn bookmark_now(&self) -> usize {
        self.shared.store.lock().bookmark_all()
    }

    /// Forgets the change history: watches from, exact lists at, and continue tokens of any
    /// earlier resourceVersion get `410 Expired`, forcing clients to relist (and so to infer
    /// the deletes they missed).
    pub fn compact(&self) {
        self.shared.store.lock().compact();
    }

    /// Answers the next `count` requests of these verbs with `code` (429 carries
    /// `Retry-After`).
    pub fn fail_next(&self, verbs: &[Verb], count: usize, code: u16) {
        self.shared.faults.lock().fail_next(verbs, count, code);
    }

    /// Disarms every error answer still armed by [`fail_next`](Self::fail_next).
    pub fn clear_failures(&self) {
        self.shared.faults.lock().clear_errors();
    }

    /// Error answers still armed.
    pub fn pending_failures(&self) -> usize {
        self.shared.faults.lock().pending_errors()
    }

    /// Delays every answer to these verbs (`None`: no delay).
    pub fn set_delay(&self, verbs: &[Verb], delay: Option<Duration>) {
        self.shared.faults.lock().set_delay(verbs, delay);
    }

    /// Cuts watch chunks at random byte offsets into pieces sent apart.
    pub fn set_split_frames(&self, on: bool) {
        self.shared.faults.lock().split_frames = on;
    }

    /// How later streaming-list requests are treated.
    pub fn set_watch_list(&self, support: WatchListSupport) {
        self.shared.faults.lock().watch_list = support;
    }

    /// `Retry-After` of later 429 answers, in seconds.
    pub fn set_retry_after(&self, secs: u64) {
        self.shared.faults.lock().retry_after_secs = secs;
    }

    /// Watch connections currently open.
    pub fn open_watches(&self) -> usize {
        self.shared.store.lock().open_watches()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().clone()
    }

    /// The requests of one verb received so far.
    pub fn requests_of(&self, verb: Verb) -> Vec<RecordedRequest> {
        self.shared.requests.lock().iter().filter(|r| r.verb == verb).cloned().collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().clear();
    }
}

fn kubeconfig_yaml(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: wink-test
  cluster:
    server: {server}
contexts:
- name: wink-test
  context:
    cluster: wink-test
    user: wink-test
    namespace: default
current-context: wink-test
users:
- name: wink-test
  user:
    token: wink-test-token
"
    )
}

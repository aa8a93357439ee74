//! A local Kubernetes API server for tests: wink's own Kubernetes API endpoint
//! ([`wink::embedded::http::router`], the one `wink run --serve-api` serves) over an in-memory
//! cluster ([`MemoryCluster`]), on `127.0.0.1` (random port), with the test's faults layered on
//! top. It speaks the API server's protocol to the **real** kube client and to `kubectl`,
//! through a generated kubeconfig (plain `http://`, which both accept).
//!
//! What it serves is wink's implementation of the API semantics, shared with the embedded
//! cluster and `--serve-api`:
//! - one global, increasing resourceVersion for every write of every kind (etcd's revision);
//!   writes (the test's through [`ApiServer::apply`] and [`ApiServer::delete`], clients' over
//!   HTTP) follow the API server's rules (`uid`, `creationTimestamp`, `generation`,
//!   no-op updates, finalizers and `deletionTimestamp`, conflicts, patches, server-side apply);
//! - LIST with `limit`/`continue` over consistent snapshots (tokens expire with `410 Expired`
//!   after compaction), `resourceVersion` and `resourceVersionMatch`, label and field
//!   selectors, built-in kinds' list items without `apiVersion`/`kind`;
//! - WATCH as a chunked stream of JSON lines from a bounded history (a too-old version gets a
//!   `410` ERROR event), bookmarks, `timeoutSeconds`, selectors (objects moving in or out of a
//!   selection become ADDED or DELETED), and streaming lists (`sendInitialEvents`);
//! - discovery of every built-in kind and the registered custom resources ([`ApiServer::register`]).
//!
//! The test's faults ([`layer`]): drop or close every watch, compact the history, answer the
//! next N requests with an error (429 with `Retry-After`), delay answers, split frames across
//! chunks, send a malformed frame or an ERROR event, reject or ignore streaming lists; every
//! request is recorded (method, path, query) for assertions.
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
//! Simplifications: namespaces need not exist before objects are created in them, there is
//! no authentication, and each kind keeps its own history window of the configured size.

pub mod faults;
pub mod layer;
pub mod testing;
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
use wink::cluster::{DeleteOptions, Request, RequestError, Subresource, Verb as Write};
use wink::embedded::http::{ApiOptions, router};
use wink::embedded::{Collection, EmbeddedClient, EmbeddedCluster};
use wink::embedded::{MemoryCluster, MemorySourceOptions};
use wink::informer::{Status, object_key};

pub use faults::{Verb, WatchListSupport};
pub use wink::kube::ResourceDef;

use faults::Faults;
use layer::{Control, OpenWatch};

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
    pub(crate) cluster: Arc<MemoryCluster>,
    pub(crate) client: EmbeddedClient,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    pub(crate) watches: Mutex<Vec<OpenWatch>>,
    pub(crate) addr: SocketAddr,
}

impl Shared {
    /// Sends `control` to every open watch (that allows bookmarks, when `bookmarks`); returns
    /// how many there were.
    fn to_watches(&self, bookmarks_only: bool, control: impl Fn() -> Vec<Control>) -> usize {
        let mut watches = self.watches.lock();
        watches.retain(|w| !w.tx.is_closed());
        let mut count = 0;
        for watch in watches.iter().filter(|w| !bookmarks_only || w.bookmarks) {
            if control().into_iter().all(|c| watch.tx.send(c).is_ok()) {
                count += 1;
            }
        }
        count
    }
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

/// Where an object given whole is stored (see [`ApiServer::target`]).
struct Target {
    api_version: String,
    kind: String,
    collection: Collection,
    key: String,
}

fn invalid(e: RequestError) -> ApiServerError {
    ApiServerError::Invalid(e.to_string())
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
        let cluster = Arc::new(MemoryCluster::new(MemorySourceOptions {
            history_limit: options.history_limit,
            bookmark_interval: options.bookmark_interval,
            // A real etcd may take more (`--max-request-bytes`): clients must cope with
            // objects larger than the default.
            max_object_bytes: 64 << 20,
            ..MemorySourceOptions::default()
        }));
        let shared = Arc::new(Shared {
            client: EmbeddedClient::new(cluster.clone()),
            cluster: cluster.clone(),
            faults: Mutex::new(Faults::new(options.seed, options.watch_list, options.retry_after_secs)),
            requests: Mutex::default(),
            watches: Mutex::default(),
            addr,
        });
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(&format!("http://{addr}")))?;
        let cancel = CancellationToken::new();
        let app = router(cluster, ApiOptions { default_watch_timeout: options.default_watch_timeout })
            .layer(axum::middleware::from_fn_with_state(shared.clone(), layer::faults));
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let stop = cancel.clone();
        tokio::spawn(async move {
            let shutdown = async move { stop.cancelled().await };
            if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                tracing::warn!(error = %err, "the local API server stopped");
            }
        });
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

    /// The cluster the server serves (to write through an
    /// [`EmbeddedClient`](wink::embedded::EmbeddedClient), or read its stores).
    pub fn cluster(&self) -> Arc<MemoryCluster> {
        self.shared.cluster.clone()
    }

    /// Serves another kind (e.g. a custom resource, as installing its CRD would).
    pub fn register(&self, def: ResourceDef) -> Result<(), ApiServerError> {
        let (plural, namespaced, status) = (&def.plural, def.namespaced, def.status_subresource);
        self.shared
            .cluster
            .register(&def.api_version(), &def.kind, plural, namespaced, status, Vec::new())
            .map_err(ApiServerError::Conflict)
    }

    fn request(&self, verb: Write, api_version: &str, kind: &str, key: &str, body: String) -> Request {
        let (namespace, name) = wink::informer::split_key(key);
        Request::new(verb, api_version, kind, namespace.map(str::to_owned), name).with_body(body)
    }

    /// Creates or updates an object (by apiVersion, kind, namespace and name) as a client
    /// would — create, or an unconditional update, then a status update when the object
    /// carries a status its kind keeps in a subresource; returns it as stored. An update that
    /// changes nothing is a no-op.
    pub fn apply(&self, object: Value) -> Result<Value, ApiServerError> {
        self.apply_stamped(object).map(|(stored, _)| stored)
    }

    /// [`apply`](Self::apply), also returning the instant its last write was committed (its
    /// watch event queued for every watcher): what a latency measured from the commit starts
    /// from (the returned object is converted after that instant).
    pub fn apply_stamped(&self, mut object: Value) -> Result<(Value, std::time::Instant), ApiServerError> {
        let Target { api_version, kind, collection, key } = self.target(&object)?;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let client = &self.shared.client;
        // Get, then create or update at the version read (custom resources allow no
        // unconditional update), again when a concurrent write got in between.
        let mut stored = loop {
            let (verb, mut body) = (Write::Create, object.clone());
            let verb = match collection.source.get(&key) {
                Some(current) => {
                    body["metadata"]["resourceVersion"] = current.resource_version().into();
                    Write::Update
                }
                None => verb,
            };
            match client.execute_now(self.request(verb, &api_version, &kind, &key, body.to_string())) {
                Err(RequestError::Conflict(_) | RequestError::AlreadyExists(_)) => continue,
                other => break other.map_err(invalid)?,
            }
        };
        let mut committed = std::time::Instant::now();
        if collection.def.status_subresource && object.get("status").is_some() {
            stored = self
                .write_status(&api_version, &kind, &key, &object, stored.object.resource_version())
                .map_err(invalid)?;
            committed = std::time::Instant::now();
        }
        let stored = stored.object.to_value().map_err(|e| ApiServerError::Invalid(e.to_string()))?;
        Ok((stored, committed))
    }

    /// Updates only the status of a stored object, as a kubelet or a controller reports
    /// one: an update of its `/status` subresource at the stored version (again when a
    /// concurrent write got in between). Returns the new resourceVersion and the instant the
    /// write was committed (as [`apply_stamped`](Self::apply_stamped)).
    pub fn update_status(&self, object: &Value) -> Result<(u64, std::time::Instant), ApiServerError> {
        let Target { api_version, kind, collection, key } = self.target(object)?;
        loop {
            let current =
                collection.source.get(&key).ok_or_else(|| ApiServerError::Invalid(format!("{key} is not stored")))?;
            match self.write_status(&api_version, &kind, &key, object, current.resource_version()) {
                Err(RequestError::Conflict(_)) => continue,
                Err(e) => return Err(invalid(e)),
                Ok(stored) => {
                    let committed = std::time::Instant::now();
                    let rv = stored.object.resource_version().parse().unwrap_or_default();
                    return Ok((rv, committed));
                }
            }
        }
    }

    /// Where `object` is stored: its kind's collection and its key (a namespaced kind's
    /// object must name its namespace).
    fn target(&self, object: &Value) -> Result<Target, ApiServerError> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        let collection = self
            .shared
            .cluster
            .collection(&api_version, &kind)
            .ok_or_else(|| ApiServerError::UnknownKind(format!("{api_version} {kind}")))?;
        let meta = object.get("metadata").and_then(Value::as_object);
        let meta = meta.ok_or_else(|| ApiServerError::Invalid("no metadata".into()))?;
        let name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
        let namespace = meta.get("namespace").and_then(Value::as_str);
        if collection.def.namespaced && namespace.is_none() {
            return Err(ApiServerError::Invalid(format!("{kind} {name} needs a namespace")));
        }
        let key = object_key(if collection.def.namespaced { namespace } else { None }, name);
        Ok(Target { api_version, kind, collection, key })
    }

    /// One update of `/status` with `object`'s status, conditional on `version`.
    fn write_status(
        &self,
        api_version: &str,
        kind: &str,
        key: &str,
        object: &Value,
        version: &str,
    ) -> Result<wink::embedded::Outcome, RequestError> {
        let mut with_status = object.clone();
        with_status["metadata"]["resourceVersion"] = version.into();
        let mut request = self.request(Write::Update, api_version, kind, key, with_status.to_string());
        request.subresource = Some(Subresource::Status);
        self.shared.client.execute_now(request)
    }

    /// Deletes the object with this key (`namespace/name`, or `name` when cluster-scoped);
    /// returns its final state, or `None` if it did not exist. An object with finalizers is
    /// only marked for deletion.
    pub fn delete(&self, api_version: &str, kind: &str, key: &str) -> Result<Option<Value>, ApiServerError> {
        if self.shared.cluster.collection(api_version, kind).is_none() {
            return Err(ApiServerError::UnknownKind(format!("{api_version} {kind}")));
        }
        let request = self.request(Write::Delete(DeleteOptions::default()), api_version, kind, key, String::new());
        match self.shared.client.execute_now(request) {
            Ok(outcome) => Ok(outcome.object.to_value().ok()),
            Err(RequestError::NotFound(_)) => Ok(None),
            Err(e) => Err(invalid(e)),
        }
    }

    /// The object with this key.
    pub fn get(&self, api_version: &str, kind: &str, key: &str) -> Option<Value> {
        self.shared.cluster.collection(api_version, kind)?.source.get(key)?.to_value().ok()
    }

    /// Every object of a kind, in key order.
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let Some(collection) = self.shared.cluster.collection(api_version, kind) else { return Vec::new() };
        collection.source.objects().iter().filter_map(|o| o.to_value().ok()).collect()
    }

    /// Key → resourceVersion of every object of a kind: the state to compare caches with.
    pub fn versions(&self, api_version: &str, kind: &str) -> BTreeMap<String, String> {
        let Some(collection) = self.shared.cluster.collection(api_version, kind) else { return BTreeMap::new() };
        collection.source.objects().iter().map(|o| (o.key().to_owned(), o.resource_version().to_owned())).collect()
    }

    /// The current (global) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.cluster.revision().current()
    }

    /// Breaks every open watch connection mid-response (as a network failure would);
    /// returns how many there were.
    pub fn drop_watches(&self) -> usize {
        self.shared.to_watches(false, || vec![Control::Abort])
    }

    /// Ends every open watch normally (as a server-side timeout does).
    pub fn close_watches(&self) -> usize {
        self.shared.to_watches(false, || vec![Control::End])
    }

    /// Ends every open watch with an ERROR event carrying this status.
    pub fn send_watch_error(&self, code: u16, reason: &'static str, message: &str) -> usize {
        let status = Status { code, reason: reason.into(), message: message.into() };
        let frame = bytes::Bytes::from(wink::embedded::http::error_frame(&status));
        self.shared.to_watches(false, || vec![Control::Frame(frame.clone()), Control::End])
    }

    /// Sends a truncated, unparseable frame to every open watch (which stay open: it is the
    /// client's to give up on them).
    pub fn send_malformed_frame(&self) -> usize {
        let frame = bytes::Bytes::from_static(b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\n");
        self.shared.to_watches(false, || vec![Control::Frame(frame.clone())])
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that allows them;
    /// returns how many there were.
    pub fn bookmark_now(&self) -> usize {
        for collection in self.shared.cluster.collections() {
            collection.source.bookmark();
        }
        self.shared.to_watches(true, Vec::new)
    }

    /// Forgets the change history: watches from, exact lists at, and continue tokens of any
    /// earlier resourceVersion get `410 Expired`, forcing clients to relist (and so to infer
    /// the deletes they missed).
    pub fn compact(&self) {
        for collection in self.shared.cluster.collections() {
            collection.source.compact();
        }
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
        let mut watches = self.shared.watches.lock();
        watches.retain(|w| !w.tx.is_closed());
        watches.len()
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

//! An in-memory [`ListerWatcher`] that behaves like an API server's watch cache, driven by
//! code: tests and benchmarks script changes and faults on it, and the directory source keeps
//! its state in one.
//!
//! It keeps the semantics the reflector depends on: a global, increasing resourceVersion
//! stamped into every object; LIST with `limit`/`continue` over a consistent snapshot
//! (continue tokens expire on compaction, with 410) at a resourceVersion (a version newer
//! than the source's is "Too large resource version"; a paged list asks for that exact
//! version, 410 once compacted; otherwise the latest state, never older than asked); WATCH from a resourceVersion replaying
//! the bounded event history then streaming live changes, or an ERROR 410 event when that
//! version was compacted away, as the API server does; bookmarks; and streaming lists
//! (`sendInitialEvents`). Faults: dropped watches, compaction, injected list/watch errors.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::nesting::value_depth;
use crate::informer::list_watch::{
    ListParams, ListerWatcher, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream,
};
use crate::informer::object::{MAX_DEPTH, Object, ObjectError};

type Sender = mpsc::UnboundedSender<Result<WatchEvent, SourceError>>;

#[derive(Clone, Debug)]
enum Change {
    Added(Object),
    Modified(Object),
    Deleted(Object),
}

impl Change {
    fn event(&self) -> WatchEvent {
        match self {
            Self::Added(o) => WatchEvent::Added(o.clone()),
            Self::Modified(o) => WatchEvent::Modified(o.clone()),
            Self::Deleted(o) => WatchEvent::Deleted(o.clone()),
        }
    }
}

struct Snapshot {
    resource_version: u64,
    items: Vec<Object>,
}

#[derive(Default)]
struct Inner {
    objects: BTreeMap<String, Object>,
    resource_version: u64,
    history: VecDeque<(u64, Change)>,
    /// Watches from a resourceVersion below this get 410 Gone.
    oldest_watchable: u64,
    watchers: Vec<Sender>,
    snapshots: HashMap<u64, Snapshot>,
    next_snapshot: u64,
    list_errors: VecDeque<SourceError>,
    watch_errors: VecDeque<SourceError>,
    list_requests: Vec<ListParams>,
    watch_requests: Vec<WatchParams>,
}

impl Inner {
    fn broadcast(&mut self, rv: u64, change: Change) {
        let event = change.event();
        self.watchers.retain(|tx| tx.send(Ok(event.clone())).is_ok());
        self.history.push_back((rv, change));
    }
}

/// What [`MemorySource::write`] does.
#[derive(Clone, Debug)]
pub enum Write {
    /// Store this object (its resourceVersion is assigned).
    Put(serde_json::Value),
    /// Remove the object; this is its final state.
    Delete(serde_json::Value),
    /// Nothing: the stored object stays as it is.
    Unchanged(Object),
}

/// Options of a [`MemorySource`].
#[derive(Clone, Debug)]
pub struct MemorySourceOptions {
    /// Events kept for watches that resume from an older resourceVersion (the API server's
    /// watch cache holds a bounded window too).
    pub history_limit: usize,
    /// Whether streaming lists (`sendInitialEvents`) are supported.
    pub watch_list: bool,
}

impl Default for MemorySourceOptions {
    fn default() -> Self {
        Self { history_limit: 10_000, watch_list: true }
    }
}

/// An in-memory, scriptable source of objects. Clones share state.
#[derive(Clone)]
pub struct MemorySource {
    inner: Arc<Mutex<Inner>>,
    options: MemorySourceOptions,
}

impl Default for MemorySource {
    fn default() -> Self {
        Self::new(MemorySourceOptions::default())
    }
}

impl std::fmt::Debug for MemorySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("MemorySource")
            .field("objects", &inner.objects.len())
            .field("rv", &inner.resource_version)
            .finish()
    }
}

/// Sets `metadata.resourceVersion` in an object's JSON and decodes it. Objects nested deeper
/// than [`MAX_DEPTH`] are refused, so that every stored object reads back.
fn stamp(mut value: serde_json::Value, rv: u64) -> Result<Object, ObjectError> {
    if value_depth(&value) > MAX_DEPTH {
        return Err(ObjectError::TooDeep);
    }
    let meta = value
        .as_object_mut()
        .and_then(|o| o.get_mut("metadata"))
        .and_then(|m| m.as_object_mut())
        .ok_or(ObjectError::Missing("metadata"))?;
    meta.insert("resourceVersion".into(), serde_json::Value::String(rv.to_string()));
    Object::from_string(value.to_string())
}

impl MemorySource {
    /// An empty source.
    pub fn new(options: MemorySourceOptions) -> Self {
        // Like etcd, the store's revision is never 0 once it exists: a LIST answers with a
        // real, watchable resourceVersion even when empty.
        let inner = Inner { resource_version: 1, oldest_watchable: 1, ..Inner::default() };
        Self { inner: Arc::new(Mutex::new(inner)), options }
    }

    /// Creates or updates an object (its resourceVersion is assigned); returns it as stored.
    pub fn apply(&self, value: serde_json::Value) -> Result<Object, ObjectError> {
        let mut inner = self.inner.lock();
        let rv = inner.resource_version + 1;
        let obj = stamp(value, rv)?;
        inner.resource_version = rv;
        let change = match inner.objects.insert(obj.key().to_owned(), obj.clone()) {
            Some(_) => Change::Modified(obj.clone()),
            None => Change::Added(obj.clone()),
        };
        inner.broadcast(rv, change);
        self.trim(&mut inner);
        Ok(obj)
    }

    /// Writes the object with `key` atomically: `decide` sees the stored object (if any) and
    /// says what to do — the API server's rules run inside this lock, so no other write
    /// comes between its read and its write. Returns the object as stored (a put, stamped
    /// with a new resourceVersion), its final state (a delete, with the deletion's
    /// resourceVersion), or the object as it was (no change: no event, no new version).
    pub fn write<E: From<ObjectError>>(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&Object>) -> Result<Write, E>,
    ) -> Result<Object, E> {
        let mut inner = self.inner.lock();
        let current = inner.objects.get(key);
        match decide(current)? {
            Write::Unchanged(obj) => Ok(obj),
            Write::Put(value) => {
                let rv = inner.resource_version + 1;
                let obj = stamp(value, rv)?;
                if obj.key() != key {
                    return Err(ObjectError::Malformed {
                        path: ".metadata".into(),
                        message: format!("a write of {key} stored {}", obj.key()),
                    }
                    .into());
                }
                inner.resource_version = rv;
                let change = match inner.objects.insert(key.to_owned(), obj.clone()) {
                    Some(_) => Change::Modified(obj.clone()),
                    None => Change::Added(obj.clone()),
                };
                inner.broadcast(rv, change);
                self.trim(&mut inner);
                Ok(obj)
            }
            Write::Delete(value) => {
                let rv = inner.resource_version + 1;
                let last = stamp(value, rv)?;
                inner.objects.remove(key);
                inner.resource_version = rv;
                inner.broadcast(rv, Change::Deleted(last.clone()));
                self.trim(&mut inner);
                Ok(last)
            }
        }
    }

    /// Deletes the object with this key; returns its final state (with the deletion's
    /// resourceVersion), or `None` if it did not exist.
    pub fn delete(&self, key: &str) -> Option<Object> {
        let mut inner = self.inner.lock();
        let old = inner.objects.remove(key)?;
        let rv = inner.resource_version + 1;
        inner.resource_version = rv;
        // The final state carries the deletion's resourceVersion. Restamping re-reads the stored
        // JSON, which `stamp` made sure reads back; should that ever fail, the delete is still
        // delivered, with the last stored state.
        let last = old.to_value().and_then(|value| stamp(value, rv)).unwrap_or_else(|err| {
            tracing::warn!(key, error = %err, "cannot stamp the deleted object's final state");
            old
        });
        inner.broadcast(rv, Change::Deleted(last.clone()));
        self.trim(&mut inner);
        Some(last)
    }

    fn trim(&self, inner: &mut Inner) {
        while inner.history.len() > self.options.history_limit {
            if let Some((rv, _)) = inner.history.pop_front() {
                inner.oldest_watchable = rv;
            }
        }
    }

    /// Forgets the event history (and expires continue tokens): a watch from any earlier
    /// resourceVersion then gets 410 Gone, forcing a relist.
    pub fn compact(&self) {
        let mut inner = self.inner.lock();
        inner.history.clear();
        inner.oldest_watchable = inner.resource_version;
        inner.snapshots.clear();
    }

    /// Ends every open watch stream, as a dropped connection would.
    pub fn disconnect_watches(&self) {
        self.inner.lock().watchers.clear();
    }

    /// Ends every open watch with an ERROR event carrying `status`.
    pub fn send_watch_error(&self, status: Status) {
        let mut inner = self.inner.lock();
        for tx in inner.watchers.drain(..) {
            let _ = tx.send(Ok(WatchEvent::Error(status.clone())));
        }
    }

    /// Sends a BOOKMARK at the current resourceVersion to every open watch.
    pub fn bookmark(&self) {
        let mut inner = self.inner.lock();
        let rv = inner.resource_version.to_string();
        inner.watchers.retain(|tx| {
            tx.send(Ok(WatchEvent::Bookmark { resource_version: rv.clone(), initial_events_end: false })).is_ok()
        });
    }

    /// Makes the next LIST call fail with `err`.
    pub fn fail_next_list(&self, err: SourceError) {
        self.inner.lock().list_errors.push_back(err);
    }

    /// Makes the next WATCH call fail with `err`.
    pub fn fail_next_watch(&self, err: SourceError) {
        self.inner.lock().watch_errors.push_back(err);
    }

    /// The current objects.
    pub fn objects(&self) -> Vec<Object> {
        self.inner.lock().objects.values().cloned().collect()
    }

    /// The object with this key.
    pub fn get(&self, key: &str) -> Option<Object> {
        self.inner.lock().objects.get(key).cloned()
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.lock().resource_version
    }

    /// Every LIST request received so far.
    pub fn list_requests(&self) -> Vec<ListParams> {
        self.inner.lock().list_requests.clone()
    }

    /// Every WATCH request received so far.
    pub fn watch_requests(&self) -> Vec<WatchParams> {
        self.inner.lock().watch_requests.clone()
    }

    /// Number of watch streams currently open.
    pub fn open_watches(&self) -> usize {
        let mut inner = self.inner.lock();
        inner.watchers.retain(|tx| !tx.is_closed());
        inner.watchers.len()
    }
}

fn gone(rv: &str) -> Status {
    Status { code: 410, reason: "Expired".into(), message: format!("too old resource version: {rv}") }
}

#[async_trait]
impl ListerWatcher for MemorySource {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        let mut inner = self.inner.lock();
        inner.list_requests.push(params.clone());
        if let Some(err) = inner.list_errors.pop_front() {
            return Err(err);
        }
        // A version newer than ours is "too large"; a paged list at a version (not "0") asks
        // for that exact version, which is gone once compacted.
        if let Some(rv) = params.resource_version.as_deref().filter(|rv| !rv.is_empty() && *rv != "0") {
            let requested: u64 = rv.parse().map_err(|_| {
                SourceError::Api(Status {
                    code: 400,
                    reason: "BadRequest".into(),
                    message: format!("invalid resourceVersion {rv}"),
                })
            })?;
            if requested > inner.resource_version {
                return Err(SourceError::Api(Status {
                    code: 504,
                    reason: "Timeout".into(),
                    message: format!("Too large resource version: {requested}, current: {}", inner.resource_version),
                }));
            }
            if params.limit.is_some() && params.continue_token.is_none() && requested < inner.oldest_watchable {
                return Err(gone(rv).into());
            }
        }
        let (id, offset) = match &params.continue_token {
            Some(token) => {
                let (id, offset) = token
                    .split_once(':')
                    .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<usize>().ok()?)))
                    .ok_or_else(|| {
                        SourceError::Api(Status {
                            code: 400,
                            reason: "BadRequest".into(),
                            message: format!("invalid continue token {token}"),
                        })
                    })?;
                if !inner.snapshots.contains_key(&id) {
                    return Err(SourceError::Gone(format!("continue token {token} has expired")));
                }
                (id, offset)
            }
            None => {
                let id = inner.next_snapshot;
                inner.next_snapshot += 1;
                let snapshot = Snapshot {
                    resource_version: inner.resource_version,
                    items: inner.objects.values().cloned().collect(),
                };
                inner.snapshots.insert(id, snapshot);
                (id, 0)
            }
        };
        let snapshot = &inner.snapshots[&id];
        let limit = params.limit.map_or(usize::MAX, |l| l.max(1) as usize);
        let end = offset.saturating_add(limit).min(snapshot.items.len());
        let items = snapshot.items[offset.min(end)..end].to_vec();
        let resource_version = snapshot.resource_version.to_string();
        let continue_token = (end < snapshot.items.len()).then(|| format!("{id}:{end}"));
        if continue_token.is_none() {
            inner.snapshots.remove(&id);
        }
        Ok(ObjectList { items, resource_version, continue_token })
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        let mut inner = self.inner.lock();
        inner.watch_requests.push(params.clone());
        if let Some(err) = inner.watch_errors.pop_front() {
            return Err(err);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        if params.send_initial_events {
            if !self.options.watch_list {
                return Err(SourceError::Unsupported("sendInitialEvents".into()));
            }
            for obj in inner.objects.values() {
                let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
            }
            let rv = inner.resource_version.to_string();
            let _ = tx.send(Ok(WatchEvent::Bookmark { resource_version: rv, initial_events_end: true }));
        } else {
            let from: u64 = match params.resource_version.as_str() {
                // "Get state and start at most recent / any": synthetic adds of the current
                // objects, then changes.
                "" | "0" => {
                    for obj in inner.objects.values() {
                        let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
                    }
                    inner.resource_version
                }
                rv => rv.parse().map_err(|_| {
                    SourceError::Api(Status {
                        code: 400,
                        reason: "BadRequest".into(),
                        message: format!("invalid resourceVersion {rv}"),
                    })
                })?,
            };
            if from < inner.oldest_watchable {
                // As the API server's watch cache: a 200 response whose first event is a 410.
                let _ = tx.send(Ok(WatchEvent::Error(gone(&params.resource_version))));
                return Ok(UnboundedReceiverStream::new(rx).boxed());
            }
            for (rv, change) in &inner.history {
                if *rv > from {
                    let _ = tx.send(Ok(change.event()));
                }
            }
        }
        inner.watchers.push(tx);
        let stream = UnboundedReceiverStream::new(rx);
        Ok(match params.timeout {
            Some(timeout) => stream.take_until(tokio::time::sleep(timeout)).boxed(),
            None => stream.boxed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns", "name": name}})
    }

    #[tokio::test]
    async fn list_pages_over_a_consistent_snapshot() {
        let src = MemorySource::default();
        for i in 0..5 {
            src.apply(cm(&format!("c{i}"))).unwrap();
        }
        let first = src.list(&ListParams { limit: Some(2), ..Default::default() }).await.unwrap();
        assert_eq!(first.items.len(), 2);
        src.apply(cm("late")).unwrap();
        let mut params = ListParams { limit: Some(2), continue_token: first.continue_token, ..Default::default() };
        let mut total = 2;
        while params.continue_token.is_some() {
            let page = src.list(&params).await.unwrap();
            assert_eq!(page.resource_version, "6", "every page is at the first page's resourceVersion");
            total += page.items.len();
            params.continue_token = page.continue_token;
        }
        assert_eq!(total, 5, "the object created during paging is not in the snapshot");
    }

    #[tokio::test]
    async fn compaction_expires_continue_tokens_and_old_watches() {
        let src = MemorySource::default();
        for i in 0..3 {
            src.apply(cm(&format!("c{i}"))).unwrap();
        }
        let page = src.list(&ListParams { limit: Some(1), ..Default::default() }).await.unwrap();
        src.compact();
        let err = src
            .list(&ListParams { limit: Some(1), continue_token: page.continue_token, ..Default::default() })
            .await
            .unwrap_err();
        assert!(err.is_gone());
        src.apply(cm("c9")).unwrap();
        let mut stream = src.watch(&WatchParams { resource_version: "1".into(), ..Default::default() }).await.unwrap();
        assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Error(s))) if s.is_gone()));
    }

    /// Regression: an object nested deeper than `serde_json` reads back was stored, and
    /// deleting it (which re-reads its JSON) panicked.
    #[test]
    fn deleting_the_deepest_object_does_not_panic() {
        let src = MemorySource::default();
        let mut value = json!("leaf");
        // metadata's siblings: the top-level object is level 1, so 126 more levels.
        for _ in 0..MAX_DEPTH - 1 {
            value = json!([value]);
        }
        let mut doc = cm("deep");
        doc["spec"] = value;
        src.apply(doc).unwrap();
        let deleted = src.delete("ns/deep").unwrap();
        assert_eq!(deleted.resource_version(), "3");
        let mut too_deep = cm("deeper");
        too_deep["spec"] = json!([[deleted.to_value().unwrap()]]);
        assert!(matches!(src.apply(too_deep), Err(ObjectError::TooDeep)));
        assert!(src.get("ns/deeper").is_none());
    }

    #[tokio::test]
    async fn watch_replays_history_after_the_resource_version_then_streams_live() {
        let src = MemorySource::default();
        src.apply(cm("a")).unwrap();
        src.apply(cm("b")).unwrap();
        let mut stream = src.watch(&WatchParams { resource_version: "2".into(), ..Default::default() }).await.unwrap();
        assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Added(o))) if o.name() == "b"));
        src.apply(cm("a")).unwrap();
        assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Modified(o))) if o.resource_version() == "4"));
        let deleted = src.delete("ns/a").unwrap();
        assert_eq!(deleted.resource_version(), "5");
        assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Deleted(o))) if o.name() == "a"));
        src.disconnect_watches();
        assert!(stream.next().await.is_none());
    }
}

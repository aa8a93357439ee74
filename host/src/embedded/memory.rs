//! An in-memory [`ListerWatcher`] that behaves like an API server's storage and watch cache,
//! driven by code: the directory source and the embedded cluster keep their objects in one
//! per kind, `wink run --serve-api` and the tests' local API server serve them over HTTP, and
//! tests and benchmarks script changes and faults on it.
//!
//! It keeps the semantics clients depend on:
//! - a [`Revision`] stamped into every object as its resourceVersion, increasing, shared by
//!   every store of one cluster as etcd's revision is (so one kind's list at version N and
//!   another's are comparable);
//! - a bounded history of changes (the watch cache window): watches resume from any version
//!   still in it, lists read the exact state at such a version, and anything older gets
//!   `410 Expired`; [`MemorySource::compact`] drops it all;
//! - LIST with `limit`/`continue` over a consistent snapshot, `resourceVersion` and
//!   `resourceVersionMatch` as the API server reads them (see [`MemorySource::list_matching`]);
//! - WATCH from a resourceVersion replaying the history then streaming live changes (an ERROR
//!   410 event when that version was compacted away), bookmarks (on request and, with
//!   [`MemorySourceOptions::bookmark_interval`], periodically), streaming lists
//!   (`sendInitialEvents`), and selections where objects moving in or out of a selection are
//!   ADDED or DELETED (see [`MemorySource::watch_matching`]);
//! - faults: dropped watches, compaction, injected list/watch errors.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::informer::list_watch::{
    ListParams, ListerWatcher, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream,
};
use crate::informer::object::{MAX_DEPTH, Object, ObjectError};
use crate::kube::nesting::value_depth;
pub use wink_apiserver::Write;

pub(super) type Sender = mpsc::UnboundedSender<Result<WatchEvent, SourceError>>;

/// The resourceVersion counter of a cluster: every write of every store sharing it takes the
/// next number, as etcd's revision does. Clones share the counter.
#[derive(Clone, Debug)]
pub struct Revision(Arc<AtomicU64>);

impl Default for Revision {
    fn default() -> Self {
        // Like etcd, the revision is never 0 once the store exists: a LIST answers with a
        // real, watchable resourceVersion even when empty.
        Self(Arc::new(AtomicU64::new(1)))
    }
}

impl Revision {
    /// The latest resourceVersion handed out.
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Takes the next resourceVersion.
    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Moves the revision to `rv` (see `MemorySource::rewind`, the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn set(&self, rv: u64) {
        self.0.store(rv, Ordering::SeqCst);
    }
}

/// One change in the history, with the state before it (to read the past).
#[derive(Clone, Debug)]
pub(super) enum Change {
    Added(Object),
    Modified { object: Object, previous: Object },
    Deleted { object: Object, previous: Object },
}

impl Change {
    pub(super) fn event(&self) -> WatchEvent {
        match self {
            Self::Added(o) => WatchEvent::Added(o.clone()),
            Self::Modified { object, .. } => WatchEvent::Modified(object.clone()),
            Self::Deleted { object, .. } => WatchEvent::Deleted(object.clone()),
        }
    }
}

/// A paged list's state: the items selected at its resourceVersion.
pub(super) struct Snapshot {
    pub resource_version: u64,
    pub items: Vec<Object>,
}

/// Continue tokens kept at once; the oldest expires first (410), as etcd compacts them away.
pub(super) const MAX_SNAPSHOTS: usize = 256;

#[derive(Default)]
pub(super) struct Inner {
    pub objects: BTreeMap<String, Object>,
    pub history: VecDeque<(u64, Change)>,
    /// Watches from, and exact lists at, a resourceVersion below this get 410 Gone.
    pub oldest_watchable: u64,
    pub watchers: Vec<Sender>,
    pub snapshots: HashMap<u64, Snapshot>,
    pub next_snapshot: u64,
    pub list_errors: VecDeque<SourceError>,
    pub watch_errors: VecDeque<SourceError>,
    pub list_requests: Vec<ListParams>,
    pub watch_requests: Vec<WatchParams>,
}

impl Inner {
    pub(super) fn record(&mut self, rv: u64, change: Change, history_limit: usize) {
        let event = change.event();
        self.watchers.retain(|tx| tx.send(Ok(event.clone())).is_ok());
        self.history.push_back((rv, change));
        while self.history.len() > history_limit {
            if let Some((rv, _)) = self.history.pop_front() {
                self.oldest_watchable = rv;
            }
        }
    }

    /// The objects as they were at resourceVersion `rv` (which the history must cover).
    pub(super) fn state_at(&self, rv: u64) -> BTreeMap<String, Object> {
        let mut state = self.objects.clone();
        for (at, change) in self.history.iter().rev() {
            if *at <= rv {
                break;
            }
            match change {
                Change::Added(o) => {
                    state.remove(o.key());
                }
                Change::Modified { previous, .. } | Change::Deleted { previous, .. } => {
                    state.insert(previous.key().to_owned(), previous.clone());
                }
            }
        }
        state
    }
}

/// The longest object a store takes by default, as etcd's default request limit (1.5 MiB): a
/// write of a longer one is refused, whoever makes it.
pub(crate) const MAX_OBJECT_BYTES: usize = 3 * 512 * 1024;

/// Options of a [`MemorySource`].
#[derive(Clone, Debug)]
pub struct MemorySourceOptions {
    /// Changes kept for watches that resume from an older resourceVersion and for exact
    /// lists of the past (the API server's watch cache holds a bounded window too).
    pub history_limit: usize,
    /// Whether streaming lists (`sendInitialEvents`) are supported.
    pub watch_list: bool,
    /// How often watches that allow bookmarks get one (the API server sends one about every
    /// minute); `None`: only on [`MemorySource::bookmark`].
    pub bookmark_interval: Option<Duration>,
    /// The resourceVersion counter, shared with the cluster's other stores.
    pub revision: Revision,
    /// Whether LISTs at resourceVersion `"0"` are answered as the watch cache answers them,
    /// whole (`limit` ignored); `false`: paged over the latest state, as an API server with
    /// `--watch-cache=false` reads etcd.
    pub watch_cache: bool,
    /// The longest object a write may store, in bytes (etcd's `--max-request-bytes`);
    /// default [`MAX_OBJECT_BYTES`], etcd's default.
    pub max_object_bytes: usize,
}

impl Default for MemorySourceOptions {
    fn default() -> Self {
        Self {
            history_limit: 10_000,
            watch_list: true,
            bookmark_interval: None,
            revision: Revision::default(),
            watch_cache: true,
            max_object_bytes: MAX_OBJECT_BYTES,
        }
    }
}

/// An in-memory, scriptable source of objects. Clones share state.
#[derive(Clone)]
pub struct MemorySource {
    pub(super) inner: Arc<Mutex<Inner>>,
    pub(super) options: MemorySourceOptions,
    /// Set on a view of another kind's store (see [`super::memory_view`]).
    pub(super) view: Option<Arc<dyn super::memory_view::Conversion>>,
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
            .field("rv", &self.options.revision.current())
            .field("view", &self.view.is_some())
            .finish()
    }
}

/// Sets `metadata.resourceVersion` in an object's JSON and decodes it. Objects nested deeper
/// than [`MAX_DEPTH`] are refused, so that every stored object reads back.
fn stamp(value: serde_json::Value, rv: u64) -> Result<Object, ObjectError> {
    stamp_sized(value, rv, 0)
}

/// [`stamp`], its text written into a buffer of `size_hint` bytes (the stored version's
/// size, when the object is replacing one) rather than grown from small.
fn stamp_sized(mut value: serde_json::Value, rv: u64, size_hint: usize) -> Result<Object, ObjectError> {
    if value_depth(&value) > MAX_DEPTH {
        return Err(ObjectError::TooDeep);
    }
    let meta = value
        .as_object_mut()
        .and_then(|o| o.get_mut("metadata"))
        .and_then(|m| m.as_object_mut())
        .ok_or(ObjectError::Missing("metadata"))?;
    meta.insert("resourceVersion".into(), serde_json::Value::String(rv.to_string()));
    let mut text = Vec::with_capacity(size_hint + size_hint / 8);
    let written = serde_json::to_writer(&mut text, &value).map_err(|e| e.to_string());
    let text = written.and_then(|()| String::from_utf8(text).map_err(|e| e.to_string()));
    Object::from_string(text.map_err(|message| ObjectError::Malformed { path: ".".into(), message })?)
}

impl MemorySource {
    /// An empty source.
    pub fn new(options: MemorySourceOptions) -> Self {
        let inner = Inner { oldest_watchable: options.revision.current(), ..Inner::default() };
        Self { inner: Arc::new(Mutex::new(inner)), options, view: None }
    }

    /// Creates or updates an object (its resourceVersion is assigned); returns it as stored.
    pub fn apply(&self, value: serde_json::Value) -> Result<Object, ObjectError> {
        let mut inner = self.inner.lock();
        let rv = self.options.revision.next();
        let obj = stamp(self.stored_form(value), rv)?;
        self.put(&mut inner, rv, obj.clone());
        Ok(self.shown(&obj))
    }

    fn put(&self, inner: &mut Inner, rv: u64, obj: Object) {
        let change = match inner.objects.insert(obj.key().to_owned(), obj.clone()) {
            Some(previous) => Change::Modified { object: obj, previous },
            None => Change::Added(obj),
        };
        inner.record(rv, change, self.options.history_limit);
    }

    /// Writes the object with `key` atomically: `decide` sees the stored object (if any) and
    /// says what to do — the API server's rules run inside this lock, so no other write
    /// comes between its read and its write. Returns the object as stored (a put, stamped
    /// with a new resourceVersion), its final state (a delete, with the deletion's
    /// resourceVersion), or the object as it was (no change: no event, no new version; the
    /// stored object itself, not the rule's copy of it — a rule that finds nothing to change
    /// where nothing is stored stores its object).
    pub fn write<E: From<ObjectError>>(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&Object>) -> Result<Write, E>,
    ) -> Result<Object, E> {
        let mut inner = self.inner.lock();
        let current = inner.objects.get(key);
        let size_hint = current.map_or(0, |c| c.json().len());
        let write = match (&self.view, current) {
            (Some(_), Some(stored)) => decide(Some(&self.shown(stored)))?,
            _ => decide(current)?,
        };
        if let (Write::Unchanged(_), Some(stored)) = (&write, current) {
            return Ok(self.shown(stored));
        }
        match write {
            Write::Put(value) | Write::Unchanged(value) => {
                let rv = self.options.revision.next();
                let obj = stamp_sized(self.stored_form(value), rv, size_hint)?;
                let limit = self.options.max_object_bytes;
                if obj.json().len() > limit {
                    return Err(ObjectError::TooLarge { size: obj.json().len(), limit }.into());
                }
                if obj.key() != key {
                    return Err(ObjectError::Malformed {
                        path: ".metadata".into(),
                        message: format!("a write of {key} stored {}", obj.key()),
                    }
                    .into());
                }
                self.put(&mut inner, rv, obj.clone());
                Ok(self.shown(&obj))
            }
            Write::Delete(value) => {
                let rv = self.options.revision.next();
                let last = stamp(self.stored_form(value), rv)?;
                match inner.objects.remove(key) {
                    Some(previous) => {
                        let change = Change::Deleted { object: last.clone(), previous };
                        inner.record(rv, change, self.options.history_limit);
                    }
                    None => tracing::warn!(key, "a write deleted an object that is not stored"),
                }
                Ok(self.shown(&last))
            }
        }
    }

    /// Deletes the object with this key; returns its final state (with the deletion's
    /// resourceVersion), or `None` if it did not exist.
    pub fn delete(&self, key: &str) -> Option<Object> {
        let mut inner = self.inner.lock();
        let previous = inner.objects.remove(key)?;
        let rv = self.options.revision.next();
        // The final state carries the deletion's resourceVersion. Restamping re-reads the stored
        // JSON, which `stamp` made sure reads back; should that ever fail, the delete is still
        // delivered, with the last stored state.
        let last = previous.to_value().and_then(|value| stamp(value, rv)).unwrap_or_else(|err| {
            tracing::warn!(key, error = %err, "cannot stamp the deleted object's final state");
            previous.clone()
        });
        inner.record(rv, Change::Deleted { object: last.clone(), previous }, self.options.history_limit);
        Some(self.shown(&last))
    }

    /// Forgets the event history (and expires continue tokens): a watch from, or an exact list
    /// at, any earlier resourceVersion then gets 410 Gone, forcing a relist.
    pub fn compact(&self) {
        let mut inner = self.inner.lock();
        inner.history.clear();
        inner.oldest_watchable = self.options.revision.current();
        inner.snapshots.clear();
    }

    /// Ends every open watch stream, as a server-side timeout would.
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
        let rv = self.options.revision.current().to_string();
        inner.watchers.retain(|tx| {
            tx.send(Ok(WatchEvent::Bookmark { resource_version: rv.clone(), initial_events_end: false })).is_ok()
        });
    }

    /// Makes the next LIST call fail with `err` (the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
    pub fn fail_next_list(&self, err: SourceError) {
        self.inner.lock().list_errors.push_back(err);
    }

    /// Makes the next WATCH call fail with `err` (the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
    pub fn fail_next_watch(&self, err: SourceError) {
        self.inner.lock().watch_errors.push_back(err);
    }

    /// The current objects, in key order.
    pub fn objects(&self) -> Vec<Object> {
        self.inner.lock().objects.values().map(|o| self.shown(o)).collect()
    }

    /// The object with this key.
    pub fn get(&self, key: &str) -> Option<Object> {
        self.inner.lock().objects.get(key).map(|o| self.shown(o))
    }

    /// The current resourceVersion (the cluster's revision).
    pub fn resource_version(&self) -> u64 {
        self.options.revision.current()
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

#[async_trait]
impl ListerWatcher for MemorySource {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.list_matching(params, None, &|_| true).map(|page| page.list)
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        self.watch_matching(params, None)
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;

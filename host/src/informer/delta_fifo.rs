//! The queue between the reflector and the informer: client-go's `DeltaFIFO`.
//!
//! Every key has a list of deltas (what happened to it, oldest first); keys are popped in
//! the order they first entered the queue, and a pop hands the key's whole delta list to the
//! process function, so the consumer sees every state an object went through since it last
//! looked.
//!
//! Rules, as in client-go (each has a test below):
//! - `replace` (a relist) queues `Replaced` (or `Sync`) for every listed object, and
//!   `Deleted(DeletedFinalStateUnknown)` for every key that is known — in the indexer or in
//!   the queue — but absent from the list: the delete that the watch missed.
//! - Two consecutive deletes of a key collapse into one, keeping the one with more
//!   information: a real delete beats a tombstone.
//! - `resync` queues `Sync` for every known object, except keys that still have queued
//!   deltas (those are about to be delivered anyway, with newer state).
//! - `has_synced` becomes true once the items of the first `replace` have been popped.
//!   (client-go also counts an `add`/`update`/`delete` that arrives before any replace as the
//!   initial population; wink counts it too, and waits until it has been popped.)
//! - A pop hands the key's delta list to the process function by value and never puts it
//!   back (client-go's `Pop` re-adds it only on `ErrRequeue`, which no informer returns).
//! - `close` wakes every popper, which then returns [`FifoClosed`].
//! - The transformer ([`DeltaFifoOptions::transformer`], client-go's `Transformer`, which
//!   `SetTransform` installs) is applied to every object entering the queue through `add`,
//!   `update`, `delete` and `replace` — once per object, before it is queued — but not to
//!   tombstones nor to a resync's `Sync` deltas, whose objects come from the cache and were
//!   transformed already. A transformer that panics leaves that object as received
//!   (logged, and counted in [`DeltaFifoOptions::panics`]).
//!
//! The process function runs with the queue's lock held (as in client-go), so `has_synced`
//! cannot turn true before the last initial item has been fully processed.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use super::crash::{PanicCounter, catch};
use super::object::Object;
use super::reflector::Transform;
use super::store::Store;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// Created (seen by a watch).
    Added,
    /// Changed (seen by a watch).
    Updated,
    /// Deleted (seen by a watch, or inferred by a relist).
    Deleted,
    /// Listed again by a relist.
    Replaced,
    /// Re-delivered by a periodic resync.
    Sync,
}

/// The object a delta carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeltaObject {
    /// The object's state.
    Object(Object),
    /// A delete inferred on relist: the object was gone from the list, so its final state is
    /// unknown; `obj` is the last state the informer knew.
    DeletedFinalStateUnknown {
        /// The object's key.
        key: String,
        /// The last known state.
        obj: Object,
    },
}

impl DeltaObject {
    /// The object (for a tombstone, the last known state).
    pub fn object(&self) -> &Object {
        match self {
            Self::Object(obj) | Self::DeletedFinalStateUnknown { obj, .. } => obj,
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::DeletedFinalStateUnknown { .. })
    }
}

/// One change to one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// What happened.
    pub kind: DeltaType,
    /// The object it happened to.
    pub obj: DeltaObject,
}

/// Returned by [`DeltaFifo::pop`] once the queue is closed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("DeltaFIFO is closed")]
pub struct FifoClosed;

/// Capacity (keys) above which a drained queue gives its memory back.
const SHRINK_ABOVE: usize = 1024;

#[derive(Default)]
struct State {
    /// Keyed by the objects' own shared key strings (no copy per event).
    items: foldhash::HashMap<Arc<str>, Vec<Delta>>,
    queue: VecDeque<Arc<str>>,
    populated: bool,
    initial_population_count: usize,
    closed: bool,
}

impl State {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    fn queue_action(&mut self, kind: DeltaType, obj: DeltaObject) {
        let key = match &obj {
            DeltaObject::Object(o) => o.shared_key(),
            DeltaObject::DeletedFinalStateUnknown { key, .. } => Arc::from(key.as_str()),
        };
        let deltas = match self.items.get_mut(&*key) {
            Some(deltas) => deltas,
            None => {
                self.queue.push_back(key.clone());
                self.items.entry(key).or_default()
            }
        };
        deltas.push(Delta { kind, obj });
        dedup_deltas(deltas);
    }

    /// Gives back the memory of a large burst (the initial list) once it has drained; small
    /// steady-state bursts keep their capacity, so nothing is reallocated per event.
    fn shrink_if_drained(&mut self) {
        if self.queue.is_empty() && self.items.capacity() > SHRINK_ABOVE {
            self.items.shrink_to_fit();
            self.queue.shrink_to_fit();
        }
    }

    /// Marks the first population when it happens through add/update/delete.
    fn populate_by_event(&mut self, key: &str) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = usize::from(self.items.contains_key(key));
        }
    }
}

/// Collapses two trailing deletes into one, as client-go's `isDeletionDup` does: the older
/// one, unless it is a tombstone (a deletion inferred by a relist) — a real delete carries
/// the object's final state.
fn dedup_deltas(deltas: &mut Vec<Delta>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    let (older, newer) = (&deltas[n - 2], &deltas[n - 1]);
    if older.kind != DeltaType::Deleted || newer.kind != DeltaType::Deleted {
        return;
    }
    if older.obj.is_tombstone() {
        deltas.remove(n - 2);
    } else {
        deltas.pop();
    }
}

/// How a [`DeltaFifo`] is built (client-go's `DeltaFIFOOptions`).
#[derive(Clone, Default)]
pub struct DeltaFifoOptions {
    /// The objects the consumer already knows (the informer's cache): deletion detection
    /// on `replace` and `delete` consults them (client-go's `KnownObjects`).
    pub known_objects: Option<Store>,
    /// A relist queues `Replaced` rather than `Sync` deltas (client-go's
    /// `EmitDeltaTypeReplaced`).
    pub emit_delta_type_replaced: bool,
    /// Applied to each object as it enters the queue (client-go's `Transformer`).
    pub transformer: Option<Transform>,
    /// Counts panics of the transformer.
    pub panics: PanicCounter,
}

impl std::fmt::Debug for DeltaFifoOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects)
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transformer", &self.transformer.is_some())
            .finish()
    }
}

/// A queue of per-key delta lists, popped in FIFO order of keys.
#[doc(alias = "DeltaFIFO")]
pub struct DeltaFifo {
    state: Mutex<State>,
    notify: Notify,
    known: Option<Store>,
    emit_replaced: bool,
    transformer: RwLock<Option<Transform>>,
    panics: PanicCounter,
}

impl std::fmt::Debug for DeltaFifo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("DeltaFifo").field("queued", &state.queue.len()).field("synced", &state.has_synced()).finish()
    }
}

impl DeltaFifo {
    /// A queue whose deletion detection consults `known` (the informer's indexer).
    /// `emit_replaced` makes a relist queue `Replaced` rather than `Sync` deltas.
    pub fn new(known: Option<Store>, emit_replaced: bool) -> Self {
        Self::with_options(DeltaFifoOptions {
            known_objects: known,
            emit_delta_type_replaced: emit_replaced,
            ..DeltaFifoOptions::default()
        })
    }

    /// A queue built from `options` (client-go's `NewDeltaFIFOWithOptions`).
    pub fn with_options(options: DeltaFifoOptions) -> Self {
        Self {
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            known: options.known_objects,
            emit_replaced: options.emit_delta_type_replaced,
            transformer: RwLock::new(options.transformer),
            panics: options.panics,
        }
    }

    /// Installs the transformer, before the queue is fed (the informer's `set_transform`).
    pub(crate) fn set_transformer(&self, transformer: Option<Transform>) {
        *self.transformer.write() = transformer;
    }

    /// The key an object or tombstone is queued under (client-go's `KeyOf`).
    pub fn key_of(obj: &DeltaObject) -> &str {
        match obj {
            DeltaObject::Object(o) => o.key(),
            DeltaObject::DeletedFinalStateUnknown { key, .. } => key,
        }
    }

    /// Applies the transformer; a panicking one leaves the object as received.
    fn transform(&self, obj: Object) -> Object {
        let guard = self.transformer.read();
        let Some(t) = guard.as_ref() else { return obj };
        let received = obj.clone();
        match catch(|| t(obj)) {
            Ok(obj) => obj,
            Err(panic) => {
                self.panics.record();
                tracing::error!(key = %received.key(), %panic, "transform panicked; object kept as received");
                received
            }
        }
    }

    fn wake(&self) {
        self.notify.notify_one();
    }

    /// Queues an `Added` delta.
    pub fn add(&self, obj: Object) {
        let obj = self.transform(obj);
        let mut state = self.state.lock();
        let key = obj.shared_key();
        state.queue_action(DeltaType::Added, DeltaObject::Object(obj));
        state.populate_by_event(&key);
        drop(state);
        self.wake();
    }

    /// Queues an `Updated` delta.
    pub fn update(&self, obj: Object) {
        let obj = self.transform(obj);
        let mut state = self.state.lock();
        let key = obj.shared_key();
        state.queue_action(DeltaType::Updated, DeltaObject::Object(obj));
        state.populate_by_event(&key);
        drop(state);
        self.wake();
    }

    /// Queues a `Deleted` delta, unless the key is neither known nor queued (nothing to
    /// delete). Either way the queue counts as populated, as after any event.
    pub fn delete(&self, obj: Object) {
        let mut state = self.state.lock();
        let key = obj.shared_key();
        state.populate_by_event(&key);
        let known = self.known.as_ref().is_some_and(|k| k.get_by_key(&key).is_some());
        if !known && !state.items.contains_key(&*key) {
            return;
        }
        let obj = self.transform(obj);
        state.queue_action(DeltaType::Deleted, DeltaObject::Object(obj));
        drop(state);
        self.wake();
    }

    /// A relist: queues `Replaced`/`Sync` for every listed object and a
    /// `DeletedFinalStateUnknown` delete for every known or queued key missing from `list`.
    #[doc(alias = "Replace")]
    pub fn replace(&self, list: Vec<Object>, _resource_version: &str) {
        let mut state = self.state.lock();
        let kind = if self.emit_replaced { DeltaType::Replaced } else { DeltaType::Sync };
        let mut keys = HashSet::with_capacity(list.len());
        for obj in list {
            let obj = self.transform(obj);
            keys.insert(obj.key().to_owned());
            state.queue_action(kind, DeltaObject::Object(obj));
        }
        let mut deletions = 0;
        // Keys still in the queue but not listed: their newest state is the best we know.
        let queued: Vec<(String, Object)> = state
            .items
            .iter()
            .filter(|(key, _)| !keys.contains(&***key))
            .filter_map(|(key, deltas)| deltas.last().map(|d| (key.to_string(), d.obj.object().clone())))
            .collect();
        for (key, obj) in queued {
            deletions += 1;
            state.queue_action(DeltaType::Deleted, DeltaObject::DeletedFinalStateUnknown { key, obj });
        }
        if let Some(known) = &self.known {
            for key in known.list_keys() {
                if keys.contains(&key) || state.items.get(key.as_str()).is_some_and(|d| !d.is_empty()) {
                    continue;
                }
                let Some(obj) = known.get_by_key(&key) else { continue };
                deletions += 1;
                state.queue_action(DeltaType::Deleted, DeltaObject::DeletedFinalStateUnknown { key, obj });
            }
        }
        if !state.populated {
            state.populated = true;
            state.initial_population_count = keys.len() + deletions;
        }
        drop(state);
        self.wake();
    }

    /// A periodic resync: queues `Sync` for every known object whose key has no queued deltas.
    #[doc(alias = "Resync")]
    pub fn resync(&self) {
        let Some(known) = &self.known else { return };
        let mut state = self.state.lock();
        let mut queued_any = false;
        for key in known.list_keys() {
            if state.items.get(key.as_str()).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(&key) {
                state.queue_action(DeltaType::Sync, DeltaObject::Object(obj));
                queued_any = true;
            }
        }
        drop(state);
        if queued_any {
            self.wake();
        }
    }

    /// Waits for a key, removes it with its deltas and calls `process(deltas,
    /// is_in_initial_list)` with the queue locked; returns what `process` returned, or
    /// [`FifoClosed`] once closed and drained (what was queued before `close` is still
    /// popped, as in client-go). The key is gone whatever `process` does with it: nothing
    /// puts deltas back (client-go's `ErrRequeue`, which no informer of wink needs).
    pub async fn pop<T>(&self, process: impl FnOnce(Vec<Delta>, bool) -> T) -> Result<T, FifoClosed> {
        loop {
            let notified = self.notify.notified();
            {
                let mut state = self.state.lock();
                while let Some(key) = state.queue.pop_front() {
                    let Some(deltas) = state.items.remove(&*key) else { continue };
                    state.shrink_if_drained();
                    let is_in_initial_list = !state.has_synced();
                    if state.initial_population_count > 0 {
                        state.initial_population_count -= 1;
                    }
                    return Ok(process(deltas, is_in_initial_list));
                }
                if state.closed {
                    return Err(FifoClosed);
                }
            }
            notified.await;
        }
    }

    /// Closes the queue: a waiting pop, and every later one once what is queued has been
    /// popped, returns [`FifoClosed`].
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
        self.notify.notify_one();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Whether the initial population has been popped.
    #[doc(alias = "HasSynced")]
    pub fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    /// Keys with queued deltas, in pop order.
    pub fn list_keys(&self) -> Vec<String> {
        self.state.lock().queue.iter().map(|key| key.to_string()).collect()
    }

    /// The queued deltas of a key.
    pub fn deltas(&self, key: &str) -> Option<Vec<Delta>> {
        self.state.lock().items.get(key).cloned()
    }

    /// Number of keys queued.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "delta_fifo_tests.rs"]
mod tests;

//! The local API server's storage: etcd and the watch cache in one.
//!
//! - One global, increasing resourceVersion for every write of every kind (etcd's revision).
//! - Writes set what the API server sets: `uid` and `creationTimestamp` on create,
//!   `generation` (bumped when anything but metadata and status changes), `resourceVersion`
//!   on every write; a write that changes nothing is a no-op (no new resourceVersion, no
//!   event). Deleting an object with finalizers sets `deletionTimestamp`; it goes away when an
//!   update empties its finalizers.
//! - A bounded history of changes (the watch cache window and etcd's uncompacted revisions):
//!   watches resume from any resourceVersion still in it, paginated lists read a consistent
//!   snapshot at their first page's resourceVersion through it, and anything older gets
//!   `410 Expired`. [`Store::compact`] drops it all.
//! - Open watches are registered here and fed under the same lock as writes, so every watch
//!   sees changes in resourceVersion order with no gap between its replay and live events.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::resources::{Registry, ResourceDef, builtin_resources};
use super::selector::{FieldSelector, LabelSelector};
use super::wire::{bookmark_frame, decode_continue, encode_continue, event_frame};

pub(crate) use super::wire::error_frame;

/// The annotation of the bookmark that ends a streaming list's initial events.
pub(crate) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// An error answered as a `Status` (HTTP error response or watch ERROR event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into() }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    fn too_large(requested: u64, current: u64) -> Self {
        Self::new(504, "Timeout", format!("Too large resource version: {requested}, current: {current}"))
    }

    /// The `Status` object.
    pub(crate) fn status(&self) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code})
    }
}

/// An object as stored: its JSON (with and without type fields) and what filters read.
#[derive(Debug)]
pub(crate) struct Stored {
    pub resource: usize,
    pub key: String,
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub value: Value,
    /// The object as watch events and GET carry it.
    pub json: String,
    /// The object as a LIST item carries it (built-in kinds: without apiVersion and kind).
    pub list_json: String,
}

impl Stored {
    fn new(def: &ResourceDef, resource: usize, key: String, value: Value) -> Self {
        let namespace = value.pointer("/metadata/namespace").and_then(Value::as_str).map(str::to_owned);
        let labels = value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default();
        let json = value.to_string();
        let list_json = if def.builtin {
            let mut untyped = value.clone();
            if let Some(map) = untyped.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
            }
            untyped.to_string()
        } else {
            json.clone()
        };
        Self { resource, key, namespace, labels, value, json, list_json }
    }

    pub(crate) fn resource_version(&self) -> u64 {
        self.value
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    fn has_finalizers(&self) -> bool {
        self.value.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The watch event type of this change for a watch that sees the object before and after.
    fn event_type(&self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

#[derive(Debug)]
struct Change {
    rv: u64,
    resource: usize,
    kind: ChangeKind,
    /// The state before (for undoing the change when reading an older snapshot).
    prev: Option<Arc<Stored>>,
    /// The new state; for a delete, the final state stamped with the delete's resourceVersion.
    obj: Arc<Stored>,
    /// The watch event of this change, encoded once when it is recorded and shared by every
    /// watch that sends it (as the API server's watch cache shares each event's encoding
    /// among its watchers), live or replaying history.
    frame: Bytes,
}

impl Change {
    fn new(rv: u64, resource: usize, kind: ChangeKind, prev: Option<Arc<Stored>>, obj: Arc<Stored>) -> Self {
        let frame = event_frame(kind.event_type(), &obj.json);
        Self { rv, resource, kind, prev, obj, frame }
    }
}

/// What a watch connection is sent.
#[derive(Debug)]
pub(crate) enum WatchMsg {
    /// Bytes of the body (one or more whole frames, or anything a fault injects).
    Frame(Bytes),
    /// End the response normally.
    End,
    /// Break the connection without ending the response.
    Abort,
}

/// What a watch or list selects.
#[derive(Clone, Debug)]
pub(crate) struct Selection {
    pub resource: usize,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selection {
    fn matches(&self, obj: &Stored) -> bool {
        obj.resource == self.resource
            && self.namespace.as_ref().is_none_or(|ns| obj.namespace.as_ref() == Some(ns))
            && self.labels.matches(&obj.labels)
            && self.fields.matches(&obj.value)
    }
}

struct Watcher {
    selection: Selection,
    bookmarks: bool,
    tx: mpsc::UnboundedSender<WatchMsg>,
}

/// A LIST request, parsed.
pub(crate) struct ListRequest {
    pub selection: Selection,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
}

/// One page of a LIST answer.
pub(crate) struct ListPage {
    pub resource_version: u64,
    pub items: Vec<Arc<Stored>>,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// A WATCH request, parsed (after the streaming-list validation).
pub(crate) struct WatchRequest {
    pub selection: Selection,
    pub resource_version: Option<String>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
}

/// The server's objects, history and watches.
pub(crate) struct Store {
    pub registry: Registry,
    objects: Vec<BTreeMap<String, Arc<Stored>>>,
    rv: u64,
    history: VecDeque<Change>,
    history_limit: usize,
    /// Changes after this resourceVersion are all in `history`.
    floor: u64,
    watchers: Vec<Watcher>,
    rng: StdRng,
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Everything but metadata and status: a change here bumps `generation`.
fn spec_part(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    v
}

impl Store {
    pub(crate) fn new(history_limit: usize, seed: u64) -> Self {
        let mut registry = Registry::default();
        for def in builtin_resources() {
            registry.add(def).expect("built-in kinds are distinct");
        }
        let objects = vec![BTreeMap::new(); registry.len()];
        // Like etcd, the revision of a live store is never 0: an empty LIST answers with a
        // real, watchable resourceVersion.
        Self {
            registry,
            objects,
            rv: 1,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            floor: 1,
            watchers: Vec::new(),
            rng: StdRng::seed_from_u64(seed),
        }
    }

    pub(crate) fn register(&mut self, def: ResourceDef) -> Result<(), String> {
        self.registry.add(def)?;
        self.objects.push(BTreeMap::new());
        Ok(())
    }

    pub(crate) fn resource_version(&self) -> u64 {
        self.rv
    }

    pub(crate) fn resource(&self, api_version: &str, kind: &str) -> Result<usize, String> {
        self.registry
            .by_kind(api_version, kind)
            .ok_or_else(|| format!("the server does not serve {api_version} {kind}"))
    }

    pub(crate) fn objects(&self, resource: usize) -> impl Iterator<Item = &Arc<Stored>> {
        self.objects[resource].values()
    }

    pub(crate) fn get(&self, resource: usize, key: &str) -> Option<&Arc<Stored>> {
        self.objects[resource].get(key)
    }

    fn new_uid(&mut self) -> String {
        let n: u128 = self.rng.random();
        let hex = format!("{n:032x}");
        format!("{}-{}-4{}-a{}-{}", &hex[..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..])
    }

    /// Creates or updates an object; returns it as stored.
    pub(crate) fn apply(&mut self, mut value: Value) -> Result<Arc<Stored>, String> {
        let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        let resource = self.resource(&api_version, &kind)?;
        let def = self.registry.get(resource).clone();
        let meta = value.get_mut("metadata").and_then(Value::as_object_mut).ok_or("the object has no metadata")?;
        let name = meta.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or("no metadata.name")?;
        let name = name.to_owned();
        let key = if def.namespaced {
            let ns = meta.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty());
            format!("{}/{name}", ns.ok_or_else(|| format!("{kind} {name} is namespaced but has no namespace"))?)
        } else {
            meta.remove("namespace");
            name
        };
        meta.remove("resourceVersion");
        let existing = self.objects[resource].get(&key).cloned();
        match &existing {
            None => {
                let uid = self.new_uid();
                let meta = value["metadata"].as_object_mut().expect("metadata checked above");
                meta.insert("uid".into(), json!(uid));
                meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
                meta.insert("generation".into(), json!(1));
                meta.remove("deletionTimestamp");
            }
            Some(old) => {
                let old_meta = old.value["metadata"].as_object().expect("stored objects have metadata");
                let generation = old_meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
                let bump = spec_part(&old.value) != spec_part(&value);
                let meta = value["metadata"].as_object_mut().expect("metadata checked above");
                for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
                    match old_meta.get(field) {
                        Some(v) => meta.insert(field.into(), v.clone()),
                        None => meta.remove(field),
                    };
                }
                meta.insert("generation".into(), json!(generation + i64::from(bump)));
                meta.insert("resourceVersion".into(), old_meta["resourceVersion"].clone());
                if value == old.value {
                    return Ok(old.clone());
                }
            }
        }
        Ok(self.write(resource, key, value, existing))
    }

    /// Stores a new state of an object under a new resourceVersion and records the change.
    fn write(&mut self, resource: usize, key: String, mut value: Value, existing: Option<Arc<Stored>>) -> Arc<Stored> {
        self.rv += 1;
        let rv = self.rv;
        value["metadata"]["resourceVersion"] = json!(rv.to_string());
        let def = self.registry.get(resource).clone();
        let stored = Arc::new(Stored::new(&def, resource, key.clone(), value));
        let finalized = stored.value.pointer("/metadata/deletionTimestamp").is_some() && !stored.has_finalizers();
        if finalized {
            // The last finalizer is gone: the deletion completes with this write.
            self.objects[resource].remove(&key);
            self.record(Change::new(rv, resource, ChangeKind::Deleted, existing, stored.clone()));
        } else {
            self.objects[resource].insert(key, stored.clone());
            let kind = if existing.is_some() { ChangeKind::Modified } else { ChangeKind::Added };
            self.record(Change::new(rv, resource, kind, existing, stored.clone()));
        }
        stored
    }

    /// Deletes an object: at once, or by setting `deletionTimestamp` when it has finalizers.
    /// Returns the object's final (or terminating) state, or `None` if it does not exist.
    pub(crate) fn delete(&mut self, resource: usize, key: &str) -> Option<Arc<Stored>> {
        let old = self.objects[resource].get(key)?.clone();
        if old.has_finalizers() {
            if old.value.pointer("/metadata/deletionTimestamp").is_some() {
                return Some(old);
            }
            let mut value = old.value.clone();
            value["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
            value["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            return Some(self.write(resource, key.to_owned(), value, Some(old)));
        }
        self.objects[resource].remove(key);
        self.rv += 1;
        let mut value = old.value.clone();
        value["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let def = self.registry.get(resource).clone();
        let last = Arc::new(Stored::new(&def, resource, key.to_owned(), value));
        self.record(Change::new(self.rv, resource, ChangeKind::Deleted, Some(old), last.clone()));
        Some(last)
    }

    fn record(&mut self, change: Change) {
        self.watchers.retain(|w| {
            if w.selection.resource != change.resource {
                return !w.tx.is_closed();
            }
            match frame_for(&w.selection, &change) {
                Some(frame) => w.tx.send(WatchMsg::Frame(frame)).is_ok(),
                None => !w.tx.is_closed(),
            }
        });
        self.history.push_back(change);
        while self.history.len() > self.history_limit {
            if let Some(evicted) = self.history.pop_front() {
                self.floor = evicted.rv;
            }
        }
    }

    /// Forgets the history: older watches, exact lists and continue tokens get 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.floor = self.rv;
    }

    /// The objects of `resource` as they were at `rv` (which must not be newer than now).
    fn state_at(&self, resource: usize, rv: u64) -> Result<BTreeMap<String, Arc<Stored>>, ApiError> {
        if rv < self.floor {
            return Err(ApiError::expired(format!("too old resource version: {rv} ({})", self.floor)));
        }
        let mut state = self.objects[resource].clone();
        for change in self.history.iter().rev().take_while(|c| c.rv > rv).filter(|c| c.resource == resource) {
            match (&change.kind, &change.prev) {
                (ChangeKind::Added, _) => {
                    state.remove(&change.obj.key);
                }
                (_, Some(prev)) => {
                    state.insert(change.obj.key.clone(), prev.clone());
                }
                (_, None) => {}
            }
        }
        Ok(state)
    }

    fn parse_rv(text: &str) -> Result<u64, ApiError> {
        text.parse().map_err(|_| ApiError::bad_request(format!("resourceVersion: Invalid value: \"{text}\"")))
    }

    /// Answers a LIST.
    pub(crate) fn list(&self, req: &ListRequest) -> Result<ListPage, ApiError> {
        let rv_param = req.resource_version.as_deref().filter(|rv| !rv.is_empty());
        let rv_match = req.resource_version_match.as_deref().filter(|m| !m.is_empty());
        match rv_match {
            None | Some("Exact" | "NotOlderThan") => {}
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        }
        if rv_match.is_some() && rv_param.is_none() {
            return Err(ApiError::invalid("resourceVersionMatch is forbidden unless resourceVersion is provided"));
        }
        if rv_match == Some("Exact") && rv_param == Some("0") {
            return Err(ApiError::invalid("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
        let mut limit = req.limit.filter(|l| *l > 0);
        let (snapshot_rv, start) = match req.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => {
                if rv_param.is_some() {
                    return Err(ApiError::bad_request(
                        "specifying resource version is not allowed when using continue",
                    ));
                }
                let (rv, start) = decode_continue(token)?;
                if rv < self.floor {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter.",
                    ));
                }
                (rv, Some(start))
            }
            None => match rv_param {
                None => (self.rv, None),
                Some("0") => {
                    // "Any" version: served from the watch cache, which ignores `limit`.
                    limit = None;
                    (self.rv, None)
                }
                Some(text) => {
                    let rv = Self::parse_rv(text)?;
                    if rv > self.rv {
                        return Err(ApiError::too_large(rv, self.rv));
                    }
                    let exact = rv_match == Some("Exact") || (rv_match.is_none() && limit.is_some());
                    (if exact { rv } else { self.rv }, None)
                }
            },
        };
        let state = if snapshot_rv == self.rv {
            self.objects[req.selection.resource].clone()
        } else {
            self.state_at(req.selection.resource, snapshot_rv)?
        };
        let mut selected = state
            .into_iter()
            .filter(|(k, _)| start.as_ref().is_none_or(|s| k >= s))
            .filter(|(_, o)| req.selection.matches(o));
        let mut items = Vec::new();
        for (_, obj) in selected.by_ref() {
            items.push(obj);
            if limit.is_some_and(|l| items.len() >= l) {
                break;
            }
        }
        let remaining = selected.count();
        let continue_token = (remaining > 0)
            .then(|| items.last().map(|last| encode_continue(snapshot_rv, &format!("{}\u{0}", last.key))))
            .flatten();
        let unfiltered = req.selection.labels.is_empty() && req.selection.fields.is_empty();
        let remaining = (remaining > 0 && unfiltered).then_some(remaining);
        Ok(ListPage { resource_version: snapshot_rv, items, continue_token, remaining })
    }

    /// Starts a watch: queues its initial events (replayed history, synthetic adds of the
    /// current state, or an ERROR) and registers it for live changes.
    pub(crate) fn watch(&mut self, req: WatchRequest) -> Result<mpsc::UnboundedReceiver<WatchMsg>, ApiError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let def = self.registry.get(req.selection.resource).clone();
        let rv_param = req.resource_version.as_deref().filter(|rv| !rv.is_empty());
        let from = match rv_param {
            None | Some("0") => None,
            Some(text) => {
                let rv = Self::parse_rv(text)?;
                if rv > self.rv {
                    return Err(ApiError::too_large(rv, self.rv));
                }
                Some(rv)
            }
        };
        let send = |msg| {
            let _ = tx.send(msg);
        };
        if req.send_initial_events || from.is_none() {
            // Streaming list, or "get state and start at most recent": synthetic ADDED events
            // of the current state (with `sendInitialEvents`, then the end-of-initial-events
            // bookmark).
            for obj in self.objects[req.selection.resource].values().filter(|o| req.selection.matches(o)) {
                send(WatchMsg::Frame(event_frame("ADDED", &obj.json)));
            }
            if req.send_initial_events {
                send(WatchMsg::Frame(bookmark_frame(&def, self.rv, true)));
            }
        } else if let Some(from) = from {
            if from < self.floor {
                // As the watch cache does: a 200 response whose only event is a 410 ERROR.
                let error = ApiError::expired(format!("too old resource version: {from} ({})", self.floor));
                send(WatchMsg::Frame(error_frame(&error)));
                send(WatchMsg::End);
                return Ok(rx);
            }
            for change in self.history.iter().filter(|c| c.rv > from && c.resource == req.selection.resource) {
                if let Some(frame) = frame_for(&req.selection, change) {
                    send(WatchMsg::Frame(frame));
                }
            }
        }
        self.watchers.push(Watcher { selection: req.selection, bookmarks: req.bookmarks, tx });
        Ok(rx)
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that asked for them.
    pub(crate) fn bookmark_all(&mut self) -> usize {
        let rv = self.rv;
        let registry = &self.registry;
        let mut sent = 0;
        self.watchers.retain(|w| {
            if !w.bookmarks {
                return !w.tx.is_closed();
            }
            let frame = bookmark_frame(registry.get(w.selection.resource), rv, false);
            let ok = w.tx.send(WatchMsg::Frame(frame)).is_ok();
            sent += usize::from(ok);
            ok
        });
        sent
    }

    /// Sends `msgs` to every open watch, then forgets the watches if `last`.
    pub(crate) fn send_to_all_watches(&mut self, msgs: impl Fn() -> Vec<WatchMsg>, last: bool) -> usize {
        let mut reached = 0;
        self.watchers.retain(|w| {
            let ok = msgs().into_iter().all(|m| w.tx.send(m).is_ok());
            reached += usize::from(ok);
            ok && !last
        });
        reached
    }

    /// Watches whose client is still connected.
    pub(crate) fn open_watches(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        self.watchers.len()
    }
}

/// The event a watch with `selection` gets for `change`, if any: an update that moves an
/// object into the selection is an ADDED, out of it a DELETED, as the watch cache sends.
fn frame_for(selection: &Selection, change: &Change) -> Option<Bytes> {
    let now = selection.matches(&change.obj);
    let before = change.prev.as_ref().is_some_and(|p| selection.matches(p));
    let kind = match change.kind {
        ChangeKind::Added => now.then_some("ADDED"),
        ChangeKind::Modified => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
        ChangeKind::Deleted => (before || now).then_some("DELETED"),
    }?;
    if kind == change.kind.event_type() {
        return Some(change.frame.clone());
    }
    Some(event_frame(kind, &change.obj.json))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

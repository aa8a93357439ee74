//! The thread-safe, indexed object cache: client-go's `cache.Indexer`
//! (`threadSafeMap` + `storeIndex`).
//!
//! Many readers, one writer: every informer owns one [`Indexer`] and is the only code that
//! writes to it (in client-go order: a delta updates the indexer *before* it is distributed
//! to handlers); plugins and controllers read it through cloneable, read-only [`Store`]s,
//! as kube-rs splits its `reflector::store` into a `Writer` and `Store`s.
//!
//! Index functions map an object to zero or more index values. Buckets hold keys, are moved
//! when an update changes an object's values, and are removed when they become empty.
//! [`NAMESPACE_INDEX`] is always present; more indexers may be added at any time, and are
//! built for the items already cached.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::object::Object;
pub use super::store::Store;

/// Name of the built-in index from namespace to keys (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";
/// Name of the index from owner uid to owned objects' keys.
pub const OWNER_UID_INDEX: &str = "owner-uid";

/// An index function: the index values of an object.
pub type IndexFunc = Arc<dyn Fn(&Object) -> Vec<String> + Send + Sync>;

/// Errors from index queries and index registration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IndexerError {
    /// No index with this name exists.
    #[error("index `{0}` does not exist")]
    UnknownIndex(String),
    /// An index with this name already exists.
    #[error("index `{0}` already exists")]
    IndexExists(String),
}

/// The namespace index function: an object's namespace, if any.
pub fn namespace_index_func() -> IndexFunc {
    Arc::new(|obj: &Object| obj.namespace().map(|ns| vec![ns.to_owned()]).unwrap_or_default())
}

/// The owner-uid index function: the uid of each of an object's ownerReferences.
pub fn owner_uid_index_func() -> IndexFunc {
    Arc::new(|obj: &Object| obj.owner_references().iter().map(|o| o.uid.to_owned()).collect())
}

/// Keys are the objects' own shared key strings: the items map and every index bucket point
/// at one copy.
pub(super) type Key = Arc<str>;

#[derive(Default)]
pub(super) struct State {
    pub(super) items: foldhash::HashMap<Key, Object>,
    pub(super) indexers: HashMap<String, IndexFunc>,
    /// index name → index value → keys.
    pub(super) indices: HashMap<String, HashMap<String, HashSet<Key>>>,
}

impl State {
    fn update_indices(&mut self, key: &Key, old: Option<&Object>, new: Option<&Object>) {
        for (name, func) in &self.indexers {
            // The namespace is part of the key (and the name is reserved for the built-in
            // function): an object stored again under its key keeps its namespace, so an
            // update need not compute that index's values twice to find them equal.
            if name == NAMESPACE_INDEX && old.is_some() && new.is_some() {
                continue;
            }
            let old_values = old.map(|o| func(o)).unwrap_or_default();
            let new_values = new.map(|o| func(o)).unwrap_or_default();
            if old_values == new_values {
                continue;
            }
            let index = self.indices.entry(name.clone()).or_default();
            for value in old_values.iter().filter(|v| !new_values.contains(v)) {
                if let Some(bucket) = index.get_mut(value) {
                    bucket.remove(&**key);
                    if bucket.is_empty() {
                        index.remove(value);
                    }
                }
            }
            for value in new_values {
                index.entry(value).or_default().insert(key.clone());
            }
        }
    }

    fn put(&mut self, obj: Object) {
        let key = obj.shared_key();
        let old = self.items.insert(key.clone(), obj.clone());
        self.update_indices(&key, old.as_ref(), Some(&obj));
    }

    fn remove(&mut self, key: &str) -> Option<Object> {
        let old = self.items.remove(key)?;
        self.update_indices(&old.shared_key(), Some(&old), None);
        Some(old)
    }
}

/// The writing half of an indexed object cache (kube-rs's `reflector::store::Writer`).
///
/// An informer owns exactly one `Indexer` and is the only code that writes through it; it
/// hands out [`Store`]s, read-only views of the same objects that any number of consumers
/// may clone and keep. The writer reads through [`reader`](Self::reader).
#[doc(alias = "ThreadSafeStore")]
pub struct Indexer {
    store: Store,
}

impl Default for Indexer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Indexer").field(&self.store).finish()
    }
}

impl Indexer {
    /// An empty indexer with the built-in namespace index.
    pub fn new() -> Self {
        let mut state = State::default();
        state.indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
        Self { store: Store::new(state) }
    }

    /// A read-only view of this cache; it sees every later write.
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// Reads, for the writer itself.
    pub fn reader(&self) -> &Store {
        &self.store
    }

    fn write(&self) -> parking_lot::RwLockWriteGuard<'_, State> {
        self.store.state.write()
    }

    /// Adds index functions. Indexes are built for the items already stored. Fails without
    /// changing anything if a name is already registered.
    pub fn add_indexers(&self, indexers: impl IntoIterator<Item = (String, IndexFunc)>) -> Result<(), IndexerError> {
        let indexers: Vec<_> = indexers.into_iter().collect();
        let mut state = self.write();
        let mut seen = HashSet::new();
        for (name, _) in &indexers {
            if state.indexers.contains_key(name) || !seen.insert(name.clone()) {
                return Err(IndexerError::IndexExists(name.clone()));
            }
        }
        for (name, func) in indexers {
            let mut index: HashMap<String, HashSet<Key>> = HashMap::new();
            for (key, obj) in &state.items {
                for value in func(obj) {
                    index.entry(value).or_default().insert(key.clone());
                }
            }
            state.indices.insert(name.clone(), index);
            state.indexers.insert(name, func);
        }
        Ok(())
    }

    /// Adds (or replaces) an object.
    pub fn add(&self, obj: Object) {
        self.write().put(obj);
    }

    /// Updates an object (same as [`add`](Self::add): the key decides).
    pub fn update(&self, obj: Object) {
        self.write().put(obj);
    }

    /// Deletes the object with this object's key; returns what was stored.
    pub fn delete(&self, obj: &Object) -> Option<Object> {
        self.write().remove(obj.key())
    }

    /// Deletes the object stored under `key`; returns it.
    pub fn delete_key(&self, key: &str) -> Option<Object> {
        self.write().remove(key)
    }

    /// Replaces the whole content with `items`, rebuilding every index.
    pub fn replace(&self, items: impl IntoIterator<Item = Object>) {
        let mut state = self.write();
        state.items = items.into_iter().map(|o| (o.shared_key(), o)).collect();
        let mut indices = HashMap::new();
        for (name, func) in &state.indexers {
            let mut index: HashMap<String, HashSet<Key>> = HashMap::new();
            for (key, obj) in &state.items {
                for value in func(obj) {
                    index.entry(value).or_default().insert(key.clone());
                }
            }
            indices.insert(name.clone(), index);
        }
        state.indices = indices;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(ns: &str, name: &str, labels: &[(&str, &str)]) -> Object {
        let labels: serde_json::Map<_, _> = labels.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        Object::from_string(
            serde_json::json!({"kind": "Pod", "metadata": {"namespace": ns, "name": name, "labels": labels}})
                .to_string(),
        )
        .unwrap()
    }

    fn by_app() -> IndexFunc {
        Arc::new(|o: &Object| o.labels().get("app").map(str::to_owned).into_iter().collect())
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn namespace_index_is_built_in() {
        let idx = Indexer::new();
        idx.add(obj("a", "x", &[]));
        idx.add(obj("a", "y", &[]));
        idx.add(obj("b", "z", &[]));
        assert_eq!(sorted(idx.reader().index_keys(NAMESPACE_INDEX, "a").unwrap()), ["a/x", "a/y"]);
        assert_eq!(sorted(idx.reader().list_index_values(NAMESPACE_INDEX).unwrap()), ["a", "b"]);
    }

    #[test]
    fn update_moves_object_between_index_buckets_and_drops_empty_buckets() {
        let idx = Indexer::new();
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        idx.add(obj("a", "x", &[("app", "web")]));
        idx.update(obj("a", "x", &[("app", "db")]));
        assert_eq!(idx.reader().index_keys(NAMESPACE_INDEX, "a").unwrap(), ["a/x"], "an update keeps its namespace");
        assert_eq!(idx.reader().by_index("app", "web").unwrap(), vec![]);
        assert_eq!(idx.reader().index_keys("app", "db").unwrap(), ["a/x"]);
        assert_eq!(idx.reader().list_index_values("app").unwrap(), ["db"]);
        idx.delete(&obj("a", "x", &[]));
        assert!(idx.reader().list_index_values("app").unwrap().is_empty());
        assert!(idx.reader().list_index_values(NAMESPACE_INDEX).unwrap().is_empty());
    }

    #[test]
    fn index_function_may_return_several_values() {
        let idx = Indexer::new();
        let multi: IndexFunc = Arc::new(|o: &Object| o.labels().keys().map(str::to_owned).collect());
        idx.add_indexers([("label-keys".to_owned(), multi)]).unwrap();
        idx.add(obj("a", "x", &[("app", "1"), ("team", "2")]));
        idx.add(obj("a", "y", &[("team", "3")]));
        assert_eq!(sorted(idx.reader().index_keys("label-keys", "team").unwrap()), ["a/x", "a/y"]);
        assert_eq!(idx.reader().index_keys("label-keys", "app").unwrap(), ["a/x"]);
    }

    #[test]
    fn add_indexers_after_items_exist_indexes_current_items() {
        let idx = Indexer::new();
        idx.add(obj("a", "x", &[("app", "web")]));
        idx.add(obj("b", "y", &[("app", "web")]));
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        assert_eq!(sorted(idx.reader().index_keys("app", "web").unwrap()), ["a/x", "b/y"]);
        assert_eq!(idx.add_indexers([("app".to_owned(), by_app())]), Err(IndexerError::IndexExists("app".into())));
    }

    #[test]
    fn unknown_index_is_an_error() {
        let idx = Indexer::new();
        assert_eq!(idx.reader().by_index("nope", "v").unwrap_err(), IndexerError::UnknownIndex("nope".into()));
        assert!(idx.reader().list_index_values("nope").is_err());
    }

    #[test]
    fn replace_rebuilds_items_and_indexes() {
        let idx = Indexer::new();
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        idx.add(obj("a", "old", &[("app", "web")]));
        idx.replace([obj("b", "new", &[("app", "db")])]);
        assert_eq!(idx.reader().list_keys(), ["b/new"]);
        assert!(idx.reader().by_index("app", "web").unwrap().is_empty());
        assert_eq!(idx.reader().list_index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
        assert!(idx.reader().get_by_key("a/old").is_none());
        assert_eq!(idx.reader().get(&obj("b", "new", &[])).unwrap().name(), "new");
    }
}

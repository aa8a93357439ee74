//! The thread-safe, indexed object cache: client-go's `cache.Indexer`
//! (`threadSafeMap` + `storeIndex`).
//!
//! Many readers, one writer: every informer owns one [`Indexer`] and is the only code that
//! writes to it (in client-go order: a delta updates the indexer *before* it is distributed
//! to handlers); plugins and controllers read it through shared `Arc` handles.
//!
//! Index functions map an object to zero or more index values. Buckets hold keys, are moved
//! when an update changes an object's values, and are removed when they become empty.
//! [`NAMESPACE_INDEX`] is always present; more indexers may be added at any time, and are
//! built for the items already cached.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;

use super::object::Object;

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
    Arc::new(|obj: &Object| obj.meta().owner_references.iter().map(|o| o.uid.clone()).collect())
}

/// Keys are the objects' own shared key strings: the items map and every index bucket point
/// at one copy.
type Key = Arc<str>;

#[derive(Default)]
struct State {
    items: HashMap<Key, Object>,
    indexers: HashMap<String, IndexFunc>,
    /// index name → index value → keys.
    indices: HashMap<String, HashMap<String, HashSet<Key>>>,
}

impl State {
    fn update_indices(&mut self, key: &Key, old: Option<&Object>, new: Option<&Object>) {
        for (name, func) in &self.indexers {
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

/// A thread-safe store of objects by key, with named secondary indexes.
#[doc(alias = "ThreadSafeStore")]
pub struct Indexer {
    state: RwLock<State>,
}

impl Default for Indexer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.read();
        f.debug_struct("Indexer")
            .field("items", &state.items.len())
            .field("indexes", &state.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Indexer {
    /// An empty indexer with the built-in namespace index.
    pub fn new() -> Self {
        let mut state = State::default();
        state.indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
        Self { state: RwLock::new(state) }
    }

    /// Adds index functions. Indexes are built for the items already stored. Fails without
    /// changing anything if a name is already registered.
    pub fn add_indexers(&self, indexers: impl IntoIterator<Item = (String, IndexFunc)>) -> Result<(), IndexerError> {
        let indexers: Vec<_> = indexers.into_iter().collect();
        let mut state = self.state.write();
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
        self.state.write().put(obj);
    }

    /// Updates an object (same as [`add`](Self::add): the key decides).
    pub fn update(&self, obj: Object) {
        self.state.write().put(obj);
    }

    /// Deletes the object with this object's key; returns what was stored.
    pub fn delete(&self, obj: &Object) -> Option<Object> {
        self.state.write().remove(obj.key())
    }

    /// Deletes the object stored under `key`; returns it.
    pub fn delete_key(&self, key: &str) -> Option<Object> {
        self.state.write().remove(key)
    }

    /// Replaces the whole content with `items`, rebuilding every index.
    pub fn replace(&self, items: impl IntoIterator<Item = Object>) {
        let mut state = self.state.write();
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

    /// The stored object with the same key as `obj`.
    pub fn get(&self, obj: &Object) -> Option<Object> {
        self.get_by_key(obj.key())
    }

    /// The stored object with this key.
    pub fn get_by_key(&self, key: &str) -> Option<Object> {
        self.state.read().items.get(key).cloned()
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Object> {
        self.state.read().items.values().cloned().collect()
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.state.read().items.keys().map(|k| k.to_string()).collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.state.read().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects whose index `index` contains `value`.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Object>, IndexerError> {
        let state = self.state.read();
        let bucket = Self::bucket(&state, index, value)?;
        Ok(bucket.map(|keys| keys.iter().filter_map(|k| state.items.get(&**k).cloned()).collect()).unwrap_or_default())
    }

    /// The keys whose index `index` contains `value`.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.state.read();
        Ok(Self::bucket(&state, index, value)?
            .map(|keys| keys.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default())
    }

    /// Every value of index `index` that has at least one object.
    pub fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.state.read();
        if !state.indexers.contains_key(index) {
            return Err(IndexerError::UnknownIndex(index.to_owned()));
        }
        Ok(state.indices.get(index).map(|i| i.keys().cloned().collect()).unwrap_or_default())
    }

    /// The index values `index` yields for `obj` (client-go's `Index` helper input).
    pub fn index_values(&self, index: &str, obj: &Object) -> Result<Vec<String>, IndexerError> {
        let state = self.state.read();
        let func = state.indexers.get(index).ok_or_else(|| IndexerError::UnknownIndex(index.to_owned()))?;
        Ok(func(obj))
    }

    /// Whether an index with this name exists.
    pub fn has_index(&self, index: &str) -> bool {
        self.state.read().indexers.contains_key(index)
    }

    fn bucket<'s>(state: &'s State, index: &str, value: &str) -> Result<Option<&'s HashSet<Key>>, IndexerError> {
        if !state.indexers.contains_key(index) {
            return Err(IndexerError::UnknownIndex(index.to_owned()));
        }
        Ok(state.indices.get(index).and_then(|i| i.get(value)))
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
        Arc::new(|o: &Object| o.labels().get("app").cloned().into_iter().collect())
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
        assert_eq!(sorted(idx.index_keys(NAMESPACE_INDEX, "a").unwrap()), ["a/x", "a/y"]);
        assert_eq!(sorted(idx.list_index_values(NAMESPACE_INDEX).unwrap()), ["a", "b"]);
    }

    #[test]
    fn update_moves_object_between_index_buckets_and_drops_empty_buckets() {
        let idx = Indexer::new();
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        idx.add(obj("a", "x", &[("app", "web")]));
        idx.update(obj("a", "x", &[("app", "db")]));
        assert_eq!(idx.by_index("app", "web").unwrap(), vec![]);
        assert_eq!(idx.index_keys("app", "db").unwrap(), ["a/x"]);
        assert_eq!(idx.list_index_values("app").unwrap(), ["db"]);
        idx.delete(&obj("a", "x", &[]));
        assert!(idx.list_index_values("app").unwrap().is_empty());
        assert!(idx.list_index_values(NAMESPACE_INDEX).unwrap().is_empty());
    }

    #[test]
    fn index_function_may_return_several_values() {
        let idx = Indexer::new();
        let multi: IndexFunc = Arc::new(|o: &Object| o.labels().keys().cloned().collect());
        idx.add_indexers([("label-keys".to_owned(), multi)]).unwrap();
        idx.add(obj("a", "x", &[("app", "1"), ("team", "2")]));
        idx.add(obj("a", "y", &[("team", "3")]));
        assert_eq!(sorted(idx.index_keys("label-keys", "team").unwrap()), ["a/x", "a/y"]);
        assert_eq!(idx.index_keys("label-keys", "app").unwrap(), ["a/x"]);
    }

    #[test]
    fn add_indexers_after_items_exist_indexes_current_items() {
        let idx = Indexer::new();
        idx.add(obj("a", "x", &[("app", "web")]));
        idx.add(obj("b", "y", &[("app", "web")]));
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        assert_eq!(sorted(idx.index_keys("app", "web").unwrap()), ["a/x", "b/y"]);
        assert_eq!(idx.add_indexers([("app".to_owned(), by_app())]), Err(IndexerError::IndexExists("app".into())));
    }

    #[test]
    fn unknown_index_is_an_error() {
        let idx = Indexer::new();
        assert_eq!(idx.by_index("nope", "v").unwrap_err(), IndexerError::UnknownIndex("nope".into()));
        assert!(idx.list_index_values("nope").is_err());
    }

    #[test]
    fn replace_rebuilds_items_and_indexes() {
        let idx = Indexer::new();
        idx.add_indexers([("app".to_owned(), by_app())]).unwrap();
        idx.add(obj("a", "old", &[("app", "web")]));
        idx.replace([obj("b", "new", &[("app", "db")])]);
        assert_eq!(idx.list_keys(), ["b/new"]);
        assert!(idx.by_index("app", "web").unwrap().is_empty());
        assert_eq!(idx.list_index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
        assert!(idx.get_by_key("a/old").is_none());
        assert_eq!(idx.get(&obj("b", "new", &[])).unwrap().name(), "new");
    }
}

//! The reading half of an indexed object cache: a cloneable, read-only view.
//!
//! A [`Store`] is what an informer hands to consumers (controllers, plugins' cache imports,
//! tests): it sees every write of the informer's single [`Indexer`](super::indexer::Indexer)
//! and cannot write itself, so no consumer can corrupt the cache a handler relies on.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::RwLock;

use super::indexer::{IndexerError, Key, State};
use super::object::Object;

/// A read-only, cheaply cloneable view of an informer's cache (client-go's `Store` reads,
/// kube-rs's `reflector::Store`).
#[derive(Clone)]
pub struct Store {
    pub(super) state: Arc<RwLock<State>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.read();
        f.debug_struct("Store")
            .field("items", &state.items.len())
            .field("indexes", &state.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Store {
    pub(super) fn new(state: State) -> Self {
        Self { state: Arc::new(RwLock::new(state)) }
    }

    /// Whether two stores view the same cache.
    pub fn same_cache(&self, other: &Store) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
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
        let bucket = bucket(&state, index, value)?;
        Ok(bucket.map(|keys| keys.iter().filter_map(|k| state.items.get(&**k).cloned()).collect()).unwrap_or_default())
    }

    /// The keys whose index `index` contains `value`.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.state.read();
        Ok(bucket(&state, index, value)?.map(|keys| keys.iter().map(|k| k.to_string()).collect()).unwrap_or_default())
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
}

/// The keys of one index bucket; an unknown index is an error, an empty bucket is `None`.
fn bucket<'s>(state: &'s State, index: &str, value: &str) -> Result<Option<&'s HashSet<Key>>, IndexerError> {
    if !state.indexers.contains_key(index) {
        return Err(IndexerError::UnknownIndex(index.to_owned()));
    }
    Ok(state.indices.get(index).and_then(|i| i.get(value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::indexer::{Indexer, NAMESPACE_INDEX, owner_uid_index_func};

    fn pod(ns: &str, name: &str) -> Object {
        Object::from_string(
            serde_json::json!({"kind": "Pod", "metadata": {"namespace": ns, "name": name,
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u1"}]}})
            .to_string(),
        )
        .unwrap()
    }

    /// kube-rs's `reflector::store`: a reader taken before any write sees every later write
    /// of the single writer, including indexes added afterwards, and clones share the cache.
    #[test]
    fn a_store_is_a_live_read_only_view_of_its_writer() {
        let writer = Indexer::new();
        let store = writer.store();
        let clone = store.clone();
        assert!(store.is_empty());
        writer.add(pod("a", "x"));
        writer.add(pod("b", "y"));
        assert_eq!(clone.len(), 2);
        assert!(clone.get_by_key("a/x").is_some());
        assert_eq!(clone.index_keys(NAMESPACE_INDEX, "b").unwrap(), ["b/y"]);
        assert!(matches!(clone.by_index("owner", "u1"), Err(IndexerError::UnknownIndex(_))));
        writer.add_indexers([("owner".to_owned(), owner_uid_index_func())]).unwrap();
        assert_eq!(store.by_index("owner", "u1").unwrap().len(), 2);
        writer.delete_key("a/x");
        assert_eq!(store.list_keys(), ["b/y"]);
        assert!(store.same_cache(&clone) && !store.same_cache(&Indexer::new().store()));
    }
}

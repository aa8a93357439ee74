//! `wink:plugin/cache`: scoped, read-only access to the host's informer caches.
//!
//! A plugin may read a resource only if its manifest watches it (`resources:`) or grants it
//! (`cache:`), and only in the namespaces listed there (all namespaces when none are listed).
//! Everything else is answered with `not-permitted`, never with an empty result that would
//! look like "nothing there". Results are sorted by key so a plugin sees a deterministic order.
//!
//! The host finds the read-only [`Store`] of a resource through a [`CacheResolver`], which the wiring
//! layer implements over its informer factory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::informer::{IndexerError, NAMESPACE_INDEX, Object, Store, split_key};
use crate::plugin::manifest::{Manifest, ResourceRef};
use wasmtime::StoreContextMut;
use wasmtime::component::Linker;

use super::state::HasImports;
use crate::plugin::contract::bindings::cache::{CacheError, Host};
use crate::plugin::contract::bindings::types::Resource;
use crate::plugin::contract::bindings::{WitObject, WitVersion, to_wit};

/// Finds the shared cache of a resource. Implemented by the layer that owns the informers.
pub trait CacheResolver: Send + Sync {
    /// The store holding the objects of `(api_version, kind)`, if this host caches it.
    fn store(&self, api_version: &str, kind: &str) -> Option<Store>;
}

/// A resolver that knows no resource: every granted read reports that the resource is not
/// cached. Useful for `wink check` and for tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCache;

impl CacheResolver for NoCache {
    fn store(&self, _api_version: &str, _kind: &str) -> Option<Store> {
        None
    }
}

impl<F> CacheResolver for F
where
    F: Fn(&str, &str) -> Option<Store> + Send + Sync,
{
    fn store(&self, api_version: &str, kind: &str) -> Option<Store> {
        self(api_version, kind)
    }
}

/// The namespaces a plugin may read of one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceGrant {
    /// Every namespace, and cluster-scoped objects.
    All,
    /// Only objects in these namespaces.
    Only(BTreeSet<String>),
}

impl NamespaceGrant {
    fn from_list(namespaces: Option<&[String]>) -> Self {
        namespaces.map_or(Self::All, |ns| Self::Only(ns.iter().cloned().collect()))
    }

    /// Whether an object in `namespace` (`None`: cluster-scoped) may be read.
    pub fn permits(&self, namespace: Option<&str>) -> bool {
        match (self, namespace) {
            (Self::All, _) => true,
            (Self::Only(set), Some(ns)) => set.contains(ns),
            (Self::Only(_), None) => false,
        }
    }

    fn union(&mut self, other: Self) {
        match (&mut *self, other) {
            (Self::All, _) => {}
            (_, Self::All) => *self = Self::All,
            (Self::Only(a), Self::Only(b)) => a.extend(b),
        }
    }
}

/// What a plugin may read from the cache: its watched resources and its `cache:` grants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheScope {
    grants: BTreeMap<ResourceRef, NamespaceGrant>,
}

impl CacheScope {
    /// The scope a manifest grants: watched resources in their namespaces, plus `cache:`.
    /// A resource named in both gets the union of the namespaces.
    pub fn from_manifest(manifest: &Manifest) -> Self {
        let mut scope = Self::default();
        for r in &manifest.resources {
            scope.grant(r.resource(), NamespaceGrant::from_list(r.namespaces.as_deref()));
        }
        for g in &manifest.cache {
            scope.grant(g.resource(), NamespaceGrant::from_list(g.namespaces.as_deref()));
        }
        scope
    }

    /// Adds a grant (merged with any grant for the same resource).
    pub fn grant(&mut self, resource: ResourceRef, namespaces: NamespaceGrant) {
        match self.grants.get_mut(&resource) {
            Some(existing) => existing.union(namespaces),
            None => {
                self.grants.insert(resource, namespaces);
            }
        }
    }

    /// The grant for a resource, if any.
    pub fn namespaces(&self, api_version: &str, kind: &str) -> Option<&NamespaceGrant> {
        self.grants.iter().find(|(r, _)| r.api_version == api_version && r.kind == kind).map(|(_, g)| g)
    }

    /// Every granted resource.
    pub fn resources(&self) -> impl Iterator<Item = &ResourceRef> {
        self.grants.keys()
    }
}

/// The host state behind a plugin's `cache` import.
#[derive(Clone)]
pub struct CacheAccess {
    scope: Arc<CacheScope>,
    resolver: Arc<dyn CacheResolver>,
}

impl std::fmt::Debug for CacheAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheAccess").field("scope", &self.scope).finish_non_exhaustive()
    }
}

fn not_permitted(message: String) -> CacheError {
    CacheError::NotPermitted(message)
}

fn sorted_wit(mut objects: Vec<Object>, grant: &NamespaceGrant) -> Vec<WitObject> {
    objects.retain(|o| grant.permits(o.namespace()));
    objects.sort_by(|a, b| a.key().cmp(b.key()));
    objects.iter().map(to_wit).collect()
}

impl CacheAccess {
    /// Access limited to `scope`, reading indexers found by `resolver`.
    pub fn new(scope: Arc<CacheScope>, resolver: Arc<dyn CacheResolver>) -> Self {
        Self { scope, resolver }
    }

    #[cfg(test)]
    /// The scope this access enforces.
    pub fn scope(&self) -> &CacheScope {
        &self.scope
    }

    /// The grant and indexer for a resource, or why there is none.
    fn open(&self, resource: &Resource) -> Result<(&NamespaceGrant, Store), CacheError> {
        let (api_version, kind) = (&resource.api_version, &resource.kind);
        let grant = self.scope.namespaces(api_version, kind).ok_or_else(|| {
            not_permitted(format!(
                "{api_version} {kind} is neither watched nor granted by the plugin's manifest (add it under `cache:`)"
            ))
        })?;
        let indexer = self
            .resolver
            .store(api_version, kind)
            .ok_or_else(|| not_permitted(format!("{api_version} {kind} is granted but not cached by this host")))?;
        Ok((grant, indexer))
    }

    fn check_namespace(grant: &NamespaceGrant, resource: &Resource, namespace: Option<&str>) -> Result<(), CacheError> {
        if grant.permits(namespace) {
            return Ok(());
        }
        let what = match namespace {
            Some(ns) => format!("namespace `{ns}`"),
            None => "cluster-scoped objects".to_owned(),
        };
        Err(not_permitted(format!("{what} of {} {} is not granted to the plugin", resource.api_version, resource.kind)))
    }
}

impl Host for CacheAccess {
    fn get(&mut self, resource: Resource, key: String) -> Result<Option<WitObject>, CacheError> {
        let (grant, indexer) = self.open(&resource)?;
        let (namespace, _) = split_key(&key);
        Self::check_namespace(grant, &resource, namespace)?;
        Ok(indexer.get_by_key(&key).filter(|o| grant.permits(o.namespace())).map(|o| to_wit(&o)))
    }

    fn list(&mut self, resource: Resource, namespace: Option<String>) -> Result<Vec<WitObject>, CacheError> {
        let (grant, indexer) = self.open(&resource)?;
        let in_namespace = |ns: &str| indexer.by_index(NAMESPACE_INDEX, ns).unwrap_or_default();
        let objects = match (namespace.as_deref(), grant) {
            (Some(ns), _) => {
                Self::check_namespace(grant, &resource, Some(ns))?;
                in_namespace(ns)
            }
            (None, NamespaceGrant::All) => indexer.list(),
            // Without a namespace, a restricted plugin gets the objects of its namespaces.
            (None, NamespaceGrant::Only(namespaces)) => namespaces.iter().flat_map(|ns| in_namespace(ns)).collect(),
        };
        Ok(sorted_wit(objects, grant))
    }

    fn by_index(&mut self, resource: Resource, index: String, value: String) -> Result<Vec<WitObject>, CacheError> {
        let (grant, indexer) = self.open(&resource)?;
        if index == NAMESPACE_INDEX {
            Self::check_namespace(grant, &resource, Some(&value))?;
        }
        let objects = indexer.by_index(&index, &value).map_err(|e| match e {
            IndexerError::UnknownIndex(name) => CacheError::UnknownIndex(name),
            other => CacheError::UnknownIndex(other.to_string()),
        })?;
        Ok(sorted_wit(objects, grant))
    }
}

/// Defines the `cache` functions in the interface of every contract version.
pub fn link<T: HasImports>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    for version in WitVersion::ALL {
        link_version(linker, version)?;
    }
    Ok(())
}

fn link_version<T: HasImports>(linker: &mut Linker<T>, version: WitVersion) -> wasmtime::Result<()> {
    type Store<'a, T> = StoreContextMut<'a, T>;
    let mut instance = linker.instance(&version.interface("cache"))?;
    instance.func_wrap("get", |mut store: Store<'_, T>, (resource, key): (Resource, String)| {
        Ok((store.data_mut().imports_mut().cache.get(resource, key),))
    })?;
    instance.func_wrap("list", |mut store: Store<'_, T>, (resource, namespace): (Resource, Option<String>)| {
        Ok((store.data_mut().imports_mut().cache.list(resource, namespace),))
    })?;
    instance.func_wrap(
        "by-index",
        |mut store: Store<'_, T>, (resource, index, value): (Resource, String, String)| {
            Ok((store.data_mut().imports_mut().cache.by_index(resource, index, value),))
        },
    )?;
    Ok(())
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;

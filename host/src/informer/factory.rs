//! One informer per watched resource, shared: client-go's `SharedInformerFactory`.
//!
//! Asking the factory twice for the same [`ResourceKey`] returns the same informer, so every
//! handler of a resource shares one list, one watch and one cache. `start` runs the
//! informers not yet running (call it again after adding more), `wait_for_cache_sync`
//! waits until each has synced, `shutdown` stops them all and waits for their handlers to
//! finish the calls in progress.
//!
//! An informer obtained through [`InformerFactory::acquire`] lives as long as someone needs
//! it: when the last [`InformerLease`] of a resource is dropped, its informer stops (the
//! watch ends, the cache is dropped) and leaves the factory; the next `acquire` creates a
//! fresh one, which lists again. Informers obtained with `informer_for` alone are kept
//! until shutdown.

use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::indexer::{OWNER_UID_INDEX, owner_uid_index_func};
use super::list_watch::{ListerWatcher, SourceError};
use super::shared_informer::{InformerConfig, SharedIndexInformer};

/// Names a watched resource and the slice of it an informer holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey {
    /// apiVersion, e.g. `apps/v1`.
    pub api_version: String,
    /// kind, e.g. `Deployment`.
    pub kind: String,
    /// Only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Server-side label selector.
    pub label_selector: Option<String>,
    /// Server-side field selector.
    pub field_selector: Option<String>,
}

impl ResourceKey {
    /// All objects of a kind, in all namespaces.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            label_selector: None,
            field_selector: None,
        }
    }
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(sel) = &self.label_selector {
            write!(f, " labels({sel})")?;
        }
        if let Some(sel) = &self.field_selector {
            write!(f, " fields({sel})")?;
        }
        Ok(())
    }
}

/// Makes the [`ListerWatcher`] of a resource (a kube client, a directory, memory).
pub trait SourceProvider: Send + Sync + 'static {
    /// The lister-watcher of `resource`.
    fn lister_watcher(&self, resource: &ResourceKey) -> Result<Arc<dyn ListerWatcher>, SourceError>;
}

impl<F> SourceProvider for F
where
    F: Fn(&ResourceKey) -> Result<Arc<dyn ListerWatcher>, SourceError> + Send + Sync + 'static,
{
    fn lister_watcher(&self, resource: &ResourceKey) -> Result<Arc<dyn ListerWatcher>, SourceError> {
        self(resource)
    }
}

struct Entry {
    informer: SharedIndexInformer,
    task: Option<JoinHandle<()>>,
    /// Stops this informer only.
    cancel: CancellationToken,
    /// Live leases; `None`: held without leases (created by `informer_for`).
    leases: Option<usize>,
    /// Tells this informer apart from an earlier one of the same resource.
    generation: u64,
}

#[derive(Default)]
struct Informers {
    entries: HashMap<ResourceKey, Entry>,
    /// Tasks of informers stopped because no lease needed them, until they end.
    retired: Vec<JoinHandle<()>>,
    next_generation: u64,
}

/// A claim on the informer of one resource: while any lease of it lives, the informer
/// keeps running; dropping the last one stops it and removes it from the factory.
pub struct InformerLease {
    informers: Weak<Mutex<Informers>>,
    resource: ResourceKey,
    generation: u64,
    informer: SharedIndexInformer,
}

impl fmt::Debug for InformerLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerLease").field("resource", &self.resource).finish_non_exhaustive()
    }
}

impl InformerLease {
    /// The informer.
    pub fn informer(&self) -> &SharedIndexInformer {
        &self.informer
    }

    /// The resource.
    pub fn resource(&self) -> &ResourceKey {
        &self.resource
    }
}

impl Clone for InformerLease {
    fn clone(&self) -> Self {
        if let Some(informers) = self.informers.upgrade()
            && let Some(entry) = informers.lock().entries.get_mut(&self.resource)
            && entry.generation == self.generation
            && let Some(leases) = entry.leases.as_mut()
        {
            *leases += 1;
        }
        Self {
            informers: self.informers.clone(),
            resource: self.resource.clone(),
            generation: self.generation,
            informer: self.informer.clone(),
        }
    }
}

impl Drop for InformerLease {
    fn drop(&mut self) {
        let Some(informers) = self.informers.upgrade() else { return };
        let mut informers = informers.lock();
        let Some(entry) = informers.entries.get_mut(&self.resource) else { return };
        if entry.generation != self.generation {
            return;
        }
        let Some(leases) = entry.leases.as_mut() else { return };
        *leases = leases.saturating_sub(1);
        if *leases > 0 {
            return;
        }
        let Some(entry) = informers.entries.remove(&self.resource) else { return };
        entry.cancel.cancel();
        tracing::info!(informer = %self.resource, "informer no longer needed: stopped");
        informers.retired.retain(|task| !task.is_finished());
        informers.retired.extend(entry.task);
    }
}

/// Creates and runs shared informers.
#[doc(alias = "SharedInformerFactory")]
pub struct InformerFactory {
    provider: Arc<dyn SourceProvider>,
    base: InformerConfig,
    custom_resync: HashMap<ResourceKey, Duration>,
    informers: Arc<Mutex<Informers>>,
    cancel: CancellationToken,
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let informers = self.informers.lock();
        f.debug_struct("InformerFactory").field("informers", &informers.entries.keys().collect::<Vec<_>>()).finish()
    }
}

impl InformerFactory {
    /// A factory over `provider`. Informers get the `owner-uid` index besides the namespace
    /// index, and strip managedFields.
    pub fn new(provider: Arc<dyn SourceProvider>) -> Self {
        let base = InformerConfig {
            indexers: vec![(OWNER_UID_INDEX.to_owned(), owner_uid_index_func())],
            ..InformerConfig::default()
        };
        Self {
            provider,
            base,
            custom_resync: HashMap::new(),
            informers: Arc::default(),
            cancel: CancellationToken::new(),
        }
    }

    /// Sets the default resync period of informers created from now on.
    pub fn with_default_resync(mut self, period: Duration) -> Self {
        self.base.default_resync = period;
        self
    }

    /// Sets the default resync period of one resource's informer.
    pub fn with_resync_for(mut self, resource: ResourceKey, period: Duration) -> Self {
        self.custom_resync.insert(resource, period);
        self
    }

    /// Replaces the base informer configuration (name and resync are set per resource).
    pub fn with_config(mut self, config: InformerConfig) -> Self {
        self.base = config;
        self
    }

    /// The informer of `resource`, created on first use. It runs until shutdown.
    pub fn informer_for(&self, resource: &ResourceKey) -> Result<SharedIndexInformer, SourceError> {
        let mut informers = self.informers.lock();
        let entry = self.entry(&mut informers, resource)?;
        entry.leases = None;
        Ok(entry.informer.clone())
    }

    /// A lease on the informer of `resource`, created on first use: it runs while a lease
    /// of it lives (once started), and stops when the last one is dropped.
    pub fn acquire(&self, resource: &ResourceKey) -> Result<InformerLease, SourceError> {
        let mut informers = self.informers.lock();
        let entry = self.entry(&mut informers, resource)?;
        if let Some(leases) = entry.leases.as_mut() {
            *leases += 1;
        }
        Ok(InformerLease {
            informers: Arc::downgrade(&self.informers),
            resource: resource.clone(),
            generation: entry.generation,
            informer: entry.informer.clone(),
        })
    }

    fn entry<'a>(&self, informers: &'a mut Informers, resource: &ResourceKey) -> Result<&'a mut Entry, SourceError> {
        match informers.entries.entry(resource.clone()) {
            MapEntry::Occupied(entry) => Ok(entry.into_mut()),
            MapEntry::Vacant(vacant) => {
                let lw = self.provider.lister_watcher(resource)?;
                let mut config = self.base.clone();
                config.name = resource.to_string();
                if let Some(period) = self.custom_resync.get(resource) {
                    config.default_resync = *period;
                }
                let informer = SharedIndexInformer::new(lw, config)
                    .map_err(|err| SourceError::Unsupported(format!("informer {resource}: {err}")))?;
                informers.next_generation += 1;
                Ok(vacant.insert(Entry {
                    informer,
                    task: None,
                    cancel: self.cancel.child_token(),
                    leases: Some(0),
                    generation: informers.next_generation,
                }))
            }
        }
    }

    /// The informer of `resource` if it exists.
    pub fn existing(&self, resource: &ResourceKey) -> Option<SharedIndexInformer> {
        self.informers.lock().entries.get(resource).map(|e| e.informer.clone())
    }

    /// Every informer that exists.
    pub fn informers(&self) -> Vec<(ResourceKey, SharedIndexInformer)> {
        self.informers.lock().entries.iter().map(|(k, e)| (k.clone(), e.informer.clone())).collect()
    }

    /// Starts every informer that is not running yet.
    pub fn start(&self) {
        for entry in self.informers.lock().entries.values_mut() {
            if entry.task.is_none() {
                entry.task = Some(tokio::spawn(entry.informer.clone().run(entry.cancel.clone())));
            }
        }
    }

    /// Waits until every started informer has synced, or `stop` fires; returns each one's
    /// state.
    pub async fn wait_for_cache_sync(&self, stop: &CancellationToken) -> HashMap<ResourceKey, bool> {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            let states: HashMap<_, _> = self
                .informers
                .lock()
                .entries
                .iter()
                .filter(|(_, e)| e.task.is_some())
                .map(|(k, e)| (k.clone(), e.informer.has_synced()))
                .collect();
            if states.values().all(|synced| *synced) {
                return states;
            }
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => return states,
            }
        }
    }

    /// Stops every informer and waits for them (and their handlers' calls in progress).
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        let tasks: Vec<_> = {
            let mut informers = self.informers.lock();
            let mut tasks: Vec<_> = informers.entries.values_mut().filter_map(|e| e.task.take()).collect();
            tasks.append(&mut informers.retired);
            tasks
        };
        for task in tasks {
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::MemorySource;
    use crate::informer::handler::handler_fn;
    use serde_json::json;

    fn provider(sources: HashMap<String, MemorySource>) -> Arc<dyn SourceProvider> {
        Arc::new(move |r: &ResourceKey| {
            sources
                .get(&r.kind)
                .map(|s| Arc::new(s.clone()) as Arc<dyn ListerWatcher>)
                .ok_or_else(|| SourceError::Unsupported(format!("no source for {r}")))
        })
    }

    #[tokio::test(start_paused = true)]
    async fn factory_shares_one_informer_per_resource_and_syncs_them_all() {
        let pods = MemorySource::default();
        let rs = MemorySource::default();
        pods.apply(json!({"kind": "Pod", "metadata": {"namespace": "a", "name": "p",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "rs-1"}]}}))
            .unwrap();
        rs.apply(json!({"kind": "ReplicaSet", "metadata": {"namespace": "a", "name": "r", "uid": "rs-1"}})).unwrap();
        let factory = InformerFactory::new(provider([("Pod".into(), pods), ("ReplicaSet".into(), rs)].into()))
            .with_resync_for(ResourceKey::new("apps/v1", "ReplicaSet"), Duration::from_secs(30));
        let pod_key = ResourceKey::new("v1", "Pod");
        let a = factory.informer_for(&pod_key).unwrap();
        let b = factory.informer_for(&pod_key).unwrap();
        assert!(a.store().same_cache(&b.store()), "same informer for the same resource");
        let rs_informer = factory.informer_for(&ResourceKey::new("apps/v1", "ReplicaSet")).unwrap();
        assert_eq!(rs_informer.resync_check_period(), Duration::from_secs(30));
        assert!(factory.informer_for(&ResourceKey::new("v1", "Secret")).is_err());
        a.add_event_handler(handler_fn(|_| crate::informer::DONE)).unwrap();
        factory.start();
        let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
        assert_eq!(synced.len(), 2);
        assert!(synced.values().all(|s| *s));
        let owned = a.store().by_index(OWNER_UID_INDEX, "rs-1").unwrap();
        assert_eq!(owned.len(), 1, "the owner-uid index is built in");
        factory.shutdown().await;
        assert!(a.is_stopped() && rs_informer.is_stopped());
    }

    /// Polls (paused time, so no real waiting) until `condition` holds.
    async fn until(what: &str, condition: impl Fn() -> bool) {
        for _ in 0..1000 {
            if condition() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// Regression: an informer no one needed any more kept listing and watching.
    #[tokio::test(start_paused = true)]
    async fn an_informer_stops_with_its_last_lease_and_a_new_lease_lists_afresh() {
        let pods = MemorySource::default();
        pods.apply(json!({"kind": "Pod", "metadata": {"namespace": "a", "name": "p"}})).unwrap();
        let factory = InformerFactory::new(provider([("Pod".into(), pods.clone())].into()));
        let key = ResourceKey::new("v1", "Pod");
        let adds = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counting = || {
            let adds = adds.clone();
            handler_fn(move |n| {
                if matches!(n, crate::informer::Notification::Add { .. }) {
                    adds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                crate::informer::DONE
            })
        };
        let first = factory.acquire(&key).unwrap();
        let second = factory.acquire(&key).unwrap();
        let third = second.clone();
        first.informer().add_event_handler(counting()).unwrap();
        factory.start();
        until("the watch", || pods.open_watches() == 1).await;
        until("the initial add", || adds.load(std::sync::atomic::Ordering::SeqCst) == 1).await;
        let old = first.informer().clone();
        drop(first);
        drop(second);
        assert!(factory.existing(&key).is_some(), "a lease is left");
        drop(third);
        assert!(factory.existing(&key).is_none(), "the informer and its cache left the factory");
        until("the watch to end", || pods.open_watches() == 0).await;
        until("the informer to stop", || old.is_stopped()).await;

        let again = factory.acquire(&key).unwrap();
        again.informer().add_event_handler(counting()).unwrap();
        factory.start();
        until("the initial add again", || adds.load(std::sync::atomic::Ordering::SeqCst) == 2).await;
        assert_eq!(pods.list_requests().len(), 2, "a fresh list");
        until("a new watch", || pods.open_watches() == 1).await;
        factory.shutdown().await;
        assert!(again.informer().is_stopped());
    }

    #[tokio::test(start_paused = true)]
    async fn an_informer_asked_for_without_a_lease_runs_until_shutdown() {
        let pods = MemorySource::default();
        let factory = InformerFactory::new(provider([("Pod".into(), pods.clone())].into()));
        let key = ResourceKey::new("v1", "Pod");
        let informer = factory.informer_for(&key).unwrap();
        drop(factory.acquire(&key).unwrap());
        factory.start();
        until("the watch", || pods.open_watches() == 1).await;
        assert!(factory.existing(&key).is_some());
        factory.shutdown().await;
        assert!(informer.is_stopped());
    }
}

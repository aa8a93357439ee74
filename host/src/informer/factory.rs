//! One informer per watched resource, shared: client-go's `SharedInformerFactory`.
//!
//! Asking the factory twice for the same [`ResourceKey`] returns the same informer, so every
//! handler of a resource shares one list, one watch and one cache. `start` runs the
//! informers not yet running (call it again after adding more), `wait_for_cache_sync`
//! waits until each has synced, `shutdown` stops them all and waits for their handlers to
//! finish the calls in progress.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
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
}

/// Creates and runs shared informers.
#[doc(alias = "SharedInformerFactory")]
pub struct InformerFactory {
    provider: Arc<dyn SourceProvider>,
    base: InformerConfig,
    custom_resync: HashMap<ResourceKey, Duration>,
    informers: Mutex<HashMap<ResourceKey, Entry>>,
    cancel: CancellationToken,
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerFactory").field("informers", &self.informers.lock().keys().collect::<Vec<_>>()).finish()
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
            informers: Mutex::default(),
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

    /// The informer of `resource`, created on first use.
    pub fn informer_for(&self, resource: &ResourceKey) -> Result<SharedIndexInformer, SourceError> {
        let mut informers = self.informers.lock();
        if let Some(entry) = informers.get(resource) {
            return Ok(entry.informer.clone());
        }
        let lw = self.provider.lister_watcher(resource)?;
        let mut config = self.base.clone();
        config.name = resource.to_string();
        if let Some(period) = self.custom_resync.get(resource) {
            config.default_resync = *period;
        }
        let informer = SharedIndexInformer::new(lw, config);
        informers.insert(resource.clone(), Entry { informer: informer.clone(), task: None });
        Ok(informer)
    }

    /// The informer of `resource` if it was already created.
    pub fn existing(&self, resource: &ResourceKey) -> Option<SharedIndexInformer> {
        self.informers.lock().get(resource).map(|e| e.informer.clone())
    }

    /// Every informer created so far.
    pub fn informers(&self) -> Vec<(ResourceKey, SharedIndexInformer)> {
        self.informers.lock().iter().map(|(k, e)| (k.clone(), e.informer.clone())).collect()
    }

    /// Starts every informer that is not running yet.
    pub fn start(&self) {
        for entry in self.informers.lock().values_mut() {
            if entry.task.is_none() {
                entry.task = Some(tokio::spawn(entry.informer.clone().run(self.cancel.child_token())));
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
        let tasks: Vec<_> = self.informers.lock().values_mut().filter_map(|e| e.task.take()).collect();
        for task in tasks {
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::handler::handler_fn;
    use crate::source::MemorySource;
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
        assert!(Arc::ptr_eq(a.indexer(), b.indexer()), "same informer for the same resource");
        let rs_informer = factory.informer_for(&ResourceKey::new("apps/v1", "ReplicaSet")).unwrap();
        assert_eq!(rs_informer.resync_check_period(), Duration::from_secs(30));
        assert!(factory.informer_for(&ResourceKey::new("v1", "Secret")).is_err());
        a.add_event_handler(handler_fn(|_| Ok(()))).unwrap();
        factory.start();
        let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
        assert_eq!(synced.len(), 2);
        assert!(synced.values().all(|s| *s));
        let owned = a.indexer().by_index(OWNER_UID_INDEX, "rs-1").unwrap();
        assert_eq!(owned.len(), 1, "the owner-uid index is built in");
        factory.shutdown().await;
        assert!(a.is_stopped() && rs_informer.is_stopped());
    }
}

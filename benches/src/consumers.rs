//! The consumers the benchmarks compare, each over a kube client of the same local server:
//!
//! - [`WinkConsumer`]: wink's informer (the kube source, an [`InformerFactory`], one shared
//!   informer of Pods) with the handlers given — native or wasm plugins;
//! - [`KubeRsConsumer`]: kube-rs's `watcher` feeding a `reflector` store, with a no-op
//!   consumer of the stream, of `DynamicObject` (what a generic tool like wink must use) or of
//!   the typed `k8s_openapi` Pod (what a Pod-specific controller would use);
//! - [`ClientGoConsumer`]: client-go's SharedIndexInformer of typed Pods with a no-op
//!   handler, in a Go program (see [`client_go`](crate::client_go)).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use wink::informer::{EventHandler, InformerConfig, InformerFactory, ResourceKey, SharedIndexInformer};
use wink::source::KubeSource;

pub use crate::client_go::ClientGoConsumer;
use crate::track::Progress;

/// wink's informer of Pods over a kube client.
pub struct WinkConsumer {
    /// The factory (shut it down with [`WinkConsumer::stop`]).
    pub factory: Arc<InformerFactory>,
    /// The Pod informer.
    pub informer: SharedIndexInformer,
}

impl std::fmt::Debug for WinkConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WinkConsumer").finish_non_exhaustive()
    }
}

/// The Pod resource.
pub fn pods_key() -> ResourceKey {
    ResourceKey::new("v1", "Pod")
}

impl WinkConsumer {
    /// Starts an informer of Pods through `client` with `handlers` registered before start.
    /// `strip_managed_fields` is wink's default (`true`).
    pub fn start(client: kube::Client, handlers: Vec<Arc<dyn EventHandler>>, strip_managed_fields: bool) -> Self {
        let source = KubeSource::new(client);
        let mut factory = InformerFactory::new(Arc::new(source));
        if !strip_managed_fields {
            factory = factory.with_config(InformerConfig { strip_managed_fields: false, ..InformerConfig::default() });
        }
        let factory = Arc::new(factory);
        let informer = factory.informer_for(&pods_key()).expect("a Pod informer");
        for handler in handlers {
            informer.add_event_handler(handler).expect("registering a handler");
        }
        factory.start();
        Self { factory, informer }
    }

    /// Stops the informer and waits for its handlers.
    pub async fn stop(self) {
        self.factory.shutdown().await;
    }
}

/// Which object type kube-rs decodes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubeRsType {
    /// `kube::api::DynamicObject`.
    Dynamic,
    /// `k8s_openapi::api::core::v1::Pod`.
    Typed,
}

impl KubeRsType {
    /// A label for benchmark ids: `dynamic` or `typed`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Dynamic => "DynamicObject",
            Self::Typed => "Pod",
        }
    }
}

/// The store a kube-rs consumer fills.
pub enum KubeRsStore {
    /// Of `DynamicObject`s.
    Dynamic(Store<DynamicObject>),
    /// Of Pods.
    Typed(Store<Pod>),
}

impl KubeRsStore {
    /// Objects in the store.
    pub fn len(&self) -> usize {
        match self {
            Self::Dynamic(s) => s.state().len(),
            Self::Typed(s) => s.state().len(),
        }
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Runs `watcher(api, Config::default())` into `writer`'s store, optionally clearing
/// `managedFields` first, with a task that only reports progress.
fn spawn_reflector<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    progress: Arc<Progress>,
    strip_managed_fields: bool,
) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    let stream = watcher::watcher(api, watcher::Config::default()).modify(move |o: &mut K| {
        if strip_managed_fields {
            o.managed_fields_mut().clear();
        }
    });
    let stream = reflector::reflector(writer, stream);
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => observe(&progress, &event),
                Err(err) => tracing::warn!(error = %err, "kube-rs watcher error"),
            }
        }
    })
}

/// kube-rs's watcher + reflector store with a no-op consumer.
pub struct KubeRsConsumer {
    /// The store.
    pub store: KubeRsStore,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for KubeRsConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeRsConsumer").finish_non_exhaustive()
    }
}

fn observe<K: Resource>(progress: &Progress, event: &Event<K>) {
    match event {
        Event::InitApply(_) => progress.initial(),
        Event::Apply(obj) => {
            let meta = obj.meta();
            progress
                .seen(meta.name.as_deref().unwrap_or_default(), meta.resource_version.as_deref().unwrap_or_default());
        }
        Event::Delete(_) | Event::Init | Event::InitDone => {}
    }
}

impl KubeRsConsumer {
    /// Starts `watcher(api, Config::default())` into a reflector store, consumed by a task
    /// that only reports progress. With `strip_managed_fields`, the stream clears
    /// `managedFields` before the store (kube-rs's documented memory saving).
    pub fn start(client: kube::Client, kind: KubeRsType, progress: Arc<Progress>, strip_managed_fields: bool) -> Self {
        match kind {
            KubeRsType::Dynamic => {
                let resource = ApiResource::erase::<Pod>(&());
                let api: Api<DynamicObject> = Api::all_with(client, &resource);
                let writer = reflector::store::Writer::new(resource);
                let store = writer.as_reader();
                let task = spawn_reflector(api, writer, progress, strip_managed_fields);
                Self { store: KubeRsStore::Dynamic(store), task }
            }
            KubeRsType::Typed => {
                let (store, writer) = reflector::store();
                let task = spawn_reflector(Api::<Pod>::all(client), writer, progress, strip_managed_fields);
                Self { store: KubeRsStore::Typed(store), task }
            }
        }
    }

    /// Stops the watcher (drops the stream and its store writer).
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

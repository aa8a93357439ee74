//! A wink host assembled from the library, as `wink run` assembles it: a source — a
//! [`DirSource`] over a cluster folder (watched), or a [`KubeSource`] over an API server such
//! as the local [`ApiServer`](crate::apiserver::ApiServer) — one [`InformerFactory`], and a
//! [`PluginRegistry`] that loads a plugins folder and keeps watching it. Over a folder,
//! plugins' `cluster` requests go to the embedded cluster, as with `wink run`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wink::cluster::ClusterClient;
use wink::embedded::EmbeddedClient;
use wink::informer::owner_uid_index_func;
use wink::informer::{InformerConfig, InformerFactory, OWNER_UID_INDEX, ResourceKey};
use wink::plugin::ClusterContext;
use wink::plugin::{GuestPool, MetricsRegistry, PluginMetrics, PluginRegistry, PluginStatus};
use wink::source::{DirSource, KubeSource};

use crate::logs::logs;
use crate::wait::{TIMEOUT, eventually_async};

/// A running host. Stop it with [`TestHost::stop`] (dropping the test's runtime also ends it).
pub struct TestHost {
    /// The informers.
    pub factory: Arc<InformerFactory>,
    /// The deployed plugins.
    pub registry: Arc<PluginRegistry>,
    /// The plugins folder it watches.
    pub plugins: PathBuf,
    cancel: CancellationToken,
    /// The folder source, when the host runs over one (its stores are the embedded cluster).
    source: Option<Arc<DirSource>>,
}

impl TestHost {
    /// Starts a host over `cluster` with the plugins of `plugins`: every plugin there must
    /// deploy. Returns once the informers have synced; the plugins may still be receiving
    /// their initial objects (see [`TestHost::wait_synced`]).
    pub async fn start(cluster: &Path, plugins: &Path) -> Self {
        Self::start_with_client(cluster, plugins, |embedded| embedded).await
    }

    /// As [`start`](Self::start), with plugins' requests sent to what `client` makes of the
    /// embedded cluster's client (e.g. a wrapper that stalls, as a slow API server would).
    pub async fn start_with_client(
        cluster: &Path,
        plugins: &Path,
        client: impl FnOnce(Arc<dyn ClusterClient>) -> Arc<dyn ClusterClient>,
    ) -> Self {
        logs();
        let cancel = CancellationToken::new();
        let source = DirSource::open(cluster).expect("opening the cluster folder");
        source.watch(cancel.child_token()).expect("watching the cluster folder");
        let client = client(Arc::new(EmbeddedClient::new(source.clone())));
        let context = ClusterContext::new(client, false);
        let host = Self::assemble(InformerFactory::new(source.clone()), plugins, cancel, Some(context)).await;
        Self { source: Some(source), ..host }
    }

    /// Starts a host over a Kubernetes API server with the plugins of `plugins` (every one
    /// must deploy), as `wink run --kubeconfig` does, except that its informers use `config`
    /// (e.g. short backoffs, small pages; the factory's `owner-uid` index is added to its
    /// indexers). Returns once the informers have synced.
    pub async fn start_kube(source: KubeSource, config: InformerConfig, plugins: &Path) -> Self {
        Self::start_kube_with(source, config, plugins, None).await
    }

    /// As [`start_kube`](Self::start_kube), with plugins' `cluster` requests sent through
    /// `cluster` (e.g. a `KubeClient` to the same server).
    pub async fn start_kube_with(
        source: KubeSource,
        mut config: InformerConfig,
        plugins: &Path,
        cluster: Option<ClusterContext>,
    ) -> Self {
        logs();
        config.indexers.push((OWNER_UID_INDEX.to_owned(), owner_uid_index_func()));
        let factory = InformerFactory::new(Arc::new(source)).with_config(config);
        Self::assemble(factory, plugins, CancellationToken::new(), cluster).await
    }

    async fn assemble(
        factory: InformerFactory,
        plugins: &Path,
        cancel: CancellationToken,
        cluster: Option<ClusterContext>,
    ) -> Self {
        // Small pool limits (several hosts run at once in one test binary), and the tests'
        // compile cache: a Python component is compiled once per machine, not per test.
        let engine = crate::compile_cache::cached_engine();
        let factory = Arc::new(factory);
        let mut registry = PluginRegistry::new(engine, factory.clone(), MetricsRegistry::new(), GuestPool::new(2));
        if let Some(cluster) = cluster {
            registry = registry.with_cluster(cluster);
        }
        let registry = Arc::new(registry);
        let failed = registry.sync_dir(plugins).await.expect("reading the plugins folder");
        let failed: Vec<String> = failed.iter().map(ToString::to_string).collect();
        assert!(failed.is_empty(), "plugins failed to deploy: {failed:?}");
        registry.watch_dir(plugins, cancel.child_token()).expect("watching the plugins folder");
        factory.start();
        factory.wait_for_cache_sync(&cancel).await;
        Self { factory, registry, plugins: plugins.to_owned(), cancel, source: None }
    }

    /// Waits until every deployed plugin has received its initial objects.
    pub async fn wait_synced(&self) {
        let synced =
            eventually_async(TIMEOUT, || async { self.registry.status().await.iter().all(|s| s.synced) }).await;
        assert!(synced, "plugins never synced: {:?}", self.registry.status().await);
    }

    /// The status of one deployed plugin.
    pub async fn status(&self, plugin: &str) -> Option<PluginStatus> {
        self.registry.status().await.into_iter().find(|s| s.name == plugin)
    }

    /// One plugin's metrics.
    pub fn metrics(&self, plugin: &str) -> PluginMetrics {
        self.registry.metrics().plugin(plugin)
    }

    /// The plugins' metrics in the Prometheus text format, as `/metrics` serves them.
    pub fn prometheus_text(&self) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        self.registry.metrics().register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encoding the metrics");
        text
    }

    /// The resourceVersion of a Pod in the host's cache (what the plugins were last told).
    pub fn pod_rv(&self, key: &str) -> Option<String> {
        let informer = self.factory.existing(&ResourceKey::new("v1", "Pod"))?;
        informer.store().get_by_key(key).map(|o| o.resource_version().to_owned())
    }

    /// An object as the embedded cluster holds it now (hosts over a folder only).
    pub fn object(&self, api_version: &str, kind: &str, key: &str) -> Option<serde_json::Value> {
        let source = self.source.as_ref().expect("a host over a folder");
        source.objects(api_version, kind).into_iter().find(|o| o.key() == key).map(|o| o.to_value().unwrap())
    }

    /// A client of the embedded cluster, to write as a user would beside the plugins (hosts
    /// over a folder only).
    pub fn client(&self) -> EmbeddedClient {
        EmbeddedClient::new(self.source.clone().expect("a host over a folder"))
    }

    /// Every object of a kind the embedded cluster holds now (hosts over a folder only).
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<serde_json::Value> {
        let source = self.source.as_ref().expect("a host over a folder");
        source.objects(api_version, kind).iter().map(|o| o.to_value().unwrap()).collect()
    }

    /// Stops the watchers and the informers, waiting for calls in flight.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.factory.shutdown().await;
    }
}

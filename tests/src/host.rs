//! A wink host built as `wink run` builds it ([`Host`]), over a source — a [`DirSource`]
//! over a cluster folder (watched), or a [`KubeSource`] over an API server such as the local
//! [`ApiServer`](crate::apiserver::ApiServer) — with a plugins folder it keeps watching.
//! Over a folder, plugins' `cluster` requests go to the embedded cluster, as with `wink run`.
//! Test hosts share the tests' compile cache and run guests on two threads (several hosts
//! run at once in one test binary).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wink::app::{CustomSource, Host, HostBuilder, RunOptions, SourceSpec};
use wink::cluster::ClusterClient;
use wink::embedded::EmbeddedClient;
use wink::informer::{InformerConfig, InformerFactory, ResourceKey};
use wink::plugin::{PluginMetrics, PluginRegistry, PluginStatus};
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
    running: tokio::task::JoinHandle<()>,
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
        client: impl FnOnce(Arc<dyn ClusterClient>) -> Arc<dyn ClusterClient> + Send + 'static,
    ) -> Self {
        let options = Self::options(SourceSpec::Dir(cluster.to_owned()), plugins);
        Self::run(Self::builder(options).wrap_client(client), plugins).await
    }

    /// Starts a host over a Kubernetes API server with the plugins of `plugins` (every one
    /// must deploy), as `wink run --kubeconfig` does, except that its informers use `config`
    /// (e.g. short backoffs, small pages) and plugins' `cluster` requests go nowhere.
    /// Returns once the informers have synced.
    pub async fn start_kube(source: KubeSource, config: InformerConfig, plugins: &Path) -> Self {
        Self::start_kube_with(source, config, plugins, None).await
    }

    /// As [`start_kube`](Self::start_kube), with plugins' `cluster` requests sent to
    /// `cluster` (e.g. a `KubeClient` to the same server), made as the service accounts
    /// manifests name.
    pub async fn start_kube_with(
        source: KubeSource,
        config: InformerConfig,
        plugins: &Path,
        cluster: Option<Arc<dyn ClusterClient>>,
    ) -> Self {
        let options = Self::options(SourceSpec::default(), plugins);
        let custom = CustomSource { provider: Arc::new(source), client: cluster, impersonate: true };
        Self::run(Self::builder(options).source(custom).informer_config(config), plugins).await
    }

    fn options(source: SourceSpec, plugins: &Path) -> RunOptions {
        RunOptions { plugins: Some(plugins.to_owned()), watch_plugins: true, ..RunOptions::new(source) }
    }

    /// The tests' compile cache, and two guest threads.
    fn builder(options: RunOptions) -> HostBuilder {
        Host::builder(options).engine(crate::compile_cache::cached_engine()).guest_threads(2)
    }

    async fn run(builder: HostBuilder, plugins: &Path) -> Self {
        logs();
        let cancel = CancellationToken::new();
        let mut host = builder.build(cancel.clone()).await.expect("building the host");
        assert!(host.deploy_failures().is_empty(), "plugins failed to deploy: {:?}", host.deploy_failures());
        let (factory, registry) = (host.factory().clone(), host.registry().clone());
        let source = host.embedded().cloned();
        host.start().await;
        let running = tokio::spawn(async move {
            host.run().await.expect("running the host");
        });
        Self { factory, registry, plugins: plugins.to_owned(), cancel, source, running }
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
        self.running.await.expect("the host stops");
    }
}

//! A slow API server holds up only the plugin that waits on it.
//!
//! The reloader's patch goes to an API server that stalls (a wrapper around the embedded
//! cluster that answers only when the test lets it, and not before several of the plugin's
//! call deadlines have passed). Specifies that meanwhile a neighbour plugin keeps receiving
//! its events (the waiting guest thread left the pool), and that the waiting plugin does not
//! trap: time spent waiting on the cluster does not count against its CPU deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Notify;
use wink::cluster::{ClusterClient, Identity, Request, RequestError};
use wink::informer::Object;
use wink::kube::ResourceDef;
use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::wait::wait_for;

/// The reloader's call deadline in this test, and how long the server stalls at least.
const CALL_TIMEOUT: Duration = Duration::from_millis(100);
const STALL: Duration = Duration::from_millis(500);

/// An API server that holds every write until released (and at least [`STALL`]).
struct Stalled {
    inner: Arc<dyn ClusterClient>,
    entered: Notify,
    released: tokio::sync::watch::Sender<bool>,
}

#[async_trait]
impl ClusterClient for Stalled {
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        self.inner.resolve(api_version, kind).await
    }

    async fn execute(&self, request: Request, identity: Option<&Identity>) -> Result<Option<Object>, RequestError> {
        if request.kind == "Deployment" {
            let started = Instant::now();
            self.entered.notify_one();
            let _ = self.released.subscribe().wait_for(|released| *released).await;
            // The stall is the fault injected: the server answers no sooner than this.
            tokio::time::sleep(STALL.saturating_sub(started.elapsed())).await;
        }
        self.inner.execute(request, identity).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_api_server_holds_up_only_the_plugin_waiting_on_it() {
    let cluster = Cluster::new();
    cluster.write(
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {reloader.wink.dev/configmaps: settings}\nspec:\n  template: {metadata: {labels: {app: web}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {a: b}\n",
    );
    let plugins = tempfile::tempdir().unwrap();
    let reloader = wink_tests::reloader_reconcile(None)
        + "permissions:\n  - {apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}\nlimits: {callTimeout: 100ms}\n";
    install_plugin("reloader", plugins.path(), "reloader", Some(&reloader));
    install_plugin(
        "event-recorder",
        plugins.path(),
        "neighbour",
        Some("resources:\n  - {apiVersion: v1, kind: Pod}\n"),
    );
    let stalled = Arc::new(std::sync::OnceLock::<Arc<Stalled>>::new());
    let slot = stalled.clone();
    let host = TestHost::start_with_client(cluster.path(), plugins.path(), move |inner| {
        let client =
            Arc::new(Stalled { inner, entered: Notify::new(), released: tokio::sync::watch::Sender::new(false) });
        let _ = slot.set(client.clone());
        client
    })
    .await;
    let server = stalled.get().expect("the client was made").clone();
    tokio::time::timeout(Duration::from_secs(30), server.entered.notified())
        .await
        .expect("the reloader's patch arrived");

    // While the reloader waits, the neighbour gets its events.
    cluster.write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\n");
    let seen = || logs().recorded("neighbour").iter().any(|l| l.seen.key() == "shop/p");
    wait_for("the neighbour's event during the stall", seen, || logs().dump("neighbour")).await;

    server.released.send_replace(true);
    let hash = || {
        host.object("apps/v1", "Deployment", "shop/web")
            .and_then(|w| w.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash").cloned())
    };
    wait_for("the patch, once the server answers", || hash().is_some(), || logs().dump("reloader")).await;
    let metrics = host.metrics("reloader");
    assert_eq!(metrics.traps(), 0, "waiting {STALL:?} on a call deadline of {CALL_TIMEOUT:?} is no trap");
    assert_eq!(metrics.handler_errors(), (0, 0));
    host.stop().await;
}

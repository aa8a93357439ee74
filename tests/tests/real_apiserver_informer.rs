//! wink's informer (`--source kube`: [`KubeSource`] lister-watchers under a
//! [`SharedIndexInformer`]) against a real kube-apiserver and etcd
//! (`wink_tests::control_plane`). Specifies that:
//!
//! - a paged LIST then WATCH of a couple of thousand ConfigMaps, created, updated and deleted
//!   concurrently while the informer runs, ends with a cache and a handler's view equal to
//!   what a final LIST shows;
//! - a streaming list (`sendInitialEvents`) is used where the server serves it: the initial
//!   objects arrive as initial adds, and the bookmark that ends them arrives too;
//! - a real `410 Gone` (etcd compacted under an API server without a watch cache) makes the
//!   informer relist, and the relist tells a handler nothing about objects that did not
//!   change: as client-go's `processDeltas`, a relisted object whose resourceVersion is
//!   unchanged is a resync, delivered only to listeners whose resync is due;
//! - a restart of kube-apiserver mid-watch is survived, and the informer converges on what
//!   was written afterwards;
//! - a CustomResourceDefinition's objects are listed and watched once it is Established.
//!
//! Run with `cargo xtask test -- --test real_apiserver_informer`, or
//! `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver_informer`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

use wink::informer::{
    ListParams as SourceListParams, ListenerOptions, ListerWatcher, ObjectList, ResourceKey, SharedIndexInformer,
    SourceError, WatchParams, WatchStream,
};
use wink::source::{KubeListerWatcher, KubeSource};
use wink_tests::apiserver::testing::{Recorder, cache_versions, informer_config, print_logs};
use wink_tests::control_plane::ControlPlane;
use wink_tests::recorder::Seen;
use wink_tests::wait::eventually_async;

/// How long an informer may take to converge on a real server on a loaded machine.
const CONVERGE: Duration = Duration::from_secs(120);

/// How many requests the tests send at once.
const CONCURRENCY: usize = 16;

/// A running informer with one recording handler, stopped when dropped.
struct Running {
    informer: SharedIndexInformer,
    recorder: Recorder,
    gone: Arc<Mutex<Vec<String>>>,
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Starts an informer of `lw`'s resource with a recording handler (no resync) and a watch
/// error handler that keeps the `410 Gone` errors it is told about.
fn run_informer(lw: Arc<dyn ListerWatcher>, streaming: bool, watch_timeout: Option<Duration>) -> Result<Running> {
    let mut config = informer_config("real", Some(500));
    config.reflector.use_watch_list = streaming;
    config.reflector.test_only_min_watch_timeout = watch_timeout;
    let informer = SharedIndexInformer::new(lw, config)?;
    let recorder = Recorder::default();
    informer.add_event_handler_with_options(recorder.handler(), ListenerOptions::new("recorder", Duration::ZERO))?;
    let gone = Arc::new(Mutex::new(Vec::new()));
    let seen = gone.clone();
    informer.set_watch_error_handler(Arc::new(move |e: &SourceError| {
        if e.is_gone() {
            seen.lock().push(e.to_string());
        }
    }))?;
    let cancel = CancellationToken::new();
    tokio::spawn(informer.clone().run(cancel.clone()));
    Ok(Running { informer, recorder, gone, cancel })
}

/// A lister-watcher that counts the objects its LISTs answered (every page of every list).
struct Counting {
    inner: Arc<KubeListerWatcher>,
    listed: AtomicUsize,
}

#[async_trait::async_trait]
impl ListerWatcher for Counting {
    async fn list(&self, params: &SourceListParams) -> Result<ObjectList, SourceError> {
        let page = self.inner.list(params).await?;
        self.listed.fetch_add(page.items.len(), Ordering::SeqCst);
        Ok(page)
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        self.inner.watch(params).await
    }
}

/// The ConfigMaps of `namespace` in `client`'s kube source, as a lister-watcher.
fn config_maps_lw(client: &Client, namespace: &str) -> Result<Arc<KubeListerWatcher>> {
    let mut key = ResourceKey::new("v1", "ConfigMap");
    key.namespace = Some(namespace.to_owned());
    Ok(Arc::new(KubeSource::new(client.clone()).lister_watcher_for(&key)?))
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("value".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Creates ConfigMaps `prefix-<i>` for `i` in `range`, [`CONCURRENCY`] at a time.
async fn create_config_maps(api: &Api<ConfigMap>, prefix: &str, range: std::ops::Range<usize>) -> Result<()> {
    futures::stream::iter(range)
        .map(|i| async move { api.create(&PostParams::default(), &config_map(&format!("{prefix}-{i}"), "0")).await })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Sets `value` to `new` in ConfigMaps `prefix-<i>` for `i` in `range`.
async fn update_config_maps(
    api: &Api<ConfigMap>,
    prefix: &str,
    range: std::ops::Range<usize>,
    new: &str,
) -> Result<()> {
    let patch = serde_json::json!({ "data": { "value": new } });
    futures::stream::iter(range)
        .map(|i| {
            let patch = patch.clone();
            async move { api.patch(&format!("{prefix}-{i}"), &PatchParams::default(), &Patch::Merge(patch)).await }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Deletes ConfigMaps `prefix-<i>` for `i` in `range`.
async fn delete_config_maps(api: &Api<ConfigMap>, prefix: &str, range: std::ops::Range<usize>) -> Result<()> {
    futures::stream::iter(range)
        .map(|i| async move { api.delete(&format!("{prefix}-{i}"), &DeleteParams::default()).await })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// `namespace/name` → resourceVersion of everything a LIST of `api` shows now.
async fn listed<K>(api: &Api<K>) -> Result<BTreeMap<String, String>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .map(|o| {
            let meta = o.meta();
            let key = format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            );
            (key, meta.resource_version.clone().unwrap_or_default())
        })
        .collect())
}

/// Waits until the informer's cache and its handler's view both equal a LIST of `api`
/// (taken once: the callers' writes are done); fails with the differences otherwise.
async fn converges<K>(running: &Running, api: &Api<K>) -> Result<BTreeMap<String, String>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let server = listed(api).await?;
    let converged = eventually_async(CONVERGE, || async {
        cache_versions(&running.informer) == server && running.recorder.view() == server
    })
    .await;
    let (cache, view) = (cache_versions(&running.informer), running.recorder.view());
    ensure!(
        converged,
        "not converged after {CONVERGE:?}: server {} objects, cache {} ({} differ), view {} ({} differ)",
        server.len(),
        cache.len(),
        differing(&server, &cache),
        view.len(),
        differing(&server, &view)
    );
    Ok(server)
}

/// How many keys differ between two maps (missing from one, or at another version).
fn differing(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> usize {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).count()
}

/// A paged LIST and a WATCH of ~2000 ConfigMaps, half of them created before the informer
/// starts and half while it runs, with updates and deletes among them, end equal to a final
/// LIST in the cache and in the handler's view, with one list and no errors; every listed
/// object, and no other, arrives as an initial add.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_informer_lists_and_watches_thousands_to_the_final_list() -> Result<()> {
    print_logs();
    let cp = ControlPlane::shared().await?;
    let client = cp.admin_client().await?;
    let namespace = cp.namespace("informer-many").await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    create_config_maps(&api, "before", 0..1000).await?;

    let lw = Arc::new(Counting { inner: config_maps_lw(&client, &namespace)?, listed: AtomicUsize::new(0) });
    let running = run_informer(lw.clone(), false, None)?;
    let (created, updated, deleted) = tokio::join!(
        create_config_maps(&api, "during", 0..1000),
        update_config_maps(&api, "before", 0..300, "1"),
        delete_config_maps(&api, "before", 700..900),
    );
    created?;
    updated?;
    deleted?;

    let server = converges(&running, &api).await?;
    ensure!(server.len() == 1800, "the server holds {} ConfigMaps, not 1800", server.len());
    let counts = running.informer.reflector_counts();
    ensure!(counts.lists == 1 && counts.errors == 0, "one list and no errors expected: {counts:?}");
    // The list runs while the writes do, so it holds however many objects its snapshot
    // caught; each of them, and only they, arrive as initial adds.
    let listed = lw.listed.load(Ordering::SeqCst);
    let initial = running.recorder.seen().iter().filter(|s| matches!(s, Seen::Add { initial: true, .. })).count();
    ensure!(initial == listed, "{initial} objects arrived as initial adds, {listed} were listed");
    Ok(())
}

/// Whether the server answers a streaming list of `namespace`'s ConfigMaps with the bookmark
/// that ends its initial events.
async fn serves_streaming_lists(client: &Client, namespace: &str) -> Result<bool> {
    let path = format!(
        "/api/v1/namespaces/{namespace}/configmaps?watch=1&sendInitialEvents=true&\
         resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    let request = http::Request::get(path).body(Vec::new())?;
    match client.request_text(request).await {
        Ok(text) => Ok(text.contains("k8s.io/initial-events-end")),
        Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => Ok(false),
        Err(e) => Err(e).context("probing for streaming lists"),
    }
}

/// With streaming lists on, the informer syncs by one streaming list where the server serves
/// them (it never falls back to LIST): every object arrives as an initial add, and the
/// bookmark ending the initial events syncs it on that one watch; where the server does not,
/// it falls back to LIST and syncs all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_informer_syncs_by_a_streaming_list_where_served() -> Result<()> {
    print_logs();
    let cp = ControlPlane::shared().await?;
    let client = cp.admin_client().await?;
    let namespace = cp.namespace("informer-stream").await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    create_config_maps(&api, "streamed", 0..300).await?;
    let served = serves_streaming_lists(&client, &namespace).await?;

    let lw = config_maps_lw(&client, &namespace)?;
    let running = run_informer(lw.clone(), true, None)?;
    ensure!(eventually_async(CONVERGE, || async { running.informer.has_synced() }).await, "the informer did not sync");
    let server = converges(&running, &api).await?;
    ensure!(server.len() == 300, "the server holds {} ConfigMaps", server.len());
    ensure!(lw.watch_list_unsupported() != served, "served: {served}, yet the lister-watcher fell back: {}", !served);
    let seen = running.recorder.seen();
    ensure!(
        seen.len() == 300 && seen.iter().all(|s| matches!(s, Seen::Add { initial: true, .. })),
        "expected 300 initial adds, got {seen:?}"
    );
    let counts = running.informer.reflector_counts();
    ensure!(counts.lists == 1 && counts.errors == 0, "one (streaming) list and no errors expected: {counts:?}");
    // Served: the informer synced on the bookmark ending the initial events and went on
    // watching the same stream (a fallback would have listed and opened a second watch).
    if served {
        ensure!(counts.watches == 1, "the streaming list was not the informer's only watch: {counts:?}");
    }
    Ok(())
}

/// Under an API server without a watch cache (its watches read etcd), an etcd compaction
/// past the informer's resourceVersion answers its next watch `410 Gone`: the informer
/// relists, stays equal to the server, and its handler (no resync) is told nothing about
/// the relisted objects that did not change; a change made afterwards still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_informer_relists_after_a_compaction_answers_gone() -> Result<()> {
    print_logs();
    let cp = ControlPlane::start_with(&["--watch-cache=false"]).await?;
    let client = cp.admin_client().await?;
    let namespace = cp.namespace("informer-gone").await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    create_config_maps(&api, "kept", 0..50).await?;
    // Watches end every 2-4 s, so the next one starts from the informer's resourceVersion.
    let running = run_informer(config_maps_lw(&client, &namespace)?, false, Some(Duration::from_secs(2)))?;
    converges(&running, &api).await?;
    let before = running.recorder.seen().len();

    // Writes the informer does not watch move etcd's revision past the informer's.
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    for i in 0..3 {
        let secret = Secret {
            metadata: ObjectMeta { name: Some(format!("s{i}")), ..ObjectMeta::default() },
            ..Secret::default()
        };
        secrets.create(&PostParams::default(), &secret).await?;
    }
    cp.compact_etcd().await?;
    let relisted = eventually_async(CONVERGE, || async { running.informer.reflector_counts().lists >= 2 }).await;
    ensure!(relisted, "no relist after the compaction: {:?}", running.informer.reflector_counts());
    ensure!(!running.gone.lock().is_empty(), "the relist was not caused by a 410 Gone");

    update_config_maps(&api, "kept", 0..1, "after").await?;
    converges(&running, &api).await?;
    let after: Vec<Seen> = running.recorder.seen().split_off(before);
    let key = format!("{namespace}/kept-0");
    ensure!(
        after.len() == 1
            && matches!(&after[0], Seen::Update { key: k, old_rv, new_rv } if *k == key && old_rv != new_rv),
        "after the relist the handler should hear only of the one change, heard {after:?}"
    );
    Ok(())
}

/// kube-apiserver restarted under a running informer: its watch breaks and the informer
/// watches (or relists) again once the server is back, and converges on what is written
/// afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_informer_converges_after_an_apiserver_restart() -> Result<()> {
    print_logs();
    let mut cp = ControlPlane::start().await?;
    let client = cp.admin_client().await?;
    let namespace = cp.namespace("informer-restart").await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    create_config_maps(&api, "old", 0..200).await?;
    let running = run_informer(config_maps_lw(&client, &namespace)?, false, None)?;
    converges(&running, &api).await?;
    let watches = running.informer.reflector_counts().watches;

    cp.restart_apiserver().await?;
    let api = Api::<ConfigMap>::namespaced(cp.admin_client().await?, &namespace);
    let (created, updated, deleted) = tokio::join!(
        create_config_maps(&api, "new", 0..100),
        update_config_maps(&api, "old", 0..50, "1"),
        delete_config_maps(&api, "old", 150..200),
    );
    created?;
    updated?;
    deleted?;
    let server = converges(&running, &api).await?;
    ensure!(server.len() == 250, "the server holds {} ConfigMaps", server.len());
    let counts = running.informer.reflector_counts();
    ensure!(counts.watches > watches, "the restart went unnoticed: {counts:?}");
    Ok(())
}

/// The objects of a CustomResourceDefinition created by the test are listed and watched
/// once it is Established: creates, updates and deletes end equal to a final LIST.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_informer_watches_a_custom_resources_objects() -> Result<()> {
    print_logs();
    let cp = ControlPlane::shared().await?;
    let client = cp.admin_client().await?;
    let namespace = cp.namespace("informer-crd").await?;
    let group = format!("g{:08x}.wink.test", rand::random::<u32>());
    create_established_crd(&client, &group).await?;

    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&group, "v1", "Gadget"));
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &resource);
    let gadget = |i: usize| -> Result<DynamicObject> {
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": format!("{group}/v1"), "kind": "Gadget",
            "metadata": { "name": format!("gadget-{i}") }, "spec": { "size": i },
        }))?)
    };
    for i in 0..20 {
        api.create(&PostParams::default(), &gadget(i)?).await?;
    }
    let mut key = ResourceKey::new(format!("{group}/v1"), "Gadget");
    key.namespace = Some(namespace.clone());
    let lw = Arc::new(KubeSource::new(client.clone()).lister_watcher_for(&key)?);
    let running = run_informer(lw, false, None)?;
    for i in 20..40 {
        api.create(&PostParams::default(), &gadget(i)?).await?;
    }
    for i in 0..10 {
        let patch = serde_json::json!({ "spec": { "size": 100 + i } });
        api.patch(&format!("gadget-{i}"), &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    for i in 30..40 {
        api.delete(&format!("gadget-{i}"), &DeleteParams::default()).await?;
    }
    let server = converges(&running, &api).await?;
    ensure!(server.len() == 30, "the server holds {} Gadgets", server.len());
    Ok(())
}

/// Creates CRD `gadgets.<group>` (namespaced `Gadget`, `v1`, any fields) and waits until it
/// is Established.
async fn create_established_crd(client: &Client, group: &str) -> Result<()> {
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("gadgets.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } },
            }],
        },
    }))?;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.create(&PostParams::default(), &crd).await?;
    let name = format!("gadgets.{group}");
    let established = eventually_async(CONVERGE, || async {
        crds.get(&name)
            .await
            .ok()
            .and_then(|crd| crd.status)
            .and_then(|s| s.conditions)
            .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Established" && c.status == "True"))
    })
    .await;
    ensure!(established, "CRD {name} was not Established");
    Ok(())
}

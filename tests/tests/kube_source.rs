//! The kube source against the local API server, through the real kube client: paged lists,
//! watch resumption, relists after 410 with tombstones, bookmarks, 429/500 backoff, scopes,
//! custom resources, split and malformed frames, large objects, streaming lists and their
//! fallback, selectors.
//!
//! Run with `cargo test -p wink-tests --test kube_source`. These tests run in real time
//! against a real HTTP server: they never assert on timings, they poll for conditions with a
//! generous deadline ([`eventually`]).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wink::informer::{
    InformerConfig, ListParams, ListerWatcher, ResourceKey, SharedIndexInformer, SourceError, WatchEvent, WatchParams,
};
use wink::source::KubeSource;
use wink_tests::apiserver::testing::{Recorder, cache_versions, informer_config, kube_source, print_logs};
use wink_tests::apiserver::{ApiServer, ResourceDef, ServerOptions, Verb, WatchListSupport};
use wink_tests::recorder::Seen;
use wink_tests::wait::{TIMEOUT, until};

fn cm(ns: &str, name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name}, "data": {"d": data}})
}

/// An informer over the server, with one recording handler, running until dropped.
struct Running {
    informer: SharedIndexInformer,
    recorder: Recorder,
    _stop: tokio_util::sync::DropGuard,
}

async fn run(server: &ApiServer, key: ResourceKey, config: InformerConfig) -> Running {
    print_logs();
    let source = kube_source(server).await;
    let lw = source.lister_watcher_for(&key).expect("valid resource");
    let informer = SharedIndexInformer::new(Arc::new(lw), config).unwrap();
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.handler()).unwrap();
    let cancel = CancellationToken::new();
    tokio::spawn(informer.clone().run(cancel.clone()));
    Running { informer, recorder, _stop: cancel.drop_guard() }
}

async fn synced(running: &Running) {
    until("the informer to sync", TIMEOUT, || running.informer.has_synced()).await;
}

async fn converged(server: &ApiServer, running: &Running, api_version: &str, kind: &str) {
    until(format!("the cache and handler to equal the server's {kind}s"), TIMEOUT, || {
        let truth = server.versions(api_version, kind);
        cache_versions(&running.informer) == truth && running.recorder.view() == truth
    })
    .await;
}

fn configmaps() -> ResourceKey {
    ResourceKey::new("v1", "ConfigMap")
}

fn adds_per_key(recorder: &Recorder) -> std::collections::BTreeMap<String, usize> {
    let mut adds = std::collections::BTreeMap::new();
    for seen in recorder.seen() {
        if let Seen::Add { key, .. } = seen {
            *adds.entry(key).or_insert(0) += 1;
        }
    }
    adds
}

/// Every update of a key continues from the state the handler last saw: nothing was missed.
fn assert_update_chains_unbroken(recorder: &Recorder) {
    let mut last: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for seen in recorder.seen() {
        if let Seen::Update { key, old_rv, .. } = &seen {
            assert_eq!(last.get(key), Some(old_rv), "update of {key} does not follow the last state seen");
        }
        seen.apply_to(&mut last);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paged_list_sends_limit_and_continue_and_syncs_everything() {
    let server = ApiServer::start().await.unwrap();
    for i in 0..7 {
        server.apply(cm("ns", &format!("c{i}"), "x")).unwrap();
    }
    // The list at version "0" answers 410, so the reflector lists again as a consistent
    // read, which the server pages.
    server.fail_next(&[Verb::List], 1, 410);
    let running = run(&server, configmaps(), informer_config("cm", Some(3))).await;
    synced(&running).await;
    converged(&server, &running, "v1", "ConfigMap").await;
    let lists = server.requests_of(Verb::List);
    assert_eq!(lists.len(), 4, "a failed list, then 7 objects in pages of 3: {lists:#?}");
    assert_eq!(lists[0].param("resourceVersion"), Some("0"));
    let pages = &lists[1..];
    assert!(pages.iter().all(|r| r.path == "/api/v1/configmaps" && r.param("limit") == Some("3")));
    assert!(pages.iter().all(|r| r.param("resourceVersion").is_none()), "a consistent read: {pages:#?}");
    assert_eq!(pages[0].param("continue"), None);
    assert!(pages[1].param("continue").is_some() && pages[2].param("continue").is_some());
    assert_ne!(pages[1].param("continue"), pages[2].param("continue"));
    let initial: Vec<_> =
        running.recorder.seen().into_iter().filter(|s| matches!(s, Seen::Add { initial: true, .. })).collect();
    assert_eq!(initial.len(), 7);
    // The informer then watches from the list's resourceVersion, with bookmarks.
    until("a watch", TIMEOUT, || !server.requests_of(Verb::Watch).is_empty()).await;
    let watch = &server.requests_of(Verb::Watch)[0];
    assert_eq!(watch.param("resourceVersion"), Some(server.resource_version().to_string().as_str()));
    assert_eq!(watch.param("allowWatchBookmarks"), Some("true"));
    assert!(watch.param("timeoutSeconds").is_some());
    // Discovery resolved the kind with one request.
    assert_eq!(server.requests_of(Verb::Discovery).iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/api/v1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_from_the_last_resource_version_after_a_dropped_connection() {
    let server = ApiServer::start().await.unwrap();
    for i in 0..3 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    let running = run(&server, configmaps(), informer_config("cm", Some(500))).await;
    synced(&running).await;
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    server.apply(cm("ns", "c0", "1")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    let before_drop = server.resource_version();

    // Disconnect, and change things while the client is kept away (its re-watches are
    // throttled with 429, which re-watches rather than relists).
    server.set_retry_after(0);
    server.fail_next(&[Verb::Watch], usize::MAX, 429);
    assert_eq!(server.drop_watches(), 1);
    server.apply(cm("ns", "c1", "1")).unwrap();
    server.apply(cm("ns", "c1", "2")).unwrap();
    server.apply(cm("ns", "c3", "new")).unwrap();
    server.delete("v1", "ConfigMap", "ns/c2").unwrap();
    until("a failed re-watch", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 2).await;
    server.clear_failures();
    converged(&server, &running, "v1", "ConfigMap").await;

    let watches = server.requests_of(Verb::Watch);
    assert!(watches.len() >= 3);
    let resumed = before_drop.to_string();
    assert!(
        watches[1..].iter().all(|w| w.param("resourceVersion") == Some(resumed.as_str())),
        "resumed, not restarted"
    );
    assert_eq!(server.requests_of(Verb::List).len(), 1, "no relist");
    assert!(
        adds_per_key(&running.recorder).values().all(|n| *n == 1),
        "no duplicate adds: {:?}",
        running.recorder.seen()
    );
    assert_update_chains_unbroken(&running.recorder);
    let deletes = running.recorder.seen_for("ns/c2");
    assert!(matches!(deletes.last(), Some(Seen::Delete { unknown: false, .. })), "a real delete event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_410_delivers_tombstones_for_deletes_missed_while_disconnected() {
    let server = ApiServer::start().await.unwrap();
    for i in 0..5 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    let running = run(&server, configmaps(), informer_config("cm", Some(2))).await;
    synced(&running).await;
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;

    server.fail_next(&[Verb::Watch], usize::MAX, 500);
    server.drop_watches();
    server.delete("v1", "ConfigMap", "ns/c1").unwrap();
    server.delete("v1", "ConfigMap", "ns/c3").unwrap();
    server.apply(cm("ns", "c4", "1")).unwrap();
    server.compact();
    until("a failed re-watch", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 2).await;
    server.clear_failures();
    converged(&server, &running, "v1", "ConfigMap").await;

    for key in ["ns/c1", "ns/c3"] {
        let seen = running.recorder.seen_for(key);
        assert!(
            matches!(seen.last(), Some(Seen::Delete { unknown: true, .. })),
            "{key}: the missed delete is inferred on relist: {seen:?}"
        );
    }
    // The first list asks for version "0" (the watch cache ignores the limit); the relist
    // asks for the last synced version, unpaged, as client-go's reflector.
    let lists = server.requests_of(Verb::List);
    assert!(lists.len() >= 2, "relisted: {lists:#?}");
    assert_eq!(lists[0].param("resourceVersion"), Some("0"));
    let relist = lists.last().unwrap();
    assert!(relist.param("resourceVersion").is_some_and(|rv| rv != "0"), "{relist:?}");
    assert_eq!(relist.param("limit"), None);
    assert_update_chains_unbroken(&running.recorder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_advance_the_resource_version_without_events() {
    let server =
        ApiServer::start_with(ServerOptions { bookmark_interval: None, ..ServerOptions::default() }).await.unwrap();
    server.apply(cm("ns", "a", "0")).unwrap();
    let running = run(&server, configmaps(), informer_config("cm", Some(500))).await;
    synced(&running).await;
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    // Changes to another kind move the global resourceVersion; this watch sees no event.
    for i in 0..3 {
        server
            .apply(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "ns", "name": format!("s{i}")}}),
            )
            .unwrap();
    }
    let target = server.resource_version().to_string();
    assert_ne!(running.informer.last_sync_resource_version(), target);
    assert_eq!(server.bookmark_now(), 1);
    until("the bookmark to advance the resourceVersion", TIMEOUT, || {
        running.informer.last_sync_resource_version() == target
    })
    .await;
    assert_eq!(running.recorder.seen().len(), 1, "a bookmark is not an event");
    // A re-watch resumes from the bookmark.
    server.drop_watches();
    until("a second watch", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 2).await;
    assert_eq!(server.requests_of(Verb::Watch)[1].param("resourceVersion"), Some(target.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_429_and_500_are_retried_with_backoff_until_convergence() {
    let server = ApiServer::start().await.unwrap();
    server.set_retry_after(0);
    for i in 0..4 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    server.fail_next(&[Verb::List], 3, 500);
    server.fail_next(&[Verb::Watch], 2, 429);
    server.fail_next(&[Verb::Watch], 2, 500);
    let running = run(&server, configmaps(), informer_config("cm", Some(500))).await;
    synced(&running).await;
    server.apply(cm("ns", "c9", "late")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    // A relist can deliver the late object while the last failing watch is still to come.
    until("every injected failure served", TIMEOUT, || server.pending_failures() == 0).await;
    // A watch refused with 429 is retried as a watch; one failing with 500 relists, as
    // client-go's ListAndWatch returning does.
    until("a relist after each watch failing with 500", TIMEOUT, || server.requests_of(Verb::List).len() >= 6).await;
    assert_eq!(
        server.requests_of(Verb::List).len(),
        6,
        "three failed lists, one that worked, and a relist after each watch failing with 500"
    );
    // The watch after the last relist may still be on its way.
    until("four failed watches, then one that worked", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_namespaced_and_grouped_resources() {
    let server = ApiServer::start().await.unwrap();
    for ns in ["a", "b"] {
        server.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})).unwrap();
        server.apply(cm(ns, "c", ns)).unwrap();
        server
            .apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"namespace": ns, "name": "web"}, "spec": {"replicas": 1}}))
            .unwrap();
    }
    let namespaces = run(&server, ResourceKey::new("v1", "Namespace"), informer_config("ns", Some(10))).await;
    let mut in_a = configmaps();
    in_a.namespace = Some("a".into());
    let configmaps_a = run(&server, in_a, informer_config("cm-a", Some(10))).await;
    let deployments =
        run(&server, ResourceKey::new("apps/v1", "Deployment"), informer_config("deploy", Some(10))).await;
    converged(&server, &namespaces, "v1", "Namespace").await;
    converged(&server, &deployments, "apps/v1", "Deployment").await;
    until("configmaps of namespace a", TIMEOUT, || {
        let truth: std::collections::BTreeMap<_, _> =
            server.versions("v1", "ConfigMap").into_iter().filter(|(k, _)| k.starts_with("a/")).collect();
        cache_versions(&configmaps_a.informer) == truth
    })
    .await;
    let mut keys = namespaces.informer.store().list_keys();
    keys.sort();
    assert_eq!(keys, ["a", "b"], "cluster-scoped keys are names");
    let paths: std::collections::BTreeSet<_> = server.requests_of(Verb::List).into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths.into_iter().collect::<Vec<_>>(),
        ["/api/v1/namespaces", "/api/v1/namespaces/a/configmaps", "/apis/apps/v1/deployments"]
    );
    // Built-in kinds' list items lack apiVersion/kind on the wire; the source adds them.
    let deployment = deployments.informer.store().get_by_key("a/web").unwrap();
    assert_eq!((deployment.meta().api_version, deployment.meta().kind), ("apps/v1", "Deployment"));
    // A cluster-scoped kind cannot be watched in a namespace.
    let source = kube_source(&server).await;
    let mut bad = ResourceKey::new("v1", "Namespace");
    bad.namespace = Some("a".into());
    let err = source.lister_watcher_for(&bad).unwrap().list(&ListParams::default()).await.unwrap_err();
    assert!(matches!(err, SourceError::Api(ref s) if s.code == 400), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_found_by_discovery_even_when_installed_late() {
    let server = ApiServer::start().await.unwrap();
    server.register(ResourceDef::custom("example.com/v1", "Widget", "widgets", true)).unwrap();
    server
        .apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"namespace": "ns", "name": "w1"}, "spec": {"size": 3}}))
        .unwrap();
    let widgets =
        run(&server, ResourceKey::new("example.com/v1", "Widget"), informer_config("widgets", Some(10))).await;
    // A cluster-scoped custom kind whose CRD is not installed yet.
    let gadgets =
        run(&server, ResourceKey::new("example.com/v1alpha1", "Gadget"), informer_config("gadgets", Some(10))).await;
    converged(&server, &widgets, "example.com/v1", "Widget").await;
    let w1 = widgets.informer.store().get_by_key("ns/w1").unwrap();
    assert_eq!(w1.meta().kind, "Widget");
    assert_eq!(w1.meta().generation, Some(1));
    until("discovery of the missing kind to fail at least once", TIMEOUT, || {
        server.requests().iter().filter(|r| r.path == "/apis/example.com/v1alpha1").count() >= 2
    })
    .await;
    assert!(!gadgets.informer.has_synced());
    server.register(ResourceDef::custom("example.com/v1alpha1", "Gadget", "gadgets", false)).unwrap();
    server.apply(json!({"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": {"name": "g1"}})).unwrap();
    converged(&server, &gadgets, "example.com/v1alpha1", "Gadget").await;
    assert!(server.requests_of(Verb::List).iter().any(|r| r.path == "/apis/example.com/v1alpha1/gadgets"));
    server
        .apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"namespace": "ns", "name": "w1"}, "spec": {"size": 4}}))
        .unwrap();
    converged(&server, &widgets, "example.com/v1", "Widget").await;
    assert_eq!(widgets.informer.store().get_by_key("ns/w1").unwrap().meta().generation, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_frames_and_a_malformed_frame_are_survived() {
    let server = ApiServer::start().await.unwrap();
    server.set_split_frames(true);
    let running = run(&server, configmaps(), informer_config("cm", Some(500))).await;
    synced(&running).await;
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    for round in 0..3 {
        for i in 0..10 {
            server.apply(cm("ns", &format!("c{i}"), &round.to_string())).unwrap();
        }
    }
    converged(&server, &running, "v1", "ConfigMap").await;
    assert_eq!(server.requests_of(Verb::Watch).len(), 1, "split frames are reassembled on the same watch");

    let at = server.resource_version().to_string();
    assert_eq!(server.send_malformed_frame(), 1);
    until("a re-watch after the malformed frame", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 2).await;
    assert_eq!(server.requests_of(Verb::Watch)[1].param("resourceVersion"), Some(at.as_str()));
    server.delete("v1", "ConfigMap", "ns/c0").unwrap();
    server.apply(cm("ns", "c1", "after")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    assert!(adds_per_key(&running.recorder).values().all(|n| *n == 1));
    assert_update_chains_unbroken(&running.recorder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_megabyte_object_arrives_whole_by_list_and_by_watch() {
    let server = ApiServer::start().await.unwrap();
    server.set_split_frames(true);
    let blob = "x".repeat(2 << 20);
    server.apply(cm("ns", "big", &blob)).unwrap();
    let running = run(&server, configmaps(), informer_config("cm", Some(500))).await;
    converged(&server, &running, "v1", "ConfigMap").await;
    let listed = running.informer.store().get_by_key("ns/big").unwrap();
    assert!(listed.json().len() > 2 << 20);
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    let bigger = format!("{blob}yy");
    server.apply(cm("ns", "big", &bigger)).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    let watched = running.informer.store().get_by_key("ns/big").unwrap();
    assert_eq!(watched.pointer("/data/d").and_then(|v| v.as_str().map(str::len)), Some(bigger.len()));
    assert_eq!(server.requests_of(Verb::Watch).len(), 1);
}

fn watch_list_config() -> InformerConfig {
    let mut config = informer_config("cm", Some(500));
    config.reflector.use_watch_list = true;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_is_used_when_the_server_supports_it() {
    let server = ApiServer::start().await.unwrap();
    for i in 0..4 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    let running = run(&server, configmaps(), watch_list_config()).await;
    synced(&running).await;
    server.apply(cm("ns", "c0", "1")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    assert!(server.requests_of(Verb::List).is_empty(), "no LIST at all");
    let first = &server.requests_of(Verb::Watch)[0];
    assert_eq!(first.param("sendInitialEvents"), Some("true"));
    assert_eq!(first.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(first.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(first.param("resourceVersion"), None);
    let initial = running.recorder.seen().iter().filter(|s| matches!(s, Seen::Add { initial: true, .. })).count();
    assert_eq!(initial, 4);
}

async fn assert_falls_back_to_list(support: WatchListSupport) {
    let server = ApiServer::start().await.unwrap();
    server.set_watch_list(support);
    for i in 0..4 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    let running = run(&server, configmaps(), watch_list_config()).await;
    if support == WatchListSupport::Ignored {
        // Such a server only betrays itself with an ordinary bookmark during the "initial events".
        until("the streaming attempt", TIMEOUT, || server.open_watches() == 1).await;
        server.bookmark_now();
    }
    synced(&running).await;
    server.apply(cm("ns", "c0", "1")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    assert_eq!(server.requests_of(Verb::List).len(), 1, "{support:?}: fell back to LIST");
    let watches = server.requests_of(Verb::Watch);
    assert_eq!(watches.iter().filter(|w| w.param("sendInitialEvents").is_some()).count(), 1, "tried streaming once");
    assert!(watches.last().is_some_and(|w| w.param("sendInitialEvents").is_none()));
    assert!(adds_per_key(&running.recorder).values().all(|n| *n == 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_falls_back_to_list_when_the_server_rejects_it() {
    assert_falls_back_to_list(WatchListSupport::Rejected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_falls_back_to_list_when_the_server_ignores_it() {
    assert_falls_back_to_list(WatchListSupport::Ignored).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_and_field_selectors_are_applied_server_side() {
    let server = ApiServer::start().await.unwrap();
    let labelled = |name: &str, app: &str, tier: &str| {
        let mut obj = cm("ns", name, "0");
        obj["metadata"]["labels"] = json!({"app": app, "tier": tier});
        obj
    };
    server.apply(labelled("web-1", "web", "front")).unwrap();
    server.apply(labelled("web-2", "web", "back")).unwrap();
    server.apply(labelled("skip", "web", "front")).unwrap();
    server.apply(labelled("db", "db", "front")).unwrap();
    let mut key = configmaps();
    key.label_selector = Some("app=web,tier in (front)".into());
    key.field_selector = Some("metadata.name!=skip".into());
    let running = run(&server, key, informer_config("cm", Some(500))).await;
    synced(&running).await;
    assert_eq!(running.informer.store().list_keys(), ["ns/web-1"]);
    for request in server.requests_of(Verb::List).iter().chain(&server.requests_of(Verb::Watch)) {
        assert_eq!(request.param("labelSelector"), Some("app=web,tier in (front)"));
        assert_eq!(request.param("fieldSelector"), Some("metadata.name!=skip"));
    }
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    // Objects moving into and out of the selection arrive as adds and deletes.
    server.apply(labelled("web-2", "web", "front")).unwrap();
    server.apply(labelled("web-1", "web", "back")).unwrap();
    until("the selection to follow", TIMEOUT, || running.recorder.view().keys().eq(["ns/web-2"])).await;
    assert_eq!(running.informer.store().list_keys(), ["ns/web-2"]);
    assert!(matches!(running.recorder.seen_for("ns/web-1").last(), Some(Seen::Delete { unknown: false, .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_timeouts_end_watches_that_resume_where_they_left_off() {
    let server = ApiServer::start().await.unwrap();
    server.apply(cm("ns", "a", "0")).unwrap();
    let mut config = informer_config("cm", Some(500));
    config.reflector.test_only_min_watch_timeout = Some(Duration::from_secs(1));
    let running = run(&server, configmaps(), config).await;
    synced(&running).await;
    until("a watch", TIMEOUT, || server.open_watches() == 1).await;
    server.apply(cm("ns", "a", "1")).unwrap();
    until("three watches", TIMEOUT, || server.requests_of(Verb::Watch).len() >= 3).await;
    server.apply(cm("ns", "b", "1")).unwrap();
    converged(&server, &running, "v1", "ConfigMap").await;
    let watches = server.requests_of(Verb::Watch);
    assert!(watches.iter().all(|w| w.param("timeoutSeconds") == Some("1")), "{watches:#?}");
    assert!(watches[2].param("resourceVersion").unwrap().parse::<u64>().unwrap() >= 3, "resumed after the update");
    assert_eq!(server.requests_of(Verb::List).len(), 1, "timeouts never relist");
}

/// The lister-watcher on its own, where the mapping of answers to results is clearest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lister_watcher_maps_answers_to_results() {
    let server = ApiServer::start().await.unwrap();
    server.set_split_frames(true);
    for i in 0..3 {
        server.apply(cm("ns", &format!("c{i}"), "0")).unwrap();
    }
    // Without kube's own retries, a 429 reaches the source.
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.default_retry = false;
    let source = KubeSource::from_config(config).unwrap();
    let lw = source.lister_watcher_for(&configmaps()).unwrap();

    let page = lw.list(&ListParams { limit: Some(2), ..ListParams::default() }).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.resource_version, "4");
    let token = page.continue_token.clone().unwrap();
    server.apply(cm("ns", "c3", "0")).unwrap();
    server.compact();
    let expired = lw.list(&ListParams { limit: Some(2), continue_token: Some(token), ..ListParams::default() }).await;
    assert!(matches!(expired, Err(SourceError::Gone(_))), "{expired:?}");

    server.fail_next(&[Verb::List], 1, 429);
    assert!(matches!(lw.list(&ListParams::default()).await, Err(SourceError::TooManyRequests(_))));
    server.fail_next(&[Verb::List], 1, 500);
    assert!(matches!(lw.list(&ListParams::default()).await, Err(SourceError::Api(s)) if s.code == 500));

    // A watch from a compacted resourceVersion: 200, then a 410 ERROR event.
    let mut stream = lw.watch(&WatchParams { resource_version: "4".into(), ..WatchParams::default() }).await.unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Error(s))) if s.is_gone()));

    let params = WatchParams { resource_version: "5".into(), allow_bookmarks: true, ..WatchParams::default() };
    let mut stream = lw.watch(&params).await.unwrap();
    server.apply(cm("ns", "c0", "1")).unwrap();
    server.delete("v1", "ConfigMap", "ns/c1").unwrap();
    server.bookmark_now();
    assert!(
        matches!(stream.next().await, Some(Ok(WatchEvent::Modified(o))) if o.key() == "ns/c0" && o.resource_version() == "6")
    );
    assert!(
        matches!(stream.next().await, Some(Ok(WatchEvent::Deleted(o))) if o.key() == "ns/c1" && o.resource_version() == "7")
    );
    assert!(
        matches!(stream.next().await, Some(Ok(WatchEvent::Bookmark { resource_version, initial_events_end: false })) if resource_version == "7")
    );
    server.send_malformed_frame();
    assert!(matches!(stream.next().await, Some(Err(SourceError::Decode(_)))));
    assert!(stream.next().await.is_none(), "a decode error ends the watch");

    let mut stream = lw.watch(&params).await.unwrap();
    assert!(matches!(stream.next().await, Some(Ok(WatchEvent::Modified(_)))));
    server.send_watch_error(500, "InternalError", "etcd is sad");
    let mut rest = Vec::new();
    while let Some(event) = stream.next().await {
        rest.push(event);
    }
    assert!(matches!(rest.last(), Some(Ok(WatchEvent::Error(s))) if s.code == 500), "{rest:?}");
    let mut stream = lw.watch(&params).await.unwrap();
    server.drop_watches();
    let mut rest = Vec::new();
    while let Some(event) = stream.next().await {
        rest.push(event);
    }
    assert!(rest.iter().all(Result::is_ok), "a dropped connection ends the stream without an error: {rest:?}");

    let streaming = WatchParams { send_initial_events: true, allow_bookmarks: true, ..WatchParams::default() };
    let mut stream = lw.watch(&streaming).await.unwrap();
    let mut keys = Vec::new();
    loop {
        match stream.next().await {
            Some(Ok(WatchEvent::Added(o))) => keys.push(o.key().to_owned()),
            Some(Ok(WatchEvent::Bookmark { initial_events_end: true, resource_version })) => {
                assert_eq!(resource_version, server.resource_version().to_string());
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(keys, ["ns/c0", "ns/c2", "ns/c3"]);
    server.set_watch_list(WatchListSupport::Rejected);
    assert!(matches!(lw.watch(&streaming).await, Err(SourceError::Unsupported(_))));
    assert!(lw.watch_list_unsupported());
    let requests = server.requests_of(Verb::Watch).len();
    assert!(matches!(lw.watch(&streaming).await, Err(SourceError::Unsupported(_))));
    assert_eq!(server.requests_of(Verb::Watch).len(), requests, "remembered: no second attempt");
}

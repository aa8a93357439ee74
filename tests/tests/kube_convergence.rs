//! Convergence under faults, through the kube source and the real kube client: a seeded
//! random workload of creates, updates and deletes across namespaces and two kinds, while
//! faults fire at random (dropped and closed watches, compactions, 429/500 answers, delays,
//! split frames, malformed frames, watch ERROR events, a server that stops supporting
//! streaming lists). Once the workload and faults stop, for every seed: each informer's cache
//! equals the server's objects, and each handler's view (rebuilt from the adds, updates and
//! deletes it was told about) equals the server's objects filtered by what it asked for.
//!
//! The handlers are native: one plain, one for one namespace, one slow (it sleeps per event),
//! one with a label filter that often answers `retry`. (The wasm-plugin version of this test
//! lives with the plugin runtime.)
//!
//! Run with `cargo test -p wink-tests --test kube_convergence -- --nocapture`. Seeds 1..=4
//! run by default; `WINK_CONVERGENCE_SEEDS=N` runs seeds 1..=N, `WINK_CONVERGENCE_SEED=S`
//! runs seed S only. A failure names its seed. Timing is real, so a seed fixes the workload
//! and the faults, not their interleaving with the client.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wink::informer::{
    EventHandler, HandlerError, HandlerResult, InformerFactory, ListenerOptions, Notification, Object, ResourceKey,
    RetryConfig, SharedIndexInformer,
};
use wink_tests::apiserver::testing::{Recorder, informer_config, kube_source, print_logs};
use wink_tests::apiserver::{ApiServer, ResourceDef, ServerOptions, Verb, WatchListSupport};

const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const OPS: usize = 300;
const QUIET_DEADLINE: Duration = Duration::from_secs(40);

/// Sleeps before recording each event.
struct Slow {
    recorder: Recorder,
    delay: Duration,
}

#[async_trait]
impl EventHandler for Slow {
    async fn on_add(&self, obj: &Object, initial: bool) -> HandlerResult {
        tokio::time::sleep(self.delay).await;
        self.recorder.record(&Notification::Add { obj: obj.clone(), initial });
        Ok(())
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        tokio::time::sleep(self.delay).await;
        self.recorder.record(&Notification::Update { old: old.clone(), new: new.clone() });
        Ok(())
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        tokio::time::sleep(self.delay).await;
        self.recorder.record(&Notification::Delete { obj: obj.clone(), final_state_unknown });
        Ok(())
    }
}

/// Answers `retry` to every third call without recording it.
struct Flaky {
    recorder: Recorder,
    calls: AtomicU64,
}

impl Flaky {
    fn call(&self, notification: Notification) -> HandlerResult {
        if self.calls.fetch_add(1, Ordering::SeqCst) % 3 == 2 {
            return Err(HandlerError::Retry("flaky".into()));
        }
        self.recorder.record(&notification);
        Ok(())
    }
}

#[async_trait]
impl EventHandler for Flaky {
    async fn on_add(&self, obj: &Object, initial: bool) -> HandlerResult {
        self.call(Notification::Add { obj: obj.clone(), initial })
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        self.call(Notification::Update { old: old.clone(), new: new.clone() })
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        self.call(Notification::Delete { obj: obj.clone(), final_state_unknown })
    }
}

/// A handler under test and what it should end up with.
struct Expectation {
    name: &'static str,
    recorder: Recorder,
    kind: &'static str,
    namespaces: Option<BTreeSet<String>>,
    front_only: bool,
}

fn is_front(labels: Option<&Value>) -> bool {
    labels.and_then(|l| l.get("tier")).and_then(Value::as_str) == Some("front")
}

fn object(kind: &str, ns: &str, name: &str, rng: &mut StdRng) -> Value {
    let tier = if rng.random_bool(0.5) { "front" } else { "back" };
    let (api_version, body) = if kind == "ConfigMap" {
        ("v1", json!({"data": {"v": rng.random::<u32>().to_string()}}))
    } else {
        ("example.com/v1", json!({"spec": {"size": rng.random_range(0..100)}}))
    };
    let mut obj = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"namespace": ns, "name": name, "labels": {"tier": tier}}});
    obj.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
    obj
}

fn api_version(kind: &str) -> &'static str {
    if kind == "ConfigMap" { "v1" } else { "example.com/v1" }
}

/// Runs one fault at random; returns its name.
fn fault(server: &ApiServer, rng: &mut StdRng) -> &'static str {
    match rng.random_range(0..11) {
        0 => {
            server.drop_watches();
            "drop"
        }
        1 => {
            server.close_watches();
            "close"
        }
        2 => {
            server.compact();
            "compact"
        }
        3 => {
            let verbs: &[Verb] = if rng.random_bool(0.5) { &[Verb::List] } else { &[Verb::Watch] };
            server.fail_next(verbs, rng.random_range(1..4), if rng.random_bool(0.5) { 429 } else { 500 });
            "fail"
        }
        4 => {
            let delay = rng.random_bool(0.5).then(|| Duration::from_millis(rng.random_range(5..80)));
            server.set_delay(Verb::RESOURCES, delay);
            "delay"
        }
        5 => {
            server.set_split_frames(rng.random_bool(0.6));
            "split"
        }
        6 => {
            server.send_malformed_frame();
            "malformed"
        }
        7 => {
            server.send_watch_error(500, "InternalError", "injected");
            "watch-error"
        }
        8 => {
            server.bookmark_now();
            "bookmark"
        }
        9 if rng.random_bool(0.2) => {
            server.set_watch_list(WatchListSupport::Rejected);
            "reject-watch-list"
        }
        _ => {
            server.drop_watches();
            server.compact();
            "drop+compact"
        }
    }
}

/// The server's objects of `kind` (key → value).
fn truth(server: &ApiServer, kind: &str) -> BTreeMap<String, Value> {
    server
        .objects(api_version(kind), kind)
        .into_iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or_default().to_owned();
            (format!("{ns}/{}", o["metadata"]["name"].as_str().unwrap_or_default()), o)
        })
        .collect()
}

fn versions(objects: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    objects
        .iter()
        .map(|(k, o)| (k.clone(), o["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The keys on which `actual` differs from `expected`: missing, extra, other versions.
fn diff(actual: &BTreeMap<String, String>, expected: &BTreeMap<String, String>) -> String {
    let missing: Vec<_> = expected.keys().filter(|k| !actual.contains_key(*k)).collect();
    let extra: Vec<_> = actual.keys().filter(|k| !expected.contains_key(*k)).collect();
    let stale: Vec<_> = actual
        .iter()
        .filter_map(|(k, v)| expected.get(k).filter(|e| *e != v).map(|e| format!("{k}@{v} (server @{e})")))
        .collect();
    format!("missing {missing:?}, extra {extra:?}, stale {stale:?}")
}

/// What differs between the system and the server, if anything.
fn differences(
    server: &ApiServer,
    informers: &[(&'static str, &SharedIndexInformer)],
    handlers: &[Expectation],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (kind, informer) in informers {
        let expected = truth(server, kind);
        let cache: BTreeMap<String, Value> =
            informer.indexer().list().into_iter().map(|o| (o.key().to_owned(), o.to_value())).collect();
        if versions(&cache) != versions(&expected) {
            problems.push(format!("{kind} cache: {}", diff(&versions(&cache), &versions(&expected))));
        } else if cache != expected {
            problems.push(format!("{kind} cache holds the server's versions but not their content"));
        }
    }
    for handler in handlers {
        let expected: BTreeMap<String, String> = versions(
            &truth(server, handler.kind)
                .into_iter()
                .filter(|(_, o)| {
                    let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
                    handler.namespaces.as_ref().is_none_or(|set| set.contains(ns))
                        && (!handler.front_only || is_front(o["metadata"].get("labels")))
                })
                .collect(),
        );
        let view = handler.recorder.view();
        if view != expected {
            problems.push(format!("handler {}: {}", handler.name, diff(&view, &expected)));
        }
    }
    problems
}

async fn run_seed(seed: u64) -> Result<String, String> {
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let options = ServerOptions {
        history_limit: rng.random_range(40..400),
        bookmark_interval: Some(Duration::from_millis(200)),
        retry_after_secs: 0,
        seed,
        ..ServerOptions::default()
    };
    let server = ApiServer::start_with(options).await.map_err(|e| e.to_string())?;
    server.register(ResourceDef::custom("example.com", "v1", "Widget", "widgets", true)).map_err(|e| e.to_string())?;
    // Some objects exist before the informers start.
    for i in 0..10 {
        let ns = NAMESPACES[i % NAMESPACES.len()];
        server.apply(object("ConfigMap", ns, &format!("cm{i}"), &mut rng)).map_err(|e| e.to_string())?;
    }
    let source = kube_source(&server).await;

    // ConfigMaps through a factory (paged LIST); Widgets on their own (streaming list).
    let mut config = informer_config("configmaps", Some(4));
    config.reflector.min_watch_timeout = Duration::from_secs(2);
    let factory = InformerFactory::new(Arc::new(source.clone())).with_config(config);
    let configmaps = factory.informer_for(&ResourceKey::new("v1", "ConfigMap")).map_err(|e| e.to_string())?;
    let mut widget_config = informer_config("widgets", Some(4));
    widget_config.reflector.use_watch_list = true;
    let widget_lw =
        source.lister_watcher_for(&ResourceKey::new("example.com/v1", "Widget")).map_err(|e| e.to_string())?;
    let widgets = SharedIndexInformer::new(Arc::new(widget_lw), widget_config);

    let retry = RetryConfig { initial: Duration::from_millis(10), max: Duration::from_millis(200) };
    let handlers = vec![
        Expectation {
            name: "all",
            recorder: Recorder::default(),
            kind: "ConfigMap",
            namespaces: None,
            front_only: false,
        },
        Expectation {
            name: "namespace-a",
            recorder: Recorder::default(),
            kind: "ConfigMap",
            namespaces: Some(["a".to_owned()].into()),
            front_only: false,
        },
        Expectation {
            name: "slow",
            recorder: Recorder::default(),
            kind: "ConfigMap",
            namespaces: Some(["b".to_owned(), "c".to_owned()].into()),
            front_only: false,
        },
        Expectation {
            name: "flaky-front",
            recorder: Recorder::default(),
            kind: "ConfigMap",
            namespaces: None,
            front_only: true,
        },
        Expectation {
            name: "widgets",
            recorder: Recorder::default(),
            kind: "Widget",
            namespaces: None,
            front_only: false,
        },
        Expectation {
            name: "slow-widgets",
            recorder: Recorder::default(),
            kind: "Widget",
            namespaces: Some(["c".to_owned()].into()),
            front_only: false,
        },
    ];
    let register = |informer: &SharedIndexInformer, h: &Expectation, handler: Arc<dyn EventHandler>| {
        let mut options = ListenerOptions::new(h.name, Duration::ZERO);
        options.namespaces = h.namespaces.clone();
        options.retry = retry.clone();
        if h.front_only {
            options.filter = Some(Arc::new(|o: &Object| o.labels().get("tier").map(String::as_str) == Some("front")));
        }
        informer.add_event_handler_with_options(handler, options).map(|_| ()).map_err(|e| e.to_string())
    };
    let slow = |h: &Expectation| Arc::new(Slow { recorder: h.recorder.clone(), delay: Duration::from_millis(3) });
    register(&configmaps, &handlers[0], handlers[0].recorder.handler())?;
    register(&configmaps, &handlers[1], handlers[1].recorder.handler())?;
    register(&configmaps, &handlers[2], slow(&handlers[2]))?;
    register(
        &configmaps,
        &handlers[3],
        Arc::new(Flaky { recorder: handlers[3].recorder.clone(), calls: AtomicU64::new(0) }),
    )?;
    register(&widgets, &handlers[4], handlers[4].recorder.handler())?;
    register(&widgets, &handlers[5], slow(&handlers[5]))?;
    factory.start();
    let cancel = CancellationToken::new();
    let widget_task = tokio::spawn(widgets.clone().run(cancel.clone()));

    // The workload: faults now and then, then a fault-free tail whose changes can only
    // arrive through watch events (relists would hide a broken watch path).
    let mut faults: BTreeMap<&str, usize> = BTreeMap::new();
    for op in 0..OPS {
        let kind = if rng.random_bool(0.7) { "ConfigMap" } else { "Widget" };
        let ns = NAMESPACES[rng.random_range(0..NAMESPACES.len())];
        let name = format!("{}{}", if kind == "ConfigMap" { "cm" } else { "w" }, rng.random_range(0..12));
        if op < OPS * 4 / 5 && rng.random_bool(0.07) {
            *faults.entry(fault(&server, &mut rng)).or_default() += 1;
            // Let the client react (reconnect, relist) before going on, mostly.
            tokio::time::sleep(Duration::from_millis(rng.random_range(10..200))).await;
        } else if op == OPS * 4 / 5 {
            // The tail: no more faults (armed error answers are used up by the next requests).
            server.set_delay(Verb::RESOURCES, None);
            server.set_split_frames(rng.random_bool(0.5));
        }
        if rng.random_bool(0.7) {
            server.apply(object(kind, ns, &name, &mut rng)).map_err(|e| e.to_string())?;
        } else {
            server.delete(api_version(kind), kind, &format!("{ns}/{name}")).map_err(|e| e.to_string())?;
        }
        if rng.random_bool(0.4) {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..20))).await;
        }
    }

    // Quiet.
    let workload = started.elapsed();
    let informers = [("ConfigMap", &configmaps), ("Widget", &widgets)];
    let deadline = Instant::now() + QUIET_DEADLINE;
    let outcome = loop {
        let problems = differences(&server, &informers, &handlers);
        if problems.is_empty() {
            // Still equal a little later: nothing was in flight.
            tokio::time::sleep(Duration::from_millis(300)).await;
            if differences(&server, &informers, &handlers).is_empty() {
                break Ok(());
            }
        } else if Instant::now() > deadline {
            break Err(problems.join("\n  "));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    factory.shutdown().await;
    cancel.cancel();
    let _ = widget_task.await;
    let requests = server.requests();
    let summary = format!(
        "seed {seed}: {} objects, {} requests ({} lists, {} watches), faults {faults:?}, workload {workload:.1?}, total {:.1?}",
        server.objects("v1", "ConfigMap").len() + server.objects("example.com/v1", "Widget").len(),
        requests.len(),
        requests.iter().filter(|r| r.verb == Verb::List).count(),
        requests.iter().filter(|r| r.verb == Verb::Watch).count(),
        started.elapsed(),
    );
    outcome.map(|()| summary.clone()).map_err(|problems| format!("{summary}\n  {problems}"))
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("WINK_CONVERGENCE_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![seed];
    }
    let count = std::env::var("WINK_CONVERGENCE_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4u64);
    (1..=count).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_and_handlers_converge_to_the_server_under_faults() {
    print_logs();
    let mut failures = Vec::new();
    for seed in seeds() {
        match run_seed(seed).await {
            Ok(summary) => println!("{summary}"),
            Err(failure) => {
                eprintln!("FAILED {failure}");
                failures.push(seed);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "convergence failed for seeds {failures:?}; rerun one with WINK_CONVERGENCE_SEED=<seed> (details above)"
    );
}

//! Convergence under faults, through the kube source and the real kube client: a seeded
//! random workload of creates, updates and deletes across namespaces and two kinds, while
//! faults fire at random (dropped and closed watches, compactions, 429/500 answers, delays,
//! split frames, malformed frames, watch ERROR events, a server that stops supporting
//! streaming lists). Once the workload and faults stop, for every seed: each informer's cache
//! equals the server's objects, and each handler's view (rebuilt from the adds, updates and
//! deletes it was told about) equals the server's objects filtered by what it asked for.
//!
//! The handlers are native: one plain, one for one namespace, one slow (it sleeps per event),
//! one with a label filter that often answers `retry`. The workload and the faults are
//! [`wink_tests::apiserver::workload`]'s; kube_convergence_wasm.rs runs them against wasm
//! plugins deployed through the plugin registry.
//!
//! Run with `cargo test -p wink-tests --test kube_convergence -- --nocapture`. Seeds 1..=4
//! run by default; `WINK_CONVERGENCE_SEEDS=N` runs seeds 1..=N, `WINK_CONVERGENCE_SEED=S`
//! runs seed S only. A failure names its seed. Timing is real, so a seed fixes the workload
//! and the faults, not their interleaving with the client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use wink::informer::{
    BackoffConfig, EventHandler, HandlerError, HandlerResult, InformerFactory, ListenerOptions, Notification, Object,
    ResourceKey, SharedIndexInformer,
};
use wink_tests::apiserver::ApiServer;
use wink_tests::apiserver::testing::{Recorder, informer_config, kube_source, print_logs};
use wink_tests::apiserver::workload::{self, Selection, cache_difference, diff, expected_view};

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
        wink::informer::DONE
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        tokio::time::sleep(self.delay).await;
        self.recorder.record(&Notification::Update { old: old.clone(), new: new.clone() });
        wink::informer::DONE
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        tokio::time::sleep(self.delay).await;
        self.recorder.record(&Notification::Delete { obj: obj.clone(), final_state_unknown });
        wink::informer::DONE
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
        wink::informer::DONE
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
    selection: Selection,
}

/// What differs between the system and the server, if anything.
fn differences(
    server: &ApiServer,
    informers: &[(&'static str, &SharedIndexInformer)],
    handlers: &[Expectation],
) -> Vec<String> {
    let mut problems: Vec<String> =
        informers.iter().filter_map(|(kind, informer)| cache_difference(server, kind, informer)).collect();
    for handler in handlers {
        let expected = expected_view(server, std::slice::from_ref(&handler.selection));
        let view = handler.recorder.view();
        if view != expected {
            problems.push(format!("handler {}: {}", handler.name, diff(&view, &expected)));
        }
    }
    problems
}

async fn run_seed(seed: u64) -> Result<String, String> {
    let started = Instant::now();
    let mut rng = workload::rng(seed);
    // Some objects exist before the informers start.
    let server = workload::start_server(seed, &mut rng).await?;
    let source = kube_source(&server).await;

    // ConfigMaps through a factory (paged LIST); Widgets on their own (streaming list).
    let mut config = informer_config("configmaps", Some(4));
    config.reflector.test_only_min_watch_timeout = Some(Duration::from_secs(2));
    let factory = InformerFactory::new(Arc::new(source.clone())).with_config(config);
    let configmaps = factory.informer_for(&ResourceKey::new("v1", "ConfigMap")).map_err(|e| e.to_string())?;
    let mut widget_config = informer_config("widgets", Some(4));
    widget_config.reflector.use_watch_list = true;
    let widget_lw =
        source.lister_watcher_for(&ResourceKey::new("example.com/v1", "Widget")).map_err(|e| e.to_string())?;
    let widgets = SharedIndexInformer::new(Arc::new(widget_lw), widget_config).unwrap();

    let retry = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(200),
        ..BackoffConfig::HANDLER_RETRY
    };
    let expect = |name, selection| Expectation { name, recorder: Recorder::default(), selection };
    let handlers = vec![
        expect("all", Selection::all("ConfigMap")),
        expect("namespace-a", Selection::in_namespaces("ConfigMap", &["a"])),
        expect("slow", Selection::in_namespaces("ConfigMap", &["b", "c"])),
        expect("flaky-front", Selection::all("ConfigMap").front()),
        expect("widgets", Selection::all("Widget")),
        expect("slow-widgets", Selection::in_namespaces("Widget", &["c"])),
    ];
    let register = |informer: &SharedIndexInformer, h: &Expectation, handler: Arc<dyn EventHandler>| {
        let mut options = ListenerOptions::new(h.name, Duration::ZERO);
        options.namespaces = h.selection.namespaces.clone();
        options.retry = retry.clone();
        if h.selection.front_only {
            options.filter = Some(Arc::new(|o: &Object| o.labels().get("tier") == Some("front")));
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

    let faults = workload::run(&server, &mut rng).await?;

    // Quiet.
    let workload_time = started.elapsed();
    let informers = [("ConfigMap", &configmaps), ("Widget", &widgets)];
    let outcome = workload::wait_quiet(QUIET_DEADLINE, || differences(&server, &informers, &handlers)).await;
    factory.shutdown().await;
    cancel.cancel();
    let _ = widget_task.await;
    let summary = workload::summary(&server, seed, &faults, workload_time, started);
    outcome.map(|()| summary.clone()).map_err(|problems| format!("{summary}\n  {problems}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_and_handlers_converge_to_the_server_under_faults() {
    print_logs();
    workload::run_seeds(run_seed).await;
}

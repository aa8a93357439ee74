//! Run with cargo bench -p wink-benches --bench end_to_end
//!
//! Benchmark 9 — a real event end to end. 1,000 Pods of ~4 KB on the local API server; a
//! writer updates one Pod every 2 ms (isolated events, as most clusters see them: each one
//! finds its consumer idle). Latency = from the moment the server committed the update (its
//! watch event queued for every watcher, stamped as the write returns, before the server's
//! response is converted for the writer) to the consumer's
//! handler having returned for that resourceVersion: over HTTP on loopback, through the
//! client's frame decoding, the informer or watcher, and the handler. Consumers, one at a
//! time over the same server, in interleaved rounds:
//!
//! - wink with a wasm plugin: the kube source, the informer (managedFields stripped, its
//!   default), the listener queue and `PluginHandler` calling `bench-noop`'s `on-update`
//!   (guest pool, sandbox, WIT call lending both objects as handles, the guest fetching the name);
//! - wink with a native handler doing the same work (read the name), to split the cost;
//! - kube-rs's `watcher` of typed `Pod`s (the faster kube-rs decoding, benchmark 1) with a
//!   native closure reading the name;
//! - client-go's `SharedIndexInformer` of typed Pods with a handler reading the name, in a Go
//!   program (`wink_benches::client_go`) that stamps each handler return with the clock the
//!   server's commit stamps are read from (its rows are skipped, saying why, when the
//!   program cannot be built).
//!
//! The completion instants are recorded by resourceVersion and joined with the write stamps
//! afterwards, so no stamp can be missed by a consumer faster than the writer's bookkeeping.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, SamplingMode};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use parking_lot::Mutex;
use wink::informer::{EntryResults, EventHandler, HandlerResult, Notification, Object};
use wink::plugin::{CallOutcome, GuestPool, LoadedPlugin, MetricsRegistry, PluginEngine};
use wink_benches::client_go::{ClientGoConsumer, ClientGoPeer, Mode};
use wink_benches::cluster::BenchCluster;
use wink_benches::consumers::WinkConsumer;
use wink_benches::gate::{WatchGate, gated_client};
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::results::{Goal, Report, Table, human_duration, percentile};
use wink_benches::track::{Progress, ReadName};
use wink_benches::workload::PodSize;

const PODS: usize = 1_000;
/// Updates per measured run, one every [`SPACING`].
const EVENTS: usize = 250;
const SPACING: Duration = Duration::from_millis(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Consumer {
    WinkWasm,
    WinkNative,
    KubeRs,
    ClientGo,
}

impl Consumer {
    const ALL: [Consumer; 4] = [Consumer::WinkWasm, Consumer::WinkNative, Consumer::KubeRs, Consumer::ClientGo];

    fn label(self) -> &'static str {
        match self {
            Self::WinkWasm => "wink, wasm plugin (`bench-noop`)",
            Self::WinkNative => "wink, native handler",
            Self::KubeRs => "kube-rs `watcher` (typed Pod), native closure",
            Self::ClientGo => "client-go `SharedIndexInformer` (typed Pod), Go handler",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Self::WinkWasm => "wink-wasm",
            Self::WinkNative => "wink-native",
            Self::KubeRs => "kube-rs",
            Self::ClientGo => "client-go",
        }
    }
}

/// When each resourceVersion's handler returned.
type Done = Arc<Mutex<Vec<(u64, Instant)>>>;

fn finished(done: &Done, rv: &str) {
    let at = Instant::now();
    if let Ok(rv) = rv.parse() {
        done.lock().push((rv, at));
    }
}

/// Forwards to a handler; records when each update it delivered returned.
struct Probe {
    inner: Arc<dyn EventHandler>,
    done: Done,
}

#[async_trait]
impl EventHandler for Probe {
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        self.inner.on_add(obj, is_initial_list).await
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        let result = self.inner.on_update(old, new).await;
        finished(&self.done, new.resource_version());
        result
    }

    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        let results = self.inner.deliver_batch(batch).await;
        self.finished(batch);
        results
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let results = self.inner.deliver_now(batch)?;
        self.finished(batch);
        Some(results)
    }
}

impl Probe {
    /// Records that each update of a delivered batch returned.
    fn finished(&self, batch: &[Vec<Notification>]) {
        for notification in batch.iter().flatten() {
            if let Notification::Update { new, .. } = notification {
                finished(&self.done, new.resource_version());
            }
        }
    }
}

/// A consumer started and synced.
enum Running {
    Wink(WinkConsumer),
    KubeRs(tokio::task::JoinHandle<()>),
    ClientGo(ClientGoConsumer),
}

/// What the consumers need beyond the server: wink's plugin, and the client-go program.
struct Plugins {
    engine: PluginEngine,
    plugin: LoadedPlugin,
    metrics: MetricsRegistry,
    pool: GuestPool,
    /// The client-go program, if it could be built.
    client_go: Option<Arc<ClientGoPeer>>,
}

async fn start(consumer: Consumer, cluster: &BenchCluster, plugins: &Plugins, done: &Done) -> Running {
    let client = || gated_client(cluster.kubeconfig(), WatchGate::opened());
    let running = match consumer {
        Consumer::WinkWasm | Consumer::WinkNative => {
            let client = client().await;
            let inner: Arc<dyn EventHandler> = if consumer == Consumer::WinkWasm {
                let settings = PluginSettings::named("noop");
                let handler =
                    plugins::handler(&plugins.plugin, &plugins.engine, &settings, &plugins.metrics, &plugins.pool);
                assert!(matches!(handler.warm_up().await, CallOutcome::Ok), "bench-noop starts");
                Arc::new(handler)
            } else {
                Arc::new(ReadName)
            };
            let probe = Arc::new(Probe { inner, done: done.clone() });
            let wink = WinkConsumer::start(client, vec![probe], true);
            while !wink.informer.has_synced() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Running::Wink(wink)
        }
        Consumer::KubeRs => {
            let client = client().await;
            let done = done.clone();
            let (synced, mut on_sync) = tokio::sync::watch::channel(false);
            let stream = watcher::watcher(Api::<Pod>::all(client), watcher::Config::default());
            let task = tokio::spawn(async move {
                futures::pin_mut!(stream);
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(Event::Apply(pod)) => {
                            // The native closure: the same work as the plugin's.
                            std::hint::black_box(pod.metadata.name.as_deref().map(str::len));
                            finished(&done, pod.metadata.resource_version.as_deref().unwrap_or_default());
                        }
                        Ok(Event::InitDone) => {
                            let _ = synced.send(true);
                        }
                        Ok(_) => {}
                        Err(err) => tracing::warn!(error = %err, "kube-rs watcher error"),
                    }
                }
            });
            let _ = on_sync.wait_for(|s| *s).await;
            Running::KubeRs(task)
        }
        Consumer::ClientGo => {
            let peer = plugins.client_go.as_ref().expect("client-go runs only with its program");
            let progress = Progress::new(PODS, 1);
            let running = peer.start(cluster.kubeconfig(), Mode::Latency, PODS, progress.clone(), Some(done.clone()));
            progress.synced().await;
            Running::ClientGo(running)
        }
    };
    // Synced; the watch is open once the server counts it.
    while cluster.server.open_watches() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running
}

async fn stop(running: Running, cluster: &BenchCluster) {
    match running {
        Running::Wink(wink) => wink.stop().await,
        Running::KubeRs(task) => {
            task.abort();
            let _ = task.await;
        }
        Running::ClientGo(client_go) => client_go.stop().await,
    }
    // The next consumer's start waits for its own watch, not this one's.
    let deadline = Instant::now() + Duration::from_secs(2);
    while cluster.server.open_watches() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Writes [`EVENTS`] isolated updates from this (non-async) thread and returns each one's
/// latency to its handler's return.
fn measure(cluster: &mut BenchCluster, done: &Done) -> Vec<Duration> {
    done.lock().clear();
    let mut written = HashMap::with_capacity(EVENTS);
    let started = Instant::now();
    for i in 0..EVENTS {
        let (_, rv, committed) = cluster.update_one_stamped();
        written.insert(rv, committed);
        let next = started + SPACING * (i as u32 + 1);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let last = written.keys().max().copied().unwrap_or(0);
    while !done.lock().iter().any(|(rv, _)| *rv >= last) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let finished = std::mem::take(&mut *done.lock());
    let lost = EVENTS - finished.iter().filter(|(rv, _)| written.contains_key(rv)).count().min(EVENTS);
    if lost > 0 {
        eprintln!("end_to_end: {lost} events without a handler return");
    }
    finished.iter().filter_map(|(rv, at)| written.get(rv).map(|w| at.saturating_duration_since(*w))).collect()
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().warm_up_time(Duration::from_millis(1)).configure_from_args();
    let mut cluster = rt.block_on(BenchCluster::start(PodSize::Small, PODS, 100_000));
    let engine = plugins::engine(8);
    let plugin = plugins::load(&plugins::bench_noop(), &engine);
    let client_go = ClientGoPeer::start_or_skip("end_to_end");
    let consumers: Vec<Consumer> =
        Consumer::ALL.into_iter().filter(|c| *c != Consumer::ClientGo || client_go.is_some()).collect();
    let plugins = Plugins { engine, plugin, metrics: MetricsRegistry::new(), pool: GuestPool::per_core(), client_go };
    let done: Done = Arc::default();
    let mut all: HashMap<Consumer, Vec<Duration>> = HashMap::new();
    let mut group = criterion.benchmark_group("end_to_end");
    group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(1));
    // Interleaved: each consumer measures one run per sample, started afresh each time.
    for &consumer in &consumers {
        group.bench_function(consumer.id(), |b| {
            b.iter_custom(|iters| {
                let running = rt.block_on(start(consumer, &cluster, &plugins, &done));
                let mut latencies = Vec::new();
                for _ in 0..iters {
                    latencies.extend(measure(&mut cluster, &done));
                }
                rt.block_on(stop(running, &cluster));
                let total: Duration = latencies.iter().sum();
                let mean = total / latencies.len().max(1) as u32;
                all.entry(consumer).or_default().extend(latencies);
                mean * iters as u32
            })
        });
    }
    group.finish();
    criterion.final_summary();
    report(&all, plugins.pool.borrowed_runs());
    rt.shutdown_background();
}

/// `borrowed_runs`: the wasm plugin's calls that ran on the delivering thread (the rest,
/// warm-ups aside, hopped to a guest thread and back).
fn report(all: &HashMap<Consumer, Vec<Duration>>, borrowed_runs: u64) {
    let mut report = Report::new(
        "end_to_end",
        "9. A real event end to end",
        "1,000 Pods of ~4 KB on the local API server; one status update every 2 ms (isolated events). \
         Latency = the server committed the update (its watch event queued for every watcher) → the \
         consumer's handler returned for that resourceVersion, over HTTP on loopback through the kube \
         client. wink: kube source + informer + listener + handler (the `bench-noop` wasm plugin's \
         `on-update`, or a native handler reading the name); kube-rs: `watcher` of typed Pods + a native \
         closure reading the name; client-go: `SharedIndexInformer` of typed Pods (informer factory, JSON, no \
         client-side rate limit) + a handler reading the name, in a Go program stamping each handler return \
         with the same clock. One consumer at a time, over the same server and client settings; \
         percentiles over every event of all runs.",
    );
    let mut table = Table::new(
        "",
        &[
            "consumer",
            "events",
            "p50",
            "p99",
            "max",
            "p50 ÷ kube-rs",
            "p99 ÷ kube-rs",
            "p50 ÷ client-go",
            "p99 ÷ client-go",
        ],
    );
    let percentiles = |c: Consumer| all.get(&c).map(|l| (percentile(l, 50.0), percentile(l, 99.0)));
    let peer = percentiles(Consumer::KubeRs);
    let client_go = percentiles(Consumer::ClientGo);
    for consumer in Consumer::ALL {
        let Some(latencies) = all.get(&consumer) else { continue };
        let (p50, p99) = (percentile(latencies, 50.0), percentile(latencies, 99.0));
        let ratio = |mine: Duration, theirs: Duration| format!("{:.2}×", mine.as_secs_f64() / theirs.as_secs_f64());
        table.row(vec![
            consumer.label().into(),
            latencies.len().to_string(),
            human_duration(p50),
            human_duration(p99),
            human_duration(percentile(latencies, 100.0)),
            peer.map(|(p, _)| ratio(p50, p)).unwrap_or_default(),
            peer.map(|(_, p)| ratio(p99, p)).unwrap_or_default(),
            client_go.map(|(p, _)| ratio(p50, p)).unwrap_or_default(),
            client_go.map(|(_, p)| ratio(p99, p)).unwrap_or_default(),
        ]);
    }
    report.tables.push(table);
    if let (Some(wasm), Some((p50, p99))) = (all.get(&Consumer::WinkWasm), peer) {
        report.notes.push(format!(
            "watch event → on-update returned: wink with a wasm plugin p50 {} / p99 {}, kube-rs watcher with a \
             native closure p50 {} / p99 {}",
            human_duration(percentile(wasm, 50.0)),
            human_duration(percentile(wasm, 99.0)),
            human_duration(p50),
            human_duration(p99),
        ));
        let ratio = |mine: Duration, theirs: Duration| format!("{:.2}×", mine.as_secs_f64() / theirs.as_secs_f64());
        let (w50, w99) = (percentile(wasm, 50.0), percentile(wasm, 99.0));
        let wink = format!("{} / {}", human_duration(w50), human_duration(w99));
        let kube_rs = format!("kube-rs {} / {}", human_duration(p50), human_duration(p99));
        let goal = "end to end, watch event → handler returned, p50 / p99";
        if let Some((go50, go99)) = client_go {
            report.notes.push(format!(
                "client-go's SharedIndexInformer with a handler p50 {} / p99 {}",
                human_duration(go50),
                human_duration(go99),
            ));
            let peers = format!("client-go {} / {}; {kube_rs}", human_duration(go50), human_duration(go99));
            let ratios = format!("{} / {} client-go's", ratio(w50, go50), ratio(w99, go99));
            report.goals.push(Goal::new(goal, wink, None).against(peers, ratios));
        } else {
            report.goals.push(
                Goal::new(goal, wink, None).against(kube_rs, format!("{} / {}", ratio(w50, p50), ratio(w99, p99))),
            );
        }
        report.notes.push(format!(
            "the wasm plugin's events run on the delivering thread: {borrowed_runs} of {} (the others hop to a \
             guest thread and back: two thread wake-ups on an idle machine)",
            wasm.len()
        ));
    }
    report.write();
}

//! Run with cargo bench -p wink-benches --bench wasm_vs_native
//!
//! Benchmark 2 — wasm plugins vs native handlers. The stream of benchmark 1 (10,000 4 KB Pods
//! listed, then 50,000 watch events from the local API server) through wink's informer with
//! 1 and with 10 listeners, each doing the same trivial work — read the object's name — as
//! a native Rust handler, or as the `bench-noop` Rust wasm plugin (through `PluginHandler`:
//! the guest pool, the sandbox, the WIT call). Timed as in benchmark 1: until every listener
//! has every listed Pod and every Pod's final state. After criterion's groups (each kind's
//! runs one after the other), 11 pairs of 10-listener runs side by side, the order alternating
//! within pairs: the target's ratio is their median, which a drift of the machine's pace
//! between the groups does not move.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use wink::informer::EventHandler;
use wink::plugin::{CallOutcome, GuestPool, LoadedPlugin, MetricsRegistry, PluginEngine};
use wink_benches::cluster::BenchCluster;
use wink_benches::consumers::WinkConsumer;
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::results::{Goal, Report, Table, human_duration, verdict};
use wink_benches::stream::{EVENTS, OBJECTS, Running, StreamRun, run_stream};
use wink_benches::track::{ReadName, Tracked};
use wink_benches::workload::PodSize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Native,
    Wasm,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Wasm => "wasm",
        }
    }
}

struct Wasm {
    engine: PluginEngine,
    plugin: LoadedPlugin,
}

async fn handlers(kind: Kind, listeners: usize, wasm: &Wasm) -> Vec<Arc<dyn EventHandler>> {
    let mut out: Vec<Arc<dyn EventHandler>> = Vec::new();
    let metrics = MetricsRegistry::new();
    let pool = GuestPool::per_core();
    for i in 0..listeners {
        match kind {
            Kind::Native => out.push(Arc::new(ReadName)),
            Kind::Wasm => {
                let settings = PluginSettings::named(format!("noop-{i}"));
                let handler = plugins::handler(&wasm.plugin, &wasm.engine, &settings, &metrics, &pool);
                // As the registry does: start the instance before registering the listener.
                assert!(matches!(handler.warm_up().await, CallOutcome::Ok), "bench-noop starts");
                out.push(Arc::new(handler));
            }
        }
    }
    out
}

/// Pairs of 10-listener runs, native and wasm side by side, for the target's ratio.
const PAIRS: usize = 11;

/// One run of the stream through `listeners` listeners of `kind`.
async fn one_run(cluster: &mut BenchCluster, kind: Kind, listeners: usize, wasm: &Wasm) -> StreamRun {
    let inner = handlers(kind, listeners, wasm).await;
    run_stream(cluster, listeners, |client, progress| {
        let tracked = inner.into_iter().map(|h| Tracked::new(h, progress.clone()) as _).collect();
        Running::Wink(WinkConsumer::start(client, tracked, true))
    })
    .await
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().warm_up_time(Duration::from_millis(1)).configure_from_args();
    let engine = rt.block_on(async { plugins::engine(64) });
    let plugin = plugins::load(&plugins::bench_noop(), &engine);
    let wasm = Wasm { engine, plugin };
    let runs: RefCell<BTreeMap<(usize, Kind), Vec<StreamRun>>> = RefCell::default();
    let mut cluster = rt.block_on(BenchCluster::start(PodSize::Small, OBJECTS, EVENTS + 1_000));
    for listeners in [1, 10] {
        let mut group = criterion.benchmark_group(format!("wasm_vs_native/{listeners}-listeners"));
        group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(1));
        group.throughput(Throughput::Elements((OBJECTS + EVENTS) as u64));
        for kind in [Kind::Native, Kind::Wasm] {
            group.bench_function(kind.label(), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let run = rt.block_on(one_run(&mut cluster, kind, listeners, &wasm));
                        runs.borrow_mut().entry((listeners, kind)).or_default().push(run);
                        total += run.total();
                    }
                    total
                })
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let runs = runs.into_inner();
    // Side by side: the groups above run one after the other, and this machine's pace drifts
    // by more than the target's margin within a minute; pairs of runs next to each other
    // (their order alternating) cancel the drift. Only when both 10-listener groups ran.
    let paired: Vec<f64> = if [Kind::Native, Kind::Wasm].iter().all(|k| runs.contains_key(&(10, *k))) {
        (0..PAIRS)
            .map(|i| {
                let order = if i % 2 == 0 { [Kind::Native, Kind::Wasm] } else { [Kind::Wasm, Kind::Native] };
                let [first, second] = order.map(|kind| (kind, rt.block_on(one_run(&mut cluster, kind, 10, &wasm))));
                let rate = |kind| if first.0 == kind { first.1.rate() } else { second.1.rate() };
                rate(Kind::Wasm) / rate(Kind::Native)
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut report = Report::new(
        "wasm_vs_native",
        "2. Wasm plugins vs native handlers",
        "The stream of benchmark 1 (10,000 Pods of ~4 KB listed, then 50,000 watch events, local API server) \
         through wink's informer with 1 and 10 listeners doing the same trivial work — read the object's name: \
         a native Rust handler, or the `bench-noop` Rust plugin as a wasm component run by `PluginHandler` \
         (guest pool of one thread per core, sandbox, WIT call lending both objects as `event-object` handles, the guest fetching the name). Time \
         until every listener had every listed Pod and every Pod's final state; medians. The target's \
         ratio is judged on pairs of 10-listener runs side by side (after the table's groups), the median of \
         their ratios.",
    );
    let columns = [&["listeners", "handlers", "runs"][..], &StreamRun::COLUMNS, &["wasm ÷ native"]].concat();
    let mut table = Table::new("", &columns);
    for listeners in [1, 10] {
        let median = |k: Kind| runs.get(&(listeners, k)).map(|r| (r.len(), StreamRun::median_of(r)));
        let (Some((_, native)), Some((_, wasm))) = (median(Kind::Native), median(Kind::Wasm)) else { continue };
        let ratio = wasm.rate() / native.rate();
        for (kind, (count, run)) in [
            (Kind::Native, median(Kind::Native).unwrap_or((0, native))),
            (Kind::Wasm, median(Kind::Wasm).unwrap_or((0, wasm))),
        ] {
            let mut row = vec![listeners.to_string(), kind.label().into(), count.to_string()];
            row.extend(run.cells());
            row.push(if kind == Kind::Wasm { format!("{ratio:.2}×") } else { String::new() });
            table.row(row);
        }
        if listeners == 10 && !paired.is_empty() {
            report.notes.push(format!("{listeners} listener(s): wasm ÷ native of the groups' medians = {ratio:.2}×"));
        } else {
            report.notes.push(format!("{listeners} listener(s): wasm ÷ native = {ratio:.2}×"));
        }
    }
    let groups = |k: Kind| runs.get(&(10, k)).map(|r| human_duration(StreamRun::median_of(r).total()));
    if !paired.is_empty() {
        let mut sorted = paired;
        sorted.sort_by(f64::total_cmp);
        let middle = sorted[sorted.len() / 2];
        report.notes.push(format!(
            "10 listeners, {} pairs of runs side by side (native and wasm in turn): wasm ÷ native median {middle:.2}×, \
             {:.2}–{:.2}× (target ≥ 0.9× on the paired median: {})",
            sorted.len(),
            sorted[0],
            sorted[sorted.len() - 1],
            verdict(middle >= 0.9)
        ));
        report.goals.push(
            Goal::new(
                "10 wasm listeners ≥ 0.9× 10 native ones",
                groups(Kind::Wasm).unwrap_or_default(),
                Some(middle >= 0.9),
            )
            .against(
                format!("native {}", groups(Kind::Native).unwrap_or_default()),
                format!("{middle:.2}× (paired median)"),
            ),
        );
    }
    report.tables.push(table);
    report.write();
}

//! Run with cargo bench -p wink-benches --bench informer_throughput
//!
//! Benchmark 1 — informer throughput vs kube-rs and client-go. The local API server holds
//! 10,000 Pods; a consumer lists them (paged, 500 a page, as every client defaults to) and
//! syncs, then
//! receives 50,000 watch events (status updates, round-robin over the Pods). Timed: from the
//! consumer's start until every listed Pod was handled, plus from the moment its watch is let
//! through until every Pod's final state was handled; the writing of the 50,000 events is
//! not timed (the watch waits at a gate meanwhile, see `wink_benches::gate`). Consumers:
//! wink's informer with one no-op native handler, kube-rs's `watcher` + `reflector` store
//! with a no-op stream consumer, of `DynamicObject` and of the typed `Pod`, and client-go's
//! `SharedIndexInformer` of typed Pods with a no-op handler (a Go program, see
//! `wink_benches::client_go`; its rows are skipped, saying why, when it cannot be built).
//! The local API server runs on a runtime of its own, so that each consumer's own CPU time
//! is reported beside the wall time (`wink_benches::cpu`): both share the machine's cores.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use wink_benches::client_go::{ClientGoPeer, Mode};
use wink_benches::cluster::BenchCluster;
use wink_benches::consumers::{KubeRsConsumer, KubeRsType, WinkConsumer};
use wink_benches::results::{Goal, Report, Table, human_duration, verdict};
use wink_benches::stream::{EVENTS, OBJECTS, Running, StreamRun, run_stream};
use wink_benches::track::{ReadName, Tracked};
use wink_benches::workload::PodSize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Consumer {
    Wink,
    KubeRsDynamic,
    KubeRsTyped,
    ClientGo,
}

impl Consumer {
    const ALL: [Consumer; 4] = [Consumer::Wink, Consumer::KubeRsDynamic, Consumer::KubeRsTyped, Consumer::ClientGo];

    fn label(self) -> &'static str {
        match self {
            Self::Wink => "wink",
            Self::KubeRsDynamic => "kube-rs (DynamicObject)",
            Self::KubeRsTyped => "kube-rs (typed Pod)",
            Self::ClientGo => "client-go (typed Pod)",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Self::Wink => "wink",
            Self::KubeRsDynamic => "kube-rs-dynamic",
            Self::KubeRsTyped => "kube-rs-typed",
            Self::ClientGo => "client-go",
        }
    }

    fn is_kube_rs(self) -> bool {
        matches!(self, Self::KubeRsDynamic | Self::KubeRsTyped)
    }

    /// Starts the consumer; client-go's in `client_go` (the program), against the server of
    /// `kubeconfig`.
    fn start(
        self,
        client: kube::Client,
        progress: Arc<wink_benches::track::Progress>,
        client_go: Option<&Arc<ClientGoPeer>>,
        kubeconfig: &Path,
    ) -> Running {
        match self {
            Self::Wink => {
                let handler = Tracked::new(Arc::new(ReadName), progress);
                Running::Wink(WinkConsumer::start(client, vec![handler], true))
            }
            Self::KubeRsDynamic => Running::KubeRs(KubeRsConsumer::start(client, KubeRsType::Dynamic, progress, false)),
            Self::KubeRsTyped => Running::KubeRs(KubeRsConsumer::start(client, KubeRsType::Typed, progress, false)),
            Self::ClientGo => {
                let peer = client_go.expect("client-go runs only with its program");
                Running::ClientGo(peer.start(kubeconfig, Mode::Stream, OBJECTS, progress, None))
            }
        }
    }
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().warm_up_time(Duration::from_millis(1)).configure_from_args();
    let runs: RefCell<BTreeMap<(PodSize, Consumer), Vec<StreamRun>>> = RefCell::default();
    let client_go = ClientGoPeer::start_or_skip("informer_throughput");
    let consumers: Vec<Consumer> =
        Consumer::ALL.into_iter().filter(|c| *c != Consumer::ClientGo || client_go.is_some()).collect();
    let mut json_sizes = BTreeMap::new();
    let server = wink_benches::cpu::server_runtime();
    for size in PodSize::ALL {
        let mut cluster = server.block_on(BenchCluster::start(size, OBJECTS, EVENTS + 1_000));
        json_sizes.insert(size, cluster.average_json_size());
        let mut group = criterion.benchmark_group(format!("informer_throughput/{}", size.label()));
        group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(1));
        group.throughput(Throughput::Elements((OBJECTS + EVENTS) as u64));
        let kubeconfig = cluster.kubeconfig().to_owned();
        for &consumer in &consumers {
            group.bench_function(consumer.id(), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let run = rt.block_on(run_stream(&mut cluster, 1, |client, progress| {
                            consumer.start(client, progress, client_go.as_ref(), &kubeconfig)
                        }));
                        runs.borrow_mut().entry((size, consumer)).or_default().push(run);
                        total += run.total();
                    }
                    total
                })
            });
        }
        group.finish();
    }
    criterion.final_summary();
    report(&runs.into_inner(), &json_sizes);
}

fn report(runs: &BTreeMap<(PodSize, Consumer), Vec<StreamRun>>, json_sizes: &BTreeMap<PodSize, f64>) {
    let mut report = Report::new(
        "informer_throughput",
        "1. Informer throughput vs kube-rs and client-go",
        "10,000 Pods listed (pages of 500), then 50,000 watch events (status updates), from the local API \
         server on loopback through the same kube client. Time = start until the last listed Pod was handled \
         + watch release until every Pod's final state was handled; writing the events is not timed (the \
         watch waits at a gate). events/s = 60,000 / time; medians of the runs. wink: informer (managedFields \
         stripped, its default) + one native no-op handler; kube-rs: `watcher` + `reflector` store + a no-op \
         stream consumer; client-go: `SharedIndexInformer` of typed Pods (informer factory, no resync) + a no-op \
         handler reading the name, in a Go program over its own client (JSON, no client-side rate limit, \
         LIST then WATCH: its streaming list turned off), holding its WATCH at a gate of its own and stamping \
         its start, sync, gate opening and last final state on the same clock. The server runs on a runtime \
         of its own (two threads); consumer CPU = the consumer's own CPU time (user + system) over both timed \
         phases: the process's outside the server's threads, or the Go program's; CPU ÷ wall above 1 means it \
         kept more than one core busy.",
    );
    let columns = [
        &["Pods", "consumer", "runs"][..],
        &StreamRun::COLUMNS,
        &["consumer CPU", "CPU ÷ wall", "wink ÷ this", "by CPU"],
    ]
    .concat();
    let mut table = Table::new("", &columns);
    for size in PodSize::ALL {
        let median = |c: Consumer| runs.get(&(size, c)).map(|r| (r.len(), StreamRun::median_of(r)));
        let Some((_, wink)) = median(Consumer::Wink) else { continue };
        let mut worst = f64::INFINITY;
        let mut faster: Option<(Consumer, StreamRun)> = None;
        for consumer in Consumer::ALL {
            let Some((count, run)) = median(consumer) else { continue };
            let ratio = wink.rate() / run.rate();
            if consumer.is_kube_rs() && ratio < worst {
                worst = ratio;
                faster = Some((consumer, run));
            }
            let mut row = vec![
                format!("{} (avg {:.1} KB)", size.label(), json_sizes.get(&size).copied().unwrap_or(0.0) / 1000.0),
                consumer.label().into(),
                count.to_string(),
            ];
            row.extend(run.cells());
            row.push(human_duration(run.cpu));
            row.push(format!("{:.2}", run.cpu.as_secs_f64() / run.total().as_secs_f64()));
            row.push(format!("{ratio:.2}×"));
            // The same work (60,000 objects and events) for each: the CPU it cost, theirs ÷ wink's.
            row.push(format!("{:.2}×", run.cpu.as_secs_f64() / wink.cpu.as_secs_f64().max(1e-9)));
            table.row(row);
        }
        // Round three's targets: 5× on 4 KB Pods, 6× on 16 KB; at least client-go's rate.
        let goal = if size == PodSize::Small { 5.0 } else { 6.0 };
        let events = |run: &StreamRun| format!("60,000 events in {}", human_duration(run.total()));
        if let Some((consumer, run)) = faster.filter(|_| worst.is_finite()) {
            report.notes.push(format!(
                "{} Pods: wink ÷ the faster kube-rs consumer = {worst:.2}× (target ≥ {goal}×: {}); by CPU time, \
                 {} against wink's {} ({:.2}×)",
                size.label(),
                verdict(worst >= goal),
                human_duration(run.cpu),
                human_duration(wink.cpu),
                run.cpu.as_secs_f64() / wink.cpu.as_secs_f64().max(1e-9)
            ));
            report.goals.push(
                Goal::new(
                    format!("informer throughput ≥ {goal}× the faster kube-rs consumer, {} Pods", size.label()),
                    events(&wink),
                    Some(worst >= goal),
                )
                .against(format!("{} {}", consumer.label(), human_duration(run.total())), format!("{worst:.2}×")),
            );
        }
        if let Some((_, client_go)) = median(Consumer::ClientGo) {
            let ratio = wink.rate() / client_go.rate();
            report.notes.push(format!(
                "{} Pods: wink ÷ client-go = {ratio:.2}× (target ≥ 1×: {})",
                size.label(),
                verdict(ratio >= 1.0)
            ));
            report.goals.push(
                Goal::new(
                    format!("≥ 1× client-go's SharedIndexInformer, {} Pods", size.label()),
                    events(&wink),
                    Some(ratio >= 1.0),
                )
                .against(format!("client-go {}", human_duration(client_go.total())), format!("{ratio:.2}×")),
            );
        }
    }
    report.tables.push(table);
    report.write();
}

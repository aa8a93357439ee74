//! Run with cargo bench -p wink-benches --bench memory_per_object
//!
//! Benchmark 4 — memory per cached object. The local API server holds 10,000 and then
//! 100,000 Pods of ~4 KB (and 10,000 of ~16 KB); a consumer lists them and syncs. Measured:
//! the live heap bytes the consumer added (a counting global allocator: every `alloc` minus
//! every `dealloc`, by requested size, over all threads, taken before the consumer starts
//! and once it has synced and its watch is open; the server is idle meanwhile and keeps its
//! own memory constant), divided by the number of objects. (RSS deltas are not used: in one
//! process the allocator reuses the memory earlier runs freed, so RSS barely moves after the
//! first run, and it mixes in the server's transient list buffers.) Compared with the
//! objects' JSON size as served (watch/GET form, managedFields included). Consumers: wink's informer (indexer with its namespace and owner-uid indexes)
//! with managedFields stripped (its default) and kept; kube-rs's `watcher` + `reflector`
//! store of `DynamicObject`, managedFields kept (its default) and cleared in the stream.
//! Criterion times the sync of 10,000 Pods for each consumer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use wink_benches::cluster::BenchCluster;
use wink_benches::consumers::{KubeRsConsumer, KubeRsType, WinkConsumer};
use wink_benches::gate::{WatchGate, gated_client};
use wink_benches::mem::{CountingAlloc, human_bytes, rss};
use wink_benches::results::{Goal, Report, Table, human_duration, verdict};
use wink_benches::stream::Running;
use wink_benches::track::{Progress, ReadName, Tracked};
use wink_benches::workload::PodSize;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Consumer {
    WinkStripped,
    WinkFull,
    KubeRsFull,
    KubeRsStripped,
}

impl Consumer {
    const ALL: [Consumer; 4] =
        [Consumer::WinkStripped, Consumer::WinkFull, Consumer::KubeRsFull, Consumer::KubeRsStripped];

    fn label(self) -> &'static str {
        match self {
            Self::WinkStripped => "wink, managedFields stripped (default)",
            Self::WinkFull => "wink, managedFields kept",
            Self::KubeRsFull => "kube-rs store of DynamicObject, managedFields kept (default)",
            Self::KubeRsStripped => "kube-rs store of DynamicObject, managedFields cleared",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Self::WinkStripped => "wink-stripped",
            Self::WinkFull => "wink-full",
            Self::KubeRsFull => "kube-rs-dynamic-full",
            Self::KubeRsStripped => "kube-rs-dynamic-stripped",
        }
    }

    fn start(self, client: kube::Client, progress: Arc<Progress>) -> Running {
        match self {
            Self::WinkStripped | Self::WinkFull => {
                let handler = Tracked::new(Arc::new(ReadName), progress);
                Running::Wink(WinkConsumer::start(client, vec![handler], self == Self::WinkStripped))
            }
            Self::KubeRsFull | Self::KubeRsStripped => Running::KubeRs(KubeRsConsumer::start(
                client,
                KubeRsType::Dynamic,
                progress,
                self == Self::KubeRsStripped,
            )),
        }
    }
}

/// What one consumer kept after syncing.
#[derive(Clone, Copy, Debug)]
struct Kept {
    heap: f64,
    sync: Duration,
}

/// Starts `consumer`, waits until it synced and its watch is open, measures, stops it.
async fn measure(cluster: &BenchCluster, consumer: Consumer) -> Kept {
    let gate = WatchGate::opened();
    let client = gated_client(cluster.kubeconfig(), gate).await;
    let progress = Progress::new(cluster.len(), 1);
    settle().await;
    let heap0 = ALLOC.live();
    let started = Instant::now();
    let running = consumer.start(client, progress.clone());
    let synced = progress.synced().await;
    while cluster.server.open_watches() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    settle().await;
    let heap1 = ALLOC.live();
    let n = cluster.len() as f64;
    let kept = Kept { heap: (heap1 as f64 - heap0 as f64) / n, sync: synced - started };
    running.stop().await;
    if std::env::var_os("WINK_BENCH_DEBUG").is_some() {
        settle().await;
        eprintln!(
            "{consumer:?}: kept {} heap/obj, after stop: heap {} rss {}",
            human_bytes(kept.heap),
            human_bytes(ALLOC.live() as f64),
            human_bytes(rss() as f64)
        );
    }
    kept
}

/// Lets transient buffers (list pages, decode scratch) be freed before reading counters.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().configure_from_args();
    let mut results: BTreeMap<(PodSize, usize, Consumer), Kept> = BTreeMap::new();
    let mut json_sizes = BTreeMap::new();

    for (size, count) in [(PodSize::Small, 10_000), (PodSize::Large, 10_000), (PodSize::Small, 100_000)] {
        let cluster = rt.block_on(BenchCluster::start_read_only(size, count));
        json_sizes.insert((size, count), cluster.average_json_size());
        if size == PodSize::Small && count == 10_000 {
            let mut group = criterion.benchmark_group("memory_per_object/sync-10k-4KB");
            group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(1));
            for consumer in Consumer::ALL {
                group.bench_function(consumer.id(), |b| {
                    b.iter_custom(|iters| {
                        (0..iters).map(|_| rt.block_on(measure(&cluster, consumer)).sync).sum::<Duration>()
                    })
                });
            }
            group.finish();
        }
        for consumer in Consumer::ALL {
            // Two runs; the smaller figure (the one least disturbed by other activity).
            let runs: Vec<Kept> = (0..2).map(|_| rt.block_on(measure(&cluster, consumer))).collect();
            let best = runs.iter().copied().min_by(|a, b| a.heap.total_cmp(&b.heap)).expect("two runs");
            results.insert((size, count, consumer), best);
        }
        drop(cluster);
    }
    criterion.final_summary();

    let mut report = Report::new(
        "memory_per_object",
        "4. Memory per cached object",
        "Live heap bytes a consumer keeps per cached Pod after listing and syncing (counting global allocator: \
         bytes allocated minus bytes freed, all threads, before start vs. after sync with the watch open; the \
         server idle), and its ratio to the Pod's JSON as served (managedFields included); the smaller of two \
         runs. wink: the informer's indexer (items, namespace and owner-uid \
         indexes, parsed metadata, the JSON text); kube-rs: `reflector` store of `DynamicObject`.",
    );
    let mut table = Table::new("", &["Pods", "JSON / Pod", "consumer", "heap / Pod", "÷ JSON", "sync"]);
    for ((size, count, consumer), kept) in &results {
        let json = json_sizes[&(*size, *count)];
        table.row(vec![
            format!("{count} × {}", size.label()),
            human_bytes(json),
            consumer.label().into(),
            human_bytes(kept.heap),
            format!("{:.2}×", kept.heap / json),
            human_duration(kept.sync),
        ]);
    }
    report.tables.push(table);
    for (size, count) in [(PodSize::Small, 10_000), (PodSize::Small, 100_000), (PodSize::Large, 10_000)] {
        let json = json_sizes[&(size, count)];
        let ratio = |c: Consumer| results.get(&(size, count, c)).map_or(f64::NAN, |k| k.heap / json);
        let (stripped, full) = (ratio(Consumer::WinkStripped), ratio(Consumer::WinkFull));
        let kube = ratio(Consumer::KubeRsFull);
        report.notes.push(format!(
            "{count} × {}: wink {stripped:.2}× JSON stripped (target ≤ 1.0×: {}), {full:.2}× kept (target ≤ 1.2×: {}); \
             kube-rs DynamicObject {kube:.2}× (wink stripped uses {:.0}% of kube-rs's memory)",
            size.label(),
            verdict(stripped <= 1.0),
            verdict(full <= 1.2),
            100.0 * stripped / kube,
        ));
        if (size, count) == (PodSize::Small, 10_000) {
            report.goals.push(
                Goal::new(
                    "heap per cached object ≤ 1.0× its JSON stripped, ≤ 1.2× kept (4 KB Pods)",
                    format!("{stripped:.2}× / {full:.2}×"),
                    Some(stripped <= 1.0 && full <= 1.2),
                )
                .against(
                    format!("kube-rs `DynamicObject` {kube:.2}×"),
                    format!("{:.0} % of kube-rs's", 100.0 * stripped / kube),
                ),
            );
        }
    }
    report.write();
}

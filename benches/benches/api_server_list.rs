//! Run with cargo bench -p wink-benches --bench api_server_list
//!
//! Benchmark 10 — the local API server lists in linear time. The server (wink's own API
//! endpoint over an in-memory cluster, as every other benchmark uses it) holds 10,000,
//! 30,000 or 100,000 Pods of ~4 KB; a client lists them all, as informers do: a consistent
//! paged list (`limit=500`, following `continue` tokens, every page at the first page's
//! resourceVersion). The client only counts the items of each page (no decoding into
//! objects), so the time is the server's: snapshot, paging, encoding, HTTP on loopback.
//! Linear when the time per Pod stays flat as the count grows tenfold.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use serde::Deserialize;
use serde::de::IgnoredAny;
use wink_benches::cluster::BenchCluster;
use wink_benches::gate::{WatchGate, gated_client};
use wink_benches::results::{Goal, Report, Table, human_duration, median, verdict};
use wink_benches::workload::PodSize;

const COUNTS: [usize; 3] = [10_000, 30_000, 100_000];
const PAGE: usize = 500;

#[derive(Deserialize)]
struct Page {
    metadata: PageMeta,
    items: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// Lists every Pod in pages; returns how many were listed.
async fn list_all(client: &kube::Client) -> usize {
    let mut listed = 0;
    let mut token: Option<String> = None;
    loop {
        let mut uri = format!("/api/v1/pods?limit={PAGE}");
        if let Some(token) = token.as_deref().filter(|t| !t.is_empty()) {
            uri.push_str("&continue=");
            uri.push_str(token);
        }
        let request = http::Request::get(uri).body(Vec::new()).expect("a list request");
        let text = client.request_text(request).await.expect("listing Pods");
        let page: Page = serde_json::from_str(&text).expect("a list page");
        listed += page.items.len();
        match page.metadata.continue_token.filter(|t| !t.is_empty()) {
            Some(next) => token = Some(next),
            None => return listed,
        }
    }
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().warm_up_time(Duration::from_millis(1)).configure_from_args();
    let mut times: BTreeMap<usize, Vec<Duration>> = BTreeMap::new();
    for count in COUNTS {
        let cluster = rt.block_on(BenchCluster::start_read_only(PodSize::Small, count));
        let client = rt.block_on(gated_client(cluster.kubeconfig(), WatchGate::opened()));
        let mut group = criterion.benchmark_group("api_server_list");
        group.sampling_mode(SamplingMode::Flat).sample_size(10).measurement_time(Duration::from_secs(1));
        group.throughput(Throughput::Elements(count as u64));
        group.bench_function(count.to_string(), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let listed = rt.block_on(list_all(&client));
                    let took = started.elapsed();
                    assert_eq!(listed, count, "every Pod listed");
                    times.entry(count).or_default().push(took);
                    total += took;
                }
                total
            })
        });
        group.finish();
        drop(cluster);
    }
    criterion.final_summary();

    let mut report = Report::new(
        "api_server_list",
        "10. The local API server's lists",
        "The local API server (wink's API endpoint over an in-memory cluster) holds N Pods of ~4 KB; a client \
         lists them all as informers do: paged (`limit=500`), following `continue` tokens, every page at the \
         first page's resourceVersion. The client counts each page's items without decoding them, so the \
         time is the server's (snapshot, paging, encoding) plus HTTP on loopback. Medians of the runs.",
    );
    let mut table = Table::new("", &["Pods", "runs", "list", "per Pod", "per Pod ÷ 10,000 Pods"]);
    let per_pod = |count: usize| times.get(&count).map(|t| median(t).as_secs_f64() / count as f64);
    let base = per_pod(COUNTS[0]);
    for count in COUNTS {
        let (Some(runs), Some(each)) = (times.get(&count), per_pod(count)) else { continue };
        table.row(vec![
            wink_benches::results::thousands(count as f64),
            runs.len().to_string(),
            human_duration(median(runs)),
            human_duration(Duration::from_secs_f64(each)),
            base.map(|b| format!("{:.2}×", each / b)).unwrap_or_default(),
        ]);
    }
    report.tables.push(table);
    if let (Some(small), Some(large)) = (base, per_pod(COUNTS[COUNTS.len() - 1])) {
        let growth = large / small;
        report.notes.push(format!(
            "time per Pod at 100,000 Pods ÷ at 10,000: {growth:.2}× (target: linear, within 1.25×: {})",
            verdict(growth <= 1.25)
        ));
        report.goals.push(
            Goal::new(
                "the local API server lists in linear time (within 1.25×)",
                format!("{} per Pod at 100,000", human_duration(Duration::from_secs_f64(large))),
                Some(growth <= 1.25),
            )
            .against(format!("{} at 10,000", human_duration(Duration::from_secs_f64(small))), format!("{growth:.2}×")),
        );
    }
    report.write();
    rt.shutdown_background();
}

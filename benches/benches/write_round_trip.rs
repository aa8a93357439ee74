//! Run with cargo bench -p wink-benches --bench write_round_trip
//!
//! Benchmark 8 — a plugin's write to the cluster. Against an API server on loopback (wink's
//! own `--serve-api` endpoint over a directory source, the same for both sides):
//!
//! 1. `native patch`: a JSON merge patch of one ConfigMap sent by the kube client from
//!    native code (`Api::patch`), awaited;
//! 2. `plugin patch`: the same patch made by the `bench-writer` plugin in one call
//!    (`PluginInstance::on_update`): the call into the guest, the guest's `cluster.patch`,
//!    wink's permission check and budget, the kube client's request, the answer lowered into
//!    the guest — one write's round trip through wink. Goal: at most 1.2× native.
//!
//! and create throughput with 10 writers at once: 10 plugin instances on 10 threads, each
//! creating ConfigMaps in turn (`on-add` → `cluster.create`), against 10 native tasks
//! creating with the kube client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wink::cluster::KubeClient;
use wink::embedded::http::serve_api;
use wink::informer::Object;
use wink::plugin::ClusterContext;
use wink::source::DirSource;
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::results::{Goal, Report, Table, human_duration, median, verdict};

const WRITERS: usize = 10;
const CREATES_PER_WRITER: usize = 200;
const GOAL: f64 = 1.1;

fn target() -> Object {
    Object::from_string(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target", "namespace": "bench"}, "data": {}})
            .to_string(),
    )
    .unwrap()
}

fn samples(n: usize, mut one: impl FnMut() -> Duration) -> Vec<Duration> {
    (0..n).map(|_| one()).collect()
}

fn main() {
    let rt = wink_benches::runtime();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("target.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target, namespace: bench}\ndata: {}\n",
    )
    .unwrap();
    let source = DirSource::open(dir.path()).unwrap();
    let cancel = CancellationToken::new();
    let (addr, _server) = rt.block_on(serve_api("127.0.0.1:0".parse().unwrap(), source, cancel.clone())).unwrap();
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let api: Api<ConfigMap> = {
        let _guard = rt.enter();
        Api::namespaced(kube::Client::try_from(config.clone()).unwrap(), "bench")
    };

    let engine = plugins::engine(WRITERS as u32 + 2);
    let plugin = plugins::load(&plugins::bench_writer(), &engine);
    let context = {
        // The kube client spawns its connection pool's worker on the current runtime.
        let _guard = rt.enter();
        ClusterContext::new(Arc::new(KubeClient::new(config).unwrap()), false)
    };
    // A link per plugin, as the registry makes one: each writer is a plugin of its own, with
    // its own request budget.
    let sandbox = |name: &str| {
        // Linking spawns the link's tasks on the current runtime.
        let _guard = rt.enter();
        let link = context.link(&plugin.manifest, wink::plugin::PluginMetrics::detached(name)).unwrap();
        plugins::sandbox_with_cluster(&plugin, &engine, &PluginSettings::named(name), Some(link))
    };
    let mut instance = sandbox("bench-writer").instantiate().expect("bench-writer starts");
    let target = target();

    let mut c = Criterion::default().configure_from_args().sample_size(50).measurement_time(Duration::from_secs(5));
    let mut group = c.benchmark_group("write_round_trip");
    let mut n = 0u64;
    group.bench_function("native patch", |b| {
        b.iter(|| {
            n += 1;
            let patch = Patch::Merge(json!({"data": {"seen": n.to_string()}}));
            rt.block_on(api.patch("target", &PatchParams::default(), &patch)).unwrap();
        });
    });
    group.bench_function("plugin patch", |b| {
        b.iter(|| assert_eq!(instance.on_update(&target, &target), wink::plugin::CallOutcome::Ok));
    });
    group.finish();

    // The figures of the report: medians of many single round trips, interleaved.
    let mut native = Vec::new();
    let mut through_wink = Vec::new();
    for i in 0..500u64 {
        native.extend(samples(1, || {
            let patch = Patch::Merge(json!({"data": {"seen": format!("n{i}")}}));
            let started = Instant::now();
            rt.block_on(api.patch("target", &PatchParams::default(), &patch)).unwrap();
            started.elapsed()
        }));
        through_wink.extend(samples(1, || {
            let started = Instant::now();
            assert_eq!(instance.on_update(&target, &target), wink::plugin::CallOutcome::Ok);
            started.elapsed()
        }));
    }
    let (native, through_wink) = (median(&native), median(&through_wink));
    let ratio = through_wink.as_secs_f64() / native.as_secs_f64();

    // Create throughput, 10 writers at once.
    let native_creates = {
        let started = Instant::now();
        rt.block_on(async {
            let tasks: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let api = api.clone();
                    tokio::spawn(async move {
                        for i in 0..CREATES_PER_WRITER {
                            let cm: ConfigMap =
                                serde_json::from_value(json!({"metadata": {"name": format!("native-{w}-{i}")}}))
                                    .unwrap();
                            api.create(&PostParams::default(), &cm).await.unwrap();
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        (WRITERS * CREATES_PER_WRITER) as f64 / started.elapsed().as_secs_f64()
    };
    let plugin_creates = {
        let instances: Vec<_> =
            (0..WRITERS).map(|w| sandbox(&format!("writer-{w}")).instantiate().expect("a writer starts")).collect();
        let started = Instant::now();
        std::thread::scope(|scope| {
            for (w, mut instance) in instances.into_iter().enumerate() {
                scope.spawn(move || {
                    for i in 0..CREATES_PER_WRITER {
                        let seed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("w{w}-{i}"), "namespace": "bench"}});
                        let obj = Object::from_string(seed.to_string()).unwrap();
                        assert_eq!(instance.on_add(&obj, false), wink::plugin::CallOutcome::Ok);
                    }
                });
            }
        });
        (WRITERS * CREATES_PER_WRITER) as f64 / started.elapsed().as_secs_f64()
    };
    cancel.cancel();

    let mut report = Report::new(
        "write_round_trip",
        "8. A plugin's write to the cluster",
        "An API server on loopback (wink's `--serve-api` over a directory source), the same for both sides. \
         `native patch`: a JSON merge patch of one ConfigMap by the kube client from native code. `plugin patch`: \
         the same patch made by the `bench-writer` plugin in one `on-update` call (guest, permission check, budget, \
         kube client, answer lowered into the guest). Medians of 500 interleaved round trips. Create throughput: \
         10 writers at once, each creating 200 ConfigMaps in turn (10 plugin instances on 10 threads, or 10 tokio \
         tasks with the kube client); each writer a plugin of its own (its own request budget: 1,000 per \
         second and a burst of 1,000, the most a manifest may ask).",
    );
    let mut table =
        Table::new("One patch's round trip", &["native (kube client)", "through a plugin", "ratio", "goal ≤ 1.1×"]);
    table.row(vec![
        human_duration(native),
        human_duration(through_wink),
        format!("{ratio:.2}×"),
        verdict(ratio <= GOAL).to_owned(),
    ]);
    report.tables.push(table);
    let mut throughput =
        Table::new("Creates per second, 10 writers at once", &["native (kube client)", "plugins", "ratio"]);
    throughput.row(vec![
        format!("{native_creates:.0}"),
        format!("{plugin_creates:.0}"),
        format!("{:.2}×", native_creates / plugin_creates),
    ]);
    report.tables.push(throughput);
    report.goals.push(
        Goal::new(
            "a plugin's patch ≤ 1.1× the kube client's from native code",
            human_duration(through_wink),
            Some(ratio <= GOAL),
        )
        .against(format!("kube client {}", human_duration(native)), format!("{ratio:.2}×")),
    );
    report.goals.push(
        Goal::new("creates per second, 10 plugins writing at once", format!("{plugin_creates:.0}/s"), None).against(
            format!("10 kube client tasks {native_creates:.0}/s"),
            format!("{:.2}×", plugin_creates / native_creates),
        ),
    );
    report.write();
    println!("{}", report.to_markdown());
}

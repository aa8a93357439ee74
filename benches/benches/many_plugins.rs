//! Run with cargo bench -p wink-benches --bench many_plugins
//!
//! Benchmark 5 — many plugins. A plugins folder of 10,000 copies of the `bench-noop` Rust
//! plugin (distinct names, one component hard-linked into every folder, each watching Pods
//! in its own namespace), and one of 20 Python and 20 JavaScript plugins (copies of the
//! components `cargo xtask build-plugins` made), deployed by `PluginRegistry::sync_dir` as
//! `wink run` does, over an in-memory source. Measured:
//!
//! - start time (folder scan, manifests, compile or load from the cache, pre-link,
//!   instantiate + `init` of every plugin, listener registration) with a cold (empty) and a
//!   warm compiled-component cache, and the RSS then — each start in a fresh process (this
//!   binary re-runs itself), so RSS figures do not mix; then a rescan of the unchanged
//!   folder (what the folder watcher runs on any change in it); the 10,000 Rust plugins
//!   also started on their first event (`--start-plugins on-first-event`: deployed and
//!   listening, no instance until an event comes);
//! - instantiation time (instance + `init`) of one plugin per language (criterion);
//! - the cost of one event: an update of a Pod in a namespace one plugin watches, until that
//!   plugin's guest was called, with 10, 100, 1,000 and 10,000 plugins deployed — all the
//!   others watching other namespaces (criterion; the median must stay flat).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};
use serde::{Deserialize, Serialize};
use wink::embedded::{MemorySource, MemorySourceOptions};
use wink::informer::{InformerFactory, ListerWatcher, ResourceKey, SourceError};
use wink::plugin::{Allocation, GuestPool, MetricsRegistry, PluginEngine, PluginRegistry, PluginStart};
use wink_benches::mem::{human_bytes, rss, rss_shared};
use wink_benches::plugins::{self, Language, PluginSettings};
use wink_benches::results::{Report, Table, human_duration, median, verdict};
use wink_benches::workload::{self, PodSize};

const RUST_PLUGINS: usize = 10_000;
const POLYGLOT_EACH: usize = 20;
const STEPS: [usize; 4] = [10, 100, 1_000, 10_000];

/// What a child process reports about one start.
#[derive(Debug, Serialize, Deserialize)]
struct StartReport {
    plugins: usize,
    failed: usize,
    start: Duration,
    compilations: u64,
    cache_hits: u64,
    rss_before: usize,
    rss_after: usize,
    /// Of `rss_after`, file-backed or shared pages.
    #[serde(default)]
    rss_shared_after: usize,
    /// A rescan of the unchanged folder after the start (after RSS was read).
    #[serde(default)]
    rescan: Duration,
}

fn tenant(i: usize) -> String {
    format!("tenant-{i:05}")
}

/// Writes the folder of `count` bench-noop copies, `noop-00000`… each on its own namespace.
fn rust_folder(root: &Path, count: usize) {
    let component = plugins::component_of(&plugins::bench_noop());
    for i in 0..count {
        let name = format!("noop-{i:05}");
        if !root.join(&name).join("plugin.yaml").is_file() {
            plugins::install_copy(root, &name, &component, Some(&tenant(i)), "");
        }
    }
}

/// Writes the folder of `each` copies of every Python and JavaScript plugin found; returns
/// how many of each language.
fn polyglot_folder(root: &Path, each: usize) -> Vec<(Language, usize, String)> {
    let mut found = Vec::new();
    for language in [Language::Python, Language::JavaScript] {
        let built = plugins::built_in_language(language);
        let Some(source) = built.first() else {
            found.push((language, 0, String::new()));
            continue;
        };
        let component = plugins::component_of(source);
        let config = plugins::config_block(source);
        let stem = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for i in 0..each {
            let name = format!("{}-{stem}-{i:02}", language.name().to_lowercase());
            plugins::install_copy(root, &name, &component, Some(&tenant(50_000 + i)), &config);
        }
        found.push((language, each, stem));
    }
    found
}

fn pods_provider(source: MemorySource) -> Arc<dyn wink::informer::SourceProvider> {
    Arc::new(move |_: &ResourceKey| Ok::<_, SourceError>(Arc::new(source.clone()) as Arc<dyn ListerWatcher>))
}

/// A host over `source` with an engine for `instances` instances caching in `cache`.
fn host(source: &MemorySource, instances: u32, cache: &Path) -> (PluginEngine, Arc<InformerFactory>, PluginRegistry) {
    let engine = PluginEngine::new(plugins::engine_config(instances, Some(cache.to_owned()))).expect("engine");
    if let Allocation::OnDemand { fallback_reason: Some(why) } = engine.allocation() {
        eprintln!("many_plugins: the instance pool for {instances} instances was not reserved ({why}): on-demand");
    }
    let factory = Arc::new(InformerFactory::new(pods_provider(source.clone())));
    let registry = PluginRegistry::new(engine.clone(), factory.clone(), MetricsRegistry::new(), GuestPool::per_core());
    (engine, factory, registry)
}

/// In a child process: start every plugin of `folder` (as `start` says) and report.
fn child_start(folder: &Path, cache: &Path, start: PluginStart) {
    let rt = wink_benches::runtime();
    let report = rt.block_on(async {
        let source = MemorySource::new(MemorySourceOptions::default());
        let count = std::fs::read_dir(folder).map(|d| d.count()).unwrap_or(0);
        let rss_before = rss();
        let (engine, factory, registry) = host(&source, (count as u32 + 16).max(64), cache);
        let registry = registry.with_start(start);
        let started = Instant::now();
        let failed = registry.sync_dir(folder).await.expect("reading the plugins folder");
        let start = started.elapsed();
        for e in failed.iter().take(3) {
            eprintln!("many_plugins: failed: {e}");
        }
        let mut report = StartReport {
            plugins: registry.status().await.len(),
            failed: failed.len(),
            start,
            compilations: engine.compilations(),
            cache_hits: engine.cache_hits(),
            rss_before,
            rss_after: rss(),
            rss_shared_after: rss_shared(),
            rescan: Duration::ZERO,
        };
        let rescan = Instant::now();
        registry.sync_dir(folder).await.expect("rescanning the plugins folder");
        report.rescan = rescan.elapsed();
        factory.shutdown().await;
        report
    });
    println!("{}", serde_json::to_string(&report).expect("report serializes"));
    // The registry's instances and the pool are torn down with the process.
    std::process::exit(0);
}

/// Runs `child_start` in a fresh process of this binary.
fn start_in_child(folder: &Path, cache: &Path, start: PluginStart) -> StartReport {
    let out = Command::new(std::env::current_exe().expect("this binary"))
        .env("WINK_BENCH_CHILD_FOLDER", folder)
        .env("WINK_BENCH_CHILD_CACHE", cache)
        .env("WINK_BENCH_CHILD_START", start.to_string())
        .output()
        .expect("running the child");
    for line in String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("many_plugins:")) {
        eprintln!("{line}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("child failed ({e}): {}\n{}", out.status, String::from_utf8_lossy(&out.stderr)))
}

/// Waits until `plugin`'s guest calls exceed `calls`.
async fn called(registry: &PluginRegistry, plugin: &str, calls: u64) {
    let metrics = registry.metrics().plugin(plugin);
    while metrics.calls() <= calls {
        tokio::task::yield_now().await;
    }
}

fn main() {
    if let (Some(folder), Some(cache)) =
        (std::env::var_os("WINK_BENCH_CHILD_FOLDER"), std::env::var_os("WINK_BENCH_CHILD_CACHE"))
    {
        let start = std::env::var("WINK_BENCH_CHILD_START").ok().and_then(|s| s.parse().ok()).unwrap_or_default();
        child_start(Path::new(&folder), Path::new(&cache), start);
        return;
    }
    let work = tempfile::tempdir().expect("a temporary folder");
    let rust = work.path().join("rust");
    let polyglot = work.path().join("polyglot");
    rust_folder(&rust, RUST_PLUGINS);
    let languages = polyglot_folder(&polyglot, POLYGLOT_EACH);

    // Start times and RSS, each in a fresh process: cold (empty cache), then warm.
    let mut starts: Vec<(String, &str, StartReport)> = Vec::new();
    for (label, folder) in [("10,000 Rust plugins", &rust), ("20 Python + 20 JavaScript plugins", &polyglot)] {
        let cache = work.path().join(format!("cache-{}", folder.file_name().unwrap_or_default().to_string_lossy()));
        starts.push((label.into(), "cold", start_in_child(folder, &cache, PluginStart::OnDeploy)));
        starts.push((label.into(), "warm", start_in_child(folder, &cache, PluginStart::OnDeploy)));
        if folder == &rust {
            let lazy = start_in_child(folder, &cache, PluginStart::OnFirstEvent);
            starts.push((format!("{label}, started on first event"), "warm", lazy));
        }
    }

    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().configure_from_args();

    // Instantiation (instance + init) per language.
    let mut instantiation: Vec<(String, Duration)> = Vec::new();
    {
        let engine = rt.block_on(async { plugins::engine(64) });
        let mut targets: Vec<(String, PathBuf)> = vec![("Rust (bench-noop)".into(), plugins::bench_noop())];
        for language in [Language::Python, Language::JavaScript] {
            if let Some(dir) = plugins::built_in_language(language).first() {
                let stem = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
                targets.push((format!("{} ({stem})", language.name()), dir.clone()));
            }
        }
        let mut group = criterion.benchmark_group("many_plugins/instantiate");
        group.sample_size(10);
        for (label, dir) in &targets {
            let plugin = plugins::load(dir, &engine);
            let mut settings = PluginSettings::named("instantiate");
            settings.config_json = plugin.manifest.config_json();
            let sandbox = plugins::sandbox(&plugin, &engine, &settings);
            let mut times = Vec::new();
            group.bench_function(label.as_str(), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let started = Instant::now();
                        let instance = sandbox.instantiate().expect("the plugin starts");
                        let elapsed = started.elapsed();
                        drop(instance);
                        times.push(elapsed);
                        total += elapsed;
                    }
                    total
                })
            });
            instantiation.push((label.clone(), median(&times)));
        }
        group.finish();
    }

    // The cost of one event as plugins that do not match it grow.
    let mut per_event: Vec<(usize, Duration)> = Vec::new();
    {
        let source = MemorySource::new(MemorySourceOptions::default());
        let cache = work.path().join("cache-rust");
        let (_engine, factory, registry) = rt.block_on(async { host(&source, RUST_PLUGINS as u32 + 16, &cache) });
        let steps = work.path().join("steps");
        let mut pod = workload::pod(PodSize::Small, &tenant(0), 0);
        source.apply(pod.clone()).expect("a Pod");
        let mut seq = 0u64;
        let mut group = criterion.benchmark_group("many_plugins/event");
        group.sampling_mode(SamplingMode::Flat).sample_size(20);
        for step in STEPS {
            rust_folder(&steps, step);
            let failed = rt.block_on(registry.sync_dir(&steps)).expect("reading the plugins folder");
            assert!(
                failed.is_empty(),
                "plugins failed: {:?}",
                failed.iter().take(3).map(ToString::to_string).collect::<Vec<_>>()
            );
            let mut times = Vec::new();
            group.bench_function(format!("{step}-plugins"), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let before = registry.metrics().plugin("noop-00000").calls();
                            seq += 1;
                            workload::touch(&mut pod, seq);
                            let started = Instant::now();
                            source.apply(pod.clone()).expect("an update");
                            called(&registry, "noop-00000", before).await;
                            let elapsed = started.elapsed();
                            times.push(elapsed);
                            total += elapsed;
                        }
                        total
                    })
                })
            });
            per_event.push((step, median(&times)));
        }
        group.finish();
        rt.block_on(factory.shutdown());
    }
    criterion.final_summary();

    let mut report = Report::new(
        "many_plugins",
        "5. Many plugins",
        "Plugins deployed from a folder by `PluginRegistry::sync_dir`, as `wink run` does, over an in-memory \
         source; the engine's instance pool sized to the plugin count. Start = scan, manifests, compile (cold: \
         empty cache) or load the compiled component (warm), pre-link, instantiate + `init` every plugin \
         (started on first event: none, no event comes), register its listener; each start in a fresh process, \
         RSS read there, then the unchanged folder rescanned (as the folder watcher does on any change in it). \
         Per-event cost: an update of \
         a Pod in `tenant-00000` (watched by one plugin) until that plugin's guest was called, medians.",
    );
    let mut table = Table::new(
        "Start",
        &[
            "plugins",
            "cache",
            "start time",
            "compiled",
            "from cache",
            "RSS after start",
            "of it file/shared",
            "RSS Δ",
            "deployed",
            "rescan, unchanged",
        ],
    );
    for (label, cache, r) in &starts {
        table.row(vec![
            label.clone(),
            (*cache).into(),
            human_duration(r.start),
            r.compilations.to_string(),
            r.cache_hits.to_string(),
            human_bytes(r.rss_after as f64),
            human_bytes(r.rss_shared_after as f64),
            human_bytes(r.rss_after as f64 - r.rss_before as f64),
            format!("{} ({} failed)", r.plugins, r.failed),
            human_duration(r.rescan),
        ]);
    }
    report.tables.push(table);
    let mut table = Table::new("Instantiation (instance + `init`)", &["plugin", "median"]);
    for (label, t) in &instantiation {
        table.row(vec![label.clone(), human_duration(*t)]);
    }
    report.tables.push(table);
    let mut table = Table::new(
        "One event, as non-matching plugins grow",
        &["plugins deployed", "event → guest call (median)", "÷ 10 plugins"],
    );
    let base = per_event.first().map(|(_, t)| *t).unwrap_or_default();
    for (step, t) in &per_event {
        table.row(vec![step.to_string(), human_duration(*t), format!("{:.2}×", t.as_secs_f64() / base.as_secs_f64())]);
    }
    report.tables.push(table);
    for (language, count, stem) in &languages {
        if *count == 0 {
            report.notes.push(format!("no {} plugin was built: its rows are pending", language.name()));
        } else {
            report.notes.push(format!("{} plugins: {count} copies of `{stem}`", language.name()));
        }
    }
    for (label, _, warm) in starts.iter().filter(|(l, c, _)| l.starts_with("10,000") && *c == "warm") {
        report.notes.push(format!(
            "{label}: RSS {} (target < 256 MiB: {}), warm start {} (target < 1 s: {})",
            human_bytes(warm.rss_after as f64),
            verdict(warm.rss_after < 256 << 20 && warm.failed == 0),
            human_duration(warm.start),
            verdict(warm.start < Duration::from_secs(1) && warm.failed == 0),
        ));
    }
    if let Some((_, last)) = per_event.last() {
        let ratio = last.as_secs_f64() / base.as_secs_f64();
        report.notes.push(format!(
            "one event with 10,000 plugins ÷ with 10: {ratio:.2}× (target: flat; {} within 1.5×)",
            verdict(ratio <= 1.5)
        ));
    }
    report.write();
}

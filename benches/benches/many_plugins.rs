//! Run with cargo bench -p wink-benches --bench many_plugins
//!
//! Benchmark 5 — many plugins. A plugins folder of 10,000 copies of the `bench-noop` Rust
//! plugin (distinct names, one component hard-linked into every folder, each watching Pods
//! in its own namespace), and one of 20 Python and 20 JavaScript plugins (copies of the
//! components `cargo xtask build-plugins` made), deployed by the registry of a `Host` built as
//! `wink run` builds it, over an in-memory source. Measured:
//!
//! - start time (folder scan, manifests, compile or load from the cache, pre-link, listener
//!   registration; started as they deploy, instantiate + `init` of every plugin too) with a
//!   cold (empty) and a warm compiled-component cache, and the RSS then — each start in a
//!   fresh process (this binary re-runs itself), so RSS figures do not mix; then a rescan of
//!   the unchanged folder (what the folder watcher runs on any change in it). The 10,000
//!   Rust plugins with the defaults of `wink run` (started on their first event, an instance
//!   pool of 1,000 places and the default memory budget, shared least recently used first:
//!   each live instance reserves its 64 MiB limit), then every one of them sent an event (a
//!   Pod in its namespace) and the RSS read again; and started as they deploy in a pool and
//!   a budget sized for them (`--start-plugins on-deploy --max-instances 10016` and a
//!   budget that holds 10,000 reservations, the default before recycling);
//! - the first event to a plugin whose instance was recycled (instantiate + `init` + the
//!   call) beside the next, warm, event to it: p50 and p99 over plugins;
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
use tokio_util::sync::CancellationToken;
use wink::app::{CustomSource, Host, RunOptions};
use wink::embedded::{MemorySource, MemorySourceOptions};
use wink::informer::{InformerFactory, ListerWatcher, ResourceKey, SourceError};
use wink::plugin::{Allocation, DEFAULT_MAX_INSTANCES, PluginEngine, PluginRegistry, PluginStart};
use wink_benches::mem::{human_bytes, rss, rss_shared};
use wink_benches::plugins::{self, Language, PluginSettings};
use wink_benches::results::{Goal, Report, Table, human_duration, median, percentile, verdict};
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
    /// With every plugin sent an event after the start: how long until each was called, the
    /// RSS then, and the instances recycled meanwhile.
    #[serde(default)]
    events: Option<EventsReport>,
}

/// What a child reports of sending every plugin an event.
#[derive(Debug, Serialize, Deserialize)]
struct EventsReport {
    took: Duration,
    rss_after: usize,
    recycled: u64,
}

/// How a child starts its plugins.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct ChildStart {
    #[serde(with = "start_name")]
    start: PluginStart,
    /// The instance pool's places (`None`: one per plugin, and some).
    pool: Option<u32>,
    /// Send every plugin an event after the start.
    events: bool,
}

/// `PluginStart` by the name `wink run --start-plugins` takes.
mod start_name {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};
    use wink::plugin::PluginStart;

    pub fn serialize<S: Serializer>(start: &PluginStart, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(start)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PluginStart, D::Error> {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

fn tenant(i: usize) -> String {
    format!("tenant-{i:05}")
}

/// The name of the `i`th Rust plugin, which watches `tenant(i)`.
fn noop(i: usize) -> String {
    format!("noop-{i:05}")
}

/// Writes the folder of `count` bench-noop copies, `noop-00000`… each on its own namespace.
fn rust_folder(root: &Path, count: usize) {
    let component = plugins::component_of(&plugins::bench_noop());
    for i in 0..count {
        let name = noop(i);
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

/// A host as `wink run` builds it, with its default bounds, over `source` (Pods only), with
/// an engine for `instances` instances caching in `cache`, plugins started as `start` says.
/// Started as they deploy, every plugin reserves its memory limit at deploy: the budget is
/// raised to hold them all (`--plugin-memory-budget`), or most would be refused.
async fn host(
    source: &MemorySource,
    instances: u32,
    cache: &Path,
    start: PluginStart,
) -> (PluginEngine, Arc<InformerFactory>, Arc<PluginRegistry>) {
    let engine = PluginEngine::new(plugins::engine_config(instances, Some(cache.to_owned()))).expect("engine");
    if let Allocation::OnDemand { fallback_reason: Some(why) } = engine.allocation() {
        eprintln!("many_plugins: the instance pool for {instances} instances was not reserved ({why}): on-demand");
    }
    let mut options = RunOptions { start_plugins: start, ..RunOptions::default() };
    if start == PluginStart::OnDeploy {
        options.bounds.plugin_memory_budget = Some(u64::MAX);
    }
    let source = CustomSource { provider: pods_provider(source.clone()), client: None, impersonate: false };
    let host = Host::builder(options)
        .source(source)
        .engine(engine.clone())
        .build(CancellationToken::new())
        .await
        .expect("building the host");
    (engine, host.factory().clone(), host.registry().clone())
}

/// In a child process: start every plugin of `folder` (as `how` says) and report.
fn child_start(folder: &Path, cache: &Path, how: ChildStart) {
    let rt = wink_benches::runtime();
    let report = rt.block_on(async {
        let source = MemorySource::new(MemorySourceOptions::default());
        let count = std::fs::read_dir(folder).map(|d| d.count()).unwrap_or(0);
        let rss_before = rss();
        let places = how.pool.unwrap_or((count as u32 + 16).max(64));
        let (engine, factory, registry) = host(&source, places, cache, how.start).await;
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
            events: None,
        };
        let rescan = Instant::now();
        registry.sync_dir(folder).await.expect("rescanning the plugins folder");
        report.rescan = rescan.elapsed();
        if how.events {
            report.events = Some(event_to_each(&source, &registry, count).await);
        }
        factory.shutdown().await;
        report
    });
    println!("{}", serde_json::to_string(&report).expect("report serializes"));
    // The registry's instances and the pool are torn down with the process.
    std::process::exit(0);
}

/// Sends each of the `count` Rust plugins (`noop-NNNNN`, watching `tenant-NNNNN`) an event
/// (a Pod in its namespace) and waits until every one was called.
async fn event_to_each(source: &MemorySource, registry: &PluginRegistry, count: usize) -> EventsReport {
    let started = Instant::now();
    for i in 0..count {
        source.apply(workload::pod(PodSize::Small, &tenant(i), i)).expect("a Pod");
    }
    for i in 0..count {
        // `init` and the add.
        called(registry, &noop(i), 1).await;
    }
    let took = started.elapsed();
    // Counted once every plugin was called: a plugin's instance may be recycled after its call.
    let recycled = (0..count).map(|i| registry.metrics().plugin(&noop(i)).recycled()).sum();
    EventsReport { took, rss_after: rss(), recycled }
}

/// Runs `child_start` in a fresh process of this binary.
fn start_in_child(folder: &Path, cache: &Path, how: ChildStart) -> StartReport {
    let out = Command::new(std::env::current_exe().expect("this binary"))
        .env("WINK_BENCH_CHILD_FOLDER", folder)
        .env("WINK_BENCH_CHILD_CACHE", cache)
        .env("WINK_BENCH_CHILD_START", serde_json::to_string(&how).expect("serializes"))
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

/// Plugins whose instances were recycled, sampled: how many.
const RECYCLED_SAMPLES: usize = 500;

/// The 10,000 Rust plugins of `folder` with the defaults (started on first event, a pool of
/// 1,000 places, the default memory budget): 2,000 plugins sent an event each, so that the
/// first 1,000's instances were recycled to make room; then, for each of the first `RECYCLED_SAMPLES`, an event (a new
/// instance, `init`, the call — on a full pool, after recycling the least recently used)
/// and at once another (warm). The two lists of times.
async fn recycled_events(folder: &Path, cache: &Path) -> (Vec<Duration>, Vec<Duration>) {
    let source = MemorySource::new(MemorySourceOptions::default());
    let (_engine, factory, registry) = host(&source, DEFAULT_MAX_INSTANCES, cache, PluginStart::default()).await;
    let failed = registry.sync_dir(folder).await.expect("reading the plugins folder");
    assert!(failed.is_empty(), "plugins failed: {}", failed.len());
    let mut pods: Vec<_> =
        (0..2 * DEFAULT_MAX_INSTANCES as usize).map(|i| workload::pod(PodSize::Small, &tenant(i), i)).collect();
    for (i, pod) in pods.iter().enumerate() {
        source.apply(pod.clone()).expect("a Pod");
        called(&registry, &noop(i), 1).await;
    }
    let (mut first, mut warm) = (Vec::new(), Vec::new());
    for (i, pod) in pods.iter_mut().enumerate().take(RECYCLED_SAMPLES) {
        let name = noop(i);
        assert!(registry.metrics().plugin(&name).recycled() >= 1, "{name} was not recycled");
        for (times, calls) in [(&mut first, 2), (&mut warm, 1)] {
            let before = registry.metrics().plugin(&name).calls();
            workload::touch(pod, 1 + times.len() as u64);
            let started = Instant::now();
            source.apply(pod.clone()).expect("an update");
            called(&registry, &name, before + calls - 1).await;
            times.push(started.elapsed());
        }
    }
    factory.shutdown().await;
    (first, warm)
}

fn main() {
    if let (Some(folder), Some(cache)) =
        (std::env::var_os("WINK_BENCH_CHILD_FOLDER"), std::env::var_os("WINK_BENCH_CHILD_CACHE"))
    {
        let how = std::env::var("WINK_BENCH_CHILD_START").expect("the child's start");
        child_start(Path::new(&folder), Path::new(&cache), serde_json::from_str(&how).expect("a start"));
        return;
    }
    let work = tempfile::tempdir().expect("a temporary folder");
    let rust = work.path().join("rust");
    let polyglot = work.path().join("polyglot");
    rust_folder(&rust, RUST_PLUGINS);
    let languages = polyglot_folder(&polyglot, POLYGLOT_EACH);

    // Start times and RSS, each in a fresh process: cold (empty cache), then warm.
    let mut starts: Vec<(String, &str, StartReport)> = Vec::new();
    let defaults = ChildStart { start: PluginStart::OnFirstEvent, pool: Some(DEFAULT_MAX_INSTANCES), events: false };
    let on_deploy = ChildStart { start: PluginStart::OnDeploy, pool: None, events: false };
    for (label, folder) in [("10,000 Rust plugins", &rust), ("20 Python + 20 JavaScript plugins", &polyglot)] {
        let cache = work.path().join(format!("cache-{}", folder.file_name().unwrap_or_default().to_string_lossy()));
        if folder == &rust {
            starts.push((label.into(), "cold", start_in_child(folder, &cache, defaults)));
            starts.push((label.into(), "warm", start_in_child(folder, &cache, defaults)));
            let busy = start_in_child(folder, &cache, ChildStart { events: true, ..defaults });
            starts.push((format!("{label}, then an event to each"), "warm", busy));
            starts.push((
                format!("{label}, started as they deploy"),
                "warm",
                start_in_child(folder, &cache, on_deploy),
            ));
        } else {
            starts.push((label.into(), "cold", start_in_child(folder, &cache, on_deploy)));
            starts.push((label.into(), "warm", start_in_child(folder, &cache, on_deploy)));
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
        let (_engine, factory, registry) =
            rt.block_on(host(&source, RUST_PLUGINS as u32 + 16, &cache, PluginStart::default()));
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
    let recycling = rt.block_on(recycled_events(&rust, &work.path().join("cache-rust")));
    criterion.final_summary();

    let mut report = Report::new(
        "many_plugins",
        "5. Many plugins",
        "Plugins deployed from a folder by the registry of a `Host` built as `wink run` builds it, over an \
         in-memory source. The 10,000 Rust plugins with `wink run`'s defaults: started on their first event, \
         an instance pool of 1,000 places and the default memory budget (half of the machine's memory), each \
         live instance reserving its 64 MiB limit (the least recently used idle instance recycled when either \
         is full); started as they deploy: a pool sized to the plugin count and a budget raised to hold every \
         plugin's reservation; Python and JavaScript: started as they deploy. Start = scan, \
         manifests, compile (cold: empty cache) or load the compiled component (warm), pre-link, (as they \
         deploy) instantiate + `init` every plugin, register its listener; each start in a fresh process, RSS \
         read there, then the unchanged folder rescanned (as the folder watcher does on any change in it); \
         \"then an event to each\": after that, a Pod created in each plugin's namespace, until every plugin was \
         called, and the RSS read again. Per-event cost (a pool sized to the plugins): an update of a Pod in \
         `tenant-00000` (watched by one plugin) until that plugin's guest was called, medians.",
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
    let (first, warm) = &recycling;
    let mut table = Table::new(
        "An event to a recycled plugin, beside the next (warm) one",
        &["event", "p50", "p99", "÷ warm (p50)"],
    );
    for (label, times) in [("first after recycling (on a full pool)", first), ("next, warm", warm)] {
        let ratio = median(times).as_secs_f64() / median(warm).as_secs_f64();
        table.row(vec![
            label.into(),
            human_duration(median(times)),
            human_duration(percentile(times, 99.0)),
            format!("{ratio:.2}×"),
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
    for (label, _, r) in starts.iter().filter(|(_, _, r)| r.events.is_some()) {
        let events = r.events.as_ref().expect("filtered");
        report.notes.push(format!(
            "{label}: RSS {} once every plugin had its event (target < 256 MiB: {}), {} instances recycled on \
             the way, every event handled in {}",
            human_bytes(events.rss_after as f64),
            verdict(events.rss_after < 256 << 20),
            events.recycled,
            human_duration(events.took),
        ));
    }
    if let Some((_, last)) = per_event.last() {
        let ratio = last.as_secs_f64() / base.as_secs_f64();
        report.notes.push(format!(
            "one event with 10,000 plugins ÷ with 10: {ratio:.2}× (target: flat; {} within 1.5×)",
            verdict(ratio <= 1.5)
        ));
    }
    let row = |label: &str| starts.iter().find(|(l, c, _)| l == label && *c == "warm").map(|(_, _, r)| r);
    if let (Some(defaults), Some(busy), Some(deployed)) = (
        row("10,000 Rust plugins"),
        row("10,000 Rust plugins, then an event to each").and_then(|r| r.events.as_ref()),
        row("10,000 Rust plugins, started as they deploy"),
    ) {
        let met = defaults.rss_after < 256 << 20
            && busy.rss_after < 256 << 20
            && defaults.start < Duration::from_secs(1)
            && defaults.failed == 0;
        report.goals.push(
            Goal::new(
                "10,000 Rust plugins < 256 MiB and < 1 s warm start, defaults",
                format!(
                    "{}, {}; {} once each had an event",
                    human_bytes(defaults.rss_after as f64),
                    human_duration(defaults.start),
                    human_bytes(busy.rss_after as f64)
                ),
                Some(met),
            )
            .against(
                format!(
                    "as they deploy: {}, {}",
                    human_bytes(deployed.rss_after as f64),
                    human_duration(deployed.start)
                ),
                String::new(),
            ),
        );
    }
    let (first, warm) = &recycling;
    if !first.is_empty() {
        let p = |times: &[Duration]| {
            format!("{} / {}", human_duration(median(times)), human_duration(percentile(times, 99.0)))
        };
        report.goals.push(Goal::new("first event after recycling, p50 / p99", p(first), None).against(
            format!("its next, warm, event {}", p(warm)),
            format!("{:.2}×", median(first).as_secs_f64() / median(warm).as_secs_f64()),
        ));
    }
    report.write();
}

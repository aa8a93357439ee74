//! Run with cargo bench -p wink-benches --bench languages
//!
//! The cost of each guest language, on this machine, in one run: the same two handlers
//! (`plugins/bench/bench-lang-<language>`) written in Rust, Go, Python, JavaScript and C, each
//! with its SDK as it is (the contract each implements is in the table):
//!
//! - `name + label`: on-add reads the object's name and its label `app`;
//! - `decode`: on-update decodes the whole object (the language's JSON parser, into its
//!   values; the C SDK's path reader) and reads its first container's image.
//!
//! Per language: the component's size; its first load (compiling it, into an empty compile
//! cache); a warm start (loading it from that cache, then an instance and `init`); the
//! memory an instance has reached after that start; and the median and p99 of 2,000 calls of
//! each handler with ~4 KB Pods, timed around `PluginInstance::on_add` / `on_update` (wink's
//! per-call work — the objects lent or copied, the deadline, the log — included; the
//! informer's queue not: `call_overhead` measures that).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use wink::informer::Object;
use wink::plugin::{CallOutcome, PluginEngine};
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::results::{Goal, Report, Table, human_duration, median, percentile};
use wink_benches::workload::{self, PodSize};

const CALLS: usize = 2_000;

const LANGUAGES: [&str; 5] = ["rust", "go", "python", "javascript", "c"];

/// What was measured of one language.
struct Measured {
    language: &'static str,
    contract: String,
    size: u64,
    compile: Duration,
    warm_start: Duration,
    memory: usize,
    name_label: Vec<Duration>,
    decode: Vec<Duration>,
}

fn pods() -> Vec<(Object, Object)> {
    (0..CALLS)
        .map(|index| {
            let mut value = workload::pod(PodSize::Small, "bench-00", index);
            value["metadata"]["resourceVersion"] = json!("100");
            let old = Object::from_string(value.to_string()).expect("a valid Pod");
            workload::touch(&mut value, 1);
            value["metadata"]["resourceVersion"] = json!("101");
            (old, Object::from_string(value.to_string()).expect("a valid Pod"))
        })
        .collect()
}

fn timed(calls: &[(Object, Object)], mut call: impl FnMut(&Object, &Object) -> CallOutcome) -> Vec<Duration> {
    let mut times: Vec<Duration> = calls
        .iter()
        .map(|(old, new)| {
            let started = Instant::now();
            let outcome = black_box(call(old, new));
            let elapsed = started.elapsed();
            assert!(matches!(outcome, CallOutcome::Ok), "the handler failed: {outcome:?}");
            elapsed
        })
        .collect();
    times.sort_unstable();
    times
}

fn measure(language: &'static str, cache: &Path, calls: &[(Object, Object)]) -> Measured {
    let dir = wink_tests::plugin(&format!("bench/bench-lang-{language}"));
    let size = std::fs::metadata(plugins::component_of(&dir)).map(|m| m.len()).unwrap_or(0);
    let cache_dir = cache.join(language);
    let engine = || PluginEngine::new(plugins::engine_config(16, Some(cache_dir.clone()))).expect("an engine");

    let started = Instant::now();
    let plugin = plugins::load(&dir, &engine());
    let compile = started.elapsed();
    let contract = plugin.pre.version().as_str().to_owned();

    let warm = engine();
    let started = Instant::now();
    let plugin = plugins::load(&dir, &warm);
    let sandbox = plugins::sandbox(&plugin, &warm, &PluginSettings::named(format!("bench-lang-{language}")));
    let mut instance = sandbox.instantiate().unwrap_or_else(|e| panic!("bench-lang-{language} starts: {e:?}"));
    let warm_start = started.elapsed();
    let memory = instance.peak_memory();

    // A few calls first: the guest's own first-call work (imports resolved, caches filled).
    for (old, new) in calls.iter().take(50) {
        instance.on_add(new, false);
        instance.on_update(old, new);
    }
    let name_label = timed(calls, |_, new| instance.on_add(new, false));
    let decode = timed(calls, |old, new| instance.on_update(old, new));
    Measured { language, contract, size, compile, warm_start, memory, name_label, decode }
}

/// The name-and-label medians measured at contract 0.2.0, before lent objects (µs; Go had
/// no SDK then): Rust, Python and JavaScript through the whole delivery, C in this benchmark.
const AT_0_2_MICROS: [(&str, f64); 4] = [("rust", 11.0), ("c", 6.21), ("python", 1010.0), ("javascript", 169.0)];

/// The goal of contract 0.3.0: every language's name-and-label handler faster than its
/// figure at 0.2.0.
fn faster_than_at_0_2(measured: &[Measured]) -> Goal {
    let mut now = Vec::new();
    let mut then = Vec::new();
    let mut met = true;
    for m in measured {
        let median = median(&m.name_label);
        now.push(format!("{} {}", m.language, human_duration(median)));
        if let Some((_, micros)) = AT_0_2_MICROS.iter().find(|(language, _)| *language == m.language) {
            then.push(format!("{} {micros} µs", m.language));
            met &= median.as_secs_f64() * 1e6 < *micros;
        }
    }
    Goal::new("every guest language's name-and-label handler faster than at contract 0.2.0", now.join(", "), Some(met))
        .against(format!("at 0.2.0: {}", then.join(", ")), "")
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn main() {
    let calls = pods();
    let cache = tempfile::tempdir().expect("a compile cache folder");
    let measured: Vec<Measured> = LANGUAGES.iter().map(|l| measure(l, cache.path(), &calls)).collect();

    let mut report = Report::new(
        "languages",
        "Guest languages: size, start, memory and call latency",
        "The same two handlers in each language (`plugins/bench/bench-lang-*`), each with its \
         SDK: `name + label` reads an object's name and one label, `decode` parses the whole \
         object and reads its first container's image. First load: compiling the component \
         into an empty compile cache; warm start: loading it from that cache, an instance and \
         `init`; memory: what the instance reached by then. Latencies: 2,000 calls with ~4 KB \
         Pods around `PluginInstance::on_add` / `on_update`, after 50 warm-up calls.",
    );
    let mut table = Table::new(
        "",
        &[
            "language",
            "contract",
            "component",
            "first load",
            "warm start",
            "instance memory",
            "name + label median",
            "name + label p99",
            "decode median",
            "decode p99",
        ],
    );
    for m in &measured {
        table.row(vec![
            m.language.to_owned(),
            m.contract.clone(),
            format!("{:.1} KB", m.size as f64 / 1000.0),
            human_duration(m.compile),
            human_duration(m.warm_start),
            mib(m.memory),
            human_duration(median(&m.name_label)),
            human_duration(percentile(&m.name_label, 99.0)),
            human_duration(median(&m.decode)),
            human_duration(percentile(&m.decode, 99.0)),
        ]);
    }
    report.tables.push(table);
    report.goals.push(faster_than_at_0_2(&measured));
    report.write();
}

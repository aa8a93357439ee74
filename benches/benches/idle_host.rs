//! Run with cargo bench -p wink-benches --bench idle_host
//!
//! Benchmark 7 — an idle host costs nothing. The demo's setup (`cargo xtask demo`): every
//! plugin `cargo xtask build-plugins` built (`.wink/plugins`, or `WINK_PLUGINS_DIR`) deployed
//! over the example cluster `examples/cluster` (the directory source), both folders watched,
//! assembled as `wink run` does. Once every plugin is deployed and every cache has synced,
//! and after a settling period, nothing changes for 10 s. Measured over that quiet period,
//! for the whole process: CPU time (user + system, `/proc/self/stat`, and per thread), bytes
//! read (`rchar`: every
//! `read`, cached or not; `read_bytes`: from the block device, `/proc/self/io`), and the
//! plugin registry's own counters (folder rescans, plugin files hashed).
//!
//! Targets: below 0.5 % of one core, and no plugin file read again.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wink::app::{Host, RunOptions, SourceSpec, default_cache_dir};
use wink::plugin::{PluginRegistry, ScanStats};
use wink_benches::cpu;
use wink_benches::mem::human_bytes;
use wink_benches::results::{Goal, Report, Table, human_duration, verdict};

const QUIET: Duration = Duration::from_secs(10);
const SETTLE: Duration = Duration::from_secs(3);
const CPU_TARGET: f64 = 0.005;

/// What the process has used so far.
#[derive(Clone, Debug)]
struct Usage {
    /// User + system time from `/proc/self/stat` (10 ms ticks; counts exited threads too).
    cpu: Duration,
    /// The same per thread name, of the threads alive.
    threads: BTreeMap<String, Duration>,
    rchar: u64,
    read_bytes: u64,
    scans: ScanStats,
}

/// `rchar` and `read_bytes` of `/proc/self/io` (zero where unavailable).
fn io_counters() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    (field("rchar"), field("read_bytes"))
}

/// What the process has used so far. `/proc/self/io` is read last at the start of the
/// period and first at its end, so that the period counts none of the other reads of the
/// measurement, only one read of `/proc/self/io` (subtracted: [`own_reads`]).
fn usage(registry: &PluginRegistry, at_start: bool) -> Usage {
    let io_first = (!at_start).then(io_counters);
    let (cpu, threads, scans) = (cpu::of_this_process(), cpu::by_thread(), registry.scan_stats());
    let (rchar, read_bytes) = io_first.unwrap_or_else(io_counters);
    Usage { cpu, threads, rchar, read_bytes, scans }
}

/// The bytes one read of `/proc/self/io` counts.
fn own_reads() -> u64 {
    let (a, _) = io_counters();
    let (b, _) = io_counters();
    b - a
}

/// The size of the smallest file of any plugin: a re-read reads at least this much.
fn smallest_plugin_file(plugins: &Path) -> u64 {
    let mut smallest = u64::MAX;
    for dir in std::fs::read_dir(plugins).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            if let Ok(meta) = file.metadata()
                && meta.is_file()
            {
                smallest = smallest.min(meta.len());
            }
        }
    }
    smallest
}

fn main() {
    let plugins = wink_tests::plugins_dir().to_owned();
    let cluster = wink_tests::repo_root().join("examples").join("cluster");
    let rt = wink_benches::runtime();
    let (deployed, failed, before, after, elapsed) = rt.block_on(async {
        let cancel = CancellationToken::new();
        let options = RunOptions {
            plugins: Some(plugins.clone()),
            watch_plugins: true,
            cache_dir: default_cache_dir(),
            ..RunOptions::new(SourceSpec::Dir(cluster.clone()))
        };
        let mut host = Host::build(options, cancel.clone()).await.expect("building the host");
        for e in host.deploy_failures() {
            eprintln!("idle_host: not deployed: {e}");
        }
        let failed = host.deploy_failures().to_vec();
        let registry = host.registry().clone();
        host.start().await;
        let running = tokio::spawn(host.run());
        let deployed = registry.status().await.len();
        eprintln!("idle_host: {deployed} plugins deployed, caches synced; settling for {SETTLE:?}");
        tokio::time::sleep(SETTLE).await;
        let before = usage(&registry, true);
        let started = Instant::now();
        tokio::time::sleep(QUIET).await;
        let after = usage(&registry, false);
        let elapsed = started.elapsed();
        cancel.cancel();
        running.await.expect("the host stops").expect("the host ran");
        (deployed, failed.len(), before, after, elapsed)
    });

    let cpu = after.cpu.saturating_sub(before.cpu);
    let share = cpu.as_secs_f64() / elapsed.as_secs_f64();
    let rchar = (after.rchar - before.rchar).saturating_sub(own_reads());
    let read_bytes = after.read_bytes - before.read_bytes;
    let scans = after.scans.scans - before.scans.scans;
    let hashed = after.scans.files_hashed - before.scans.files_hashed;
    let attempts = after.scans.deploy_attempts - before.scans.deploy_attempts;
    let smallest = smallest_plugin_file(&plugins);

    let mut report = Report::new(
        "idle_host",
        "7. An idle host",
        "The demo's setup as `wink run` assembles it: every plugin `cargo xtask build-plugins` built, deployed over \
         the example cluster (`examples/cluster`, the directory source), both folders watched. Once every plugin \
         is deployed and every cache synced, and after a 3 s settling period, nothing changes for 10 s. Over that \
         quiet period, for the whole process: CPU time (user + system, `/proc/self/stat`, in 10 ms ticks; \
         and per thread, `/proc/self/task/*/stat`), bytes read (`/proc/self/io`: \
         `rchar` counts every `read`, `read_bytes` those from the disk; the measurement's own read of \
         `/proc/self/io` subtracted), and the plugin registry's counters (rescans, plugin files hashed, deploys \
         attempted).",
    );
    let mut table = Table::new(
        format!("{deployed} plugins deployed ({failed} failed)"),
        &[
            "quiet period",
            "CPU time",
            "share of one core",
            "bytes read (rchar)",
            "from disk",
            "rescans",
            "plugin files hashed",
            "deploys",
        ],
    );
    table.row(vec![
        human_duration(elapsed),
        human_duration(cpu),
        format!("{:.3} %", share * 100.0),
        human_bytes(rchar as f64),
        human_bytes(read_bytes as f64),
        scans.to_string(),
        hashed.to_string(),
        attempts.to_string(),
    ]);
    report.tables.push(table);
    let mut threads = Table::new("CPU time by thread (threads that used any)", &["thread", "CPU time"]);
    for (name, used) in &after.threads {
        let used = used.saturating_sub(before.threads.get(name).copied().unwrap_or_default());
        if !used.is_zero() {
            threads.row(vec![format!("`{name}`"), human_duration(used)]);
        }
    }
    report.tables.push(threads);
    report.notes.push(format!(
        "CPU {:.3} % of one core (target < 0.5 %: {})",
        share * 100.0,
        verdict(share < CPU_TARGET)
    ));
    let reread = hashed > 0 || attempts > 0 || rchar >= smallest;
    report.notes.push(format!(
        "plugin files read again: {} (the smallest plugin file is {}; target none: {})",
        if reread { "yes" } else { "none" },
        human_bytes(smallest as f64),
        verdict(!reread)
    ));
    report.goals.push(Goal::new(
        "an idle host: < 0.5 % of a core, no plugin file read",
        format!("{:.3} % of a core, plugin files read again: {}", share * 100.0, if reread { "yes" } else { "none" }),
        Some(share < CPU_TARGET && !reread),
    ));
    report.write();
}

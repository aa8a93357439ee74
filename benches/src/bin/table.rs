//! Run with cargo run --release -p wink-benches --bin wink-bench-table [-- --out FILE]
//!
//! Prints the results of the last benchmark runs as Markdown: the machine (cores, memory,
//! CPU model), the table of goals ("Where wink stands"), then every report the benches wrote
//! to the results directory (`$WINK_BENCH_RESULTS`, else `$CARGO_TARGET_DIR/wink-bench`, else
//! `target/wink-bench`), in the order of `BENCHMARKS.md`. With `--out FILE` it also writes
//! them there; with `--update FILE` (`BENCHMARKS.md`) it replaces the table of goals between
//! the file's `<!-- goals:begin -->` and `<!-- goals:end -->` lines — only when every
//! benchmark has a report, so that the table always comes from one run of all of them.
//! `cargo xtask bench` runs the benches and then this.

use std::path::PathBuf;

use anyhow::Context;
use wink_benches::results::{Report, goals_table, results_dir};

const BEGIN: &str = "<!-- goals:begin -->";
const END: &str = "<!-- goals:end -->";

/// The benches, in the order of `BENCHMARKS.md`.
const ORDER: [&str; 12] = [
    "informer_throughput",
    "wasm_vs_native",
    "call_overhead",
    "memory_per_object",
    "many_plugins",
    "delivery_lag",
    "idle_host",
    "write_round_trip",
    "end_to_end",
    "api_server_list",
    "languages",
    "reconcile",
];

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned()))
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    format!("{cores} cores ({model}), {:.1} GiB of memory", memory_kib as f64 / (1024.0 * 1024.0))
}

/// Replaces the text between `file`'s goal markers with `goals`.
fn replace_goals(file: &std::path::Path, goals: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let (before, rest) = text.split_once(BEGIN).with_context(|| format!("{} has no {BEGIN} line", file.display()))?;
    let (_, after) = rest.split_once(END).with_context(|| format!("{} has no {END} line", file.display()))?;
    std::fs::write(file, format!("{before}{BEGIN}\n{goals}{END}{after}"))
        .with_context(|| format!("writing {}", file.display()))
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut out, mut update): (Option<PathBuf>, Option<PathBuf>) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            "--update" => update = args.next().map(PathBuf::from),
            other => anyhow::bail!("unknown argument {other}; usage: wink-bench-table [--out FILE] [--update FILE]"),
        }
    }
    let dir = results_dir();
    let mut reports = Vec::new();
    let mut sections = String::new();
    for bench in ORDER {
        let path = dir.join(format!("{bench}.json"));
        let Ok(json) = std::fs::read_to_string(&path) else {
            sections
                .push_str(&format!("\n### {bench}\n\nNot run yet (`cargo bench -p wink-benches --bench {bench}`).\n"));
            continue;
        };
        let report: Report = serde_json::from_str(&json)?;
        sections.push('\n');
        sections.push_str(&report.to_markdown());
        reports.push(report);
    }
    let found = reports.len();
    let goals = format!("{}\nMachine: {}.\n", goals_table(&reports), machine());
    let text = format!("Results from `{}`.\n\n## Where wink stands\n\n{goals}{sections}", dir.display());
    print!("{text}");
    if let Some(file) = update {
        if found == ORDER.len() {
            replace_goals(&file, &goals)?;
            eprintln!("wink-bench-table: the table of goals in {} updated", file.display());
        } else {
            eprintln!(
                "wink-bench-table: {} of {} benchmarks have reports: {} keeps its table of goals",
                found,
                ORDER.len(),
                file.display()
            );
        }
    }
    if let Some(out) = out {
        std::fs::write(&out, &text)?;
        eprintln!("wink-bench-table: {found} reports written to {}", out.display());
    }
    Ok(())
}

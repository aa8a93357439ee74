//! Run with cargo run --release -p wink-benches --bin wink-bench-table [-- --out FILE]
//!
//! Prints the results of the last benchmark runs as Markdown: the machine (cores, memory,
//! CPU model), then every report the benches wrote to the results directory
//! (`$WINK_BENCH_RESULTS`, else `$CARGO_TARGET_DIR/wink-bench`, else `target/wink-bench`), in
//! the order of the issue. With `--out FILE` it also writes them there. `cargo xtask bench`
//! runs the benches and then this.

use std::path::PathBuf;

use wink_benches::results::{Report, results_dir};

/// The benches, in the order of `BENCHMARKS.md`.
const ORDER: [&str; 10] = [
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

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            other => anyhow::bail!("unknown argument {other}; usage: wink-bench-table [--out FILE]"),
        }
    }
    let dir = results_dir();
    let mut text = format!("Machine: {}. Results from `{}`.\n", machine(), dir.display());
    let mut found = 0;
    for bench in ORDER {
        let path = dir.join(format!("{bench}.json"));
        let Ok(json) = std::fs::read_to_string(&path) else {
            text.push_str(&format!("\n### {bench}\n\nNot run yet (`cargo bench -p wink-benches --bench {bench}`).\n"));
            continue;
        };
        let report: Report = serde_json::from_str(&json)?;
        text.push('\n');
        text.push_str(&report.to_markdown());
        found += 1;
    }
    print!("{text}");
    if let Some(out) = out {
        std::fs::write(&out, &text)?;
        eprintln!("wink-bench-table: {found} reports written to {}", out.display());
    }
    Ok(())
}

//! `cargo xtask bench [-- CRITERION ARGS]`: runs every benchmark and writes the results table.
//!
//! Builds the plugins (the benchmarks run the `bench-noop` and `bench-writer` Rust plugins and
//! the Python and JavaScript components) and the client-go consumer (a Go program, see
//! [`crate::client_go_peer`]; without Go the benchmarks skip its rows), runs `cargo bench -p
//! wink-benches` with `WINK_PLUGINS_DIR` and `WINK_CLIENT_GO_PEER` pointing at them (extra
//! arguments go to every bench binary, e.g. a filter), then `wink-bench-table`, which prints
//! the tables of `BENCHMARKS.md` and writes them to `<target>/wink-bench/RESULTS.md`, and
//! (after a run of every benchmark) the table of goals at the top of `BENCHMARKS.md`. The
//! benchmarks take about half an hour on two cores.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{build_plugins, client_go_peer};

/// Options of `cargo xtask bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Arguments passed to every bench binary (after `--`), e.g. a criterion filter.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    bench_args: Vec<String>,
}

/// Builds the plugins, runs the benchmarks, prints and writes the results table.
pub fn run(repo: &Path, args: &Args) -> Result<()> {
    let plugins = repo.join(".wink").join("plugins");
    let build = build_plugins::run(repo, &build_plugins::Args::with_out(plugins.clone()))?;
    if build.has_failures() {
        eprintln!("xtask: part of the plugin build failed; the benchmarks of the missing plugins say so");
    }
    // An empty variable tells the benchmarks there is none (and not to try building it again).
    let client_go = client_go_peer::build(repo).unwrap_or_else(|e| {
        eprintln!("xtask: no client-go consumer, the benchmarks skip its rows: {e:#}");
        PathBuf::new()
    });
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from);
    let results = target.join("wink-bench");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut bench = Command::new(&cargo);
    bench.current_dir(repo).args(["bench", "-p", "wink-benches"]);
    if !args.bench_args.is_empty() {
        bench.arg("--").args(&args.bench_args);
    }
    let status = bench
        .env("WINK_PLUGINS_DIR", &plugins)
        .env("WINK_BENCH_RESULTS", &results)
        .env(client_go_peer::ENV, &client_go)
        .status()
        .context("running `cargo bench`")?;
    if !status.success() {
        bail!("benchmarks failed ({status})");
    }
    let table = results.join("RESULTS.md");
    let status = Command::new(&cargo)
        .current_dir(repo)
        .args(["run", "--quiet", "--release", "-p", "wink-benches", "--bin", "wink-bench-table", "--", "--out"])
        .arg(&table)
        .arg("--update")
        .arg(repo.join("BENCHMARKS.md"))
        .env("WINK_BENCH_RESULTS", &results)
        .status()
        .context("running wink-bench-table")?;
    if !status.success() {
        bail!("wink-bench-table failed ({status})");
    }
    Ok(())
}

//! `cargo xtask demo`: builds the example plugins and runs them against `examples/cluster`.
//!
//! wink keeps running and watching the folder: edit a file under `examples/cluster` (change
//! a label, delete a Pod) and the plugins log what they were told. It also serves that
//! cluster over the Kubernetes API on [`DEMO_API`] (`--serve-api`), for
//! `kubectl --server http://127.0.0.1:8001`, unless the extra arguments name another address.
//! Stop with Ctrl-C.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::build_plugins;

/// Where the demo serves the example cluster over the Kubernetes API.
pub const DEMO_API: &str = "127.0.0.1:8001";

/// Options of `cargo xtask demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Extra arguments for `wink run`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    wink_args: Vec<String>,
}

/// Builds the plugins, then runs `wink run` on the example cluster.
pub fn run(repo: &Path, args: &Args) -> Result<()> {
    let plugins = repo.join(".wink").join("plugins");
    let build = build_plugins::run(repo, &build_plugins::Args::with_out(plugins.clone()))?;
    if let Err(e) = build.into_result() {
        eprintln!("xtask: {e:#}\nxtask: running the demo with the plugins that were built");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cluster = repo.join("examples").join("cluster");
    eprintln!("xtask: running wink on {}; edit files there to see events, Ctrl-C to stop", cluster.display());
    let mut serve_api = Vec::new();
    if !args.wink_args.iter().any(|a| a.starts_with("--serve-api")) {
        eprintln!(
            "xtask: the cluster is served on http://{DEMO_API}: kubectl --server http://{DEMO_API} get deploy -A"
        );
        serve_api = vec!["--serve-api".to_owned(), DEMO_API.to_owned()];
    }
    let status = Command::new(cargo)
        .current_dir(repo)
        .args(["run", "--quiet", "-p", "wink-host", "--bin", "wink", "--", "run", "--plugins"])
        .arg(&plugins)
        .arg("--source")
        .arg(format!("dir:{}", cluster.display()))
        .args(&serve_api)
        .args(&args.wink_args)
        .status()
        .context("running `wink run`")?;
    if !status.success() {
        bail!("wink exited with {status}");
    }
    Ok(())
}

//! `cargo xtask`: wink's build tasks, as a Rust program so they need nothing but cargo.
//!
//! Run with `cargo xtask <command>` (an alias in `.cargo/config.toml`):
//! - `cargo xtask build-plugins [--out DIR]`: builds the plugins under `plugins/` (Rust,
//!   Python, JavaScript, C; installing each language's toolchain on first use) into
//!   components under `.wink/plugins/`.
//! - `cargo xtask test [-- CARGO TEST ARGS]`: builds the plugins, then runs every test.
//! - `cargo xtask demo`: builds the plugins and runs them against `examples/cluster`.

mod build_plugins;
mod component;
mod demo;
mod fsutil;
mod guests;
mod package;
mod report;
mod run_tests;
mod toolchain;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// wink's build tasks.
#[derive(Parser)]
#[command(name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the plugins under plugins/ (Rust, Python, JavaScript, C) as WebAssembly
    /// components with no WASI imports.
    BuildPlugins(build_plugins::Args),
    /// Build the plugins, then run every test of the workspace.
    Test(run_tests::Args),
    /// Build the example plugins and run them against examples/cluster.
    Demo(demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::BuildPlugins(args) => build_plugins::run(&repo_root(), &args).and_then(report::Report::into_result),
        Command::Test(args) => run_tests::run(&repo_root(), &args),
        Command::Demo(args) => demo::run(&repo_root(), &args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The causes, without the backtrace `RUST_BACKTRACE=1` (CI) would add to `{:?}`.
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository's root: the parent of this crate's folder.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in a folder of the repository").to_path_buf()
}

//! `cargo xtask`: wink's build tasks, as a Rust program so they need nothing but cargo.
//!
//! Run with `cargo xtask <command>` (an alias in `.cargo/config.toml`):
//! - `cargo xtask build-plugins [--out DIR] [--only NAME|PATH]…`: builds the plugins under
//!   `plugins/` (Rust, Python, JavaScript, C; installing each language's toolchain on first
//!   use) into components under `.wink/plugins/`; with `--only`, just the named plugins, in
//!   or out of the tree.
//! - `cargo xtask test [-- CARGO TEST ARGS]`: builds the plugins and the tests' control plane
//!   (kube-apiserver and etcd, from Go modules, first run only), then runs every test.
//! - `cargo xtask control-plane`: builds the tests' kube-apiserver and etcd (if missing) and
//!   prints the variables to run the tests that need them with plain `cargo test`.
//! - `cargo xtask client-go-peer`: builds the benchmarks' client-go consumer (from its Go
//!   module, if missing) and prints the variable that points the benchmarks at it.
//! - `cargo xtask demo`: builds the plugins and runs them against `examples/cluster`.
//! - `cargo xtask bench [-- CRITERION ARGS]`: runs the benchmarks and writes the results table.
//! - `cargo xtask openapi-spec`: vendors the OpenAPI specification `--serve-api` serves
//!   (host/openapi/) from the Kubernetes release the tests' control plane pins.

mod bench;
mod build_plugins;
mod client_go_peer;
mod component;
mod control_plane;
mod demo;
mod fsutil;
mod guests;
mod openapi_spec;
mod package;
mod python_client;
mod report;
mod run_tests;
mod select;
mod test_tools;
mod toolchain;
#[cfg(test)]
mod wit_versions;

use std::path::PathBuf;
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
    /// Build the tests' control plane (kube-apiserver and etcd, from Go modules) and print
    /// the variables that point the tests at it.
    ControlPlane,
    /// Build the benchmarks' client-go consumer (from its Go module) and print the variable
    /// that points the benchmarks at it.
    ClientGoPeer,
    /// Build the example plugins and run them against examples/cluster.
    Demo(demo::Args),
    /// Build the plugins, run the benchmarks, and write the results table (BENCHMARKS.md).
    Bench(bench::Args),
    /// Vendor the OpenAPI specification of the release tests/control-plane/go.mod pins
    /// into host/openapi/ (what `--serve-api` serves at /openapi/v2 and /openapi/v3).
    OpenapiSpec,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::BuildPlugins(args) => build_plugins::run(&repo_root(), &args).and_then(report::Report::into_result),
        Command::Test(args) => run_tests::run(&repo_root(), &args),
        Command::ControlPlane => control_plane::print(&repo_root()),
        Command::ClientGoPeer => client_go_peer::print(&repo_root()),
        Command::Demo(args) => demo::run(&repo_root(), &args),
        Command::Bench(args) => bench::run(&repo_root(), &args),
        Command::OpenapiSpec => openapi_spec::run(&repo_root()),
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
/// The repository's root. `cargo run` gives the manifest directory at run time; the path
/// compiled in is only a fallback, because a build reused from a shared target directory may
/// have been compiled in another clone.
pub(crate) fn repo_root() -> PathBuf {
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir.parent().expect("xtask lives in a folder of the repository").to_path_buf()
}

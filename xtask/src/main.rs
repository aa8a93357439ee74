//! `cargo xtask`: wink's build tasks, as a Rust program so they need nothing but cargo.
//!
//! Run with `cargo xtask <command>` (an alias in `.cargo/config.toml`):
//! - `cargo xtask build-plugins [--out DIR]`: builds the guest plugins under `plugins/` for
//!   `wasm32-unknown-unknown` and turns them into components under `.wink/plugins/`.

mod build_plugins;
mod component;
mod fsutil;
mod toolchain;

use std::path::{Path, PathBuf};

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
    /// Build the plugins under plugins/ as WebAssembly components (no WASI imports).
    BuildPlugins(build_plugins::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::BuildPlugins(args) => build_plugins::run(&repo_root(), &args),
    }
}

/// The repository's root: the parent of this crate's folder.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in a folder of the repository").to_path_buf()
}

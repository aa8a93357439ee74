//! `cargo xtask test`: the one command that runs every test on a fresh machine.
//!
//! Builds the guest plugins from source (installing the wasm target and the Python,
//! JavaScript and C toolchains if missing), then runs `cargo test --workspace` with
//! `WINK_PLUGINS_DIR` pointing at the built components so the integration tests load real
//! plugins, and `WINK_KUBECTL` / `WINK_OCI_REGISTRY` at the real kubectl and OCI registry
//! (Debian's, installed if missing, see `test_tools`) for the end-to-end tests, and
//! `WINK_KUBE_APISERVER` / `WINK_ETCD` at a real control plane built from its Go modules (first
//! run only, see `control_plane`), `WINK_KUBECTL_CURRENT` at the kubectl of the same release, and `WINK_PYTHON_KUBERNETES` at a venv with the official
//! Kubernetes Python client (see `python_client`). Extra arguments go to `cargo test`.
//!
//! When part of the plugin build fails (a toolchain that cannot be installed), or a tool or
//! the control plane is missing (no Go), the tests still run — those that need what is
//! missing fail, saying what — and the command fails at the end with the build's errors.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::build_plugins;

/// Options of `cargo xtask test`.
#[derive(clap::Args)]
pub struct Args {
    /// Arguments passed on to `cargo test` (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    cargo_args: Vec<String>,
}

/// Builds the plugins and runs the workspace's tests.
pub fn run(repo: &Path, args: &Args) -> Result<()> {
    let plugins = repo.join(".wink").join("plugins");
    let build = build_plugins::run(repo, &build_plugins::Args::with_out(plugins.clone()))?;
    if build.has_failures() {
        eprintln!("xtask: part of the plugin build failed; running the tests anyway (see the end)");
    }
    let mut tools = crate::test_tools::install(repo);
    tools.extend(crate::control_plane::build(repo));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut test = Command::new(cargo);
    test.current_dir(repo).args(["test", "--workspace"]).args(&args.cargo_args).env("WINK_PLUGINS_DIR", &plugins);
    let mut missing = Vec::new();
    for (env, tool) in tools {
        match tool {
            Ok(path) => {
                test.env(env, path);
            }
            Err(e) => {
                eprintln!("xtask: {e:#}; running the tests anyway (those that need it fail)");
                missing.push(e);
            }
        }
    }
    // The Python client is optional: without it its test says why and skips.
    match crate::python_client::install(repo) {
        Ok(python) => {
            test.env(crate::python_client::ENV, python);
        }
        Err(e) => {
            eprintln!("xtask: the Kubernetes Python client is not installed: {e:#}");
            test.env(crate::python_client::MISSING_ENV, format!("{e:#}"));
        }
    }
    eprintln!("xtask: running `cargo test --workspace` (compiles the host and its tests first)");
    let status = test.status().context("running `cargo test`")?;
    let built = build.into_result().and(missing.into_iter().next().map_or(Ok(()), Err));
    if !status.success() {
        if let Err(e) = built {
            eprintln!("xtask: {e:#}");
        }
        bail!("tests failed ({status})");
    }
    built
}

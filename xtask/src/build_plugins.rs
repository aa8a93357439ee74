//! `cargo xtask build-plugins`: builds every plugin under `plugins/` into a component.
//!
//! Rust plugins (the cargo workspace `plugins/Cargo.toml`):
//! 1. makes sure the `wasm32-unknown-unknown` target is installed;
//! 2. builds the plugins workspace in release mode with its own target dir
//!    (`$CARGO_TARGET_DIR/plugins-build`, or `target/plugins-build`), so the build never waits
//!    for the lock of the main workspace's target dir (tests run this while `cargo test`
//!    holds it);
//! 3. encodes each plugin's core module as a component with `wit-component`;
//! 4. checks and writes it ([`package`]): `<out>/<path>/<name>.wasm` and a copy of the
//!    plugin's `plugin.yaml`, where `<path>` is the plugin's folder under `plugins/`
//!    (`label-auditor`, `hostile/trap`) and `<name>` its last component.
//!
//! Then the Python, JavaScript and C plugins ([`guests`]), each language with a toolchain
//! installed on first use. A part that fails is reported and the others are still built.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use crate::component::{self, Surface};
use crate::report::{BuiltPlugin, Report};
use crate::toolchain::{self, WASM_TARGET};
use crate::{guests, package};

/// Options of `cargo xtask build-plugins`.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write the components and manifests [default: <repo>/.wink/plugins]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

impl Args {
    /// Arguments that write to `out`.
    pub fn with_out(out: PathBuf) -> Self {
        Self { out: Some(out) }
    }
}

/// Builds every plugin (Rust, then Python, JavaScript and C) and writes its component and
/// manifest under the output folder. A part that fails is reported and the rest is built;
/// the returned report says what failed.
pub fn run(repo: &Path, args: &Args) -> Result<Report> {
    let plugins_dir =
        repo.join("plugins").canonicalize().with_context(|| format!("finding {}/plugins", repo.display()))?;
    let out = args.out.clone().unwrap_or_else(|| repo.join(".wink").join("plugins"));
    let contract = Surface::of_contract(&repo.join("wit"))?;
    let build_dir = plugins_target_dir(repo)?;
    let mut report = Report::default();

    if let Err(e) = build_rust(&plugins_dir, &out, &contract, &build_dir, &mut report) {
        report.failed("the Rust plugins", e);
    }
    let context =
        guests::Context { repo, plugins_dir: &plugins_dir, out: &out, contract: &contract, build_dir: &build_dir };
    guests::build_all(&context, &mut report);
    Ok(report)
}

/// Builds the Rust plugins (the cargo workspace in `plugins/`).
fn build_rust(plugins_dir: &Path, out: &Path, contract: &Surface, build_dir: &Path, report: &mut Report) -> Result<()> {
    toolchain::ensure_wasm_target()?;
    let mut artifacts = cargo_build(plugins_dir, build_dir)?;
    artifacts.sort_by(|a, b| a.manifest_path.cmp(&b.manifest_path));
    ensure!(!artifacts.is_empty(), "building {} produced no cdylib", plugins_dir.display());
    for artifact in &artifacts {
        if let Err(e) = package_rust(plugins_dir, out, contract, artifact, report) {
            report.failed(format!("plugin {} (rust)", artifact.manifest_path.display()), e);
        }
    }
    Ok(())
}

/// `$CARGO_TARGET_DIR/plugins-build` when that is set, else `<repo>/target/plugins-build`.
fn plugins_target_dir(repo: &Path) -> Result<PathBuf> {
    let base = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            std::path::absolute(PathBuf::from(dir)).context("resolving CARGO_TARGET_DIR")?
        }
        _ => repo.join("target"),
    };
    Ok(base.join("plugins-build"))
}

/// A core module cargo built for one plugin.
struct Artifact {
    /// The plugin's `Cargo.toml`.
    manifest_path: PathBuf,
    /// The `.wasm` core module.
    wasm: PathBuf,
}

/// One line of cargo's `--message-format=json` output, the fields this task reads.
#[derive(Deserialize)]
struct CargoMessage {
    reason: String,
    manifest_path: Option<PathBuf>,
    target: Option<CargoTarget>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct CargoTarget {
    kind: Vec<String>,
}

/// Builds the plugins workspace and returns the core module of each cdylib.
fn cargo_build(plugins_dir: &Path, target_dir: &Path) -> Result<Vec<Artifact>> {
    let manifest = plugins_dir.join("Cargo.toml");
    let mut child = Command::new("cargo")
        .args(["build", "--release", "--target", WASM_TARGET])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .arg("--message-format=json-render-diagnostics")
        .env_remove("CARGO_TARGET_DIR")
        .stdout(Stdio::piped())
        .spawn()
        .context("running cargo to build the plugins")?;

    let mut artifacts = Vec::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<CargoMessage>(&line) else {
            continue;
        };
        if message.reason != "compiler-artifact"
            || !message.target.is_some_and(|t| t.kind.iter().any(|k| k == "cdylib"))
        {
            continue;
        }
        let manifest_path = message.manifest_path.context("cargo reported an artifact without manifest_path")?;
        let wasm = message
            .filenames
            .into_iter()
            .find(|f| f.extension().is_some_and(|e| e == "wasm"))
            .with_context(|| format!("cargo built no .wasm for {}", manifest_path.display()))?;
        artifacts.push(Artifact { manifest_path, wasm });
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!(
            "`cargo build --release --target {WASM_TARGET} --manifest-path {}` failed ({status})",
            manifest.display()
        );
    }
    Ok(artifacts)
}

/// Componentizes one Rust plugin, checks it, and writes it with its manifest under `out`.
fn package_rust(
    plugins_dir: &Path,
    out: &Path,
    contract: &Surface,
    artifact: &Artifact,
    report: &mut Report,
) -> Result<()> {
    let plugin_dir = artifact.manifest_path.parent().context("a Cargo.toml has a folder")?;
    let relative = plugin_dir
        .strip_prefix(plugins_dir)
        .with_context(|| format!("cargo built {}, which is outside {}", plugin_dir.display(), plugins_dir.display()))?;
    let (name, manifest) = package::read_manifest(plugin_dir)?;
    let core =
        fs::read(&artifact.wasm).with_context(|| format!("plugin {name}: reading {}", artifact.wasm.display()))?;
    let component = component::encode(&core)
        .with_context(|| format!("plugin {name}: componentizing {}", artifact.wasm.display()))?;
    let installed = package::install(plugin_dir, &name, &manifest, &component, contract, &out.join(relative))?;
    let detail = format!(
        "{} bytes core, {} bytes component{}; {}",
        core.len(),
        installed.component_size,
        if installed.written { "" } else { ", unchanged" },
        installed.surface
    );
    let built = BuiltPlugin { language: "rust", name, component_path: installed.component_path };
    report.built(built, detail);
    Ok(())
}

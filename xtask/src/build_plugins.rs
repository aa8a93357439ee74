//! `cargo xtask build-plugins`: builds `plugins/` for wasm32 and componentizes each plugin.
//!
//! 1. makes sure the `wasm32-unknown-unknown` target is installed;
//! 2. builds the plugins workspace in release mode with its own target dir
//!    (`$CARGO_TARGET_DIR/plugins-build`, or `target/plugins-build`), so the build never waits
//!    for the lock of the main workspace's target dir (tests run this while `cargo test`
//!    holds it);
//! 3. encodes each plugin's core module as a component with `wit-component`, checks that it
//!    imports only `wink:plugin/*` interfaces and (unless the plugin brings its own `wit/`
//!    world) implements `wit/`'s `handler-plugin` world;
//! 4. writes `<out>/<path>/<name>.wasm` and a copy of the plugin's `plugin.yaml`, each
//!    atomically, where `<path>` is the plugin's folder under `plugins/` (`label-auditor`,
//!    `hostile/trap`) and `<name>` its last component.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use crate::component::{self, Surface};
use crate::fsutil::write_atomic;
use crate::toolchain::{self, WASM_TARGET};

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

/// Builds every plugin and writes its component and manifest under the output folder.
pub fn run(repo: &Path, args: &Args) -> Result<()> {
    toolchain::ensure_wasm_target()?;
    let plugins_dir =
        repo.join("plugins").canonicalize().with_context(|| format!("finding {}/plugins", repo.display()))?;
    let out = args.out.clone().unwrap_or_else(|| repo.join(".wink").join("plugins"));
    let contract = Surface::of_contract(&repo.join("wit"))?;

    let mut artifacts = cargo_build(&plugins_dir, &plugins_target_dir(repo)?)?;
    artifacts.sort_by(|a, b| a.manifest_path.cmp(&b.manifest_path));
    ensure!(!artifacts.is_empty(), "building {} produced no cdylib", plugins_dir.display());
    for artifact in &artifacts {
        let built = package(&plugins_dir, &out, &contract, artifact)?;
        println!(
            "{}: {} ({} bytes core, {} bytes component{}); {}",
            built.name,
            built.component_path.display(),
            built.core_size,
            built.component_size,
            if built.written { "" } else { ", unchanged" },
            built.surface,
        );
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

/// The fields of `plugin.yaml` this task checks; the host parses the rest.
#[derive(Deserialize)]
struct ManifestHead {
    name: String,
    component: String,
}

/// What [`package`] produced for one plugin.
struct Built {
    name: String,
    component_path: PathBuf,
    core_size: usize,
    component_size: usize,
    written: bool,
    surface: Surface,
}

/// Componentizes one plugin, checks it, and writes it with its manifest under `out`.
fn package(plugins_dir: &Path, out: &Path, contract: &Surface, artifact: &Artifact) -> Result<Built> {
    let plugin_dir = artifact.manifest_path.parent().context("a Cargo.toml has a folder")?;
    let relative = plugin_dir
        .strip_prefix(plugins_dir)
        .with_context(|| format!("cargo built {}, which is outside {}", plugin_dir.display(), plugins_dir.display()))?;
    let name = plugin_dir.file_name().context("a plugin folder has a name")?.to_string_lossy().into_owned();

    let manifest_path = plugin_dir.join("plugin.yaml");
    let manifest =
        fs::read(&manifest_path).with_context(|| format!("plugin {name}: reading {}", manifest_path.display()))?;
    let head: ManifestHead = serde_norway::from_slice(&manifest)
        .with_context(|| format!("plugin {name}: parsing {}", manifest_path.display()))?;
    let component_file = format!("{name}.wasm");
    ensure!(
        head.name == name && head.component == component_file,
        "plugin {name}: {} must say `name: {name}` and `component: {component_file}` \
         (it says `name: {}` and `component: {}`)",
        manifest_path.display(),
        head.name,
        head.component
    );

    let core =
        fs::read(&artifact.wasm).with_context(|| format!("plugin {name}: reading {}", artifact.wasm.display()))?;
    let component = component::encode(&core)
        .with_context(|| format!("plugin {name}: componentizing {}", artifact.wasm.display()))?;
    let surface =
        Surface::of_component(&component).with_context(|| format!("plugin {name}: reading the component's world"))?;
    surface.check_only_wink_imports().with_context(|| format!("plugin {name} ({})", artifact.wasm.display()))?;
    // A plugin with a `wit/` folder of its own implements another world on purpose.
    if !plugin_dir.join("wit").is_dir() {
        surface
            .check_implements(contract)
            .with_context(|| format!("plugin {name} ({}) is not a wink plugin", artifact.wasm.display()))?;
    }

    let dest = out.join(relative);
    let component_path = dest.join(&component_file);
    // The component first: whoever sees the manifest finds its component.
    let written = write_atomic(&component_path, &component)?;
    write_atomic(&dest.join("plugin.yaml"), &manifest)?;
    Ok(Built { name, component_path, core_size: core.len(), component_size: component.len(), written, surface })
}

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
//!
//! `--only NAME|PATH` (repeatable, or comma-separated; see [`select`]) builds just those
//! plugin folders, in `plugins/` or anywhere else, in any of the four languages, into the
//! same output folder. A Rust plugin is built with `cargo build --manifest-path
//! <folder>/Cargo.toml` (an out-of-tree crate is its own workspace and uses its own release
//! profile) in the same build folder, so the SDK and its dependencies compile once.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use crate::component::{self, Contract};
use crate::report::{BuiltPlugin, Report};
use crate::select::{self, Kind, Selected};
use crate::toolchain::{self, WASM_TARGET};
use crate::{guests, package};

/// Options of `cargo xtask build-plugins`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write the components and manifests [default: <repo>/.wink/plugins]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Build only this plugin: a folder under plugins/ (`label-auditor`, `hostile/trap`, or
    /// just its name, `image-policy`), or the path of a plugin folder anywhere (absolute, or
    /// relative to the current folder). Repeatable, or comma-separated.
    #[arg(long, value_name = "NAME|PATH", value_delimiter = ',')]
    only: Vec<String>,
}

impl Args {
    /// Arguments that build every plugin into `out`.
    pub fn with_out(out: PathBuf) -> Self {
        Self { out: Some(out), only: Vec::new() }
    }
}

/// Builds every plugin (Rust, then Python, JavaScript and C) and writes its component and
/// manifest under the output folder. A part that fails is reported and the rest is built;
/// the returned report says what failed.
pub fn run(repo: &Path, args: &Args) -> Result<Report> {
    let plugins_dir =
        repo.join("plugins").canonicalize().with_context(|| format!("finding {}/plugins", repo.display()))?;
    let out = args.out.clone().unwrap_or_else(|| repo.join(".wink").join("plugins"));
    let contract = Contract::load(&repo.join("wit"))?;
    let build_dir = plugins_target_dir(repo)?;
    let mut report = Report::default();
    if !args.only.is_empty() {
        let cwd = std::env::current_dir().context("reading the current folder")?;
        let selected = select::resolve(&plugins_dir, &cwd, &args.only)?;
        build_selected(repo, &plugins_dir, &out, &contract, &build_dir, &selected, &mut report);
        return Ok(report);
    }

    if let Err(e) = build_rust(&plugins_dir, &out, &contract, &build_dir, &mut report) {
        report.failed("the Rust plugins", e);
    }
    let context =
        guests::Context { repo, plugins_dir: &plugins_dir, out: &out, contract: &contract, build_dir: &build_dir };
    guests::build_all(&context, &mut report);
    Ok(report)
}

/// Builds the `--only` selection: the Rust plugins one by one, then the others by language.
fn build_selected(
    repo: &Path,
    plugins_dir: &Path,
    out: &Path,
    contract: &Contract,
    build_dir: &Path,
    selected: &[Selected],
    report: &mut Report,
) {
    for plugin in selected.iter().filter(|s| s.kind == Kind::Rust) {
        if let Err(e) = build_one_rust(out, contract, build_dir, plugin, report) {
            report.failed(format!("plugin {} (rust)", plugin.dir.display()), e);
        }
    }
    let others: Vec<guests::GuestPlugin> = selected
        .iter()
        .filter_map(|s| match s.kind {
            Kind::Guest(language) => {
                Some(guests::GuestPlugin { language, dir: s.dir.clone(), out_path: s.out_path.clone() })
            }
            Kind::Rust => None,
        })
        .collect();
    if !others.is_empty() {
        let context = guests::Context { repo, plugins_dir, out, contract, build_dir };
        guests::build(&context, &others, report);
    }
}

/// Builds one Rust plugin folder, in the tree or out of it.
fn build_one_rust(
    out: &Path,
    contract: &Contract,
    build_dir: &Path,
    plugin: &Selected,
    report: &mut Report,
) -> Result<()> {
    toolchain::ensure_wasm_target()?;
    let manifest = plugin.dir.join("Cargo.toml");
    let artifacts = cargo_build(&manifest, build_dir, &[])?;
    // Only the selected crate's cdylib: a path dependency may be one too.
    let artifact =
        artifacts.iter().find(|a| a.manifest_path.canonicalize().is_ok_and(|p| p == manifest)).with_context(|| {
            format!("building {} produced no cdylib: set `crate-type = [\"cdylib\"]` in its [lib]", manifest.display())
        })?;
    package_rust(out, contract, artifact, &plugin.out_path, report)
}

/// Builds the Rust plugins (the cargo workspace in `plugins/`).
fn build_rust(
    plugins_dir: &Path,
    out: &Path,
    contract: &Contract,
    build_dir: &Path,
    report: &mut Report,
) -> Result<()> {
    toolchain::ensure_wasm_target()?;
    eprintln!(
        "xtask: building the Rust plugins in {} (cargo, release, {WASM_TARGET}: a few minutes the first time)",
        plugins_dir.display()
    );
    // A reconciler builds the SDK with its `reconciler` feature (the other world): each is
    // built on its own, so that cargo does not unify that feature into the handlers' build.
    let manifest = plugins_dir.join("Cargo.toml");
    let reconcilers = reconciler_packages(plugins_dir)?;
    let mut workspace = vec!["--workspace".to_owned()];
    workspace.extend(reconcilers.iter().flat_map(|p| ["--exclude".to_owned(), p.clone()]));
    let mut artifacts = cargo_build(&manifest, build_dir, &workspace)?;
    for package in &reconcilers {
        artifacts.extend(cargo_build(&manifest, build_dir, &["-p".to_owned(), package.clone()])?);
    }
    artifacts.sort_by(|a, b| a.manifest_path.cmp(&b.manifest_path));
    ensure!(!artifacts.is_empty(), "building {} produced no cdylib", plugins_dir.display());
    for artifact in &artifacts {
        let packaged = artifact
            .manifest_path
            .parent()
            .context("a Cargo.toml has a folder")
            .and_then(|dir| {
                dir.strip_prefix(plugins_dir).with_context(|| {
                    format!("cargo built {}, which is outside {}", dir.display(), plugins_dir.display())
                })
            })
            .and_then(|relative| package_rust(out, contract, artifact, relative, report));
        if let Err(e) = packaged {
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

/// The packages of the plugins workspace in `plugins_dir` that are reconcilers: a member
/// folder whose `plugin.yaml` has a `reconcile` section, named as its `Cargo.toml` says.
fn reconciler_packages(plugins_dir: &Path) -> Result<Vec<String>> {
    let mut packages = Vec::new();
    for entry in walkdir::WalkDir::new(plugins_dir).into_iter().filter_map(Result::ok) {
        let dir = entry.path();
        if !(dir.join("Cargo.toml").is_file() && dir.join("plugin.yaml").is_file()) {
            continue;
        }
        if crate::guests::world_of(dir)? != crate::component::RECONCILER_WORLD {
            continue;
        }
        let cargo_toml = fs::read_to_string(dir.join("Cargo.toml"))?;
        let name = cargo_toml
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \"").and_then(|rest| rest.strip_suffix('"')))
            .with_context(|| format!("{} names no package", dir.join("Cargo.toml").display()))?;
        packages.push(name.to_owned());
    }
    Ok(packages)
}

/// Builds the crate or workspace of `manifest` (with `extra` arguments: which packages) and
/// returns the core module of each cdylib.
fn cargo_build(manifest: &Path, target_dir: &Path, extra: &[String]) -> Result<Vec<Artifact>> {
    let mut child = Command::new("cargo")
        .args(["build", "--release", "--target", WASM_TARGET])
        .args(extra)
        .arg("--manifest-path")
        .arg(manifest)
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

/// Componentizes one Rust plugin, checks it, and writes it with its manifest to
/// `out/relative`.
fn package_rust(
    out: &Path,
    contract: &Contract,
    artifact: &Artifact,
    relative: &Path,
    report: &mut Report,
) -> Result<()> {
    let plugin_dir = artifact.manifest_path.parent().context("a Cargo.toml has a folder")?;
    let (name, manifest) = package::read_manifest(plugin_dir)?;
    let core =
        fs::read(&artifact.wasm).with_context(|| format!("plugin {name}: reading {}", artifact.wasm.display()))?;
    let component = component::encode(&core)
        .with_context(|| format!("plugin {name}: componentizing {}", artifact.wasm.display()))?;
    let installed = package::install(plugin_dir, &name, &manifest, &component, contract, &out.join(relative), false)?;
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn only_is_repeatable_and_comma_separated() {
        let cli = Cli::try_parse_from(["build-plugins", "--only", "label-auditor,hostile/trap", "--only", "/tmp/x"]);
        assert_eq!(cli.unwrap().args.only, ["label-auditor", "hostile/trap", "/tmp/x"]);
        assert!(Cli::try_parse_from(["build-plugins"]).unwrap().args.only.is_empty(), "default: every plugin");
        assert!(Cli::try_parse_from(["build-plugins", "--only"]).is_err(), "--only needs a value");
    }

    /// The out-of-tree route of the plugin guide (`docs/out-of-tree-plugins.md`), for real: a
    /// crate in a temporary folder, depending on `wink-guest` by path, built with `--only PATH`
    /// into a component that implements the contract. Reuses the plugins' build folder, so it
    /// compiles only the new crate once the plugins have been built.
    #[test]
    fn builds_an_out_of_tree_rust_plugin_with_only_path() {
        let repo = crate::repo_root();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pod-gate");
        fs::create_dir_all(dir.join("src")).unwrap();
        let sdk = repo.join("guest-sdk");
        let cargo_toml = format!(
            "[package]\nname = \"pod-gate\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\n\n\
             [dependencies]\nwink-guest = {{ path = {:?} }}\n\n\
             [profile.release]\nopt-level = \"s\"\nlto = true\ncodegen-units = 1\npanic = \"abort\"\nstrip = true\n",
            sdk.display().to_string()
        );
        fs::write(dir.join("Cargo.toml"), cargo_toml).unwrap();
        // The plugins' lock file pins the versions already built (and needs no registry).
        fs::copy(repo.join("plugins").join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        fs::write(
            dir.join("src").join("lib.rs"),
            "use wink_guest::{Action, Handler, HandlerError, Object, info};\n\
             #[derive(Default)]\nstruct PodGate;\n\
             impl Handler for PodGate {\n\
                 fn on_add(&mut self, obj: &Object, _initial: bool) -> Result<Action, HandlerError> {\n\
                     info!(\"{} appeared\", obj.key());\n        Ok(Action::AwaitChange)\n    }\n}\n\
             wink_guest::export_handler!(PodGate);\n",
        )
        .unwrap();
        fs::write(
            dir.join("plugin.yaml"),
            "name: pod-gate\ncomponent: pod-gate.wasm\nresources:\n  - {apiVersion: v1, kind: Pod}\n",
        )
        .unwrap();

        let out = root.path().join("out");
        let args = Args { out: Some(out.clone()), only: vec![dir.display().to_string()] };
        let report = run(&repo, &args).unwrap();
        let built: Vec<(&str, &str)> = report.built.iter().map(|b| (b.name.as_str(), b.language)).collect();
        assert_eq!(built, [("pod-gate", "rust")]);
        report.into_result().unwrap();
        let component = fs::read(out.join("pod-gate").join("pod-gate.wasm")).unwrap();
        let surface = crate::component::Surface::of_component(&component).unwrap();
        surface.check_only_wink_imports().unwrap();
        Contract::load(&repo.join("wit")).unwrap().check(&surface).unwrap();
        assert!(out.join("pod-gate").join("plugin.yaml").is_file());
    }
}

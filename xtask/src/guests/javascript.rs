//! JavaScript plugins, built with componentize-qjs (from npm) in a project-local
//! `node_modules`.
//!
//! componentize-qjs embeds the QuickJS engine: a component is about 1.6 MB and compiles in
//! wasmtime in a second or two, against 12 MB and ~14 s for SpiderMonkey (componentize-js).
//! Its npm package ships a prebuilt native module per platform (an optional dependency), so
//! the install needs nothing but Node.js and npm.
//!
//! Install: a `package.json` pinning `componentize-qjs` in `<toolchains>/javascript`, then
//! `npm install` there.
//!
//! Build: the plugin's files are staged into a build folder with the SDK as
//! `node_modules/wink-guest`, so `import … from "wink-guest"` resolves as it would in an npm
//! project; then `componentize-qjs --wit wit/v0.2.0 --world handler-plugin --js app.js --module-root
//! <stage> --sync` (`--sync` picks the runtime without the component-model async ABI). The
//! QuickJS runtime imports parts of WASI: the host gives it the clocks and randomness and
//! refuses the rest (files, environment, streams: calls trap), so `Date` works.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::tools::{self, InstallLock};

/// The componentize-qjs version installed from npm.
pub const COMPONENTIZE_QJS: &str = "0.4.5";

/// The name plugins import the SDK by.
pub const SDK_PACKAGE: &str = "wink-guest";

/// An installed componentize-qjs.
pub struct Toolchain {
    node: String,
    cli: PathBuf,
}

impl Toolchain {
    /// What the build depends on besides its sources: the tool's version and flags.
    pub fn fingerprint(&self) -> String {
        format!("componentize-qjs {COMPONENTIZE_QJS} --sync")
    }

    /// Builds the plugin in `plugin_dir` into a component under `work`; returns its path.
    pub fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        let stage = work.join("src");
        tools::fresh_dir(&stage)?;
        tools::copy_tree(plugin_dir, &stage, &["plugin.yaml", "README.md"])?;
        let sdk = stage.join("node_modules").join(SDK_PACKAGE);
        tools::copy_tree(&repo.join("guest-sdk").join("javascript"), &sdk, &["README.md"])?;
        let output = work.join("component.wasm");
        tools::run(
            Command::new(&self.node)
                .current_dir(work)
                .arg(&self.cli)
                .arg("--wit")
                .arg(super::sdk_contract(repo, super::Language::JavaScript))
                .args(["--world", "handler-plugin", "--js"])
                .arg(stage.join("app.js"))
                .arg("--module-root")
                .arg(&stage)
                .args(["--sync", "-o"])
                .arg(&output),
        )?;
        Ok(output)
    }
}

/// Installs componentize-qjs into `<toolchains>/javascript` unless the pinned version is there.
pub fn install(toolchains: &Path) -> Result<Toolchain> {
    let dir = toolchains.join("javascript");
    let package = dir.join("node_modules").join("componentize-qjs");
    let node = find_node()?;
    let toolchain = Toolchain { node: node.clone(), cli: package.join("bin").join("componentize-qjs") };
    if installed_version(&package).as_deref() == Some(COMPONENTIZE_QJS) && runs(&toolchain) {
        return Ok(toolchain);
    }
    let _lock = InstallLock::acquire(toolchains)?;
    if installed_version(&package).as_deref() == Some(COMPONENTIZE_QJS) && runs(&toolchain) {
        return Ok(toolchain);
    }
    eprintln!("xtask: installing componentize-qjs {COMPONENTIZE_QJS} from npm into {}", dir.display());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let manifest = serde_json::json!({
        "name": "wink-javascript-toolchain",
        "private": true,
        "description": "Installed by `cargo xtask build-plugins`: the tool that builds wink's JavaScript plugins.",
        "dependencies": { "componentize-qjs": COMPONENTIZE_QJS },
    });
    fs::write(dir.join("package.json"), serde_json::to_string_pretty(&manifest)? + "\n")
        .with_context(|| format!("writing {}/package.json", dir.display()))?;
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    tools::run(Command::new(npm).current_dir(&dir).args(["install", "--no-audit", "--no-fund", "--loglevel=error"]))
        .context("installing componentize-qjs from npm (is npm installed?)")?;
    match installed_version(&package) {
        Some(v) if v == COMPONENTIZE_QJS && runs(&toolchain) => Ok(toolchain),
        Some(v) if v == COMPONENTIZE_QJS => bail!(
            "componentize-qjs {v} is installed but does not run: its native module for this \
             platform (an optional dependency, @andreiltd/componentize-qjs-binding-*) is missing"
        ),
        other => bail!("npm installed componentize-qjs {other:?}, not {COMPONENTIZE_QJS}"),
    }
}

fn installed_version(package: &Path) -> Option<String> {
    let text = fs::read_to_string(package.join("package.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("version")?.as_str().map(str::to_owned)
}

/// Whether the CLI starts (its native module loads).
fn runs(toolchain: &Toolchain) -> bool {
    Command::new(&toolchain.node).arg(&toolchain.cli).arg("--help").output().is_ok_and(|o| o.status.success())
}

/// `node` (18 or newer, which componentize-qjs needs), or an error saying what to install.
fn find_node() -> Result<String> {
    let output = Command::new("node")
        .arg("--version")
        .output()
        .context("no `node` on PATH: install Node.js 18 or newer with npm (Debian: nodejs and npm)")?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major: Option<u32> = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok());
    match major {
        Some(m) if m >= 18 => Ok("node".to_owned()),
        _ => bail!("node {version} is too old: componentize-qjs needs Node.js 18 or newer"),
    }
}

#[cfg(test)]
mod tests {
    /// The SDK's host-free module (`guest-sdk/javascript/meta.js`: owner references, label
    /// selectors), tested by Node's test runner.
    #[test]
    fn sdk_meta_passes_its_node_tests() {
        let node = super::find_node().expect("Node.js for the SDK's tests");
        super::tools::run(
            std::process::Command::new(&node)
                .current_dir(crate::repo_root().join("guest-sdk/javascript"))
                .args(["--test", "tests/"]),
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

//! JavaScript plugins, built with ComponentizeJS (from npm) in a project-local
//! `node_modules`.
//!
//! ComponentizeJS embeds SpiderMonkey (StarlingMonkey) and snapshots the plugin's module
//! with Wizer: a component is about 12.8 MB and takes wasmtime several seconds to compile
//! (the host's compile cache keeps it), against 1.6 MB and a second or two for QuickJS
//! (componentize-qjs). QuickJS is not used: every published componentize-qjs (0.4.5 on npm,
//! 0.5.0 on crates.io) releases a synchronous export's borrowed handles after the call ended,
//! which wasmtime refuses as a trap, so it cannot take `wink:plugin@0.3.0`'s lent objects.
//!
//! Install: a `package.json` pinning ComponentizeJS and esbuild in `<toolchains>/javascript`,
//! then `npm install` there (prebuilt binaries, Node.js and npm only).
//!
//! Build: the plugin's files are staged into a build folder with the SDK as
//! `node_modules/wink-guest`, so `import … from "wink-guest"` resolves as in an npm project;
//! esbuild bundles `app.js` with what it imports into one ES module (ComponentizeJS resolves
//! relative imports only), leaving the `wink:` and `wasi:` interfaces to the component; then
//! `componentize-js bundle.js --wit wit/v0.4.0 --world-name <world> --disable http fetch-event
//! stdio`. The world is the manifest's (`reconcile:` makes a reconciler). The engine imports
//! parts of WASI: the host gives it the clocks and randomness and refuses the rest (files,
//! environment, streams), so `Date` and `Math.random` work.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::tools::{self, InstallLock};

/// The ComponentizeJS version installed from npm.
pub const COMPONENTIZE_JS: &str = "0.23.0";

/// The esbuild version installed from npm (bundles a plugin with the SDK).
pub const ESBUILD: &str = "0.28.2";

/// The npm package of ComponentizeJS.
const COMPONENTIZE_JS_PACKAGE: &str = "@bytecodealliance/componentize-js";

/// The npm packages installed, with their pinned versions: ComponentizeJS, esbuild, and the
/// WASI shim ComponentizeJS 0.23.0 imports without declaring it (its splicer runs as a
/// component in Node), at the version it was released with.
const PACKAGES: [(&str, &str); 3] =
    [(COMPONENTIZE_JS_PACKAGE, COMPONENTIZE_JS), ("esbuild", ESBUILD), ("@bytecodealliance/preview2-shim", "0.25.0")];

/// The name plugins import the SDK by.
pub const SDK_PACKAGE: &str = "wink-guest";

/// The engine features left out: the host has no sockets or HTTP, and the SDK routes the
/// console to the host's log.
const DISABLED_FEATURES: [&str; 3] = ["http", "fetch-event", "stdio"];

/// An installed ComponentizeJS and esbuild.
pub struct Toolchain {
    node: String,
    componentize: PathBuf,
    esbuild: PathBuf,
}

impl Toolchain {
    /// What the build depends on besides its sources: the tools' versions and flags.
    pub fn fingerprint(&self) -> String {
        format!("{} --disable {}", pinned(), DISABLED_FEATURES.join(" "))
    }

    /// Builds the plugin in `plugin_dir` into a component under `work`; returns its path.
    pub fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        let stage = work.join("src");
        tools::fresh_dir(&stage)?;
        tools::copy_tree(plugin_dir, &stage, &["plugin.yaml", "README.md"])?;
        let sdk = stage.join("node_modules").join(SDK_PACKAGE);
        tools::copy_tree(&repo.join("guest-sdk").join("javascript"), &sdk, &["README.md", "CHANGELOG.md", "tests"])?;
        let bundle = work.join("bundle.js");
        tools::run(
            Command::new(&self.esbuild)
                .current_dir(&stage)
                .args(["app.js", "--bundle", "--format=esm", "--platform=neutral", "--log-level=warning"])
                .args(["--external:wink:*", "--external:wasi:*"])
                .arg(format!("--outfile={}", bundle.display())),
        )
        .context("bundling app.js with the SDK (esbuild)")?;
        let output = work.join("component.wasm");
        tools::run(
            Command::new(&self.node)
                .current_dir(work)
                .arg(&self.componentize)
                .arg(&bundle)
                .arg("--wit")
                .arg(super::sdk_contract(repo, super::Language::JavaScript))
                .arg("--world-name")
                .arg(super::world_of(plugin_dir)?)
                .arg("--disable")
                .args(DISABLED_FEATURES)
                .arg("-o")
                .arg(&output),
        )?;
        Ok(output)
    }
}

/// Installs ComponentizeJS and esbuild into `<toolchains>/javascript` unless the pinned
/// versions are there.
pub fn install(toolchains: &Path) -> Result<Toolchain> {
    let dir = toolchains.join("javascript");
    let modules = dir.join("node_modules");
    let node = find_node()?;
    let toolchain = Toolchain {
        node,
        componentize: modules.join(COMPONENTIZE_JS_PACKAGE).join("src").join("cli.js"),
        esbuild: modules.join("esbuild").join("bin").join("esbuild"),
    };
    let installed = || PACKAGES.map(|(package, _)| installed_version(&modules.join(package)));
    let ready = |t: &Toolchain| {
        installed().iter().zip(PACKAGES).all(|(found, (_, wanted))| found.as_deref() == Some(wanted)) && runs(t)
    };
    if ready(&toolchain) {
        return Ok(toolchain);
    }
    let _lock = InstallLock::acquire(toolchains)?;
    if ready(&toolchain) {
        return Ok(toolchain);
    }
    eprintln!("xtask: installing {} from npm into {} (about 400 MB)", pinned(), dir.display());
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let manifest = serde_json::json!({
        "name": "wink-javascript-toolchain",
        "private": true,
        "description": "Installed by `cargo xtask build-plugins`: the tools that build wink's JavaScript plugins.",
        "dependencies": PACKAGES.iter().map(|(package, version)| (package.to_string(), serde_json::json!(version))).collect::<serde_json::Map<_, _>>(),
    });
    fs::write(dir.join("package.json"), serde_json::to_string_pretty(&manifest)? + "\n")
        .with_context(|| format!("writing {}/package.json", dir.display()))?;
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    tools::run(Command::new(npm).current_dir(&dir).args(["install", "--no-audit", "--no-fund", "--loglevel=error"]))
        .context("installing ComponentizeJS and esbuild from npm (is npm installed?)")?;
    if ready(&toolchain) {
        return Ok(toolchain);
    }
    let found: Vec<String> =
        installed().iter().zip(PACKAGES).map(|(found, (package, _))| format!("{package} {found:?}")).collect();
    bail!(
        "npm installed {} (wanted {}), or they do not run: their prebuilt binaries for this platform \
         (optional dependencies) may be missing",
        found.join(", "),
        pinned()
    )
}

/// The pinned packages, `name version` each.
fn pinned() -> String {
    PACKAGES.map(|(package, version)| format!("{package} {version}")).join(", ")
}

fn installed_version(package: &Path) -> Option<String> {
    let text = fs::read_to_string(package.join("package.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("version")?.as_str().map(str::to_owned)
}

/// Whether both tools start (their native parts load).
fn runs(toolchain: &Toolchain) -> bool {
    let ok = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
    ok(Command::new(&toolchain.node).arg(&toolchain.componentize).arg("--help"))
        && ok(Command::new(&toolchain.esbuild).arg("--version"))
}

/// `node` (18 or newer, which ComponentizeJS needs), or an error saying what to install.
fn find_node() -> Result<String> {
    let output = Command::new("node")
        .arg("--version")
        .output()
        .context("no `node` on PATH: install Node.js 18 or newer with npm (Debian: nodejs and npm)")?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major: Option<u32> = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok());
    match major {
        Some(m) if m >= 18 => Ok("node".to_owned()),
        _ => bail!("node {version} is too old: ComponentizeJS needs Node.js 18 or newer"),
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

//! Go plugins, built with the machine's Go (1.24 or later: `//go:wasmexport`) for WASI
//! preview 1, and made components with wit-component and the Go SDK's own preview 1 adapter.
//!
//! Build:
//! 1. `go build -buildmode=c-shared` with `GOOS=wasip1 GOARCH=wasm` in the plugin's folder (a
//!    Go module whose `go.mod` replaces `wink.dev/wink` with `guest-sdk/go`; other modules come
//!    from the module proxy into Go's module cache, and Go's build cache keeps compiled
//!    packages). The core module exports the handler functions and `cabi_realloc` under their
//!    canonical-ABI names (`guest-sdk/go/imports.go`, `handler.go`) and `_initialize`, which
//!    the component runs before any export;
//! 2. the world `handler-plugin` of the SDK's contract is embedded into the core module;
//! 3. `wit-component` makes the component, with `guest-sdk/go/wasip1/adapter.wat` serving the
//!    preview 1 imports of Go's runtime (clocks, randomness, standard output and error to the
//!    log; nothing else). The standard adapter does not fit Go: it allocates its state in the
//!    module's memory on its first call, which Go's runtime makes while initialising.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

use super::tools;

/// The flags every Go plugin is built with.
const GO_FLAGS: &[&str] = &["build", "-buildmode=c-shared", "-trimpath", "-ldflags=-w"];

/// The oldest Go that builds plugins: the first with `//go:wasmexport`.
const MIN_MINOR: u32 = 24;

/// The machine's Go and the adapter, built once per run.
pub struct Toolchain {
    go: PathBuf,
    version: String,
    adapter: Vec<u8>,
}

impl Toolchain {
    /// What the build depends on besides its sources: Go's version and the flags.
    pub fn fingerprint(&self) -> String {
        format!("{} GOOS=wasip1 GOARCH=wasm {}", self.version, GO_FLAGS.join(" "))
    }

    /// Builds the plugin in `plugin_dir` into a component under `work`; returns its path.
    pub fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        let core = work.join("core.wasm");
        // A reconciler's SDK exports the reconciler world (the `wink_reconciler` build tag).
        let world = super::world_of(plugin_dir)?;
        let tags = if world == crate::component::RECONCILER_WORLD { "-tags=wink_reconciler" } else { "-tags=" };
        tools::run(
            Command::new(&self.go)
                .current_dir(plugin_dir)
                .env("GOOS", "wasip1")
                .env("GOARCH", "wasm")
                // The machine's Go builds, whatever `go.mod` names (it is never downloaded).
                .env("GOTOOLCHAIN", "local")
                .args(GO_FLAGS)
                .arg(tags)
                .arg("-o")
                .arg(&core)
                .arg("."),
        )?;
        let mut module = fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
        let (resolve, world) = contract_world(repo, world)?;
        wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8, false)?;
        let bytes = ComponentEncoder::default()
            .module(&module)?
            .adapter("wasi_snapshot_preview1", &self.adapter)?
            .validate(true)
            .encode()
            .context("componentizing the core module")?;
        let output = work.join("component.wasm");
        fs::write(&output, bytes).with_context(|| format!("writing {}", output.display()))?;
        Ok(output)
    }
}

/// The world `world` (`handler-plugin`, `reconciler-plugin`) of the SDK's contract.
fn contract_world(repo: &Path, world: &str) -> Result<(Resolve, wit_parser::WorldId)> {
    let wit = super::sdk_contract(repo, super::Language::Go);
    let mut resolve = Resolve::new();
    let (package, _) =
        resolve.push_dir(&wit).with_context(|| format!("parsing the WIT package in {}", wit.display()))?;
    let world = resolve.select_world(&[package], Some(world))?;
    Ok((resolve, world))
}

/// The adapter: `guest-sdk/go/wasip1/adapter.wat` with its world embedded.
fn adapter(repo: &Path) -> Result<Vec<u8>> {
    let dir = repo.join("guest-sdk/go/wasip1");
    let (mut resolve, _) = contract_world(repo, "handler-plugin")?;
    let text = |name: &str| {
        let path = dir.join(name);
        fs::read_to_string(&path).with_context(|| format!("reading {}", path.display())).map(|t| (path, t))
    };
    let (path, random) = text("random.wit")?;
    resolve.push_str(&path, &random)?;
    let (path, world) = text("adapter.wit")?;
    let package = resolve.push_str(&path, &world)?;
    let world = resolve.select_world(&[package], Some("adapter"))?;
    let path = dir.join("adapter.wat");
    let mut module = wat::parse_file(&path).with_context(|| format!("assembling {}", path.display()))?;
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8, false)?;
    Ok(module)
}

/// Finds the machine's Go (`$GO`, or `go` on `PATH`), checks its version, and assembles the
/// adapter.
pub fn install(repo: &Path) -> Result<Toolchain> {
    let go = PathBuf::from(std::env::var_os("GO").unwrap_or_else(|| "go".into()));
    let version = tools::version_of(&go, &["version"])
        .with_context(|| format!("`{} version` does not run: install Go 1.{MIN_MINOR} or later", go.display()))?;
    let minor = version
        .split_whitespace()
        .find_map(|w| w.strip_prefix("go1."))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match minor {
        Some(minor) if minor >= MIN_MINOR => {}
        _ => bail!("{version}: Go plugins need Go 1.{MIN_MINOR} or later (//go:wasmexport)"),
    }
    Ok(Toolchain { go, version, adapter: adapter(repo)? })
}

#[cfg(test)]
mod tests {
    /// The SDK's host-free package (`guest-sdk/go/meta`: owner references, label selectors),
    /// tested natively by the machine's Go.
    #[test]
    fn sdk_meta_passes_its_native_tests() {
        let toolchain = super::install(&crate::repo_root()).expect("the machine's Go");
        super::tools::run(
            std::process::Command::new(&toolchain.go)
                .current_dir(crate::repo_root().join("guest-sdk/go"))
                .env("GOTOOLCHAIN", "local")
                .args(["test", "./meta"]),
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

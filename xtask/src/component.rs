//! Turning a plugin's core module into a component, and checking what the component imports
//! and exports, as the host will see it.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use wit_component::{ComponentEncoder, DecodedWasm};
use wit_parser::{Resolve, WorldId};

/// The world every wink plugin implements, at every version.
const WORLD: &str = "handler-plugin";

/// The world reconcilers implement, from 0.4.0.
pub const RECONCILER_WORLD: &str = "reconciler-plugin";

/// The only interfaces a wink plugin may import: the `wink:plugin` package's, and the WASI
/// clocks (any 0.2.x).
const ALLOWED_IMPORT_PREFIXES: [&str; 3] =
    ["wink:plugin/", "wasi:clocks/wall-clock@0.2.", "wasi:clocks/monotonic-clock@0.2."];

/// Encodes a core module built with wit-bindgen (its `component-type` custom sections say
/// which world it implements) as a component, and validates the result.
pub fn encode(core_module: &[u8]) -> Result<Vec<u8>> {
    ComponentEncoder::default().module(core_module)?.validate(true).encode()
}

/// The top-level import and export names of a component or world: interface names such as
/// `wink:plugin/log@0.1.0`, or plain names for bare functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surface {
    /// Imported names, in the component's order.
    pub imports: Vec<String>,
    /// Exported names, in the component's order.
    pub exports: Vec<String>,
}

impl Surface {
    /// The surface of an encoded component.
    pub fn of_component(component: &[u8]) -> Result<Self> {
        match wit_component::decode(component).context("decoding the component's type")? {
            DecodedWasm::Component(resolve, world) => Ok(Self::of_world(&resolve, world)),
            DecodedWasm::WitPackage(..) => bail!("this is a WIT package, not a component"),
        }
    }

    /// The surface the `handler-plugin` world of the WIT package in `wit_dir` prescribes.
    pub fn of_contract(wit_dir: &Path) -> Result<Self> {
        Self::of_contract_world(wit_dir, WORLD)?
            .with_context(|| format!("finding world `{WORLD}` in {}", wit_dir.display()))
    }

    /// The surface the world `world` of the WIT package in `wit_dir` prescribes, if it has
    /// that world.
    pub fn of_contract_world(wit_dir: &Path, world: &str) -> Result<Option<Self>> {
        let mut resolve = Resolve::new();
        let (package, _) =
            resolve.push_dir(wit_dir).with_context(|| format!("parsing the WIT package in {}", wit_dir.display()))?;
        Ok(resolve.select_world(&[package], Some(world)).ok().map(|world| Self::of_world(&resolve, world)))
    }

    fn of_world(resolve: &Resolve, world: WorldId) -> Self {
        let world = &resolve.worlds[world];
        let names = |items: &wit_parser::IndexMap<wit_parser::WorldKey, _>| {
            items.keys().map(|key| resolve.name_world_key(key)).collect()
        };
        Self { imports: names(&world.imports), exports: names(&world.exports) }
    }

    /// The same surface without the WASI imports a language runtime brings (all but the
    /// clocks), which the host refuses: every call to them traps.
    pub fn without_runtime_wasi(&self) -> Self {
        let imports = self
            .imports
            .iter()
            .filter(|name| !name.starts_with("wasi:") || ALLOWED_IMPORT_PREFIXES.iter().any(|p| name.starts_with(p)))
            .cloned()
            .collect();
        Self { imports, exports: self.exports.clone() }
    }

    /// Fails unless every import is a `wink:plugin/*` interface or a WASI clock: no other
    /// WASI, no bare functions.
    pub fn check_only_wink_imports(&self) -> Result<()> {
        let foreign: Vec<&str> = self
            .imports
            .iter()
            .map(String::as_str)
            .filter(|name| !ALLOWED_IMPORT_PREFIXES.iter().any(|prefix| name.starts_with(prefix)))
            .collect();
        if !foreign.is_empty() {
            bail!(
                "the component imports {}, but a wink plugin may import only wink:plugin/* \
                 interfaces and the WASI clocks (other WASI imports come from building for \
                 wasm32-wasip* instead of wasm32-unknown-unknown, or from a dependency that \
                 needs an operating system)",
                foreign.join(", ")
            );
        }
        Ok(())
    }

    /// Fails unless the component exports everything `contract` exports and imports nothing
    /// beyond what `contract` imports.
    pub fn check_implements(&self, contract: &Self) -> Result<()> {
        let missing: Vec<&str> =
            contract.exports.iter().filter(|name| !self.exports.contains(name)).map(String::as_str).collect();
        if !missing.is_empty() {
            bail!(
                "the component does not export {} (it exports {}): is it built against \
                 wit/ and does it call `wink_guest::export_handler!`?",
                missing.join(", "),
                list_or_nothing(&self.exports)
            );
        }
        // The WASI clocks may be imported at any 0.2.x version: the host matches them.
        let clock = |name: &str| ALLOWED_IMPORT_PREFIXES[1..].iter().any(|p| name.starts_with(p));
        let extra: Vec<&str> = self
            .imports
            .iter()
            .filter(|name| !contract.imports.contains(name) && !clock(name))
            .map(String::as_str)
            .collect();
        if !extra.is_empty() {
            bail!("the component imports {}, which the `{WORLD}` world does not offer", extra.join(", "));
        }
        Ok(())
    }
}

/// Every version of the contract a plugin may implement: each published version of the
/// `wink:plugin` package, in its own folder `wit/v<version>/`; the newest is the current one.
#[derive(Debug, Clone)]
pub struct Contract {
    /// The surface of each version's handler world, newest first.
    versions: Vec<Surface>,
    /// The surface of each version's reconciler world, where it has one, newest first.
    reconcilers: Vec<Surface>,
}

impl Contract {
    /// Reads the package in each of `wit_dir`'s version folders ([`version_dirs`]).
    pub fn load(wit_dir: &Path) -> Result<Self> {
        let dirs = version_dirs(wit_dir)?;
        let versions = dirs.iter().map(|dir| Surface::of_contract(dir)).collect::<Result<_>>()?;
        let reconcilers = dirs
            .iter()
            .map(|dir| Surface::of_contract_world(dir, RECONCILER_WORLD))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        Ok(Self { versions, reconcilers })
    }

    /// The surface of the current version.
    pub fn current(&self) -> &Surface {
        &self.versions[0]
    }

    /// Fails unless the component implements one of the versions' handler or reconciler
    /// worlds (the error is the one against the current version's handler world).
    pub fn check(&self, surface: &Surface) -> Result<()> {
        let current = surface.check_implements(self.current());
        let others = self.versions[1..].iter().chain(&self.reconcilers);
        if current.is_ok() || others.into_iter().any(|v| surface.check_implements(v).is_ok()) {
            return Ok(());
        }
        current
    }
}

/// The folders `v<major>.<minor>.<patch>` of `wit_dir`, one per published version of the
/// package, newest first (by version, not by name: `v0.10.0` is newer than `v0.9.0`). Fails
/// if there is none.
pub fn version_dirs(wit_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<([u64; 3], PathBuf)> = std::fs::read_dir(wit_dir)
        .with_context(|| format!("reading {}", wit_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .filter_map(|path| Some((folder_version(&path)?, path)))
        .collect();
    if dirs.is_empty() {
        bail!("{} holds no version folder (v<major>.<minor>.<patch>/)", wit_dir.display());
    }
    dirs.sort();
    Ok(dirs.into_iter().rev().map(|(_, path)| path).collect())
}

/// The version a folder named `v<major>.<minor>.<patch>` holds.
pub fn folder_version(dir: &Path) -> Option<[u64; 3]> {
    let name = dir.file_name()?.to_str()?.strip_prefix('v')?;
    let mut parts = name.split('.').map(|part| part.parse::<u64>().ok());
    let version = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(version)
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "imports {}; exports {}", list_or_nothing(&self.imports), list_or_nothing(&self.exports))
    }
}

fn list_or_nothing(names: &[String]) -> String {
    if names.is_empty() { "nothing".to_owned() } else { names.join(", ") }
}

#[cfg(test)]
mod tests {
    //! Components made from dummy core modules of made-up worlds.

    use super::*;
    use wit_component::{StringEncoding, dummy_module, embed_component_metadata};
    use wit_parser::{LiftLowerAbi, ManglingAndAbi};

    fn contract() -> Surface {
        Surface::of_contract(&crate::repo_root().join("wit/v0.1.0")).unwrap()
    }

    /// A component for `world` in `wit`, which may use the real wink package.
    fn component(wit: &str, world: &str) -> Vec<u8> {
        let mut resolve = Resolve::new();
        resolve.push_dir(crate::repo_root().join("wit/v0.1.0")).unwrap();
        let package = resolve.push_source("test.wit", wit).unwrap();
        let world = resolve.select_world(&[package], Some(world)).unwrap();
        let mangling = ManglingAndAbi::Legacy(LiftLowerAbi::Sync);
        let mut module = dummy_module(&resolve, world, mangling);
        embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8, false).unwrap();
        encode(&module).unwrap()
    }

    const TEST_WIT: &str = r#"
        package test:worlds;

        interface environment {
            get-environment: func() -> list<tuple<string, string>>;
        }

        world plugin {
            include wink:plugin/handler-plugin@0.1.0;
        }

        world with-wasi {
            include wink:plugin/handler-plugin@0.1.0;
            import wasi:cli/environment@0.2.0;
        }

        world other {
            export run: func();
        }
    "#;

    fn test_wit() -> String {
        // A stand-in for WASI, so the test needs no WASI WIT files.
        format!(
            "{TEST_WIT}\npackage wasi:cli@0.2.0 {{ interface environment {{ \
             get-environment: func() -> list<tuple<string, string>>; }} }}"
        )
    }

    #[test]
    fn the_contract_is_what_the_host_expects() {
        let contract = contract();
        assert_eq!(contract.imports, ["wink:plugin/log@0.1.0", "wink:plugin/types@0.1.0", "wink:plugin/cache@0.1.0"]);
        assert_eq!(contract.exports, ["wink:plugin/handler@0.1.0"]);
    }

    #[test]
    fn every_version_of_the_contract_is_known() {
        let contracts = Contract::load(&crate::repo_root().join("wit")).unwrap();
        assert!(contracts.current().exports.contains(&"wink:plugin/handler@0.4.0".to_owned()));
        assert!(contracts.current().imports.contains(&"wink:plugin/cluster@0.4.0".to_owned()));
        let reconciler = &contracts.reconcilers[0];
        assert_eq!(reconciler.exports, ["wink:plugin/reconciler@0.4.0"]);
        assert!(reconciler.imports.contains(&"wink:plugin/queue@0.4.0".to_owned()));
        let exports: Vec<&String> = contracts.versions.iter().flat_map(|v| &v.exports).collect();
        for version in ["0.4.0", "0.3.0", "0.2.0", "0.1.0"] {
            assert!(exports.contains(&&format!("wink:plugin/handler@{version}")), "{version}: {exports:?}");
        }
        assert!(contracts.current().imports.contains(&"wasi:clocks/wall-clock@0.2.0".to_owned()));
        let surface = Surface::of_component(&component(&test_wit(), "plugin")).unwrap();
        contracts.check(&surface).expect("a 0.1.0 plugin still implements the contract");
    }

    #[test]
    fn version_folders_are_read_newest_first_by_version() {
        let wit = tempfile::tempdir().unwrap();
        for name in ["v0.9.0", "v0.10.0", "v1.0.0", "deps", "v1.0", "vnext"] {
            std::fs::create_dir(wit.path().join(name)).unwrap();
        }
        std::fs::write(wit.path().join("v2.0.0"), "a file, not a folder").unwrap();
        let dirs = version_dirs(wit.path()).unwrap();
        let names: Vec<_> = dirs.iter().map(|d| d.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["v1.0.0", "v0.10.0", "v0.9.0"]);
        assert_eq!(folder_version(Path::new("wit/v0.3.0")), Some([0, 3, 0]));
        assert_eq!(folder_version(Path::new("wit/v0.3.0.1")), None);
        assert_eq!(folder_version(Path::new("wit/0.3.0")), None);
    }

    #[test]
    fn a_wit_folder_without_versions_is_an_error() {
        let wit = tempfile::tempdir().unwrap();
        std::fs::create_dir(wit.path().join("deps")).unwrap();
        let err = version_dirs(wit.path()).unwrap_err().to_string();
        assert!(err.contains("holds no version folder"), "{err}");
    }

    #[test]
    fn a_plugin_component_passes() {
        let surface = Surface::of_component(&component(&test_wit(), "plugin")).unwrap();
        surface.check_only_wink_imports().unwrap();
        surface.check_implements(&contract()).unwrap();
    }

    #[test]
    fn wasi_imports_are_refused() {
        let surface = Surface::of_component(&component(&test_wit(), "with-wasi")).unwrap();
        let err = surface.check_only_wink_imports().unwrap_err().to_string();
        assert!(err.contains("imports wasi:cli/environment@0.2.0"), "{err}");
        assert!(surface.check_implements(&contract()).is_err());
    }

    #[test]
    fn another_world_does_not_implement_the_contract() {
        let surface = Surface::of_component(&component(&test_wit(), "other")).unwrap();
        surface.check_only_wink_imports().unwrap();
        assert_eq!(surface.exports, ["run"]);
        let err = surface.check_implements(&contract()).unwrap_err().to_string();
        assert!(err.contains("does not export wink:plugin/handler@0.1.0"), "{err}");
    }
}

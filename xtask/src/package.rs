//! The last step of every plugin build, whatever its language: check the plugin's manifest
//! and component as the host will, and write both under the output folder.
//!
//! A plugin folder holds a `plugin.yaml` whose `name:` is the folder's name and whose
//! `component:` is `<name>.wasm`. The component must import only `wink:plugin/*` interfaces
//! (no WASI) and, unless the plugin brings a `wit/` world of its own (a hostile test plugin),
//! implement the `handler-plugin` world of one of the versions under `wit/`. Outputs are written atomically: the component
//! first, so whoever sees the manifest finds its component.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use serde::Deserialize;

use crate::component::{Contract, Surface};
use crate::fsutil::write_atomic;

/// The fields of `plugin.yaml` this task checks; the host parses the rest.
#[derive(Deserialize)]
struct ManifestHead {
    name: String,
    component: String,
}

/// Reads a plugin folder's `plugin.yaml` and checks that it names the plugin after its folder
/// and its component `<name>.wasm`. Returns the plugin's name and the manifest's bytes.
pub fn read_manifest(plugin_dir: &Path) -> Result<(String, Vec<u8>)> {
    let name = plugin_dir.file_name().context("a plugin folder has a name")?.to_string_lossy().into_owned();
    let manifest_path = plugin_dir.join("plugin.yaml");
    let manifest =
        fs::read(&manifest_path).with_context(|| format!("plugin {name}: reading {}", manifest_path.display()))?;
    let head: ManifestHead = serde_norway::from_slice(&manifest)
        .with_context(|| format!("plugin {name}: parsing {}", manifest_path.display()))?;
    let component_file = component_file(&name);
    ensure!(
        head.name == name && head.component == component_file,
        "plugin {name}: {} must say `name: {name}` and `component: {component_file}` \
         (it says `name: {}` and `component: {}`)",
        manifest_path.display(),
        head.name,
        head.component
    );
    Ok((name, manifest))
}

/// The component file of the plugin `name`.
pub fn component_file(name: &str) -> String {
    format!("{name}.wasm")
}

/// What [`install`] wrote for one plugin.
pub struct Installed {
    /// Where the component is.
    pub component_path: PathBuf,
    /// The component's size in bytes.
    pub component_size: usize,
    /// Whether the component changed (false: the same bytes were already there).
    pub written: bool,
    /// What the component imports and exports.
    pub surface: Surface,
}

/// Checks `component` (the plugin in `plugin_dir`, named `name`) and writes it with `manifest`
/// to `dest` (`<out>/<path>`).
pub fn install(
    plugin_dir: &Path,
    name: &str,
    manifest: &[u8],
    component: &[u8],
    contract: &Contract,
    dest: &Path,
    runtime_wasi: bool,
) -> Result<Installed> {
    let surface =
        Surface::of_component(component).with_context(|| format!("plugin {name}: reading the component's world"))?;
    // A language runtime (CPython, SpiderMonkey) imports parts of WASI the host refuses (calls
    // trap); they are not the plugin's contract.
    let checked = if runtime_wasi { surface.without_runtime_wasi() } else { surface.clone() };
    checked.check_only_wink_imports().with_context(|| format!("plugin {name}"))?;
    // A plugin with a `wit/` folder of its own implements another world on purpose.
    if !plugin_dir.join("wit").is_dir() {
        contract.check(&checked).with_context(|| format!("plugin {name} is not a wink plugin"))?;
    }
    let component_path = dest.join(component_file(name));
    let written = write_atomic(&component_path, component)?;
    write_atomic(&dest.join("plugin.yaml"), manifest)?;
    Ok(Installed { component_path, component_size: component.len(), written, surface })
}

/// Removes what an earlier build wrote to `dest`, so a plugin that failed to build now is
/// missing rather than silently stale.
pub fn remove_stale(dest: &Path, name: &str) {
    let _ = fs::remove_file(dest.join("plugin.yaml"));
    let _ = fs::remove_file(dest.join(component_file(name)));
}

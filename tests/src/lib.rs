//! Support for wink's integration tests: the guest plugins, built from source, and helpers
//! to lay out plugin folders and clusters in temporary directories.
//!
//! Plugins come from `WINK_PLUGINS_DIR` when `cargo xtask test` set it; otherwise the first
//! test that needs them runs `cargo xtask build-plugins` once.

pub mod agreement;
pub mod apiserver;
pub mod binary;
pub mod cluster;
pub mod compile_cache;
pub mod conformance;
pub mod control_plane;
pub mod host;
pub mod kubectl;
pub mod logs;
pub mod oci_registry;
pub mod process;
pub mod rbac;
pub mod recorder;
pub mod shard_group;
pub mod wait;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository's root: the parent of the running package's manifest directory, which
/// `cargo test` and `cargo bench` give at run time (the path compiled in is only a fallback:
/// a build reused from a shared target directory may have been compiled in another clone).
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
        manifest_dir.parent().expect("every package lives in a folder of the repository").to_path_buf()
    })
}

/// The folder of built plugins (`<name>/plugin.yaml` + `<name>/<name>.wasm`, hostile ones
/// under `hostile/`), building them first if needed.
pub fn plugins_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("WINK_PLUGINS_DIR") {
            return PathBuf::from(dir);
        }
        let out = repo_root().join(".wink").join("plugins");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(repo_root())
            .args(["run", "--quiet", "-p", "xtask", "--", "build-plugins", "--out"])
            .arg(&out)
            .status()
            .expect("running cargo xtask build-plugins");
        assert!(status.success(), "cargo xtask build-plugins failed ({status})");
        out
    })
}

/// The built folder of one plugin, e.g. `event-recorder` or `hostile/trap`.
pub fn plugin(name: &str) -> PathBuf {
    let dir = plugins_dir().join(name);
    assert!(dir.join("plugin.yaml").is_file(), "plugin {name} was not built into {}", dir.display());
    dir
}

/// Copies a built plugin into `dest/<as_name>/`, rewriting its manifest's `name:` and
/// optionally replacing the rest of the manifest after the `component:` line.
pub fn install_plugin(built: &str, dest: &Path, as_name: &str, manifest_tail: Option<&str>) -> PathBuf {
    let src = plugin(built);
    let target = dest.join(as_name);
    std::fs::create_dir_all(&target).expect("creating plugin folder");
    let file_name = built.rsplit('/').next().expect("plugin name");
    let wasm = format!("{file_name}.wasm");
    std::fs::copy(src.join(&wasm), target.join(&wasm)).expect("copying component");
    let manifest = std::fs::read_to_string(src.join("plugin.yaml")).expect("reading manifest");
    let mut lines: Vec<String> = Vec::new();
    for line in manifest.lines() {
        if line.starts_with("name:") {
            lines.push(format!("name: {as_name}"));
        } else if line.starts_with("component:") {
            lines.push(format!("component: {wasm}"));
            if let Some(tail) = manifest_tail {
                lines.push(tail.trim_end().to_owned());
                break;
            }
        } else {
            lines.push(line.to_owned());
        }
    }
    write_atomic(&target.join("plugin.yaml"), &(lines.join("\n") + "\n"));
    target
}

/// The reloader's `reconcile:` block for a manifest tail (after `component:`): Deployments,
/// and ConfigMaps mapped by the plugin to the Deployments naming them; in `namespace` only
/// when given.
pub fn reloader_reconcile(namespace: Option<&str>) -> String {
    let only = namespace.map_or(String::new(), |ns| format!(", namespaces: [{ns}]"));
    format!(
        "reconcile:\n  for: {{apiVersion: apps/v1, kind: Deployment{only}}}\n  watches:\n    \
         - {{apiVersion: v1, kind: ConfigMap{only}, mapTo: {{plugin: true}}}}\n"
    )
}

/// Writes a file through a temporary name and a rename, so watchers never see half of it.
pub fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).expect("writing file");
    std::fs::rename(&tmp, path).expect("renaming file");
}

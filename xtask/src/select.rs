//! `build-plugins --only`: which plugin folders a run builds.
//!
//! Each `--only` value (repeatable, or comma-separated) names one plugin folder, tried in
//! this order:
//! 1. a folder under `plugins/`, by its path there: `label-auditor`, `hostile/trap`,
//!    `python/image-policy`;
//! 2. a folder under `plugins/`, by its own name: `image-policy`, `trap` (an error if two
//!    folders share it);
//! 3. a folder anywhere, by its path (absolute, or relative to the current folder), in or out
//!    of the tree: `../my-plugin`, `/src/team/pod-gate`.
//!
//! A plugin folder is a Rust crate (a `Cargo.toml`) or a folder with a `plugin.yaml` and the
//! entry file of a guest language ([`Language::of_folder`]). Its output path under the output
//! folder is its path under `plugins/` (less a leading language folder, as for a full build),
//! or, out of the tree, its folder name.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::guests::{Language, tools};

/// A plugin's language, as the build needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A cargo crate built for `wasm32-unknown-unknown`.
    Rust,
    /// Python, JavaScript or C.
    Guest(Language),
}

/// One plugin folder to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// The plugin's folder, canonical.
    pub dir: PathBuf,
    /// Where it goes under the output folder.
    pub out_path: PathBuf,
    /// Its language.
    pub kind: Kind,
    /// Whether the folder is under `plugins/` (a Rust one is then a member of its workspace).
    pub in_tree: bool,
}

/// The language of a plugin folder, `None` when `dir` is not one.
fn kind_of(dir: &Path) -> Option<Kind> {
    if !dir.is_dir() {
        return None;
    }
    if dir.join("Cargo.toml").is_file() {
        return Some(Kind::Rust);
    }
    if !dir.join("plugin.yaml").is_file() {
        return None;
    }
    Language::of_folder(dir).map(Kind::Guest)
}

/// Every plugin folder under `plugins_dir` (not descending into one), sorted.
fn plugin_folders(plugins_dir: &Path) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
        let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| !tools::is_skipped_dir(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect();
        subdirs.sort();
        for sub in subdirs {
            if kind_of(&sub).is_some() {
                found.push(sub);
            } else {
                walk(&sub, found)?;
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    walk(plugins_dir, &mut found)?;
    Ok(found)
}

/// Resolves the `--only` values against `plugins_dir` (canonical) and `cwd`. Each plugin is
/// selected once, in the order first named.
pub fn resolve(plugins_dir: &Path, cwd: &Path, values: &[String]) -> Result<Vec<Selected>> {
    let folders = plugin_folders(plugins_dir)?;
    let mut selected: Vec<Selected> = Vec::new();
    for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
        let dir = find(plugins_dir, cwd, &folders, value)?;
        let dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
        let kind = kind_of(&dir).context("a selected folder is a plugin folder")?;
        let (out_path, in_tree) = match dir.strip_prefix(plugins_dir) {
            Ok(relative) if !relative.as_os_str().is_empty() => {
                let out_path = match kind {
                    Kind::Guest(language) => match relative.strip_prefix(language.name()) {
                        Ok(rest) if !rest.as_os_str().is_empty() => rest.to_owned(),
                        _ => relative.to_owned(),
                    },
                    Kind::Rust => relative.to_owned(),
                };
                (out_path, true)
            }
            _ => (PathBuf::from(dir.file_name().context("a plugin folder has a name")?), false),
        };
        if !selected.iter().any(|s| s.dir == dir) {
            selected.push(Selected { dir, out_path, kind, in_tree });
        }
    }
    if selected.is_empty() {
        bail!("--only names no plugin");
    }
    Ok(selected)
}

/// The plugin folder `value` names (see the module docs).
fn find(plugins_dir: &Path, cwd: &Path, folders: &[PathBuf], value: &str) -> Result<PathBuf> {
    let as_path = Path::new(value);
    if as_path.is_relative() {
        let in_tree = plugins_dir.join(as_path);
        if kind_of(&in_tree).is_some() {
            return Ok(in_tree);
        }
        let named: Vec<&PathBuf> =
            folders.iter().filter(|f| f.file_name().is_some_and(|n| n == as_path.as_os_str())).collect();
        match named.as_slice() {
            [one] => return Ok((*one).clone()),
            [] => {}
            many => bail!(
                "--only {value}: several plugins have that name; give its path under plugins/: {}",
                many.iter().map(|f| relative(plugins_dir, f)).collect::<Vec<_>>().join(", ")
            ),
        }
    }
    let path = cwd.join(as_path);
    if kind_of(&path).is_some() {
        return Ok(path);
    }
    let why = if path.is_dir() {
        format!(
            "{} is a folder but not a plugin: it has no Cargo.toml (Rust), nor a plugin.yaml with \
             app.py (Python), app.js (JavaScript) or .c files (C)",
            path.display()
        )
    } else {
        format!(
            "no plugin folder of that name under {} (plugins: {}) and no folder {}",
            plugins_dir.display(),
            folders.iter().map(|f| relative(plugins_dir, f)).collect::<Vec<_>>().join(", "),
            path.display()
        )
    };
    bail!("--only {value}: {why}")
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of plugin folders: `plugins/` and an out-of-tree `elsewhere/`.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let make = |dir: &str, files: &[&str]| {
            let dir = root.path().join(dir);
            fs::create_dir_all(&dir).unwrap();
            for f in files {
                fs::write(dir.join(f), "").unwrap();
            }
        };
        make("plugins/label-auditor/src", &[]);
        make("plugins/label-auditor", &["plugin.yaml", "Cargo.toml"]);
        make("plugins/hostile/trap", &["Cargo.toml"]);
        make("plugins/conformance/trap", &["plugin.yaml", "trap.c"]);
        make("plugins/python/image-policy", &["plugin.yaml", "app.py"]);
        make("plugins/target/release/stale", &["Cargo.toml"]);
        make("elsewhere/pod-gate", &["plugin.yaml", "Cargo.toml"]);
        make("elsewhere/notes", &["README.md"]);
        let plugins = root.path().join("plugins").canonicalize().unwrap();
        let cwd = root.path().join("elsewhere").canonicalize().unwrap();
        (root, plugins, cwd)
    }

    fn only(plugins: &Path, cwd: &Path, values: &[&str]) -> Result<Vec<(String, Kind, bool)>> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        Ok(resolve(plugins, cwd, &values)?
            .into_iter()
            .map(|s| (s.out_path.display().to_string(), s.kind, s.in_tree))
            .collect())
    }

    #[test]
    fn selects_by_path_under_plugins_by_name_and_by_any_path() {
        let (_root, plugins, cwd) = tree();
        assert_eq!(only(&plugins, &cwd, &["label-auditor"]).unwrap(), [("label-auditor".into(), Kind::Rust, true)]);
        assert_eq!(only(&plugins, &cwd, &["hostile/trap"]).unwrap(), [("hostile/trap".into(), Kind::Rust, true)]);
        // By name, the language folder dropped from the output path as in a full build.
        assert_eq!(
            only(&plugins, &cwd, &["image-policy"]).unwrap(),
            [("image-policy".into(), Kind::Guest(Language::Python), true)]
        );
        // A path, relative to the current folder or absolute, in or out of the tree.
        let out_of_tree = [("pod-gate".into(), Kind::Rust, false)];
        assert_eq!(only(&plugins, &cwd, &["pod-gate"]).unwrap(), out_of_tree);
        assert_eq!(only(&plugins, &cwd, &["./pod-gate"]).unwrap(), out_of_tree);
        let absolute = cwd.join("pod-gate").display().to_string();
        assert_eq!(only(&plugins, &cwd, &[&absolute]).unwrap(), out_of_tree);
        let in_tree = plugins.join("python/image-policy").display().to_string();
        assert_eq!(
            only(&plugins, &cwd, &[&in_tree]).unwrap(),
            [("image-policy".into(), Kind::Guest(Language::Python), true)]
        );
        // Several, each once, in the order named.
        assert_eq!(
            only(&plugins, &cwd, &["python/image-policy", "label-auditor", "image-policy"]).unwrap(),
            [("image-policy".into(), Kind::Guest(Language::Python), true), ("label-auditor".into(), Kind::Rust, true)]
        );
    }

    #[test]
    fn refuses_what_names_no_plugin_or_several() {
        let (_root, plugins, cwd) = tree();
        let err = only(&plugins, &cwd, &["trap"]).unwrap_err().to_string();
        assert!(err.contains("several plugins") && err.contains("conformance/trap, hostile/trap"), "{err}");
        let err = only(&plugins, &cwd, &["lable-auditor"]).unwrap_err().to_string();
        assert!(err.contains("no plugin folder of that name") && err.contains("label-auditor"), "{err}");
        assert!(!err.contains("stale"), "build output is not searched: {err}");
        let err = only(&plugins, &cwd, &["notes"]).unwrap_err().to_string();
        assert!(err.contains("is a folder but not a plugin"), "{err}");
        assert!(only(&plugins, &cwd, &[" "]).unwrap_err().to_string().contains("names no plugin"));
    }
}

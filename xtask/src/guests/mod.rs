//! Plugins in Python, JavaScript, C and Go: finding them, installing each language's toolchain
//! on first use, building, and writing them where the Rust plugins go.
//!
//! A folder under `plugins/` holding a `plugin.yaml` and one of `app.py` (Python), `app.js`
//! (JavaScript), `*.c` files (C) or a `go.mod` (Go) is such a plugin; a folder with a `Cargo.toml` is a Rust
//! plugin, built by cargo. Its output path is its path under `plugins/`, less a leading
//! language folder: `plugins/python/image-policy` is written to `<out>/image-policy/`,
//! `plugins/conformance/conformance-c` to `<out>/conformance/conformance-c/`.
//!
//! Toolchains are installed into `.wink/toolchains/` (see [`tools::toolchains_dir`]) with
//! pinned versions: [`python`], [`javascript`], [`c`]; Go plugins use the machine's Go ([`go`]). A toolchain that cannot be installed is
//! reported with its cause; that language's plugins are reported as not built (and any output
//! of an earlier build is removed, so nothing stale passes for them), and the other languages
//! are still built.
//!
//! A plugin is rebuilt only when its inputs change: its folder, its language's SDK under
//! `guest-sdk/`, `wit/`, and the toolchain's version and flags ([`tools::InputHash`]).

mod c;
pub mod debian;
mod go;
mod javascript;
pub mod python;
pub mod tools;

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};

use crate::component::Contract;
use crate::package;
use crate::report::{BuiltPlugin, Report, seconds};

/// The WIT package a language's SDK implements: `wink:plugin@0.4.0` (objects lent as
/// `event-object` handles; the reconciler world beside the handler one) for every language.
/// Named per language because a language's SDK may lag a new version (JavaScript stayed on
/// 0.2.0 while componentize-qjs could not release lent handles in time); the host serves
/// every version.
pub fn sdk_contract(repo: &Path, language: Language) -> PathBuf {
    let version = match language {
        Language::Go | Language::Python | Language::C | Language::JavaScript => "v0.4.0",
    };
    repo.join("wit").join(version)
}

/// The world the plugin in `plugin_dir` implements: `reconciler-plugin` when its manifest
/// has a `reconcile` section, else `handler-plugin`.
pub fn world_of(plugin_dir: &Path) -> Result<&'static str> {
    let manifest = plugin_dir.join("plugin.yaml");
    let text = fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let value: serde_norway::Value =
        serde_norway::from_str(&text).with_context(|| format!("parsing {}", manifest.display()))?;
    Ok(if value.get("reconcile").is_some() { crate::component::RECONCILER_WORLD } else { "handler-plugin" })
}

/// Where a build reads and writes.
pub struct Context<'a> {
    /// The repository.
    pub repo: &'a Path,
    /// `<repo>/plugins`, canonical.
    pub plugins_dir: &'a Path,
    /// The output folder (`.wink/plugins`).
    pub out: &'a Path,
    /// The world plugins must implement.
    pub contract: &'a Contract,
    /// The build folder (`$CARGO_TARGET_DIR/plugins-build`).
    pub build_dir: &'a Path,
}

/// A guest language other than Rust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// componentize-py.
    Python,
    /// ComponentizeJS, after esbuild.
    JavaScript,
    /// clang + wasi-libc + wit-bindgen's C generator.
    C,
    /// The machine's Go, for WASI preview 1, + the Go SDK's adapter.
    Go,
}

impl Language {
    /// Every language, in build order (fastest toolchain first).
    pub const ALL: [Language; 4] = [Language::C, Language::Go, Language::JavaScript, Language::Python];

    /// The language's name, as used for folders: `python`, `javascript`, `c`, `go`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::C => "c",
            Language::Go => "go",
        }
    }

    /// The language of the plugin folder `dir`, from its entry file.
    pub fn of_folder(dir: &Path) -> Option<Self> {
        if dir.join("app.py").is_file() {
            return Some(Language::Python);
        }
        if dir.join("app.js").is_file() {
            return Some(Language::JavaScript);
        }
        if dir.join("go.mod").is_file() {
            return Some(Language::Go);
        }
        let has_c = fs::read_dir(dir).ok()?.flatten().any(|e| e.path().extension().is_some_and(|x| x == "c"));
        has_c.then_some(Language::C)
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A plugin folder in a guest language.
#[derive(Debug)]
pub struct GuestPlugin {
    /// Its language.
    pub language: Language,
    /// Its folder.
    pub dir: PathBuf,
    /// Its output path under the output folder.
    pub out_path: PathBuf,
}

impl GuestPlugin {
    fn name(&self) -> String {
        self.dir.file_name().unwrap_or_default().to_string_lossy().into_owned()
    }
}

/// Finds the guest plugins under `plugins_dir`, sorted by folder.
pub fn discover(plugins_dir: &Path) -> Result<Vec<GuestPlugin>> {
    let mut found = Vec::new();
    walk(plugins_dir, plugins_dir, &mut found)?;
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(found)
}

fn walk(plugins_dir: &Path, dir: &Path, found: &mut Vec<GuestPlugin>) -> Result<()> {
    if dir.join("Cargo.toml").is_file() && dir != plugins_dir {
        return Ok(()); // a Rust plugin: cargo builds it
    }
    if dir.join("plugin.yaml").is_file() {
        let language = Language::of_folder(dir).ok_or_else(|| {
            anyhow!(
                "{} has a plugin.yaml but no Cargo.toml (Rust), app.py (Python), app.js \
                 (JavaScript), .c file (C) or go.mod (Go)",
                dir.display()
            )
        })?;
        let relative = dir.strip_prefix(plugins_dir).expect("walked from plugins_dir");
        let out_path = match relative.strip_prefix(language.name()) {
            Ok(rest) if !rest.as_os_str().is_empty() => rest.to_owned(),
            _ => relative.to_owned(),
        };
        found.push(GuestPlugin { language, dir: dir.to_owned(), out_path });
        return Ok(());
    }
    let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !tools::is_skipped_dir(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        walk(plugins_dir, &sub, found)?;
    }
    Ok(())
}

/// An installed toolchain of one language.
enum Toolchain {
    Python(python::Toolchain),
    JavaScript(javascript::Toolchain),
    C(c::Toolchain),
    Go(go::Toolchain),
}

impl Toolchain {
    fn install(language: Language, context: &Context<'_>) -> Result<Self> {
        let toolchains = tools::toolchains_dir(context.repo);
        Ok(match language {
            Language::Python => Toolchain::Python(python::install(&toolchains)?),
            Language::JavaScript => Toolchain::JavaScript(javascript::install(&toolchains)?),
            Language::C => Toolchain::C(c::install(context.repo, &toolchains, &context.build_dir.join("guests"))?),
            Language::Go => Toolchain::Go(go::install(context.repo)?),
        })
    }

    fn fingerprint(&self) -> String {
        match self {
            Toolchain::Python(t) => t.fingerprint(),
            Toolchain::JavaScript(t) => t.fingerprint(),
            Toolchain::C(t) => t.fingerprint(),
            Toolchain::Go(t) => t.fingerprint(),
        }
    }

    fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        match self {
            Toolchain::Python(t) => t.build(repo, plugin_dir, work),
            Toolchain::JavaScript(t) => t.build(repo, plugin_dir, work),
            Toolchain::C(t) => t.build(repo, plugin_dir, work),
            Toolchain::Go(t) => t.build(repo, plugin_dir, work),
        }
    }
}

/// `<build>/guests/<language>`.
fn work_root(context: &Context<'_>, language: Language) -> PathBuf {
    context.build_dir.join("guests").join(language.name())
}

/// Builds every guest plugin, language by language, recording each result in `report`.
pub fn build_all(context: &Context<'_>, report: &mut Report) {
    match discover(context.plugins_dir) {
        Ok(plugins) => build(context, &plugins, report),
        Err(e) => report.failed("finding the Python, JavaScript, C and Go plugins", e),
    }
}

/// Builds `plugins` (anywhere: in `plugins/` or out of the tree), language by language,
/// recording each result in `report`.
pub fn build(context: &Context<'_>, plugins: &[GuestPlugin], report: &mut Report) {
    for language in Language::ALL {
        let group: Vec<&GuestPlugin> = plugins.iter().filter(|p| p.language == language).collect();
        if group.is_empty() {
            continue;
        }
        let started = Instant::now();
        eprintln!("xtask: the {language} plugins: {}", group.len());
        let toolchain = match Toolchain::install(language, context) {
            Ok(toolchain) => toolchain,
            Err(e) => {
                report.failed(format!("the {language} toolchain"), e);
                for plugin in group {
                    package::remove_stale(&context.out.join(&plugin.out_path), &plugin.name());
                    report.failed(
                        format!("plugin {} ({language})", plugin.name()),
                        anyhow!("not built: the {language} toolchain is not installed (see above)"),
                    );
                }
                continue;
            }
        };
        let install_time = started.elapsed();
        if install_time.as_secs() >= 1 {
            println!("xtask: {language} toolchain ready in {}", seconds(install_time));
        }
        for plugin in group {
            if let Err(e) = build_one(context, &toolchain, plugin, report) {
                package::remove_stale(&context.out.join(&plugin.out_path), &plugin.name());
                report.failed(format!("plugin {} ({language})", plugin.name()), e);
            }
        }
    }
}

/// Builds one plugin unless its inputs are unchanged, then checks and writes it.
fn build_one(context: &Context<'_>, toolchain: &Toolchain, plugin: &GuestPlugin, report: &mut Report) -> Result<()> {
    let language = plugin.language;
    let (name, manifest) = package::read_manifest(&plugin.dir)?;
    if let Some(other) = report.built.iter().find(|b| b.name == name) {
        bail!("another plugin named {name} was already built ({})", other.component_path.display());
    }
    let work = work_root(context, language).join(&plugin.out_path);
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    // The contract the SDK is built against is an input too (the whole of `wit/` is hashed
    // below, but not which folder of it the build reads).
    let contract = sdk_contract(context.repo, language);
    let contract = contract.file_name().unwrap_or_default().to_string_lossy();
    let mut inputs = tools::InputHash::new(&format!("{} contract {contract}", toolchain.fingerprint()));
    inputs.add_tree("wit", &context.repo.join("wit"))?;
    inputs.add_tree("sdk", &context.repo.join("guest-sdk").join(language.name()))?;
    inputs.add_tree("plugin", &plugin.dir)?;
    let inputs = inputs.finish();
    let stamp = work.join("inputs.sha256");
    let cached = work.join("component.wasm");

    let started = Instant::now();
    let fresh = fs::read_to_string(&stamp).is_ok_and(|s| s == inputs) && cached.is_file();
    if !fresh {
        eprintln!("xtask: building {name} ({language}) from {}", plugin.dir.display());
        let _ = fs::remove_file(&stamp);
        let built = toolchain.build(context.repo, &plugin.dir, &work)?;
        if built != cached {
            fs::rename(&built, &cached).with_context(|| format!("moving {}", built.display()))?;
        }
        fs::write(&stamp, &inputs).with_context(|| format!("writing {}", stamp.display()))?;
    }
    let component = fs::read(&cached).with_context(|| format!("reading {}", cached.display()))?;
    let dest = context.out.join(&plugin.out_path);
    let runtime_wasi = language != Language::C;
    let installed = package::install(&plugin.dir, &name, &manifest, &component, context.contract, &dest, runtime_wasi)?;
    let detail = format!(
        "{} bytes component, {}{}; {}",
        installed.component_size,
        if fresh { "inputs unchanged".to_owned() } else { format!("built in {}", seconds(started.elapsed())) },
        if installed.written { "" } else { ", unchanged" },
        installed.surface
    );
    let built = BuiltPlugin { language: language.name(), name, component_path: installed.component_path };
    report.built(built, detail);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_guest_plugins_and_strips_the_language_folder() {
        let root = std::env::temp_dir().join(format!("xtask-guests-{}", std::process::id()));
        let make = |dir: &str, files: &[&str]| {
            let dir = root.join(dir);
            fs::create_dir_all(&dir).unwrap();
            for f in files {
                fs::write(dir.join(f), "").unwrap();
            }
        };
        make("python/image-policy", &["plugin.yaml", "app.py"]);
        make("javascript/requests/lib", &["util.js"]);
        make("javascript/requests", &["plugin.yaml", "app.js"]);
        make("c/pod-quota", &["plugin.yaml", "pod_quota.c"]);
        make("conformance/conformance-c", &["plugin.yaml", "conformance.c"]);
        make("conformance/conformance-rust", &["plugin.yaml", "Cargo.toml"]);
        make("go/secret-replicator", &["plugin.yaml", "go.mod", "main.go"]);
        make("label-auditor", &["plugin.yaml", "Cargo.toml"]);
        make("hostile/trap", &["Cargo.toml"]);
        make("target/release", &["plugin.yaml", "app.py"]);

        let found: Vec<(Language, String)> = discover(&root)
            .unwrap()
            .into_iter()
            .map(|p| (p.language, p.out_path.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(
            found,
            [
                (Language::C, "pod-quota".to_owned()),
                (Language::C, "conformance/conformance-c".to_owned()),
                (Language::Go, "secret-replicator".to_owned()),
                (Language::JavaScript, "requests".to_owned()),
                (Language::Python, "image-policy".to_owned()),
            ]
        );

        make("broken", &["plugin.yaml"]);
        let err = discover(&root).unwrap_err().to_string();
        assert!(err.contains("broken") && err.contains("no Cargo.toml"), "{err}");
        fs::remove_dir_all(&root).unwrap();
    }
}

//! The WIT versions named across the repository agree with the version folders under `wit/`.
//!
//! Every published version of `wink:plugin` lives in `wit/v<version>/` (see `wit/README.md`),
//! and each SDK names the version it implements in one constant. These tests read each
//! constant from its source file and compare it with the package in the folder that SDK is
//! actually built from: the `path` of the Rust SDK's `generate!`, and [`sdk_contract`] for the
//! C, JavaScript, Python and Go SDKs. They also check that each folder's name is its package's
//! version, and that the host binds and names every folder's version.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use wit_parser::Resolve;

use crate::component::{folder_version, version_dirs};
use crate::guests::{Language, sdk_contract};

/// An SDK's version constant, and the WIT folder the SDK is built from.
struct Sdk {
    name: &'static str,
    /// The file holding the constant, relative to the repository.
    source: &'static str,
    /// What the constant's line starts with, up to the version's opening quote.
    constant: &'static str,
    /// The WIT folder the SDK's bindings are generated from.
    wit_dir: PathBuf,
}

fn sdks(repo: &Path) -> Vec<Sdk> {
    let rust_bindings = bindgen_paths(&repo.join("guest-sdk"), "src/bindings.rs");
    // Once per world (handler, or reconciler with its feature), both from one folder.
    assert!(!rust_bindings.is_empty(), "the Rust SDK generates its bindings");
    assert!(rust_bindings.iter().all(|(_, dir)| *dir == rust_bindings[0].1), "one folder: {rust_bindings:?}");
    vec![
        Sdk {
            name: "Rust",
            source: "guest-sdk/src/lib.rs",
            constant: "pub const WIT_VERSION: &str = \"",
            wit_dir: rust_bindings[0].1.clone(),
        },
        Sdk {
            name: "C",
            source: "guest-sdk/c/wink.h",
            constant: "#define WINK_WIT_VERSION \"",
            wit_dir: sdk_contract(repo, Language::C),
        },
        Sdk {
            name: "JavaScript",
            source: "guest-sdk/javascript/wink.js",
            constant: "export const WIT_VERSION = \"",
            wit_dir: sdk_contract(repo, Language::JavaScript),
        },
        Sdk {
            name: "Python",
            source: "guest-sdk/python/wink/__init__.py",
            constant: "WIT_VERSION = \"",
            wit_dir: sdk_contract(repo, Language::Python),
        },
        Sdk {
            name: "Go",
            source: "guest-sdk/go/doc.go",
            constant: "const WITVersion = \"",
            wit_dir: sdk_contract(repo, Language::Go),
        },
    ]
}

/// The version of the `wink:plugin` package in `dir`, as wit-parser reads it.
fn package_version(dir: &Path) -> String {
    let mut resolve = Resolve::new();
    let (package, _) = resolve.push_dir(dir).unwrap_or_else(|e| panic!("parsing {}: {e:#}", dir.display()));
    let name = &resolve.packages[package].name;
    assert_eq!((name.namespace.as_str(), name.name.as_str()), ("wink", "plugin"), "the package in {}", dir.display());
    let version = name.version.as_ref().unwrap_or_else(|| panic!("the package in {} has no version", dir.display()));
    version.to_string()
}

/// The version a folder's name gives, e.g. `0.3.0` for `wit/v0.3.0`.
fn folder_name_version(dir: &Path) -> String {
    let [major, minor, patch] = folder_version(dir).unwrap_or_else(|| panic!("{} is no version folder", dir.display()));
    format!("{major}.{minor}.{patch}")
}

/// The quoted text after `prefix` on every line of `text` that starts with it (indentation
/// aside).
fn quoted_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix(prefix))
        .map(|rest| rest.split('"').next().unwrap_or_default())
        .collect()
}

/// The versions of the `wink:plugin/<interface>@<version>` names in `text`.
fn interface_name_versions(text: &str) -> Vec<&str> {
    text.split("wink:plugin/")
        .skip(1)
        .filter_map(|rest| {
            let name = rest.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '@' | '.'))).next()?;
            Some(name.split_once('@')?.1.trim_end_matches('.'))
        })
        .collect()
}

/// The folder of each `bindgen!` / `generate!` `path` in the Rust file `file` of the crate in
/// `crate_dir` (such paths are relative to the crate), with the line it is on, canonical.
fn bindgen_paths(crate_dir: &Path, file: &str) -> Vec<(usize, PathBuf)> {
    let text = read(&crate_dir.join(file));
    text.lines()
        .enumerate()
        .flat_map(|(number, line)| quoted_after(line, "path: \"").into_iter().map(move |path| (number, path)))
        .map(|(number, path)| (number, canonical(&crate_dir.join(path))))
        .collect()
}

/// `source` and the files beside it with its extension (the other modules of its SDK).
fn siblings(source: &Path) -> Vec<PathBuf> {
    let dir = source.parent().expect("an SDK source is in a folder");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.expect("a folder entry").path())
        .filter(|path| path.is_file() && path.extension() == source.extension())
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|e| panic!("finding {}: {e}", path.display()))
}

/// The version folders under `wit/`, newest first, canonical.
fn published(repo: &Path) -> Vec<PathBuf> {
    version_dirs(&repo.join("wit")).unwrap().iter().map(|dir| canonical(dir)).collect()
}

#[test]
fn every_version_folder_holds_the_version_it_is_named_after() {
    let folders = published(&crate::repo_root());
    assert!(folders.len() >= 3, "wit/ holds v0.1.0/, v0.2.0/ and v0.3.0/ at least: {folders:?}");
    for dir in folders {
        assert_eq!(package_version(&dir), folder_name_version(&dir), "the package in {}", dir.display());
    }
}

#[test]
fn every_sdk_names_the_version_of_the_folder_it_is_built_from() {
    let repo = crate::repo_root();
    let folders = published(&repo);
    let mut wrong = Vec::new();
    for sdk in sdks(&repo) {
        let wit_dir = canonical(&sdk.wit_dir);
        assert!(
            folders.contains(&wit_dir),
            "the {} SDK is built from {}, no version folder of wit/",
            sdk.name,
            wit_dir.display()
        );
        let built_from = package_version(&wit_dir);
        let text = read(&repo.join(sdk.source));
        let constants = quoted_after(&text, sdk.constant);
        match constants[..] {
            [constant] if constant == built_from => {}
            [constant] => wrong.push(format!(
                "the {} SDK says {constant} ({}), but it is built from {} ({built_from})",
                sdk.name,
                sdk.source,
                wit_dir.display()
            )),
            _ => wrong.push(format!("{} defines `{}…` {} times, not once", sdk.source, sdk.constant, constants.len())),
        }
        for file in siblings(&repo.join(sdk.source)) {
            for named in interface_name_versions(&read(&file)).into_iter().filter(|v| *v != built_from) {
                wrong.push(format!(
                    "{} names a wink:plugin interface @{named}, but it is built from {built_from}",
                    file.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_host_binds_and_names_every_version_folder() {
    let repo = crate::repo_root();
    let folders = published(&repo);
    let bindings = "src/plugin/contract/bindings.rs";
    let bound = bindgen_paths(&repo.join("host"), bindings);
    let bound_dirs: BTreeSet<&PathBuf> = bound.iter().map(|(_, dir)| dir).collect();
    assert_eq!(bound_dirs, folders.iter().collect(), "the host's bindgen! paths in {bindings}");

    // The bindings the host implements its imports with (`mod generated`) are the newest.
    let text = read(&repo.join("host").join(bindings));
    let current = text.lines().position(|line| line.trim() == "mod generated {").expect("mod generated in bindings.rs");
    let (_, newest) = bound.iter().find(|(line, _)| *line > current).expect("a bindgen! path after mod generated");
    assert_eq!(newest, &folders[0], "`mod generated` binds the newest version");

    // `WitVersion::as_str` and `handler_export` name each folder's version, and only those.
    let versions: BTreeSet<String> = folders.iter().map(|dir| package_version(dir)).collect();
    let named: BTreeSet<String> = text
        .lines()
        .filter(|line| line.trim_start().starts_with("WitVersion::V"))
        .flat_map(|line| quoted_after(line.split_once("=> ").map_or("", |(_, arm)| arm), "\""))
        .map(|quoted| quoted.rsplit('@').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(named, versions, "the versions WitVersion names in {bindings}");
}

#[test]
fn interface_names_and_constants_are_read_from_source_text() {
    let js = "import rawCache from \"wink:plugin/cache@0.2.0\";\n  export const WIT_VERSION = \"0.2.0\";";
    assert_eq!(interface_name_versions(js), ["0.2.0"]);
    assert_eq!(interface_name_versions("the world wink:plugin/handler-plugin@0.3.0."), ["0.3.0"]);
    assert!(interface_name_versions("wink:plugin/handler-plugin, unversioned").is_empty());
    assert_eq!(quoted_after(js, "export const WIT_VERSION = \""), ["0.2.0"]);
    assert!(quoted_after("// WIT_VERSION = \"0.1.0\"", "WIT_VERSION = \"").is_empty());
}

//! Installing pinned Debian packages into a folder, without touching the system: `apt-get
//! download` fetches the `.deb` files and `dpkg -x` unpacks each under `<dir>/root`. Nothing
//! is configured or registered with dpkg, so this needs no root, only apt's package lists.
//!
//! On a fresh machine the lists may be missing or old (the pinned version is then unknown):
//! as root, the installer runs `apt-get update` once and tries again; otherwise it says to.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::tools;

/// A package and the exact version to install (empty: the version apt's lists offer).
pub type Pinned = (&'static str, &'static str);

/// Unpacks `packages` (in order: a later one overwrites files of an earlier one) into
/// `<dir>/root` unless exactly these are there already. Returns the root.
pub fn install(dir: &Path, packages: &[Pinned]) -> Result<PathBuf> {
    let root = dir.join("root");
    let marker = root.join(".wink-packages");
    let wanted: String = packages.iter().map(|(name, version)| format!("{name}={version}\n")).collect();
    if fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(root);
    }
    for tool in ["apt-get", "dpkg"] {
        if Command::new(tool).arg("--version").output().is_err() {
            bail!("`{tool}` is not available: this tool comes from Debian's packages");
        }
    }
    let debs = dir.join("debs");
    tools::fresh_dir(&debs)?;
    let specs: Vec<String> = packages
        .iter()
        .map(|(name, version)| if version.is_empty() { name.to_string() } else { format!("{name}={version}") })
        .collect();
    eprintln!("xtask: downloading {} with apt-get", specs.join(" "));
    let download = || tools::run(Command::new("apt-get").current_dir(&debs).arg("download").args(&specs));
    if let Err(first) = download() {
        if !is_root() {
            return Err(first.context(
                "apt-get could not download the pinned packages; its package lists may be \
                 missing or old: run `sudo apt-get update` and build again",
            ));
        }
        eprintln!("xtask: apt-get download failed; running `apt-get update` and trying again");
        tools::run(Command::new("apt-get").arg("update")).context("running `apt-get update`")?;
        download().context("downloading the pinned packages after `apt-get update`")?;
    }

    let staging = dir.join("root.partial");
    tools::fresh_dir(&staging)?;
    for (name, _) in packages {
        let deb = find_deb(&debs, name)?;
        tools::run(Command::new("dpkg").arg("-x").arg(&deb).arg(&staging))
            .with_context(|| format!("unpacking {}", deb.display()))?;
    }
    fs::write(staging.join(".wink-packages"), &wanted)?;
    if root.exists() {
        fs::remove_dir_all(&root).with_context(|| format!("removing the old {}", root.display()))?;
    }
    fs::rename(&staging, &root).with_context(|| format!("moving the packages into {}", root.display()))?;
    let _ = fs::remove_dir_all(&debs);
    Ok(root)
}

/// The downloaded `.deb` of package `name` (files are named `<name>_<version>_<arch>.deb`).
fn find_deb(debs: &Path, name: &str) -> Result<PathBuf> {
    let prefix = format!("{name}_");
    for entry in fs::read_dir(debs)? {
        let path = entry?.path();
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        if file.starts_with(&prefix) && file.ends_with(".deb") {
            return Ok(path);
        }
    }
    bail!("apt-get download left no {name}_*.deb in {}", debs.display())
}

/// Whether this process runs as root (then it may refresh apt's package lists).
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

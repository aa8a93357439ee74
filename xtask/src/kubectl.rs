//! The real `kubectl` for the end-to-end tests: Debian's `kubernetes-client` package,
//! unpacked into `.wink/toolchains/kubectl` without root (see [`debian`]), so that the tests
//! drive wink's API endpoints with the client people use, on a fresh machine too.
//!
//! The version is whatever Debian's lists offer (a pinned point release disappears from the
//! mirrors with the next security update); the tests rely only on long-stable kubectl
//! behaviour. `cargo xtask test` passes the binary to the tests as `WINK_KUBECTL`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::guests::debian;
use crate::guests::tools;

/// Debian's package of kubectl.
const PACKAGES: &[debian::Pinned] = &[("kubernetes-client", "")];

/// Installs kubectl (unless it is there) and returns its path.
pub fn install(repo: &Path) -> Result<PathBuf> {
    let toolchains = tools::toolchains_dir(repo);
    let root = {
        let _lock = tools::InstallLock::acquire(&toolchains)?;
        debian::install(&toolchains.join("kubectl"), PACKAGES).context("installing Debian's kubectl")?
    };
    let kubectl = root.join("usr/bin/kubectl");
    if !kubectl.is_file() {
        bail!("Debian's kubernetes-client package has no {}", kubectl.display());
    }
    Ok(kubectl)
}

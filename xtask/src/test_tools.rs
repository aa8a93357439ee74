//! The real third-party programs the end-to-end tests drive, from Debian's packages,
//! unpacked into `.wink/toolchains/<tool>` without root (see [`debian`]), so that the tests
//! run against what users have, on a fresh machine too:
//! - `kubectl` (`kubernetes-client`), passed to the tests as `WINK_KUBECTL`;
//! - the CNCF distribution registry (`docker-registry`), passed as `WINK_OCI_REGISTRY`.
//!
//! Versions are whatever Debian's lists offer (a pinned point release disappears from the
//! mirrors with the next security update); the tests rely only on long-stable behaviour.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::guests::debian;
use crate::guests::tools;

/// A tool: its folder under the toolchains, its package, its binary, and the variable the
/// tests read.
struct Tool {
    dir: &'static str,
    package: debian::Pinned,
    binary: &'static str,
    env: &'static str,
}

const TOOLS: &[Tool] = &[
    Tool { dir: "kubectl", package: ("kubernetes-client", ""), binary: "usr/bin/kubectl", env: "WINK_KUBECTL" },
    Tool {
        dir: "oci-registry",
        package: ("docker-registry", ""),
        binary: "usr/bin/docker-registry",
        env: "WINK_OCI_REGISTRY",
    },
];

/// Installs each tool (unless it is there); returns `(variable, path or why not)` per tool.
pub fn install(repo: &Path) -> Vec<(&'static str, Result<PathBuf>)> {
    let toolchains = tools::toolchains_dir(repo);
    TOOLS.iter().map(|tool| (tool.env, install_one(&toolchains, tool))).collect()
}

fn install_one(toolchains: &Path, tool: &Tool) -> Result<PathBuf> {
    let root = {
        let _lock = tools::InstallLock::acquire(toolchains)?;
        debian::install(&toolchains.join(tool.dir), std::slice::from_ref(&tool.package))
            .with_context(|| format!("installing Debian's {}", tool.package.0))?
    };
    let binary = root.join(tool.binary);
    if !binary.is_file() {
        bail!("Debian's {} package has no {}", tool.package.0, binary.display());
    }
    Ok(binary)
}

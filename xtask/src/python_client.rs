//! The official Kubernetes Python client (`kubernetes` from PyPI) for the end-to-end tests
//! of `wink run --serve-api`: installed with pip into its own venv,
//! `.wink/toolchains/python-kubernetes-<version>`, keyed by the pinned version, and passed
//! to the tests as `WINK_PYTHON_KUBERNETES` (the venv's python). When it cannot be installed,
//! the tests get the reason as `WINK_PYTHON_KUBERNETES_MISSING` and skip, saying it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::guests::python::find_python;
use crate::guests::tools::{self, InstallLock};

/// The pinned client release (its major version follows Kubernetes' minor: 37 ↔ 1.37).
const KUBERNETES: &str = "37.0.2";

/// The variable the tests read the venv's python from.
pub const ENV: &str = "WINK_PYTHON_KUBERNETES";

/// The variable that carries why there is none.
pub const MISSING_ENV: &str = "WINK_PYTHON_KUBERNETES_MISSING";

/// The version of the `kubernetes` package `python` imports, if it imports one.
fn installed_version(python: &Path) -> Option<String> {
    tools::version_of(python, &["-c", "import kubernetes; print(kubernetes.__version__)"])
}

/// Installs the pinned client into its venv unless it is there; returns the venv's python.
pub fn install(repo: &Path) -> Result<PathBuf> {
    let toolchains = tools::toolchains_dir(repo);
    let venv = toolchains.join(format!("python-kubernetes-{KUBERNETES}"));
    let python = venv.join("bin").join("python");
    let installed = || installed_version(&python).is_some_and(|v| v == KUBERNETES);
    if installed() {
        return Ok(python);
    }
    let _lock = InstallLock::acquire(&toolchains)?;
    if installed() {
        return Ok(python);
    }
    eprintln!("xtask: installing the Kubernetes Python client {KUBERNETES} from PyPI into {}", venv.display());
    let system = find_python()?;
    tools::run(Command::new(&system).args(["-m", "venv", "--clear"]).arg(&venv))
        .with_context(|| format!("creating a Python venv with {system}"))?;
    tools::run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"])
            .arg(format!("kubernetes=={KUBERNETES}")),
    )
    .context("installing the kubernetes package from PyPI")?;
    match installed_version(&python) {
        Some(v) if v == KUBERNETES => Ok(python),
        other => bail!("{} imports kubernetes {other:?} after the install, not {KUBERNETES}", python.display()),
    }
}

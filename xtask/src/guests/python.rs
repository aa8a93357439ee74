//! Python plugins, built with componentize-py (from PyPI) in a project-local venv.
//!
//! Install: `python3 -m venv <toolchains>/python`, then `pip install componentize-py==<pin>`
//! into it. componentize-py is a self-contained binary wheel: it brings its own CPython
//! compiled to WebAssembly, so the machine's Python only runs pip.
//!
//! Build: `componentize-py -d wit/v0.4.0 -w handler-plugin componentize app -p <plugin> -p
//! guest-sdk/python`. The plugin's `app.py` is the entry module; the SDK (`wink`) and the
//! bindings componentize-py generates (`wit_world`) are importable from it. The CPython
//! runtime imports parts of WASI: the host gives it the clocks and randomness and refuses the
//! rest (files, environment, streams: calls trap), so `time` and `datetime` work and nothing
//! else is reachable. The whole of CPython is in every component
//! (about 18 MB; wasmtime compiles it in 5–15 s, which the host's compile cache pays once).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::tools::{self, InstallLock};

/// The componentize-py version installed from PyPI.
pub const COMPONENTIZE_PY: &str = "0.25.1";

/// An installed componentize-py.
pub struct Toolchain {
    componentize_py: PathBuf,
}

impl Toolchain {
    /// What the build depends on besides its sources: the tool's version and flags.
    pub fn fingerprint(&self) -> String {
        format!("componentize-py {COMPONENTIZE_PY}")
    }

    /// Builds the plugin in `plugin_dir` into a component under `work`; returns its path.
    pub fn build(&self, repo: &Path, plugin_dir: &Path, work: &Path) -> Result<PathBuf> {
        // componentize-py imports the modules with a native Python to find what to bundle,
        // which writes `__pycache__` next to them: build from copies, not from the sources.
        let plugin = work.join("src").join("plugin");
        let sdk = work.join("src").join("sdk");
        tools::fresh_dir(&work.join("src"))?;
        tools::copy_tree(plugin_dir, &plugin, &["plugin.yaml", "README.md"])?;
        tools::copy_tree(&repo.join("guest-sdk").join("python"), &sdk, &["README.md"])?;
        let output = work.join("component.wasm");
        tools::run(
            Command::new(&self.componentize_py)
                .current_dir(work)
                .arg("-d")
                .arg(super::sdk_contract(repo, super::Language::Python))
                .arg("-w")
                .arg(super::world_of(plugin_dir)?)
                .args(["componentize", "app", "-p"])
                .arg(&plugin)
                .arg("-p")
                .arg(&sdk)
                .arg("-o")
                .arg(&output),
        )?;
        Ok(output)
    }
}

/// Installs componentize-py into `<toolchains>/python` unless the pinned version is there.
pub fn install(toolchains: &Path) -> Result<Toolchain> {
    let venv = toolchains.join("python");
    let componentize_py = venv.join("bin").join("componentize-py");
    let wanted = format!("componentize-py {COMPONENTIZE_PY}");
    let installed = || tools::version_of(&componentize_py, &["--version"]).is_some_and(|v| v == wanted);
    if installed() {
        return Ok(Toolchain { componentize_py });
    }
    let _lock = InstallLock::acquire(toolchains)?;
    if installed() {
        return Ok(Toolchain { componentize_py });
    }
    eprintln!("xtask: installing componentize-py {COMPONENTIZE_PY} from PyPI into {}", venv.display());
    let python = find_python()?;
    tools::run(Command::new(&python).args(["-m", "venv", "--clear"]).arg(&venv)).with_context(|| {
        format!(
            "creating a Python venv with {python} (on Debian the `venv` module is in the \
             python3-venv package)"
        )
    })?;
    tools::run(
        Command::new(venv.join("bin").join("python"))
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"])
            .arg(format!("componentize-py=={COMPONENTIZE_PY}")),
    )
    .context("installing componentize-py from PyPI")?;
    match tools::version_of(&componentize_py, &["--version"]) {
        Some(v) if v == wanted => Ok(Toolchain { componentize_py }),
        other => bail!("{} reports {other:?} after the install, not `{wanted}`", componentize_py.display()),
    }
}

/// `python3` (3.9 or newer, which pip needs for componentize-py's wheels), or an error saying
/// what to install.
pub fn find_python() -> Result<String> {
    for candidate in ["python3", "python"] {
        let Ok(output) =
            Command::new(candidate).args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).output()
        else {
            continue;
        };
        let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let parsed: Option<(u32, u32)> =
            version.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        match parsed {
            Some(v) if output.status.success() && v >= (3, 9) => return Ok(candidate.to_owned()),
            Some(_) => bail!("{candidate} is Python {version}; componentize-py needs Python 3.9 or newer"),
            None => continue,
        }
    }
    bail!("no python3 on PATH: install Python 3.9 or newer with pip and venv (Debian: python3-venv)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK's objects (lent objects read once, on demand, and never after their call),
    /// run by the machine's Python: `guest-sdk/python/tests/`.
    #[test]
    fn sdk_passes_its_native_tests() {
        let python = find_python().expect("a python3 for the SDK's native tests");
        let tests = crate::repo_root().join("guest-sdk/python/tests");
        tools::run(Command::new(&python).args(["-m", "unittest", "discover", "-s"]).arg(&tests))
            .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

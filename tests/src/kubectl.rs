//! The real `kubectl` for end-to-end tests: `WINK_KUBECTL` (set by `cargo xtask test`, which
//! installs Debian's package), else the one `cargo xtask test` installed into
//! `.wink/toolchains`, else `kubectl` on the `PATH`. And a current kubectl
//! ([`kubectl_current`]), of the release the tests' control plane is built from.

use std::path::{Path, PathBuf};

/// The kubectl binary to run, or why there is none.
pub fn kubectl() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("WINK_KUBECTL").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.wink/toolchains/kubectl/root/usr/bin/kubectl");
    if installed.is_file() {
        return Ok(installed);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file());
    on_path.ok_or_else(|| {
        anyhow::anyhow!("no kubectl: run the tests with `cargo xtask test`, which installs Debian's kubectl")
    })
}

/// The kubectl of the release `tests/control-plane/go.mod` pins (Debian's is 1.20):
/// `WINK_KUBECTL_CURRENT` (set by `cargo xtask test`, which builds it from its Go module with
/// kube-apiserver), else the one it built into `.wink/control-plane/`; or why there is none.
pub fn kubectl_current() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("WINK_KUBECTL_CURRENT").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let built = crate::control_plane::built_dir()?.join("kubectl");
    if built.is_file() {
        return Ok(built);
    }
    anyhow::bail!(
        "no current kubectl (neither WINK_KUBECTL_CURRENT nor {}): `cargo xtask test` builds it from its Go \
         module with the control plane (it needs Go 1.26 or newer)",
        built.display()
    )
}

/// Runs kubectl with `kubeconfig` and `args`; panics with its output unless it succeeds;
/// returns its standard output.
pub fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(kubectl().unwrap())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("running kubectl");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kubectl {args:?} failed:\nstdout: {stdout}\nstderr: {stderr}");
    stdout.into_owned()
}

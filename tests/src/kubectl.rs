//! The real `kubectl` for end-to-end tests: `WINK_KUBECTL` (set by `cargo xtask test`, which
//! installs Debian's package), else the one `cargo xtask test` installed into
//! `.wink/toolchains`, else `kubectl` on the `PATH`. And a current kubectl
//! ([`kubectl_current`]), of the release the tests' control plane is built from; and
//! [`Kubectl`], one of them pointed at a server without a kubeconfig (`wink run --serve-api`).

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

/// A kubectl binary pointed at `server` (no kubeconfig: plain HTTP, no credentials).
pub struct Kubectl {
    /// The kubectl to run.
    pub binary: PathBuf,
    /// The API server's URL (`http://127.0.0.1:PORT`).
    pub server: String,
}

impl Kubectl {
    /// Runs kubectl with `args`; returns (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        self.run_with(args, &[])
    }

    /// Runs kubectl with `args` and the environment variables `env`.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &Path)]) -> (bool, String, String) {
        let out = std::process::Command::new(&self.binary)
            .arg("--server")
            .arg(&self.server)
            .args(["--request-timeout", "20s"])
            .args(args)
            .env("KUBECONFIG", "/dev/null")
            .envs(env.iter().copied())
            .output()
            .expect("running kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs kubectl and fails the test unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?} failed: {err}\n{out}");
        out
    }

    /// Runs kubectl with `-o json` and fails the test unless it succeeds; returns the JSON.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl -o json")
    }
}

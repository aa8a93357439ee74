//! The real Kubernetes control plane the tests run against (`tests/src/control_plane.rs`):
//! `kube-apiserver` and `etcd`, built from their Go modules with the Go toolchain, as
//! controller-runtime's envtest runs them but without downloading prebuilt binaries; and the
//! `kubectl` of the same release, for the tests that need a current client (Debian's is 1.20).
//!
//! `tests/control-plane/go.mod` pins the releases (`k8s.io/kubernetes` and the
//! `go.etcd.io/etcd/server/v3` it pins) and is the one place they are written: the binaries
//! go to `.wink/control-plane/<kubernetes>-<etcd>/` and are reused while that folder holds
//! them, so only the first run (or a change of release) pays for the build. `cargo xtask
//! test` passes them to the tests as `WINK_KUBE_APISERVER`, `WINK_ETCD` and
//! `WINK_KUBECTL_CURRENT`.
//!
//! Without Go, or when a build fails, the error says so and the tests still run: those that
//! need the control plane fail, saying it is missing.
//!
//! The benchmarks' client-go consumer is built the same way ([`crate::client_go_peer`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::guests::tools;

/// One binary of the control plane: the Go package it is built from (a `tool` of the
/// module), its module in `go.mod`, and the variable the tests read.
struct Binary {
    name: &'static str,
    package: &'static str,
    module: &'static str,
    env: &'static str,
    /// The packages whose variables carry the version the binary reports (set at link time,
    /// as Kubernetes' own build does: `hack/lib/version.sh`), if any.
    version_packages: &'static [&'static str],
    /// The cold build on a 2-core machine, for the progress line (measured, rounded up).
    minutes: u32,
}

/// Where Kubernetes' build stamps its version (`hack/lib/version.sh`).
const KUBERNETES_VERSION: &[&str] = &["k8s.io/client-go/pkg/version", "k8s.io/component-base/version"];

/// The cache folder is named by their modules' versions, each once, in this order:
/// `<kubernetes>-<etcd>`.
const BINARIES: &[Binary] = &[
    Binary {
        name: "kube-apiserver",
        package: "k8s.io/kubernetes/cmd/kube-apiserver",
        module: "k8s.io/kubernetes",
        env: "WINK_KUBE_APISERVER",
        version_packages: KUBERNETES_VERSION,
        minutes: 15,
    },
    Binary {
        name: "etcd",
        package: "go.etcd.io/etcd/server/v3",
        module: "go.etcd.io/etcd/server/v3",
        env: "WINK_ETCD",
        // etcd's version is a constant of its source.
        version_packages: &[],
        minutes: 3,
    },
    Binary {
        name: "kubectl",
        package: "k8s.io/kubernetes/cmd/kubectl",
        module: "k8s.io/kubernetes",
        env: "WINK_KUBECTL_CURRENT",
        version_packages: KUBERNETES_VERSION,
        minutes: 5,
    },
];

/// Builds what is missing of the control plane; returns `(variable, path or why not)` per
/// binary, as [`crate::test_tools::install`] does for the Debian tools.
pub fn build(repo: &Path) -> Vec<(&'static str, Result<PathBuf>)> {
    match build_all(repo) {
        Ok(built) => built.into_iter().map(|(env, path)| (env, Ok(path))).collect(),
        Err(e) => {
            let message = format!("{e:#}");
            BINARIES.iter().map(|b| (b.env, Err(anyhow::anyhow!("no {} for the tests: {message}", b.name)))).collect()
        }
    }
}

/// `cargo xtask control-plane`: builds what is missing and prints `VARIABLE=path` lines, for
/// `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver`.
pub fn print(repo: &Path) -> Result<()> {
    for (env, path) in build_all(repo)? {
        println!("{env}={}", path.display());
    }
    Ok(())
}

fn build_all(repo: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    let module = repo.join("tests").join("control-plane");
    let go_mod = module.join("go.mod");
    let text = std::fs::read_to_string(&go_mod).with_context(|| format!("reading {}", go_mod.display()))?;
    let version = |b: &Binary| {
        required_version(&text, b.module)
            .with_context(|| format!("{} requires no version of {}", go_mod.display(), b.module))
    };
    let versions = BINARIES.iter().map(version).collect::<Result<Vec<_>>>()?;
    let cache = repo.join(".wink").join("control-plane");
    let out = cache.join(folder_name(&versions));
    let _lock = tools::InstallLock::acquire(&cache)?;
    let mut go = None;
    let mut built = Vec::new();
    for (binary, version) in BINARIES.iter().zip(&versions) {
        let path = out.join(binary.name);
        if !path.is_file() {
            let go = match &go {
                Some(go) => go,
                None => go.insert(find_go("the tests' control plane (kube-apiserver, etcd)")?),
            };
            eprintln!(
                "xtask: building {} {version} with Go (first run only, ~{} min on 2 cores)",
                binary.name, binary.minutes
            );
            let started = Instant::now();
            go_build(go, &module, binary.package, &ldflags(binary, version), &path, "the tests' control plane")?;
            let took = started.elapsed().as_secs();
            eprintln!("xtask: built {} in {}m {:02}s", binary.name, took / 60, took % 60);
        }
        built.push((binary.env, path));
    }
    Ok(built)
}

/// The cache folder's name: each module's version once, in the order of [`BINARIES`].
fn folder_name(versions: &[String]) -> String {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (binary, version) in BINARIES.iter().zip(versions) {
        if !seen.iter().any(|(module, _)| *module == binary.module) {
            seen.push((binary.module, version));
        }
    }
    seen.iter().map(|(_, version)| *version).collect::<Vec<_>>().join("-")
}

/// The version `go.mod` requires of `module` (a `require` line, not a `replace`).
pub(crate) fn required_version(go_mod: &str, module: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let line = line.trim();
        let line = line.strip_prefix("require ").unwrap_or(line);
        let mut words = line.split_whitespace();
        (words.next()? == module).then_some(())?;
        words.next().filter(|v| v.starts_with('v')).map(str::to_owned)
    })
}

/// The linker flags: no symbols nor debug information (a third of the size), and the
/// version Kubernetes' release build stamps (else kube-apiserver reports `v0.0.0-master`).
fn ldflags(binary: &Binary, version: &str) -> String {
    let mut flags = String::from("-s -w");
    for package in binary.version_packages {
        let mut numbers = version.trim_start_matches('v').split('.');
        let (major, minor) = (numbers.next().unwrap_or_default(), numbers.next().unwrap_or_default());
        for (name, value) in
            [("gitVersion", version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean")]
        {
            flags.push_str(&format!(" -X {package}.{name}={value}"));
        }
    }
    flags
}

/// The `go` command: on the `PATH`, else where the official archive installs it. `what`
/// names what needs it, for the error.
pub(crate) fn find_go(what: &str) -> Result<PathBuf> {
    for candidate in [PathBuf::from("go"), PathBuf::from("/usr/local/go/bin/go")] {
        if let Some(version) = tools::version_of(&candidate, &["version"]) {
            eprintln!("xtask: using {version}");
            return Ok(candidate);
        }
    }
    bail!(
        "Go is not installed (neither `go` on the PATH nor /usr/local/go/bin/go): {what} is built \
         from Go modules; install Go 1.26 or newer from https://go.dev/dl"
    )
}

/// `go build`s `package` of the module in `module_dir` into `dest`, through a temporary name
/// so an interrupted build never leaves a binary that looks complete. `what` names the
/// binary, for the error.
pub(crate) fn go_build(
    go: &Path,
    module_dir: &Path,
    package: &str,
    ldflags: &str,
    dest: &Path,
    what: &str,
) -> Result<()> {
    let dir = dest.parent().context("the binary's folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = dest.file_name().context("the binary's name")?.to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let built = tools::run(
        Command::new(go)
            .current_dir(module_dir)
            // Small binaries with no local paths in them; the module's go.sum must be complete.
            .args(["build", "-trimpath", "-mod=readonly", "-ldflags", ldflags, "-o"])
            .arg(&tmp)
            .arg(package),
    );
    let installed = built
        .and_then(|_| std::fs::rename(&tmp, dest).with_context(|| format!("moving the build to {}", dest.display())));
    if installed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    installed.with_context(|| format!("building {package} ({what})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_required_versions_not_replacements() {
        let go_mod = "module x\n\nrequire k8s.io/api v0.1.0\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.7.0 // indirect\n\tk8s.io/kubernetes v1.37.2\n)\n\nreplace (\n\tk8s.io/apiserver => k8s.io/apiserver v0.37.2\n)\n";
        assert_eq!(required_version(go_mod, "k8s.io/kubernetes").as_deref(), Some("v1.37.2"));
        assert_eq!(required_version(go_mod, "go.etcd.io/etcd/server/v3").as_deref(), Some("v3.7.0"));
        assert_eq!(required_version(go_mod, "k8s.io/api").as_deref(), Some("v0.1.0"));
        assert_eq!(required_version(go_mod, "k8s.io/apiserver"), None);
    }

    #[test]
    fn stamps_the_kubernetes_version() {
        let apiserver = BINARIES.iter().find(|b| b.name == "kube-apiserver").unwrap();
        let flags = ldflags(apiserver, "v1.37.2");
        assert!(flags.starts_with("-s -w "), "{flags}");
        assert!(flags.contains(" -X k8s.io/component-base/version.gitVersion=v1.37.2"), "{flags}");
        assert!(flags.contains(" -X k8s.io/component-base/version.gitMajor=1 "), "{flags}");
        assert!(flags.contains(" -X k8s.io/component-base/version.gitMinor=37 "), "{flags}");
        // kubectl reports client-go's version (`kubectl version`, its User-Agent).
        let kubectl = BINARIES.iter().find(|b| b.name == "kubectl").unwrap();
        assert!(ldflags(kubectl, "v1.37.2").contains(" -X k8s.io/client-go/pkg/version.gitVersion=v1.37.2"));
        let etcd = BINARIES.iter().find(|b| b.name == "etcd").unwrap();
        assert_eq!(ldflags(etcd, "v3.7.0"), "-s -w");
    }

    #[test]
    fn names_the_cache_folder_by_each_module_once() {
        let versions: Vec<String> = BINARIES
            .iter()
            .map(|b| if b.module == "k8s.io/kubernetes" { "v1.37.2" } else { "v3.7.0" }.into())
            .collect();
        assert_eq!(folder_name(&versions), "v1.37.2-v3.7.0");
    }
}

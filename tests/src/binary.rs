//! The `wink` binary, for tests that run it as a user does (e.g. against the local API
//! server, which lives in this crate).
//!
//! Cargo gives `CARGO_BIN_EXE_wink` only to the host package's own integration tests, and
//! wink-host cannot dev-depend on wink-tests (which depends on it), nor can a dependency's
//! binary be an artifact of this package on stable cargo. So [`wink_binary`] runs
//! `cargo build -p wink-host --bin wink` once per test binary, with the target directory and
//! profile this test binary was built with (so the compiled library is reused and only the
//! binary is linked), and takes the executable's path from cargo's JSON messages rather than
//! guessing the layout. That path (`<target>/<profile>/wink`) is shared by every checkout
//! using the same target directory, so the tests run a hard link to it made right after the
//! build, under `<target>/wink-tests/<checkout>/wink`, which another checkout's build cannot
//! replace. `WINK_BIN` overrides all this with a path to a built binary.
//!
//! The target directory is `CARGO_TARGET_DIR` when set, else the ancestor of this test's
//! executable that holds cargo's `CACHEDIR.TAG`; the profile is the folder above `deps/`
//! (`debug` → dev, `release`, or a custom profile's name). The variables cargo sets for a
//! running test (`CARGO_PKG_*`, `CARGO_MANIFEST_*`, …) are removed from the build's
//! environment: some build scripts watch them (ring's reruns on `CARGO_PKG_VERSION_MAJOR`),
//! and inheriting them would rebuild half the dependency graph, here and in the next plain
//! `cargo build`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::repo_root;

/// The path of the `wink` executable, building it on first use.
pub fn wink_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("WINK_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => build(),
    })
}

/// Where this test binary was built: the target directory and the cargo profile.
fn build_context() -> (PathBuf, String) {
    let exe = std::env::current_exe().expect("the test executable's path");
    // <target>/[<triple>/]<profile>/deps/<test>-<hash>
    let profile_dir = exe.parent().and_then(Path::parent).expect("tests run from <target>/<profile>/deps");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(name) => name.to_owned(),
    };
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => profile_dir
            .ancestors()
            .find(|dir| dir.join("CACHEDIR.TAG").is_file())
            .unwrap_or_else(|| profile_dir.parent().expect("a target directory"))
            .to_owned(),
    };
    (target_dir, profile)
}

/// Whether cargo sets this variable for the test being run (rather than the user setting it
/// to configure cargo).
fn set_by_cargo_for_tests(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || name == "OUT_DIR"
}

fn build() -> PathBuf {
    let (target_dir, profile) = build_context();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_tests) {
            command.env_remove(&name);
        }
    }
    let mut child = command
        .current_dir(repo_root())
        .args(["build", "--quiet", "--message-format=json", "-p", "wink-host", "--bin", "wink", "--profile"])
        .arg(&profile)
        .arg("--target-dir")
        .arg(&target_dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("running cargo build -p wink-host --bin wink");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut executable = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("reading cargo's output");
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let is_wink_bin = message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "wink"
            && message["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin"));
        if let Some(path) = message["executable"].as_str().filter(|_| is_wink_bin) {
            executable = Some(PathBuf::from(path));
        }
    }
    let status = child.wait().expect("waiting for cargo build");
    assert!(status.success(), "cargo build -p wink-host --bin wink failed ({status})");
    let executable = executable.expect("cargo reported no executable for the wink binary");
    assert!(executable.is_file(), "{} does not exist", executable.display());
    private_link(&executable, &target_dir)
}

/// A hard link (or copy) of `executable` that only this checkout's tests replace.
fn private_link(executable: &Path, target_dir: &Path) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(repo_root(), &mut hasher);
    let dir = target_dir.join("wink-tests").join(format!("{:016x}", std::hash::Hasher::finish(&hasher)));
    std::fs::create_dir_all(&dir).expect("creating the folder of the test binary");
    let tmp = dir.join(format!("wink.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(executable, &tmp).is_err() {
        std::fs::copy(executable, &tmp).expect("copying the wink binary");
    }
    let path = dir.join("wink");
    std::fs::rename(&tmp, &path).expect("moving the wink binary in place");
    path
}

/// `wink run --serve-api` on a free loopback port over the folder `cluster`, with the plugins
/// under `plugins`: the running process and the endpoint's URL (`http://127.0.0.1:PORT`),
/// once it listens.
pub async fn serve_api(cluster: &Path, plugins: &Path) -> (crate::process::Running, String) {
    let child = crate::process::Running::spawn(
        Command::new(wink_binary())
            .args(["run", "--no-cache", "--serve-api", "127.0.0.1:0", "--plugins"])
            .arg(plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    );
    let addr = child
        .stderr
        .clone()
        .wait_for("the API endpoint's address", |l| {
            l.contains("over the Kubernetes API").then(|| crate::process::field(l, "addr").unwrap().to_owned())
        })
        .await;
    (child, format!("http://{addr}"))
}

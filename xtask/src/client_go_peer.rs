//! client-go's SharedIndexInformer as a consumer of the benchmarks: the Go program of
//! `benches/client-go/` (read by `benches/src/client_go.rs`), built with the Go toolchain as
//! the tests' control plane is (see [`crate::control_plane`], whose helpers this uses).
//!
//! `benches/client-go/go.mod` pins the client-go release. The binary goes to
//! `.wink/bench/client-go/<client-go version>-<hash of the program's files>/` and is reused
//! while that folder holds it: only the first run after a change of release or of the
//! program pays for the build. `cargo xtask bench` passes it to the benchmarks as
//! `WINK_CLIENT_GO_PEER`; a benchmark run without that variable asks `cargo xtask
//! client-go-peer` for it. Without Go, or when the build fails, the error says so and the
//! benchmarks skip their client-go rows.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::control_plane::{find_go, go_build, required_version};
use crate::guests::tools::{InputHash, InstallLock};

/// The variable the benchmarks read.
pub const ENV: &str = "WINK_CLIENT_GO_PEER";

/// The binary's name.
const NAME: &str = "wink-client-go-peer";

/// The program's package (the module of `benches/client-go/go.mod`).
const PACKAGE: &str = "github.com/wink-rs/wink/benches/client-go";

/// Builds the program if its cached binary is missing; returns the binary.
pub fn build(repo: &Path) -> Result<PathBuf> {
    let module = repo.join("benches").join("client-go");
    let go_mod = module.join("go.mod");
    let text = std::fs::read_to_string(&go_mod).with_context(|| format!("reading {}", go_mod.display()))?;
    let version = required_version(&text, "k8s.io/client-go")
        .with_context(|| format!("{} requires no version of k8s.io/client-go", go_mod.display()))?;
    let mut inputs = InputHash::new(NAME);
    inputs.add_tree("module", &module)?;
    let hash = inputs.finish();
    let cache = repo.join(".wink").join("bench").join("client-go");
    let path = cache.join(format!("{version}-{}", &hash[..12])).join(NAME);
    let _lock = InstallLock::acquire(&cache)?;
    if !path.is_file() {
        let go = find_go("the benchmarks' client-go consumer")?;
        eprintln!(
            "xtask: building the benchmarks' client-go {version} consumer with Go (first build only: \
             about 6 min of CPU with an empty Go build cache, seconds with a warm one)"
        );
        let started = Instant::now();
        go_build(&go, &module, PACKAGE, "-s -w", &path, "the benchmarks' client-go consumer")?;
        let took = started.elapsed().as_secs();
        eprintln!("xtask: built {NAME} in {}m {:02}s", took / 60, took % 60);
    }
    Ok(path)
}

/// `cargo xtask client-go-peer`: builds the program if missing and prints
/// `WINK_CLIENT_GO_PEER=path`.
pub fn print(repo: &Path) -> Result<()> {
    println!("{ENV}={}", build(repo)?.display());
    Ok(())
}

//! One on-disk cache of compiled components for every test, so a big guest (a Python or
//! JavaScript runtime, seconds to compile in wasmtime) is compiled once per machine and
//! engine configuration, not once per test or per run.
//!
//! The folder is `$WINK_TEST_COMPILE_CACHE`, or `<repo>/.wink/cache/components` (ignored by
//! git with the rest of `.wink/`). Entries are keyed by the component's hash and the engine's
//! settings, written atomically, and safe to share between concurrent tests and processes.

use std::path::PathBuf;

use wink::plugin::{EngineConfig, PluginEngine, PoolLimits};

use crate::repo_root;

/// The compile cache folder of the tests.
pub fn compile_cache_dir() -> PathBuf {
    match std::env::var_os("WINK_TEST_COMPILE_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join(".wink").join("cache").join("components"),
    }
}

/// An engine with small pool limits (several run at once in a test binary) that compiles
/// through [`compile_cache_dir`]. Call it inside the test's tokio runtime: its epoch ticker
/// runs there.
pub fn cached_engine() -> PluginEngine {
    let config = EngineConfig {
        pool: Some(PoolLimits::small()),
        cache_dir: Some(compile_cache_dir()),
        ..EngineConfig::default()
    };
    PluginEngine::new(config).expect("starting the wasm engine")
}

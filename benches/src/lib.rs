//! Support for wink's benchmarks (`cargo bench -p wink-benches`, or `cargo xtask bench` for
//! all of them and the results table): the workload generator, the local cluster, the
//! consumers compared (wink's informer, kube-rs's watcher + reflector, client-go's informer),
//! the plugins, and the measuring helpers the bench files under `benches/benches/` share.
//!
//! - [`workload`]: realistic Pods of ~4 KB and ~16 KB in several namespaces.
//! - [`cluster`]: the tests' local API server filled with them.
//! - [`gate`]: a kube client whose WATCH requests wait until the benchmark opens a gate,
//!   so that writing the events is not timed.
//! - [`consumers`]: wink's informer and kube-rs's watcher + store over such a client.
//! - [`client_go`]: client-go's SharedIndexInformer, a Go program driven over a pipe.
//! - [`track`]: when a consumer has synced and has seen every final state.
//! - [`plugins`]: `bench-noop` and the Python/JavaScript components, as plugin handlers.
//! - [`mem`]: a counting global allocator and RSS.
//! - [`results`]: the JSON reports behind `BENCHMARKS.md`, and statistics.
//! - [`stream`]: the list-then-watch stream of benchmarks 1 and 2.
//! - [`profile`]: turning `perf` on for the measured phase only.
//! - [`raw_call`]: a bare wasmtime call of a component's `on-update`, the floor of a call.

pub mod client_go;
pub mod cluster;
pub mod consumers;
pub mod cpu;
pub mod gate;
pub mod mem;
pub mod plugins;
pub mod profile;
pub mod raw_call;
pub mod results;
pub mod stream;
pub mod track;
pub mod workload;

/// The multi-threaded tokio runtime the `wink` binary runs on.
pub fn runtime() -> tokio::runtime::Runtime {
    wink::plugin::runtime_builder().build().expect("building a tokio runtime")
}

/// Whether `WINK_BENCH_QUICK` is set: smaller sample counts while developing. The
/// workloads (object counts, event counts, rates) never change.
pub fn quick() -> bool {
    std::env::var_os("WINK_BENCH_QUICK").is_some()
}

//! Handler plugins: manifests, the wasmtime engine, the sandbox, and the event handler that
//! runs a plugin's component for an informer.
//!
//! ```text
//! plugin.yaml ──▶ manifest ──▶ loader ──compile (disk cache)──▶ engine (pooling, epoch ticker)
//!                                 │ instantiate_pre against our imports only (no WASI)
//!                                 ▼
//!                            LoadedPlugin ──▶ runner::PluginHandler  (informer::EventHandler)
//!                                                 │ bounded blocking pool, failure policy,
//!                                                 │ restart backoff, quarantine, metrics
//!                                                 ▼
//!                                            instance::PluginInstance (Store + limiter + deadline)
//!                                                 │ imports: log, cache (scoped by the manifest),
//!                                                 │ cluster (permissions, budgets), clocks
//! ```
//!
//! The code is grouped in rooms:
//! - `runtime`: the wasmtime engine, the sandbox and instances, the guest thread pool,
//!   memory budgets — where a plugin's code runs.
//! - `deploy`: manifests, the loader and the registry — where a plugin is loaded,
//!   deployed, replaced and removed.
//! - `delivery`: the event handler that calls a plugin, and its metrics — where a plugin is
//!   called.
//! - `imports`: the host side of what plugins import (`log`, `cache`, `cluster`, `queue`,
//!   the clocks).
//! - `reconcile`: reconcilers (the 0.4.0 `reconciler-plugin` world): events mapped to the
//!   keys of primary objects, a work queue, and the workers that call `reconcile(key)`.
//!
//! The public API is what this module re-exports: the registry, manifests and the loader,
//! the engine, the event handler that runs a plugin, and their metrics and errors.

pub(crate) mod contract;
pub(crate) mod delivery;
pub(crate) mod deploy;
pub(crate) mod imports;
pub(crate) mod manifest;
pub(crate) mod metrics;
pub(crate) mod reconcile;
pub(crate) mod runtime;
#[cfg(test)]
pub(crate) mod test_guests;
pub(crate) mod threads;

pub use contract::bindings::WitVersion;
pub use contract::guest_text::MAX_GUEST_TEXT;
pub use contract::outcome::{CallOutcome, TrapKind};
pub use delivery::runner::{PluginHandler, RecyclePolicy};
pub use deploy::registry::Ownership;
pub use deploy::registry::{PluginRegistry, PluginStatus, RegistryError, ScanStats};
pub use deploy::start::PluginStart;
pub use imports::cache::NoCache;
pub use imports::log::LOG_TARGET;
pub use imports::{CacheResolver, CacheScope, ClusterContext, ClusterLink};
pub(crate) use manifest::MANIFEST_FILE;
pub use manifest::WatchedResource;
pub use manifest::permissions::{Attributes, PolicyEntry, PolicyError, Refusal, RequestLimits, ServiceAccountRef};
pub use manifest::permissions::{Permissions, Policy, PolicyRule};
pub use manifest::{FailurePolicy, Manifest, OnError, Reconcile, parse_byte_size};
pub use metrics::{MetricsRegistry, PluginMetrics};
pub use runtime::budget::{BudgetExceeded, MemoryBudget};
pub use runtime::engine::EngineError;
pub use runtime::engine::{Allocation, CacheOutcome, DEFAULT_MAX_INSTANCES, EngineConfig, PluginEngine, PoolLimits};
pub use runtime::instance::{PluginInstance, Sandbox, SandboxSettings};
pub use runtime::loader::{LoadError, LoadLimits, LoadedPlugin, load_plugin};
pub use threads::executor::runtime_builder;
pub use threads::pool::GuestPool;

/// The `bindgen!` types of the WIT world, for benchmarks that call a component through
/// wasmtime directly as a baseline. Not a stable API.
#[doc(hidden)]
pub use contract::bindings;

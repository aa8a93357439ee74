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

pub use contract::bindings::{WitVersion, World};
pub use contract::guest_text::{GuestText, MAX_GUEST_TEXT};
pub use contract::outcome::{CallOutcome, TrapKind};
pub use delivery::runner::{PluginHandler, RecyclePolicy, Recycler};
pub use deploy::registry::{DEPLOY_RETRY, Ownership, PluginRegistry, PluginStatus, RegistryError, ScanStats};
pub use deploy::start::PluginStart;
pub use imports::cache::NoCache;
pub use imports::log::{LOG_TARGET, MAX_LOG_MESSAGE, MAX_LOGS_PER_CALL};
pub use imports::{CacheResolver, CacheScope, ClusterAccess, ClusterContext, ClusterLink, NamespaceGrant};
pub use manifest::permissions::{
    Attributes, Permissions, Policy, PolicyEntry, PolicyError, PolicyRule, Refusal, RequestLimits, ServiceAccountRef,
};
pub use manifest::{
    FailurePolicy, MANIFEST_FILE, Manifest, ManifestError, MapTo, OnError, Reconcile, ShardBy, WatchedResource,
    format_bytes, parse_byte_size,
};
pub use metrics::{MetricsRegistry, PluginMetrics};
pub use runtime::budget::{BudgetExceeded, BudgetFull, InstanceReservation, MemoryBudget, MemoryReservation};
pub use runtime::engine::{
    Allocation, CacheOutcome, DEFAULT_MAX_INSTANCES, EngineConfig, EngineError, PluginEngine, PoolLimits,
};
pub use runtime::footprint::InitialMemory;
pub use runtime::instance::{PluginInstance, Sandbox, SandboxSettings};
pub use runtime::loader::{LoadError, LoadLimits, LoadedPlugin, load_plugin};
pub use threads::executor::runtime_builder;
pub use threads::pool::{GuestPool, GuestPoolError};

/// The `bindgen!` types of the WIT world, for benchmarks that call a component through
/// wasmtime directly as a baseline. Not a stable API.
#[doc(hidden)]
pub use contract::bindings;

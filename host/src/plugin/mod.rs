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
//!                                                 │ imports: log, cache (scoped by the manifest)
//! ```
//!
//! The code is grouped in rooms:
//! - [`runtime`]: the wasmtime engine, the sandbox and instances, the guest thread pool,
//!   memory budgets — where a plugin's code runs.
//! - [`deploy`]: manifests, the loader and the registry — where a plugin is loaded,
//!   deployed, replaced and removed.
//! - [`delivery`]: the event handler that calls a plugin, and its metrics — where a plugin is
//!   called.
//! - [`imports`]: the host side of what plugins import (`log`, `cache`).

pub mod delivery;
pub mod deploy;
pub mod imports;
pub mod runtime;
#[cfg(test)]
pub(crate) mod test_guests;

pub use delivery::metrics::{MetricsRegistry, PluginMetrics};
pub use delivery::runner::PluginHandler;
pub use deploy::loader::{LoadError, LoadLimits, LoadedPlugin, load_plugin};
pub use deploy::manifest::{Manifest, ManifestError};
pub use deploy::registry::{DEPLOY_RETRY, PluginRegistry, PluginStatus, RegistryError, ScanStats};
pub use deploy::selector::{LabelSelector, LabelSet, SelectorError};
pub use imports::{CacheResolver, CacheScope, NamespaceGrant};
pub use runtime::budget::{BudgetExceeded, MemoryBudget, MemoryReservation};
pub use runtime::engine::{Allocation, CacheOutcome, EngineConfig, EngineError, PluginEngine, PoolLimits};
pub use runtime::footprint::InitialMemory;
pub use runtime::guest_text::{GuestText, MAX_GUEST_TEXT};
pub use runtime::instance::{PluginInstance, Sandbox, SandboxSettings};
pub use runtime::outcome::{CallOutcome, TrapKind};
pub use runtime::pool::{GuestPool, GuestPoolError};

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
//! - [`manifest`], [`selector`]: the plugin's YAML manifest and Kubernetes label selectors.
//! - [`engine`]: the one wasmtime engine, its epoch ticker and the compiled-component cache;
//!   [`cache_prune`]: keeping that cache under a size bound.
//! - [`budget`]: the host's memory budget, which every deployed plugin reserves from;
//!   [`footprint`]: a component's memory before its first call.
//! - [`bindings`]: the only `bindgen!` of the WIT world, and `Object` conversions.
//! - [`imports`]: the host side of `log` and `cache`.
//! - [`guest_text`]: every string a guest hands the host, escaped onto one line and bounded.
//! - [`limits`], [`outcome`], [`instance`]: the sandbox and what a call can come to.
//! - [`known_kinds`]: the kinds Kubernetes serves without a CRD (`wink check` warns about others).
//! - [`loader`]: manifest + component → [`LoadedPlugin`] (what `wink check` runs).
//! - [`fingerprint`]: plugin file digests remembered by (size, modification time).
//! - [`registry`]: the deployed plugins; deploy, replace, remove, folder rescans.
//! - [`pool`]: [`GuestPool`], the threads guest code runs on.
//! - [`runner`]: [`PluginHandler`], a plugin as an informer event handler.
//! - [`metrics`]: per-plugin Prometheus metrics.

pub mod bindings;
pub mod budget;
pub mod cache_prune;
pub mod engine;
pub mod fingerprint;
pub mod footprint;
pub mod guest_text;
pub mod imports;
pub mod instance;
pub mod known_kinds;
pub mod limits;
pub mod loader;
pub mod manifest;
pub mod metrics;
pub mod outcome;
pub mod pool;
pub mod registry;
pub mod runner;
pub mod selector;
#[cfg(test)]
pub(crate) mod test_guests;

pub use budget::{BudgetExceeded, MemoryBudget, MemoryReservation};
pub use engine::{Allocation, CacheOutcome, EngineConfig, EngineError, PluginEngine, PoolLimits};
pub use footprint::InitialMemory;
pub use guest_text::{GuestText, MAX_GUEST_TEXT};
pub use imports::{CacheResolver, CacheScope, NamespaceGrant};
pub use instance::{PluginInstance, Sandbox, SandboxSettings};
pub use loader::{LoadError, LoadLimits, LoadedPlugin, load_plugin};
pub use manifest::{Manifest, ManifestError};
pub use metrics::{MetricsRegistry, PluginMetrics};
pub use outcome::{CallOutcome, TrapKind};
pub use pool::{GuestPool, GuestPoolError};
pub use registry::{DEPLOY_RETRY, PluginRegistry, PluginStatus, RegistryError, ScanStats};
pub use runner::PluginHandler;
pub use selector::{LabelSelector, LabelSet, SelectorError};

//! Delivering events to a plugin: [`runner::PluginHandler`], a plugin as an informer event
//! handler (guest pool hops, batches, the failure policy, restarts, quarantine);
//! [`placement`], where a plugin's lone event runs; and [`metrics`], what each plugin's
//! deliveries are counted in, its latencies in [`latency`] histograms.

pub mod latency;
pub mod metrics;
pub(crate) mod placement;
pub mod runner;

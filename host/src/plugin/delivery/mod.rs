//! Delivering events to a plugin: [`runner::PluginHandler`], a plugin as an informer event
//! handler (guest pool hops, batches, the failure policy, restarts, quarantine), and
//! [`metrics`], what each plugin's deliveries are counted in.

pub mod metrics;
pub mod runner;

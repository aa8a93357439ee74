//! Delivering events to a plugin: [`runner::PluginHandler`], a plugin as an informer event
//! handler (guest pool hops, batches, the failure policy, restarts, quarantine); and
//! [`placement`], where a plugin's lone event runs. What each plugin's deliveries are counted
//! in is [`metrics`](super::metrics)'.

pub(crate) mod placement;
pub(crate) mod runner;

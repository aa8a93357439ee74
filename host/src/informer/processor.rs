//! Fans notifications out to listeners: client-go's `sharedProcessor`.
//!
//! `distribute` pushes a notification into every interested listener's queue and returns:
//! it never waits for a handler. Listeners that filter by namespace are indexed by
//! namespace, so with many tenants on disjoint namespaces an event touches only the
//! listeners of its own namespace (plus the cluster-wide ones).
//!
//! Resync follows client-go: on every tick of the informer's check period,
//! [`Processor::should_resync`] marks the listeners whose own period is due as *syncing*;
//! notifications that are syncs (`Sync` deltas, and relisted objects whose resourceVersion
//! did not change) go only to those listeners.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::time::Instant;

use super::handler::Notification;
use super::listener::Listener;

/// The smallest resync period a handler may ask for (client-go's `minimumResyncPeriod`).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// A listener's effective resync period given the informer's check period, as client-go's
/// `determineResyncPeriod`: zero stays zero; a zero check period disables resync; a period
/// below the check period is raised to it.
pub fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return Duration::ZERO;
    }
    if check.is_zero() {
        tracing::warn!(?desired, "the informer's resync check period is 0; this handler's resync is disabled");
        return Duration::ZERO;
    }
    if desired < check {
        tracing::warn!(?desired, ?check, "resync period raised to the informer's check period");
        return check;
    }
    desired
}

#[derive(Default)]
struct State {
    listeners: HashMap<u64, Arc<Listener>>,
    by_namespace: foldhash::HashMap<String, Vec<Arc<Listener>>>,
    everywhere: Vec<Arc<Listener>>,
    syncing: HashSet<u64>,
}

/// The set of listeners of one informer.
#[doc(alias = "sharedProcessor")]
#[derive(Default)]
pub struct Processor {
    state: RwLock<State>,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor").field("listeners", &self.state.read().listeners.len()).finish()
    }
}

impl Processor {
    /// Adds a listener.
    pub fn add_listener(&self, listener: Arc<Listener>) {
        let mut state = self.state.write();
        match &listener.options().namespaces {
            Some(namespaces) => {
                for ns in namespaces {
                    state.by_namespace.entry(ns.clone()).or_default().push(listener.clone());
                }
            }
            None => state.everywhere.push(listener.clone()),
        }
        state.listeners.insert(listener.id(), listener);
    }

    /// Removes a listener; returns it if it was registered.
    pub fn remove_listener(&self, id: u64) -> Option<Arc<Listener>> {
        let mut state = self.state.write();
        let listener = state.listeners.remove(&id)?;
        state.everywhere.retain(|l| l.id() != id);
        state.by_namespace.retain(|_, ls| {
            ls.retain(|l| l.id() != id);
            !ls.is_empty()
        });
        state.syncing.remove(&id);
        Some(listener)
    }

    /// Queues `n` for every interested listener; a sync goes only to syncing listeners.
    pub fn distribute(&self, n: &Notification, is_sync: bool) {
        let state = self.state.read();
        let namespaced = n.object().namespace().and_then(|ns| state.by_namespace.get(ns));
        for listener in state.everywhere.iter().chain(namespaced.into_iter().flatten()) {
            if is_sync && !state.syncing.contains(&listener.id()) {
                continue;
            }
            listener.add(n.clone());
        }
    }

    /// Marks the listeners whose resync is due as syncing; returns whether any is.
    #[doc(alias = "shouldResync")]
    pub fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut state = self.state.write();
        let due: HashSet<u64> =
            state.listeners.values().filter(|l| l.take_resync_if_due(now)).map(|l| l.id()).collect();
        state.syncing = due;
        !state.syncing.is_empty()
    }

    /// Re-resolves every listener's period after the check period changed.
    pub fn resync_check_period_changed(&self, check: Duration) {
        for listener in self.state.read().listeners.values() {
            listener.set_resync_period(determine_resync_period(listener.requested_resync_period(), check));
        }
    }
}

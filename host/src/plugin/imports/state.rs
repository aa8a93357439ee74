//! What the imports hold: [`ImportState`], one field per capability, for one instance;
//! [`ImportContext`], what a plugin's instances build it from; and [`HasImports`], by which
//! the runtime's store data hands it to every import.
//!
//! A new host import adds its state here (a field, and how [`ImportContext::instance_state`]
//! makes it) beside its own module; the runtime holds an [`ImportState`] without knowing
//! what is in it, and calls [`ImportState::begin_call`] / [`ImportState::end_call`] around
//! every call into the guest.

use std::sync::Arc;
use std::time::Duration;

use super::cache::{CacheAccess, CacheResolver, CacheScope};
use super::cluster::{ClusterAccess, ClusterLink};
use super::event_object::LentObjects;
use super::log::LogSink;
use super::queue::QueueAccess;
use crate::workqueue::WorkQueue;

/// The state behind a plugin instance's imports.
#[derive(Debug)]
pub struct ImportState {
    /// The `log` import.
    pub log: LogSink,
    /// The `cache` import.
    pub cache: CacheAccess,
    /// The `cluster` import.
    pub cluster: ClusterAccess,
    /// The objects lent to the call in progress (`event-object` handles, 0.3.0 on).
    pub lent: LentObjects,
    /// The `queue` import (a reconciler's work queue).
    pub queue: QueueAccess,
}

impl ImportState {
    /// The plugin's name (the `plugin` field of its log records, its field manager).
    pub fn plugin(&self) -> &str {
        self.log.plugin()
    }

    /// Starts a call into the guest: per-call budgets begin again.
    pub fn begin_call(&mut self) {
        self.log.begin_call();
        self.cluster.begin_call();
        self.queue.begin_call();
    }

    /// Ends a call into the guest (reports what a per-call budget dropped).
    pub fn end_call(&mut self) {
        self.log.end_call();
    }
}

/// What one plugin's imports are built from, once per instance: its name, what it may read
/// from the cache, where its requests go, and a reconciler's work queue.
#[derive(Clone)]
pub struct ImportContext {
    /// The plugin's name.
    pub name: Arc<str>,
    /// What it may read from the cache.
    pub scope: Arc<CacheScope>,
    /// Where the cache's stores are found.
    pub resolver: Arc<dyn CacheResolver>,
    /// Where its `cluster` requests go (none: every request is `unavailable`).
    pub cluster: Option<Arc<ClusterLink>>,
    /// A reconciler's work queue, for its `queue` import.
    pub queue: Option<WorkQueue<String>>,
}

impl ImportContext {
    /// The state of a new instance's imports.
    pub fn instance_state(&self) -> ImportState {
        ImportState {
            log: LogSink::new(self.name.clone()),
            cache: CacheAccess::new(self.scope.clone(), self.resolver.clone()),
            cluster: ClusterAccess::new(self.cluster.clone()),
            lent: LentObjects::default(),
            queue: QueueAccess::new(self.queue.clone()),
        }
    }
}

/// How a store's data hands the imports their state. The runtime implements it.
pub trait HasImports: 'static {
    /// The state of the instance's imports.
    fn imports(&self) -> &ImportState;
    /// The same, to change.
    fn imports_mut(&mut self) -> &mut ImportState;
    /// Gives `waited`, time the guest spent waiting on the cluster, back to the call's
    /// deadline.
    fn waited(&mut self, waited: Duration);
}

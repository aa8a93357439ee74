//! Replaying to a reconciler: each recorded notification the plugin watches goes through the
//! same [`KeyMapper`] as live (its own key for the primary, the controller owner's for an
//! owned object, the named primary for a watched one, or the plugin's `map-to-keys`) into a
//! work queue, and the keys queued are reconciled at once, in order, before the next
//! notification — with the keys the plugin enqueues itself without a delay. What a live
//! queue would do later is reported, not replayed: a requeue after a delay, a retry after an
//! error. (Live, a key added twice while it waits is reconciled once; here each notification
//! reconciles the keys it maps to.)

use std::sync::Arc;

use crate::informer::{EventHandler, HandlerResult, Object};
use crate::plugin::PluginHandler;
use crate::plugin::manifest::{Manifest, MapTo, Role};
use crate::plugin::reconcile::KeyMapper;
use crate::workqueue::WorkQueue;

/// The most reconciles one notification may lead to (a plugin that enqueues its own key on
/// every reconcile would never stop).
pub(super) const MAX_RECONCILES: usize = 100;

/// A notification, as the mappers take it.
pub(super) enum Delivered<'a> {
    Add { obj: &'a Object, initial: bool },
    Update { old: &'a Object, new: &'a Object },
    Delete { obj: &'a Object, unknown: bool },
}

/// One reconcile and what came of it.
pub(super) struct Reconciled {
    pub(super) key: String,
    pub(super) result: HandlerResult,
}

/// A reconciler's mappers, by watched resource, and its queue.
pub(super) struct Keys {
    mappers: Vec<(String, String, KeyMapper)>,
    queue: WorkQueue<String>,
    handler: Arc<PluginHandler>,
}

impl Keys {
    /// The mappers of `manifest`'s reconciler, enqueuing into `queue`, which `handler`'s
    /// sandbox enqueues into too.
    pub(super) fn new(manifest: &Manifest, queue: WorkQueue<String>, handler: Arc<PluginHandler>) -> Option<Self> {
        let reconcile = manifest.reconcile.as_ref()?;
        let mappers = reconcile
            .resources()
            .into_iter()
            .zip(reconcile.roles())
            .map(|(resource, role)| {
                let plugin_maps = matches!(role, Role::Mapped(MapTo::Plugin));
                let mapper = KeyMapper::new(role, queue.clone());
                let mapper = if plugin_maps { mapper.with_plugin(handler.clone()) } else { mapper };
                (resource.api_version, resource.kind, mapper)
            })
            .collect();
        Some(Self { mappers, queue, handler })
    }

    /// Maps `delivered` (of `api_version`/`kind`) to keys in the queue.
    pub(super) async fn map(&self, api_version: &str, kind: &str, delivered: Delivered<'_>) {
        for (_, _, mapper) in self.mappers.iter().filter(|(a, k, _)| a == api_version && k == kind) {
            // A mapper only queues keys.
            let _ = match delivered {
                Delivered::Add { obj, initial } => mapper.on_add(obj, initial).await,
                Delivered::Update { old, new } => mapper.on_update(old, new).await,
                Delivered::Delete { obj, unknown } => mapper.on_delete(obj, unknown).await,
            };
        }
    }

    /// Reconciles the next queued key (one the mappers queued, or the plugin itself without a
    /// delay); `None` when none is queued.
    pub(super) async fn next(&self) -> Option<Reconciled> {
        if self.queue.is_empty() {
            return None;
        }
        let key = self.queue.get().await?;
        let result = self.handler.reconcile(key.clone()).await;
        // Neither a requeue after a delay nor a retry is replayed: the outcome says so.
        self.queue.forget(&key);
        self.queue.done(&key);
        Some(Reconciled { key, result })
    }

    /// Whether keys are still queued.
    pub(super) fn more(&self) -> bool {
        !self.queue.is_empty()
    }
}

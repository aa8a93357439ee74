//! `wink:plugin/queue` (0.4.0): a reconciler adds keys of its primary resource to its own
//! work queue — another object's, or its own later (`after-ms`).
//!
//! The queue is the plugin's [`WorkQueue`] (see
//! [`reconcile`](crate::plugin::reconcile)); a handler plugin, which has none, may import the
//! interface and its calls do nothing. A key that cannot name an object (an empty name, a
//! name longer than 253 bytes, a namespace longer than 63) is refused with a warning, and at
//! most [`MAX_ENQUEUES_PER_CALL`] keys are taken per call into the plugin, so a guest cannot
//! fill the host's memory through its queue.

use std::time::Duration;

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;

use super::state::HasImports;
use crate::plugin::contract::bindings::{WitObjectKey, WitVersion};
use crate::workqueue::WorkQueue;

/// The most keys one call into a plugin may enqueue; the rest are dropped with a warning.
pub(crate) const MAX_ENQUEUES_PER_CALL: u32 = 1000;

/// The longest delay a key may be enqueued with (client-go's rate limiter caps its delays
/// at 1000 s; a day is generous).
pub(crate) const MAX_ENQUEUE_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// The host state behind a plugin's `queue` import.
#[derive(Debug, Default)]
pub struct QueueAccess {
    queue: Option<WorkQueue<String>>,
    this_call: u32,
}

impl QueueAccess {
    /// Access to `queue` (none: a handler plugin's, whose calls do nothing).
    pub fn new(queue: Option<WorkQueue<String>>) -> Self {
        Self { queue, this_call: 0 }
    }

    /// Starts a new call: resets the per-call budget.
    pub fn begin_call(&mut self) {
        self.this_call = 0;
    }

    /// Adds `key` after `after`, if it names an object and the call's budget allows.
    pub fn enqueue(&mut self, plugin: &str, key: WitObjectKey, after: Duration) {
        let Some(queue) = &self.queue else { return };
        if self.this_call >= MAX_ENQUEUES_PER_CALL {
            if self.this_call == MAX_ENQUEUES_PER_CALL {
                tracing::warn!(
                    plugin,
                    "more than {MAX_ENQUEUES_PER_CALL} keys enqueued in one call; the rest are dropped"
                );
            }
            self.this_call = self.this_call.saturating_add(1);
            return;
        }
        self.this_call += 1;
        let namespace_ok =
            key.namespace.as_ref().is_none_or(|ns| !ns.is_empty() && ns.len() <= 63 && !ns.contains('/'));
        if key.name.is_empty() || key.name.len() > 253 || key.name.contains('/') || !namespace_ok {
            tracing::warn!(plugin, name = %key.name.escape_debug(), "enqueued a key that names no object; ignored");
            return;
        }
        queue.add_after(key.cache_key(), after.min(MAX_ENQUEUE_DELAY));
    }
}

/// Defines `queue.enqueue` in every contract version that has it (0.4.0 on).
pub fn link<T: HasImports>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    for version in WitVersion::since(WitVersion::V0_4) {
        linker.instance(&version.interface("queue"))?.func_wrap(
            "enqueue",
            |mut store: StoreContextMut<'_, T>, (key, after_ms): (WitObjectKey, u64)| {
                let plugin = store.data().imports().plugin().to_owned();
                store.data_mut().imports_mut().queue.enqueue(&plugin, key, Duration::from_millis(after_ms));
                Ok(())
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workqueue::RateLimits;

    fn key(namespace: Option<&str>, name: &str) -> WitObjectKey {
        WitObjectKey { namespace: namespace.map(str::to_owned), name: name.to_owned() }
    }

    #[tokio::test(start_paused = true)]
    async fn keys_go_to_the_queue_within_the_budget_and_nonsense_is_refused() {
        let queue = WorkQueue::new(RateLimits::default(), None);
        let mut access = QueueAccess::new(Some(queue.clone()));
        access.begin_call();
        access.enqueue("p", key(Some("shop"), "web"), Duration::ZERO);
        access.enqueue("p", key(None, "node-1"), Duration::from_secs(5));
        access.enqueue("p", key(Some("shop"), ""), Duration::ZERO);
        access.enqueue("p", key(Some("a/b"), "x"), Duration::ZERO);
        assert_eq!(queue.get().await.as_deref(), Some("shop/web"));
        assert_eq!(queue.stats().waiting, 1, "node-1 later; the two nonsense keys refused");
        for i in 0..MAX_ENQUEUES_PER_CALL {
            access.enqueue("p", key(Some("shop"), &format!("n{i}")), Duration::ZERO);
        }
        assert_eq!(queue.len(), (MAX_ENQUEUES_PER_CALL - 4) as usize, "the call's budget was spent");
        access.begin_call();
        access.enqueue("p", key(Some("shop"), "next-call"), Duration::ZERO);
        assert_eq!(queue.len(), (MAX_ENQUEUES_PER_CALL - 3) as usize);
        let mut none = QueueAccess::new(None);
        none.enqueue("p", key(Some("shop"), "web"), Duration::ZERO);
    }
}

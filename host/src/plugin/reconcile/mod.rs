//! Reconcilers: plugins of the `reconciler-plugin` world (`wink:plugin@0.4.0`), run as
//! controller-runtime runs a controller.
//!
//! A reconciler's manifest names a primary resource, the resources it owns and those it
//! watches (`reconcile:` in [`Manifest`](crate::plugin::Manifest)). The registry registers a
//! [`KeyMapper`] on each of their informers instead of the plugin itself: every event becomes
//! the keys of the primary objects it concerns, added to the plugin's [`WorkQueue`] — client-go's
//! work queue, so a key is never reconciled twice at once, one added while reconciled runs once
//! more after, and a key waiting is not queued twice. A [`Controller`]'s workers take keys
//! from the queue and call the plugin's `reconcile(key)` through a
//! [`PluginHandler`] (an instance each, the failure policy, restarts and quarantine as for any
//! plugin), then do what the outcome says:
//!
//! | outcome | the key |
//! |---|---|
//! | done (`await-change`) | forgotten by the rate limiter; reconciled again on its next event |
//! | `requeue-after(ms)` | forgotten, and added again after that long |
//! | `retry`, or a trap with `onError: retry` | added again after its backoff: 5 ms doubling per failure to 1000 s, and at most 10 retries a second over all keys (the manifest's `rateLimits`) |
//! | `fatal` | logged and forgotten: it waits for its next event |
//!
//! Workers start once every cache the plugin reads has synced (the handler's start gate), as
//! controller-runtime's do after `WaitForCacheSync`; until then keys only gather in the queue.
//! The queue's figures are the `workqueue_*` metrics ([`WorkQueueMetrics`](crate::plugin::metrics::workqueue::WorkQueueMetrics)).

mod mapper;

use std::sync::Arc;

pub(crate) use mapper::KeyMapper;

use crate::informer::{Action, HandlerError};
use crate::plugin::delivery::runner::PluginHandler;
use crate::workqueue::WorkQueue;

/// A reconciler's workers: each takes keys from the queue and reconciles them on its own
/// [`PluginHandler`] (its own instance). Stopping shuts the queue down and ends them.
#[derive(Debug)]
pub struct Controller {
    queue: WorkQueue<String>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Controller {
    /// Starts one worker per handler on `queue`.
    pub fn start(name: &str, queue: WorkQueue<String>, handlers: Vec<Arc<PluginHandler>>) -> Self {
        let workers = handlers
            .into_iter()
            .map(|handler| {
                let (queue, name) = (queue.clone(), name.to_owned());
                tokio::spawn(async move { work(&name, &queue, &handler).await })
            })
            .collect();
        Self { queue, workers }
    }

    /// Shuts the queue down and ends the workers (a reconcile in progress runs to its end on
    /// its guest thread; its outcome is dropped).
    pub fn stop(&self) {
        self.queue.shut_down();
        for worker in &self.workers {
            worker.abort();
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One worker: reconciles keys until the queue shuts down.
async fn work(name: &str, queue: &WorkQueue<String>, handler: &PluginHandler) {
    while let Some(key) = queue.get().await {
        let result = handler.reconcile(key.clone()).await;
        match result {
            Ok(Action::AwaitChange) => queue.forget(&key),
            Ok(Action::RequeueAfter(after)) => {
                queue.forget(&key);
                queue.add_after(key.clone(), after);
            }
            Err(HandlerError::Retry(reason) | HandlerError::Panicked(reason)) => {
                let failures = queue.num_requeues(&key) + 1;
                tracing::debug!(plugin = name, key = %key, failures, reason = %reason, "reconcile failed; retrying with backoff");
                queue.add_rate_limited(key.clone());
            }
            Err(HandlerError::Fatal(reason)) => {
                tracing::warn!(plugin = name, key = %key, reason = %reason, "reconcile failed for good; the key waits for its next change");
                queue.forget(&key);
            }
        }
        queue.done(&key);
    }
}

//! A reconciler's calls through its [`PluginHandler`]: `reconcile(key)` and
//! `map-to-keys(obj)`, one call each on a guest thread with the failure policy applied, as a
//! delivery's (see [`reconcile`](crate::plugin::reconcile)).

use super::batch::{Ran, call_with};
use super::policy::apply_policy;
use super::{PluginHandler, Shared, Skipped, Slot};
use crate::informer::{Action, HandlerError, HandlerResult, Object};
use crate::plugin::contract::outcome::CallOutcome;
use crate::plugin::runtime::instance::PluginInstance;

impl PluginHandler {
    /// Reconciles `key` (a reconciler's cache key) on a guest thread, applying the failure
    /// policy as an event's delivery does: what its work queue does next (a trap is a retry
    /// with `onError: retry`; a quarantined plugin's keys are dropped, counted).
    pub async fn reconcile(&self, key: String) -> HandlerResult {
        let span = tracing::debug_span!("plugin_reconcile", plugin = %self.shared.name, key = %key);
        let done = self.one_call(span, move |instance| (instance.reconcile(&key), ())).await;
        match done {
            Ok(((), result)) => result,
            Err(Skipped::Quarantined) => {
                self.shared.metrics.dropped_event();
                Ok(Action::AwaitChange)
            }
            Err(Skipped::Failed(e)) => Err(HandlerError::Retry(e.retry_reason())),
        }
    }

    /// Asks a reconciler which primaries `obj` concerns (its `map-to-keys` export), on a guest
    /// thread, applying the failure policy to a trap: the keys, or none when the call failed
    /// (logged) or the plugin is quarantined.
    pub async fn map(&self, obj: Object) -> Vec<String> {
        let span = tracing::debug_span!("plugin_map", plugin = %self.shared.name, key = obj.key());
        let done = self
            .one_call(span, move |instance| match instance.map(&obj) {
                Ok(keys) => (CallOutcome::Ok, keys),
                Err(outcome) => (outcome, Vec::new()),
            })
            .await;
        match done {
            Ok((keys, Ok(_))) => keys,
            Ok((_, Err(error))) => {
                tracing::warn!(plugin = %self.shared.name, error = %error, "map-to-keys failed; the event maps to no key");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// Makes one call on a guest thread once the start gate is open (starting an instance if
    /// needed) and applies the failure policy to its outcome: the value the call gave with
    /// its outcome (`T::default()` when the instance did not start), and the policy's
    /// verdict; or why there was no call.
    async fn one_call<T: Default + Send + 'static>(
        &self,
        span: tracing::Span,
        call: impl FnOnce(&mut PluginInstance) -> (CallOutcome, T) + Send + 'static,
    ) -> Result<(T, HandlerResult), Skipped> {
        self.wait_for_start().await;
        let slot = self.take_slot().await?;
        let job = move |shared: &Shared, slot: &mut Slot, started| {
            let mut value = T::default();
            let (outcome, ended) = call_with(shared, slot, started, |instance, _| {
                let (outcome, made) = call(instance);
                value = made;
                outcome
            });
            let policy = apply_policy(shared, slot, &outcome);
            ((value, policy), Ran::one(started, ended))
        };
        self.on_guest_thread(span, slot, job).await
    }
}

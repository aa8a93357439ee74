//! What a registered handler receives: client-go's `ResourceEventHandler` and its
//! notifications.
//!
//! Handlers are async because wink's main handlers are wasm plugins whose calls run on a
//! blocking pool; a native handler simply returns a ready future. A handler's own failure is
//! a [`HandlerError`]: `Retry` asks the listener to call again later (with backoff, with the
//! newest state of the key), `Fatal` drops the event after recording it. A handler that
//! panics is caught at the notification (`Panicked`) and retried like `Retry`. A handler that
//! succeeded returns an [`Action`]: wait for the next change, or be called again for the same
//! object after a delay (controller-runtime's `Result{RequeueAfter}`).

use std::sync::Arc;
use std::time::Duration;

use std::panic::AssertUnwindSafe;

use async_trait::async_trait;
use futures::FutureExt;

use super::crash::panic_message;
use super::object::Object;

/// A handler's own failure for one event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// A transient failure: retry this key later, with backoff.
    #[error("retry: {0}")]
    Retry(String),
    /// A permanent failure for this event: record it and move on.
    #[error("fatal: {0}")]
    Fatal(String),
    /// The handler panicked (the message): counted, logged, and retried like `Retry`.
    #[error("panicked: {0}")]
    Panicked(String),
}

/// What a handler that succeeded asks for next (kube-rs's `Action`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Action {
    /// Nothing: the handler hears of the object again when it changes (or at a resync).
    #[default]
    AwaitChange,
    /// Call `on_update` again for this object after this delay, with its newest state, even
    /// if it does not change. A pending request for the same key keeps the earlier of the
    /// two times (as client-go's delaying queue does); the object's deletion cancels it.
    RequeueAfter(Duration),
}

/// The result of one handler call.
pub type HandlerResult = Result<Action, HandlerError>;

/// The result of a handler call that asks for nothing more.
pub const DONE: HandlerResult = Ok(Action::AwaitChange);

/// What became of one entry of a batch (see [`EventHandler::deliver_batch`]): the result of
/// each of its notifications that was attempted, in order. After a `Retry` the rest of the
/// entry is not attempted (it waits for the key's retry). Fewer results than notifications
/// without a `Retry` (none at all: the entry was not started) means the handler stopped the
/// batch early: what was not attempted is queued again, ahead of newer keys.
pub type EntryResults = Vec<HandlerResult>;

/// Receives the events of one informer, as client-go's `ResourceEventHandler` does.
///
/// Calls for one registration are serial, and per key they arrive in order. Every method
/// has a no-op default.
#[doc(alias = "ResourceEventHandler")]
#[async_trait]
pub trait EventHandler: Send + Sync + 'static {
    /// An object was added. `is_initial_list` is true for objects of the informer's initial
    /// list, and for the cache replayed to a handler registered after start.
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        let _ = (obj, is_initial_list);
        DONE
    }

    /// An object changed; on a resync `old` and `new` are the same object.
    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        let _ = (old, new);
        DONE
    }

    /// An object was deleted. `final_state_unknown` is true when the deletion was inferred
    /// on a relist (client-go's `DeletedFinalStateUnknown`) and `obj` is the last known state.
    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        let _ = (obj, final_state_unknown);
        DONE
    }

    /// Delivers the pending notifications of several keys at once: `batch[i]` are one key's
    /// notifications, to be delivered in order. Returns one [`EntryResults`] per entry.
    ///
    /// The default calls the methods above one notification at a time. A handler with a
    /// fixed cost per call — a plugin's hop to a blocking thread — overrides it to pay that
    /// cost once per batch; the listener hands it everything that is ready, up to
    /// [`MAX_BATCH`](super::listener::MAX_BATCH) keys.
    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        let mut out = Vec::with_capacity(batch.len());
        for entry in batch {
            let mut results = Vec::with_capacity(entry.len());
            for n in entry {
                let result = n.deliver(self).await;
                let retry = matches!(result, Err(HandlerError::Retry(_) | HandlerError::Panicked(_)));
                results.push(result);
                if retry {
                    break;
                }
            }
            out.push(results);
        }
        out
    }

    /// Delivers `batch` at once, without suspending, if this handler can; `None` sends it
    /// through [`deliver_batch`](Self::deliver_batch) instead. The listener asks this first:
    /// a call through `dyn EventHandler` to an `async` method allocates its future, a sizeable
    /// part of a lone event delivered in a microsecond (a plugin's, run on the delivering
    /// thread). Returns one [`EntryResults`] per entry, as `deliver_batch` does. The default
    /// declines.
    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let _ = batch;
        None
    }

    /// Whether an object added and deleted before this handler saw it is still delivered,
    /// as its delete. By default the two cancel out (the handler never saw the object, so it
    /// has nothing to forget); a handler that maps events to other keys — a reconciler's
    /// `KeyMapper`, as controller-runtime's event
    /// handlers enqueue on every event — must hear of it: the object's owner may need to act
    /// (an owned object deleted before its creation was seen is to be re-created).
    fn sees_vanished_objects(&self) -> bool {
        false
    }
}

/// One event as queued for a listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// An add.
    Add {
        /// The added object.
        obj: Object,
        /// Part of the initial list (or of the cache replayed to a late handler).
        initial: bool,
    },
    /// An update (old == new on resync).
    Update {
        /// The previous state.
        old: Object,
        /// The new state.
        new: Object,
    },
    /// A delete.
    Delete {
        /// The deleted object (its last known state when `final_state_unknown`).
        obj: Object,
        /// The deletion was inferred on a relist.
        final_state_unknown: bool,
    },
}

impl Notification {
    /// The key of the object this notification is about.
    pub fn key(&self) -> &str {
        self.object().key()
    }

    /// The newest object this notification carries.
    pub fn object(&self) -> &Object {
        match self {
            Self::Add { obj, .. } | Self::Delete { obj, .. } => obj,
            Self::Update { new, .. } => new,
        }
    }

    /// Delivers this notification to a handler. A panic in the handler is caught and
    /// returned as [`HandlerError::Panicked`].
    pub async fn deliver<H: EventHandler + ?Sized>(&self, handler: &H) -> HandlerResult {
        let call = async {
            match self {
                Self::Add { obj, initial } => handler.on_add(obj, *initial).await,
                Self::Update { old, new } => handler.on_update(old, new).await,
                Self::Delete { obj, final_state_unknown } => handler.on_delete(obj, *final_state_unknown).await,
            }
        };
        match AssertUnwindSafe(call).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => Err(HandlerError::Panicked(panic_message(&*panic))),
        }
    }
}

/// A handler built from one closure that receives every [`Notification`]; handy for native
/// handlers, tests and benchmarks.
pub struct FnHandler<F>(pub F);

#[async_trait]
impl<F> EventHandler for FnHandler<F>
where
    F: Fn(Notification) -> HandlerResult + Send + Sync + 'static,
{
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        (self.0)(Notification::Add { obj: obj.clone(), initial: is_initial_list })
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        (self.0)(Notification::Update { old: old.clone(), new: new.clone() })
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        (self.0)(Notification::Delete { obj: obj.clone(), final_state_unknown })
    }
}

/// Wraps a closure as a shared handler.
pub fn handler_fn<F>(f: F) -> Arc<dyn EventHandler>
where
    F: Fn(Notification) -> HandlerResult + Send + Sync + 'static,
{
    Arc::new(FnHandler(f))
}

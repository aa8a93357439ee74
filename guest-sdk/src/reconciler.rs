//! Reconcilers (the `reconciler` feature): the controller-runtime model, `wink:plugin@0.4.0`'s
//! `reconciler-plugin` world.
//!
//! The manifest's `reconcile:` section names the primary resource, the resources the plugin
//! owns and those it watches; the host turns every event on them into the [`Key`] of a
//! primary object and calls [`Reconciler::reconcile`] with it — one key at a time, never one
//! key twice at once, once more when the key changed during the call, and with exponential
//! backoff per key after an error while the other keys proceed. `reconcile` reads the current
//! state from the [`cache`](crate::cache) and makes the cluster match it:
//!
//! ```ignore
//! use wink_guest::{Action, HandlerError, Key, Reconciler, cache};
//!
//! #[derive(Default)]
//! struct Services;
//!
//! impl Reconciler for Services {
//!     fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError> {
//!         let Some(deployment) = cache::get(&cache::Resource::new("apps/v1", "Deployment"), &key.to_string())? else {
//!             return Ok(Action::AwaitChange); // deleted
//!         };
//!         // … create, patch or delete what it owns …
//!         Ok(Action::AwaitChange)
//!     }
//! }
//!
//! wink_guest::export_reconciler!(Services);
//! ```
//!
//! In `Cargo.toml`: `wink-guest = { …, features = ["reconciler"] }`.

use std::cell::RefCell;
use std::fmt;
use std::thread::LocalKey;

use crate::handler::{Action, HandlerError};
use crate::object::Object;

/// The key of a primary object: its namespace (none when cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl Key {
    /// A namespaced object's key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: Some(namespace.into()), name: name.into() }
    }

    /// A cluster-scoped object's key.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self { namespace: None, name: name.into() }
    }
}

/// `namespace/name`, or `name`: the cache key (`cache::get(…, &key.to_string())`).
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A reconciler. The host calls one method at a time on an instance.
pub trait Reconciler {
    /// Called after every (re)start with the manifest's `config` as JSON (`null` when
    /// absent); an error refuses to start, with that message.
    fn init(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Brings the primary object `key` names to the state it asks for. It may be gone
    /// (deleted): the cache says so. `Err(HandlerError::Retry)` retries the key with backoff;
    /// `Fatal` drops it until its next change; `Ok(Action::RequeueAfter(ms))` reconciles it
    /// again after that long.
    fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError>;

    /// For a watched resource mapped by the plugin (`mapTo: {plugin: true}`): the keys of the
    /// primaries an event on `obj` concerns. Runs for every event of the resource: keep it
    /// quick, and send no requests (the cache is there).
    fn map_to_keys(&mut self, obj: &Object) -> Vec<Key> {
        let _ = obj;
        Vec::new()
    }
}

/// Holds the plugin's reconciler once `init` succeeded.
pub type Slot<R> = RefCell<Option<R>>;

/// Exports one type implementing [`Reconciler`] and [`Default`] as the plugin's reconciler
/// (once, at the top level of a `cdylib` built with the `reconciler` feature).
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        const _: () = {
            $crate::__private::thread_local! {
                static WINK_RECONCILER: $crate::__private::ReconcilerSlot<$reconciler> =
                    const { $crate::__private::RefCell::new(::core::option::Option::None) };
            }

            struct WinkReconcilerExport;

            impl $crate::bindings::exports::wink::plugin::reconciler::Guest for WinkReconcilerExport {
                fn init(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::__private::reconciler_init(&WINK_RECONCILER, config)
                }

                fn reconcile(
                    key: $crate::bindings::wink::plugin::types::ObjectKey,
                ) -> ::core::result::Result<$crate::Action, $crate::HandlerError> {
                    $crate::__private::reconcile(&WINK_RECONCILER, key.namespace, key.name)
                }

                fn map_to_keys(
                    obj: &$crate::bindings::wink::plugin::types::EventObject,
                ) -> ::std::vec::Vec<$crate::bindings::wink::plugin::types::ObjectKey> {
                    $crate::__private::map_to_keys(&WINK_RECONCILER, obj)
                        .into_iter()
                        .map(|key| $crate::bindings::wink::plugin::types::ObjectKey {
                            namespace: key.namespace,
                            name: key.name,
                        })
                        .collect()
                }
            }

    $crate::bindings::export!(WinkReconcilerExport with_types_in $crate::bindings);
        };
    };
}

/// Creates a fresh reconciler, runs its `init`, and keeps it if that succeeds.
pub fn init<R: Reconciler + Default>(slot: &'static LocalKey<Slot<R>>, config: String) -> Result<(), String> {
    slot.with(|s| *s.borrow_mut() = None);
    let mut reconciler = R::default();
    reconciler.init(&config)?;
    slot.with(|s| *s.borrow_mut() = Some(reconciler));
    Ok(())
}

/// Reconciles a key.
pub fn reconcile<R: Reconciler>(
    slot: &'static LocalKey<Slot<R>>,
    namespace: Option<String>,
    name: String,
) -> Result<Action, HandlerError> {
    let key = Key { namespace, name };
    slot.with(|s| match s.borrow_mut().as_mut() {
        Some(reconciler) => reconciler.reconcile(&key),
        None => Err(HandlerError::fatal("wink-guest: reconcile called before a successful init")),
    })
}

/// Maps a watched object to keys (none before a successful `init`).
pub fn map_to_keys<R: Reconciler>(
    slot: &'static LocalKey<Slot<R>>,
    obj: &crate::bindings::wink::plugin::types::EventObject,
) -> Vec<Key> {
    let obj = Object::lent(obj);
    slot.with(|s| s.borrow_mut().as_mut().map(|reconciler| reconciler.map_to_keys(&obj)).unwrap_or_default())
}

/// The reconciler's work queue: keys of its primary resource to reconcile.
pub mod queue {
    use std::time::Duration;

    use super::Key;

    /// Reconciles `key` (any key of the primary resource) after `after`, or as soon as
    /// possible when it is zero. A key that already waits keeps the earlier time. Natively
    /// (unit tests), nothing is queued.
    pub fn enqueue(key: &Key, after: Duration) {
        #[cfg(target_arch = "wasm32")]
        {
            let key = crate::bindings::wink::plugin::types::ObjectKey {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            };
            crate::bindings::wink::plugin::queue::enqueue(&key, u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (key, after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter(Vec<String>);

    impl Reconciler for Counter {
        fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError> {
            self.0.push(key.to_string());
            if self.0.len() > 1 { Err(HandlerError::retry(self.0.join(","))) } else { Ok(Action::AwaitChange) }
        }
    }

    thread_local! {
        static SLOT: Slot<Counter> = const { RefCell::new(None) };
    }

    #[test]
    fn keys_reach_the_reconciler_after_init_and_print_as_cache_keys() {
        let early = reconcile(&SLOT, None, "n".into()).unwrap_err();
        assert_eq!(early, HandlerError::fatal("wink-guest: reconcile called before a successful init"));
        init(&SLOT, "null".into()).unwrap();
        assert_eq!(reconcile(&SLOT, Some("shop".into()), "web".into()), Ok(Action::AwaitChange));
        assert_eq!(reconcile(&SLOT, None, "node-1".into()), Err(HandlerError::retry("shop/web,node-1")));
        assert_eq!(Key::new("a", "b").to_string(), "a/b");
        assert_eq!(Key::cluster("b").to_string(), "b");
    }
}

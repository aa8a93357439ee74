//! client-go's SharedIndexInformer, in Rust: reflector, DeltaFIFO, indexer, processor.
//!
//! Data flows `ListerWatcher → Reflector → DeltaFifo → SharedIndexInformer::handle_deltas`
//! which updates the [`Indexer`] and then distributes notifications to every registered
//! listener's bounded, coalescing queue.
//!
//! The public API is what this module re-exports: the factory and the informer, the event
//! handler trait and its registrations, the read-only [`Store`] (and the [`Indexer`] that
//! writes one), objects, the list/watch contract a source implements, and the reflector and
//! DeltaFIFO with their options, as client-go exposes them. The modules themselves, and
//! what they keep to the crate (the processor, the listeners' pending queues, panic
//! containment), are internal.
//!
//! The maps touched on every event — the FIFO's items, the indexer's objects, each
//! listener's pending queue, the processor's listeners by namespace — hash with foldhash,
//! seeded at random per map, rather than std's SipHash: every event hashes its key a few
//! times per listener.

pub(crate) mod backoff;
pub(crate) mod crash;
pub(crate) mod delta_fifo;
pub(crate) mod doorbell;
pub(crate) mod factory;
pub(crate) mod handler;
pub(crate) mod indexer;
pub(crate) mod labels;
pub(crate) mod list_watch;
pub(crate) mod listener;
pub(crate) mod meta;
pub(crate) mod object;
pub(crate) mod pending_queue;
pub(crate) mod processor;
pub(crate) mod reflector;
pub(crate) mod reflector_stats;
pub(crate) mod shared_informer;
pub(crate) mod store;

#[cfg(test)]
mod test_support;

pub use backoff::{Backoff, BackoffConfig};
pub use delta_fifo::{Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, DeltaType, FifoClosed};
pub use factory::{InformerFactory, InformerLease, ResourceKey, SourceProvider};
pub use handler::{
    Action, DONE, EntryResults, EventHandler, FnHandler, HandlerError, HandlerResult, Notification, handler_fn,
};
pub use indexer::{
    IndexFunc, Indexer, IndexerError, NAMESPACE_INDEX, OWNER_UID_INDEX, namespace_index_func, owner_uid_index_func,
};
pub use labels::Labels;
pub use list_watch::{
    ListParams, ListerWatcher, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream,
};
pub use listener::{DeliveryObserver, Listener, ListenerOptions, MAX_BATCH, ObjectFilter};
pub use meta::{ObjectMeta, OwnerReference, OwnerReferences};
pub use object::{MAX_DEPTH, Object, ObjectError, object_key, split_key};
pub use processor::{MINIMUM_RESYNC_PERIOD, determine_resync_period};
pub use reflector::{MIN_WATCH_TIMEOUT, Reflector, ReflectorConfig, Transform, WatchErrorHandler};
pub use reflector_stats::{ReflectorCounts, ReflectorStats};
pub use shared_informer::{InformerConfig, InformerError, Registration, SharedIndexInformer};
pub use store::Store;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod options_tests;

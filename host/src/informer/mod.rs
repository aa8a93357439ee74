//! client-go's SharedIndexInformer, in Rust: reflector, DeltaFIFO, indexer, processor.
//!
//! Data flows `ListerWatcher → Reflector → DeltaFifo → SharedIndexInformer::handle_deltas`
//! which updates the [`Indexer`] and then distributes notifications to every registered
//! listener's bounded, coalescing queue.

pub mod backoff;
pub mod crash;
pub mod delta_fifo;
pub mod factory;
pub mod handler;
pub mod indexer;
pub mod labels;
pub mod list_watch;
pub mod listener;
pub mod object;
pub mod pending_queue;
pub mod processor;
pub mod reflector;
pub mod shared_informer;
pub mod store;

#[cfg(test)]
mod test_support;

pub use backoff::{Backoff, BackoffConfig};
pub use crash::PanicCounter;
pub use delta_fifo::{Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, DeltaType, FifoClosed, ProcessError};
pub use factory::{InformerFactory, InformerLease, ResourceKey, SourceProvider};
pub use handler::{EntryResults, EventHandler, FnHandler, HandlerError, HandlerResult, Notification, handler_fn};
pub use indexer::{IndexFunc, Indexer, IndexerError, NAMESPACE_INDEX, OWNER_UID_INDEX};
pub use labels::Labels;
pub use list_watch::{
    ListParams, ListerWatcher, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream,
};
pub use listener::{Listener, ListenerOptions, MAX_BATCH, ObjectFilter};
pub use object::{Object, ObjectError, ObjectMeta, OwnerReference, object_key, split_key};
pub use pending_queue::{Pending, PendingQueue};
pub use processor::{MINIMUM_RESYNC_PERIOD, Processor, determine_resync_period};
pub use reflector::{Reflector, ReflectorConfig, Transform, WatchErrorHandler};
pub use shared_informer::{InformerConfig, InformerError, Registration, SharedIndexInformer};
pub use store::Store;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod options_tests;

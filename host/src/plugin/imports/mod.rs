//! The host side of the interfaces a plugin imports: `log`, `cache`, `cluster`, the
//! `event-object` handles a 0.3.0 handler reads, and the WASI clocks.
//!
//! Each interface is implemented by its own small state type ([`LogSink`], [`CacheAccess`],
//! [`ClusterAccess`]) that lives in the store's
//! [`HostState`](crate::plugin::runtime::instance::HostState); tests call them directly, no
//! wasm needed. Every function is linked by hand, under the interface names of each contract
//! version, so that one implementation serves them all and guest strings are lifted as
//! bounded [`GuestText`](crate::plugin::runtime::guest_text::GuestText)s where the host only
//! reads them. Nothing else is linked: no other WASI interface, no sockets, no files.

pub mod cache;
pub mod clocks;
pub mod cluster;
pub mod cluster_link;
pub mod event_object;
pub mod log;
pub mod refusals;
pub mod wasi;

pub use cache::{CacheAccess, CacheResolver, CacheScope, NamespaceGrant};
pub use cluster::{ClusterAccess, ClusterContext, ClusterLink};
pub use log::LogSink;

//! The host side of the interfaces a plugin imports: `log`, `cache`, `cluster`, the
//! `event-object` handles a 0.3.0 handler reads, a reconciler's `queue` (0.4.0), and the
//! WASI clocks.
//!
//! Each capability is one module that owns its state and its linking: a small state type
//! ([`LogSink`], [`CacheAccess`], [`ClusterAccess`], [`LentObjects`]), a trait by which a
//! store's data hands it over ([`HasLog`], [`HasCache`], [`HasCluster`], [`HasLent`]), and a
//! `link` that defines its functions under the interface name of every contract version that
//! has it. The runtime composes them: its store data implements the traits, and [`link`]
//! links them all; tests call the state types directly, no wasm needed. Every function is
//! linked by hand, so that one implementation serves every version and guest strings are
//! lifted as bounded [`GuestText`](crate::plugin::contract::guest_text::GuestText)s where the
//! host only reads them. The WASI a component imports is linked per component ([`wasi`]):
//! the clocks ([`clocks`]) and randomness; nothing else: no files, no sockets.

pub(crate) mod cache;
pub(crate) mod clocks;
pub(crate) mod cluster;
pub(crate) mod cluster_link;
pub(crate) mod event_object;
pub(crate) mod log;
pub(crate) mod queue;
pub(crate) mod refusals;
pub(crate) mod wasi;

pub use cache::CacheAccess;
pub(crate) use cache::HasCache;
pub use cache::{CacheResolver, CacheScope};
pub use cluster::ClusterAccess;
pub use cluster::{ClusterContext, ClusterLink};
pub(crate) use cluster_link::HasCluster;
pub(crate) use event_object::HasLent;
pub use event_object::LentObjects;
pub use log::HasLog;
pub use log::LogSink;
pub(crate) use queue::HasQueue;
pub use queue::QueueAccess;

/// Links every host import of the contract (all versions) into `linker`.
pub fn link<T: HasLog + HasCache + HasCluster + HasLent + HasQueue>(
    linker: &mut wasmtime::component::Linker<T>,
) -> wasmtime::Result<()> {
    event_object::link(linker)?;
    queue::link(linker)?;
    log::link(linker)?;
    cache::link(linker)?;
    cluster_link::link(linker)?;
    Ok(())
}

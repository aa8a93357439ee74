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

pub mod cache;
pub mod clocks;
pub mod cluster;
pub mod cluster_link;
pub mod event_object;
pub mod log;
pub mod queue;
pub mod refusals;
pub mod wasi;

pub use cache::HasCache;
pub use cache::{CacheAccess, CacheResolver, CacheScope, NamespaceGrant};
pub use cluster::{ClusterAccess, ClusterContext, ClusterLink};
pub use cluster_link::HasCluster;
pub use event_object::{HasLent, LentObjects};
pub use log::{HasLog, LogSink};
pub use queue::{HasQueue, QueueAccess};

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

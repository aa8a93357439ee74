//! The host side of the interfaces a plugin imports: `log`, `cache`, `cluster`, the
//! `event-object` handles a 0.3.0 handler reads, a reconciler's `queue` (0.4.0), and the
//! WASI clocks.
//!
//! Each capability is one module that owns its state type ([`log::LogSink`],
//! [`cache::CacheAccess`], [`cluster::ClusterAccess`], [`event_object::LentObjects`],
//! [`queue::QueueAccess`]) and a `link` that defines its
//! functions under the interface name of every contract version that has it. [`state`]
//! gathers their states into one [`ImportState`] per instance, made from the plugin's
//! [`ImportContext`]; the runtime's store data hands it over through [`HasImports`] and
//! knows nothing of what it holds, and [`link`] links every capability. Tests call the state
//! types directly, no wasm needed. Every function is linked by hand, so that one
//! implementation serves every version and guest strings are lifted as bounded
//! [`GuestText`](crate::plugin::contract::guest_text::GuestText)s where the
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
pub(crate) mod state;
pub(crate) mod wasi;

pub use cache::{CacheResolver, CacheScope};
pub use cluster::{ClusterContext, ClusterLink};
pub use state::{HasImports, ImportContext, ImportState};

/// Links every host import of the contract (all versions) into `linker`.
pub fn link<T: HasImports>(linker: &mut wasmtime::component::Linker<T>) -> wasmtime::Result<()> {
    event_object::link(linker)?;
    queue::link(linker)?;
    log::link(linker)?;
    cache::link(linker)?;
    cluster_link::link(linker)?;
    Ok(())
}

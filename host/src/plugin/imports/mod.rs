//! The host side of the interfaces a plugin imports: `log` and `cache`.
//!
//! Each interface is implemented by its own small state type ([`LogSink`], [`CacheAccess`])
//! that lives in the store's [`HostState`](crate::plugin::runtime::instance::HostState); tests call them
//! directly, no wasm needed. `cache` implements bindgen's generated `Host` trait; `log` is
//! linked by hand so that its message is lifted as a bounded
//! [`GuestText`](crate::plugin::runtime::guest_text::GuestText).
//! Nothing else is linked: no WASI, no clocks, no sockets.

pub mod cache;
pub mod log;

pub use cache::{CacheAccess, CacheResolver, CacheScope, NamespaceGrant};
pub use log::LogSink;

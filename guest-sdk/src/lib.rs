//! `wink-guest`: write [wink](https://github.com/wink-rs/wink) handler plugins in Rust.
//!
//! A wink plugin is a WebAssembly component that implements the `wink:plugin/handler-plugin`
//! world (`wit/v0.4.0/`, version 0.4.0), or with the `reconciler` feature the
//! `reconciler-plugin` world ([`Reconciler`](crate::Reconciler), `export_reconciler!`). This crate hides the component-model
//! plumbing behind a [`Handler`] trait, a typed [`Object`], and safe wrappers over the host's
//! [`log`](mod@log), [`cache`], [`cluster`] and [`time`] imports.
//!
//! A handler's objects stay in the host until it reads them: each [`Object`] accessor fetches
//! its part once, on first use, so a handler that looks at a name and a label pays for a name
//! and a label, not for copying the whole object into the plugin on every event.
//!
//! ```no_run
//! use wink_guest::{Action, Handler, HandlerError, Object};
//!
//! #[derive(Default)]
//! struct Greeter;
//!
//! impl Handler for Greeter {
//!     fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
//!         wink_guest::info!("hello, {} {}", obj.kind(), obj.key());
//!         Ok(Action::AwaitChange)
//!     }
//! }
//!
//! wink_guest::export_handler!(Greeter);
//! ```
//!
//! Build the plugin crate as a `cdylib` for `wasm32-unknown-unknown` and turn the core module
//! into a component (`cargo xtask build-plugins` does both for the plugins in this repository).
//! The result imports only `wink:plugin/*` interfaces and, when [`time`] is used, the WASI
//! clocks.
//!
//! A plugin kept outside the wink repository depends on this crate by git or path and is
//! built with `cargo xtask build-plugins --only PATH`, or with cargo and
//! `wasm-tools component new`: see `docs/out-of-tree-plugins.md`.
//!
//! The handler's fields live as long as its WebAssembly instance, and the host ends an
//! instance after a trap, after a while without calls (five minutes by default), or when the
//! instance pool needs its place for another plugin: the next call starts a new instance and
//! calls `init` again, replaying no event — so fields are a cache, and what must survive is
//! read again from [`cache`] or kept in the cluster (see `wit/README.md`, "An instance's
//! life"). When the plugin is replaced (a new component or manifest deployed), the new version
//! starts empty and receives every current object as `on_add(obj, initial_list = true)` before
//! live events.
//!
//! The crate also compiles for the host's target, so a plugin's logic can be unit-tested
//! natively: there [`log`](mod@log) writes to stderr, [`cache`] reads fail with
//! [`CacheError::NotPermitted`] and [`cluster`] requests with
//! [`cluster::RequestError::Unavailable`].
//!
//! Cargo features:
//! - `k8s-openapi`: typed access to objects through the `k8s-openapi` crate
//!   ([`Object::metadata`], [`Object::typed`], [`Resource::of`]) and typed requests in the
//!   shape of kube-rs's `Api` (`Api::<Deployment>::namespaced(ns).get(name)`, `create`,
//!   `replace`, `patch`, `apply`, `delete`; `plugins/pdb-for-deployment` is a reconciler
//!   written with it);
//! - `reconciler`: a reconciler instead of a handler (the controller-runtime model: keys of a
//!   primary resource, a work queue, owned and watched resources; `Reconciler`,
//!   `export_reconciler!`, `queue::enqueue`).

#[cfg(feature = "k8s-openapi")]
mod api;
pub mod bindings;
pub mod cache;
pub mod cluster;
#[cfg(not(feature = "reconciler"))]
mod export;
mod handler;
mod lent;
pub mod log;
pub mod meta;
mod object;
#[cfg(feature = "reconciler")]
mod reconciler;
pub mod time;

#[cfg(feature = "k8s-openapi")]
pub use api::Api;
pub use cache::{CacheError, Resource};
pub use cluster::RequestError;
pub use handler::{Action, Handler, HandlerError, parse_config};
pub use object::{Object, OwnerReference, ParseError};
#[cfg(feature = "reconciler")]
pub use reconciler::{Key, Reconciler, queue};

/// The `serde_json` crate this SDK parses objects with.
pub use serde_json;

/// The `k8s-openapi` crate this SDK was built with, for typed objects.
#[cfg(feature = "k8s-openapi")]
pub use k8s_openapi;

/// The version of the WIT package (`wink:plugin`) this SDK implements.
pub const WIT_VERSION: &str = "0.4.0";

#[doc(hidden)]
pub mod __private {
    //! Support for the macros of this crate; not a public API.
    #[cfg(not(feature = "reconciler"))]
    pub use crate::export::{Slot, init, on_add, on_delete, on_update};
    #[cfg(feature = "reconciler")]
    pub use crate::reconciler::{Slot as ReconcilerSlot, init as reconciler_init, map_to_keys, reconcile};
    pub use std::cell::RefCell;
    pub use std::thread_local;
}

//! The wasm runtime: the one wasmtime engine and what a plugin's code runs in.
//!
//! - [`engine`]: the engine and the compiled-component cache, with [`ticker`], the thread
//!   that advances its epoch while guest code runs;
//!   [`cache_prune`]: keeping that cache under a size bound.
//! - [`loader`]: manifest + component → [`loader::LoadedPlugin`] (what `wink check` runs).
//! - [`instance`]: the sandbox ([`instance::Sandbox`]) and a live plugin instance, the one
//!   place the host's imports ([`imports`](super::imports)) are composed into a store, with
//!   [`limits`] (the memory limiter) and [`deadline`] (each call's deadline, and pausing a
//!   call that stalls).
//! - [`budget`]: the host's memory budget, which every deployed plugin reserves from;
//!   [`footprint`]: a component's memory before its first call.
//! - [`file_identity`]: which file some bytes came from, so that a file is hashed once.

pub(crate) mod budget;
pub(crate) mod cache_prune;
pub(crate) mod deadline;
pub(crate) mod engine;
pub(crate) mod file_identity;
pub(crate) mod footprint;
pub(crate) mod instance;
pub(crate) mod limits;
pub(crate) mod loader;
pub(crate) mod ticker;

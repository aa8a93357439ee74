//! The wasm runtime: the one wasmtime engine and what a plugin's code runs in.
//!
//! - [`engine`]: the engine and the compiled-component cache, with [`ticker`], the thread
//!   that advances its epoch while guest code runs;
//!   [`cache_prune`]: keeping that cache under a size bound.
//! - [`bindings`]: the only `bindgen!` of the WIT world, and `Object` conversions.
//! - [`instance`]: the sandbox ([`instance::Sandbox`]) and a live plugin instance, with
//!   [`limits`] (the memory limiter), [`deadline`] (each call's deadline, and pausing a
//!   call that stalls) and [`outcome`] (what a call can come to).
//! - [`pool`]: the threads guest code runs on; [`executor`]: what a thread knows of the
//!   tokio runtime it works for.
//! - [`budget`]: the host's memory budget, which every deployed plugin reserves from;
//!   [`footprint`]: a component's memory before its first call.
//! - [`file_identity`]: which file some bytes came from, so that a file is hashed once.
//! - [`guest_text`]: every string a guest hands the host, escaped onto one line and bounded.

pub mod bindings;
pub mod budget;
pub mod cache_prune;
pub mod deadline;
pub mod engine;
pub mod executor;
pub mod file_identity;
pub mod footprint;
pub mod guest_text;
pub mod instance;
pub mod limits;
pub mod outcome;
pub mod pool;
pub mod thread_cpu;
#[cfg(target_os = "linux")]
mod thread_priority;
pub mod ticker;

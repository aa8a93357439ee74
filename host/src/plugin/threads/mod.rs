//! The threads guest code runs on.
//!
//! - [`pool`]: the guest pool shared by every plugin of a host, with its watchdog and
//!   [`pool::block_in_place`] for a guest call that waits;
//! - [`executor`]: what a thread knows of the tokio runtime it works for;
//! - [`cpu`]: the CPU time a thread has used; `priority` (Linux): a thread's kernel id and
//!   moving a thread to the lowest CPU priority.

pub(crate) mod cpu;
pub(crate) mod executor;
pub(crate) mod pool;
#[cfg(target_os = "linux")]
mod priority;

//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub mod memory;

pub use memory::{MemorySource, MemorySourceOptions};

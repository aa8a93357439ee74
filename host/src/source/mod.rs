//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub mod dir;
pub mod memory;

pub use dir::{DirSource, DirSourceError};
pub use memory::{MemorySource, MemorySourceOptions};

//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub mod dir;
pub mod kube;
pub mod memory;

pub use dir::{DirSource, DirSourceError};
pub use kube::{KubeListerWatcher, KubeSource, KubeSourceError, ResolvedResource};
pub use memory::{MemorySource, MemorySourceOptions};

//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub mod dir;
mod dir_read;
pub mod documents;
pub mod kube;
pub mod memory;
pub mod nesting;
pub mod placement;
pub mod scope;

pub use dir::{DirSource, DirSourceError, DirSourceOptions};
pub use kube::{KubeListerWatcher, KubeSource, KubeSourceError, ResolvedResource};
pub use memory::{MemorySource, MemorySourceOptions};

//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub(crate) mod dir;
mod dir_cluster;
mod dir_read;
pub(crate) mod documents;
pub(crate) mod kube;
mod kube_config;
pub(crate) mod memory;
mod memory_cluster;
mod memory_read;
mod memory_rewind;
pub(crate) mod nesting;
pub(crate) mod placement;
pub(crate) mod scope;
pub(crate) mod yaml11;

pub use dir::{DirSource, DirSourceError, DirSourceOptions};
pub use documents::{ManifestObject, ParsedManifest, parse_manifest_file};
pub use kube::{KubeListerWatcher, KubeSource, KubeSourceError, ResolvedResource};
pub use kube_config::load_config;
pub use memory::{MemorySource, MemorySourceOptions, Revision, Write};
pub use memory_cluster::MemoryCluster;
pub use memory_read::{ListPage, ResourceVersionMatch, Selects};
pub use memory_rewind::{Recorded, RewindError};
pub use scope::Scope;

//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub(crate) mod dir;
mod dir_cluster;
mod dir_read;
pub(crate) mod documents;
pub(crate) mod kube;
mod kube_config;
pub(crate) mod placement;
mod spec;

pub use dir::DirSource;
pub use dir::{DirSourceError, DirSourceOptions};
pub use documents::parse_manifest_file;
pub use kube::KubeSourceError;
pub use kube::{KubeListerWatcher, KubeSource};
pub use kube_config::load_config;
pub use spec::{OpenError, OpenedSource};
pub use spec::{OpenOptions, SourceSpec};

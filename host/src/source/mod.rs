//! Sources of objects: implementations of [`ListerWatcher`](crate::informer::ListerWatcher).

pub(crate) mod dir;
mod dir_cluster;
mod dir_read;
pub(crate) mod documents;
pub(crate) mod kube;
mod kube_config;
pub(crate) mod placement;
mod spec;

pub use dir::{DirSource, DirSourceError, DirSourceOptions};
pub use documents::{ManifestObject, ParsedManifest, parse_manifest_file};
pub use kube::{KubeListerWatcher, KubeSource, KubeSourceError};
pub use kube_config::load_config;
pub use spec::{OpenError, OpenOptions, OpenedSource, SourceSpec, UnknownSource};

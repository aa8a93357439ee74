//! The embedded cluster, in one room: what `--source dir:` runs plugins against, what
//! `wink run --serve-api` serves to kubectl, and what the tests' API server is.
//!
//! - the store: [`MemorySource`], one kind's objects and their watch cache (memory.rs,
//!   memory_read.rs: LIST pages at a resourceVersion, WATCH from one), and
//!   [`MemoryCluster`], one store per kind sharing one [`Revision`];
//! - the write rules: [`EmbeddedClient`] executes a plugin's or kubectl's
//!   [`Request`](crate::cluster::Request) on any [`EmbeddedCluster`] with the API server's
//!   rules (rules.rs, and [`typed`] for built-in kinds' schemas), over the write rules of
//!   the `wink-apiserver` crate;
//! - the controllers: [`controllers`] plays kube-controller-manager's garbage collector and
//!   namespace controller on the writes of the clusters that run them;
//! - the HTTP face: [`http`], the Kubernetes API over an embedded cluster, with RBAC for
//!   impersonated requests.
//!
//! A write goes one way: client → rules → store. The directory source
//! ([`DirSource`](crate::source::DirSource)) is an embedded cluster whose stores the files
//! fill.

mod client;
mod controllers;
pub mod http;
mod memory;
mod memory_cluster;
mod memory_read;
#[cfg(any(test, feature = "testing"))]
mod memory_rewind;
mod memory_view;
mod rules;
pub(crate) mod typed;

pub use client::NamespacePhase;
pub(crate) use client::SYSTEM_NAMESPACES;
pub(crate) use client::stored_namespace_phase;
pub use client::{Collection, EmbeddedClient, EmbeddedCluster};
pub use http::{ApiOptions, Served, router, serve_api};
pub use memory::Revision;
pub use memory::{MemorySource, MemorySourceOptions, Write};
pub use memory_cluster::MemoryCluster;
pub(crate) use memory_read::Selects;
pub use memory_read::{ListPage, ResourceVersionMatch};
#[cfg(any(test, feature = "testing"))]
pub use memory_rewind::{Recorded, RewindError};
pub(crate) use memory_view::shared_storage;
pub use rules::Outcome;

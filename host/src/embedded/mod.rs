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
pub mod typed;

pub use client::{
    Collection, EmbeddedClient, EmbeddedCluster, NamespacePhase, SYSTEM_NAMESPACES, stored_namespace_phase,
};
pub use http::{ApiOptions, Served, ServedCluster, router, serve_api};
pub use memory::{MemorySource, MemorySourceOptions, Revision, Write};
pub use memory_cluster::MemoryCluster;
pub use memory_read::{ListPage, ResourceVersionMatch, Selects};
#[cfg(any(test, feature = "testing"))]
pub use memory_rewind::{Recorded, RewindError};
pub use memory_view::{Conversion, shared_storage};
pub use rules::Outcome;

//! wink: Kubernetes event handlers as sandboxed WebAssembly components.
//!
//! - [`informer`]: client-go's SharedIndexInformer in Rust (reflector, DeltaFIFO, indexer,
//!   processor), usable on its own with native handlers.
//! - [`source`]: where objects come from (an API server, a directory, memory).
//! - [`workqueue`]: client-go's work queue of keys, for reconcilers.
//! - [`plugin`]: handler plugins — manifests, the wasmtime sandbox, the registry that
//!   deploys them onto shared informers.
//! - [`app`]: the `wink` command's subcommands, as library functions.
//! - [`logging`]: the `wink` command's log output (text or JSON lines).
#![allow(
    rustdoc::private_intra_doc_links,
    reason = "module docs describe the rooms inside them (`cargo doc --document-private-items`)"
)]

pub mod app;
pub mod cluster;
pub mod crd;
pub mod embedded;
pub(crate) mod errors;
pub(crate) mod fswatch;
pub mod informer;
pub mod kube;
pub mod logging;
pub mod oci;
pub mod plugin;
pub mod replay;
pub(crate) mod serve;
pub mod shard;
pub mod source;
pub mod workqueue;

//! wink: Kubernetes event handlers as sandboxed WebAssembly components.
//!
//! - [`informer`]: client-go's SharedIndexInformer in Rust (reflector, DeltaFIFO, indexer,
//!   processor), usable on its own with native handlers.
//! - [`source`]: where objects come from (an API server, a directory, memory).
pub mod informer;
pub mod source;

//! wink: Kubernetes event handlers as sandboxed WebAssembly components.
pub mod informer;

//! The Kubernetes API server's write semantics, as pure functions over JSON objects.
//!
//! wink needs an API server's write rules in three places: the embedded cluster (objects read
//! from manifest files, plus plugins' writes held in memory), `wink run --serve-api` (kubectl
//! talking to that cluster), and the tests' local API server. Each has its own store — the
//! objects, list and watch, the resourceVersion counter. This crate supplies the rules such a
//! store applies inside its lock: given the stored object (or none) and a request, the new
//! object ([`Write`]) or the error the API server would answer ([`Status`]).
//!
//! - [`create()`], [`update()`], [`patch()`] (JSON, merge, strategic merge, server-side apply)
//!   and [`delete()`]: the writes; each module's docs ([`mod@create`], [`mod@update`],
//!   [`mod@patch`], [`mod@apply`], [`mod@delete`]) list its rules.
//! - [`Status`]: the metav1.Status error, with the API server's messages and wire JSON.
//! - [`ResourceDef`]: what the rules need to know of a resource type, from a built-in table
//!   or a CustomResourceDefinition.
//! - [`validate`]: name, label and annotation rules; [`object`]: metadata accessors.
//! - [`Context`]: the clock and randomness, fixed in tests.
//!
//! The store stamps `metadata.resourceVersion` on what it stores; nothing here picks one.
//!
//! ```
//! use serde_json::json;
//! use wink_apiserver::{FixedContext, ResourceDef, Write, WriteOptions, create};
//!
//! let configmaps = ResourceDef::built_in("", "v1", "ConfigMap", "configmaps", true, false);
//! let ctx = FixedContext::at_unix(0);
//! let obj = json!({"metadata": {"name": "settings"}, "data": {"a": "1"}});
//! let Write::Put(stored) = create(&configmaps, None, Some("default"), obj, &WriteOptions::default(), &ctx)?
//! else { unreachable!() };
//! assert_eq!(stored["metadata"]["creationTimestamp"], "1970-01-01T00:00:00Z");
//! # Ok::<(), wink_apiserver::Status>(())
//! ```

pub mod apply;
mod context;
pub mod crd_status;
pub mod create;
pub mod data_keys;
pub mod defaults;
pub mod delete;
mod field_error;
pub mod fieldset;
pub mod managed_fields;
pub mod object;
pub mod patch;
mod resource;
pub mod secret;
mod status;
pub mod strategic;
pub mod update;
pub mod validate;
mod write;

pub use context::{Context, FixedContext, NAME_SUFFIX_ALPHABET, NAME_SUFFIX_LEN, SystemContext};
pub use create::{assign_name, create};
pub use delete::{DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Preconditions, PropagationPolicy, delete};
pub use field_error::{FieldError, FieldErrorKind};
pub use fieldset::FieldSet;
pub use managed_fields::ManagedEntry;
pub use patch::{PatchType, patch};
pub use resource::{CrdError, ResourceDef};
pub use status::{Status, StatusCause, StatusDetails, StatusReason};
pub use update::update;
pub use write::{Subresource, Write, WriteOptions};

#[cfg(test)]
mod test_support;

//! Deploying plugins: from a folder (or a pulled artifact) to a running, listening plugin.
//!
//! - [`manifest`]: the plugin's YAML manifest (its kinds, label selectors and RBAC rules are
//!   [`crate::kube`]'s vocabulary).
//! - [`permissions`]: what a plugin may ask of the cluster (RBAC-shaped rules), the
//!   operator's [`permissions::Policy`] that caps them, and request budgets.
//! - [`loader`]: manifest + component → [`loader::LoadedPlugin`] (what `wink check` runs).
//! - [`registry`]: the deployed plugins: deploy, replace, remove, folder rescans, with
//!   [`fingerprint`] (plugin file digests remembered by size and modification time);
//!   [`start`]: whether a plugin starts as it deploys or on its first event; [`assignment`]:
//!   which member of a shard group runs which plugin (and object).

pub mod assignment;
pub mod fingerprint;
pub mod loader;
pub mod manifest;
pub mod permissions;
pub mod registry;
pub(crate) mod schema;
pub mod start;

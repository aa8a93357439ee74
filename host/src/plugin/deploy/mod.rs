//! Deploying plugins: from a folder (or a pulled artifact) to a running, listening plugin.
//!
//! - [`manifest`], [`selector`]: the plugin's YAML manifest and Kubernetes label selectors;
//!   [`known_kinds`]: the kinds Kubernetes serves without a CRD (`wink check` warns about
//!   others).
//! - [`permissions`]: what a plugin may ask of the cluster (RBAC-shaped rules), the
//!   operator's [`permissions::Policy`] that caps them, and request budgets.
//! - [`loader`]: manifest + component → [`loader::LoadedPlugin`] (what `wink check` runs).
//! - [`registry`]: the deployed plugins: deploy, replace, remove, folder rescans, with
//!   [`fingerprint`] (plugin file digests remembered by size and modification time);
//!   [`start`]: whether a plugin starts as it deploys or on its first event.

pub mod fingerprint;
pub mod known_kinds;
pub mod loader;
pub mod manifest;
pub mod permissions;
pub mod registry;
pub(crate) mod schema;
pub mod selector;
pub mod start;

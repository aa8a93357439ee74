//! Deploying plugins: from a folder (or a pulled artifact) to a running, listening plugin.
//!
//! - [`registry`]: the deployed plugins: deploy, replace, remove, folder rescans, with
//!   [`fingerprint`] (plugin file digests remembered by size and modification time);
//!   [`start`]: whether a plugin starts as it deploys or on its first event; [`assignment`]:
//!   which member of a shard group runs which plugin (and object).
//!
//! A plugin's files become a runnable plugin in [`loader`](super::runtime::loader); what its
//! manifest says is [`manifest`](super::manifest)'s.

pub(crate) mod assignment;
pub(crate) mod fingerprint;
pub(crate) mod registry;
pub(crate) mod start;

//! Scale-out: wink replicas share the plugins through Kubernetes Leases
//! (`wink run --shard-group NAME`).
//!
//! - [`lease`]: each member holds a Lease of its own in the group, renewed periodically; the
//!   live members are those whose Leases keep changing; a member that cannot renew fences
//!   itself before anyone can count it dead.
//! - [`Assignment`]: plugins (and shardable plugins' objects) are assigned to live members
//!   by rendezvous hashing, so a member joining or leaving moves about 1/N of them; the
//!   registry delivers by it, so it lives beside the registry.
//! - [`group`]: the member's loop — renew, look at the group, hand plugins over — and the
//!   [`Ownership`](crate::plugin::Ownership) the registry deploys by.

pub(crate) mod group;
pub(crate) mod lease;

pub use crate::plugin::deploy::assignment::Assignment;
pub(crate) use group::{GroupOptions, ShardGroup};
pub use lease::LeaseOptions;
pub(crate) use lease::Membership;

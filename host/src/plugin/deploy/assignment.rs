//! Who runs what: rendezvous (highest random weight) hashing over the live members of a
//! shard group. Every member computes the same answer from the same member list, so no
//! coordinator is needed; a member joining or leaving moves only the keys it wins or held
//! (about 1/N of them).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::informer::Object;
use crate::plugin::manifest::ShardBy;

/// The weight of `member` for `key`: the first 8 bytes of SHA-256(key, member) — the same
/// on every member, every architecture and every version.
fn weight(key: &str, member: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(key.as_bytes());
    hasher.update([0]);
    hasher.update(member.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes)
}

/// The live members of a group, as one member sees them, and this member's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// This member's identity.
    pub me: Arc<str>,
    /// The live members, sorted (empty while this member is fenced: it owns nothing).
    pub members: Vec<String>,
}

impl Assignment {
    /// The assignment of `me` among `members`.
    pub fn new(me: &str, mut members: Vec<String>) -> Self {
        members.sort();
        members.dedup();
        Self { me: me.into(), members }
    }

    /// The member that owns `key`, if any member is live.
    pub fn owner(&self, key: &str) -> Option<&str> {
        self.members.iter().max_by_key(|m| (weight(key, m), m.as_str())).map(String::as_str)
    }

    /// Whether this member owns `key`.
    pub fn owns(&self, key: &str) -> bool {
        self.owner(key) == Some(&*self.me)
    }

    /// Whether this member is in the group (not fenced).
    pub fn is_member(&self) -> bool {
        self.members.iter().any(|m| **m == *self.me)
    }

    /// Whether this member delivers `obj` of the shardable plugin `plugin`.
    pub fn owns_object(&self, plugin: &str, by: ShardBy, obj: &Object) -> bool {
        let slice = match by {
            ShardBy::Namespace => format!("{plugin}/{}", obj.namespace().unwrap_or_default()),
            ShardBy::Object => format!("{plugin}/{}", obj.key()),
        };
        self.owns(&slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("member-{i}")).collect()
    }

    #[test]
    fn every_member_computes_the_same_owner_and_each_key_has_one() {
        let views: Vec<Assignment> = members(3).iter().map(|m| Assignment::new(m, members(3))).collect();
        for i in 0..300 {
            let key = format!("plugin-{i}");
            let owners: Vec<bool> = views.iter().map(|v| v.owns(&key)).collect();
            assert_eq!(owners.iter().filter(|o| **o).count(), 1, "{key}: {owners:?}");
            assert!(views.windows(2).all(|w| w[0].owner(&key) == w[1].owner(&key)));
        }
    }

    /// A member joining takes about 1/N of the keys and moves none between the others; a
    /// member leaving hands out only its own.
    #[test]
    fn a_membership_change_moves_only_about_one_nth_of_the_keys() {
        let keys: Vec<String> = (0..4000).map(|i| format!("plugin-{i}")).collect();
        let three = Assignment::new("member-0", members(3));
        let four = Assignment::new("member-0", members(4));
        let moved: Vec<&String> = keys.iter().filter(|k| three.owner(k) != four.owner(k)).collect();
        assert!(moved.iter().all(|k| four.owner(k) == Some("member-3")), "keys move only to the newcomer");
        let share = moved.len() as f64 / keys.len() as f64;
        assert!((0.2..0.3).contains(&share), "about a quarter moved: {share}");
        let two = Assignment::new("member-0", members(2));
        for key in &keys {
            if three.owner(key) != Some("member-2") {
                assert_eq!(three.owner(key), two.owner(key), "{key} stays put");
            }
        }
    }

    #[test]
    fn a_fenced_member_owns_nothing() {
        let fenced = Assignment::new("member-0", Vec::new());
        assert!(!fenced.is_member());
        assert!(!fenced.owns("plugin-1"));
        assert_eq!(fenced.owner("plugin-1"), None);
    }
}

//! A member's loop in its shard group, and the [`Ownership`] its registry deploys by.
//!
//! Every renew period the member renews its Lease, looks at the group's Leases, and hands
//! plugins over ([`PluginRegistry::rebalance`]):
//! - a plugin this member loses (a member joined and won it) is stopped at once;
//! - a plugin it gains from a member that is gone (Lease expired or released) starts at once;
//! - a plugin it gains from a member still live (this member just joined, or the other one
//!   just lost it) starts one renew period later, by when that member has seen the new group
//!   and stopped it: two members run one plugin at once for at most the time the old owner
//!   takes to stop it, and never after its Lease has expired;
//! - a member that cannot renew its Lease fences itself (stops everything) a Lease duration
//!   less two renew periods after its last renewal, before anyone can count it dead;
//! - leaving (SIGTERM) stops every plugin (calls in flight finish), then releases the Lease, so
//!   the others take over at their next look.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Assignment;
use super::lease::Membership;
use crate::errors::Chain;
use crate::plugin::{Ownership, PluginRegistry};

/// How a member takes part in its group, beyond its Lease.
#[derive(Clone, Debug)]
pub(crate) struct GroupOptions {
    /// How long a plugin gained from a live member waits before starting (the others' look
    /// period: one renew period).
    pub grace: Duration,
}

struct View {
    current: Assignment,
    /// The assignment before the last change, while plugins gained from live members wait.
    previous: Assignment,
    changed_at: Instant,
}

/// The group's metrics (`wink_shard_*`).
#[derive(Clone, Debug, Default)]
struct ShardMetrics {
    members: Gauge,
    owned: Gauge,
    parked: Gauge,
    changes: Counter,
}

/// A member of a shard group (its [`Ownership`] view is shared with the registry).
pub(crate) struct ShardGroup {
    view: RwLock<View>,
    options: GroupOptions,
    metrics: ShardMetrics,
}

impl std::fmt::Debug for ShardGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardGroup").field("members", &self.view.read().current.members).finish_non_exhaustive()
    }
}

impl ShardGroup {
    /// A member named `me`, not in the group yet (it owns nothing until its first look).
    pub fn new(me: &str, options: GroupOptions) -> Self {
        let empty = Assignment::new(me, Vec::new());
        let view = View { current: empty.clone(), previous: empty, changed_at: Instant::now() };
        Self { view: RwLock::new(view), options, metrics: ShardMetrics::default() }
    }

    /// Adds the group's metrics to a Prometheus registry, as `wink_shard_*`.
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("wink_shard");
        r.register(
            "members",
            "Live members of the shard group, as this member sees them",
            self.metrics.members.clone(),
        );
        r.register("owned_plugins", "Plugins this member runs", self.metrics.owned.clone());
        r.register("parked_plugins", "Plugins found but run by another member", self.metrics.parked.clone());
        r.register("membership_changes", "Changes of the group's live members seen", self.metrics.changes.clone());
    }

    /// This member's name.
    pub fn identity(&self) -> String {
        self.view.read().current.me.to_string()
    }

    /// The live members as last seen (empty while fenced).
    pub fn members(&self) -> Vec<String> {
        self.view.read().current.members.clone()
    }

    /// Takes in a new look at the group; returns whether it changed.
    pub fn update(&self, live: Vec<String>) -> bool {
        let mut view = self.view.write();
        let next = Assignment::new(&view.current.me, live);
        if next == view.current {
            if view.changed_at.elapsed() >= self.options.grace {
                view.previous = view.current.clone();
            }
            return false;
        }
        // Joining: who ran what before is the group without this member.
        let previous = if view.current.is_member() {
            view.current.clone()
        } else {
            let others = next.members.iter().filter(|m| **m != *next.me).cloned().collect();
            Assignment::new(&next.me, others)
        };
        tracing::info!(members = ?next.members, member = %next.me, fenced = !next.is_member(), "shard group changed");
        self.metrics.changes.inc();
        self.metrics.members.set(i64::try_from(next.members.len()).unwrap_or(i64::MAX));
        *view = View { current: next, previous, changed_at: Instant::now() };
        true
    }

    /// Updates the gauges; logs the plugins this member runs when the group changed.
    async fn report(&self, registry: &PluginRegistry, changed: bool) {
        let owned: Vec<String> = registry.status().await.into_iter().map(|s| s.name).collect();
        self.metrics.owned.set(i64::try_from(owned.len()).unwrap_or(i64::MAX));
        self.metrics.parked.set(i64::try_from(registry.parked().len()).unwrap_or(i64::MAX));
        if changed {
            tracing::info!(member = %self.identity(), owned = owned.len(), plugins = ?owned, "plugins run by this member");
        }
    }

    /// Runs the member's loop until `cancel` fires, then leaves the group: stops every plugin
    /// and releases the Lease.
    pub async fn run(
        self: Arc<Self>,
        mut membership: Membership,
        registry: Arc<PluginRegistry>,
        cancel: CancellationToken,
    ) {
        let renew = membership.options().renew;
        let mut tick = tokio::time::interval(renew);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = cancel.cancelled() => break,
            }
            // Each step is bounded, so that fencing is never late for a hung API server.
            match tokio::time::timeout(renew / 2, membership.renew()).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::warn!(error = %Chain(&err), "cannot renew this member's Lease"),
                Err(_) => tracing::warn!("renewing this member's Lease timed out"),
            }
            let live = match tokio::time::timeout(renew / 2, membership.observe()).await {
                Ok(Ok(live)) => live,
                Ok(Err(err)) => {
                    tracing::warn!(error = %Chain(&err), "cannot list the shard group's Leases");
                    self.members()
                }
                Err(_) => self.members(),
            };
            let me = membership.options().identity.clone();
            let live = if membership.holds() { live } else { live.into_iter().filter(|m| *m != me).collect() };
            let changed = self.update(live);
            registry.rebalance().await;
            self.report(&registry, changed).await;
        }
        tracing::info!("leaving the shard group: stopping this member's plugins");
        self.update(Vec::new());
        registry.rebalance().await;
        if let Err(err) = membership.release().await {
            tracing::warn!(error = %Chain(&err), "cannot release this member's Lease (it expires by itself)");
        }
    }
}

impl Ownership for ShardGroup {
    fn owns(&self, name: &str) -> bool {
        let view = self.view.read();
        if !view.current.owns(name) {
            return false;
        }
        if view.previous.owns(name) || view.changed_at.elapsed() >= self.options.grace {
            return true;
        }
        // Gained: wait for a previous owner that is still live to stop it.
        match view.previous.owner(name) {
            Some(owner) => !view.current.members.iter().any(|m| m == owner),
            None => true,
        }
    }

    fn assignment(&self) -> Option<Assignment> {
        let view = self.view.read();
        view.current.is_member().then(|| view.current.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i}")).collect()
    }

    /// A plugin gained from a live member waits one grace period; one gained from a member
    /// that left starts at once; one already run is kept.
    #[tokio::test(start_paused = true)]
    async fn plugins_gained_from_live_members_wait_for_them_to_stop() {
        let group = ShardGroup::new("m3", GroupOptions { grace: Duration::from_secs(1) });
        assert!(!group.owns("p") && group.assignment().is_none(), "not a member yet");
        group.update(names(4));
        let mine: Vec<String> =
            (0..200).map(|i| format!("p{i}")).filter(|p| group.view.read().current.owns(p)).collect();
        assert!(!mine.is_empty());
        assert!(mine.iter().all(|p| !group.owns(p)), "joining: the previous owners are live");
        tokio::time::sleep(Duration::from_secs(1)).await;
        group.update(names(4));
        assert!(mine.iter().all(|p| group.owns(p)), "after the grace period");
        // m0 dies: what it ran comes to this member at once (if it wins it).
        let before = group.view.read().current.clone();
        group.update(vec!["m1".into(), "m2".into(), "m3".into()]);
        let from_dead: Vec<String> = (0..400)
            .map(|i| format!("p{i}"))
            .filter(|p| before.owner(p) == Some("m0") && group.view.read().current.owns(p))
            .collect();
        assert!(!from_dead.is_empty());
        assert!(from_dead.iter().all(|p| group.owns(p)));
        assert!(mine.iter().all(|p| group.owns(p)), "kept");
        // Fenced: nothing.
        group.update(vec!["m1".into(), "m2".into()]);
        assert!(!group.owns(&mine[0]) && group.assignment().is_none());
    }
}

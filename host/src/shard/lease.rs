//! A member's Lease (`coordination.k8s.io/v1`) and its view of the group's Leases.
//!
//! Each member holds a Lease of its own, `wink-{group}-{identity}` in the group's namespace,
//! labelled `wink.dev/shard-group={group}`, with itself as `holderIdentity`; it renews it
//! every renew period (an update at the version it read: optimistic concurrency). A member is
//! live while its Lease keeps changing: as client-go's leader election does, liveness is
//! judged by when this member *observed* a Lease change (its own clock), never by comparing
//! clocks with the `renewTime` another machine wrote. A member that cannot renew its own Lease
//! for a Lease duration less two renew periods counts itself out (fencing) before anyone can
//! count it dead.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, ListParams, PostParams};
use tokio::time::Instant;

/// The label naming a Lease's shard group.
pub(crate) const GROUP_LABEL: &str = "wink.dev/shard-group";

/// How a member takes part in its group.
#[derive(Clone, Debug)]
pub struct LeaseOptions {
    /// The group's name.
    pub group: String,
    /// This member's identity (unique in the group).
    pub identity: String,
    /// The namespace of the group's Leases.
    pub namespace: String,
    /// How long a Lease lasts without renewal.
    pub duration: Duration,
    /// How often Leases are renewed and the group looked at.
    pub renew: Duration,
}

impl LeaseOptions {
    /// The name of this member's Lease: `wink-{group}-{identity}`, as a DNS subdomain.
    pub fn lease_name(&self) -> String {
        let raw = format!("wink-{}-{}", self.group, self.identity).to_lowercase();
        let name: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
        name.chars().take(253).collect::<String>().trim_end_matches('-').to_owned()
    }
}

/// A member's Lease and what it has observed of the others'.
pub(crate) struct Membership {
    api: Api<Lease>,
    options: LeaseOptions,
    /// Each Lease's last resourceVersion seen, its holder, and when it was seen to change.
    observed: HashMap<String, (String, String, Instant)>,
    /// When this member's Lease was last renewed.
    renewed: Option<Instant>,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership").field("options", &self.options).finish_non_exhaustive()
    }
}

fn now_micro() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl Membership {
    /// A member of `options.group`, through `client`.
    pub fn new(client: kube::Client, options: LeaseOptions) -> Self {
        let api = Api::namespaced(client, &options.namespace);
        Self { api, options, observed: HashMap::new(), renewed: None }
    }

    /// The options.
    pub fn options(&self) -> &LeaseOptions {
        &self.options
    }

    fn lease(&self, resource_version: Option<String>, acquired: Option<MicroTime>) -> Lease {
        let labels = BTreeMap::from([(GROUP_LABEL.to_owned(), self.options.group.clone())]);
        Lease {
            metadata: ObjectMeta {
                name: Some(self.options.lease_name()),
                namespace: Some(self.options.namespace.clone()),
                labels: Some(labels),
                resource_version,
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.options.identity.clone()),
                lease_duration_seconds: i32::try_from(self.options.duration.as_secs().max(1)).ok(),
                acquire_time: Some(acquired.unwrap_or_else(now_micro)),
                renew_time: Some(now_micro()),
                ..LeaseSpec::default()
            }),
        }
    }

    /// Creates or renews this member's Lease (an update at the version read).
    pub async fn renew(&mut self) -> Result<(), kube::Error> {
        let name = self.options.lease_name();
        match self.api.get_opt(&name).await? {
            None => {
                self.api.create(&PostParams::default(), &self.lease(None, None)).await?;
            }
            Some(current) => {
                let acquired = current.spec.and_then(|s| s.acquire_time);
                let lease = self.lease(current.metadata.resource_version, acquired);
                self.api.replace(&name, &PostParams::default(), &lease).await?;
            }
        }
        self.renewed = Some(Instant::now());
        Ok(())
    }

    /// Whether this member's Lease is fresh enough to act on: renewed within a Lease
    /// duration less two renew periods (after that it fences itself). Its looks come a renew
    /// period apart, and each may take up to another (renewing and listing, half a renew
    /// period each) before it acts: with one period of margin, a look just short of it let
    /// the member run on until its Lease had expired.
    pub fn holds(&self) -> bool {
        let margin = self.options.duration.saturating_sub(self.options.renew * 2);
        self.renewed.is_some_and(|at| at.elapsed() < margin)
    }

    /// Looks at the group's Leases; returns the live members' identities (this member's
    /// only while it [`holds`](Self::holds) its Lease).
    pub async fn observe(&mut self) -> Result<Vec<String>, kube::Error> {
        let params = ListParams::default().labels(&format!("{GROUP_LABEL}={}", self.options.group));
        let leases = self.api.list(&params).await?;
        let now = Instant::now();
        let mut seen = HashMap::new();
        for lease in leases.items {
            let (Some(name), Some(rv)) = (lease.metadata.name.clone(), lease.metadata.resource_version.clone()) else {
                continue;
            };
            let Some(holder) = lease.spec.and_then(|s| s.holder_identity).filter(|h| !h.is_empty()) else { continue };
            let changed_at = match self.observed.get(&name) {
                Some((old_rv, _, at)) if *old_rv == rv => *at,
                _ => now,
            };
            seen.insert(name, (rv, holder, changed_at));
        }
        self.observed = seen;
        let me = self.options.identity.clone();
        let mut live: Vec<String> = self
            .observed
            .values()
            .filter(|(_, holder, at)| *holder != me && now.duration_since(*at) < self.options.duration)
            .map(|(_, holder, _)| holder.clone())
            .collect();
        if self.holds() {
            live.push(me);
        }
        live.sort();
        live.dedup();
        Ok(live)
    }

    /// Gives this member's Lease up (an orderly leave): the others see it gone at once.
    pub async fn release(&mut self) -> Result<(), kube::Error> {
        self.renewed = None;
        match self.api.delete(&self.options.lease_name(), &Default::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

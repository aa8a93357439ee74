//! Scale-out: which of the plugins it is given this host runs, when it shares them with the
//! other members of a shard group ([`Ownership`], from [`crate::shard`]).
//!
//! A plugin is deployed here only while this member owns it; one owned elsewhere is *parked*
//! (its folder remembered, nothing loaded) and deployed when it comes to this member. A
//! shardable plugin (`shardBy` in its manifest) runs on every member, each delivering only the
//! objects of its slice: its listeners filter by the assignment it was deployed with, and a
//! new assignment redeploys it, so that the new registration gets its new slice as an initial
//! list (the handover every replacement has). A member that is not in the group (fenced)
//! runs nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::PluginRegistry;
use crate::errors::Chain;
use crate::plugin::deploy::assignment::Assignment;
use crate::plugin::manifest::{MANIFEST_FILE, Manifest, ShardBy};

/// Which plugins this host runs.
pub trait Ownership: Send + Sync + 'static {
    /// Whether this host runs the (unsharded) plugin `name` now.
    fn owns(&self, name: &str) -> bool;
    /// The group as this member sees it, for shardable plugins' slices; `None` when this
    /// member is not in the group (it runs nothing).
    fn assignment(&self) -> Option<Assignment>;
}

/// A plugin found but run elsewhere.
#[derive(Clone, Debug)]
pub(super) struct Parked {
    dir: PathBuf,
    shard_by: Option<ShardBy>,
}

/// Where a plugin runs.
pub(super) enum Placement {
    /// Here; a shardable plugin with the slice it delivers.
    Here(Option<(Assignment, ShardBy)>),
    /// On another member (the plugin's name).
    Elsewhere(String),
}

impl PluginRegistry {
    /// Runs only the plugins `ownership` gives this host.
    pub fn with_ownership(mut self, ownership: Arc<dyn Ownership>) -> Self {
        self.ownership = Some(ownership);
        self
    }

    /// Where the plugin in `dir` runs (parking it when elsewhere). A manifest that does not
    /// read is placed here, so that loading it reports the error.
    pub(super) fn placement(&self, dir: &Path) -> Placement {
        let Some(ownership) = &self.ownership else { return Placement::Here(None) };
        let Ok(manifest) = Manifest::load(dir.join(MANIFEST_FILE)) else { return Placement::Here(None) };
        let name = manifest.name.to_string();
        let here = match manifest.shard_by {
            Some(by) => ownership.assignment().map(|a| Placement::Here(Some((a, by)))),
            None => ownership.owns(&name).then_some(Placement::Here(None)),
        };
        let mut parked = self.parked.lock();
        match here {
            Some(placement) => {
                parked.remove(&name);
                placement
            }
            None => {
                parked.insert(name.clone(), Parked { dir: dir.to_owned(), shard_by: manifest.shard_by });
                Placement::Elsewhere(name)
            }
        }
    }

    /// Applies the current ownership: removes the plugins this host no longer runs, redeploys
    /// shardable ones whose slice changed, and deploys the parked ones it now runs.
    pub async fn rebalance(&self) {
        let Some(ownership) = self.ownership.clone() else { return };
        let assignment = ownership.assignment();
        let deployed: Vec<(String, PathBuf, Option<super::Slice>)> =
            self.plugins.lock().await.iter().map(|(name, d)| (name.clone(), d.dir.clone(), d.shard.clone())).collect();
        for (name, dir, shard) in deployed {
            match (&shard, &assignment) {
                (Some((slice, _)), Some(now)) if slice == now => {}
                (Some(_), Some(_)) => self.redeploy(&dir).await,
                (None, _) if ownership.owns(&name) => {}
                _ => {
                    if self.remove(&name).await {
                        tracing::info!(plugin = %name, "plugin handed over: another member runs it now");
                    }
                    let shard_by = shard.map(|(_, by)| by);
                    self.parked.lock().insert(name, Parked { dir, shard_by });
                }
            }
        }
        let parked: Vec<(String, Parked)> = self.parked.lock().iter().map(|(n, p)| (n.clone(), p.clone())).collect();
        for (name, parked) in parked {
            let here = match parked.shard_by {
                Some(_) => assignment.is_some(),
                None => ownership.owns(&name),
            };
            if here {
                self.redeploy(&parked.dir).await;
            }
        }
    }

    async fn redeploy(&self, dir: &Path) {
        if let Err(err) = self.deploy(dir).await {
            tracing::error!(dir = %dir.display(), error = %Chain(&err), "plugin not deployed on its new member");
        }
    }

    /// Whether the plugin `name` is found but run elsewhere.
    pub fn is_parked(&self, name: &str) -> bool {
        self.parked.lock().contains_key(name)
    }

    /// The plugins found but run elsewhere.
    pub fn parked(&self) -> Vec<String> {
        self.parked.lock().keys().cloned().collect()
    }
}

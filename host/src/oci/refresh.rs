//! `wink run --plugin-ref REF`: plugins deployed from a registry and kept current.
//!
//! Each reference gets a folder of its own under the pull folder; a reference pinned by
//! digest is pulled once (from the cache after the first time), a tag is resolved again every
//! [`RefreshOptions::interval`] and pulled when it points at a new digest. A pulled plugin
//! replaces its folder as a whole and is deployed (or replaced) through the registry, like a
//! plugin folder edited on disk; a reference that cannot be resolved or pulled is retried on
//! the next round and leaves the deployed version running.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::client::{OciClient, parse_reference};
use crate::errors::Chain;
use crate::plugin::PluginRegistry;

/// How `wink run` follows its plugin references.
#[derive(Clone, Debug)]
pub struct RefreshOptions {
    /// The references.
    pub references: Vec<String>,
    /// How often tags are resolved again.
    pub interval: Duration,
    /// Where the pulled plugins' folders live.
    pub pull_dir: PathBuf,
}

/// The plugins a host runs from references.
pub(crate) struct OciPlugins {
    client: Arc<OciClient>,
    registry: Arc<PluginRegistry>,
    options: RefreshOptions,
    /// The digest each reference was last deployed at.
    deployed: parking_lot::Mutex<Vec<Option<String>>>,
}

impl std::fmt::Debug for OciPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OciPlugins").field("options", &self.options).finish()
    }
}

/// The folder a reference's plugin is pulled into: readable, and unique per reference.
pub(crate) fn folder_for(pull_dir: &Path, reference: &str) -> PathBuf {
    let readable: String = reference
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .take(80)
        .collect();
    let hash = hex::encode(&Sha256::digest(reference.as_bytes())[..6]);
    pull_dir.join(format!("{readable}-{hash}"))
}

impl OciPlugins {
    /// Checks every reference parses; nothing is fetched yet.
    pub fn new(
        client: Arc<OciClient>,
        registry: Arc<PluginRegistry>,
        options: RefreshOptions,
    ) -> Result<Self, super::OciError> {
        for reference in &options.references {
            parse_reference(reference)?;
        }
        let deployed = parking_lot::Mutex::new(vec![None; options.references.len()]);
        Ok(Self { client, registry, options, deployed })
    }

    /// Resolves every reference and deploys what changed; returns the errors of this round.
    pub async fn refresh(&self) -> Vec<super::OciError> {
        let mut errors = Vec::new();
        for (index, reference) in self.options.references.iter().enumerate() {
            match self.refresh_one(index, reference).await {
                Ok(()) => {}
                Err(err) => {
                    tracing::error!(reference = %reference, error = %Chain(&err), "plugin reference not deployed");
                    errors.push(err);
                }
            }
        }
        errors
    }

    async fn refresh_one(&self, index: usize, reference: &str) -> Result<(), super::OciError> {
        let digest = self.client.resolve(reference).await?;
        if self.deployed.lock()[index].as_deref() == Some(digest.as_str()) {
            return Ok(());
        }
        let pulled = self.client.pull_digest(reference, &digest).await?;
        let dir = folder_for(&self.options.pull_dir, reference);
        let artifact = pulled.artifact;
        let target = dir.clone();
        tokio::task::spawn_blocking(move || artifact.write_to(&target))
            .await
            .map_err(|e| super::OciError::Cache { dir: dir.clone(), source: std::io::Error::other(e) })??;
        match self.registry.deploy(&dir).await {
            Ok(name) => {
                tracing::info!(reference = %reference, %digest, plugin = %name, "plugin deployed from its reference");
                self.deployed.lock()[index] = Some(digest);
            }
            Err(err) => {
                // The registry logged why; the same digest is tried again next round.
                tracing::error!(reference = %reference, %digest, error = %Chain(&err), "pulled plugin not deployed");
            }
        }
        Ok(())
    }

    /// Refreshes every [`RefreshOptions::interval`] until `cancel` fires.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(self.options.interval.max(Duration::from_secs(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => { self.refresh().await; }
                () = cancel.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reference_has_its_own_readable_folder() {
        let root = Path::new("/pulls");
        let a = folder_for(root, "localhost:5000/team/plugin:v1");
        let b = folder_for(root, "localhost:5000/team/plugin:v2");
        assert_ne!(a, b);
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with("localhost_5000_team_plugin_v1-"), "{a:?}");
        assert_eq!(a.parent(), Some(root), "never a path outside the pull folder");
        let hostile = folder_for(root, "../../etc/passwd:x");
        assert_eq!(hostile.parent(), Some(root), "{hostile:?}");
    }
}

//! Reconciling the registry with a plugins folder, cheaply when nothing changed.
//!
//! - A rescan reads no file that did not change: each plugin's fingerprint comes from
//!   [`FileDigests`](super::FileDigests), which hashes a file only when its size or
//!   modification time moved. The folder watcher calls back only on real changes (not on
//!   the reads of a rescan), so an idle host does no file work at all.
//! - A plugin whose deploy failed (manifest, component, `init`…) is not retried on every
//!   rescan: it is retried with exponential backoff ([`DEPLOY_RETRY`]: 1 s doubling to a
//!   5-minute cap), and at once when its files change. [`PluginRegistry::watch_dir`] wakes
//!   up for the next retry on its own.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Deploying, PluginRegistry, RegistryError};
use crate::errors::Chain;
use crate::informer::{Backoff, BackoffConfig};
use crate::plugin::manifest::MANIFEST_FILE;

/// The retry schedule of a failed deploy: 1 s, doubling, at most 5 minutes, stretched by up
/// to 10 % at random so that plugins that failed together do not retry in step.
pub(crate) const DEPLOY_RETRY: BackoffConfig = BackoffConfig {
    initial: Duration::from_secs(1),
    factor: 2.0,
    max: Duration::from_secs(300),
    jitter: 0.1,
    // Longer than the cap: a plugin that keeps failing never starts over at 1 s.
    reset_after: Duration::from_secs(900),
};

/// How many plugins a scan reads, and starts, ahead of the one it loads or registers: one
/// per core, at most 4 (a read that compiles is itself parallel and holds the component's
/// bytes).
fn ahead() -> usize {
    static AHEAD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AHEAD.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get).clamp(1, 4))
}

/// The most plugins one blocking thread reads in a run (see [`run_end`]).
const READ_RUN: usize = 16;

/// Where the run of reads that begins at `due[from]` ends: the `begun`-th run of a scan reads
/// `2^begun` plugins, at most [`READ_RUN`] — the first plugins deploy at once, and a large
/// folder wakes a thread once per run rather than once per plugin — and a run ends with a
/// replacement (the next ones are read once it is registered).
fn run_end(due: &[(PathBuf, bool)], from: usize, begun: u32) -> usize {
    let most = READ_RUN.min(1 << begun.min(8));
    let end = due.len().min(from + most);
    due[from..end].iter().position(|d| d.1).map_or(end, |at| from + at + 1)
}

/// A plugin of the scan whose start runs: its folder, the fingerprint its files had, and
/// the plugin.
type Arriving<'a> = (&'a Path, Option<String>, Box<super::Arriving>);

/// What the registry's folder scans have cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Rescans of the plugins folder.
    pub scans: u64,
    /// Plugin files read and hashed to fingerprint them.
    pub files_hashed: u64,
    /// Bytes read to hash them.
    pub bytes_hashed: u64,
    /// Deploys attempted (plugin loads), successful or not.
    pub deploy_attempts: u64,
}

/// A plugin folder whose last deploy failed.
struct Failed {
    /// The fingerprint of the files that failed.
    fingerprint: Option<String>,
    backoff: Backoff,
    retry_at: Instant,
}

/// Scan counters and the failed deploys waiting for a retry.
pub(super) struct ScanState {
    retry: BackoffConfig,
    failed: parking_lot::Mutex<HashMap<PathBuf, Failed>>,
    scans: AtomicU64,
    attempts: AtomicU64,
}

impl ScanState {
    pub(super) fn new(retry: BackoffConfig) -> Self {
        Self { retry, failed: parking_lot::Mutex::default(), scans: AtomicU64::new(0), attempts: AtomicU64::new(0) }
    }

    /// Counts the deploys of `plugins` plugins as attempted (their reads begun).
    pub(super) fn count_attempts(&self, plugins: usize) {
        self.attempts.fetch_add(plugins as u64, Ordering::Relaxed);
    }

    /// Whether the last deploy of the plugin in `dir` failed.
    fn has_failed(&self, dir: &Path) -> bool {
        self.failed.lock().contains_key(dir)
    }

    /// Whether the failed plugin in `dir` waits: same files, retry time not reached.
    fn backing_off(&self, dir: &Path, fingerprint: &Option<String>) -> bool {
        self.failed.lock().get(dir).is_some_and(|f| &f.fingerprint == fingerprint && Instant::now() < f.retry_at)
    }

    fn failed(&self, dir: &Path, fingerprint: Option<String>) -> Duration {
        let mut failed = self.failed.lock();
        let entry = failed.entry(dir.to_owned()).or_insert_with(|| Failed {
            fingerprint: fingerprint.clone(),
            backoff: Backoff::new(self.retry.clone()),
            retry_at: Instant::now(),
        });
        if entry.fingerprint != fingerprint {
            // Other files failed: a new schedule.
            entry.fingerprint = fingerprint;
            entry.backoff.reset();
        }
        let delay = entry.backoff.next_delay();
        entry.retry_at = Instant::now() + delay;
        delay
    }

    fn succeeded(&self, dir: &Path) {
        self.failed.lock().remove(dir);
    }
}

impl PluginRegistry {
    /// Replaces the retry schedule of failed deploys (default [`DEPLOY_RETRY`]).
    pub fn with_deploy_retry(mut self, retry: BackoffConfig) -> Self {
        self.scans.retry = retry;
        self
    }

    /// What folder scans have cost so far.
    pub fn scan_stats(&self) -> ScanStats {
        let hashed = self.digests.lock().stats();
        ScanStats {
            scans: self.scans.scans.load(Ordering::Relaxed),
            files_hashed: hashed.files_hashed,
            bytes_hashed: hashed.bytes_hashed,
            deploy_attempts: self.scans.attempts.load(Ordering::Relaxed),
        }
    }

    /// When the next failed deploy is due for a retry, if any failed.
    pub fn next_retry(&self) -> Option<Instant> {
        self.scans.failed.lock().values().map(|f| f.retry_at).min()
    }

    /// Reconciles with a plugins folder: deploys new plugins, replaces changed ones, removes
    /// those whose folder is gone, then starts the informers they need (all plugins of the
    /// folder are registered before any new informer starts, so each gets its own resync
    /// period). Returns the plugins that failed now (the others keep running; a failed
    /// replacement leaves the old version running). A plugin that failed before and whose
    /// files did not change is retried only when its backoff has passed.
    pub async fn sync_dir(&self, root: &Path) -> Result<Vec<RegistryError>, RegistryError> {
        self.scans.scans.fetch_add(1, Ordering::Relaxed);
        let due = self.due(root).await?;
        let (mut errors, mut reads_begun) = (Vec::new(), 0);
        // Runs of plugins being read, and plugins read but not loaded yet, in folder order.
        let (mut reads, mut ready, mut read) = (VecDeque::new(), VecDeque::new(), 0);
        let mut starting: VecDeque<Arriving<'_>> = VecDeque::new();
        for (i, (dir, replacing)) in due.iter().enumerate() {
            // Plugins' files are read on blocking threads, in up to `ahead()` runs beyond the
            // one loaded now, and loaded (memory reserved, handler built, start begun) one at
            // a time in the folder's order. Reads never pass a replacement not registered
            // yet: its old version gives its memory back as it goes, and a read refuses a
            // plugin that does not fit in what is left.
            while read < due.len() && reads.len() < ahead() && !due[i..read].iter().any(|d| d.1) {
                let end = run_end(&due, read, reads_begun);
                reads_begun += 1;
                reads.push_back(self.read_plugins(due[read..end].iter().map(|d| d.0.clone()).collect()));
                read = end;
            }
            if ready.is_empty()
                && let Some(reading) = reads.pop_front()
            {
                ready.extend(self.finish_reads(reading).await);
            }
            let files = match ready.pop_front() {
                Some(files) => files,
                None => self.finish_read(dir, self.read_plugin(dir)).await,
            };
            let fingerprint = files.fingerprint.clone();
            let mut begun = self.begin_deploy(dir, Some(files)).await;
            if matches!(begun, Err(RegistryError::Budget(_))) {
                // Read ahead, the plugin was checked against the memory left then; a plugin
                // before it may have failed to start since, or may yet, and given its memory
                // back. As if plugins deployed one at a time, this one's reservation is
                // decided once those before it registered, on a fresh read (its files
                // remembered, not hashed again).
                self.register_until(&mut starting, 0, &mut errors).await;
                begun = self.begin_deploy(dir, None).await;
            }
            match begun {
                Ok(Deploying::Here(arriving)) => starting.push_back((dir, fingerprint, arriving)),
                Ok(Deploying::Elsewhere(_)) => self.scans.succeeded(dir),
                Err(err) => errors.push(self.deploy_failed(dir, fingerprint, err)),
            }
            // Up to `ahead()` plugins start (on guest threads) while the next load; each is
            // registered (listening) in the folder's order once it started. A replacement
            // is registered before the next plugin loads. A start takes a place in the
            // instance pool: while few are left, plugins start one at a time, so that they
            // take them in the folder's order (as they reserve memory), not in the order
            // their starts happen to run.
            let scarce = self.engine.free_instance_places().is_some_and(|free| free <= 2 * ahead() as u64);
            let keep = if *replacing || scarce { 0 } else { ahead() };
            self.register_until(&mut starting, keep, &mut errors).await;
        }
        self.register_until(&mut starting, 0, &mut errors).await;
        // After every read: the fingerprints taken by the reads count as this pass's.
        self.digests.lock().end_pass();
        self.factory.start();
        self.prune_cache().await;
        Ok(errors)
    }

    /// The plugin folders of `root` that a scan deploys, in the folder's order, each with
    /// whether it replaces a deployed version; removes the plugins whose folders are gone.
    /// Begins the fingerprints' pass (the scan ends it).
    async fn due(&self, root: &Path) -> Result<Vec<(PathBuf, bool)>, RegistryError> {
        let entries = std::fs::read_dir(root).map_err(|source| RegistryError::Io { path: root.to_owned(), source })?;
        let mut dirs: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.join(MANIFEST_FILE).is_file()).collect();
        dirs.sort();
        let deployed: Vec<(String, PathBuf, Option<String>)> =
            self.plugins.lock().await.iter().map(|(n, d)| (n.clone(), d.dir.clone(), d.fingerprint.clone())).collect();
        for (name, dir, _) in &deployed {
            // Plugins deployed from elsewhere (another folder, a registry) are not this scan's.
            if dir.parent() == Some(root) && dirs.binary_search(dir).is_err() {
                self.remove_unpruned(name).await;
            }
        }
        self.scans.failed.lock().retain(|dir, _| dirs.binary_search(dir).is_ok());
        // Each folder's deployed version, looked up by folder (a rescan of a large folder is
        // linear in its plugins).
        let mut by_dir: HashMap<&Path, &Option<String>> = HashMap::with_capacity(deployed.len());
        for (_, dir, fingerprint) in &deployed {
            by_dir.entry(dir.as_path()).or_insert(fingerprint);
        }
        self.digests.lock().begin_pass();
        let mut due = Vec::new();
        for dir in dirs {
            let current = by_dir.get(dir.as_path()).map(|f| (*f).clone());
            // A new plugin is due whatever its files: its read takes the fingerprint. A
            // deployed one is due if its files changed, a failed one if they changed or its
            // retry is due.
            if current.is_some() || self.scans.has_failed(&dir) {
                let fingerprint = self.digests.lock().fingerprint(&dir);
                if current.as_ref() == Some(&fingerprint) {
                    self.scans.succeeded(&dir);
                    continue;
                }
                if self.scans.backing_off(&dir, &fingerprint) {
                    continue;
                }
            }
            due.push((dir, current.is_some()));
        }
        Ok(due)
    }

    /// Registers the starting plugins in order, from the first, until at most `keep` are
    /// left starting; records how each deploy ended.
    async fn register_until(
        &self,
        starting: &mut VecDeque<Arriving<'_>>,
        keep: usize,
        errors: &mut Vec<RegistryError>,
    ) {
        while starting.len() > keep {
            let Some((dir, fingerprint, arriving)) = starting.pop_front() else { break };
            match self.finish_deploy(dir, *arriving).await {
                Ok(_) => self.scans.succeeded(dir),
                Err(err) => errors.push(self.deploy_failed(dir, fingerprint, err)),
            }
        }
    }

    /// Schedules the retry of `dir`'s failed deploy, and says why it failed.
    fn deploy_failed(&self, dir: &Path, fingerprint: Option<String>, err: RegistryError) -> RegistryError {
        let retry_in = self.scans.failed(dir, fingerprint);
        tracing::error!(dir = %dir.display(), error = %Chain(&err), ?retry_in, "plugin not deployed");
        err
    }

    /// Watches a plugins folder and reconciles when something in it changes, and when a
    /// failed deploy is due for a retry, until `cancel` fires.
    pub fn watch_dir(
        self: &Arc<Self>,
        root: &Path,
        cancel: CancellationToken,
    ) -> Result<JoinHandle<()>, crate::fswatch::WatchError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watcher = crate::fswatch::watch_folder(root, Duration::from_millis(200), cancel.clone(), move || {
            let _ = tx.send(());
        })?;
        let this = self.clone();
        let root = root.to_owned();
        Ok(tokio::spawn(async move {
            loop {
                let retry = this.next_retry();
                let due = async move {
                    match retry {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    changed = rx.recv() => {
                        if changed.is_none() {
                            break;
                        }
                        while rx.try_recv().is_ok() {}
                    }
                    () = due => {}
                    () = cancel.cancelled() => break,
                }
                if let Err(err) = this.sync_dir(&root).await {
                    tracing::error!(error = %Chain(&err), "cannot rescan plugins");
                }
            }
            let _ = watcher.await;
        }))
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    /// Folders `p0`, `p1`…, the ones at `replacing` replacements of deployed plugins.
    fn due(count: usize, replacing: &[usize]) -> Vec<(PathBuf, bool)> {
        (0..count).map(|i| (PathBuf::from(format!("p{i}")), replacing.contains(&i))).collect()
    }

    #[test]
    fn runs_of_reads_double_up_to_their_cap_and_end_with_a_replacement() {
        let new = due(40, &[]);
        let (mut sizes, mut from, mut begun) = (Vec::new(), 0, 0);
        while from < new.len() {
            let end = run_end(&new, from, begun);
            sizes.push(end - from);
            (from, begun) = (end, begun + 1);
        }
        assert_eq!(sizes, [1, 2, 4, 8, 16, 9]);

        let mixed = due(40, &[5]);
        assert_eq!(run_end(&mixed, 2, 4), 6, "the run ends with the replacement");
        assert_eq!(run_end(&mixed, 5, 4), 6, "a replacement first is a run of one");
        assert_eq!(run_end(&mixed, 6, 40), 22, "runs are capped");
    }
}

//! Pruning the on-disk compile cache, so that it does not grow with every component ever
//! compiled.
//!
//! The cache folder holds `<sha256>-<engine hash>.cwasm` files (see [`super::engine`]).
//! [`prune`] keeps it under a size bound:
//! - a file of **another engine hash** (another wink version or engine setting) can never be
//!   loaded by this engine: it is garbage and removed;
//! - a file **in use** (the component of a deployed plugin) is never removed, even when the
//!   files in use alone exceed the bound;
//! - the other files are removed **least recently used first** (by modification time: the
//!   engine touches a file each time it loads it) until the folder fits the bound;
//! - temporary files of an interrupted write older than [`STALE_TEMP_AGE`] are removed.
//!
//! Files whose names are not the cache's are left alone.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Temporary files (a write in progress) older than this are left-overs of a crash.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

/// What [`prune`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Files of another engine hash removed.
    pub foreign_removed: usize,
    /// Unused files of this engine removed to fit the bound.
    pub evicted: usize,
    /// Stale temporary files removed.
    pub stale_temp_removed: usize,
    /// Files of this engine kept.
    pub kept: usize,
    /// Their total size, in bytes.
    pub kept_bytes: u64,
}

struct Entry {
    path: PathBuf,
    digest: String,
    size: u64,
    used: SystemTime,
}

/// The digest and engine hash of a cache file name `<64 hex>-<hex>.cwasm`.
fn parse_name(name: &str) -> Option<(&str, &str)> {
    let stem = name.strip_suffix(".cwasm")?;
    let (digest, engine) = stem.split_once('-')?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    (digest.len() == 64 && hex(digest) && hex(engine)).then_some((digest, engine))
}

/// Prunes `dir` for the engine whose hash is `engine_hash`: never removes the digests in
/// `in_use`, removes other engines' files, and evicts unused files, least recently used
/// first, until the files of this engine total at most `max_size` bytes. Errors on single
/// files are logged and skipped.
pub fn prune(dir: &Path, engine_hash: &str, in_use: &HashSet<String>, max_size: u64) -> std::io::Result<PruneReport> {
    let mut report = PruneReport::default();
    let mut entries = Vec::new();
    let now = SystemTime::now();
    for item in std::fs::read_dir(dir)? {
        let Ok(item) = item else { continue };
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        let Ok(meta) = item.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let path = item.path();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default();
            if age > STALE_TEMP_AGE && remove(&path) {
                report.stale_temp_removed += 1;
            }
            continue;
        }
        let Some((digest, engine)) = parse_name(name) else { continue };
        if engine != engine_hash {
            if remove(&path) {
                report.foreign_removed += 1;
            }
            continue;
        }
        let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        entries.push(Entry { digest: digest.to_owned(), path, size: meta.len(), used });
    }
    let mut total: u64 = entries.iter().map(|e| e.size).sum();
    // Oldest first; in-use files are skipped, never evicted.
    entries.sort_by_key(|e| e.used);
    let mut kept = Vec::new();
    for entry in entries {
        if total > max_size && !in_use.contains(&entry.digest) && remove(&entry.path) {
            total -= entry.size;
            report.evicted += 1;
        } else {
            kept.push(entry);
        }
    }
    report.kept = kept.len();
    report.kept_bytes = total;
    Ok(report)
}

fn remove(path: &Path) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        // Another process pruned it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove a compile cache file");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use crate::plugin::test_guests::TempDir;

    fn digest(n: u8) -> String {
        format!("{n:02x}").repeat(32)
    }

    /// Writes a `size`-byte cache file used `age_secs` ago.
    fn entry(dir: &Path, digest: &str, engine: &str, size: usize, age_secs: u64) -> PathBuf {
        let path = dir.join(format!("{digest}-{engine}.cwasm"));
        std::fs::write(&path, vec![0u8; size]).unwrap();
        let used = SystemTime::now() - Duration::from_secs(age_secs);
        File::options().write(true).open(&path).unwrap().set_modified(used).unwrap();
        path
    }

    #[test]
    fn evicts_unused_entries_least_recently_used_first_and_never_one_in_use() {
        let dir = TempDir::new("prune");
        let d = &dir.0;
        let oldest_in_use = entry(d, &digest(1), "abcd", 400, 500);
        let old = entry(d, &digest(2), "abcd", 400, 400);
        let middle = entry(d, &digest(3), "abcd", 400, 300);
        let recent = entry(d, &digest(4), "abcd", 400, 10);
        let foreign = entry(d, &digest(5), "ffff", 10, 1);
        std::fs::write(d.join("notes.txt"), "not ours").unwrap();
        let in_use: HashSet<String> = [digest(1)].into();

        let report = prune(d, "abcd", &in_use, 1000).unwrap();
        assert_eq!(
            report,
            PruneReport { foreign_removed: 1, evicted: 2, stale_temp_removed: 0, kept: 2, kept_bytes: 800 }
        );
        assert!(oldest_in_use.exists(), "an entry in use is never evicted, however old");
        assert!(!old.exists() && !middle.exists(), "the least recently used unused entries go first");
        assert!(recent.exists());
        assert!(!foreign.exists(), "another engine's entries are garbage");
        assert!(d.join("notes.txt").exists(), "files that are not the cache's are left alone");

        // Entries in use stay even when they alone exceed the bound.
        let report = prune(d, "abcd", &[digest(1), digest(4)].into(), 100).unwrap();
        assert_eq!((report.evicted, report.kept, report.kept_bytes), (0, 2, 800));
        let report = prune(d, "abcd", &HashSet::new(), 100).unwrap();
        assert_eq!((report.evicted, report.kept), (2, 0));
    }

    #[test]
    fn removes_stale_temporary_files_only() {
        let dir = TempDir::new("prune-temp");
        let stale = dir.0.join(".x.cwasm.1.0.tmp");
        let fresh = dir.0.join(".y.cwasm.1.1.tmp");
        std::fs::write(&stale, b"half").unwrap();
        std::fs::write(&fresh, b"half").unwrap();
        let long_ago = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
        File::options().write(true).open(&stale).unwrap().set_modified(long_ago).unwrap();
        let report = prune(&dir.0, "abcd", &HashSet::new(), 0).unwrap();
        assert_eq!(report.stale_temp_removed, 1);
        assert!(!stale.exists() && fresh.exists(), "a write in progress is not disturbed");
    }
}

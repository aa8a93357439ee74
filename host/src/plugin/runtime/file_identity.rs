//! [`FileIdentity`]: which file, at which version, some bytes were read from — so that a file
//! read again, or under another name (a hard link: many tenants' copies of one plugin, an
//! OCI blob stored once by digest), is not hashed again.
//!
//! A file is identified by its device, inode, size and modification time, as git's index
//! does. An identity is trusted only for a file that had not been modified for [`SETTLE`]
//! when it was read (git's "racy" rule): a file rewritten within its file system's timestamp
//! granularity, with the same size, would otherwise keep its identity with new contents.
//! And the file must show the same identity after the read as before it, or the bytes read
//! may not belong to either.

use std::collections::HashMap;
use std::fs::Metadata;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

/// How long a file must have been left alone before its identity is trusted.
pub const SETTLE: Duration = Duration::from_secs(2);

/// Identities remembered at most by one [`KnownDigests`] (beyond that it starts afresh).
const MAX_REMEMBERED: usize = 1 << 16;

/// Whether a file last modified at `modified` had been left alone for [`SETTLE`] by `now`.
pub(crate) fn settled_by(modified: SystemTime, now: SystemTime) -> bool {
    modified.checked_add(SETTLE).is_some_and(|t| t <= now)
}

/// A file at one version: device, inode, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
    len: u64,
    modified: SystemTime,
}

impl FileIdentity {
    /// The identity `meta` gives, if the file was last modified at least [`SETTLE`] before
    /// `now`; `None` for a file modified since, or where the platform has no inodes.
    pub fn settled(meta: &Metadata, now: SystemTime) -> Option<Self> {
        let modified = meta.modified().ok()?;
        if !settled_by(modified, now) {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Self { device: meta.dev(), inode: meta.ino(), len: meta.len(), modified })
        }
        #[cfg(not(unix))]
        {
            None
        }
    }

    /// The identity of bytes read from an open file: `before` and `after` are its metadata
    /// around the read; `None` unless both agree and the file had settled.
    pub fn of_read(before: &Metadata, after: &Metadata, now: SystemTime) -> Option<Self> {
        let identity = Self::settled(before, now)?;
        (Self::settled(after, now) == Some(identity)).then_some(identity)
    }
}

/// Digests of files by identity, bounded.
#[derive(Debug, Default)]
pub(crate) struct KnownDigests<D> {
    digests: Mutex<HashMap<FileIdentity, D>>,
}

impl<D: Clone> KnownDigests<D> {
    /// The digest remembered for `identity`.
    pub fn get(&self, identity: &FileIdentity) -> Option<D> {
        self.digests.lock().get(identity).cloned()
    }

    /// Remembers `digest` as the digest of the file at `identity`.
    pub fn insert(&self, identity: FileIdentity, digest: D) {
        let mut digests = self.digests.lock();
        if digests.len() >= MAX_REMEMBERED {
            digests.clear();
        }
        digests.insert(identity, digest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(path: &std::path::Path, by: Duration) -> Metadata {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
        std::fs::metadata(path).unwrap()
    }

    #[test]
    fn hard_links_share_an_identity_and_a_rewrite_changes_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.wasm"), dir.path().join("b.wasm"));
        std::fs::write(&a, b"one").unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        let meta = aged(&a, Duration::from_secs(60));
        let now = SystemTime::now();
        let of_a = FileIdentity::settled(&meta, now).expect("settled");
        assert_eq!(FileIdentity::settled(&std::fs::metadata(&b).unwrap(), now), Some(of_a), "one file, two names");
        std::fs::write(&a, b"two").unwrap();
        let rewritten = aged(&a, Duration::from_secs(30));
        assert_ne!(FileIdentity::settled(&rewritten, SystemTime::now()), Some(of_a));
    }

    #[test]
    fn a_freshly_written_file_has_no_identity_yet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wasm");
        std::fs::write(&path, b"one").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(FileIdentity::settled(&meta, SystemTime::now()), None, "within the settle period");
        let aged = aged(&path, Duration::from_secs(60));
        assert_eq!(FileIdentity::of_read(&aged, &meta, SystemTime::now()), None, "changed during the read");
        assert!(FileIdentity::of_read(&aged, &aged, SystemTime::now()).is_some());
    }

    #[test]
    fn known_digests_are_found_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wasm");
        std::fs::write(&path, b"one").unwrap();
        let identity = FileIdentity::settled(&aged(&path, Duration::from_secs(60)), SystemTime::now()).unwrap();
        let known = KnownDigests::default();
        assert_eq!(known.get(&identity), None);
        known.insert(identity, "digest".to_owned());
        assert_eq!(known.get(&identity).as_deref(), Some("digest"));
    }
}

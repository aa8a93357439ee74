//! What decides whether a plugin's files changed: the sha256 of its manifest and of its
//! component, each remembered by the file's (size, modification time) so that a rescan
//! of an unchanged folder reads no file at all — it only asks for their metadata.
//!
//! A digest is trusted again only if the file had not been modified for
//! [`SETTLE`](crate::plugin::runtime::file_identity::SETTLE) when it was hashed (git's "racy" rule): a file rewritten within the
//! timestamp granularity of its file system, with the same size, would otherwise look
//! unchanged. A settled component file is also remembered by its [`FileIdentity`], so that
//! the many folders of one plugin copied for many tenants (hard links to one file) hash it
//! once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::manifest::{MANIFEST_FILE, Manifest};

use crate::plugin::runtime::file_identity::{FileIdentity, KnownDigests, settled_by};

/// How much file work fingerprinting took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashStats {
    /// Files read and hashed.
    pub files_hashed: u64,
    /// Bytes read to hash them.
    pub bytes_hashed: u64,
}

struct Remembered {
    len: u64,
    modified: SystemTime,
    settled: bool,
    digest: [u8; 32],
    /// For a manifest: the component file it names (`None` if it does not parse).
    component: Option<PathBuf>,
    /// The pass that last used this entry.
    pass: u64,
}

/// The digests of plugin files, remembered by (size, modification time).
#[derive(Default)]
pub struct FileDigests {
    files: HashMap<PathBuf, Remembered>,
    /// Digests of settled component files, by identity (shared by hard links).
    by_identity: KnownDigests<[u8; 32]>,
    stats: HashStats,
    pass: u64,
}

impl std::fmt::Debug for FileDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileDigests").field("files", &self.files.len()).field("stats", &self.stats).finish()
    }
}

impl FileDigests {
    /// The file work done so far.
    pub fn stats(&self) -> HashStats {
        self.stats
    }

    /// The fingerprint of the plugin in `dir`: manifest and component digests together
    /// (a missing or unreadable component counts as empty). `None` if the manifest cannot
    /// be read.
    pub fn fingerprint(&mut self, dir: &Path) -> Option<String> {
        let manifest_path = dir.join(MANIFEST_FILE);
        let component_of = |text: &[u8]| {
            Manifest::parse(&String::from_utf8_lossy(text), &manifest_path).ok().map(|m| m.component_path())
        };
        let (manifest, component) = self.digest(&manifest_path, Some(&component_of))?;
        let mut hash = Sha256::new();
        hash.update(manifest);
        if let Some((digest, _)) = component.and_then(|path| self.digest(&path, None)) {
            hash.update(digest);
        }
        Some(hex::encode(hash.finalize()))
    }

    /// Starts a pass: entries not used by the end of it are dropped by [`FileDigests::end_pass`].
    pub fn begin_pass(&mut self) {
        self.pass += 1;
    }

    /// Forgets the files no fingerprint of this pass needed (removed plugins).
    pub fn end_pass(&mut self) {
        let pass = self.pass;
        self.files.retain(|_, r| r.pass == pass);
    }

    /// The digest of `path` (and what `derive` made of its contents when it was read),
    /// hashing the file only if its size or modification time changed.
    fn digest(&mut self, path: &Path, derive: Option<Derive<'_>>) -> Option<([u8; 32], Option<PathBuf>)> {
        let Ok(meta) = std::fs::metadata(path) else {
            self.files.remove(path);
            return None;
        };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if let Some(r) = self.files.get_mut(path)
            && r.settled
            && r.len == meta.len()
            && r.modified == modified
        {
            r.pass = self.pass;
            return Some((r.digest, r.component.clone()));
        }
        let now = SystemTime::now();
        // Only component files (no `derive`) are shared by identity: a manifest names its
        // own folder's files.
        let identity = derive.is_none().then(|| FileIdentity::settled(&meta, now)).flatten();
        let known = identity.and_then(|id| self.by_identity.get(&id));
        let (digest, component) = match known {
            Some(digest) => (digest, None),
            None => {
                let (digest, read, component) = hash_file(path, &meta, modified, derive)?;
                self.stats.files_hashed += 1;
                self.stats.bytes_hashed += read;
                if let Some(identity) = identity {
                    self.by_identity.insert(identity, digest);
                }
                (digest, component)
            }
        };
        // Sizes and times read before the contents: if the file changes in between, the
        // next pass sees a different (size, time) and hashes again.
        let settled = settled_by(modified, now);
        let remembered =
            Remembered { len: meta.len(), modified, settled, digest, component: component.clone(), pass: self.pass };
        self.files.insert(path.to_owned(), remembered);
        Some((digest, component))
    }
}

/// What a manifest's contents say about the files it names (its component's path).
type Derive<'a> = &'a dyn Fn(&[u8]) -> Option<PathBuf>;

/// The manifest is read whole to find its component; a larger file is not a manifest.
const MANIFEST_MAX: u64 = 1 << 20;
/// Components larger than this are identified by size and modification time, not read
/// (the loader refuses them anyway, from their metadata).
const HASHED_COMPONENT_MAX: u64 = 1 << 30;

/// Hashes `path`. With `derive` (the manifest) the file is read whole, up to
/// [`MANIFEST_MAX`], and handed to it; any other file is streamed through the hash, never
/// held in memory. Returns the digest, the bytes read and what `derive` made of them.
fn hash_file(
    path: &Path,
    meta: &std::fs::Metadata,
    modified: SystemTime,
    derive: Option<Derive<'_>>,
) -> Option<([u8; 32], u64, Option<PathBuf>)> {
    use std::io::Read;
    let mut hash = Sha256::new();
    let mut file = std::fs::File::open(path).ok()?;
    match derive {
        Some(derive) => {
            let mut bytes = Vec::new();
            file.take(MANIFEST_MAX).read_to_end(&mut bytes).ok()?;
            hash.update(&bytes);
            Some((hash.finalize().into(), bytes.len() as u64, derive(&bytes)))
        }
        None if meta.len() > HASHED_COMPONENT_MAX => {
            hash.update(meta.len().to_le_bytes());
            hash.update(format!("{modified:?}"));
            Some((hash.finalize().into(), 0, None))
        }
        None => {
            let read = std::io::copy(&mut file, &mut hash).ok()?;
            Some((hash.finalize().into(), read, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn age(path: &Path, by: Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    fn plugin(dir: &Path, wasm: &[u8]) {
        std::fs::write(
            dir.join(MANIFEST_FILE),
            "name: p\ncomponent: p.wasm\nresources:\n  - {apiVersion: v1, kind: Pod}\n",
        )
        .unwrap();
        std::fs::write(dir.join("p.wasm"), wasm).unwrap();
        age(&dir.join(MANIFEST_FILE), Duration::from_secs(60));
        age(&dir.join("p.wasm"), Duration::from_secs(60));
    }

    #[test]
    fn a_component_hard_linked_into_many_folders_is_hashed_once() {
        let root = tempfile::tempdir().unwrap();
        let (one, two) = (root.path().join("one"), root.path().join("two"));
        std::fs::create_dir_all(&one).unwrap();
        std::fs::create_dir_all(&two).unwrap();
        plugin(&one, b"\0asm-shared");
        plugin(&two, b"");
        std::fs::remove_file(two.join("p.wasm")).unwrap();
        std::fs::hard_link(one.join("p.wasm"), two.join("p.wasm")).unwrap();
        let mut digests = FileDigests::default();
        let (a, b) = (digests.fingerprint(&one).unwrap(), digests.fingerprint(&two).unwrap());
        assert_eq!(a, b, "same manifest text, same component");
        assert_eq!(digests.stats().files_hashed, 3, "two manifests and one component");
    }

    #[test]
    fn unchanged_files_are_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        plugin(dir.path(), b"\0asm-one");
        let mut digests = FileDigests::default();
        let first = digests.fingerprint(dir.path()).unwrap();
        let read = digests.stats();
        assert_eq!(read.files_hashed, 2);
        for _ in 0..10 {
            assert_eq!(digests.fingerprint(dir.path()).as_deref(), Some(first.as_str()));
        }
        assert_eq!(digests.stats(), read, "only metadata was read");
    }

    #[test]
    fn a_changed_component_changes_the_fingerprint_and_is_hashed_once() {
        let dir = tempfile::tempdir().unwrap();
        plugin(dir.path(), b"\0asm-one");
        let mut digests = FileDigests::default();
        let first = digests.fingerprint(dir.path()).unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"\0asm-two").unwrap();
        age(&dir.path().join("p.wasm"), Duration::from_secs(30));
        let second = digests.fingerprint(dir.path()).unwrap();
        assert_ne!(first, second);
        assert_eq!(digests.stats().files_hashed, 3, "the component again, not the manifest");
        assert_eq!(digests.fingerprint(dir.path()).unwrap(), second);
        assert_eq!(digests.stats().files_hashed, 3);
    }

    #[test]
    fn a_file_modified_just_now_is_hashed_until_it_settles() {
        let dir = tempfile::tempdir().unwrap();
        plugin(dir.path(), b"\0asm-one");
        std::fs::write(dir.path().join("p.wasm"), b"\0asm-two").unwrap();
        let mut digests = FileDigests::default();
        digests.fingerprint(dir.path());
        // Rewritten within the same timestamp tick with the same size, it would look the
        // same by (size, time): a fresh file's digest is not trusted.
        std::fs::write(dir.path().join("p.wasm"), b"\0asm-3!!").unwrap();
        let fresh = digests.fingerprint(dir.path()).unwrap();
        assert_eq!(digests.stats().files_hashed, 3);
        age(&dir.path().join("p.wasm"), Duration::from_secs(30));
        assert_eq!(digests.fingerprint(dir.path()).unwrap(), fresh);
        assert_eq!(digests.fingerprint(dir.path()).unwrap(), fresh);
        assert_eq!(digests.stats().files_hashed, 4, "hashed once more after settling, then remembered");
    }

    #[test]
    fn a_pass_forgets_files_it_did_not_use() {
        let dir = tempfile::tempdir().unwrap();
        plugin(dir.path(), b"\0asm-one");
        let mut digests = FileDigests::default();
        digests.begin_pass();
        digests.fingerprint(dir.path());
        digests.end_pass();
        assert_eq!(digests.files.len(), 2);
        digests.begin_pass();
        digests.end_pass();
        assert!(digests.files.is_empty());
    }
}

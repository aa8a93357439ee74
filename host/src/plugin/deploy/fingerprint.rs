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

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::plugin::manifest::{MANIFEST_FILE, Manifest};

use crate::plugin::runtime::file_identity::{FileIdentity, KnownDigests, settled_by};

/// How much file work fingerprinting took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HashStats {
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
pub(crate) struct FileDigests {
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
        fingerprint_with(&mut Exclusive(self), dir).fingerprint
    }

    /// [`fingerprint`](Self::fingerprint) with the digests shared between threads: the lock
    /// is held to look up and record digests, not while files are read and hashed, so that
    /// several plugins are fingerprinted at once. Also returns the manifest, when it was
    /// read to take the fingerprint (its digest was not remembered) and parses: exactly the
    /// text the fingerprint covers, for the caller to load without reading it again.
    pub fn fingerprint_shared(digests: &Mutex<Self>, dir: &Path) -> Fingerprinted {
        fingerprint_with(&mut Shared(digests), dir)
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

    /// The remembered digest of `path` if its size and modification time did not move
    /// since it was hashed (and it had settled then); marks it used by this pass.
    fn remembered(&mut self, path: &Path, len: u64, modified: SystemTime) -> Option<Digested> {
        let r = self.files.get_mut(path).filter(|r| r.settled && r.len == len && r.modified == modified)?;
        r.pass = self.pass;
        Some(Digested { digest: r.digest, component: r.component.clone(), manifest: None })
    }

    /// Records what hashing `path` found.
    fn record(&mut self, path: &Path, hashed: &Hashed, remembered: Remembered) {
        if let Some(read) = hashed.read {
            self.stats.files_hashed += 1;
            self.stats.bytes_hashed += read;
        }
        if let Some(identity) = hashed.identity {
            self.by_identity.insert(identity, remembered.digest);
        }
        self.files.insert(path.to_owned(), Remembered { pass: self.pass, ..remembered });
    }
}

/// A plugin's fingerprint, and its manifest when it was read to take it.
#[derive(Debug, Default)]
pub(crate) struct Fingerprinted {
    /// See [`FileDigests::fingerprint`].
    pub fingerprint: Option<String>,
    /// The manifest the fingerprint covers, if it was read now and parses.
    pub manifest: Option<Manifest>,
}

/// How the fingerprinting functions reach the digests: owned, or behind a lock taken for
/// each look-up and record.
trait Access {
    fn with<R>(&mut self, f: impl FnOnce(&mut FileDigests) -> R) -> R;
}

struct Exclusive<'a>(&'a mut FileDigests);

impl Access for Exclusive<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut FileDigests) -> R) -> R {
        f(self.0)
    }
}

struct Shared<'a>(&'a Mutex<FileDigests>);

impl Access for Shared<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut FileDigests) -> R) -> R {
        f(&mut self.0.lock())
    }
}

fn fingerprint_with(digests: &mut impl Access, dir: &Path) -> Fingerprinted {
    let manifest_path = dir.join(MANIFEST_FILE);
    let parse = |text: &[u8]| Manifest::parse(&String::from_utf8_lossy(text), &manifest_path).ok();
    let Some(manifest) = digest(digests, &manifest_path, Some(&parse)) else {
        return Fingerprinted::default();
    };
    let mut hash = Sha256::new();
    hash.update(manifest.digest);
    if let Some(component) = manifest.component.and_then(|path| digest(digests, &path, None)) {
        hash.update(component.digest);
    }
    Fingerprinted { fingerprint: Some(hex::encode(hash.finalize())), manifest: manifest.manifest }
}

/// A file's digest, with what its contents say when it is a manifest.
struct Digested {
    digest: [u8; 32],
    /// For a manifest: the component file it names (`None` if it does not parse).
    component: Option<PathBuf>,
    /// For a manifest read now: what it parsed to.
    manifest: Option<Manifest>,
}

/// What hashing a file found, beside its digest.
struct Hashed {
    /// The bytes read to hash it (`None`: its identity was known, nothing was read).
    read: Option<u64>,
    /// Its identity, when it is a settled component file.
    identity: Option<FileIdentity>,
}

/// The digest of `path` (and, for a manifest, what `parse` made of its contents), hashing
/// the file only if its size or modification time changed.
fn digest(digests: &mut impl Access, path: &Path, parse: Option<Parse<'_>>) -> Option<Digested> {
    let Ok(meta) = std::fs::metadata(path) else {
        digests.with(|d| d.files.remove(path));
        return None;
    };
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    if let Some(known) = digests.with(|d| d.remembered(path, meta.len(), modified)) {
        return Some(known);
    }
    let now = SystemTime::now();
    // Only component files (no `parse`) are shared by identity: a manifest names its own
    // folder's files.
    let identity = parse.is_none().then(|| FileIdentity::settled(&meta, now)).flatten();
    let known = identity.and_then(|id| digests.with(|d| d.by_identity.get(&id)));
    let (digest, hashed, manifest) = match known {
        Some(digest) => (digest, Hashed { read: None, identity: None }, None),
        None => {
            let (digest, read, manifest) = hash_file(path, &meta, modified, parse)?;
            (digest, Hashed { read: Some(read), identity }, manifest)
        }
    };
    // Sizes and times read before the contents: if the file changes in between, the next
    // pass sees a different (size, time) and hashes again.
    let component = manifest.as_ref().map(Manifest::component_path);
    let remembered = Remembered {
        len: meta.len(),
        modified,
        settled: settled_by(modified, now),
        digest,
        component: component.clone(),
        pass: 0,
    };
    digests.with(|d| d.record(path, &hashed, remembered));
    Some(Digested { digest, component, manifest })
}

/// What a manifest's contents parse to.
type Parse<'a> = &'a dyn Fn(&[u8]) -> Option<Manifest>;

/// The manifest is read whole to find its component; a larger file is not a manifest.
const MANIFEST_MAX: u64 = 1 << 20;
/// Components larger than this are identified by size and modification time, not read
/// (the loader refuses them anyway, from their metadata).
const HASHED_COMPONENT_MAX: u64 = 1 << 30;

/// Hashes `path`. With `parse` (the manifest) the file is read whole, up to
/// [`MANIFEST_MAX`], and handed to it; any other file is streamed through the hash, never
/// held in memory. Returns the digest, the bytes read and what `parse` made of them.
fn hash_file(
    path: &Path,
    meta: &std::fs::Metadata,
    modified: SystemTime,
    parse: Option<Parse<'_>>,
) -> Option<([u8; 32], u64, Option<Manifest>)> {
    use std::io::Read;
    let mut hash = Sha256::new();
    let mut file = std::fs::File::open(path).ok()?;
    match parse {
        Some(parse) => {
            let mut bytes = Vec::new();
            file.take(MANIFEST_MAX).read_to_end(&mut bytes).ok()?;
            hash.update(&bytes);
            Some((hash.finalize().into(), bytes.len() as u64, parse(&bytes)))
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
    fn a_shared_fingerprint_hands_over_the_manifest_it_read() {
        let dir = tempfile::tempdir().unwrap();
        plugin(dir.path(), b"\0asm-one");
        let digests = Mutex::new(FileDigests::default());
        let first = FileDigests::fingerprint_shared(&digests, dir.path());
        assert_eq!(
            first.manifest.map(|m| m.name.to_string()).as_deref(),
            Some("p"),
            "read now: parsed once, handed over"
        );
        let again = FileDigests::fingerprint_shared(&digests, dir.path());
        assert!(again.manifest.is_none(), "remembered: not read again");
        assert_eq!(again.fingerprint, first.fingerprint);
        assert_eq!(digests.lock().fingerprint(dir.path()), first.fingerprint, "the same fingerprint either way");
        assert_eq!(digests.lock().stats().files_hashed, 2);
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

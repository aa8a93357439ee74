//! A content-addressed cache of OCI blobs and manifests: `<dir>/sha256/<hex>`.
//!
//! An entry is written to a temporary file and renamed into place, and read back only if
//! its bytes still hash to its name: a corrupted or truncated entry is a miss (and is
//! replaced), never a wrong plugin.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The digest of `bytes` in OCI form: `sha256:<hex>`.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Why a digest string cannot name a cache entry.
#[derive(Debug, thiserror::Error)]
#[error("unsupported or malformed digest {0:?} (expected sha256:<64 hex digits>)")]
pub struct BadDigest(pub String);

/// The hex part of a `sha256:` digest, checked.
fn hex_of(digest: &str) -> Result<&str, BadDigest> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) => {
            Ok(hex)
        }
        _ => Err(BadDigest(digest.to_owned())),
    }
}

/// The cache folder.
#[derive(Clone, Debug)]
pub(crate) struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, digest: &str) -> Result<PathBuf, BadDigest> {
        Ok(self.dir.join("sha256").join(hex_of(digest)?))
    }

    /// The cached bytes of `digest`, if present and intact.
    pub fn get(&self, digest: &str) -> Result<Option<Vec<u8>>, BadDigest> {
        let path = self.path(digest)?;
        Ok(std::fs::read(&path).ok().filter(|bytes| sha256_digest(bytes) == digest))
    }

    /// Stores `bytes` under `digest`. Refuses bytes that do not hash to it.
    pub fn put(&self, digest: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.path(digest).map_err(std::io::Error::other)?;
        if sha256_digest(bytes) != digest {
            return Err(std::io::Error::other(format!("refusing to cache bytes that do not hash to {digest}")));
        }
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)?;
        let mut file = tempfile::NamedTempFile::new_in(parent)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_digest_and_a_corrupted_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path());
        let digest = sha256_digest(b"hello");
        assert_eq!(store.get(&digest).unwrap(), None);
        store.put(&digest, b"hello").unwrap();
        assert_eq!(store.get(&digest).unwrap().as_deref(), Some(&b"hello"[..]));
        std::fs::write(store.path(&digest).unwrap(), b"hellO").unwrap();
        assert_eq!(store.get(&digest).unwrap(), None, "bytes that no longer hash to the name are not used");
        assert!(store.put(&digest, b"other").is_err(), "bytes must hash to the digest they are stored under");
    }

    #[test]
    fn only_well_formed_sha256_digests_name_entries() {
        let store = BlobStore::new("/nonexistent");
        for bad in ["sha256:../../etc", "sha512:00", "sha256:ABC", "", &format!("sha256:{}", "A".repeat(64))] {
            assert!(store.get(bad).is_err(), "{bad:?}");
        }
    }
}

//! Writing build outputs so that concurrent readers and writers never see half a file.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader sees the old content or the new, never a mix. Leaves `path` untouched (not even its
/// mtime) when it already holds `bytes`. Returns whether the file was written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<bool> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    let dir = path.parent().with_context(|| format!("{} has no parent folder", path.display()))?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(temp_name(path));
    let written = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(true)
}

/// A name no other writer uses at the same time: the target's name, this process and a counter.
fn temp_name(path: &Path) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.{}.{n}.tmp", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replaces_and_skips_identical_content() {
        let dir = std::env::temp_dir().join(format!("xtask-fsutil-{}", std::process::id()));
        let path = dir.join("sub/out.bin");
        assert!(write_atomic(&path, b"one").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert!(!write_atomic(&path, b"one").unwrap());
        assert!(write_atomic(&path, b"two").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["out.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}

//! Finding and reading the directory source's manifest files without trusting them.
//!
//! The folder is walked with `walkdir`, following symbolic links to files and folders and
//! reporting (instead of entering) a link that loops back to a folder being walked. Only
//! regular files are read: the type is checked after links are resolved, before opening, so
//! a FIFO, socket or device (`/dev/zero`) is never opened; the open itself does not block
//! (`O_NONBLOCK`) and the opened handle is checked again, in case the path was swapped in
//! between. A file larger than the size limit is refused from its metadata, and reading
//! stops at the limit, since a file can grow while it is read. Each refusal is an error that
//! names the path; the caller warns and carries on with every other file.

use std::fs::{File, FileType};
use std::io::Read;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use super::dir::DirSourceError;

/// The manifest files found under a folder, and the entries that were skipped.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Files named like manifests, sorted.
    pub files: Vec<PathBuf>,
    /// Entries that could not be walked: link loops, unreadable folders, broken links to
    /// manifests.
    pub skipped: Vec<DirSourceError>,
}

/// Whether `path` names a manifest: `*.yaml`, `*.yml` or `*.json`, not hidden.
pub(super) fn is_manifest(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        && !path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

/// Walks `root` for manifest files. Fails only when `root` itself cannot be read.
pub(super) fn manifest_files(root: &Path) -> Result<Found, DirSourceError> {
    let mut found = Found::default();
    // Hidden entries hold no cluster objects: `.git`, `.github`, and a mounted ConfigMap's
    // `..data` / `..2024_…` folders, whose files its top-level links already name.
    let walk = WalkDir::new(root).follow_links(true).sort_by_file_name();
    for entry in walk.into_iter().filter_entry(|e| e.depth() == 0 || !is_hidden(e.file_name())) {
        match entry {
            Ok(entry) if entry.file_type().is_dir() => {}
            Ok(entry) => {
                if is_manifest(entry.path()) {
                    found.files.push(entry.into_path());
                }
            }
            Err(err) => {
                let path = err.path().unwrap_or(root).to_owned();
                if let Some(ancestor) = err.loop_ancestor() {
                    found.skipped.push(DirSourceError::Loop { path, ancestor: ancestor.to_owned() });
                    continue;
                }
                let depth = err.depth();
                let source = err.into_io_error().unwrap_or_else(|| std::io::Error::other("cannot walk"));
                if depth == 0 {
                    return Err(DirSourceError::Io { path, source });
                }
                // A dangling link not named like a manifest (an editor's lock file) is no
                // concern of the source.
                if is_manifest(&path) || source.kind() != std::io::ErrorKind::NotFound {
                    found.skipped.push(DirSourceError::Io { path, source });
                }
            }
        }
    }
    Ok(found)
}

/// Whether a file or folder name starts with `.`.
fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

fn describe(file_type: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
    }
    if file_type.is_dir() { "a folder" } else { "not a regular file" }
}

/// Reads one manifest file: a regular file (after following links) of at most `max_bytes`
/// bytes, in UTF-8.
pub(super) fn read_manifest(path: &Path, max_bytes: u64) -> Result<String, DirSourceError> {
    let io = |source| DirSourceError::Io { path: path.to_owned(), source };
    let check = |meta: std::fs::Metadata| {
        if !meta.is_file() {
            return Err(DirSourceError::NotAFile { path: path.to_owned(), file_type: describe(meta.file_type()) });
        }
        if meta.len() > max_bytes {
            return Err(DirSourceError::TooLarge { path: path.to_owned(), limit: max_bytes });
        }
        Ok(())
    };
    check(std::fs::metadata(path).map_err(io)?)?;
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading waits for a writer; swapped in after the check above,
        // it must not stall the source.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(io)?;
    check(file.metadata().map_err(io)?)?;
    read_capped(file, path, max_bytes)
}

/// Reads at most `max_bytes` bytes from `reader` as UTF-8 text; more is an error.
pub(super) fn read_capped(reader: impl Read, path: &Path, max_bytes: u64) -> Result<String, DirSourceError> {
    let mut bytes = Vec::new();
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| DirSourceError::Io { path: path.to_owned(), source })?;
    if bytes.len() as u64 > max_bytes {
        return Err(DirSourceError::TooLarge { path: path.to_owned(), limit: max_bytes });
    }
    String::from_utf8(bytes)
        .map_err(|e| DirSourceError::Malformed { path: path.to_owned(), message: format!("not UTF-8: {e}") })
}

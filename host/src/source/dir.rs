//! A folder of YAML/JSON manifests as the "cluster": wink's built-in source.
//!
//! Every object in every `*.yaml`, `*.yml` or `*.json` file under the folder (multi-document
//! YAML and `kind: List` included) is an object of the cluster. Listing reads them; watching
//! turns file creations, edits and removals into ADDED / MODIFIED / DELETED events with
//! increasing resourceVersions. Each kind is served by its own [`MemorySource`], which gives
//! the watch-cache semantics (resourceVersions, history, bookmarks) for free.
//!
//! A malformed file is reported with its path and skipped; the objects it held before stay
//! as they were, and every other file keeps flowing. The files are not trusted (see
//! `dir_read.rs`): only regular files of at most
//! [`DirSourceOptions::max_file_bytes`] are read, and a folder link that loops is skipped,
//! each with an error naming it. A document nested deeper than an object may be
//! ([`MAX_DEPTH`]) is refused with an error naming the file and the document, without taking
//! the file's other documents with it; one nested absurdly deep is refused before the YAML
//! parser sees it (see [`nesting`](super::nesting)). Changes are picked up by
//! [`DirSource::rescan`], which [`DirSource::watch`] calls whenever the file watcher
//! (`notify`, debounced) reports a change.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::dir_read::{manifest_files, read_manifest};
use super::memory::MemorySource;
use super::nesting::{Estimate, estimated_depth, split_documents, value_depth};
use crate::informer::factory::{ResourceKey, SourceProvider};
use crate::informer::list_watch::{ListerWatcher, SourceError};
use crate::informer::object::MAX_DEPTH;

/// Errors of the directory source.
#[derive(Debug, thiserror::Error)]
pub enum DirSourceError {
    /// The folder cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file does not hold valid objects.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        message: String,
    },
    /// A manifest path resolves to something other than a regular file (a FIFO, a device…).
    #[error("{path}: {file_type}, not a regular file; skipped")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        file_type: &'static str,
    },
    /// A manifest file is larger than [`DirSourceOptions::max_file_bytes`].
    #[error("{path}: larger than {limit} bytes; skipped")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// A folder link leads back to a folder that contains it.
    #[error("{path}: link loops back to {ancestor}; skipped")]
    Loop {
        /// The link.
        path: PathBuf,
        /// The folder it leads back to.
        ancestor: PathBuf,
    },
    /// The file watcher could not start.
    #[error("cannot watch {path}: {message}")]
    Watch {
        /// The folder.
        path: PathBuf,
        /// The watcher's error.
        message: String,
    },
}

/// Identity of an object in the folder: (apiVersion, kind, key).
type ObjectId = (String, String, String);

#[derive(Default)]
struct FileState {
    /// The file's text when last read successfully.
    text: String,
    /// The objects it defined, with their JSON.
    objects: BTreeMap<ObjectId, serde_json::Value>,
}

#[derive(Default)]
struct State {
    files: HashMap<PathBuf, FileState>,
    kinds: HashMap<(String, String), MemorySource>,
}

impl State {
    fn source(&mut self, api_version: &str, kind: &str) -> MemorySource {
        self.kinds.entry((api_version.to_owned(), kind.to_owned())).or_default().clone()
    }
}

/// Options of a [`DirSource`].
#[derive(Clone, Debug)]
pub struct DirSourceOptions {
    /// The largest manifest file read, in bytes; larger files are skipped with an error.
    /// Default 16 MiB.
    pub max_file_bytes: u64,
}

impl Default for DirSourceOptions {
    fn default() -> Self {
        Self { max_file_bytes: 16 << 20 }
    }
}

/// A folder of manifests served as a cluster.
pub struct DirSource {
    root: PathBuf,
    options: DirSourceOptions,
    state: Mutex<State>,
}

impl std::fmt::Debug for DirSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirSource").field("root", &self.root).finish()
    }
}

/// A manifest file's objects, and the documents refused for nesting too deep.
#[derive(Debug, Default)]
pub struct ParsedManifest {
    /// The objects, in file order.
    pub objects: Vec<serde_json::Value>,
    /// One error per refused document, naming the file and the document.
    pub refused: Vec<DirSourceError>,
}

/// Documents with their numbers in the file (from 1).
type NumberedDocuments = Vec<(usize, serde_json::Value)>;

/// Parses the documents of a YAML stream. A document nested deeper than [`MAX_DEPTH`] is
/// refused on its own (an error in `refused`); any other invalid document fails the file.
fn parse_yaml(path: &Path, text: &str) -> Result<(NumberedDocuments, Vec<DirSourceError>), DirSourceError> {
    let malformed = |message: String| DirSourceError::Malformed { path: path.to_owned(), message };
    let too_deep =
        |number: usize| malformed(format!("document {number}: nested deeper than {MAX_DEPTH} levels; skipped"));
    // Documents far too deep are left out unparsed (as empty documents, so that the others
    // keep their numbers): the parser's work grows with the square of the depth.
    let documents = split_documents(text);
    let first_number = usize::from(!documents.leading_empty);
    let mut estimates = Vec::with_capacity(documents.parts.len());
    let mut refused = Vec::new();
    let mut kept = String::with_capacity(text.len());
    for (i, part) in documents.parts.iter().enumerate() {
        let estimate = if i == 0 && documents.leading_empty { Estimate::default() } else { estimated_depth(part) };
        if estimate.too_deep_to_parse() {
            refused.push(too_deep(i + first_number));
            kept.push_str(if part.starts_with("---") { "---\nnull\n" } else { "null\n" });
        } else {
            kept.push_str(part);
        }
        estimates.push(estimate);
    }
    let mut docs = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(&kept).enumerate() {
        let number = i + 1;
        let estimate = estimates.get(i + usize::from(documents.leading_empty)).map_or(0, |e| e.overall);
        match serde_json::Value::deserialize(doc) {
            Ok(value) if value_depth(&value) > MAX_DEPTH => refused.push(too_deep(number)),
            Ok(value) if value.is_null() => {}
            Ok(value) => docs.push((number, value)),
            // The parser's own recursion limit ("recursion limit exceeded"): only possible
            // where the estimate is deep.
            Err(e) if estimate > MAX_DEPTH => refused.push(malformed(format!("document {number}: {e}; skipped"))),
            Err(e) => return Err(malformed(format!("document {number}: invalid YAML: {e}"))),
        }
    }
    Ok((docs, refused))
}

/// Parses one manifest file into objects.
pub fn parse_manifest_file(path: &Path, text: &str) -> Result<ParsedManifest, DirSourceError> {
    let malformed = |message: String| DirSourceError::Malformed { path: path.to_owned(), message };
    let (docs, refused) = if path.extension().is_some_and(|e| e == "json") {
        // serde_json stops at its recursion limit, MAX_DEPTH, at once.
        (vec![(1, serde_json::from_str(text).map_err(|e| malformed(format!("invalid JSON: {e}")))?)], Vec::new())
    } else {
        parse_yaml(path, text)?
    };
    let mut objects = Vec::new();
    for (number, doc) in docs {
        let where_ = format!("document {number}");
        if doc.get("kind").and_then(|k| k.as_str()).is_some_and(|k| k.ends_with("List"))
            && let Some(items) = doc.get("items").and_then(|i| i.as_array())
        {
            objects.extend(items.iter().cloned());
            continue;
        }
        for field in ["apiVersion", "kind"] {
            if doc.get(field).and_then(|v| v.as_str()).is_none_or(str::is_empty) {
                return Err(malformed(format!("{where_}: missing `{field}`")));
            }
        }
        if doc.pointer("/metadata/name").and_then(|v| v.as_str()).is_none_or(str::is_empty) {
            return Err(malformed(format!("{where_}: missing `metadata.name`")));
        }
        objects.push(doc);
    }
    Ok(ParsedManifest { objects, refused })
}

fn object_id(value: &serde_json::Value) -> Option<ObjectId> {
    let s = |p: &str| value.pointer(p).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
    let name = s("/metadata/name");
    if name.is_empty() {
        return None;
    }
    let ns = s("/metadata/namespace");
    let key = if ns.is_empty() { name } else { format!("{ns}/{name}") };
    Some((s("/apiVersion"), s("/kind"), key))
}

impl DirSource {
    /// Opens a folder and reads it once. Malformed files are logged and skipped.
    pub fn open(root: impl Into<PathBuf>) -> Result<Arc<Self>, DirSourceError> {
        Self::open_with(root, DirSourceOptions::default())
    }

    /// [`open`](Self::open) with options.
    pub fn open_with(root: impl Into<PathBuf>, options: DirSourceOptions) -> Result<Arc<Self>, DirSourceError> {
        let root = root.into();
        if !root.is_dir() {
            let source = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
            return Err(DirSourceError::Io { path: root, source });
        }
        let this = Arc::new(Self { root, options, state: Mutex::default() });
        for err in this.rescan()? {
            tracing::warn!(error = %err, "skipping malformed manifest");
        }
        Ok(this)
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Re-reads the folder and applies what changed. Returns the files that could not be
    /// read or parsed (their previous objects are kept), the entries skipped while walking
    /// the folder, and the documents refused.
    pub fn rescan(&self) -> Result<Vec<DirSourceError>, DirSourceError> {
        let found = manifest_files(&self.root)?;
        let files = found.files;
        let mut errors = found.skipped;
        let mut state = self.state.lock();
        let gone: Vec<PathBuf> = state.files.keys().filter(|p| !files.contains(p)).cloned().collect();
        for path in gone {
            if let Some(file) = state.files.remove(&path) {
                for (api_version, kind, key) in file.objects.keys() {
                    state.source(api_version, kind).delete(key);
                }
            }
        }
        for path in files {
            let text = match read_manifest(&path, self.options.max_file_bytes) {
                Ok(text) => text,
                // Removed since the folder was walked (an editor's save): the next rescan,
                // which its removal triggers, sees it gone.
                Err(DirSourceError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => {
                    errors.push(err);
                    continue;
                }
            };
            if state.files.get(&path).is_some_and(|f| f.text == text) {
                continue;
            }
            let objects = match parse_manifest_file(&path, &text) {
                Ok(parsed) => {
                    errors.extend(parsed.refused);
                    parsed.objects
                }
                Err(err) => {
                    errors.push(err);
                    continue;
                }
            };
            let mut new: BTreeMap<ObjectId, serde_json::Value> = BTreeMap::new();
            for obj in objects {
                if let Some(id) = object_id(&obj) {
                    new.insert(id, obj);
                }
            }
            let old = state.files.remove(&path).unwrap_or_default();
            for id in old.objects.keys().filter(|id| !new.contains_key(*id)) {
                state.source(&id.0, &id.1).delete(&id.2);
            }
            for (id, value) in &new {
                if old.objects.get(id) == Some(value) {
                    continue;
                }
                if let Err(err) = state.source(&id.0, &id.1).apply(value.clone()) {
                    errors.push(DirSourceError::Malformed { path: path.clone(), message: format!("{}: {err}", id.2) });
                }
            }
            state.files.insert(path, FileState { text, objects: new });
        }
        Ok(errors)
    }

    /// Watches the folder and rescans on every (debounced) change until `cancel` fires.
    pub fn watch(self: &Arc<Self>, cancel: CancellationToken) -> Result<tokio::task::JoinHandle<()>, DirSourceError> {
        let this = self.clone();
        crate::fswatch::watch_folder(&self.root, Duration::from_millis(100), cancel, move || match this.rescan() {
            Ok(errors) => {
                for err in errors {
                    tracing::warn!(error = %err, "skipping malformed manifest");
                }
            }
            Err(err) => tracing::warn!(error = %err, "cannot rescan manifests"),
        })
        .map_err(|e| DirSourceError::Watch { path: e.path, message: e.message })
    }

    /// The kinds present in the folder, as (apiVersion, kind).
    pub fn kinds(&self) -> Vec<(String, String)> {
        self.state.lock().kinds.keys().cloned().collect()
    }
}

impl SourceProvider for DirSource {
    fn lister_watcher(&self, resource: &ResourceKey) -> Result<Arc<dyn ListerWatcher>, SourceError> {
        if resource.namespace.is_some() || resource.label_selector.is_some() || resource.field_selector.is_some() {
            return Err(SourceError::Unsupported(format!(
                "the directory source serves whole kinds; filter {resource} on the host side"
            )));
        }
        Ok(Arc::new(self.state.lock().source(&resource.api_version, &resource.kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn keys(src: &DirSource, api_version: &str, kind: &str) -> Vec<String> {
        let mut state = src.state.lock();
        state.source(api_version, kind).objects().iter().map(|o| o.key().to_owned()).collect()
    }

    #[test]
    fn reads_multi_document_yaml_lists_and_json() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: shop}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: shop}\n",
        );
        write(
            dir.path(),
            "b.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop"}}]}"#,
        );
        write(dir.path(), "notes.txt", "not a manifest");
        let src = DirSource::open(dir.path()).unwrap();
        assert_eq!(keys(&src, "v1", "ConfigMap"), ["shop/one", "shop/two"]);
        assert_eq!(keys(&src, "v1", "Pod"), ["shop/p"]);
    }

    #[test]
    fn edits_and_removals_become_updates_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {v: '1'}\n");
        let src = DirSource::open(dir.path()).unwrap();
        let cms = src.state.lock().source("v1", "ConfigMap");
        let rv1 = cms.get("one").unwrap().resource_version().to_owned();
        write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {v: '2'}\n");
        assert!(src.rescan().unwrap().is_empty());
        let rv2 = cms.get("one").unwrap().resource_version().to_owned();
        assert!(rv2.parse::<u64>().unwrap() > rv1.parse::<u64>().unwrap());
        assert!(cms.get("one").unwrap().json().contains("\"2\""));
        std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
        src.rescan().unwrap();
        assert!(cms.get("one").is_none());
    }

    #[test]
    fn a_malformed_file_is_reported_with_its_path_and_keeps_its_previous_objects() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n");
        write(dir.path(), "flaky.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flaky}\n");
        let src = DirSource::open(dir.path()).unwrap();
        write(dir.path(), "flaky.yaml", "apiVersion: v1\nkind: [unclosed\n");
        write(dir.path(), "nameless.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n");
        write(dir.path(), "later.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: later}\n");
        let errors = src.rescan().unwrap();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 2, "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("flaky.yaml") && m.contains("invalid YAML")), "{messages:?}");
        assert!(messages.iter().any(|m| m.contains("nameless.yaml") && m.contains("metadata.name")), "{messages:?}");
        assert_eq!(keys(&src, "v1", "ConfigMap"), ["flaky", "good", "later"]);
    }
}

#[cfg(test)]
#[path = "dir_hostile_tests.rs"]
mod hostile_tests;

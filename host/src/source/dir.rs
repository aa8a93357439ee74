//! A folder of YAML/JSON manifests as the "cluster": wink's built-in source.
//!
//! Every object in every `*.yaml`, `*.yml` or `*.json` file under the folder (multi-document
//! YAML and `kind: List` included) is an object of the cluster. Listing reads them; watching
//! turns file creations, edits and removals into ADDED / MODIFIED / DELETED events with
//! increasing resourceVersions. Each kind is served by its own [`MemorySource`], which gives
//! the watch-cache semantics (resourceVersions, history, bookmarks) for free.
//!
//! A malformed file is reported with its path and skipped; the objects it held before stay
//! as they were, and every other file keeps flowing. Changes are picked up by
//! [`DirSource::rescan`], which [`DirSource::watch`] calls whenever the file watcher
//! (`notify`, debounced) reports a change.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::memory::MemorySource;
use crate::informer::factory::{ResourceKey, SourceProvider};
use crate::informer::list_watch::{ListerWatcher, SourceError};

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

/// A folder of manifests served as a cluster.
pub struct DirSource {
    root: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for DirSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirSource").field("root", &self.root).finish()
    }
}

/// Parses one manifest file into objects.
pub fn parse_manifest_file(path: &Path, text: &str) -> Result<Vec<serde_json::Value>, DirSourceError> {
    let malformed = |message: String| DirSourceError::Malformed { path: path.to_owned(), message };
    let docs: Vec<serde_json::Value> = if path.extension().is_some_and(|e| e == "json") {
        vec![serde_json::from_str(text).map_err(|e| malformed(format!("invalid JSON: {e}")))?]
    } else {
        let mut docs = Vec::new();
        for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
            let value = serde_json::Value::deserialize(doc)
                .map_err(|e| malformed(format!("document {}: invalid YAML: {e}", i + 1)))?;
            if !value.is_null() {
                docs.push(value);
            }
        }
        docs
    };
    let mut objects = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let where_ = format!("document {}", i + 1);
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
    Ok(objects)
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

fn is_manifest(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        && !path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

fn manifest_files(root: &Path) -> Result<Vec<PathBuf>, DirSourceError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| DirSourceError::Io { path: dir.clone(), source })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if is_manifest(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

impl DirSource {
    /// Opens a folder and reads it once. Malformed files are logged and skipped.
    pub fn open(root: impl Into<PathBuf>) -> Result<Arc<Self>, DirSourceError> {
        let root = root.into();
        if !root.is_dir() {
            let source = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
            return Err(DirSourceError::Io { path: root, source });
        }
        let this = Arc::new(Self { root, state: Mutex::default() });
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
    /// parsed (their previous objects are kept).
    pub fn rescan(&self) -> Result<Vec<DirSourceError>, DirSourceError> {
        let files = manifest_files(&self.root)?;
        let mut errors = Vec::new();
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
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            if state.files.get(&path).is_some_and(|f| f.text == text) {
                continue;
            }
            let objects = match parse_manifest_file(&path, &text) {
                Ok(objects) => objects,
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

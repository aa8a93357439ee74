//! A folder of YAML/JSON manifests as the "cluster": wink's built-in source.
//!
//! Every object in every `*.yaml`, `*.yml` or `*.json` file under the folder (multi-document
//! YAML and `kind: List` included) is an object of the cluster. Listing reads them; watching
//! turns file creations, edits and removals into ADDED / MODIFIED / DELETED events with
//! increasing resourceVersions. Each kind is served by its own [`MemorySource`], which gives
//! the watch-cache semantics (resourceVersions, history, bookmarks) for free.
//!
//! The cache holds what `kubectl apply -f FOLDER --recursive` into an empty cluster would
//! hold: what a file's text means is [`documents`](super::documents)' concern (one bad
//! document is skipped alone), and where each object goes (namespaces, uids) is
//! [`placement`](super::placement)'s, a pass over every file's objects after reading, as the
//! folder's CustomResourceDefinitions say which of their kinds are namespaced.
//!
//! An object defined in several files exists while any of them defines it; when their
//! definitions differ, the last path in sort order wins (with one warning naming the files),
//! a stable rule. Only a change of an object's winning definition reaches the cache, so a
//! rename, a rewrite of the same text or a ConfigMap volume's `..data` swap is no event.
//! Hidden files and folders (`.git`, a mounted ConfigMap's `..data`) are not read.
//!
//! A malformed file is reported with its path and skipped; the objects it held before stay
//! as they were, and every other file keeps flowing. The files are not trusted (see
//! `dir_read.rs`): only regular files of at most
//! [`DirSourceOptions::max_file_bytes`] are read, and a folder link that loops is skipped,
//! each with an error naming it. A document nested deeper than an object may be
//! ([`MAX_DEPTH`](crate::informer::object::MAX_DEPTH)) is refused with an error naming the file and the document, without taking
//! the file's other documents with it; one nested absurdly deep is refused before the YAML
//! parser sees it (see [`nesting`](super::nesting)). Changes are picked up by
//! [`DirSource::rescan`], which [`DirSource::watch`] calls whenever the file watcher
//! (`notify`, debounced) reports a change.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::dir_cluster::file_write;
use super::dir_read::{manifest_files, read_manifest};
pub use super::documents::{ManifestObject, parse_manifest_file};
use super::placement::{ObjectId, Placer};
use crate::embedded::{MemorySource, MemorySourceOptions, Revision, SYSTEM_NAMESPACES, Write};

use crate::informer::factory::{ResourceKey, SourceProvider};
use crate::informer::list_watch::{ListerWatcher, SourceError};
#[cfg(test)]
use crate::informer::object::MAX_DEPTH;
use crate::kube::scope::Scopes;

/// How often a watch that allows bookmarks gets one: kube-apiserver's cacher sends one
/// about every minute (`defaultBookmarkFrequency`), and the last 2 s before the watch ends.
const BOOKMARK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

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
    /// An object is placed otherwise than written (a cluster-scoped object's namespace
    /// ignored, an unknown kind taken as namespaced) or refused for naming another namespace
    /// than the one given; see `placement`.
    #[error("{path}: {message}")]
    Placement {
        /// The file.
        path: PathBuf,
        /// The document, the object, and what was done.
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
    /// Several files define one object differently; the last path in sort order wins.
    #[error("{object} is defined differently in {others} and in {path}; {path} wins (the last path in sort order)")]
    Conflict {
        /// The winning file.
        path: PathBuf,
        /// The object: apiVersion, kind, key.
        object: String,
        /// The other files defining it differently.
        others: String,
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

#[derive(Default)]
struct FileState {
    /// The file's text when last read successfully.
    text: String,
    /// Its objects as written.
    parsed: Vec<ManifestObject>,
    /// Its objects as placed in the cache (see [`Placer`]), with their JSON.
    objects: BTreeMap<ObjectId, serde_json::Value>,
}

struct State {
    files: HashMap<PathBuf, FileState>,
    /// Every file defining each object. The object exists while any does; the last path in
    /// sort order wins when their definitions differ (a stable rule, kept across edits).
    definitions: HashMap<ObjectId, BTreeSet<PathBuf>>,
    kinds: HashMap<(String, String), MemorySource>,
    /// The namespaces the files' objects are placed in (kept by [`State::place`]).
    namespaces: HashSet<String>,
    /// The resourceVersion counter every kind's store shares (one revision, as etcd's).
    revision: Revision,
    placer: Placer,
}

impl State {
    /// The winning definition of `id`, looking at the files still present and at `gone`.
    fn winner<'a>(
        &'a self,
        id: &ObjectId,
        gone: &'a HashMap<PathBuf, FileState>,
    ) -> Option<(&'a PathBuf, &'a serde_json::Value)> {
        let paths = self.definitions.get(id)?;
        paths.iter().rev().find_map(|path| {
            let file = self.files.get(path).or_else(|| gone.get(path))?;
            file.objects.get(id).map(|value| (path, value))
        })
    }

    /// Places the objects of the files read anew (all files' objects, when the folder's
    /// CustomResourceDefinitions changed), forgets the files `gone`, and applies to the cache
    /// what that changed for each object's winning definition: an object defined in several
    /// files stays while any defines it, and an unchanged result (a rename, a rewrite of the
    /// same content) is no event. Returns the placement warnings of the files whose objects
    /// changed, and a warning for each object whose definitions now differ.
    fn place(&mut self, changed: &BTreeSet<PathBuf>, gone: HashMap<PathBuf, FileState>) -> Vec<DirSourceError> {
        let mut errors = Vec::new();
        let scopes = Scopes::from_objects(self.files.values().flat_map(|f| f.parsed.iter().map(|o| &o.value)));
        let paths: Vec<PathBuf> = if self.placer.set_scopes(scopes) {
            let mut all: Vec<PathBuf> = self.files.keys().cloned().collect();
            all.sort();
            all
        } else {
            changed.iter().filter(|p| self.files.contains_key(*p)).cloned().collect()
        };
        let mut placed_files = Vec::new();
        let mut affected: BTreeSet<ObjectId> = gone.values().flat_map(|f| f.objects.keys().cloned()).collect();
        for path in paths {
            let Some(file) = self.files.get(&path) else { continue };
            let placed = self.placer.place(&path, &file.parsed);
            errors.extend(placed.unknown_kinds);
            if changed.contains(&path) || placed.objects != file.objects {
                errors.extend(placed.warnings);
            }
            affected.extend(file.objects.keys().cloned());
            affected.extend(placed.objects.keys().cloned());
            placed_files.push((path, placed.objects));
        }
        let before: Vec<Option<serde_json::Value>> =
            affected.iter().map(|id| self.winner(id, &gone).map(|(_, v)| v.clone())).collect();
        for (path, file) in &gone {
            for id in file.objects.keys() {
                self.forget_definition(id, path);
            }
        }
        for (path, objects) in placed_files {
            let Some(file) = self.files.get_mut(&path) else { continue };
            let old = std::mem::replace(&mut file.objects, objects);
            let new_ids: Vec<ObjectId> = file.objects.keys().cloned().collect();
            for id in old.keys().filter(|id| !file.objects.contains_key(*id)) {
                if let Some(paths) = self.definitions.get_mut(id) {
                    paths.remove(&path);
                    if paths.is_empty() {
                        self.definitions.remove(id);
                    }
                }
            }
            for id in new_ids {
                self.definitions.entry(id).or_default().insert(path.clone());
            }
        }
        self.namespaces =
            self.definitions.keys().filter_map(|(_, _, key)| Some(key.split_once('/')?.0.to_owned())).collect();
        let no_gone = HashMap::new();
        for (id, before) in affected.iter().zip(before) {
            let after = self.winner(id, &no_gone).map(|(path, value)| (path.clone(), value.clone()));
            if before.as_ref() == after.as_ref().map(|(_, v)| v) {
                continue;
            }
            errors.extend(self.differing_definitions(id));
            match after {
                Some((path, value)) => {
                    let written = self.source(&id.0, &id.1).write(&id.2, |current| file_write(current, value));
                    if let Err(err) = written {
                        errors.push(DirSourceError::Malformed { path, message: format!("{}: {err}", id.2) });
                    }
                }
                None => {
                    self.source(&id.0, &id.1).delete(&id.2);
                }
            }
        }
        self.add_namespaces();
        errors
    }

    /// Stores a Namespace object for each namespace every cluster has and each the files'
    /// objects are in, where none is stored: as a cluster the folder was applied to would
    /// have them (`kubectl get ns` lists them). One a file defines takes its place; one the
    /// files stop using stays, as it would.
    fn add_namespaces(&mut self) {
        let mut names: Vec<String> = SYSTEM_NAMESPACES.iter().map(|n| (*n).to_owned()).collect();
        names.extend(self.namespaces.iter().cloned());
        let store = self.source("v1", "Namespace");
        for name in names {
            let written = store.write(&name, |current| {
                Ok::<_, crate::informer::ObjectError>(match current {
                    Some(_) => Write::Unchanged(serde_json::Value::Null),
                    None => Write::Put(super::dir_cluster::implicit_namespace(&name)),
                })
            });
            if let Err(error) = written {
                tracing::warn!(%error, namespace = %name, "the namespace could not be stored");
            }
        }
    }

    fn forget_definition(&mut self, id: &ObjectId, path: &Path) {
        if let Some(paths) = self.definitions.get_mut(id) {
            paths.remove(path);
            if paths.is_empty() {
                self.definitions.remove(id);
            }
        }
    }

    /// A warning when `id`'s definitions differ, naming the winner and the others.
    fn differing_definitions(&self, id: &ObjectId) -> Option<DirSourceError> {
        let paths = self.definitions.get(id)?;
        let none = HashMap::new();
        let (winner, value) = self.winner(id, &none)?;
        let others: Vec<String> = paths
            .iter()
            .filter(|p| *p != winner)
            .filter(|p| self.files.get(*p).and_then(|f| f.objects.get(id)) != Some(value))
            .map(|p| p.display().to_string())
            .collect();
        (!others.is_empty()).then(|| DirSourceError::Conflict {
            path: winner.clone(),
            object: format!("{} {} {}", id.0, id.1, id.2),
            others: others.join(", "),
        })
    }

    fn source(&mut self, api_version: &str, kind: &str) -> MemorySource {
        // A kind stored as another (events.k8s.io Events are v1 Events) is a view of its store.
        if let Some((stored_version, stored_kind, conversion)) = crate::embedded::shared_storage(api_version, kind) {
            return self.source(stored_version, stored_kind).view(conversion);
        }
        let revision = &self.revision;
        self.kinds
            .entry((api_version.to_owned(), kind.to_owned()))
            .or_insert_with(|| {
                // Watches that allow bookmarks get one about every minute, as from kube-apiserver
                // (plugins' informers here, kubectl and clients over `--serve-api`).
                MemorySource::new(MemorySourceOptions {
                    revision: revision.clone(),
                    bookmark_interval: Some(BOOKMARK_INTERVAL),
                    ..MemorySourceOptions::default()
                })
            })
            .clone()
    }
}

/// Options of a [`DirSource`].
#[derive(Clone, Debug)]
pub struct DirSourceOptions {
    /// The largest manifest file read, in bytes; larger files are skipped with an error.
    /// Default 16 MiB.
    pub max_file_bytes: u64,
    /// The namespace of namespaced objects that name none, as `kubectl apply -n`: given,
    /// objects naming another namespace are refused. `None`: `default`, and objects may
    /// name any namespace.
    pub namespace: Option<String>,
    /// How long a file that lost most of its objects must be left alone before that is
    /// believed (a file being regenerated is read half-written otherwise). Default 500 ms.
    pub settle: Duration,
}

impl Default for DirSourceOptions {
    fn default() -> Self {
        Self { max_file_bytes: 16 << 20, namespace: None, settle: Duration::from_millis(500) }
    }
}

/// A folder of manifests served as a cluster.
pub struct DirSource {
    root: PathBuf,
    options: DirSourceOptions,
    state: Mutex<State>,
    /// The warnings the last rescan logged.
    reported: Mutex<HashSet<String>>,
    /// Whether the last rescan kept a half-written-looking file (see `looks_half_written`).
    unsettled: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for DirSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirSource").field("root", &self.root).finish()
    }
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
        let state = State {
            files: HashMap::new(),
            definitions: HashMap::new(),
            kinds: HashMap::new(),
            namespaces: HashSet::new(),
            revision: Revision::default(),
            placer: Placer::new(options.namespace.clone()),
        };
        let this = Arc::new(Self {
            root,
            options,
            state: Mutex::new(state),
            reported: Mutex::default(),
            unsettled: Default::default(),
        });
        let errors = this.rescan()?;
        this.report(errors);
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
        let gone_paths: Vec<PathBuf> = state.files.keys().filter(|p| !files.contains(p)).cloned().collect();
        let gone: HashMap<PathBuf, FileState> =
            gone_paths.into_iter().filter_map(|p| state.files.remove(&p).map(|f| (p, f))).collect();
        let mut changed = BTreeSet::new();
        let mut unsettled = false;
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
            match parse_manifest_file(&path, &text) {
                Ok(mut parsed) if self.looks_half_written(&state, &path, parsed.objects.len()) => {
                    // Kept as it was until the writer is done (the settle rescan decides);
                    // documents that do not parse are said at once.
                    errors.append(&mut parsed.refused);
                    unsettled = true;
                }
                Ok(mut parsed) => {
                    errors.append(&mut parsed.refused);
                    let file = state.files.entry(path.clone()).or_default();
                    parsed.keep_refused(&file.parsed);
                    (file.text, file.parsed) = (text, parsed.objects);
                    changed.insert(path);
                }
                Err(err) => errors.push(err),
            }
        }
        errors.extend(state.place(&changed, gone));
        drop(state);
        self.unsettled.store(unsettled, std::sync::atomic::Ordering::SeqCst);
        Ok(errors)
    }

    /// Whether a file read just now lost most of its objects (or all): the sign of a file
    /// being regenerated (`helm template > f`, an editor's save) and read half-written. Such a
    /// file keeps its objects until it has been left alone for
    /// [`DirSourceOptions::settle`]; a file that really shrank is then read as it is.
    fn looks_half_written(&self, state: &State, path: &Path, objects: usize) -> bool {
        let before = state.files.get(path).map_or(0, |f| f.parsed.len());
        let shrank = before > 0 && objects * 2 < before;
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let recent = modified.is_some_and(|m| m.elapsed().map_or(true, |age| age < self.options.settle));
        shrank && recent
    }

    /// Whether the last rescan kept a file that looked half-written: rescan again once it
    /// has settled.
    pub fn unsettled(&self) -> bool {
        self.unsettled.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Logs the warnings of a rescan that the previous one did not have: a file that stays
    /// malformed (or too large, or in conflict with another) is warned about once per change,
    /// not on every rescan another file's change causes.
    fn report(&self, errors: Vec<DirSourceError>) {
        let now: HashSet<String> = errors.iter().map(ToString::to_string).collect();
        let mut reported = self.reported.lock();
        for err in errors.iter().filter(|e| !reported.contains(&e.to_string())) {
            tracing::warn!(error = %err, "manifest skipped or changed by the directory source");
        }
        *reported = now;
    }

    fn rescan_and_report(&self) {
        match self.rescan() {
            Ok(errors) => self.report(errors),
            Err(err) => tracing::warn!(error = %err, "cannot rescan manifests"),
        }
    }

    /// Watches the folder and rescans on every (debounced) change until `cancel` fires.
    pub fn watch(self: &Arc<Self>, cancel: CancellationToken) -> Result<tokio::task::JoinHandle<()>, DirSourceError> {
        let this = self.clone();
        crate::fswatch::watch_folder(&self.root, Duration::from_millis(100), cancel, move || {
            this.rescan_and_report();
            if this.unsettled() {
                let again = this.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(again.options.settle).await;
                    again.rescan_and_report();
                });
            }
        })
        .map_err(|e| DirSourceError::Watch { path: e.path, message: e.message })
    }

    /// The kinds present in the folder, as (apiVersion, kind).
    pub fn kinds(&self) -> Vec<(String, String)> {
        self.state.lock().kinds.keys().cloned().collect()
    }

    /// The objects of a kind now (plugins' writes included).
    pub fn objects(&self, api_version: &str, kind: &str) -> Vec<crate::informer::Object> {
        self.store(api_version, kind).objects()
    }

    /// The store of a kind (created empty on first use).
    pub(crate) fn store(&self, api_version: &str, kind: &str) -> MemorySource {
        self.state.lock().source(api_version, kind)
    }

    /// Every kind the cluster's CustomResourceDefinitions define — the folder's, then those
    /// written through the API (`kubectl apply` on `--serve-api`): (apiVersion, kind).
    pub(crate) fn custom_kinds(&self) -> Vec<(String, String)> {
        let mut kinds: Vec<(String, String)> = self
            .state
            .lock()
            .placer
            .scopes()
            .customs()
            .map(|(api_version, kind, _)| (api_version, kind.to_owned()))
            .collect();
        for (api_version, kind, _) in self.written_definitions().customs() {
            if !kinds.iter().any(|(v, k)| *v == api_version && k == kind) {
                kinds.push((api_version, kind.to_owned()));
            }
        }
        kinds
    }

    /// A kind the cluster's CustomResourceDefinitions define (the folder's first).
    /// Whether an object of the folder's files is placed in `namespace`.
    pub(crate) fn files_use_namespace(&self, namespace: &str) -> bool {
        self.state.lock().namespaces.contains(namespace)
    }

    pub(crate) fn custom_kind(&self, api_version: &str, kind: &str) -> Option<crate::kube::scope::CustomKind> {
        let folder = self.state.lock().placer.scopes().custom(api_version, kind).cloned();
        folder.or_else(|| self.written_definitions().custom(api_version, kind).cloned())
    }

    /// The kinds of the CustomResourceDefinitions stored now, the ones written through the
    /// API included (looking creates no store).
    fn written_definitions(&self) -> crate::kube::scope::Scopes {
        let key = ("apiextensions.k8s.io/v1".to_owned(), "CustomResourceDefinition".to_owned());
        let Some(store) = self.state.lock().kinds.get(&key).cloned() else {
            return crate::kube::scope::Scopes::default();
        };
        let crds: Vec<serde_json::Value> = store.objects().iter().filter_map(|crd| crd.to_value().ok()).collect();
        crate::kube::scope::Scopes::from_objects(&crds)
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
        let rv1 = cms.get("default/one").unwrap().resource_version().to_owned();
        write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {v: '2'}\n");
        assert!(src.rescan().unwrap().is_empty());
        let rv2 = cms.get("default/one").unwrap().resource_version().to_owned();
        assert!(rv2.parse::<u64>().unwrap() > rv1.parse::<u64>().unwrap());
        assert!(cms.get("default/one").unwrap().json().contains("\"2\""));
        std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
        src.rescan().unwrap();
        assert!(cms.get("default/one").is_none());
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
        assert_eq!(keys(&src, "v1", "ConfigMap"), ["default/flaky", "default/good", "default/later"]);
    }
}

#[cfg(test)]
#[path = "dir_hostile_tests.rs"]
mod hostile_tests;

#[cfg(test)]
#[path = "dir_placement_tests.rs"]
mod placement_tests;

#[cfg(test)]
#[path = "dir_definitions_tests.rs"]
mod definitions_tests;

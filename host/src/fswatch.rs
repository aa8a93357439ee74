//! Watching a folder for changes: a debounced `notify` watcher that calls back on a tokio
//! task. Used by the directory source (manifests) and the plugin registry (plugin folders),
//! both of which rescan when something changed.
//!
//! Only changes to what the folder holds wake the callback: a file or folder created,
//! written (data modified, or closed after writing), renamed or removed. Reading does not:
//! with inotify, opening a file is an event too, and a callback that rescans (reading the
//! files) would otherwise wake itself up again, forever. Metadata changes (permissions,
//! timestamps) are ignored as well; the contents did not change.
//!
//! A folder replaced at its path — removed and made again, or a link to it switched — is
//! found within two seconds (the path's device and inode checked), watched again, and the
//! callback asked for a rescan.
//!
//! Watch, then catch up: the callback is first called as soon as the watch is in place,
//! with [`Changes::rescan`] set, so that a change made between the caller's own first scan
//! and the start of the watch (a folder removed while the host was starting) is not missed —
//! as an informer lists after it could watch, never the other way round.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify_debouncer_full::notify::event::{AccessKind, AccessMode, ModifyKind};
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, DebouncedEvent};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The watcher could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {path}: {message}")]
pub struct WatchError {
    /// The folder.
    pub path: PathBuf,
    /// The watcher's error.
    pub message: String,
}

/// What changed under a watched folder since the previous call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The paths created, written, renamed (both names) or removed, each once, in order of
    /// first change.
    pub paths: Vec<PathBuf>,
    /// The watcher may have missed changes (its queue overflowed, or it reported an
    /// error): anything under the folder may have changed.
    pub rescan: bool,
}

impl Changes {
    fn is_empty(&self) -> bool {
        self.paths.is_empty() && !self.rescan
    }

    fn add(&mut self, batch: DebounceEventResult) {
        match batch {
            Ok(events) => {
                for event in events {
                    self.add_event(&event);
                }
            }
            Err(errors) => {
                for error in &errors {
                    tracing::warn!(error = %error, "folder watcher error: rescanning");
                }
                self.rescan |= !errors.is_empty();
            }
        }
    }

    fn add_event(&mut self, event: &DebouncedEvent) {
        if event.need_rescan() {
            self.rescan = true;
            return;
        }
        if !is_change(&event.kind) {
            return;
        }
        for path in &event.paths {
            if !self.paths.contains(path) {
                self.paths.push(path.clone());
            }
        }
    }
}

/// Whether an event of this kind changes what a folder holds: creation, data written (or a
/// file closed after writing), rename, removal, and the backends' unspecific kinds. Opening,
/// reading and closing without writing are not changes; neither are metadata changes.
pub(crate) fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any | EventKind::Other => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
    }
}

/// How often a watch checks that the folder at its path is the one it watches.
const ROOT_CHECK: Duration = Duration::from_secs(2);

/// The folder a path leads to now (links followed): its device and inode.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Calls `on_change` (on a tokio task) after changes under `root` settle for `debounce`,
/// until `cancel` fires. Bursts of changes are folded into one call; reads never call it.
/// The first call, made once the watch is in place, asks for a rescan (see the module docs).
pub(crate) fn watch_folder<F>(
    root: &Path,
    debounce: Duration,
    cancel: CancellationToken,
    mut on_change: F,
) -> Result<JoinHandle<()>, WatchError>
where
    F: FnMut() + Send + 'static,
{
    watch_folder_changes(root, debounce, cancel, move |_| on_change())
}

/// [`watch_folder`], telling the callback which paths changed.
pub(crate) fn watch_folder_changes<F>(
    root: &Path,
    debounce: Duration,
    cancel: CancellationToken,
    mut on_change: F,
) -> Result<JoinHandle<()>, WatchError>
where
    F: FnMut(Changes) + Send + 'static,
{
    let error = |e: notify_debouncer_full::notify::Error| WatchError { path: root.to_owned(), message: e.to_string() };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<DebounceEventResult>();
    // The debouncer's thread wakes up every tick, changes or not: once per `debounce` (the
    // default, a quarter of it, is four times the wake-ups for a host that sits idle).
    let mut debouncer = notify_debouncer_full::new_debouncer(debounce, Some(debounce), move |batch| {
        let _ = tx.send(batch);
    })
    .map_err(error)?;
    debouncer.watch(root, RecursiveMode::Recursive).map_err(error)?;
    let folder = root.to_owned();
    Ok(tokio::spawn(async move {
        // The watcher lives as long as the task.
        let mut debouncer = debouncer;
        // A watch follows the folder it was put on, not its name: the folder that stands at
        // the path is checked every `ROOT_CHECK` (one `stat`), for the folder being replaced
        // — removed and made again, or a link to it switched, as generators and deploy tools
        // do. (Watching the parent instead would wake the host for every change beside the
        // folder.)
        let mut watched = identity(&folder);
        // The folder's own removal is an event on its path (as given or made absolute): its
        // successor may reuse its inode, so it counts as gone until the next check.
        let absolute = std::path::absolute(&folder).unwrap_or_else(|_| folder.clone());
        let mut check = tokio::time::interval(ROOT_CHECK);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        check.reset();
        let shown = folder.clone();
        let mut call = move |changes: Changes| {
            // A panicking callback (a rescan) must not end the watch: the next change
            // rescans again.
            if let Err(panic) = crate::informer::crash::catch(|| on_change(changes)) {
                tracing::error!(folder = %shown.display(), %panic, "handling a folder change panicked");
            }
        };
        // Catching up with what changed before the watch was in place.
        call(Changes { paths: Vec::new(), rescan: true });
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = check.tick() => {
                    let now = identity(&folder);
                    if now != watched {
                        // Whatever now stands at the path is watched (once something does).
                        watched = now;
                        let _ = debouncer.unwatch(&folder);
                        if watched.is_some() && let Err(e) = debouncer.watch(&folder, RecursiveMode::Recursive) {
                            tracing::warn!(folder = %folder.display(), error = %e, "cannot watch the replaced folder");
                        }
                        call(Changes { paths: Vec::new(), rescan: true });
                    }
                }
                batch = rx.recv() => {
                    let Some(batch) = batch else { return };
                    let mut changes = Changes::default();
                    changes.add(batch);
                    while let Ok(batch) = rx.try_recv() {
                        changes.add(batch);
                    }
                    if changes.paths.iter().any(|p| *p == folder || *p == absolute) {
                        watched = None;
                    }
                    if !changes.is_empty() {
                        call(changes);
                    }
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Watched {
        dir: tempfile::TempDir,
        changes: tokio::sync::mpsc::UnboundedReceiver<Changes>,
        cancel: CancellationToken,
    }

    impl Watched {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("a.yaml"), "kind: A\n").unwrap();
            std::fs::create_dir(dir.path().join("sub")).unwrap();
            std::fs::write(dir.path().join("sub").join("b.wasm"), b"\0asm").unwrap();
            let (tx, changes) = tokio::sync::mpsc::unbounded_channel();
            let cancel = CancellationToken::new();
            watch_folder_changes(dir.path(), Duration::from_millis(20), cancel.clone(), move |c| {
                let _ = tx.send(c);
            })
            .unwrap();
            Self { dir, changes, cancel }
        }

        /// A watch whose catch-up call came.
        async fn started() -> Self {
            let mut watched = Self::new();
            let first = watched.changes.recv().await.expect("the watcher is running");
            assert_eq!(first, Changes { paths: Vec::new(), rescan: true }, "the first call catches up");
            watched
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        /// The next call's changes, as paths relative to the folder.
        async fn next(&mut self) -> Vec<String> {
            let changes = tokio::time::timeout(Duration::from_secs(20), self.changes.recv())
                .await
                .expect("the watcher calls back")
                .expect("the watcher is running");
            assert!(!changes.rescan);
            changes
                .paths
                .iter()
                .map(|p| p.strip_prefix(self.dir.path()).unwrap_or(p).to_string_lossy().into_owned())
                .collect()
        }

        /// Calls until one names `name` (a change may come in more than one call).
        async fn until(&mut self, name: &str) -> Vec<String> {
            loop {
                let names = self.next().await;
                if names.iter().any(|n| n == name) {
                    return names;
                }
            }
        }
    }

    impl Drop for Watched {
        fn drop(&mut self) {
            self.cancel.cancel();
        }
    }

    /// Regression: reading the watched files (as every rescan does) woke the watcher, whose
    /// callback rescanned, which woke it again — a host busy re-reading its plugins forever.
    #[tokio::test]
    async fn reading_files_does_not_call_back_only_the_sentinel_write_does() {
        let mut watched = Watched::started().await;
        for _ in 0..20 {
            std::fs::read(watched.path("a.yaml")).unwrap();
            std::fs::read(watched.path("sub/b.wasm")).unwrap();
            std::fs::read_dir(watched.dir.path()).unwrap().for_each(drop);
            std::fs::metadata(watched.path("a.yaml")).unwrap();
        }
        // Every event a read caused was queued before the sentinel's: a call for them would
        // come first, or the same call would name them.
        std::fs::write(watched.path("sentinel"), "x").unwrap();
        assert_eq!(watched.next().await, ["sentinel"]);
    }

    #[tokio::test]
    async fn creating_writing_renaming_and_removing_each_call_back() {
        let mut watched = Watched::started().await;
        std::fs::write(watched.path("new.yaml"), "kind: N\n").unwrap();
        watched.until("new.yaml").await;
        std::fs::write(watched.path("sub/b.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
        watched.until("sub/b.wasm").await;
        std::fs::rename(watched.path("a.yaml"), watched.path("c.yaml")).unwrap();
        watched.until("c.yaml").await;
        std::fs::remove_file(watched.path("new.yaml")).unwrap();
        watched.until("new.yaml").await;
    }

    /// Regression: a plugin folder removed after the host's first scan but before its watch
    /// was in place stayed deployed: nothing told the host to look again.
    #[tokio::test]
    async fn the_first_call_catches_up_with_changes_made_before_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut calls) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        // The change happens before the watch starts: only a catch-up call can report it.
        std::fs::write(dir.path().join("early.yaml"), "kind: E\n").unwrap();
        watch_folder_changes(dir.path(), Duration::from_millis(20), cancel.clone(), move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        let first = tokio::time::timeout(Duration::from_secs(20), calls.recv()).await.unwrap().unwrap();
        assert!(first.rescan, "the callback is asked to look at everything again");
        cancel.cancel();
    }

    /// Calls of a watch of `root`.
    fn watch_calls(root: &Path) -> (tokio::sync::mpsc::UnboundedReceiver<Changes>, CancellationToken) {
        let (tx, calls) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        watch_folder_changes(root, Duration::from_millis(20), cancel.clone(), move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        (calls, cancel)
    }

    /// Waits for a call that names `path`, or asks for a rescan (when `rescan`); every call
    /// names only paths under `root`.
    async fn call_for(
        calls: &mut tokio::sync::mpsc::UnboundedReceiver<Changes>,
        root: &Path,
        path: &Path,
        rescan: bool,
    ) {
        loop {
            let changes = tokio::time::timeout(Duration::from_secs(20), calls.recv()).await.unwrap().unwrap();
            assert!(changes.paths.iter().all(|p| p.starts_with(root)), "{changes:?}");
            if (rescan && changes.rescan) || (!rescan && changes.paths.iter().any(|p| p == path)) {
                return;
            }
        }
    }

    /// Regression: a watched folder removed and made again (as a generator regenerates its
    /// output), or a link to it switched (as deploy tools switch releases), was no longer
    /// watched: nothing in it was seen again. The folder's replacement asks for a rescan and
    /// what then stands at its path is watched.
    #[tokio::test]
    async fn a_replaced_folder_is_watched_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        std::fs::create_dir(&root).unwrap();
        let (mut calls, cancel) = watch_calls(&root);
        call_for(&mut calls, &root, &root, true).await;
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::create_dir(&root).unwrap();
        call_for(&mut calls, &root, &root, true).await;
        std::fs::write(dir.path().join("sibling.txt"), "x").unwrap();
        std::fs::write(root.join("a.yaml"), "kind: A\n").unwrap();
        call_for(&mut calls, &root, &root.join("a.yaml"), false).await;
        cancel.cancel();

        let current = dir.path().join("current");
        for release in ["v1", "v2"] {
            std::fs::create_dir(dir.path().join(release)).unwrap();
        }
        std::os::unix::fs::symlink("v1", &current).unwrap();
        let (mut calls, cancel) = watch_calls(&current);
        call_for(&mut calls, &current, &current, true).await;
        std::os::unix::fs::symlink("v2", dir.path().join("next")).unwrap();
        std::fs::rename(dir.path().join("next"), &current).unwrap();
        call_for(&mut calls, &current, &current, true).await;
        std::fs::write(dir.path().join("v2").join("b.yaml"), "kind: B\n").unwrap();
        call_for(&mut calls, &current, &current.join("b.yaml"), false).await;
        cancel.cancel();
    }

    /// A folder given by a relative path (`wink run --source dir:examples/cluster`) sees
    /// its changes (the watcher reports absolute paths).
    #[tokio::test]
    async fn a_folder_given_by_a_relative_path_sees_its_changes() {
        let dir = tempfile::tempdir_in(".").unwrap();
        let relative = PathBuf::from(".").join(dir.path().file_name().unwrap());
        let (mut calls, cancel) = watch_calls(&relative);
        let first = tokio::time::timeout(Duration::from_secs(20), calls.recv()).await.unwrap().unwrap();
        assert!(first.rescan);
        std::fs::write(relative.join("a.yaml"), "kind: A\n").unwrap();
        let changes = tokio::time::timeout(Duration::from_secs(20), calls.recv()).await.expect("a call").unwrap();
        assert!(changes.paths.iter().any(|p| p.ends_with("a.yaml")), "{changes:?}");
        cancel.cancel();
    }

    #[test]
    fn metadata_and_read_access_are_not_changes() {
        use notify_debouncer_full::notify::event::{CreateKind, DataChange, MetadataKind, RemoveKind, RenameMode};
        assert!(!is_change(&EventKind::Access(AccessKind::Open(AccessMode::Any))));
        assert!(!is_change(&EventKind::Access(AccessKind::Read)));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(AccessMode::Read))));
        assert!(!is_change(&EventKind::Modify(ModifyKind::Metadata(MetadataKind::WriteTime))));
        assert!(is_change(&EventKind::Access(AccessKind::Close(AccessMode::Write))));
        assert!(is_change(&EventKind::Create(CreateKind::File)));
        assert!(is_change(&EventKind::Modify(ModifyKind::Data(DataChange::Content))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Name(RenameMode::Both))));
        assert!(is_change(&EventKind::Remove(RemoveKind::File)));
    }
}

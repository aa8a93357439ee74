//! Watching a folder for changes: a debounced `notify` watcher that calls back on a tokio
//! task. Used by the directory source (manifests) and the plugin registry (plugin folders),
//! both of which simply rescan on any change.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify_debouncer_full::notify::RecursiveMode;
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

/// Calls `on_change` (on a tokio task) after changes under `root` settle for `debounce`,
/// until `cancel` fires. Bursts of changes are folded into one call.
pub fn watch_folder<F>(
    root: &Path,
    debounce: Duration,
    cancel: CancellationToken,
    mut on_change: F,
) -> Result<JoinHandle<()>, WatchError>
where
    F: FnMut() + Send + 'static,
{
    let error = |e: notify_debouncer_full::notify::Error| WatchError { path: root.to_owned(), message: e.to_string() };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut debouncer = notify_debouncer_full::new_debouncer(debounce, None, move |event| {
        let _ = tx.send(event);
    })
    .map_err(error)?;
    debouncer.watch(root, RecursiveMode::Recursive).map_err(error)?;
    Ok(tokio::spawn(async move {
        // The watcher lives as long as the task.
        let _debouncer = debouncer;
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                event = rx.recv() => {
                    if event.is_none() {
                        return;
                    }
                    while rx.try_recv().is_ok() {}
                    on_change();
                }
            }
        }
    }))
}

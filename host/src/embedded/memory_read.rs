//! Reading a [`MemorySource`] as the API server reads its storage: LIST at a resourceVersion
//! (`resourceVersionMatch`), over a selection, in pages; WATCH over a selection.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::memory::{Inner, MAX_SNAPSHOTS, MemorySource, Snapshot};
use crate::informer::list_watch::{ListParams, ObjectList, SourceError, Status, WatchEvent, WatchParams, WatchStream};
use crate::informer::object::Object;

/// How a LIST reads its `resourceVersion` (`resourceVersionMatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Any state at least as new as the version: the latest.
    NotOlderThan,
    /// The state at exactly that version (410 once it left the history).
    Exact,
}

/// One page of a list, and how many selected items come after it.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    /// The page.
    pub list: ObjectList,
    /// Items of the list after this page (`remainingItemCount`).
    pub remaining: usize,
}

/// Which objects a LIST or WATCH selects.
pub(crate) type Selects = Arc<dyn Fn(&Object) -> bool + Send + Sync>;

fn bad_request(message: String) -> SourceError {
    SourceError::Api(Status { code: 400, reason: "BadRequest".into(), message })
}

fn gone(rv: &str) -> Status {
    Status { code: 410, reason: "Expired".into(), message: format!("too old resource version: {rv}") }
}

fn parse_rv(rv: &str) -> Result<u64, SourceError> {
    rv.parse().map_err(|_| bad_request(format!("invalid resourceVersion {rv}")))
}

impl MemorySource {
    /// A LIST as the API server answers it:
    /// - `resourceVersion` unset: the latest state, in pages of `limit`;
    /// - `"0"`: any state — the latest, whole (`limit` ignored, as the watch cache answers;
    ///   in pages without [`MemorySourceOptions::watch_cache`](super::MemorySourceOptions));
    /// - `N` with [`ResourceVersionMatch::Exact`], or with a `limit` and no match (the legacy
    ///   reading): the state at exactly `N`, `410 Expired` once the history lost it;
    /// - `N` otherwise (`NotOlderThan`): the latest state;
    /// - `N` newer than the cluster: `504 Too large resource version`.
    ///
    /// Continue tokens page over a snapshot of the selected items taken by the first page, so
    /// that every page is at the first page's resourceVersion; compaction expires them (410).
    pub fn list_matching(
        &self,
        params: &ListParams,
        rv_match: Option<ResourceVersionMatch>,
        selects: &dyn Fn(&Object) -> bool,
    ) -> Result<ListPage, SourceError> {
        let mut inner = self.inner.lock();
        inner.list_requests.push(params.clone());
        if let Some(err) = inner.list_errors.pop_front() {
            return Err(err);
        }
        let (id, offset) = match &params.continue_token {
            Some(token) => {
                let (id, offset) = token
                    .split_once(':')
                    .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<usize>().ok()?)))
                    .ok_or_else(|| bad_request(format!("invalid continue token {token}")))?;
                if !inner.snapshots.contains_key(&id) {
                    return Err(SourceError::Gone(format!(
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter. ({token})"
                    )));
                }
                (id, offset)
            }
            None => {
                let current = self.options.revision.current();
                let requested = params.resource_version.as_deref().filter(|rv| !rv.is_empty());
                let requested = requested.map(parse_rv).transpose()?;
                let selected = |objects: &mut dyn Iterator<Item = &Object>| -> Vec<Object> {
                    objects.map(|o| self.shown(o)).filter(|o| selects(o)).collect()
                };
                let (at, items) = match requested {
                    None => (current, selected(&mut inner.objects.values())),
                    Some(0) if !self.options.watch_cache => (current, selected(&mut inner.objects.values())),
                    Some(0) => {
                        let items = selected(&mut inner.objects.values());
                        return Ok(whole(items, current));
                    }
                    Some(n) if n > current => {
                        return Err(SourceError::Api(Status {
                            code: 504,
                            reason: "Timeout".into(),
                            message: format!("Too large resource version: {n}, current: {current}"),
                        }));
                    }
                    Some(n)
                        if rv_match == Some(ResourceVersionMatch::Exact)
                            || (rv_match.is_none() && params.limit.is_some()) =>
                    {
                        if n < inner.oldest_watchable {
                            return Err(gone(&n.to_string()).into());
                        }
                        (n, selected(&mut inner.state_at(n).values()))
                    }
                    Some(_) => (current, selected(&mut inner.objects.values())),
                };
                if params.limit.is_none() {
                    return Ok(whole(items, at));
                }
                (new_snapshot(&mut inner, Snapshot { resource_version: at, items }), 0)
            }
        };
        let snapshot = &inner.snapshots[&id];
        let limit = params.limit.map_or(usize::MAX, |l| l.max(1) as usize);
        let end = offset.saturating_add(limit).min(snapshot.items.len());
        let items = snapshot.items[offset.min(end)..end].to_vec();
        let resource_version = snapshot.resource_version.to_string();
        let remaining = snapshot.items.len() - end;
        let continue_token = (remaining > 0).then(|| format!("{id}:{end}"));
        if continue_token.is_none() {
            inner.snapshots.remove(&id);
        }
        Ok(ListPage { list: ObjectList { items, resource_version, continue_token }, remaining })
    }

    /// A WATCH as the API server answers it: from `resourceVersion` `""` or `"0"`, synthetic
    /// ADDED events of the current state then changes; from `N`, the history's changes after
    /// `N` then live ones (an ERROR 410 event when `N` left the history); a streaming list
    /// (`sendInitialEvents`) sends the state then a bookmark annotated as the end of the
    /// initial events. With `selects`, objects moving into the selection are ADDED and out
    /// of it DELETED, as the watch cache does with selectors.
    pub fn watch_matching(&self, params: &WatchParams, selects: Option<Selects>) -> Result<WatchStream, SourceError> {
        let mut inner = self.inner.lock();
        inner.watch_requests.push(params.clone());
        if let Some(err) = inner.watch_errors.pop_front() {
            return Err(err);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let current = self.options.revision.current();
        let mut selected = HashSet::new();
        if params.send_initial_events {
            if !self.options.watch_list {
                return Err(SourceError::Unsupported("sendInitialEvents".into()));
            }
            for obj in inner.objects.values() {
                let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
            }
            let rv = current.to_string();
            let _ = tx.send(Ok(WatchEvent::Bookmark { resource_version: rv, initial_events_end: true }));
        } else {
            let from = match params.resource_version.as_str() {
                "" | "0" => {
                    for obj in inner.objects.values() {
                        let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
                    }
                    current
                }
                rv => parse_rv(rv)?,
            };
            if from < inner.oldest_watchable {
                // As the API server's watch cache: a 200 response whose first event is a 410.
                let _ = tx.send(Ok(WatchEvent::Error(gone(&params.resource_version))));
                return Ok(UnboundedReceiverStream::new(rx).boxed());
            }
            if let Some(selects) = &selects
                && !matches!(params.resource_version.as_str(), "" | "0")
            {
                selected = inner
                    .state_at(from)
                    .into_values()
                    .map(|o| self.shown(&o))
                    .filter(|o| selects(o))
                    .map(|o| o.key().to_owned())
                    .collect();
            }
            for (rv, change) in &inner.history {
                if *rv > from {
                    let _ = tx.send(Ok(change.event()));
                }
            }
        }
        if let (true, Some(interval)) = (params.allow_bookmarks, self.options.bookmark_interval) {
            let deadline = params.timeout.map(|timeout| tokio::time::Instant::now() + timeout);
            spawn_bookmarks(self.clone(), tx.downgrade(), interval, deadline);
        }
        inner.watchers.push(tx);
        let stream = UnboundedReceiverStream::new(rx);
        let stream = match self.view {
            Some(_) => {
                let view = self.clone();
                stream.map(move |event| view.shown_event(event)).boxed()
            }
            None => stream.boxed(),
        };
        let stream = match selects {
            Some(selects) => stream.filter_map(move |e| std::future::ready(moved(&selects, &mut selected, e))).boxed(),
            None => stream,
        };
        Ok(match params.timeout {
            Some(timeout) => stream.take_until(tokio::time::sleep(timeout)).boxed(),
            None => stream,
        })
    }
}

/// A whole (unpaged) list.
fn whole(items: Vec<Object>, at: u64) -> ListPage {
    ListPage { list: ObjectList { items, resource_version: at.to_string(), continue_token: None }, remaining: 0 }
}

fn new_snapshot(inner: &mut Inner, snapshot: Snapshot) -> u64 {
    let id = inner.next_snapshot;
    inner.next_snapshot += 1;
    inner.snapshots.insert(id, snapshot);
    if inner.snapshots.len() > MAX_SNAPSHOTS
        && let Some(oldest) = inner.snapshots.keys().min().copied()
    {
        inner.snapshots.remove(&oldest);
    }
    id
}

/// An event as a watch over a selection sees it, given the keys it has seen selected.
fn moved(
    selects: &Selects,
    selected: &mut HashSet<String>,
    event: Result<WatchEvent, SourceError>,
) -> Option<Result<WatchEvent, SourceError>> {
    let event = match event {
        Ok(WatchEvent::Added(o)) => selects(&o).then(|| {
            selected.insert(o.key().to_owned());
            WatchEvent::Added(o)
        }),
        Ok(WatchEvent::Modified(o)) => match (selected.contains(o.key()), selects(&o)) {
            (true, true) => Some(WatchEvent::Modified(o)),
            (false, true) => {
                selected.insert(o.key().to_owned());
                Some(WatchEvent::Added(o))
            }
            (true, false) => {
                selected.remove(o.key());
                Some(WatchEvent::Deleted(o))
            }
            (false, false) => None,
        },
        Ok(WatchEvent::Deleted(o)) => selected.remove(o.key()).then_some(WatchEvent::Deleted(o)),
        other => return Some(other),
    };
    event.map(Ok)
}

/// Sends bookmarks at the current resourceVersion to one watch, under the source's lock (so
/// that one never overtakes a change), until the watch is gone, at kube-apiserver's cadence
/// (its cacher's `nextBookmarkTime`): every `interval`, and once 2 s before the watch's
/// `deadline`, when it has one; none after that.
fn spawn_bookmarks(
    source: MemorySource,
    tx: mpsc::WeakUnboundedSender<Result<WatchEvent, SourceError>>,
    interval: std::time::Duration,
    deadline: Option<tokio::time::Instant>,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        loop {
            let now = tokio::time::Instant::now();
            let mut next = now + interval;
            if let Some(deadline) = deadline {
                let before_timeout = deadline.checked_sub(PRE_TIMEOUT_BOOKMARK).unwrap_or(now);
                next = next.min(before_timeout);
                if next <= now {
                    return;
                }
            }
            tokio::time::sleep_until(next).await;
            let Some(tx) = tx.upgrade() else { return };
            let inner = source.inner.lock();
            if !inner.watchers.iter().any(|w| w.same_channel(&tx)) {
                return;
            }
            let rv = source.options.revision.current().to_string();
            if tx.send(Ok(WatchEvent::Bookmark { resource_version: rv, initial_events_end: false })).is_err() {
                return;
            }
        }
    });
}

/// How long before a watch's timeout its last bookmark is sent (kube-apiserver's 2 s).
const PRE_TIMEOUT_BOOKMARK: std::time::Duration = std::time::Duration::from_secs(2);

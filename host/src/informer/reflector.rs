//! Keeps a [`DeltaFifo`] in step with a source: client-go's `Reflector`.
//!
//! Written as a state machine, as kube-rs's watcher is: [`State`] says where the reflector
//! is, [`Reflector::step`] makes one transition. The transitions:
//!
//! ```text
//!  Empty ──list (paged)──▶ Listed{rv} ──watch(rv)──▶ Watching{rv, stream} ──event──▶ Watching
//!    ▲  ╲ (streaming list)                             │ stream ended normally ──▶ Listed{rv}
//!    │   ╲─▶ InitialEvents ──initial-events-end──▶ Watching                    (re-watch)
//!    │        ├─ refused / 429 ──▶ Backoff → Empty, streaming again
//!    │        ├─ closed early ──▶ Empty, streaming again at once
//!    │        └─ any other failure ──▶ Empty, listing at once  │ refused / 429 ──▶ Backoff → Listed{rv}
//!    └──────────────── Backoff{then} ◀── any other error (list, watch, stream)
//! ```
//!
//! - The first list and every relist `replace` the FIFO (which infers missed deletes). The
//!   first LIST asks for resourceVersion "0", a relist for the last synced one, and after an
//!   "expired / too large resourceVersion" answer the LIST is repeated at once as a
//!   consistent read (client-go's `relistResourceVersion`).
//! - Bookmarks only advance the resourceVersion.
//! - A streaming list asks for the state not older than the last synced resourceVersion
//!   (the most recent one before the first sync, and at once again after an "expired / too
//!   large" answer). One refused with "connection refused" or 429 is asked for again after
//!   backoff, and one closed before the end of its initial events is asked for again at
//!   once (all as client-go's `watchList`); one closed within a second without any event,
//!   or failing otherwise, falls back to LIST/WATCH at once.
//! - A watch that ends normally (server timeout, stream closed) re-watches from the last
//!   resourceVersion. A watch that fails with "connection refused" or 429 re-watches from it
//!   after backoff (client-go's `isWatchErrorRetriable`). Any other watch failure (410 Gone,
//!   an ERROR event, a transport or decode error) relists after backoff, as client-go's
//!   `ListAndWatch` returning. A watch that ends within a second without any event is a
//!   failure too ("very short watch"), so a server closing watches at once cannot make us spin.
//! - A panic in the source or while applying an event is caught ([`super::crash`]): the
//!   reflector relists after backoff, as after any other failure.
//! - Failures wait for [`Backoff`] (800 ms, ×2, 30 s cap, jitter 1.0 also at the cap, reset
//!   after 2 quiet minutes) and are reported to the watch error handler.
//! - Separately, a resync timer ticks at the informer's check period and calls the FIFO's
//!   `resync` only when `should_resync` (the processor: is any listener due?) says so.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use parking_lot::RwLock;
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::{Backoff, BackoffConfig};
use super::crash::{PanicCounter, panic_message};
use super::delta_fifo::DeltaFifo;
use super::list_watch::{ListParams, ListerWatcher, SourceError, WatchEvent, WatchParams, WatchStream};
use super::object::Object;
use super::reflector_stats::ReflectorStats;
use crate::errors::Chain;

/// A function applied to every object on its way into the queue (e.g. stripping
/// managedFields); see [`DeltaFifoOptions::transformer`](super::delta_fifo::DeltaFifoOptions::transformer).
pub type Transform = Arc<dyn Fn(Object) -> Object + Send + Sync>;
/// Called with every list or watch failure.
pub type WatchErrorHandler = Arc<dyn Fn(&SourceError) + Send + Sync>;
/// Asked on every resync tick whether a resync is due.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// The lowest `min_watch_timeout`: client-go's `minWatchTimeout`.
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// How a reflector lists and watches.
#[derive(Clone)]
pub struct ReflectorConfig {
    /// LIST page size (`None`: one unpaged list). Default 500, as client-go's pager.
    pub page_size: Option<u32>,
    /// Watches ask the server to end after a random timeout in `[min, 2*min)`, so that
    /// many watches do not reconnect at once. Default and lowest value
    /// [`MIN_WATCH_TIMEOUT`] (5 minutes, as client-go's `minWatchTimeout`); a smaller value is
    /// raised to it, so no setting makes an API server end watches more often.
    pub min_watch_timeout: Duration,
    /// Test-only (the `testing` feature): replaces `min_watch_timeout` without the 5-minute
    /// floor, for tests against a local API server.
    #[cfg(any(test, feature = "testing"))]
    pub test_only_min_watch_timeout: Option<Duration>,
    /// Backoff after failures.
    pub backoff: BackoffConfig,
    /// The informer's resync check period; zero disables resync (until changed through
    /// [`Reflector::with_resync_period_updates`]).
    pub resync_period: Duration,
    /// Use a streaming list (`sendInitialEvents`) instead of LIST. One refused ("connection
    /// refused", 429) is asked again after backoff, one closed before its initial events
    /// ended is asked again at once, and one that fails otherwise falls back to LIST/WATCH at
    /// once (for good when the source does not support it).
    pub use_watch_list: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            page_size: Some(500),
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            #[cfg(any(test, feature = "testing"))]
            test_only_min_watch_timeout: None,
            backoff: BackoffConfig::default(),
            resync_period: Duration::ZERO,
            use_watch_list: false,
        }
    }
}

/// Where the reflector is.
pub enum State {
    /// Nothing usable is listed: list (or stream the initial events).
    Empty,
    /// Receiving a streaming list's initial events.
    InitialEvents {
        /// The stream.
        stream: WatchStream,
        /// Objects received so far.
        items: Vec<Object>,
        /// When the stream was opened.
        started: Instant,
        /// Events received so far (of any type).
        events: u64,
    },
    /// The store is in step with `resource_version`: start a watch from it.
    Listed {
        /// Where to watch from.
        resource_version: String,
    },
    /// Applying watch events.
    Watching {
        /// The last resourceVersion applied.
        resource_version: String,
        /// The watch.
        stream: WatchStream,
        /// When the watch started.
        started: Instant,
        /// Events received on this watch.
        events: u64,
    },
    /// Waiting after a failure, then going to `then`.
    Backoff {
        /// The state to go to after the delay.
        then: Box<State>,
    },
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => write!(f, "Empty"),
            Self::InitialEvents { items, .. } => write!(f, "InitialEvents({})", items.len()),
            Self::Listed { resource_version } => write!(f, "Listed({resource_version})"),
            Self::Watching { resource_version, events, .. } => write!(f, "Watching({resource_version}, {events})"),
            Self::Backoff { then } => write!(f, "Backoff(then {then:?})"),
        }
    }
}

/// Lists and watches a source into a [`DeltaFifo`].
pub struct Reflector {
    lw: Arc<dyn ListerWatcher>,
    fifo: Arc<DeltaFifo>,
    config: ReflectorConfig,
    backoff: Backoff,
    last_sync_resource_version: Arc<RwLock<String>>,
    should_resync: Option<ShouldResync>,
    error_handler: WatchErrorHandler,
    watch_list_unsupported: bool,
    /// The streaming list just failed: this attempt lists instead (client-go's
    /// `fallbackToList`); the next attempt streams again.
    fallback_to_list: bool,
    /// The last synced resourceVersion could not be listed (expired or too large): the next
    /// LIST is a consistent read. client-go's `isLastSyncResourceVersionUnavailable`.
    last_sync_rv_unavailable: bool,
    /// A LIST at resourceVersion "0" came back in pages, so the server pages lists (its watch
    /// cache is off): relists keep paging. client-go's `paginatedResult`.
    paginated_result: bool,
    resync_updates: Option<watch::Receiver<Duration>>,
    panics: PanicCounter,
    stats: ReflectorStats,
}

impl Reflector {
    /// A reflector feeding `fifo` from `lw`.
    pub fn new(lw: Arc<dyn ListerWatcher>, fifo: Arc<DeltaFifo>, config: ReflectorConfig) -> Self {
        let backoff = Backoff::new(config.backoff.clone());
        Self {
            lw,
            fifo,
            config,
            backoff,
            last_sync_resource_version: Arc::default(),
            should_resync: None,
            error_handler: Arc::new(|err| tracing::warn!(error = %Chain(err), "list/watch failed")),
            watch_list_unsupported: false,
            fallback_to_list: false,
            last_sync_rv_unavailable: false,
            paginated_result: false,
            resync_updates: None,
            panics: PanicCounter::default(),
            stats: ReflectorStats::default(),
        }
    }

    /// Counts the panics this reflector survives (in its source or its transform) in
    /// `counter` (an informer shares one counter among its parts).
    pub fn with_panic_counter(mut self, counter: PanicCounter) -> Self {
        self.panics = counter;
        self
    }

    /// Counts lists, watches, errors and events in `stats`.
    pub fn with_stats(mut self, stats: ReflectorStats) -> Self {
        self.stats = stats;
        self
    }

    /// Follows changes of the resync check period (the informer's, which a handler registered
    /// after start may set when it was zero).
    pub fn with_resync_period_updates(mut self, updates: watch::Receiver<Duration>) -> Self {
        self.resync_updates = Some(updates);
        self
    }

    /// Sets the function asked on each resync tick (default: always resync).
    pub fn with_should_resync(mut self, f: ShouldResync) -> Self {
        self.should_resync = Some(f);
        self
    }

    /// Sets the watch error handler (default: log a warning).
    pub fn with_error_handler(mut self, f: WatchErrorHandler) -> Self {
        self.error_handler = f;
        self
    }

    /// Shares the last synced resourceVersion cell (so an informer can read it).
    pub fn with_last_sync_cell(mut self, cell: Arc<RwLock<String>>) -> Self {
        self.last_sync_resource_version = cell;
        self
    }

    /// The resourceVersion of the last list or event applied.
    pub fn last_sync_resource_version(&self) -> String {
        self.last_sync_resource_version.read().clone()
    }

    /// Runs until `cancel` fires.
    pub async fn run(mut self, cancel: CancellationToken) {
        let updates = self.resync_updates.take().unwrap_or_else(|| watch::channel(self.config.resync_period).1);
        let resync = Self::resync_loop(self.fifo.clone(), updates, self.should_resync.clone());
        let machine = async {
            let mut state = State::Empty;
            loop {
                state = match AssertUnwindSafe(self.step(state)).catch_unwind().await {
                    Ok(next) => next,
                    // The state (a list in progress, a watch stream) is lost with the panic:
                    // start again from LIST, after backoff, as after a failed ListAndWatch.
                    Err(panic) => {
                        self.panics.record();
                        let err = SourceError::Panicked(panic_message(&*panic));
                        tracing::error!(error = %Chain(&err), "list/watch panicked; relisting after backoff");
                        self.fail(&err, State::Empty)
                    }
                };
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => {}
            () = machine => {}
            () = resync => {}
        }
    }

    async fn resync_loop(
        fifo: Arc<DeltaFifo>,
        mut period: watch::Receiver<Duration>,
        should_resync: Option<ShouldResync>,
    ) {
        let mut updates_open = true;
        loop {
            let current = *period.borrow_and_update();
            let open = updates_open;
            let changed = async { if open { period.changed().await.is_ok() } else { std::future::pending().await } };
            if current.is_zero() {
                updates_open = changed.await;
                if !updates_open {
                    // Resync is off and can no longer be turned on.
                    return std::future::pending().await;
                }
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep(current) => {
                    if should_resync.as_ref().is_none_or(|f| f()) {
                        fifo.resync();
                    }
                }
                still_open = changed => updates_open = still_open,
            }
        }
    }

    fn set_rv(&self, rv: &str) {
        if !rv.is_empty() {
            *self.last_sync_resource_version.write() = rv.to_owned();
        }
    }

    fn fail(&mut self, err: &SourceError, then: State) -> State {
        self.stats.failed();
        (self.error_handler)(err);
        State::Backoff { then: Box::new(then) }
    }

    /// A streaming list failed with `err`: a server that refused the connection or asked to
    /// slow down (429) is asked for a streaming list again after backoff (a LIST would be the
    /// heavier request), as client-go's `watchList` retries; any other failure falls back to
    /// LIST/WATCH.
    /// A streaming list asked from a resourceVersion the server no longer has, or does not
    /// have yet, is asked for again at once from the most recent state.
    fn retry_streaming_or_list(&mut self, err: &SourceError) -> State {
        if err.rewatches() {
            self.fail(err, State::Empty)
        } else if (err.is_gone() || err.is_too_large_resource_version()) && !self.rewatch_resource_version().is_empty()
        {
            tracing::info!(error = %Chain(err), "resourceVersion unavailable; streaming the most recent state");
            self.last_sync_rv_unavailable = true;
            State::Empty
        } else {
            self.fall_back_to_list(err)
        }
    }

    /// A streaming list failed: list and watch instead, at once (making progress beats
    /// waiting for the stream), as client-go's `ListAndWatch` does after `watchList` fails.
    /// The next attempt after a failure streams again.
    fn fall_back_to_list(&mut self, err: &SourceError) -> State {
        tracing::warn!(error = %Chain(err), "streaming list failed; falling back to LIST/WATCH");
        self.stats.failed();
        (self.error_handler)(err);
        self.fallback_to_list = true;
        State::Empty
    }

    fn watch_params(&self, resource_version: String, send_initial_events: bool) -> WatchParams {
        // client-go's `watchWithResync`: timeoutSeconds = minWatchTimeout * (1 + rand).
        let min = self.config.min_watch_timeout.max(MIN_WATCH_TIMEOUT);
        #[cfg(any(test, feature = "testing"))]
        let min = self.config.test_only_min_watch_timeout.unwrap_or(min);
        let timeout = min.mul_f64(1.0 + rand::rng().random::<f64>());
        WatchParams { resource_version, timeout: Some(timeout), allow_bookmarks: true, send_initial_events }
    }

    /// Makes one transition.
    pub async fn step(&mut self, state: State) -> State {
        // One match over the states, as client-go's `ListAndWatch` is one function: each arm
        // is one transition, and the transitions read best side by side.
        match state {
            State::Empty if self.config.use_watch_list && !self.watch_list_unsupported && !self.fallback_to_list => {
                // A watch's age counts from before its request, as client-go's `start`: the
                // server's timeout starts later, so a watch it ends on time is never "short".
                let started = Instant::now();
                match self.lw.watch(&self.watch_params(self.rewatch_resource_version(), true)).await {
                    Ok(stream) => {
                        self.stats.watched();
                        State::InitialEvents { stream, items: Vec::new(), started, events: 0 }
                    }
                    Err(SourceError::Unsupported(reason)) => {
                        tracing::info!(%reason, "streaming list unsupported; falling back to LIST");
                        self.watch_list_unsupported = true;
                        State::Empty
                    }
                    Err(err) => self.retry_streaming_or_list(&err),
                }
            }
            State::Empty => {
                self.fallback_to_list = false;
                match self.list_all().await {
                    Ok((items, resource_version)) => {
                        self.stats.listed();
                        self.fifo.replace(items, &resource_version);
                        self.set_rv(&resource_version);
                        State::Listed { resource_version }
                    }
                    Err(err) => self.fail(&err, State::Empty),
                }
            }
            State::InitialEvents { mut stream, mut items, started, events } => match stream.next().await {
                Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) => {
                    items.push(obj);
                    State::InitialEvents { stream, items, started, events: events + 1 }
                }
                Some(Ok(WatchEvent::Deleted(obj))) => {
                    items.retain(|o| o.key() != obj.key());
                    State::InitialEvents { stream, items, started, events: events + 1 }
                }
                Some(Ok(WatchEvent::Bookmark { resource_version, initial_events_end: true })) => {
                    self.stats.listed();
                    self.last_sync_rv_unavailable = false;
                    self.fifo.replace(items, &resource_version);
                    self.set_rv(&resource_version);
                    State::Watching { resource_version, stream, started: Instant::now(), events: 1 }
                }
                Some(Ok(WatchEvent::Bookmark { .. })) => {
                    State::InitialEvents { stream, items, started, events: events + 1 }
                }
                Some(Ok(WatchEvent::Error(status))) => self.retry_streaming_or_list(&status.into()),
                Some(Err(err)) => self.retry_streaming_or_list(&err),
                None if events == 0 && started.elapsed() < Duration::from_secs(1) => self.fall_back_to_list(
                    &SourceError::Transport("very short streaming list: closed within a second without events".into()),
                ),
                // Closed before the end of its initial events (a server timeout, say): what
                // it sent is dropped and a new streaming list starts at once.
                None => State::Empty,
            },
            State::Listed { resource_version } => {
                let started = Instant::now();
                match self.lw.watch(&self.watch_params(resource_version.clone(), false)).await {
                    Ok(stream) => {
                        self.stats.watched();
                        State::Watching { resource_version, stream, started, events: 0 }
                    }
                    Err(err) if err.rewatches() => self.fail(&err, State::Listed { resource_version }),
                    Err(err) => self.fail(&err, State::Empty),
                }
            }
            State::Watching { resource_version, mut stream, started, events } => match stream.next().await {
                Some(Ok(event)) => {
                    self.stats.event();
                    self.apply(event, resource_version, stream, started, events + 1)
                }
                Some(Err(err)) if err.rewatches() => self.fail(&err, State::Listed { resource_version }),
                Some(Err(err)) => self.fail(&err, State::Empty),
                None if events == 0 && started.elapsed() < Duration::from_secs(1) => {
                    let err = SourceError::Transport("very short watch: closed within a second without events".into());
                    self.fail(&err, State::Empty)
                }
                None => State::Listed { resource_version },
            },
            State::Backoff { then } => {
                tokio::time::sleep(self.backoff.next_delay()).await;
                *then
            }
        }
    }

    fn apply(&mut self, event: WatchEvent, rv: String, stream: WatchStream, started: Instant, events: u64) -> State {
        let resource_version = match event {
            WatchEvent::Added(obj) => self.apply_object(obj, DeltaFifo::add),
            WatchEvent::Modified(obj) => self.apply_object(obj, DeltaFifo::update),
            WatchEvent::Deleted(obj) => self.apply_object(obj, DeltaFifo::delete),
            WatchEvent::Bookmark { resource_version, .. } => resource_version,
            WatchEvent::Error(status) => {
                let err = SourceError::from(status);
                let then = if err.rewatches() { State::Listed { resource_version: rv } } else { State::Empty };
                return self.fail(&err, then);
            }
        };
        let resource_version = if resource_version.is_empty() { rv } else { resource_version };
        self.set_rv(&resource_version);
        State::Watching { resource_version, stream, started, events }
    }

    fn apply_object(&self, obj: Object, op: fn(&DeltaFifo, Object)) -> String {
        let rv = obj.resource_version().to_owned();
        op(&self.fifo, obj);
        rv
    }

    /// The resourceVersion a (re)list asks for: "0" first (any version, served from the
    /// watch cache), then the last synced one, and none (a consistent read) once that proved
    /// unavailable. client-go's `relistResourceVersion`.
    fn relist_resource_version(&self) -> Option<String> {
        if self.last_sync_rv_unavailable {
            return None;
        }
        let last = self.last_sync_resource_version();
        Some(if last.is_empty() { "0".to_owned() } else { last })
    }

    /// Lists, as client-go's `Reflector.list`: at [`Self::relist_resource_version`], and when
    /// that version is expired or too large, at once again as a consistent read, with the same
    /// page size (client-go chooses its pager's page size once, for the first attempt).
    ///
    /// The page size follows client-go's reflector: a list at a specific version (not "0") is
    /// not paged (with a limit the server would read that exact version from etcd instead of
    /// serving a not-older state from its watch cache) unless a list at "0" came back paged,
    /// which shows the server pages anyway. At "0" the watch cache ignores the limit.
    /// The resourceVersion a streaming list asks for (`NotOlderThan` it): the last synced one,
    /// or the most recent state ("") before the first sync and once it is unavailable.
    /// client-go's `rewatchResourceVersion`.
    fn rewatch_resource_version(&self) -> String {
        if self.last_sync_rv_unavailable { String::new() } else { self.last_sync_resource_version() }
    }

    async fn list_all(&mut self) -> Result<(Vec<Object>, String), SourceError> {
        let resource_version = self.relist_resource_version();
        let specific = resource_version.as_deref().is_some_and(|rv| rv != "0");
        let limit = if specific && !self.paginated_result { None } else { self.config.page_size };
        let result = match self.list_pages(resource_version, limit).await {
            Err(err) if err.is_gone() || err.is_too_large_resource_version() => {
                tracing::info!(error = %Chain(&err), "resourceVersion unavailable; listing the most recent state");
                self.last_sync_rv_unavailable = true;
                self.list_pages(self.relist_resource_version(), limit).await
            }
            other => other,
        };
        if result.is_ok() {
            self.last_sync_rv_unavailable = false;
        }
        result
    }

    /// Lists every page at `resource_version`, as client-go's pager: the first page asks for
    /// the version, the following ones only carry the continue token; an expired continue
    /// token falls back to one full, unpaged list at the same version.
    async fn list_pages(
        &mut self,
        resource_version: Option<String>,
        limit: Option<u32>,
    ) -> Result<(Vec<Object>, String), SourceError> {
        let first = ListParams { limit, continue_token: None, resource_version: resource_version.clone() };
        let mut params = first.clone();
        let mut items = Vec::new();
        loop {
            match self.lw.list(&params).await {
                Ok(page) => {
                    items.extend(page.items);
                    match page.continue_token {
                        Some(token) if !token.is_empty() => {
                            if resource_version.as_deref() == Some("0") {
                                self.paginated_result = true;
                            }
                            params = ListParams { limit, continue_token: Some(token), resource_version: None };
                        }
                        _ => return Ok((items, page.resource_version)),
                    }
                }
                Err(err) if err.is_gone() && params.continue_token.is_some() => {
                    tracing::info!(error = %Chain(&err), "continue token expired; falling back to a full list");
                    items.clear();
                    params = ListParams { limit: None, ..first.clone() };
                }
                Err(err) => return Err(err),
            }
        }
    }
}

#[cfg(test)]
#[path = "reflector_tests.rs"]
mod tests;

//! The source of objects an informer watches: client-go's `cache.ListerWatcher`.
//!
//! A source lists objects (paged with `limit`/`continue`) at a resourceVersion, and watches
//! for changes from a resourceVersion. Implementations: `source::kube` (a real API server),
//! `source::dir` (a folder of manifests), `source::memory` (driven by tests).
//!
//! Errors keep the API server's distinctions that the reflector acts on: `410 Gone` / an
//! expired resourceVersion means "relist", `429` means "back off", anything else is retried
//! with backoff.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;

use super::object::Object;
use crate::errors::Cause;

/// Parameters of one LIST request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Page size; `None` lists everything in one response.
    pub limit: Option<u32>,
    /// Continue token from the previous page.
    pub continue_token: Option<String>,
    /// resourceVersion to list at: `None` for the most recent (a consistent read).
    pub resource_version: Option<String>,
}

/// One page of a LIST response.
#[derive(Clone, Debug, Default)]
pub struct ObjectList {
    /// The objects of this page.
    pub items: Vec<Object>,
    /// The list's resourceVersion (the same on every page of one list).
    pub resource_version: String,
    /// Token for the next page; `None` on the last page.
    pub continue_token: Option<String>,
}

/// Parameters of one WATCH request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Watch changes after this resourceVersion.
    pub resource_version: String,
    /// Server-side timeout after which the watch ends normally.
    pub timeout: Option<Duration>,
    /// Ask for BOOKMARK events.
    pub allow_bookmarks: bool,
    /// Streaming list: first send the current state as ADDED events, then a bookmark with
    /// the `k8s.io/initial-events-end` annotation.
    pub send_initial_events: bool,
}

/// The API server's `Status` carried by a watch ERROR event or an error response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// HTTP-like code, e.g. 410.
    pub code: u16,
    /// Machine-readable reason, e.g. `Expired` or `Gone`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl Status {
    /// Whether this status means the requested resourceVersion is no longer available.
    pub fn is_gone(&self) -> bool {
        self.code == 410 || self.reason == "Expired" || self.reason == "Gone" || is_too_old_message(&self.message)
    }
}

fn is_too_old_message(message: &str) -> bool {
    message.contains("too old resource version")
}

/// One event of a watch stream.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// ADDED.
    Added(Object),
    /// MODIFIED.
    Modified(Object),
    /// DELETED (the object's last state).
    Deleted(Object),
    /// BOOKMARK: no change, but the stream has reached this resourceVersion.
    Bookmark {
        /// The resourceVersion reached.
        resource_version: String,
        /// Set on the bookmark that ends a streaming list's initial events.
        initial_events_end: bool,
    },
    /// ERROR: the server ended the watch with a status.
    Error(Status),
}

/// Why a list or watch failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The resourceVersion (or continue token) is too old: relist.
    #[error("resource version expired: {0}")]
    Gone(String),
    /// The server asked us to slow down (429).
    #[error("too many requests: {0}")]
    TooManyRequests(String),
    /// The server answered with another error status.
    #[error("API error {}: {}", .0.code, .0.message)]
    Api(Status),
    /// A response or event could not be decoded.
    #[error("decode error")]
    Decode(#[source] Cause),
    /// The connection failed.
    #[error("transport error")]
    Transport(#[source] Cause),
    /// The server refused the connection (most likely it is down or restarting).
    #[error("connection refused")]
    ConnectionRefused(#[source] Cause),
    /// The source does not support this request (e.g. streaming lists).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The source panicked while listing or watching (the panic's message).
    #[error("source panicked: {0}")]
    Panicked(String),
}

impl SourceError {
    /// Whether the reflector must relist.
    pub fn is_gone(&self) -> bool {
        match self {
            Self::Gone(_) => true,
            Self::Api(status) => status.is_gone(),
            _ => false,
        }
    }

    /// Whether a LIST failed because its resourceVersion is newer than the server's (after a
    /// restore or on a lagging server): client-go's `isTooLargeResourceVersionError`, which
    /// also recognises the condition by its message.
    pub fn is_too_large_resource_version(&self) -> bool {
        match self {
            Self::Api(status) => status.message.contains("Too large resource version"),
            _ => false,
        }
    }

    /// Whether a failed watch is retried as a watch from the same resourceVersion (after
    /// backoff) rather than by relisting: only "connection refused" (the server is most
    /// likely restarting; the resourceVersion is still good) and 429. client-go's
    /// `isWatchErrorRetriable` and the `TooManyRequests` case of `watchWithResync`.
    pub fn rewatches(&self) -> bool {
        match self {
            Self::ConnectionRefused(_) | Self::TooManyRequests(_) => true,
            Self::Api(status) => status.code == 429,
            _ => false,
        }
    }
}

impl From<Status> for SourceError {
    fn from(status: Status) -> Self {
        if status.is_gone() {
            Self::Gone(status.message)
        } else if status.code == 429 {
            Self::TooManyRequests(status.message)
        } else {
            Self::Api(status)
        }
    }
}

/// A stream of watch events; it ends when the watch ends (timeout or closed connection).
pub type WatchStream = BoxStream<'static, Result<WatchEvent, SourceError>>;

/// Lists and watches one resource.
#[async_trait]
pub trait ListerWatcher: Send + Sync + 'static {
    /// Lists one page.
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError>;

    /// Starts a watch.
    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError>;
}

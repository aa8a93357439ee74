//! [`RequestError`]: why a request to the cluster failed, typed as plugins see it.

/// A cause of an `Invalid` error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The field at fault (may be empty).
    pub field: String,
    /// The machine-readable reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Refused by wink before any request was made.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// Refused by the API server's authorization (403).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// 404.
    #[error("not found: {0}")]
    NotFound(String),
    /// 409 AlreadyExists.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// 409 Conflict.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 422.
    #[error("invalid: {message}")]
    Invalid {
        /// The whole message.
        message: String,
        /// The fields at fault.
        causes: Vec<Cause>,
    },
    /// 413: the request's body, or the object it would store, is over the API server's
    /// limits (3 MiB of body; 1.5 MiB of object, etcd's request limit).
    #[error("too large: {0}")]
    TooLarge(String),
    /// 400, 405, 415: a malformed request.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The plugin's budget is spent, or 429.
    #[error("rate limited: {0}")]
    RateLimited(String),
    /// No answer in time (or 504).
    #[error("timed out: {0}")]
    TimedOut(String),
    /// Unreachable, or 5xx.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl RequestError {
    /// The error of an API server's `Status` answer.
    pub fn from_status(code: u16, reason: &str, message: String, causes: Vec<Cause>) -> Self {
        match (code, reason) {
            (403, _) => RequestError::Forbidden(message),
            (404, _) => RequestError::NotFound(message),
            (409, "AlreadyExists") => RequestError::AlreadyExists(message),
            (409, _) => RequestError::Conflict(message),
            (410, _) => RequestError::Conflict(message),
            (413, _) => RequestError::TooLarge(message),
            (422, _) => RequestError::Invalid { message, causes },
            (429, _) => RequestError::RateLimited(message),
            (504, _) | (_, "Timeout") => RequestError::TimedOut(message),
            (400..=499, _) => RequestError::BadRequest(message),
            _ => RequestError::Unavailable(message),
        }
    }

    /// A short label for metrics and logs: `not_permitted`, `forbidden`, ...
    pub fn label(&self) -> &'static str {
        match self {
            RequestError::NotPermitted(_) => "not_permitted",
            RequestError::Forbidden(_) => "forbidden",
            RequestError::NotFound(_) => "not_found",
            RequestError::AlreadyExists(_) => "already_exists",
            RequestError::Conflict(_) => "conflict",
            RequestError::Invalid { .. } => "invalid",
            RequestError::TooLarge(_) => "too_large",
            RequestError::BadRequest(_) => "bad_request",
            RequestError::RateLimited(_) => "rate_limited",
            RequestError::TimedOut(_) => "timed_out",
            RequestError::Unavailable(_) => "unavailable",
        }
    }
}

/// The error of an API server's `Status` (as the embedded rules return it, or as a real
/// server sent it).
impl From<wink_apiserver::Status> for RequestError {
    fn from(status: wink_apiserver::Status) -> Self {
        let reason =
            serde_json::to_value(status.reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let causes = status
            .details
            .as_ref()
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| Cause { field: c.field.clone(), reason: c.reason.clone(), message: c.message.clone() })
                    .collect()
            })
            .unwrap_or_default();
        RequestError::from_status(status.code, &reason, status.message, causes)
    }
}

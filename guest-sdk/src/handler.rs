//! The [`Handler`] trait a plugin implements, what it returns ([`Action`]) and its errors.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::cache::CacheError;
use crate::cluster::RequestError;
use crate::object::{Object, ParseError};

/// What a handler asks of the host once it has handled an event (kube-rs's `Action`):
/// [`Action::AwaitChange`] — nothing more, the handler hears of the object again when it
/// changes — or [`Action::RequeueAfter`] a number of milliseconds: the host calls
/// [`Handler::on_update`] again for this object then, with its newest state, even if it did
/// not change (controller-runtime's `Result{RequeueAfter}`).
pub use crate::bindings::wink::plugin::types::Action;

impl Action {
    /// Nothing more: wait for the object's next change.
    pub fn await_change() -> Self {
        Self::AwaitChange
    }

    /// Be called again for this object after `delay` (rounded down to milliseconds).
    pub fn requeue(delay: Duration) -> Self {
        Self::RequeueAfter(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A handler's own failure, as opposed to a trap (which the sandbox raises).
///
/// [`Retry`](HandlerError::Retry) asks the host to call again later, with backoff, with the
/// newest state of the same object; [`Fatal`](HandlerError::Fatal) records the failure and
/// moves on. What the host does after repeated failures is the manifest's `failurePolicy`.
pub use crate::bindings::wink::plugin::types::HandlerError;

impl HandlerError {
    /// A transient failure: the host calls again later with the newest state of the object.
    pub fn retry(message: impl Into<String>) -> Self {
        Self::Retry(message.into())
    }

    /// A permanent failure for this event: the host records it and moves on.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::Fatal(message.into())
    }

    /// The message the handler gave.
    pub fn message(&self) -> &str {
        match self {
            Self::Retry(m) | Self::Fatal(m) => m,
        }
    }

    /// Whether the host should call again later.
    pub fn is_retry(&self) -> bool {
        matches!(self, Self::Retry(_))
    }
}

/// An object that cannot be parsed will not parse on a retry either: fatal.
impl From<ParseError> for HandlerError {
    fn from(e: ParseError) -> Self {
        Self::fatal(e.to_string())
    }
}

/// A failed request: retried when the failure is transient (a conflict, a budget or the server
/// that may recover), fatal otherwise (not permitted, forbidden, invalid...). Handle the
/// cases you expect (a `NotFound`, an `AlreadyExists`) before `?`.
impl From<RequestError> for HandlerError {
    fn from(e: RequestError) -> Self {
        if e.is_transient() { Self::retry(e.to_string()) } else { Self::fatal(e.to_string()) }
    }
}

/// A refused cache read is a manifest problem (a missing grant, an unknown index): fatal.
impl From<CacheError> for HandlerError {
    fn from(e: CacheError) -> Self {
        Self::fatal(format!("cache read refused: {e}"))
    }
}

/// A plugin's event handlers. Every method has a default that does nothing and succeeds, so a
/// plugin implements only the events it cares about. Each returns an [`Action`] on success.
///
/// [`export_handler!`](crate::export_handler) exports a type implementing this trait (and
/// [`Default`]): on `init` it creates the handler with `Default::default()`, calls
/// [`init`](Handler::init) with the manifest's `config`, and keeps the instance for every
/// later event. The host calls one method at a time; the handler may keep state in `self`.
/// State lives as long as the WebAssembly instance: after a trap the host starts a fresh
/// instance and calls `init` again.
pub trait Handler {
    /// Called once after the plugin is instantiated (and again after every restart) with the
    /// manifest's `config` as JSON (`null` when absent). An error refuses to start the plugin;
    /// make it say what is wrong with the config. [`parse_config`] helps.
    fn init(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// An object was added. `initial_list` is true for objects delivered as part of the
    /// informer's initial list, or of the cache replayed to a newly registered plugin.
    fn on_add(&mut self, obj: &Object, initial_list: bool) -> Result<Action, HandlerError> {
        let _ = (obj, initial_list);
        Ok(Action::AwaitChange)
    }

    /// An object changed. On a periodic resync `old` and `new` are the same object.
    fn on_update(&mut self, old: &Object, new: &Object) -> Result<Action, HandlerError> {
        let _ = (old, new);
        Ok(Action::AwaitChange)
    }

    /// An object was deleted. When `final_state_unknown` is true the deletion was inferred on
    /// a relist and `obj` is the last state the host knew.
    fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) -> Result<Action, HandlerError> {
        let _ = (obj, final_state_unknown);
        Ok(Action::AwaitChange)
    }
}

/// Parses the `config` given to [`Handler::init`] into `T`; `null` (no `config` in the
/// manifest) and an empty string give `T::default()`. The error reads
/// `invalid config: <what serde found>`, ready to return from `init`.
pub fn parse_config<T: DeserializeOwned + Default>(config: &str) -> Result<T, String> {
    let config = config.trim();
    if config.is_empty() || config == "null" {
        return Ok(T::default());
    }
    serde_json::from_str(config).map_err(|e| format!("invalid config: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Config {
        #[serde(default)]
        required: Vec<String>,
    }

    #[test]
    fn absent_config_is_the_default() {
        assert_eq!(parse_config::<Config>("null"), Ok(Config::default()));
        assert_eq!(parse_config::<Config>(" "), Ok(Config::default()));
    }

    #[test]
    fn config_is_parsed_and_errors_say_why() {
        let c: Config = parse_config(r#"{"required": ["app"]}"#).unwrap();
        assert_eq!(c.required, ["app"]);
        let err = parse_config::<Config>(r#"{"requird": []}"#).unwrap_err();
        assert!(err.starts_with("invalid config: unknown field `requird`"), "{err}");
    }

    #[test]
    fn handler_error_helpers() {
        let retry = HandlerError::retry("later");
        assert!(retry.is_retry());
        assert_eq!(retry.message(), "later");
        assert_eq!(retry, HandlerError::Retry("later".into()));
        let fatal = HandlerError::fatal("never");
        assert!(!fatal.is_retry());
        let from_cache: HandlerError = CacheError::UnknownIndex("x".into()).into();
        assert!(!from_cache.is_retry());
        assert!(from_cache.message().contains("UnknownIndex"));
    }

    #[derive(Default)]
    struct Nothing;
    impl Handler for Nothing {}

    #[test]
    fn defaults_succeed() {
        let obj = Object::from_json(r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}"#).unwrap();
        let mut h = Nothing;
        assert_eq!(h.init("null"), Ok(()));
        assert_eq!(h.on_add(&obj, true), Ok(Action::AwaitChange));
        assert_eq!(h.on_update(&obj, &obj), Ok(Action::AwaitChange));
        assert_eq!(h.on_delete(&obj, false), Ok(Action::AwaitChange));
        assert_eq!(Action::requeue(Duration::from_secs(2)), Action::RequeueAfter(2000));
    }
}

//! Error plumbing shared by the library: a [`Cause`] that keeps what was being done together
//! with the typed error underneath, and [`Chain`], which prints an error with all of its
//! sources (`a: b: c`) for log lines.
//!
//! wink's error types follow the Rust convention: an error's `Display` says what failed at
//! its own level, and the error that caused it is reachable through
//! [`std::error::Error::source`] — never flattened into a string — so callers can walk the
//! chain and downcast (an `io::ErrorKind::ConnectionRefused`, a `serde_json::Error`, a
//! `kube::Error`). Log lines print the whole chain with [`Chain`].

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// A shareable, typed underlying error.
pub(crate) type BoxedError = Arc<dyn Error + Send + Sync + 'static>;

/// What was being done when something failed, and the typed error underneath, if any.
#[derive(Clone)]
pub struct Cause {
    what: String,
    source: Option<BoxedError>,
}

impl Cause {
    /// A cause with no error underneath (the condition itself is the problem).
    pub fn new(what: impl Into<String>) -> Self {
        Self { what: what.into(), source: None }
    }

    /// A cause with the error underneath it.
    pub fn with_source(what: impl Into<String>, source: impl Error + Send + Sync + 'static) -> Self {
        Self { what: what.into(), source: Some(Arc::new(source)) }
    }

    /// What was being done.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Cause");
        d.field("what", &self.what);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl From<String> for Cause {
    fn from(what: String) -> Self {
        Self::new(what)
    }
}

impl From<&str> for Cause {
    fn from(what: &str) -> Self {
        Self::new(what)
    }
}

/// Displays an error followed by each of its sources, separated by `": "`.
pub(crate) struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(err) = next {
            write!(f, ": {err}")?;
            next = err.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("listing failed")]
    struct Outer(#[source] Cause);

    #[test]
    fn the_chain_keeps_the_typed_cause_and_prints_every_level() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connect");
        let err = Outer(Cause::with_source("reading list of v1/Pod", io));
        assert_eq!(err.to_string(), "listing failed", "Display says only its own level");
        assert_eq!(Chain(&err).to_string(), "listing failed: reading list of v1/Pod: connect");
        let root = err.source().and_then(|c| c.source()).unwrap();
        let io = root.downcast_ref::<std::io::Error>().expect("the typed error underneath");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        assert_eq!(Chain(&Outer(Cause::new("no source"))).to_string(), "listing failed: no source");
    }
}

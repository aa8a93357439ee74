//! Surviving panics at a task's boundary, as client-go's `runtime.HandleCrash` does for its
//! goroutines — except that wink never re-panics: a panic on one event's path is logged with
//! what it was working on, counted, and that part is restarted, while every other part keeps
//! delivering.
//!
//! Where panics are caught:
//! - the reflector ([`Reflector::run`](super::Reflector::run)): a panic in a source's list or
//!   watch, or while applying an event, sends it back through LIST after backoff, as an
//!   error returned from client-go's `ListAndWatch` does;
//! - the transform ([`Transform`](super::Transform)): a panicking transform keeps the object
//!   as received;
//! - processing a key's deltas (indexer and distribution): the key is skipped and the
//!   informer pops the next one;
//! - a handler's notification ([`Notification::deliver`](super::Notification::deliver)) and a
//!   whole batch ([`Listener::run`](super::Listener::run)): the key is retried with the
//!   listener's per-key backoff, as controller-runtime's `RecoverPanic` turns a panic into a
//!   reconcile error that is requeued.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A panic's message, for the log: the `&str` or `String` it was raised with.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

/// Runs `f`, returning the panic's message instead of unwinding further.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_message(&*p))
}

/// A count of panics survived, shared by the parts of one informer.
#[derive(Clone, Debug, Default)]
pub struct PanicCounter(Arc<AtomicU64>);

impl PanicCounter {
    /// Counts one.
    pub fn record(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Panics survived so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_str_and_string_panics_are_kept() {
        assert_eq!(catch(|| -> () { panic!("plain") }).unwrap_err(), "plain");
        assert_eq!(catch(|| -> () { panic!("formatted {}", 7) }).unwrap_err(), "formatted 7");
        assert_eq!(catch(|| std::panic::panic_any(42_u8)).unwrap_err(), "panic with a non-text payload");
        assert_eq!(catch(|| 5), Ok(5));
    }
}

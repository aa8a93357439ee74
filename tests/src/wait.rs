//! Polling for a condition in real time, with a generous deadline: the integration tests run
//! real files, a real file watcher and real wasm on a possibly loaded machine, so they wait
//! for what should happen instead of asserting when it happens.

use std::future::Future;
use std::time::{Duration, Instant};

/// The default deadline of a wait: far longer than anything takes on an idle machine, so a
/// loaded CI runner does not fail a test that is merely slow.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// How often conditions are polled.
pub const POLL: Duration = Duration::from_millis(25);

/// Polls `cond` until it holds (`true`) or `timeout` passes (`false`).
pub async fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    eventually_async(timeout, || std::future::ready(cond())).await
}

/// Polls an async condition until it holds (`true`) or `timeout` passes (`false`).
pub async fn eventually_async<F, Fut>(timeout: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to [`TIMEOUT`] for `cond`, panicking with `what` (and `context()`, evaluated
/// only then, e.g. the log lines seen so far) if it never holds.
pub async fn wait_for(what: &str, cond: impl FnMut() -> bool, context: impl FnOnce() -> String) {
    if !eventually(TIMEOUT, cond).await {
        panic!("timed out after {TIMEOUT:?} waiting for {what}\n{}", context());
    }
}

/// Polls `cond` from a plain thread until it holds (`true`) or `timeout` passes (`false`).
pub fn eventually_blocking(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Lets the host run for a while before checking that something did **not** happen (an
/// event not retried, nothing delivered to a removed plugin). Long enough for the first
/// retry (100 ms) and a file-watcher debounce; a broken host would be caught on an idle
/// machine, and a correct one never fails because of it.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(800)).await;
}

/// Polls `condition` every [`POLL`] until it holds; panics naming `what` after `timeout` (of
/// tokio's clock, so that it also bounds a test on paused time).
pub async fn until(what: impl std::fmt::Display, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

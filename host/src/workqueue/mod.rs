//! client-go's work queue (`k8s.io/client-go/util/workqueue`): the queue of keys a
//! controller reconciles, with its guarantees.
//!
//! - [`WorkQueue`]: a key is never handed out twice at once: a key added while it is being
//!   processed is queued again when its processing is [`done`](WorkQueue::done), once
//!   however often it was added meanwhile; a key added while it waits is not queued twice.
//!   Keys can be added after a delay ([`add_after`](WorkQueue::add_after), the earliest of
//!   several delays wins), or after the delay their [`RateLimiter`] says
//!   ([`add_rate_limited`](WorkQueue::add_rate_limited)).
//! - [`RateLimiter`]: controller-runtime's default, the larger of a per-key exponential
//!   backoff (5 ms doubling to 1000 s) and an overall token bucket (10 per second, bursts
//!   of 100), so one failing key backs off alone while a storm of failures is also paced.
//! - [`QueueStats`]: what controller-runtime's `workqueue_*` metrics report, read when asked
//!   (depth, adds, retries, unfinished work, the longest-running processing), and a
//!   [`QueueObserver`] for the two durations (queued, processing).
//!
//! The queue's clock is tokio's, so tests run it with paused time.
//!
//! This room uses nothing of the rest of the host: it is as general as client-go's.

mod queue;
mod rate_limiter;

pub use queue::{QueueObserver, QueueStats, WorkQueue};
pub use rate_limiter::{RateLimiter, RateLimits};

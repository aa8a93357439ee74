//! Recycling idle instances: a plugin's instance is dropped when it has gone a while without
//! a call, or, least recently used first, when the instance pool is full and another plugin
//! needs a place; the next call instantiates it again from the pre-linked component and
//! calls `init`, as after a trap.
//!
//! This is what lets one host carry many mostly idle plugins: an instance's own pages (its
//! linear memory, its store) are out of the host's reach while it lives, so the host bounds
//! how many live instead — most tenants' plugins hold no instance most of the time, as
//! serverless hosts (Spin, Lambda) keep an instance only while it serves. The contract
//! already says a plugin's memory may be lost between calls (a trap loses it too): a plugin
//! keeps nothing there that it cannot rebuild from the cache, and its `init` runs again.
//!
//! - **Idle**: with [`RecyclePolicy::idle_after`], a reaper task looks at every tracked
//!   instance each quarter of that period; one whose last call is the same as at an earlier
//!   look at least `idle_after` ago, and which no call holds, is dropped (on a blocking
//!   thread: dropping a store resets its memory). The reaper reads no clock per call: the
//!   runner stamps the slot with the clock reading its call ends with anyway. While no
//!   instance lives, the reaper sleeps without a timer until one starts: an idle host is not
//!   woken.
//! - **Pool full**: an instantiation refused because every place of the pool is taken
//!   ([`TrapKind::PoolFull`](crate::plugin::contract::outcome::TrapKind::PoolFull)) drops the
//!   least recently used instance that no call holds and tries once more; only when every
//!   live instance is in a call does the refusal stand (retried with backoff, never counted
//!   towards quarantine). Finding it is a walk over the tracked slots — a pool-full start is
//!   rare and costs an instantiation anyway.
//!
//! A recycled instance's next start is not a restart (`wink_plugin_restarts_total` counts
//! instances re-created after a failure); `wink_plugin_recycled_total` counts the drops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{Mutex, Notify};

use super::Slot;
use crate::plugin::metrics::PluginMetrics;
use crate::plugin::runtime::instance::PluginInstance;

/// How long an instance may go without a call before it is recycled, by default.
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(300);

/// When instances are recycled (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecyclePolicy {
    /// Drop an instance after this long without a call (`None`: never for idleness; the
    /// pool-full recycling still applies).
    pub idle_after: Option<Duration>,
}

impl Default for RecyclePolicy {
    fn default() -> Self {
        Self { idle_after: Some(DEFAULT_IDLE_AFTER) }
    }
}

impl RecyclePolicy {
    /// Never recycle for idleness.
    pub const fn keep_idle() -> Self {
        Self { idle_after: None }
    }

    /// How often the reaper looks: a quarter of the idle period (never below 10 ms), so an
    /// instance goes at most a quarter later than its period says.
    fn tick(idle_after: Duration) -> Duration {
        (idle_after / 4).max(Duration::from_millis(10))
    }
}

/// The instances of a host's plugins that may be recycled. Cheap to clone; clones share the
/// tracked instances.
#[derive(Clone, Default)]
pub struct Recycler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Recycler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recycler").field("policy", &self.inner.policy).finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    policy: RecyclePolicy,
    tracked: parking_lot::Mutex<Vec<Tracked>>,
    reaping: AtomicBool,
    /// Wakes the reaper when an instance starts (and when the recycler goes).
    started: Arc<Notify>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.started.notify_one();
    }
}

/// One plugin handler's slot, and what the reaper saw of it.
struct Tracked {
    slot: Weak<Mutex<Slot>>,
    metrics: PluginMetrics,
    /// The slot's last call as the reaper last saw it, and since when it has stayed so.
    seen: Option<(quanta::Instant, tokio::time::Instant)>,
}

impl Recycler {
    /// A recycler with `policy`.
    pub fn new(policy: RecyclePolicy) -> Self {
        let inner = Inner {
            policy,
            tracked: parking_lot::Mutex::default(),
            reaping: AtomicBool::new(false),
            started: Arc::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Its policy.
    pub fn policy(&self) -> RecyclePolicy {
        self.inner.policy
    }

    /// Tracks a handler's slot, and starts the reaper on the first (it needs a Tokio
    /// runtime; without one, only the pool-full recycling applies).
    pub(super) fn track(&self, slot: &Arc<Mutex<Slot>>, metrics: PluginMetrics) {
        self.inner.tracked.lock().push(Tracked { slot: Arc::downgrade(slot), metrics, seen: None });
        if let Some(idle_after) = self.inner.policy.idle_after
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
            && !self.inner.reaping.swap(true, Ordering::AcqRel)
        {
            runtime.spawn(reap(Arc::downgrade(&self.inner), self.inner.started.clone(), idle_after));
        }
    }

    /// Says an instance started: the reaper, asleep while none lived, looks again.
    pub(super) fn started(&self) {
        if self.inner.policy.idle_after.is_some() {
            self.inner.started.notify_one();
        }
    }

    /// Takes the least recently used instance no call holds, other than the caller's (whose
    /// slot the caller holds, so it is not free), to drop and free its place in the pool.
    pub(super) fn least_recently_used(&self) -> Option<PluginInstance> {
        let tracked = self.inner.tracked.lock();
        let mut oldest: Option<(quanta::Instant, &Tracked)> = None;
        for entry in tracked.iter() {
            let Some(slot) = entry.slot.upgrade() else { continue };
            let Ok(slot) = slot.try_lock() else { continue };
            if let (Some(_), Some(used)) = (&slot.instance, slot.last_used)
                && oldest.is_none_or(|(at, _)| used < at)
            {
                oldest = Some((used, entry));
            }
        }
        let (_, entry) = oldest?;
        let slot = entry.slot.upgrade()?;
        let mut slot = slot.try_lock().ok()?;
        let instance = slot.recycle()?;
        entry.metrics.recycle();
        Some(instance)
    }
}

/// The reaper: every tick, takes the instances idle for `idle_after` out of their slots and
/// drops them on a blocking thread; while none lives, waits for one to start. Ends when the
/// recycler is dropped.
async fn reap(inner: Weak<Inner>, started: Arc<Notify>, idle_after: Duration) {
    let mut live = false;
    loop {
        if live {
            tokio::time::sleep(RecyclePolicy::tick(idle_after)).await;
        } else {
            started.notified().await;
        }
        let Some(inner) = inner.upgrade() else { return };
        let (idle, left) = inner.sweep(tokio::time::Instant::now(), idle_after);
        drop(inner);
        live = left > 0;
        if !idle.is_empty() {
            // Dropping a store resets its memory: not on an executor thread.
            let _ = tokio::task::spawn_blocking(move || drop(idle)).await;
        }
    }
}

impl Inner {
    /// The instances idle for `idle_after` at `now`, taken out of their slots, and how many
    /// live on (or are in a call); forgets the slots of handlers that are gone.
    fn sweep(&self, now: tokio::time::Instant, idle_after: Duration) -> (Vec<PluginInstance>, usize) {
        let (mut idle, mut left) = (Vec::new(), 0);
        self.tracked.lock().retain_mut(|entry| {
            let Some(slot) = entry.slot.upgrade() else { return false };
            let Ok(mut slot) = slot.try_lock() else {
                // In a call: in use now.
                entry.seen = None;
                left += 1;
                return true;
            };
            let Some(used) = slot.last_used.filter(|_| slot.instance.is_some()) else {
                entry.seen = None;
                return true;
            };
            match entry.seen {
                Some((seen, since)) if seen == used => {
                    if now.saturating_duration_since(since) >= idle_after
                        && let Some(instance) = slot.recycle()
                    {
                        entry.metrics.recycle();
                        entry.seen = None;
                        idle.push(instance);
                    }
                }
                _ => entry.seen = Some((used, now)),
            }
            left += usize::from(slot.instance.is_some());
            true
        });
        (idle, left)
    }
}

impl Slot {
    /// Takes the instance out to be dropped: its next call starts a new one, which is not a
    /// restart.
    fn recycle(&mut self) -> Option<PluginInstance> {
        let instance = self.instance.take()?;
        self.started_once = false;
        self.last_used = None;
        Some(instance)
    }
}

#[cfg(test)]
#[path = "recycle_tests.rs"]
mod tests;

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
//!   least recently used instance that no call holds (as CLOCK approximates it, in amortised
//!   constant time: [`Recycler::least_recently_used`]) and tries once more; only when every
//!   live instance is in a call does the refusal stand (retried with backoff, never counted
//!   towards quarantine).
//!
//! The recycler lists only the slots that hold an instance (at most the pool's places), each
//! once: a slot is listed when its instance starts and unlisted when a look finds it empty.
//!
//! A recycled instance's next start is not a restart (`wink_plugin_restarts_total` counts
//! instances re-created after a failure); `wink_plugin_recycled_total` counts the drops.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{Mutex, Notify};

use super::Slot;
use crate::plugin::metrics::PluginMetrics;
use crate::plugin::runtime::instance::PluginInstance;

/// How long an instance may go without a call before it is recycled, by default.
pub(crate) const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(300);

/// When instances are recycled (see [`Recycler`]).
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
#[derive(Clone)]
pub struct Recycler {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Recycler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recycler").field("policy", &self.inner.policy).finish_non_exhaustive()
    }
}

struct Inner {
    policy: RecyclePolicy,
    /// The slots holding an instance, in the clock's order (see [`Recycler::least_recently_used`]).
    live: parking_lot::Mutex<VecDeque<Live>>,
    reaping: AtomicBool,
    /// Wakes the reaper when an instance starts (and when the recycler goes).
    started: Arc<Notify>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.started.notify_one();
    }
}

/// A slot that held an instance when it was listed, and what was last noted of it.
struct Live {
    slot: Weak<Mutex<Slot>>,
    metrics: PluginMetrics,
    /// The slot's last call when last looked at, and since when it has stayed so.
    noted: Option<quanta::Instant>,
    since: tokio::time::Instant,
}

/// What a look at a listed slot found.
enum Look {
    /// Gone, or without an instance: unlisted.
    Unlisted,
    /// Used since it was last noted (noted again).
    InUse,
    /// Unused since it was last noted, at `since`.
    Unused,
}

impl Live {
    /// Looks at the slot (whose guard is `slot`) at `now`.
    fn look(&mut self, slot: &mut Slot, now: tokio::time::Instant) -> Look {
        if slot.instance.is_none() {
            slot.listed = false;
            return Look::Unlisted;
        }
        if slot.last_used != self.noted {
            (self.noted, self.since) = (slot.last_used, now);
            return Look::InUse;
        }
        Look::Unused
    }
}

impl Default for Recycler {
    fn default() -> Self {
        Self::new(RecyclePolicy::default())
    }
}

impl Recycler {
    /// A recycler with `policy`.
    pub fn new(policy: RecyclePolicy) -> Self {
        let inner = Inner {
            policy,
            live: parking_lot::Mutex::default(),
            reaping: AtomicBool::new(false),
            started: Arc::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Starts the reaper, once (it needs a Tokio runtime; without one, only the pool-full
    /// recycling applies).
    pub(super) fn start_reaper(&self) {
        if let Some(idle_after) = self.inner.policy.idle_after
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
            && !self.inner.reaping.swap(true, Ordering::AcqRel)
        {
            runtime.spawn(reap(Arc::downgrade(&self.inner), self.inner.started.clone(), idle_after));
        }
    }

    /// Says `slot` (whose guard is `guard`) started an instance: listed at the back of the
    /// clock unless it is listed already, and the reaper, asleep while none lived, looks again.
    pub(super) fn started(&self, slot: &Weak<Mutex<Slot>>, guard: &mut Slot, metrics: &PluginMetrics) {
        if !guard.listed {
            guard.listed = true;
            let live = Live {
                slot: slot.clone(),
                metrics: metrics.clone(),
                noted: guard.last_used,
                since: tokio::time::Instant::now(),
            };
            self.inner.live.lock().push_back(live);
        }
        if self.inner.policy.idle_after.is_some() {
            self.inner.started.notify_one();
        }
    }

    /// Takes an instance that no call holds and that was used least recently, as far as the
    /// clock tells, to drop and free its place in the pool; never the caller's (whose slot
    /// the caller holds). The clock (CLOCK, the page caches' approximation of LRU): from the
    /// front, a slot used since it was last noted is noted again and goes to the back; the
    /// first found unused since is taken. When a whole round finds every instance used
    /// since, the one whose last call is the oldest is taken (what a second round would take
    /// is only the first in the clock's order). A round costs one look per live instance at
    /// most, never a walk over every deployed plugin, and a taken instance's look is its
    /// last: in the steady state of a full pool a start looks at a few.
    pub(super) fn least_recently_used(&self) -> Option<PluginInstance> {
        let now = tokio::time::Instant::now();
        let mut live = self.inner.live.lock();
        let mut oldest: Option<(quanta::Instant, Arc<Mutex<Slot>>)> = None;
        for _ in 0..live.len() {
            let mut entry = live.pop_front()?;
            let Some(slot) = entry.slot.upgrade() else { continue };
            let Ok(mut guard) = slot.try_lock() else {
                live.push_back(entry);
                continue;
            };
            match entry.look(&mut guard, now) {
                Look::Unlisted => {}
                Look::InUse => {
                    if let Some(used) = guard.last_used
                        && oldest.as_ref().is_none_or(|(at, _)| used < *at)
                    {
                        oldest = Some((used, slot.clone()));
                    }
                    live.push_back(entry);
                }
                Look::Unused => {
                    let instance = guard.recycle();
                    entry.metrics.recycle();
                    return instance;
                }
            }
        }
        let (_, slot) = oldest?;
        let instance = slot.try_lock().ok()?.recycle()?;
        // Its entry went to the back in the round above, with the list locked since.
        let at = live.iter().position(|entry| std::ptr::eq(entry.slot.as_ptr(), Arc::as_ptr(&slot)));
        if let Some(entry) = at.and_then(|at| live.remove(at)) {
            entry.metrics.recycle();
        }
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
    /// live on; unlists the slots without an instance.
    fn sweep(&self, now: tokio::time::Instant, idle_after: Duration) -> (Vec<PluginInstance>, usize) {
        let mut idle = Vec::new();
        let mut live = self.live.lock();
        live.retain_mut(|entry| {
            let Some(slot) = entry.slot.upgrade() else { return false };
            let Ok(mut guard) = slot.try_lock() else { return true };
            match entry.look(&mut guard, now) {
                Look::Unlisted => false,
                Look::InUse => true,
                Look::Unused if now.saturating_duration_since(entry.since) < idle_after => true,
                Look::Unused => {
                    idle.extend(guard.recycle());
                    entry.metrics.recycle();
                    false
                }
            }
        });
        (idle, live.len())
    }
}

impl Slot {
    /// Takes the instance out to be dropped, and unlists the slot: its next call starts a new
    /// instance, which is not a restart.
    fn recycle(&mut self) -> Option<PluginInstance> {
        let instance = self.instance.take()?;
        self.started_once = false;
        self.last_used = None;
        self.listed = false;
        Some(instance)
    }
}

#[cfg(test)]
#[path = "recycle_tests.rs"]
mod tests;

//! [`ThreadCpu`]: the CPU time the calling thread has used, to tell a call that computes for
//! long from one that was merely descheduled (or waited) while it ran.
//!
//! A lone call runs on the delivering executor thread only while the plugin's calls stay
//! short, and one that runs long there sends the plugin back to the guest threads for good
//! (see [`runner`](crate::plugin::delivery::runner)). Wall time alone would count a virtual
//! CPU's preemption (milliseconds on a busy host) against the plugin; its own CPU time does
//! not.

use std::cell::Cell;
use std::time::Duration;

thread_local! {
    /// CPU time sampled on this thread since [`begin_sampling`] (see [`sample`]).
    static SAMPLED: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// Starts collecting [`sample`]s on this thread, forgetting earlier ones.
pub(crate) fn begin_sampling() {
    SAMPLED.with(|s| s.set(None));
}

/// Adds `cpu` to this thread's samples. Guest calls add the CPU time they used from their
/// first epoch tick on ([`CallDeadline`](crate::plugin::runtime::deadline::CallDeadline)): reading the CPU
/// clock is a system call, a sizeable part of a short call, so a call that ends before its
/// first tick reads it not at all.
pub fn sample(cpu: Duration) {
    SAMPLED.with(|s| s.set(Some(s.get().unwrap_or_default() + cpu)));
}

/// The CPU time sampled on this thread since [`begin_sampling`]; `None` when no call ran
/// past an epoch tick (or the platform has no thread CPU clock).
pub(crate) fn take_samples() -> Option<Duration> {
    SAMPLED.with(Cell::take)
}

/// A reading of this thread's CPU clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadCpu(Option<Duration>);

impl ThreadCpu {
    /// This thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`); unknown where the platform
    /// has no such clock.
    pub fn now() -> Self {
        Self(read())
    }

    /// The CPU time this thread used since `self` was read, if known (only meaningful on the
    /// thread that read it).
    pub fn elapsed(self) -> Option<Duration> {
        Some(read()?.saturating_sub(self.0?))
    }
}

#[cfg(target_os = "linux")]
fn read() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    #[allow(unsafe_code, reason = "clock_gettime(2) writing into a timespec we own")]
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn read() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_computing_but_not_sleeping() {
        let start = ThreadCpu::now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = start.elapsed().expect("a thread CPU clock on this platform");
        assert!(slept < Duration::from_millis(15), "sleeping used {slept:?} of CPU");
        let start = ThreadCpu::now();
        let began = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().unwrap() < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
            assert!(began.elapsed() < Duration::from_secs(10), "spinning never showed 5 ms of CPU");
        }
    }
}

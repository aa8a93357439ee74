//! [`RefusalLog`]: a plugin's refused requests, logged so that they cannot flood the log.
//!
//! A refusal is worth a line (it names the rule the plugin lacks), but a plugin decides how
//! many it makes: a loop of refused requests would otherwise write megabytes a second, and
//! the request's names are the guest's to choose. So each plugin's refusals are logged at
//! most [`PER_SECOND`] a second with a burst of [`BURST`]; the ones left out are counted and
//! the next line says how many. What a line shows of the request is escaped onto one line
//! and bounded as guest text is ([`GuestText`]). Every refusal, logged or not, is counted in
//! the plugin's request metrics.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

use governor::clock::DefaultClock;
use governor::{Quota, RateLimiter};

use crate::plugin::contract::guest_text::GuestText;

/// Refusal lines a plugin may cause per second, sustained.
pub(crate) const PER_SECOND: u32 = 1;
/// Refusal lines a plugin may cause at once.
pub(crate) const BURST: u32 = 5;

type Limiter = RateLimiter<governor::state::NotKeyed, governor::state::InMemoryState, DefaultClock>;

/// The refusals of one plugin. See the module docs.
#[derive(Debug)]
pub(crate) struct RefusalLog {
    lines: Limiter,
    left_out: AtomicU64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        let per_second = NonZeroU32::new(PER_SECOND).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(BURST).unwrap_or(NonZeroU32::MIN);
        Self {
            lines: RateLimiter::direct(Quota::per_second(per_second).allow_burst(burst)),
            left_out: AtomicU64::new(0),
        }
    }
}

impl RefusalLog {
    /// Logs that `plugin` may not make `request` (already escaped and bounded) because of
    /// `by`, unless the plugin's refusals are over their rate; returns whether a line was
    /// written.
    pub fn refused(&self, plugin: &str, request: &GuestText, by: &str) -> bool {
        if self.lines.check().is_err() {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let left_out = self.left_out.swap(0, Ordering::Relaxed);
        if left_out == 0 {
            tracing::warn!(plugin, request = request.as_str(), "request refused: {by}");
        } else {
            tracing::warn!(
                plugin,
                request = request.as_str(),
                left_out,
                "request refused: {by} ({left_out} more refusals not logged)"
            );
        }
        true
    }

    /// Refusals not logged since the last line.
    #[cfg(test)]
    pub fn left_out(&self) -> u64 {
        self.left_out.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_refusals_writes_a_burst_of_lines_and_counts_the_rest() {
        let log = RefusalLog::default();
        let written = (0..1000).filter(|_| log.refused("flooder", &GuestText::new("get pods"), "no rule")).count();
        assert!(written >= BURST as usize && written <= BURST as usize + 1, "{written} lines");
        assert_eq!(log.left_out(), 1000 - written as u64);
    }
}

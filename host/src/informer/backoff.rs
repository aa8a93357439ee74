//! Exponential backoff with jitter that resets after a quiet period: client-go's
//! `ExponentialBackoffManager` as the reflector uses it (800 ms initial, ×2, 30 s cap,
//! reset after 2 minutes without failure).
//!
//! It reads tokio's clock, so tests drive it with paused time; its random source is seeded
//! per instance so a test can pin the jitter.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

/// The shape of a backoff schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// Each consecutive failure multiplies the delay by this.
    pub factor: f64,
    /// No delay exceeds this (jitter included).
    pub max: Duration,
    /// Each delay is stretched by up to this fraction, at random: `delay * (1 + jitter * U[0,1))`.
    pub jitter: f64,
    /// A failure more than this long after the previous one starts over at `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    /// client-go's reflector backoff: 800 ms, ×2, 30 s cap, reset after 2 minutes.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            factor: 2.0,
            max: Duration::from_secs(30),
            jitter: 0.5,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// A backoff schedule in progress.
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    /// The un-jittered delay of the last failure.
    current: Option<Duration>,
    last_failure: Option<Instant>,
    rng: StdRng,
}

impl Backoff {
    /// A fresh schedule.
    pub fn new(config: BackoffConfig) -> Self {
        Self { config, current: None, last_failure: None, rng: StdRng::from_os_rng() }
    }

    /// A fresh schedule whose jitter comes from a seeded generator.
    pub fn with_seed(config: BackoffConfig, seed: u64) -> Self {
        Self { config, current: None, last_failure: None, rng: StdRng::seed_from_u64(seed) }
    }

    /// Records a failure now and returns how long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self.last_failure.is_some_and(|last| now.duration_since(last) > self.config.reset_after) {
            self.current = None;
        }
        self.last_failure = Some(now);
        let base = match self.current {
            None => self.config.initial,
            Some(previous) => previous.mul_f64(self.config.factor).min(self.config.max),
        };
        self.current = Some(base);
        let stretch = if self.config.jitter > 0.0 { self.config.jitter * self.rng.random::<f64>() } else { 0.0 };
        base.mul_f64(1.0 + stretch).min(self.config.max)
    }

    /// Starts over at the initial delay.
    pub fn reset(&mut self) {
        self.current = None;
        self.last_failure = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_jitter() -> BackoffConfig {
        BackoffConfig { jitter: 0.0, ..BackoffConfig::default() }
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_schedule_doubles_from_800ms_to_a_30s_cap() {
        let mut backoff = Backoff::new(no_jitter());
        let delays: Vec<u128> = (0..8).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_resets_after_two_quiet_minutes() {
        let mut backoff = Backoff::new(no_jitter());
        for _ in 0..4 {
            backoff.next_delay();
        }
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(backoff.next_delay(), Duration::from_millis(12800), "119 s is not quiet enough");
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(backoff.next_delay(), Duration::from_millis(800), "reset after 2 minutes");
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_jitter_stretches_within_bounds_and_never_past_the_cap() {
        let config = BackoffConfig { jitter: 1.0, ..BackoffConfig::default() };
        let mut backoff = Backoff::with_seed(config, 7);
        let mut base = Duration::from_millis(800);
        let mut saw_stretch = false;
        for _ in 0..10 {
            let delay = backoff.next_delay();
            assert!(delay >= base.min(Duration::from_secs(30)) && delay <= Duration::from_secs(30), "{delay:?}");
            assert!(delay <= base * 2);
            saw_stretch |= delay > base;
            base = (base * 2).min(Duration::from_secs(30));
        }
        assert!(saw_stretch, "jitter is applied");
    }
}

//! Exponential backoff with jitter that resets after a quiet period: client-go's
//! `ExponentialBackoffManager` as the reflector uses it (`NewReflectorWithOptions`:
//! 800 ms initial, ×2, 30 s cap, jitter 1.0, reset after 2 minutes without failure). As
//! client-go's `Backoff.Step`, the cap bounds the doubling and the jitter stretches every
//! delay, the capped ones included: at the cap a delay is in `[max, max * (1 + jitter))`.
//!
//! It reads tokio's clock, so tests drive it with paused time; its random source is seeded
//! per instance so a test can pin the jitter.
//!
//! One [`BackoffConfig`] shape serves every retry in wink, configured differently: the
//! reflector's relists ([`BackoffConfig::default`], stateful [`Backoff`]), handler retries per
//! key ([`BackoffConfig::HANDLER_RETRY`], by attempt number: client-go's workqueue
//! `ItemExponentialFailureRateLimiter`), plugin restarts ([`BackoffConfig::PLUGIN_RESTART`])
//! and failed deploys (`plugin::DEPLOY_RETRY`).

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
    /// The doubling stops here; jitter still stretches the capped delay, as client-go's
    /// `Backoff.Cap`.
    pub max: Duration,
    /// Each delay is stretched by up to this fraction, at random: `delay * (1 + jitter * U[0,1))`.
    pub jitter: f64,
    /// A failure more than this long after the previous one starts over at `initial`.
    pub reset_after: Duration,
}

impl BackoffConfig {
    /// Handler retries of one key: 100 ms doubling to 60 s, without jitter.
    pub const HANDLER_RETRY: BackoffConfig = BackoffConfig {
        initial: Duration::from_millis(100),
        factor: 2.0,
        max: Duration::from_secs(60),
        jitter: 0.0,
        reset_after: Duration::MAX,
    };

    /// Re-instantiating a plugin after consecutive failures: 100 ms doubling to 30 s,
    /// without jitter (the first restart is immediate: see the runner).
    pub const PLUGIN_RESTART: BackoffConfig = BackoffConfig {
        initial: Duration::from_millis(100),
        factor: 2.0,
        max: Duration::from_secs(30),
        jitter: 0.0,
        reset_after: Duration::MAX,
    };

    /// The un-jittered delay before attempt `attempt` (1-based) of a schedule kept by
    /// attempt number rather than by a [`Backoff`]: `initial * factor^(attempt - 1)`, capped
    /// at `max` (attempt 0 counts as 1).
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(1024) as i32;
        let secs = self.initial.as_secs_f64() * self.factor.powi(exponent);
        Duration::try_from_secs_f64(secs).map_or(self.max, |d| d.min(self.max))
    }
}

impl Default for BackoffConfig {
    /// client-go's reflector backoff: 800 ms, ×2, 30 s cap, jitter 1.0, reset after 2
    /// minutes (`wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock)`).
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            factor: 2.0,
            max: Duration::from_secs(30),
            jitter: 1.0,
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
        base.mul_f64(1.0 + stretch)
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

    /// client-go's `ItemExponentialFailureRateLimiter.When`: `base * 2^failures`, capped.
    #[test]
    fn delays_by_attempt_double_to_the_cap_without_overflow() {
        let retry = BackoffConfig::HANDLER_RETRY;
        let delays: Vec<u128> = (1..=11).map(|n| retry.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000]);
        assert_eq!(retry.delay(0), retry.delay(1));
        assert_eq!(retry.delay(u32::MAX), Duration::from_secs(60));
        let stateful: Vec<_> = {
            let mut b = Backoff::new(no_jitter());
            (0..8).map(|_| b.next_delay()).collect()
        };
        let by_attempt: Vec<_> = (1..=8).map(|n| no_jitter().delay(n)).collect();
        assert_eq!(stateful, by_attempt, "one schedule, kept either way");
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

    /// client-go's `NewReflectorWithOptions` backoff values
    /// (`wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock)`).
    #[test]
    fn default_backoff_is_client_gos_reflector_backoff() {
        let config = BackoffConfig::default();
        assert_eq!(config.initial, Duration::from_millis(800));
        assert_eq!(config.max, Duration::from_secs(30));
        assert_eq!(config.reset_after, Duration::from_secs(120));
        assert!((config.factor - 2.0).abs() < f64::EPSILON);
        assert!((config.jitter - 1.0).abs() < f64::EPSILON);
    }

    /// client-go's `Backoff.Step` (and its `TestBackoff_Step` cases with a cap and jitter):
    /// every delay, the capped ones included, is `base * (1 + jitter * U[0,1))`, with the
    /// doubling of `base` capped; so at the 30 s cap delays lie in `[30 s, 60 s)`.
    #[tokio::test(start_paused = true)]
    async fn backoff_jitter_stretches_every_delay_including_at_the_cap() {
        let mut backoff = Backoff::with_seed(BackoffConfig::default(), 7);
        let mut base = Duration::from_millis(800);
        let mut past_cap = false;
        for _ in 0..30 {
            let delay = backoff.next_delay();
            assert!(delay >= base && delay < base * 2, "{delay:?} for base {base:?}");
            past_cap |= delay > Duration::from_secs(30);
            base = (base * 2).min(Duration::from_secs(30));
        }
        assert!(past_cap, "jitter applies at the cap too");
    }
}

//! How long a key waits before it is retried: client-go's
//! `ItemExponentialFailureRateLimiter` and `BucketRateLimiter`, combined as
//! `DefaultTypedControllerRateLimiter` combines them (the larger delay of the two).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// The settings of a [`RateLimiter`]. The default is controller-runtime's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimits {
    /// The first retry's delay; each further failure of the same key doubles it.
    pub base_delay: Duration,
    /// The longest a key's delay grows.
    pub max_delay: Duration,
    /// Retries per second over all keys, sustained.
    pub qps: f64,
    /// Retries allowed at once above the rate.
    pub burst: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self { base_delay: Duration::from_millis(5), max_delay: Duration::from_secs(1000), qps: 10.0, burst: 100 }
    }
}

/// Delays for retries: per key, `base_delay × 2^failures` up to `max_delay`; over all keys,
/// a token bucket of `qps` and `burst` that hands out future tokens as delays (as
/// `rate.Limiter.Reserve` does), so that many keys failing at once are spread out rather
/// than retried together.
#[derive(Debug)]
pub struct RateLimiter<K> {
    limits: RateLimits,
    failures: HashMap<K, u32>,
    /// Tokens left (negative: reserved ahead), as of `updated`.
    tokens: f64,
    updated: Option<Instant>,
}

impl<K: Eq + Hash + Clone> RateLimiter<K> {
    /// A limiter with these settings.
    pub fn new(limits: RateLimits) -> Self {
        Self { limits, failures: HashMap::new(), tokens: f64::from(limits.burst), updated: None }
    }

    /// The delay before `key`'s next retry, counting one more failure of it.
    pub fn when(&mut self, key: &K, now: Instant) -> Duration {
        let failures = self.failures.entry(key.clone()).or_insert(0);
        let exponent = *failures;
        *failures = failures.saturating_add(1);
        let backoff = self.limits.base_delay.checked_mul(2u32.checked_pow(exponent).unwrap_or(u32::MAX));
        let backoff = backoff.map_or(self.limits.max_delay, |d| d.min(self.limits.max_delay));
        backoff.max(self.reserve(now))
    }

    /// Takes a token from the bucket: how long until it is there.
    fn reserve(&mut self, now: Instant) -> Duration {
        if self.limits.qps.is_nan() || self.limits.qps <= 0.0 {
            return Duration::ZERO;
        }
        let burst = f64::from(self.limits.burst.max(1));
        let elapsed = self.updated.map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        self.tokens = (self.tokens + elapsed * self.limits.qps).min(burst) - 1.0;
        self.updated = Some(now);
        if self.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-self.tokens / self.limits.qps) }
    }

    /// Forgets `key`'s failures: its next retry starts from `base_delay` again.
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// How many times `key` failed since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(qps: f64, burst: u32) -> RateLimiter<&'static str> {
        RateLimiter::new(RateLimits {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1),
            qps,
            burst,
        })
    }

    #[test]
    fn a_failing_key_backs_off_exponentially_to_the_cap_alone() {
        let mut limiter = limiter(0.0, 0);
        let now = Instant::now();
        let delays: Vec<u128> = (0..10).map(|_| limiter.when(&"a", now).as_millis()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(limiter.when(&"b", now), Duration::from_millis(5), "another key starts at the base");
        assert_eq!(limiter.num_requeues(&"a"), 10);
        limiter.forget(&"a");
        assert_eq!((limiter.num_requeues(&"a"), limiter.when(&"a", now)), (0, Duration::from_millis(5)));
        for _ in 0..100 {
            limiter.when(&"c", now);
        }
        assert_eq!(limiter.when(&"c", now), Duration::from_secs(1), "no overflow past the cap");
    }

    #[test]
    fn the_bucket_spreads_a_storm_of_failures_at_its_rate() {
        let mut limiter = limiter(10.0, 2);
        let now = Instant::now();
        let keys = ["a", "b", "c", "d"];
        let delays: Vec<u128> = keys.iter().map(|k| limiter.when(k, now).as_millis()).collect();
        // Two from the burst (the per-key 5 ms), then one every 100 ms, reserved ahead.
        assert_eq!(delays, [5, 5, 100, 200]);
        // A second later the bucket has refilled to its burst.
        assert_eq!(limiter.when(&"e", now + Duration::from_secs(1)), Duration::from_millis(5));
    }
}

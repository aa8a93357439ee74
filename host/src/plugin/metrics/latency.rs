//! [`LatencyHistogram`]: a classic Prometheus histogram of durations that records without a
//! lock.
//!
//! prometheus-client's `Histogram` takes a mutex on every observation (it also keeps native
//! buckets and scheduled resets, which wink does not use), and every plugin call records one:
//! a sizeable part of a lone event delivered in about a microsecond. Here an observation is
//! two atomic additions, its bucket's count and the sum in nanoseconds, on lines that only
//! one plugin's calls write. A scrape reads the counts one by one, so an observation racing
//! it may show in the sum before its bucket (or after) for that one scrape; the count is the
//! buckets' total. It encodes exactly as prometheus-client's `Histogram` with the same
//! buckets does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::metrics::{MetricType, TypedMetric};

/// The finite buckets: 10 µs … ~16 s, ×3 per bucket.
const BUCKETS: usize = 14;

/// Their upper bounds in seconds, as prometheus-client's `exponential_buckets` gives them
/// (one copy for every histogram).
static BOUNDS: LazyLock<[f64; BUCKETS]> = LazyLock::new(|| {
    let mut bounds = [0.0; BUCKETS];
    for (bound, value) in bounds.iter_mut().zip(exponential_buckets(1e-5, 3.0, BUCKETS as u16)) {
        *bound = value;
    }
    bounds
});

/// Durations by bucket (the last one above every bound, `+Inf`), and their sum.
#[derive(Clone, Debug)]
pub(crate) struct LatencyHistogram(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    counts: [AtomicU64; BUCKETS + 1],
    sum_nanos: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self(Arc::new(Inner { counts: Default::default(), sum_nanos: AtomicU64::new(0) }))
    }
}

impl LatencyHistogram {
    /// Records one duration.
    pub fn observe(&self, duration: Duration) {
        let seconds = duration.as_secs_f64();
        let bucket = BOUNDS.iter().position(|&bound| seconds <= bound).unwrap_or(BUCKETS);
        self.0.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.0.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Durations recorded so far.
    #[cfg(test)]
    fn count(&self) -> u64 {
        self.0.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

impl TypedMetric for LatencyHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut buckets = [(f64::INFINITY, 0); BUCKETS + 1];
        for ((bucket, bound), count) in buckets.iter_mut().zip(*BOUNDS).zip(&self.0.counts) {
            *bucket = (bound, count.load(Ordering::Relaxed));
        }
        buckets[BUCKETS].1 = self.0.counts[BUCKETS].load(Ordering::Relaxed);
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = Duration::from_nanos(self.0.sum_nanos.load(Ordering::Relaxed)).as_secs_f64();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    use super::*;

    fn text(register: impl FnOnce(&mut Registry)) -> String {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut out = String::new();
        encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn it_encodes_as_prometheus_clients_histogram_with_the_same_buckets() {
        let ours = LatencyHistogram::default();
        let theirs = Histogram::new(exponential_buckets(1e-5, 3.0, 14));
        // Below the first bound, on a bound, between bounds, past the last one.
        let durations = [
            Duration::from_nanos(1),
            Duration::from_micros(10),
            Duration::from_micros(29),
            Duration::from_micros(31),
            Duration::from_millis(2),
            Duration::from_secs(100),
        ];
        for d in durations {
            ours.observe(d);
            theirs.observe(d.as_secs_f64());
        }
        assert_eq!(ours.count(), 6);
        let ours = text(|r| r.register("call_duration_seconds", "Duration of calls", ours));
        let theirs = text(|r| r.register("call_duration_seconds", "Duration of calls", theirs));
        assert_eq!(ours, theirs);
        assert!(ours.contains("call_duration_seconds_bucket{le=\"+Inf\"} 6"), "{ours}");
    }
}

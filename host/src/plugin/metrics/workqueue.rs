//! [`WorkQueueMetrics`]: controller-runtime's `workqueue_*` metrics, one series per
//! reconciler (labels `name` and `controller`, both the plugin's name, as controller-runtime
//! gives them), so that the dashboards written for Kubernetes controllers read wink's
//! reconcilers too: `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total`,
//! `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` (read
//! from each queue at scrape), and the histograms `workqueue_queue_duration_seconds` and
//! `workqueue_work_duration_seconds` (observed as keys come and go).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use super::latency::LatencyHistogram;
use crate::workqueue::{QueueObserver, QueueStats, WorkQueue};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    name: String,
    controller: String,
}

impl QueueLabel {
    fn of(plugin: &str) -> Self {
        Self { name: plugin.to_owned(), controller: plugin.to_owned() }
    }
}

type Durations = Family<QueueLabel, LatencyHistogram, fn() -> LatencyHistogram>;

/// The work queues of a host's reconcilers, and their metrics.
#[derive(Clone, Debug)]
pub struct WorkQueueMetrics {
    queues: Arc<parking_lot::Mutex<BTreeMap<String, WorkQueue<String>>>>,
    queued: Durations,
    worked: Durations,
}

impl Default for WorkQueueMetrics {
    fn default() -> Self {
        Self {
            queues: Arc::default(),
            queued: Family::new_with_constructor(LatencyHistogram::default),
            worked: Family::new_with_constructor(LatencyHistogram::default),
        }
    }
}

/// Observes one queue's durations into its series.
struct Observer {
    queued: LatencyHistogram,
    worked: LatencyHistogram,
}

impl QueueObserver for Observer {
    fn queued(&self, waited: Duration) {
        self.queued.observe(waited);
    }
    fn worked(&self, took: Duration) {
        self.worked.observe(took);
    }
}

impl WorkQueueMetrics {
    /// The observer of `plugin`'s queue (its duration series, created at zero).
    pub fn observer(&self, plugin: &str) -> Arc<dyn QueueObserver> {
        let label = QueueLabel::of(plugin);
        Arc::new(Observer {
            queued: self.queued.get_or_create_owned(&label),
            worked: self.worked.get_or_create_owned(&label),
        })
    }

    /// Reports `queue` as `plugin`'s (replacing the queue of a version it replaces).
    pub fn track(&self, plugin: &str, queue: WorkQueue<String>) {
        self.queues.lock().insert(plugin.to_owned(), queue);
    }

    /// Forgets `plugin`'s queue and series.
    pub fn remove(&self, plugin: &str) {
        self.queues.lock().remove(plugin);
        let label = QueueLabel::of(plugin);
        self.queued.remove(&label);
        self.worked.remove(&label);
    }

    /// Adds the metrics to a Prometheus registry, without a prefix (controller-runtime's
    /// names).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(QueueCollector(self.queues.clone())));
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long a key stays in a reconciler's work queue before it is reconciled",
            self.queued.clone(),
        );
        registry.register("workqueue_work_duration_seconds", "How long reconciling a key takes", self.worked.clone());
    }
}

/// Reads one figure of a queue's stats.
type Read<T> = fn(&QueueStats) -> T;

#[derive(Debug)]
struct QueueCollector(Arc<parking_lot::Mutex<BTreeMap<String, WorkQueue<String>>>>);

impl Collector for QueueCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let stats: Vec<_> = self.0.lock().iter().map(|(name, queue)| (QueueLabel::of(name), queue.stats())).collect();
        let mut family = encoder.encode_descriptor(
            "workqueue_depth",
            "Keys waiting in a reconciler's work queue",
            None,
            MetricType::Gauge,
        )?;
        for (label, s) in &stats {
            ConstGauge::new(s.depth as i64).encode(family.encode_family(label)?)?;
        }
        let counters: [(&str, &str, Read<u64>); 2] = [
            ("workqueue_adds", "Keys added to a reconciler's work queue", |s| s.adds),
            ("workqueue_retries", "Keys added again after a failed reconcile (with backoff)", |s| s.retries),
        ];
        for (name, help, read) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (label, s) in &stats {
                ConstCounter::new(read(s)).encode(family.encode_family(label)?)?;
            }
        }
        let gauges: [(&str, &str, Read<Duration>); 2] = [
            (
                "workqueue_unfinished_work",
                "How long the reconciles in progress have been running, together (a stuck reconcile grows it)",
                |s| s.unfinished_work,
            ),
            (
                "workqueue_longest_running_processor",
                "How long the longest reconcile in progress has been running",
                |s| s.longest_running,
            ),
        ];
        for (name, help, read) in gauges {
            let mut family = encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Gauge)?;
            for (label, s) in &stats {
                ConstGauge::new(read(s).as_secs_f64()).encode(family.encode_family(label)?)?;
            }
        }
        Ok(())
    }
}

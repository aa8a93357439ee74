//! Per-plugin metrics: calls, handler errors, traps by kind, restarts, quarantine, dropped,
//! skipped and coalesced events, call latency, delivery lag (from an event's arrival in the
//! plugin's queue to its handler's return), and requests to the cluster by verb and outcome,
//! with their durations by verb, resource and outcome (client-go's
//! `rest_client_request_duration_seconds`, per plugin); and the reconcilers' work queues, as
//! controller-runtime's `workqueue_*` metrics ([`workqueue`]).
//!
//! All plugins share one set of metric families labelled `plugin="<name>"` (so that the
//! Prometheus text output has each family once); a [`PluginMetrics`] is one plugin's handles
//! into them, cheap to update from any thread. [`MetricsRegistry::register`] adds the
//! families to a `prometheus_client` registry for the HTTP endpoint;
//! [`PluginMetrics::summary`] is a one-line digest for logs.

pub(crate) mod latency;
pub(crate) mod workqueue;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::plugin::contract::outcome::TrapKind;
use crate::plugin::metrics::latency::LatencyHistogram;

/// The trap kinds counted separately, as [`TrapKind::label`] names them.
pub(crate) const TRAP_KINDS: [&str; 6] =
    ["interrupt", "out_of_memory", "stack_overflow", "other", "instantiation", "init_rejected"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabel {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginKindLabel {
    plugin: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    plugin: String,
    verb: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestDurationLabel {
    plugin: String,
    verb: &'static str,
    /// The resource as kubectl names it: `deployments.apps`, `configmaps`.
    resource: String,
    outcome: &'static str,
}

type HistogramFamily = Family<PluginLabel, LatencyHistogram, fn() -> LatencyHistogram>;

type RequestDurationFamily = Family<RequestDurationLabel, LatencyHistogram, fn() -> LatencyHistogram>;

/// The request durations of every plugin, and the series each plugin has (the resources a
/// plugin asks for are known only as it asks), so that an unloaded plugin's go too.
#[derive(Clone, Debug)]
struct RequestDurations {
    family: RequestDurationFamily,
    series: Arc<parking_lot::Mutex<std::collections::HashSet<RequestDurationLabel>>>,
}

impl RequestDurations {
    fn new() -> Self {
        Self { family: Family::new_with_constructor(LatencyHistogram::default), series: Arc::default() }
    }

    fn observe(&self, label: RequestDurationLabel, duration: Duration) {
        if self.family.get(&label).is_none() {
            self.series.lock().insert(label.clone());
        }
        self.family.get_or_create(&label).observe(duration);
    }

    fn remove(&self, plugin: &str) {
        self.series.lock().retain(|label| {
            let keep = label.plugin != plugin;
            if !keep {
                self.family.remove(label);
            }
            keep
        });
    }
}

/// The metric families of every plugin of a host.
#[derive(Clone, Debug)]
pub struct MetricsRegistry {
    calls: Family<PluginLabel, Counter>,
    handler_errors: Family<PluginKindLabel, Counter>,
    traps: Family<PluginKindLabel, Counter>,
    restarts: Family<PluginLabel, Counter>,
    recycled: Family<PluginLabel, Counter>,
    quarantined: Family<PluginLabel, Gauge>,
    queue_depth: Family<PluginLabel, Gauge>,
    dropped: Family<PluginLabel, Counter>,
    skipped: Family<PluginLabel, Counter>,
    call_duration: HistogramFamily,
    delivery_lag: HistogramFamily,
    coalesced: Family<PluginLabel, Counter>,
    requests: Family<RequestLabel, Counter>,
    request_durations: RequestDurations,
    timed: Arc<parking_lot::Mutex<HashMap<String, Arc<Timed>>>>,
    work_queues: workqueue::WorkQueueMetrics,
}

/// Total nanoseconds of one plugin's calls (counted in `calls`), for the summary's mean: the
/// histogram's own sum is not readable.
type Timed = AtomicU64;

impl Default for MetricsRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl MetricsRegistry {
    /// Empty families.
    pub fn new() -> Self {
        Self {
            calls: Family::default(),
            handler_errors: Family::default(),
            traps: Family::default(),
            restarts: Family::default(),
            recycled: Family::default(),
            quarantined: Family::default(),
            queue_depth: Family::default(),
            dropped: Family::default(),
            skipped: Family::default(),
            call_duration: Family::new_with_constructor(LatencyHistogram::default),
            delivery_lag: Family::new_with_constructor(LatencyHistogram::default),
            coalesced: Family::default(),
            requests: Family::default(),
            request_durations: RequestDurations::new(),
            timed: Arc::default(),
            work_queues: workqueue::WorkQueueMetrics::default(),
        }
    }

    /// Adds the families to a Prometheus registry, as `wink_plugin_*`.
    pub fn register(&self, registry: &mut Registry) {
        self.work_queues.register(registry);
        let r = registry.sub_registry_with_prefix("wink_plugin");
        r.register("calls", "Calls into plugins (init and handlers)", self.calls.clone());
        r.register(
            "handler_errors",
            "Errors returned by plugin handlers, by kind (retry, fatal)",
            self.handler_errors.clone(),
        );
        r.register("traps", "Plugin traps, by kind", self.traps.clone());
        r.register("restarts", "Plugin instances re-created after a trap", self.restarts.clone());
        r.register(
            "recycled",
            "Idle plugin instances dropped (after a period without calls, or to make room in the instance pool)",
            self.recycled.clone(),
        );
        r.register("quarantined", "1 when the plugin is quarantined", self.quarantined.clone());
        r.register(
            "queue_depth",
            "Notifications waiting for the plugin, over all its listeners (at most one per object)",
            self.queue_depth.clone(),
        );
        r.register("dropped_events", "Events not delivered because the plugin is quarantined", self.dropped.clone());
        r.register("skipped_events", "Events skipped after a trap (onError: skip)", self.skipped.clone());
        r.register("call_duration_seconds", "Duration of calls into plugins", self.call_duration.clone());
        r.register(
            "delivery_lag_seconds",
            "From an event's arrival in the plugin's queue to the return of the call that handled it",
            self.delivery_lag.clone(),
        );
        r.register(
            "coalesced_events",
            "Events folded into one already waiting for the same object (the plugin sees the newest state)",
            self.coalesced.clone(),
        );
        r.register(
            "requests",
            "Requests plugins made to the cluster, by verb and outcome (ok, or the error's kind)",
            self.requests.clone(),
        );
        r.register(
            "request_duration_seconds",
            "Duration of plugins' requests to the cluster (checks, rate limiting and the answer), \
             by verb, resource and outcome",
            self.request_durations.family.clone(),
        );
    }

    /// The handles of one plugin's metrics (created at zero on first use).
    pub fn plugin(&self, name: &str) -> PluginMetrics {
        let label = PluginLabel { plugin: name.to_owned() };
        let kind = |family: &Family<PluginKindLabel, Counter>, kind: &'static str| {
            family.get_or_create_owned(&PluginKindLabel { plugin: name.to_owned(), kind })
        };
        PluginMetrics {
            name: name.into(),
            calls: self.calls.get_or_create_owned(&label),
            retry_errors: kind(&self.handler_errors, "retry"),
            fatal_errors: kind(&self.handler_errors, "fatal"),
            traps: TRAP_KINDS.map(|k| kind(&self.traps, k)),
            restarts: self.restarts.get_or_create_owned(&label),
            recycled: self.recycled.get_or_create_owned(&label),
            quarantined: self.quarantined.get_or_create_owned(&label),
            queue_depth: self.queue_depth.get_or_create_owned(&label),
            dropped: self.dropped.get_or_create_owned(&label),
            skipped: self.skipped.get_or_create_owned(&label),
            call_duration: self.call_duration.get_or_create_owned(&label),
            delivery_lag: self.delivery_lag.get_or_create_owned(&label),
            coalesced: self.coalesced.get_or_create_owned(&label),
            requests: self.requests.clone(),
            request_durations: self.request_durations.clone(),
            timed: self.timed.lock().entry(name.to_owned()).or_default().clone(),
        }
    }

    /// The reconcilers' work queues and their `workqueue_*` metrics.
    pub fn work_queues(&self) -> &workqueue::WorkQueueMetrics {
        &self.work_queues
    }

    /// Forgets a plugin's series (when it is unloaded).
    pub fn remove(&self, name: &str) {
        self.work_queues.remove(name);
        let label = PluginLabel { plugin: name.to_owned() };
        for family in [&self.calls, &self.restarts, &self.recycled, &self.dropped, &self.skipped, &self.coalesced] {
            family.remove(&label);
        }
        self.quarantined.remove(&label);
        self.queue_depth.remove(&label);
        self.call_duration.remove(&label);
        self.delivery_lag.remove(&label);
        for verb in REQUEST_VERBS {
            for outcome in REQUEST_OUTCOMES {
                self.requests.remove(&RequestLabel { plugin: name.to_owned(), verb, outcome });
            }
        }
        self.request_durations.remove(name);
        self.timed.lock().remove(name);
        for kind in ["retry", "fatal"] {
            self.handler_errors.remove(&PluginKindLabel { plugin: name.to_owned(), kind });
        }
        for kind in TRAP_KINDS {
            self.traps.remove(&PluginKindLabel { plugin: name.to_owned(), kind });
        }
    }
}

/// One plugin's metrics. Cloning shares the same series.
#[derive(Clone, Debug)]
pub struct PluginMetrics {
    name: Arc<str>,
    calls: Counter,
    retry_errors: Counter,
    fatal_errors: Counter,
    traps: [Counter; 6],
    restarts: Counter,
    recycled: Counter,
    quarantined: Gauge,
    queue_depth: Gauge,
    dropped: Counter,
    skipped: Counter,
    call_duration: LatencyHistogram,
    delivery_lag: LatencyHistogram,
    coalesced: Counter,
    requests: Family<RequestLabel, Counter>,
    request_durations: RequestDurations,
    timed: Arc<Timed>,
}

/// The verbs of plugins' requests, as RBAC names them.
const REQUEST_VERBS: [&str; 6] = ["get", "create", "update", "patch", "delete", "record_event"];

/// The outcomes of plugins' requests: `ok`, or a [`RequestError`](crate::cluster::RequestError)'s label.
const REQUEST_OUTCOMES: [&str; 11] = [
    "ok",
    "not_permitted",
    "forbidden",
    "not_found",
    "already_exists",
    "conflict",
    "invalid",
    "bad_request",
    "rate_limited",
    "timed_out",
    "unavailable",
];

impl PluginMetrics {
    /// Metrics not registered anywhere (tests, `wink check`).
    pub fn detached(name: &str) -> Self {
        MetricsRegistry::new().plugin(name)
    }

    /// Records a call and its duration.
    pub fn call(&self, duration: Duration) {
        self.calls.inc();
        self.call_duration.observe(duration);
        self.timed.fetch_add(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Records a handler error; `retry` tells the kind.
    pub fn handler_error(&self, retry: bool) {
        if retry {
            self.retry_errors.inc()
        } else {
            self.fatal_errors.inc()
        };
    }

    /// Records a trap (or an `init` refusal, label `init_rejected`).
    pub fn trap(&self, label: &str) {
        if let Some(i) = TRAP_KINDS.iter().position(|k| *k == label) {
            self.traps[i].inc();
        }
    }

    /// Records a trap of this kind.
    pub fn trap_kind(&self, kind: &TrapKind) {
        self.trap(kind.label());
    }

    /// Records an instance re-created after a failure.
    pub fn restart(&self) {
        self.restarts.inc();
    }

    /// Records an idle instance dropped (see `delivery::runner::recycle`).
    pub fn recycle(&self) {
        self.recycled.inc();
    }

    /// Sets the quarantined flag.
    pub fn set_quarantined(&self, quarantined: bool) {
        self.quarantined.set(i64::from(quarantined));
    }

    /// Sets the number of notifications waiting for the plugin.
    pub fn set_queue_depth(&self, depth: usize) {
        self.queue_depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Notifications waiting for the plugin, as last set.
    pub fn queue_depth(&self) -> u64 {
        u64::try_from(self.queue_depth.get()).unwrap_or(0)
    }

    /// Records a delivery: `lag` from the event's arrival in the queue to the call's return.
    pub fn delivered(&self, lag: Duration) {
        self.delivery_lag.observe(lag);
    }

    /// Records an event folded into one already queued for its object.
    pub fn coalesced_event(&self) {
        self.coalesced.inc();
    }

    /// Events folded into queued ones so far.
    pub fn coalesced_events(&self) -> u64 {
        self.coalesced.get()
    }

    /// Records a request to the cluster: its RBAC verb (`record_event` for Events) and
    /// outcome (`ok`, or the error's label).
    pub fn request(&self, verb: &str, outcome: &str) {
        let verb = REQUEST_VERBS.iter().find(|v| **v == verb).copied().unwrap_or("other");
        let outcome = REQUEST_OUTCOMES.iter().find(|o| **o == outcome).copied().unwrap_or("unavailable");
        self.requests.get_or_create(&RequestLabel { plugin: self.name.to_string(), verb, outcome }).inc();
    }

    /// Records how long a request of `verb` to `resource` took, and its outcome.
    pub fn request_duration(&self, verb: &str, resource: &str, outcome: &str, duration: Duration) {
        let verb = REQUEST_VERBS.iter().find(|v| **v == verb).copied().unwrap_or("other");
        let outcome = REQUEST_OUTCOMES.iter().find(|o| **o == outcome).copied().unwrap_or("unavailable");
        let label =
            RequestDurationLabel { plugin: self.name.to_string(), verb, resource: resource.to_owned(), outcome };
        self.request_durations.observe(label, duration);
    }

    /// Requests of this verb and outcome so far.
    pub fn requests(&self, verb: &str, outcome: &str) -> u64 {
        let verb = REQUEST_VERBS.iter().find(|v| **v == verb).copied().unwrap_or("other");
        let outcome = REQUEST_OUTCOMES.iter().find(|o| **o == outcome).copied().unwrap_or("unavailable");
        self.requests.get_or_create(&RequestLabel { plugin: self.name.to_string(), verb, outcome }).get()
    }

    /// Records an event dropped because the plugin is quarantined.
    pub fn dropped_event(&self) {
        self.dropped.inc();
    }

    /// Records an event skipped after a trap.
    pub fn skipped_event(&self) {
        self.skipped.inc();
    }

    /// Calls so far.
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    /// Handler errors so far (retry, fatal).
    pub fn handler_errors(&self) -> (u64, u64) {
        (self.retry_errors.get(), self.fatal_errors.get())
    }

    /// Traps of one kind (a `TRAP_KINDS` label) so far.
    pub fn traps_of(&self, label: &str) -> u64 {
        TRAP_KINDS.iter().position(|k| *k == label).map_or(0, |i| self.traps[i].get())
    }

    /// Traps of every kind so far.
    pub fn traps(&self) -> u64 {
        self.traps.iter().map(Counter::get).sum()
    }

    /// Restarts so far.
    pub fn restarts(&self) -> u64 {
        self.restarts.get()
    }

    /// Idle instances dropped so far.
    pub fn recycled(&self) -> u64 {
        self.recycled.get()
    }

    /// Whether the plugin is flagged as quarantined.
    pub fn is_quarantined(&self) -> bool {
        self.quarantined.get() != 0
    }

    /// Events dropped while quarantined.
    pub fn dropped_events(&self) -> u64 {
        self.dropped.get()
    }

    /// Events skipped after traps.
    pub fn skipped_events(&self) -> u64 {
        self.skipped.get()
    }

    /// One line for the log, e.g.
    /// `plugin=auditor calls=12 mean=41µs errors=retry:1,fatal:0 traps=1 (interrupt:1) restarts=1 recycled=0 queued=0 skipped=0 dropped=0 quarantined=no`.
    pub fn summary(&self) -> String {
        let mean = Duration::from_nanos(self.timed.load(Ordering::Relaxed).checked_div(self.calls.get()).unwrap_or(0));
        let by_kind: Vec<String> = TRAP_KINDS
            .iter()
            .zip(&self.traps)
            .filter(|(_, c)| c.get() > 0)
            .map(|(k, c)| format!("{k}:{}", c.get()))
            .collect();
        let (retry, fatal) = self.handler_errors();
        format!(
            "plugin={} calls={} mean={:?} errors=retry:{retry},fatal:{fatal} traps={}{} restarts={} recycled={} queued={} skipped={} dropped={} quarantined={}",
            self.name,
            self.calls(),
            mean,
            self.traps(),
            if by_kind.is_empty() { String::new() } else { format!(" ({})", by_kind.join(",")) },
            self.restarts(),
            self.recycled(),
            self.queue_depth(),
            self.skipped_events(),
            self.dropped_events(),
            if self.is_quarantined() { "yes" } else { "no" },
        )
    }
}

impl crate::informer::DeliveryObserver for PluginMetrics {
    fn delivered(&self, lag: Duration) {
        PluginMetrics::delivered(self, lag);
    }

    fn coalesced(&self) {
        self.coalesced_event();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_summarizes() {
        let metrics = PluginMetrics::detached("auditor");
        metrics.call(Duration::from_micros(30));
        metrics.call(Duration::from_micros(50));
        metrics.handler_error(true);
        metrics.trap_kind(&TrapKind::Interrupt);
        metrics.trap("init_rejected");
        metrics.restart();
        metrics.set_quarantined(true);
        metrics.dropped_event();
        assert_eq!(metrics.traps(), 2);
        assert_eq!(metrics.traps_of("interrupt"), 1);
        let line = metrics.summary();
        assert!(line.starts_with("plugin=auditor calls=2 mean=40"), "{line}");
        assert!(line.contains("errors=retry:1,fatal:0 traps=2 (interrupt:1,init_rejected:1) restarts=1"), "{line}");
        assert!(line.ends_with("dropped=1 quarantined=yes"), "{line}");
    }

    #[test]
    fn one_family_per_metric_in_the_text_output() {
        let metrics = MetricsRegistry::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        metrics.plugin("a").trap_kind(&TrapKind::OutOfMemory);
        metrics.plugin("b").call(Duration::from_millis(1));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert_eq!(text.matches("# TYPE wink_plugin_traps counter").count(), 1, "{text}");
        assert!(text.contains(r#"wink_plugin_traps_total{plugin="a",kind="out_of_memory"} 1"#), "{text}");
        assert!(text.contains(r#"wink_plugin_calls_total{plugin="b"} 1"#), "{text}");
        metrics.remove("a");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(!text.contains(r#"plugin="a""#), "{text}");
    }

    /// Requests are timed by verb, resource and outcome, and an unloaded plugin's series go
    /// with it, whatever resources it asked for.
    #[test]
    fn request_durations_by_resource_and_outcome() {
        let metrics = MetricsRegistry::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let a = metrics.plugin("a");
        a.request_duration("patch", "deployments.apps", "ok", Duration::from_millis(2));
        a.request_duration("get", "configmaps", "not_found", Duration::from_millis(1));
        metrics.plugin("b").request_duration("create", "configmaps", "ok", Duration::from_millis(1));
        let encode = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text
        };
        let text = encode();
        let series = r#"wink_plugin_request_duration_seconds_count{plugin="a",verb="patch",resource="deployments.apps",outcome="ok"} 1"#;
        assert!(text.contains(series), "{text}");
        assert!(text.contains(r#"resource="configmaps",outcome="not_found"} 1"#), "{text}");
        metrics.remove("a");
        let text = encode();
        assert!(!text.contains(r#"plugin="a""#), "{text}");
        assert!(text.contains(r#"wink_plugin_request_duration_seconds_count{plugin="b""#), "{text}");
    }
}

//! `wink run --listen ADDR`: what operators scrape and probe.
//!
//! - `/metrics`: every metric in the Prometheus/OpenMetrics text format, from one
//!   `prometheus-client` registry: the plugins' (`wink_plugin_*`), the informers'
//!   (`wink_informer_*`, read at scrape time) and the process's (`process_*`).
//! - `/healthz`: 200 while the async runtime answers (a task spawned and joined within a
//!   second), 503 otherwise: a liveness probe.
//! - `/readyz`: 200 once the plugins found at start were deployed or definitively refused and
//!   every running informer has synced; 503 with the reason before: a readiness probe.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::informer::InformerFactory;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

/// What the endpoints read.
pub struct Endpoints {
    registry: parking_lot::Mutex<Registry>,
    factory: Arc<InformerFactory>,
    plugins_loaded: AtomicBool,
    objects: Family<ResourceLabel, Gauge>,
    synced: Family<ResourceLabel, Gauge>,
    panics: Family<ResourceLabel, Gauge>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints").field("plugins_loaded", &self.plugins_loaded).finish()
    }
}

impl Endpoints {
    /// Endpoints serving `registry` (plugin metrics registered by the caller) and the
    /// informers of `factory`.
    pub fn new(mut registry: Registry, factory: Arc<InformerFactory>) -> Self {
        let (objects, synced, panics) = (Family::default(), Family::default(), Family::default());
        let informers = registry.sub_registry_with_prefix("wink_informer");
        informers.register("objects", "Objects in the informer's cache", Family::clone(&objects));
        informers.register("synced", "1 once the informer's cache has synced", Family::clone(&synced));
        informers.register("panics", "Panics the informer survived (source, transform, index)", Family::clone(&panics));
        registry.register_collector(Box::new(InformerCollector(factory.clone())));
        #[cfg(target_os = "linux")]
        registry.register_collector(Box::new(process::ProcessCollector));
        Self {
            registry: parking_lot::Mutex::new(registry),
            factory,
            plugins_loaded: AtomicBool::new(false),
            objects,
            synced,
            panics,
        }
    }

    /// Adds more metrics to the registry served (e.g. a shard group's).
    pub fn register(&self, add: impl FnOnce(&mut Registry)) {
        add(&mut self.registry.lock());
    }

    /// Marks the plugins found at start as deployed or definitively refused.
    pub fn plugins_loaded(&self) {
        self.plugins_loaded.store(true, Ordering::SeqCst);
    }

    /// Ready, or why not.
    pub fn readiness(&self) -> Result<(), String> {
        if !self.plugins_loaded.load(Ordering::SeqCst) {
            return Err("plugins are still being loaded".into());
        }
        let waiting: Vec<String> =
            self.factory.informers().into_iter().filter(|(_, i)| !i.has_synced()).map(|(k, _)| k.to_string()).collect();
        if waiting.is_empty() { Ok(()) } else { Err(format!("informers not synced: {}", waiting.join(", "))) }
    }

    /// The text exposition of every metric.
    pub fn metrics_text(&self) -> String {
        for (key, informer) in self.factory.informers() {
            let label = ResourceLabel { resource: key.to_string() };
            self.objects.get_or_create(&label).set(informer.store().len() as i64);
            self.synced.get_or_create(&label).set(i64::from(informer.has_synced()));
            self.panics.get_or_create(&label).set(informer.panics() as i64);
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry.lock());
        text
    }
}

async fn metrics(State(endpoints): State<Arc<Endpoints>>) -> impl IntoResponse {
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, content_type)], endpoints.metrics_text())
}

async fn healthz() -> impl IntoResponse {
    match tokio::time::timeout(Duration::from_secs(1), tokio::spawn(async {})).await {
        Ok(Ok(())) => (StatusCode::OK, "ok\n".to_owned()),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "the async runtime does not answer\n".to_owned()),
    }
}

async fn readyz(State(endpoints): State<Arc<Endpoints>>) -> impl IntoResponse {
    match endpoints.readiness() {
        Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
    }
}

/// Serves the endpoints on `addr` until `cancel` fires; returns the bound address (useful
/// with port 0).
pub async fn serve(
    addr: SocketAddr,
    endpoints: Arc<Endpoints>,
    cancel: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(endpoints);
    let task = tokio::spawn(async move {
        let shutdown = async move { cancel.cancelled().await };
        if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
            tracing::error!(error = %err, "the metrics and health endpoint stopped");
        }
    });
    Ok((bound, task))
}

/// Reads one counter of a reflector's counts.
type ReadCount = fn(&crate::informer::ReflectorCounts) -> u64;

/// The informers' reflector counters, read at scrape time: `wink_informer_lists_total`,
/// `_watches_total`, `_errors_total`, `_events_total` and
/// `wink_informer_last_event_age_seconds`, each by `resource`.
#[derive(Debug)]
struct InformerCollector(Arc<InformerFactory>);

impl prometheus_client::collector::Collector for InformerCollector {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;
        let informers: Vec<_> = self
            .0
            .informers()
            .into_iter()
            .map(|(key, informer)| (ResourceLabel { resource: key.to_string() }, informer.reflector_counts()))
            .collect();
        let counters: [(&str, &str, ReadCount); 4] = [
            ("wink_informer_lists", "Lists completed (the first and every relist)", |c| c.lists),
            ("wink_informer_watches", "Watches opened", |c| c.watches),
            ("wink_informer_errors", "List and watch failures", |c| c.errors),
            ("wink_informer_events", "Watch events received", |c| c.events),
        ];
        for (name, help, read) in counters {
            let mut family =
                encoder.encode_descriptor(name, help, None, prometheus_client::metrics::MetricType::Counter)?;
            for (label, counts) in &informers {
                let counter = ConstCounter::new(read(counts));
                counter.encode(family.encode_family(label)?)?;
            }
        }
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut family = encoder.encode_descriptor(
            "wink_informer_last_event_age",
            "Time since the informer's last watch event (absent before the first)",
            Some(&prometheus_client::registry::Unit::Seconds),
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (label, counts) in informers.iter().filter(|(_, c)| c.last_event_ms > 0) {
            let age = ConstGauge::new(now_ms.saturating_sub(counts.last_event_ms) as f64 / 1000.0);
            age.encode(family.encode_family(label)?)?;
        }
        Ok(())
    }
}

/// The usual `process_*` metrics, read from `/proc/self` at scrape time.
#[cfg(target_os = "linux")]
mod process {
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
    use prometheus_client::metrics::counter::ConstCounter;
    use prometheus_client::metrics::gauge::ConstGauge;

    #[derive(Debug)]
    pub(super) struct ProcessCollector;

    /// Clock ticks per second of `/proc/self/stat`'s CPU times (Linux's USER_HZ).
    const TICKS: f64 = 100.0;
    const PAGE: i64 = 4096;

    impl Collector for ProcessCollector {
        fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
            let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Ok(()) };
            // Fields after the command name, which is in parentheses and may hold spaces.
            let Some(rest) = stat.rsplit_once(") ").map(|(_, rest)| rest) else { return Ok(()) };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
            let cpu = (field(14) + field(15)) / TICKS;
            let counter = ConstCounter::new(cpu);
            counter.encode(encoder.encode_descriptor(
                "process_cpu",
                "Total user and system CPU time spent in seconds",
                Some(&prometheus_client::registry::Unit::Seconds),
                counter.metric_type(),
            )?)?;
            let rss = ConstGauge::new(field(24) as i64 * PAGE);
            rss.encode(encoder.encode_descriptor(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                None,
                rss.metric_type(),
            )?)?;
            let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as i64);
            let open = ConstGauge::new(fds);
            open.encode(encoder.encode_descriptor(
                "process_open_fds",
                "Number of open file descriptors",
                None,
                open.metric_type(),
            )?)?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::MemorySource;
    use crate::informer::{ListerWatcher, ResourceKey, SourceError, SourceProvider};

    /// `/readyz` turns ready only once the plugins are loaded and every running informer has
    /// synced, and says what it waits for.
    #[tokio::test(start_paused = true)]
    async fn readiness_waits_for_plugins_and_informer_sync() {
        let pods = MemorySource::default();
        pods.fail_next_list(SourceError::Transport("not yet".into()));
        let source = pods.clone();
        let provider: Arc<dyn SourceProvider> =
            Arc::new(move |_: &ResourceKey| Ok::<_, SourceError>(Arc::new(source.clone()) as Arc<dyn ListerWatcher>));
        let factory = Arc::new(InformerFactory::new(provider));
        let endpoints = Endpoints::new(Registry::default(), factory.clone());
        assert_eq!(endpoints.readiness(), Err("plugins are still being loaded".into()));
        let _lease = factory.acquire(&ResourceKey::new("v1", "Pod")).unwrap();
        endpoints.plugins_loaded();
        factory.start();
        tokio::task::yield_now().await;
        let waiting = endpoints.readiness().unwrap_err();
        assert!(waiting.contains("v1/Pod"), "{waiting}");
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(endpoints.readiness(), Ok(()), "synced after the list is retried");
        let text = endpoints.metrics_text();
        assert!(text.contains("wink_informer_synced{resource=\"v1/Pod\"} 1"), "{text}");
        assert!(text.contains("wink_informer_errors_total{resource=\"v1/Pod\"} 1"), "the failed list: {text}");
        assert!(text.contains("wink_informer_lists_total{resource=\"v1/Pod\"} 1"), "{text}");
        factory.shutdown().await;
    }
}

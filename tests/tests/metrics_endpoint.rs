//! `wink run --listen`: `/readyz` turns ready once the caches synced, `/healthz` answers, and
//! `/metrics` parses as Prometheus text (with a Prometheus parser, not string matching) and
//! counts the plugins' calls, their delivery lag, their requests to the cluster by verb and
//! outcome (and their durations by verb, resource and outcome), and the informer's objects.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use wink_tests::binary::wink_binary;
use wink_tests::process::{Running, field};
use wink_tests::{install_plugin, write_atomic};

/// `GET path` over HTTP/1.0: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connecting to wink");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn sample(scrape: &prometheus_parse::Scrape, name: &str, label: (&str, &str)) -> Option<f64> {
    scrape.samples.iter().find(|s| s.metric == name && s.labels.get(label.0) == Some(label.1)).map(|s| match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => f64::NAN,
    })
}

/// `/metrics`, parsed.
fn scrape(addr: &str) -> prometheus_parse::Scrape {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200);
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text")
}

/// The address of `child`'s endpoint, once `/readyz` answers 200.
async fn ready_endpoint(child: &Running) -> String {
    let addr = child
        .stderr
        .wait_for("the endpoint's address", |l| {
            l.contains("serving /metrics").then(|| field(l, "addr").unwrap().to_owned())
        })
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(&addr, "/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "never ready: {:?}", get(&addr, "/readyz"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}

/// A log line of `plugin`'s `event` (add, update, delete).
fn event_of<'a>(plugin: &'a str, event: &'a str) -> impl Fn(&str) -> Option<()> + 'a {
    move |l: &str| (l.contains(plugin) && field(l, "event") == Some(event)).then_some(())
}

/// `wink run --recycle-idle-after`: an instance idle for the period is dropped (counted in
/// `wink_plugin_recycled_total`), and the plugin's next event starts a new one, whose `init`
/// runs again — not a restart.
#[tokio::test]
async fn an_idle_plugin_is_recycled_and_its_next_event_starts_a_new_instance() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    let pod = |labels: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  labels: {{{labels}}}\n")
    };
    write_atomic(&cluster.join("pod.yaml"), &pod(""));
    let plugins = work.path().join("plugins");
    install_plugin("event-recorder", &plugins, "sleeper", None);
    let child = Running::spawn(
        Command::new(wink_binary())
            .args(["run", "--no-cache", "--listen", "127.0.0.1:0", "--recycle-idle-after", "1s", "--plugins"])
            .arg(&plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .env("RUST_LOG", "info"),
    );
    let addr = ready_endpoint(&child).await;
    child.stderr.wait_for("the initial add", event_of("sleeper", "add")).await;
    let counter = |name: &str| sample(&scrape(&addr), name, ("plugin", "sleeper"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while counter("wink_plugin_recycled_total") != Some(1.0) {
        assert!(Instant::now() < deadline, "never recycled: {:?}", counter("wink_plugin_recycled_total"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counter("wink_plugin_calls_total"), Some(2.0), "init and the initial add");

    write_atomic(&cluster.join("pod.yaml"), &pod("tier: front"));
    child.stderr.wait_for("the update, to a new instance", event_of("sleeper", "update")).await;
    assert_eq!(counter("wink_plugin_calls_total"), Some(4.0), "init again, then the update");
    assert_eq!(counter("wink_plugin_restarts_total"), Some(0.0), "recycling is not a restart");
}

#[tokio::test]
async fn metrics_and_health_are_served_and_parse_as_prometheus_text() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(
        &cluster.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers: []\n",
    );
    let plugins = work.path().join("plugins");
    install_plugin("event-recorder", &plugins, "scraped", None);
    // The reloader patches a Deployment and records an Event: requests, counted.
    write_atomic(
        &cluster.join("web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {reloader.wink.dev/configmaps: settings}\nspec:\n  replicas: 1\n  template: {metadata: {labels: {app: web}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {currency: EUR}\n",
    );
    install_plugin("reloader", &plugins, "reloader", None);
    let child = Running::spawn(
        Command::new(wink_binary())
            .args(["run", "--no-cache", "--listen", "127.0.0.1:0", "--plugins"])
            .arg(&plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    );
    let stderr = child.stderr.clone();
    let addr = ready_endpoint(&child).await;
    assert_eq!(get(&addr, "/healthz").0, 200);
    stderr.wait_for("the plugin's initial add", event_of("scraped", "add")).await;

    let scrape = || scrape(&addr);
    let patched = |scrape: &prometheus_parse::Scrape| {
        scrape.samples.iter().any(|s| {
            s.metric == "wink_plugin_requests_total"
                && s.labels.get("plugin") == Some("reloader")
                && s.labels.get("verb") == Some("patch")
                && s.labels.get("outcome") == Some("ok")
                && matches!(s.value, prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) if v >= 1.0)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !patched(&scrape()) {
        assert!(Instant::now() < deadline, "the reloader's patch is never counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let scrape = scrape();
    let calls = sample(&scrape, "wink_plugin_calls_total", ("plugin", "scraped")).expect("the plugin's calls");
    assert!(calls >= 2.0, "init and the initial add: {calls}");
    assert_eq!(sample(&scrape, "wink_informer_objects", ("resource", "v1/Pod")), Some(1.0));
    assert_eq!(sample(&scrape, "wink_informer_synced", ("resource", "v1/Pod")), Some(1.0));
    assert_eq!(sample(&scrape, "wink_informer_lists_total", ("resource", "v1/Pod")), Some(1.0), "one list");
    assert_eq!(sample(&scrape, "wink_informer_errors_total", ("resource", "v1/Pod")), Some(0.0));
    let rss = scrape.samples.iter().find(|s| s.metric == "process_resident_memory_bytes").expect("process metrics");
    assert!(matches!(rss.value, prometheus_parse::Value::Gauge(v) if v > 0.0), "{rss:?}");
    assert!(scrape.samples.iter().any(|s| s.metric.starts_with("wink_plugin_call_duration_seconds")));
    let lag = scrape
        .samples
        .iter()
        .find(|s| s.metric == "wink_plugin_delivery_lag_seconds" && s.labels.get("plugin") == Some("scraped"))
        .expect("the plugin's delivery lag");
    match &lag.value {
        prometheus_parse::Value::Histogram(buckets) => {
            let delivered = buckets.iter().map(|b| b.count).fold(0.0, f64::max);
            assert!(delivered >= 1.0, "the initial add's delivery was timed: {buckets:?}");
        }
        other => panic!("a histogram: {other:?}"),
    }
    assert!(sample(&scrape, "wink_plugin_coalesced_events_total", ("plugin", "scraped")).is_some());
    let events = scrape.samples.iter().find(|s| {
        s.metric == "wink_plugin_requests_total"
            && s.labels.get("plugin") == Some("reloader")
            && s.labels.get("verb") == Some("record_event")
    });
    assert!(events.is_some(), "the reloader's Event is counted");
    // Each request is timed, by verb, resource and outcome.
    let timed = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "wink_plugin_request_duration_seconds"
                && s.labels.get("plugin") == Some("reloader")
                && s.labels.get("verb") == Some("patch")
                && s.labels.get("resource") == Some("deployments.apps")
                && s.labels.get("outcome") == Some("ok")
        })
        .expect("the reloader's patch is timed");
    match &timed.value {
        prometheus_parse::Value::Histogram(buckets) => {
            let timed = buckets.iter().map(|b| b.count).fold(0.0, f64::max);
            assert!(timed >= 1.0, "{buckets:?}");
        }
        other => panic!("a histogram: {other:?}"),
    }
}

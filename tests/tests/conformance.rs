//! The conformance suite: the scenario of `tests/conformance/SPEC.md`, driven through the host
//! (in-memory sources and cluster given to a `Host` built as `wink run` builds it)
//! against the guest of every language, with the same assertions for each.
//!
//! One `#[test]` per language comes from `wink_tests::foreach_language!`; a language whose
//! guest was not built fails (it is never skipped), and a guest folder without a test fails
//! `every_guest_has_a_test`. Compiled components are shared through the tests' on-disk
//! compile cache, so the Python and JavaScript runtimes are compiled once per machine.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test conformance` (which
//! builds the plugins first when `WINK_PLUGINS_DIR` is unset); one language with
//! `cargo test -p wink-tests --test conformance -- python`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::Level;
use wink::app::{CustomSource, Host, RunOptions};
use wink::cluster::ClusterClient;
use wink::embedded::EmbeddedClient;
use wink::embedded::MemorySource;
use wink::informer::{InformerFactory, ListerWatcher, Object, ResourceKey, SourceError};
use wink::plugin::{CallOutcome, PluginEngine, PluginRegistry, PluginStart, RegistryError};
use wink_tests::compile_cache::cached_engine;
use wink_tests::conformance::{ScenarioCluster, built_guest, guest_name, guest_sources, manifest_tail};
use wink_tests::install_plugin;
use wink_tests::logs::logs;

macro_rules! conformance_tests {
    ($($language:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $language() {
                run(stringify!($language)).await;
            }
        )*

        /// The languages that have a test.
        const LANGUAGES: &[&str] = &[$(stringify!($language)),*];
    };
}

wink_tests::foreach_language!(conformance_tests);

#[test]
fn every_guest_has_a_test() {
    let mut tested: Vec<String> = LANGUAGES.iter().map(|l| (*l).to_owned()).collect();
    tested.sort();
    assert_eq!(
        guest_sources(),
        tested,
        "plugins/conformance/ must hold one guest, conformance-<language>, per language of \
         wink_tests::foreach_language!"
    );
}

/// How long one step may take to show its lines: generous, for a loaded CI machine.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// A line the guest must log: the object key (or `init`) whose per-key order it is part of,
/// its level, and its text.
struct Expected {
    group: String,
    level: Level,
    line: String,
}

/// One language's run of the scenario.
struct Scenario {
    language: &'static str,
    name: String,
    pods: MemorySource,
    namespaces: MemorySource,
    config_maps: MemorySource,
    events: MemorySource,
    engine: PluginEngine,
    factory: Arc<InformerFactory>,
    registry: Arc<PluginRegistry>,
    expected: Vec<Expected>,
}

fn pod(name: &str, labels: Value) -> Value {
    pod_in("conf", name, labels)
}

fn pod_in(namespace: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}"), "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1.0"}]},
    })
}

fn rv(obj: &Object) -> String {
    obj.resource_version().to_owned()
}

impl Scenario {
    async fn new(language: &'static str) -> Self {
        let (pods, namespaces, config_maps) =
            (MemorySource::default(), MemorySource::default(), MemorySource::default());
        let sources = [("Pod", pods.clone()), ("Namespace", namespaces.clone()), ("ConfigMap", config_maps.clone())];
        let provider = move |key: &ResourceKey| -> Result<Arc<dyn ListerWatcher>, SourceError> {
            sources
                .iter()
                .find(|(kind, _)| key.api_version == "v1" && key.kind == *kind)
                .map(|(_, source)| Arc::new(source.clone()) as Arc<dyn ListerWatcher>)
                .ok_or_else(|| SourceError::Unsupported(format!("no source for {key}")))
        };
        let engine = cached_engine();
        // The guest's requests go to the same stores, with the API server's rules.
        let events = MemorySource::default();
        let mut cluster = ScenarioCluster::default();
        cluster.serve("v1", "Pod", "pods", true, pods.clone());
        cluster.serve("v1", "Namespace", "namespaces", false, namespaces.clone());
        cluster.serve("v1", "ConfigMap", "configmaps", true, config_maps.clone());
        cluster.serve("v1", "Secret", "secrets", true, MemorySource::default());
        cluster.serve("events.k8s.io/v1", "Event", "events", true, events.clone());
        let client: Arc<dyn ClusterClient> = Arc::new(EmbeddedClient::new(Arc::new(cluster)));
        let source = CustomSource { provider: Arc::new(provider), client: Some(client), impersonate: false };
        // Started as they deploy: the suite checks that a refused `init` refuses the deploy.
        let options = RunOptions { start_plugins: PluginStart::OnDeploy, ..RunOptions::default() };
        let host = Host::builder(options)
            .source(source)
            .engine(engine.clone())
            .guest_threads(2)
            .build(CancellationToken::new())
            .await
            .expect("building the host");
        let (factory, registry) = (host.factory().clone(), host.registry().clone());
        Self {
            language,
            name: guest_name(language),
            pods,
            namespaces,
            config_maps,
            events,
            engine,
            factory,
            registry,
            expected: Vec::new(),
        }
    }

    /// Expects `line` at info level, in the per-key order of `group`.
    fn expect(&mut self, group: &str, line: impl Into<String>) {
        self.expect_at(group, Level::INFO, line);
    }

    fn expect_at(&mut self, group: &str, level: Level, line: impl Into<String>) {
        self.expected.push(Expected { group: group.to_owned(), level, line: line.into() });
    }

    /// Waits until the guest has logged every expected line (as often as expected).
    async fn settle(&self, step: &str) {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let logged = count(logs().guest_lines(&self.name));
            let wanted = count(self.expected.iter().map(|e| e.line.clone()).collect());
            let missing: Vec<&String> =
                wanted.iter().filter(|(line, n)| logged.get(*line).unwrap_or(&0) < n).map(|(line, _)| line).collect();
            if missing.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "[{}] step `{step}`: after {STEP_TIMEOUT:?} the guest has not logged {missing:#?}\n{}",
                    self.language,
                    logs().dump(&self.name)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Deploys the guest as `name` with `config` (YAML, or none); returns the result and how
    /// long loading took, and whether the component came from the compile cache.
    async fn deploy(
        &self,
        dir: &Path,
        name: &str,
        config: Option<&str>,
    ) -> (Result<String, RegistryError>, Duration, bool) {
        let plugin = install_plugin(&built_guest(self.language), dir, name, Some(&manifest_tail(config)));
        let compiled_before = self.engine.compilations();
        let started = Instant::now();
        let result = self.registry.deploy(&plugin).await;
        (result, started.elapsed(), self.engine.compilations() == compiled_before)
    }
}

fn count(lines: Vec<String>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in lines {
        *counts.entry(line).or_default() += 1;
    }
    counts
}

async fn run(language: &'static str) {
    let log = logs();
    let plugins = tempfile::tempdir().expect("a temporary plugins folder");
    let mut s = Scenario::new(language).await;
    let name = s.name.clone();

    // 1. Start: what the source holds before the plugin is deployed.
    let ns = s
        .namespaces
        .apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "conf", "uid": "uid-ns-conf"}}))
        .unwrap();
    let settings = s
        .config_maps
        .apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "conf", "uid": "uid-cm"}, "data": {"greeting": "grüße"}}))
        .unwrap();
    let a = s.pods.apply(pod("a", json!({"app": "a"}))).unwrap();
    let b = s.pods.apply(pod("b", json!({"app": "b"}))).unwrap();
    s.pods.apply(pod_in("other", "x", json!({}))).unwrap();

    // 2. Bad configs are refused by init, with a message naming the field. The first load
    // compiles the component (or finds it in the compile cache); the next ones must not.
    let mut loads = Vec::new();
    for (i, config) in [Some("{lookupKey: 7}"), None].into_iter().enumerate() {
        let (result, took, cached) = s.deploy(plugins.path(), &format!("{name}-bad{i}"), config).await;
        match result {
            Err(RegistryError::Start { outcome: outcome @ CallOutcome::InitRejected(_), .. }) => assert!(
                outcome.to_string().contains("lookupKey"),
                "[{language}] config {config:?}: the error must say init rejected it and name lookupKey: {outcome}"
            ),
            other => panic!("[{language}] config {config:?} must be refused by init, got {other:?}"),
        }
        loads.push((took, cached));
    }
    assert!(
        log.guest_records(&format!("{name}-bad0")).is_empty() && log.guest_records(&format!("{name}-bad1")).is_empty(),
        "[{language}] a refused init logs nothing"
    );

    // 3. Deploy: init logs at every level, then the initial list arrives.
    let (result, took, cached) = s.deploy(plugins.path(), &name, Some("{lookupKey: conf/settings}")).await;
    result.unwrap_or_else(|e| panic!("[{language}] deploying the guest: {e}\n{}", log.dump(&name)));
    loads.push((took, cached));
    for level in [Level::TRACE, Level::DEBUG, Level::INFO, Level::WARN, Level::ERROR] {
        s.expect_at("init", level, format!("init level={}", level.as_str().to_lowercase()));
    }
    s.expect("conf", format!("add key=conf rv={} initial=true", rv(&ns)));
    s.expect("conf/a", format!("add key=conf/a rv={} initial=true", rv(&a)));
    s.expect("conf/b", format!("add key=conf/b rv={} initial=true", rv(&b)));
    s.settle("deploy").await;

    // 4. Update.
    let a2 = s.pods.apply(pod("a", json!({"app": "a", "version": "2"}))).unwrap();
    s.expect("conf/a", format!("update key=conf/a old_rv={} new_rv={}", rv(&a), rv(&a2)));
    s.settle("update").await;

    // 5. Live add.
    let c = s.pods.apply(pod("c", json!({}))).unwrap();
    s.expect("conf/c", format!("add key=conf/c rv={} initial=false", rv(&c)));
    s.settle("live add").await;

    // 6. Cache reads by key and by index, and both cache errors.
    let lookup = s.pods.apply(pod("lookup", json!({"conformance/lookup": "true"}))).unwrap();
    let g = "conf/lookup";
    s.expect(g, format!("add key=conf/lookup rv={} initial=false", rv(&lookup)));
    s.expect(g, format!("lookup get key=conf/settings found=true rv={} greeting=grüße", rv(&settings)));
    s.expect(g, "lookup get key=conf/absent found=false");
    s.expect(g, "lookup index=namespace value=conf keys=conf/a,conf/b,conf/c,conf/lookup");
    s.expect(g, "lookup denied resource=v1/Secret error=not-permitted");
    s.expect(g, "lookup denied index=no-such-index error=unknown-index");
    s.settle("cache reads").await;

    // 7. Retry once, then succeed.
    let flaky = s.pods.apply(pod("flaky", json!({"conformance/retry": "once"}))).unwrap();
    let add_flaky = format!("add key=conf/flaky rv={} initial=false", rv(&flaky));
    s.expect("conf/flaky", add_flaky.clone());
    s.expect("conf/flaky", "retry key=conf/flaky");
    s.expect("conf/flaky", add_flaky);
    s.settle("retry").await;

    // 8. Fatal: recorded, not retried.
    let doomed = s.pods.apply(pod("doomed", json!({"conformance/fatal": "true"}))).unwrap();
    s.expect("conf/doomed", format!("add key=conf/doomed rv={} initial=false", rv(&doomed)));
    s.expect("conf/doomed", "fatal key=conf/doomed");
    s.settle("fatal").await;

    // 9. Writes: create, patch, a conflict and its recovery, a refused write, an Event, the
    // clock, and a requeue.
    let writer = s.pods.apply(pod("writer", json!({"conformance/write": "true"}))).unwrap();
    let g = "conf/writer";
    s.expect(g, format!("add key=conf/writer rv={} initial=false", rv(&writer)));
    s.expect(g, "write create key=conf/writer-made step=created");
    s.expect(g, "write patch key=conf/writer-made step=patched");
    s.expect(g, "write conflict key=conf/writer-made");
    s.expect(g, "write update key=conf/writer-made step=updated");
    s.expect(g, "write denied resource=v1/Secret error=not-permitted");
    s.expect(g, "write event reason=Conformance");
    s.expect(g, "write clock ok");
    s.expect(g, format!("update key=conf/writer old_rv={0} new_rv={0}", rv(&writer)));
    s.expect(g, "requeue key=conf/writer");
    s.settle("writes").await;
    let made = s.config_maps.get("conf/writer-made").expect("the guest created conf/writer-made");
    assert_eq!(made.to_value().unwrap()["data"]["step"], "updated", "[{language}] the last write wins");
    let events: Vec<Value> = s.events.objects().iter().map(|e| e.to_value().unwrap()).collect();
    assert_eq!(events.len(), 1, "[{language}] one Event: {events:?}");
    assert_eq!(events[0]["regarding"]["name"], "writer");
    assert_eq!(events[0]["reason"], "Conformance");
    assert_eq!(events[0]["note"], "wrote conf/writer-made");
    assert_eq!(events[0]["reportingController"], name.as_str());

    // 10. Delete.
    let c_gone = s.pods.delete("conf/c").expect("conf/c exists");
    s.expect("conf/c", format!("delete key=conf/c rv={} unknown=false", rv(&c_gone)));
    s.settle("delete").await;

    // 11. A delete missed while the watch was down: inferred on the relist.
    s.pods.fail_next_watch(SourceError::Transport("the connection dropped (injected)".into()));
    s.pods.disconnect_watches();
    s.pods.delete("conf/b").expect("conf/b exists");
    s.pods.compact();
    s.expect("conf/b", format!("delete key=conf/b rv={} unknown=true", rv(&b)));
    s.settle("missed delete").await;

    // 12. Exactly the expected records, in order per key, each at its level.
    let records = log.guest_records(&name);
    let mut logged: Vec<String> = records.iter().map(|r| r.message.clone()).collect();
    let mut wanted: Vec<String> = s.expected.iter().map(|e| e.line.clone()).collect();
    logged.sort();
    wanted.sort();
    assert_eq!(logged, wanted, "[{language}] the guest logged other lines than the spec's\n{}", log.dump(&name));
    let groups: Vec<&str> = s.expected.iter().map(|e| e.group.as_str()).collect();
    for group in groups {
        let in_group = |line: &str| s.expected.iter().any(|e| e.group == group && e.line == line);
        let got: Vec<&str> = records.iter().map(|r| r.message.as_str()).filter(|l| in_group(l)).collect();
        let want: Vec<&str> = s.expected.iter().filter(|e| e.group == group).map(|e| e.line.as_str()).collect();
        assert_eq!(got, want, "[{language}] the lines about {group} came in another order\n{}", log.dump(&name));
    }
    for e in &s.expected {
        let record = records.iter().find(|r| r.message == e.line).expect("checked above");
        assert_eq!(record.level, e.level, "[{language}] `{}` was logged at the wrong level", e.line);
    }
    let metrics = s.registry.metrics().plugin(&name);
    assert_eq!(metrics.handler_errors(), (1, 1), "[{language}] one retry (conf/flaky) and one fatal (conf/doomed)");
    assert_eq!((metrics.traps(), metrics.restarts()), (0, 0), "[{language}] the guest never trapped");
    let status = s.registry.status().await;
    let status = status.iter().find(|p| p.name == name).expect("the guest is deployed");
    assert!(!status.quarantined, "[{language}] the guest is not quarantined");

    // The compile cache: at most the first load compiled; the later ones loaded from disk.
    for (i, (took, cached)) in loads.iter().enumerate() {
        eprintln!(
            "[{language}] load {}: {took:?}, {}",
            i + 1,
            if *cached { "from the compile cache" } else { "compiled" }
        );
    }
    assert!(loads[1..].iter().all(|(_, cached)| *cached), "[{language}] later loads must come from the compile cache");
    assert!(s.engine.compilations() <= 1, "[{language}] the component was compiled more than once");

    s.registry.remove(&name).await;
    s.factory.shutdown().await;
}

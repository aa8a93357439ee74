//! Convergence under faults with wasm plugins: the seeded workload and faults of
//! [`wink_tests::apiserver::workload`] (creates, updates and deletes of ConfigMaps and a custom
//! resource across namespaces, while watches drop, history is compacted, requests fail with
//! 429/500, frames are split or malformed…) against a host assembled as `wink run
//! --kubeconfig` assembles it: a [`KubeSource`](wink::source::KubeSource) on the local API
//! server, one informer factory, and the plugin registry deploying several copies of the
//! `event-recorder` plugin (built from source) from a plugins folder.
//!
//! The copies differ in their manifests and config: one watches everything, one some
//! namespaces, one is slow (`work:` burns a loop per call) in other namespaces, one has a
//! label selector and answers `retry` to the first call for each key labelled
//! `wink.test/retry: once`. Once the workload and faults stop, for every seed:
//! - each informer's cache equals the server's objects (versions and content);
//! - each plugin's view, rebuilt from its log lines (adds and updates set a key's
//!   resourceVersion, deletes remove it, calls it answered with `retry` do not count), equals
//!   the server's objects filtered by that plugin's namespaces and label selector;
//! - the flaky plugin did answer `retry` (the retry path was taken).
//!
//! Informers use short backoffs and pages of 4 (as in kube_convergence.rs); each seed picks
//! paged LIST or streaming lists. Run with
//! `cargo test -p wink-tests --test kube_convergence_wasm -- --nocapture`. Seeds 1..=4 run
//! by default; `WINK_CONVERGENCE_SEEDS=N` runs seeds 1..=N, `WINK_CONVERGENCE_SEED=S` runs
//! seed S only. A failure names its seed. Timing is real, so a seed fixes the workload and
//! the faults, not their interleaving with the host.

use std::path::Path;
use std::time::{Duration, Instant};

use rand::Rng;
use wink::informer::ResourceKey;
use wink_tests::apiserver::ApiServer;
use wink_tests::apiserver::testing::{informer_config, kube_source};
use wink_tests::apiserver::workload::{
    self, KINDS, RETRY_LABEL, Selection, api_version, cache_difference, diff, differing_keys, expected_view,
};
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::recorder::view_of;

const QUIET_DEADLINE: Duration = Duration::from_secs(40);
/// Busy-loop iterations per call of the slow plugin: about 2 ms per call.
const SLOW_WORK: u64 = 2_000_000;

/// One deployed copy of the event-recorder and what it asked for.
struct Recorder {
    name: String,
    selections: Vec<Selection>,
    /// The manifest's `config`, as YAML flow.
    config: String,
}

impl Recorder {
    fn new(seed: u64, role: &str, selections: Vec<Selection>, config: &str) -> Self {
        Self { name: format!("s{seed}-{role}"), selections, config: config.to_owned() }
    }

    fn install(&self, plugins: &Path) {
        let resources: String = self.selections.iter().map(Selection::manifest_entry).collect();
        let tail = format!(
            "resources:\n{resources}limits:\n  memory: 32Mi\n  callTimeout: 10s\nfailurePolicy:\n  onError: retry\nconfig: {}\n",
            self.config
        );
        install_plugin("event-recorder", plugins, &self.name, Some(&tail));
    }

    /// How its view differs from the server, with its lines about a few differing keys.
    fn difference(&self, server: &ApiServer) -> Option<String> {
        let expected = expected_view(server, &self.selections);
        let view = view_of(&self.name);
        if view == expected {
            return None;
        }
        let lines = logs().guest_lines(&self.name);
        let mut out = format!("plugin {}: {}", self.name, diff(&view, &expected));
        for key in differing_keys(&view, &expected).iter().take(3) {
            let about: Vec<&String> =
                lines.iter().filter(|l| l.split_whitespace().any(|w| w == format!("key={key}"))).collect();
            out.push_str(&format!("\n    its lines about {key}: {about:?}"));
        }
        Some(out)
    }
}

/// The plugins of a seed: names unique across seeds (the log capture is per test binary).
fn recorders(seed: u64) -> Vec<Recorder> {
    let (cm, w) = ("ConfigMap", "Widget");
    vec![
        Recorder::new(seed, "all", vec![Selection::all(cm), Selection::all(w)], "{}"),
        Recorder::new(
            seed,
            "some-ns",
            vec![Selection::in_namespaces(cm, &["a"]), Selection::in_namespaces(w, &["a", "b"])],
            "{tag: some}",
        ),
        Recorder::new(
            seed,
            "slow",
            vec![Selection::in_namespaces(cm, &["b", "c"]), Selection::in_namespaces(w, &["c"])],
            &format!("{{work: {SLOW_WORK}}}"),
        ),
        Recorder::new(
            seed,
            "flaky",
            vec![Selection::all(cm).front(), Selection::in_namespaces(w, &["a", "c"]).front()],
            &format!("{{retry_label: {RETRY_LABEL}}}"),
        ),
    ]
}

/// What differs between the host and the server, if anything.
fn differences(server: &ApiServer, host: &TestHost, recorders: &[Recorder]) -> Vec<String> {
    let mut problems = Vec::new();
    for kind in KINDS {
        match host.factory.existing(&ResourceKey::new(api_version(kind), kind)) {
            Some(informer) => problems.extend(cache_difference(server, kind, &informer)),
            None => problems.push(format!("no informer for {kind}")),
        }
    }
    problems.extend(recorders.iter().filter_map(|r| r.difference(server)));
    problems
}

/// Names the seed of a run that panics (e.g. a plugin that fails to deploy).
struct SeedGuard(u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("FAILED seed {}: panicked (rerun with WINK_CONVERGENCE_SEED={})", self.0, self.0);
        }
    }
}

async fn run_seed(seed: u64) -> Result<String, String> {
    let _guard = SeedGuard(seed);
    let started = Instant::now();
    let mut rng = workload::rng(seed);
    // Some objects exist before the host starts.
    let server = workload::start_server(seed, &mut rng).await?;
    let plugins = tempfile::tempdir().map_err(|e| e.to_string())?;
    let recorders = recorders(seed);
    for recorder in &recorders {
        recorder.install(plugins.path());
    }
    let mut config = informer_config("kube", Some(4));
    config.reflector.test_only_min_watch_timeout = Some(Duration::from_secs(2));
    config.reflector.use_watch_list = rng.random_bool(0.5);
    let list = if config.reflector.use_watch_list { "streaming list" } else { "paged list" };
    let host_started = Instant::now();
    let host = TestHost::start_kube(kube_source(&server).await, config, plugins.path()).await;
    let startup = host_started.elapsed();

    let faults = workload::run(&server, &mut rng).await?;

    let workload_time = started.elapsed();
    let outcome = workload::wait_quiet(QUIET_DEADLINE, || differences(&server, &host, &recorders)).await;
    let flaky = &recorders[3].name;
    let retries = host.metrics(flaky).handler_errors().0;
    let plugin_summaries: Vec<String> = recorders.iter().map(|r| host.metrics(&r.name).summary()).collect();
    host.stop().await;
    let summary = format!(
        "{} ({list}, host up in {startup:.1?})\n  {}",
        workload::summary(&server, seed, &faults, workload_time, started),
        plugin_summaries.join("\n  ")
    );
    match outcome {
        Err(problems) => Err(format!("{summary}\n  {problems}")),
        Ok(()) if retries == 0 => {
            Err(format!("{summary}\n  {flaky} never answered retry: the retry path was not taken"))
        }
        Ok(()) => Ok(summary),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_and_wasm_plugins_converge_to_the_server_under_faults() {
    logs();
    workload::run_seeds(run_seed).await;
}

//! Run with cargo bench -p wink-benches --bench reconcile
//!
//! Benchmark 12 — a reconciler end to end. The same controller twice: `pdb-for-deployment`,
//! a wink reconciler (Rust, wasm) that keeps a PodDisruptionBudget for every Deployment with
//! two or more replicas, and the same logic as a kube-rs `Controller` (`owns` the budgets,
//! the same reads and writes: a live GET of the budget, a create when it is missing). One
//! local API server on loopback holds 20 Deployments of three replicas; one controller runs
//! at a time, in interleaved rounds. A sample: an owned budget deleted by a client, until an
//! observer's watch sees a new budget of that name — the delete's round trip, the watch
//! event reaching the controller, the mapping to the owner's key, the work queue, the
//! reconcile (its GET, its create and an Event) and the new object's watch event reaching
//! the observer. The plugin runs with a request budget that does not pace it (kube-rs's client
//! paces nothing), and for a few samples as it ships, paced by client-go's default budget. wink runs as `wink run --kubeconfig` builds it (`Host` over the kube source and
//! client).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource, ResourceExt};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use wink::app::{CustomSource, Host, RunOptions};
use wink::cluster::KubeClient;
use wink::source::{KubeSource, load_config};
use wink_benches::cluster::BenchCluster;
use wink_benches::results::{Goal, Report, Table, human_duration, percentile};
use wink_benches::workload::PodSize;

const DEPLOYMENTS: usize = 20;
const ROUNDS: usize = 3;
/// Samples per controller and round (each Deployment's budget deleted in turn).
const SAMPLES: usize = 40;
/// Unmeasured samples after a controller starts (its watches settle).
const WARM_UP: usize = 3;
const NAMESPACE: &str = "default";

/// Samples of wink with the default request budget (one round): each is paced by it.
const PACED_SAMPLES: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The plugin with a request budget that does not pace it (`requests: {qps: 1000}`).
    Wink,
    /// The plugin as it ships: client-go's default budget, 5 requests/s, a burst of 10.
    WinkPaced,
    KubeRs,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Self::Wink => "wink, `pdb-for-deployment` (wasm reconciler), `requests: {qps: 1000, burst: 1000}`",
            Self::WinkPaced => "wink, the same with the default request budget (5/s, burst 10)",
            Self::KubeRs => "kube-rs `Controller`, the same logic natively",
        }
    }
}

/// What the observer's watch has seen of the budgets: by name, the uid and when it arrived.
#[derive(Default)]
struct Seen {
    budgets: Mutex<HashMap<String, (String, Instant)>>,
    changed: Notify,
}

impl Seen {
    fn note(&self, budget: &PodDisruptionBudget) {
        let arrived = Instant::now();
        let (name, uid) = (budget.name_any(), budget.uid().unwrap_or_default());
        let mut budgets = self.budgets.lock();
        if budgets.get(&name).is_none_or(|(known, _)| *known != uid) {
            budgets.insert(name, (uid, arrived));
            self.changed.notify_waiters();
        }
    }

    fn forget(&self, budget: &PodDisruptionBudget) {
        self.budgets.lock().remove(&budget.name_any());
    }

    /// Waits until `name` has a budget whose uid is not `old`; returns when it arrived.
    async fn next(&self, name: &str, old: Option<&str>) -> Instant {
        loop {
            let changed = self.changed.notified();
            if let Some((uid, at)) = self.budgets.lock().get(name)
                && Some(uid.as_str()) != old
            {
                return *at;
            }
            tokio::time::timeout(Duration::from_secs(30), changed).await.expect("a budget recreated within 30 s");
        }
    }

    fn uid(&self, name: &str) -> Option<String> {
        self.budgets.lock().get(name).map(|(uid, _)| uid.clone())
    }
}

fn deployment(i: usize) -> Deployment {
    let name = format!("web-{i:02}");
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "app:1"}]}},
        },
    }))
    .expect("a Deployment")
}

/// What the kube-rs controller's reconciles share.
struct Context {
    client: Client,
    recorder: Recorder,
}

/// The kube-rs controller: the plugin's logic (a budget of the Deployment's name, controlled
/// by it, `maxUnavailable: 1`, its selector, and an Event saying it was created) for the two
/// or more replicas case it is measured on.
async fn reconcile(deployment: Arc<Deployment>, context: Arc<Context>) -> Result<Action, kube::Error> {
    let namespace = deployment.namespace().unwrap_or_default();
    let budgets = Api::<PodDisruptionBudget>::namespaced(context.client.clone(), &namespace);
    let name = deployment.name_any();
    if budgets.get_opt(&name).await?.is_none() {
        let budget = PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                owner_references: deployment.controller_owner_ref(&()).map(|r| vec![r]),
                ..ObjectMeta::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                max_unavailable: Some(IntOrString::Int(1)),
                selector: deployment.spec.as_ref().map(|s| s.selector.clone()),
                ..PodDisruptionBudgetSpec::default()
            }),
            status: None,
        };
        budgets.create(&PostParams::default(), &budget).await?;
        let event = KubeEvent {
            type_: EventType::Normal,
            reason: "BudgetCreated".into(),
            note: Some(format!("created PodDisruptionBudget {}", deployment.name_any())),
            action: "Reconcile".into(),
            secondary: None,
        };
        context.recorder.publish(&event, &deployment.object_ref(&())).await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Deployment>, _: &kube::Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(50))
}

/// Starts one side's controller; it stops when the token fires (awaited through the handle).
async fn start(side: Side, config: &kube::Config, plugins: &Path) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = match side {
        Side::Wink | Side::WinkPaced => {
            let source = CustomSource {
                provider: Arc::new(KubeSource::from_config(config.clone()).expect("a kube source")),
                client: Some(Arc::new(KubeClient::new(config.clone()).expect("a kube client"))),
                impersonate: false,
            };
            let mut host = Host::builder(RunOptions::default())
                .source(source)
                .build(cancel.clone())
                .await
                .expect("building the host");
            let plugin = plugins.join(if side == Side::Wink { "unpaced" } else { "paced" });
            host.registry().deploy(&plugin).await.expect("deploying pdb-for-deployment");
            host.start().await;
            tokio::spawn(async move {
                host.run().await.expect("the host ran");
            })
        }
        Side::KubeRs => {
            let client = Client::try_from(config.clone()).expect("a kube client");
            let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
            let budgets = Api::<PodDisruptionBudget>::namespaced(client.clone(), NAMESPACE);
            let stop = cancel.clone();
            let reporter = Reporter { controller: "pdb-for-deployment".into(), instance: None };
            let context = Arc::new(Context { recorder: Recorder::new(client.clone(), reporter), client });
            tokio::spawn(async move {
                Controller::new(deployments, watcher::Config::default())
                    .owns(budgets, watcher::Config::default())
                    .graceful_shutdown_on(async move { stop.cancelled().await })
                    .run(reconcile, error_policy, context)
                    .for_each(|_| futures::future::ready(()))
                    .await;
            })
        }
    };
    (cancel, task)
}

/// Deletes `name`'s budget and waits until the observer sees a new one.
async fn sample(budgets: &Api<PodDisruptionBudget>, seen: &Seen, name: &str) -> Duration {
    seen.next(name, None).await;
    let uid = seen.uid(name);
    let started = Instant::now();
    budgets.delete(name, &DeleteParams::default()).await.expect("deleting a budget");
    seen.next(name, uid.as_deref()).await.saturating_duration_since(started)
}

fn main() {
    let plugin = wink_tests::plugins_dir().join("pdb-for-deployment");
    if !plugin.join("plugin.yaml").is_file() {
        eprintln!("reconcile: {} is not built: run `cargo xtask build-plugins`", plugin.display());
        std::process::exit(1);
    }
    // The plugin as it ships, and with a request budget that does not pace it.
    let plugins = tempfile::tempdir().expect("a plugins folder");
    for (copy, tail) in [("paced", ""), ("unpaced", "requests: {qps: 1000, burst: 1000}\n")] {
        let dir = plugins.path().join(copy);
        std::fs::create_dir_all(&dir).expect("a plugin folder");
        for file in ["plugin.yaml", "pdb-for-deployment.wasm"] {
            std::fs::copy(plugin.join(file), dir.join(file)).expect("copying the plugin");
        }
        let manifest = std::fs::read_to_string(dir.join("plugin.yaml")).expect("the manifest");
        std::fs::write(dir.join("plugin.yaml"), format!("{manifest}{tail}")).expect("writing the manifest");
    }
    let rt = wink_benches::runtime();
    let times = rt.block_on(async {
        let cluster = BenchCluster::start(PodSize::Small, 0, 100_000).await;
        let config = load_config(Some(cluster.kubeconfig())).await.expect("the cluster's kubeconfig");
        let client = Client::try_from(config.clone()).expect("a kube client");
        let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
        for i in 0..DEPLOYMENTS {
            deployments.create(&PostParams::default(), &deployment(i)).await.expect("creating a Deployment");
        }
        let budgets = Api::<PodDisruptionBudget>::namespaced(client.clone(), NAMESPACE);
        let seen = Arc::new(Seen::default());
        let observer = {
            let (seen, budgets) = (seen.clone(), budgets.clone());
            tokio::spawn(async move {
                let mut events = std::pin::pin!(watcher::watcher(budgets, watcher::Config::default()));
                while let Some(event) = events.next().await {
                    match event {
                        Ok(Event::Apply(b) | Event::InitApply(b)) => seen.note(&b),
                        Ok(Event::Delete(b)) => seen.forget(&b),
                        _ => {}
                    }
                }
            })
        };
        let mut times: HashMap<&'static str, Vec<Duration>> = HashMap::new();
        for round in 0..ROUNDS {
            let sides: &[Side] =
                if round == 0 { &[Side::Wink, Side::KubeRs, Side::WinkPaced] } else { &[Side::Wink, Side::KubeRs] };
            for &side in sides {
                let samples = if side == Side::WinkPaced { PACED_SAMPLES } else { SAMPLES };
                let (cancel, task) = start(side, &config, plugins.path()).await;
                let name = |i: usize| format!("web-{:02}", i % DEPLOYMENTS);
                for i in 0..DEPLOYMENTS {
                    seen.next(&name(i), None).await;
                }
                for i in 0..WARM_UP {
                    sample(&budgets, &seen, &name(i)).await;
                }
                for i in 0..samples {
                    let took = sample(&budgets, &seen, &name(i + WARM_UP)).await;
                    times.entry(side.label()).or_default().push(took);
                }
                cancel.cancel();
                task.await.expect("the controller stops");
                eprintln!("reconcile: round {} of {ROUNDS}, {} done", round + 1, side.label());
            }
        }
        observer.abort();
        times
    });

    let mut report = Report::new(
        "reconcile",
        "12. A reconciler end to end",
        "The same controller twice, one at a time over one local API server on loopback: \
         `pdb-for-deployment`, a wink reconciler (Rust, wasm, the SDK's typed `Api`) that owns a \
         PodDisruptionBudget for every Deployment with two or more replicas, run by a `Host` over the kube \
         source and client as `wink run --kubeconfig` builds it; and the same logic as a kube-rs `Controller` \
         (`owns` the budgets; a live GET of the budget, a create when missing). 20 Deployments of three \
         replicas. A sample: a client deletes one budget, until an observer's watch sees a new budget of that \
         name (the delete's round trip, the controller's watch event, the mapping to the owner's key, the \
         work queue, the reconcile with its GET and create, the new object's event at the observer). Three \
         rounds of 40 samples per controller, interleaved, after 3 unmeasured ones; the plugin with a request \
         budget that does not pace it (`requests: {qps: 1000, burst: 1000}`: kube-rs's client paces nothing), \
         and in the first round 10 samples of it as it ships (client-go's default budget).",
    );
    let mut table =
        Table::new("owned object deleted → recreated", &["controller", "samples", "p50", "p99", "÷ kube-rs (p50)"]);
    let p50 = |side: Side| percentile(&times[side.label()], 50.0);
    for side in [Side::Wink, Side::KubeRs, Side::WinkPaced] {
        let samples = &times[side.label()];
        let ratio = p50(side).as_secs_f64() / p50(Side::KubeRs).as_secs_f64();
        table.row(vec![
            side.label().to_owned(),
            samples.len().to_string(),
            human_duration(p50(side)),
            human_duration(percentile(samples, 99.0)),
            format!("{ratio:.2}×"),
        ]);
    }
    report.tables.push(table);
    let (wink, kube) = (p50(Side::Wink), p50(Side::KubeRs));
    let ratio = wink.as_secs_f64() / kube.as_secs_f64();
    report.notes.push(format!(
        "owned object deleted → recreated, p50: wink {} against kube-rs {} ({ratio:.2}×)",
        human_duration(wink),
        human_duration(kube)
    ));
    report.notes.push(format!(
        "with the default request budget (client-go's 5 requests/s, burst 10) each reconcile's requests (the \
         GET, the create, the Event's create or patch) wait for it once the burst is spent, one every 200 ms: \
         p50 {}",
        human_duration(p50(Side::WinkPaced))
    ));
    report.goals.push(
        Goal::new("a reconciler: owned object deleted → recreated (p50)", human_duration(wink), None)
            .against(format!("kube-rs `Controller` {}", human_duration(kube)), format!("{ratio:.2}×")),
    );
    print!("{}", report.to_markdown());
    report.write();
}

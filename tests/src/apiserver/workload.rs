//! The seeded random workload and faults of the convergence tests (tests/tests/
//! kube_convergence.rs with native handlers, kube_convergence_wasm.rs with wasm plugins), the
//! comparisons they end with, and the loop over seeds that reports each one ([`run_seeds`]).
//!
//! A seed fixes the server's settings, the objects, the order of creates, updates and deletes
//! and the faults fired between them (dropped and closed watches, compactions, 429/500
//! answers, delays, split frames, malformed frames, watch ERROR events, bookmarks, a server
//! that stops supporting streaming lists). It does not fix their interleaving with the client:
//! time is real.
//!
//! Objects are ConfigMaps (`cm0`..`cm11`) and Widgets (a namespaced custom resource,
//! `w0`..`w11`) in namespaces `a`, `b`, `c`, labelled `tier: front` or `tier: back` and
//! sometimes [`RETRY_LABEL`]`: once` (which the event-recorder plugin can be told to answer
//! with one `retry`). Names never collide across kinds, so a key names its kind.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use wink::informer::SharedIndexInformer;

use super::{ApiServer, ResourceDef, ServerOptions, Verb, WatchListSupport};

/// The namespaces of the workload.
pub const NAMESPACES: [&str; 3] = ["a", "b", "c"];
/// Creates, updates and deletes per seed; faults fire during the first four fifths.
pub const OPS: usize = 300;
/// The label whose value `once` asks the event-recorder plugin for one retry per key.
pub const RETRY_LABEL: &str = "wink.test/retry";
/// The kinds of the workload.
pub const KINDS: [&str; 2] = ["ConfigMap", "Widget"];

/// The apiVersion of a workload kind.
pub fn api_version(kind: &str) -> &'static str {
    if kind == "ConfigMap" { "v1" } else { "example.com/v1" }
}

/// The seeds to run: 1..=4, or 1..=`$WINK_CONVERGENCE_SEEDS`, or only
/// `$WINK_CONVERGENCE_SEED`.
pub fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("WINK_CONVERGENCE_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![seed];
    }
    let count = std::env::var("WINK_CONVERGENCE_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4u64);
    (1..=count).collect()
}

/// Runs `run_seed` for each of [`seeds`], printing each seed's summary (or its failure), and
/// fails naming the seeds that did not converge.
pub async fn run_seeds<F, Fut>(mut run_seed: F)
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = Result<String, String>>,
{
    let mut failures = Vec::new();
    for seed in seeds() {
        match run_seed(seed).await {
            Ok(summary) => println!("{summary}"),
            Err(failure) => {
                eprintln!("FAILED {failure}");
                failures.push(seed);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "convergence failed for seeds {failures:?}; rerun one with WINK_CONVERGENCE_SEED=<seed> (details above)"
    );
}

/// A random object of `kind` named `ns/name`.
pub fn object(kind: &str, ns: &str, name: &str, rng: &mut StdRng) -> Value {
    let tier = if rng.random_bool(0.5) { "front" } else { "back" };
    let mut labels = json!({"tier": tier});
    if rng.random_bool(0.25) {
        labels[RETRY_LABEL] = json!("once");
    }
    let body = if kind == "ConfigMap" {
        json!({"data": {"v": rng.random::<u32>().to_string()}})
    } else {
        json!({"spec": {"size": rng.random_range(0..100)}})
    };
    let mut obj = json!({"apiVersion": api_version(kind), "kind": kind,
        "metadata": {"namespace": ns, "name": name, "labels": labels}});
    obj.as_object_mut().expect("an object").extend(body.as_object().expect("an object").clone());
    obj
}

/// Starts a server with the seed's settings (history window, 200 ms bookmarks, no
/// `Retry-After` delay), serving Widgets, holding ten ConfigMaps already.
pub async fn start_server(seed: u64, rng: &mut StdRng) -> Result<ApiServer, String> {
    let options = ServerOptions {
        history_limit: rng.random_range(40..400),
        bookmark_interval: Some(Duration::from_millis(200)),
        retry_after_secs: 0,
        seed,
        ..ServerOptions::default()
    };
    let server = ApiServer::start_with(options).await.map_err(|e| e.to_string())?;
    server.register(ResourceDef::custom("example.com/v1", "Widget", "widgets", true)).map_err(|e| e.to_string())?;
    for i in 0..10 {
        let ns = NAMESPACES[i % NAMESPACES.len()];
        server.apply(object("ConfigMap", ns, &format!("cm{i}"), rng)).map_err(|e| e.to_string())?;
    }
    Ok(server)
}

/// Runs one fault at random; returns its name.
pub fn fault(server: &ApiServer, rng: &mut StdRng) -> &'static str {
    match rng.random_range(0..11) {
        0 => {
            server.drop_watches();
            "drop"
        }
        1 => {
            server.close_watches();
            "close"
        }
        2 => {
            server.compact();
            "compact"
        }
        3 => {
            let verbs: &[Verb] = if rng.random_bool(0.5) { &[Verb::List] } else { &[Verb::Watch] };
            server.fail_next(verbs, rng.random_range(1..4), if rng.random_bool(0.5) { 429 } else { 500 });
            "fail"
        }
        4 => {
            let delay = rng.random_bool(0.5).then(|| Duration::from_millis(rng.random_range(5..80)));
            server.set_delay(Verb::RESOURCES, delay);
            "delay"
        }
        5 => {
            server.set_split_frames(rng.random_bool(0.6));
            "split"
        }
        6 => {
            server.send_malformed_frame();
            "malformed"
        }
        7 => {
            server.send_watch_error(500, "InternalError", "injected");
            "watch-error"
        }
        8 => {
            server.bookmark_now();
            "bookmark"
        }
        9 if rng.random_bool(0.2) => {
            server.set_watch_list(WatchListSupport::Rejected);
            "reject-watch-list"
        }
        _ => {
            server.drop_watches();
            server.compact();
            "drop+compact"
        }
    }
}

/// Runs the workload: [`OPS`] creates, updates and deletes across namespaces and kinds, with
/// faults now and then, then a fault-free tail whose changes can only arrive through watch
/// events (relists would hide a broken watch path). Returns how often each fault fired.
pub async fn run(server: &ApiServer, rng: &mut StdRng) -> Result<BTreeMap<&'static str, usize>, String> {
    let mut faults: BTreeMap<&str, usize> = BTreeMap::new();
    for op in 0..OPS {
        let kind = if rng.random_bool(0.7) { "ConfigMap" } else { "Widget" };
        let ns = NAMESPACES[rng.random_range(0..NAMESPACES.len())];
        let name = format!("{}{}", if kind == "ConfigMap" { "cm" } else { "w" }, rng.random_range(0..12));
        if op < OPS * 4 / 5 && rng.random_bool(0.07) {
            *faults.entry(fault(server, rng)).or_default() += 1;
            // Let the client react (reconnect, relist) before going on, mostly.
            tokio::time::sleep(Duration::from_millis(rng.random_range(10..200))).await;
        } else if op == OPS * 4 / 5 {
            // The tail: no more faults (armed error answers are used up by the next requests).
            server.set_delay(Verb::RESOURCES, None);
            server.set_split_frames(rng.random_bool(0.5));
        }
        if rng.random_bool(0.7) {
            server.apply(object(kind, ns, &name, rng)).map_err(|e| e.to_string())?;
        } else {
            server.delete(api_version(kind), kind, &format!("{ns}/{name}")).map_err(|e| e.to_string())?;
        }
        if rng.random_bool(0.4) {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..20))).await;
        }
    }
    Ok(faults)
}

/// Which objects a handler asked for: some namespaces (or all), and maybe only `tier=front`.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The kind.
    pub kind: &'static str,
    /// Only these namespaces; `None`: all.
    pub namespaces: Option<BTreeSet<String>>,
    /// Only objects labelled `tier: front`.
    pub front_only: bool,
}

impl Selection {
    /// Every object of `kind`.
    pub fn all(kind: &'static str) -> Self {
        Self { kind, namespaces: None, front_only: false }
    }

    /// The objects of `kind` in `namespaces`.
    pub fn in_namespaces(kind: &'static str, namespaces: &[&str]) -> Self {
        Self { kind, namespaces: Some(namespaces.iter().map(|n| (*n).to_owned()).collect()), front_only: false }
    }

    /// Only the objects labelled `tier: front`.
    pub fn front(mut self) -> Self {
        self.front_only = true;
        self
    }

    /// Whether the server object `obj` (of this kind) is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
        let tier = obj["metadata"]["labels"]["tier"].as_str();
        self.namespaces.as_ref().is_none_or(|set| set.contains(ns)) && (!self.front_only || tier == Some("front"))
    }

    /// The selection as a plugin manifest's `resources:` entry (YAML, indented as a list
    /// item).
    pub fn manifest_entry(&self) -> String {
        let mut entry = format!("  - apiVersion: {}\n    kind: {}\n", api_version(self.kind), self.kind);
        if let Some(namespaces) = &self.namespaces {
            let list: Vec<&str> = namespaces.iter().map(String::as_str).collect();
            entry.push_str(&format!("    namespaces: [{}]\n", list.join(", ")));
        }
        if self.front_only {
            entry.push_str("    labelSelector: \"tier=front\"\n");
        }
        entry
    }
}

/// The server's objects of `kind` (key → value).
pub fn truth(server: &ApiServer, kind: &str) -> BTreeMap<String, Value> {
    server
        .objects(api_version(kind), kind)
        .into_iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or_default().to_owned();
            (format!("{ns}/{}", o["metadata"]["name"].as_str().unwrap_or_default()), o)
        })
        .collect()
}

/// Key → resourceVersion of the server's objects that `selections` select.
pub fn expected_view(server: &ApiServer, selections: &[Selection]) -> BTreeMap<String, String> {
    let mut view = BTreeMap::new();
    for selection in selections {
        let selected = truth(server, selection.kind).into_iter().filter(|(_, o)| selection.matches(o)).collect();
        view.extend(versions(&selected));
    }
    view
}

/// How an informer's cache of `kind` differs from the server's objects (versions, then
/// content), if it does.
pub fn cache_difference(server: &ApiServer, kind: &str, informer: &SharedIndexInformer) -> Option<String> {
    let expected = truth(server, kind);
    let cache: BTreeMap<String, Value> =
        informer.store().list().into_iter().map(|o| (o.key().to_owned(), o.to_value().unwrap_or_default())).collect();
    if versions(&cache) != versions(&expected) {
        Some(format!("{kind} cache: {}", diff(&versions(&cache), &versions(&expected))))
    } else if cache != expected {
        Some(format!("{kind} cache holds the server's versions but not their content"))
    } else {
        None
    }
}

/// Key → resourceVersion.
pub fn versions(objects: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    objects
        .iter()
        .map(|(k, o)| (k.clone(), o["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The keys on which `actual` differs from `expected`: missing, extra, other versions.
pub fn diff(actual: &BTreeMap<String, String>, expected: &BTreeMap<String, String>) -> String {
    let missing: Vec<_> = expected.keys().filter(|k| !actual.contains_key(*k)).collect();
    let extra: Vec<_> = actual.keys().filter(|k| !expected.contains_key(*k)).collect();
    let stale: Vec<_> = actual
        .iter()
        .filter_map(|(k, v)| expected.get(k).filter(|e| *e != v).map(|e| format!("{k}@{v} (server @{e})")))
        .collect();
    format!("missing {missing:?}, extra {extra:?}, stale {stale:?}")
}

/// The keys on which two views differ.
pub fn differing_keys(actual: &BTreeMap<String, String>, expected: &BTreeMap<String, String>) -> Vec<String> {
    let keys: BTreeSet<&String> = actual.keys().chain(expected.keys()).collect();
    keys.into_iter().filter(|k| actual.get(*k) != expected.get(*k)).cloned().collect()
}

/// Waits until `differences` finds none twice in a row 300 ms apart (nothing was in flight),
/// or `deadline` passes: then returns the last problems found, one per line.
pub async fn wait_quiet(deadline: Duration, mut differences: impl FnMut() -> Vec<String>) -> Result<(), String> {
    let deadline = Instant::now() + deadline;
    loop {
        let problems = differences();
        if problems.is_empty() {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if differences().is_empty() {
                return Ok(());
            }
        } else if Instant::now() > deadline {
            return Err(problems.join("\n  "));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One line about a finished seed: objects, requests, faults, times.
pub fn summary(
    server: &ApiServer,
    seed: u64,
    faults: &BTreeMap<&str, usize>,
    workload: Duration,
    started: Instant,
) -> String {
    let requests = server.requests();
    let objects: usize = KINDS.iter().map(|k| server.objects(api_version(k), k).len()).sum();
    format!(
        "seed {seed}: {objects} objects, {} requests ({} lists, {} watches), faults {faults:?}, workload {workload:.1?}, total {:.1?}",
        requests.len(),
        requests.iter().filter(|r| r.verb == Verb::List).count(),
        requests.iter().filter(|r| r.verb == Verb::Watch).count(),
        started.elapsed(),
    )
}

/// A fresh random generator for `seed`.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

//! Replicas of `wink run --shard-group` as child processes sharing a folder of
//! event-recorder plugins, and what their logs say: which plugins each runs, what each
//! plugin was told since it was last deployed, and whether that adds up to the cluster's
//! state. Used by the scale-out tests on the local API server (`tests/scale_out.rs`) and on a
//! real kube-apiserver (`tests/real_apiserver_scale_out.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use wink::shard::Assignment;

use crate::binary::wink_binary;
use crate::process::Running;
use crate::recorder::{RecorderLine, Seen};
use crate::{install_plugin, write_atomic};

/// How many recording plugins the replicas share (besides [`SHARDED`]).
pub const PLUGINS: usize = 30;
/// The shardable plugin (`shardBy: object`): it runs on every replica, each with its slice.
pub const SHARDED: &str = "sharded";
/// The replicas' `--lease-duration`.
pub const LEASE: Duration = Duration::from_secs(4);
/// The replicas' `--lease-renew`.
pub const RENEW: Duration = Duration::from_secs(1);
/// The tests' own slack on top of the bounds (polling, process start, loaded machine).
pub const SLACK: Duration = Duration::from_secs(4);

/// The name of the `i`th recording plugin.
pub fn plugin_name(i: usize) -> String {
    format!("rec-{i:02}")
}

/// Installs [`PLUGINS`] event-recorders and the shardable one into `dir` (each manifest's
/// tail after `component:` replaced by `manifest_tail`, if given).
pub fn install_plugins(dir: &Path, manifest_tail: Option<&str>) {
    for i in 0..PLUGINS {
        install_plugin("event-recorder", dir, &plugin_name(i), manifest_tail);
    }
    let sharded = install_plugin("event-recorder", dir, SHARDED, manifest_tail);
    let manifest = std::fs::read_to_string(sharded.join("plugin.yaml")).expect("reading the manifest");
    write_atomic(&sharded.join("plugin.yaml"), &format!("{manifest}shardBy: object\n"));
}

/// How replicas of one group are started: the same plugins, compile cache and source.
#[derive(Clone, Debug)]
pub struct Group {
    /// The plugins folder ([`install_plugins`]).
    pub plugins: PathBuf,
    /// The compile cache, shared by the replicas.
    pub cache: PathBuf,
    /// The kubeconfig of `--source kube:`.
    pub kubeconfig: PathBuf,
    /// `--shard-group`.
    pub name: String,
    /// `--shard-namespace`: where the Leases are.
    pub namespace: String,
}

impl Group {
    /// Starts replica `identity` (`--shard-identity`), Lease [`LEASE`], renewed every [`RENEW`].
    pub fn spawn(&self, identity: &str) -> Replica {
        let child = Running::spawn(
            Command::new(wink_binary())
                .env("RUST_LOG", "info")
                .env_remove("NO_COLOR")
                .env_remove("KUBECONFIG")
                .args(["run", "--plugins"])
                .arg(&self.plugins)
                .arg("--cache-dir")
                .arg(&self.cache)
                .arg("--source")
                .arg(format!("kube:{}", self.kubeconfig.display()))
                .args(["--shard-group", &self.name, "--shard-namespace", &self.namespace])
                .args(["--shard-identity", identity, "--metrics-interval", "0"])
                .arg(format!("--lease-duration={}s", LEASE.as_secs()))
                .arg(format!("--lease-renew={}s", RENEW.as_secs())),
        );
        Replica { name: identity.to_owned(), child }
    }
}

/// A running replica.
pub struct Replica {
    /// Its `--shard-identity`.
    pub name: String,
    /// The process.
    pub child: Running,
}

impl Replica {
    /// Sends SIGTERM and waits for a clean exit (it drains and releases its Lease).
    pub async fn leave(mut self) {
        self.child.sigterm();
        let exit = self.child.wait_exit().await;
        assert!(exit.success(), "{} exited with {exit}:\n{}", self.name, self.child.stderr.snapshot().join("\n"));
    }

    /// Its log lines that contain all of `words`.
    pub fn lines_with(&self, words: &[&str]) -> Vec<String> {
        self.child.stderr.snapshot().into_iter().filter(|l| words.iter().all(|w| l.contains(w))).collect()
    }
}

/// The value of `plugin=` in a registry log line.
fn plugin_field(line: &str) -> Option<&str> {
    line.split_whitespace().find_map(|w| w.strip_prefix("plugin="))
}

/// The plugins a replica runs now, from its log: deployed or replaced, and not removed since.
pub fn running(replica: &Replica) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for line in replica.child.stderr.snapshot() {
        let Some(plugin) = plugin_field(&line) else { continue };
        if line.contains("plugin deployed") || line.contains("plugin replaced") {
            set.insert(plugin.to_owned());
        } else if line.contains("plugin removed") {
            set.remove(plugin);
        }
    }
    set
}

/// What `plugin` was told on `replica` since it was last deployed there (key → rv).
pub fn view(replica: &Replica, plugin: &str) -> BTreeMap<String, String> {
    let lines = replica.child.stderr.snapshot();
    let marker = format!("plugin={plugin}");
    let start = lines
        .iter()
        .rposition(|l| {
            (l.contains("plugin deployed") || l.contains("plugin replaced"))
                && l.split_whitespace().any(|w| w == marker)
        })
        .map_or(lines.len(), |i| i + 1);
    let guest = format!("plugin=\"{plugin}\"");
    let mut view = BTreeMap::new();
    for line in &lines[start..] {
        if line.contains(&guest)
            && let Some(parsed) = RecorderLine::parse(line)
        {
            Seen::apply_to(parsed.seen, &mut view);
        }
    }
    view
}

/// Who runs each plugin (every replica's claims).
pub fn owners(replicas: &[Replica]) -> BTreeMap<String, Vec<String>> {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for replica in replicas {
        for plugin in running(replica) {
            owners.entry(plugin).or_default().push(replica.name.clone());
        }
    }
    owners
}

/// Whether every recording plugin runs on exactly one replica — the one rendezvous hashing
/// over the replicas' names picks — and the sharded one on all.
pub fn settled(replicas: &[Replica]) -> Result<(), String> {
    let names: Vec<String> = replicas.iter().map(|r| r.name.clone()).collect();
    let expected = Assignment::new(&names[0], names.clone());
    let owners = owners(replicas);
    let placed = (0..PLUGINS).all(|i| {
        let plugin = plugin_name(i);
        owners.get(&plugin).is_some_and(|o| o.len() == 1 && expected.owner(&plugin) == Some(o[0].as_str()))
    });
    ok_if(placed && owners.get(SHARDED).is_some_and(|o| o.len() == replicas.len()), || format!("{owners:?}"))
}

/// Whether every plugin's view (the sharded one's, summed over the replicas, each object
/// delivered by one of them only) is `truth` (key → resourceVersion).
pub fn converged(truth: &BTreeMap<String, String>, replicas: &[Replica]) -> Result<(), String> {
    let owners = owners(replicas);
    for i in 0..PLUGINS {
        let plugin = plugin_name(i);
        let Some([owner]) = owners.get(&plugin).map(Vec::as_slice) else {
            return Err(format!("{plugin} runs on {:?}", owners.get(&plugin)));
        };
        let replica = replicas.iter().find(|r| r.name == *owner).expect("an owner is a replica");
        let seen = view(replica, &plugin);
        if seen != *truth {
            return Err(format!("{plugin} on {owner}: {seen:?} != {truth:?}"));
        }
    }
    let mut total = BTreeMap::new();
    for replica in replicas {
        for (key, rv) in view(replica, SHARDED) {
            if total.insert(key.clone(), rv).is_some() {
                return Err(format!("{key} delivered by two members of the sharded plugin"));
            }
        }
    }
    ok_if(total == *truth, || format!("the sharded plugin's slices add up to {total:?}, not {truth:?}"))
}

/// Polls `done` every 50 ms until it holds; panics with `what` and its last reason after
/// `limit`. Returns how long it took.
pub async fn wait(what: &str, limit: Duration, mut done: impl FnMut() -> Result<(), String>) -> Duration {
    let started = Instant::now();
    loop {
        match done() {
            Ok(()) => return started.elapsed(),
            Err(why) => assert!(started.elapsed() < limit, "{what} within {limit:?}: {why}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `Ok` if `condition` holds, else `why()`.
pub fn ok_if(condition: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(why()) }
}

/// When a log line was written (its leading RFC 3339 timestamp).
pub fn logged_at(line: &str) -> SystemTime {
    let stamp = line.split_whitespace().next().unwrap_or_default();
    humantime::parse_rfc3339(stamp).unwrap_or_else(|e| panic!("no timestamp in {line:?}: {e}"))
}

/// When `replica` last stopped a plugin (its latest `plugin removed` line).
pub fn last_stop(replica: &Replica) -> Option<SystemTime> {
    replica.lines_with(&["plugin removed"]).iter().map(|l| logged_at(l)).max()
}

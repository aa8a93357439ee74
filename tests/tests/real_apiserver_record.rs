//! `wink record --source kube` against a real kube-apiserver and etcd
//! (`wink_tests::control_plane`, a private one, stopped before the replay), then `wink
//! replay` offline. Specifies that:
//!
//! - `wink record` writes the header, the initial lists of the resources asked for (initial
//!   adds, at the server's resourceVersions), then every change the test makes while it
//!   records — updates (old and new object), a create, and deletes (final state known) —,
//!   each object's in the order the server made them (at the resourceVersions it answered),
//!   and nothing else of the test's namespace; it exits 0 at SIGTERM;
//! - replayed with no server at all, an event-recorder plugin is called with exactly the
//!   recorded notifications of what it watches (its namespaces applied), in the recording's
//!   order, and per object with the same calls — the same adds, updates and deletes at the
//!   same resourceVersions, the same initial flags — as the same plugin run live by `wink run
//!   --source kube` on the same server while the recording was made;
//! - the reloader replayed on the recording asks to patch the Deployment the recorded
//!   ConfigMap change concerns; the patch is shown as a dry run (exit 0) and never reaches the
//!   server: the Deployment is unchanged there (replayed while the server still runs; the
//!   event-recorder is replayed after it stopped).
//!
//! Run with `cargo xtask test -- --test real_apiserver_record`, or
//! `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver_record`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wink_tests::control_plane::ControlPlane;
use wink_tests::process::Running;
use wink_tests::rbac::{reloader_tenant, wink};
use wink_tests::recorder::{RecorderLine, Seen, by_key};
use wink_tests::wait::eventually;
use wink_tests::{install_plugin, plugin};

/// How long the recorder, the live plugin or the server may take on a loaded machine.
const TIMEOUT: Duration = Duration::from_secs(90);

/// The resources recorded.
const RESOURCES: &str = "apps/v1/Deployment,v1/ConfigMap";

/// The event-recorder's manifest after `component:`: what the recording holds of `namespace`.
fn recorder_tail(namespace: &str) -> String {
    format!(
        "resources:\n  - {{apiVersion: apps/v1, kind: Deployment, namespaces: [{namespace}]}}\n  - {{apiVersion: v1, kind: ConfigMap, namespaces: [{namespace}]}}\nlimits: {{memory: 32Mi, callTimeout: 1s}}\n"
    )
}

/// The lines of a recording (header first), each parsed; empty while it does not exist.
fn recorded(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn rv(object: &Value) -> String {
    object["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()
}

/// A recording's notifications about `namespace`'s objects, as the event-recorder would
/// log them.
fn recorded_calls(lines: &[Value], namespace: &str) -> Vec<Seen> {
    lines
        .iter()
        .filter(|l| l["object"]["metadata"]["namespace"] == namespace)
        .filter_map(|l| {
            let object = &l["object"];
            let key = format!("{namespace}/{}", object["metadata"]["name"].as_str()?);
            Some(match l["type"].as_str()? {
                "add" => Seen::Add { key, rv: rv(object), initial: l["initial"].as_bool()? },
                "update" => Seen::Update { key, old_rv: rv(&l["old"]), new_rv: rv(object) },
                "delete" => Seen::Delete { key, rv: rv(object), unknown: l["unknown"].as_bool()? },
                _ => return None,
            })
        })
        .collect()
}

/// The event-recorder's calls, in order, from its log lines.
fn logged_calls(lines: &[String]) -> Vec<Seen> {
    lines.iter().filter(|l| l.contains("event=")).filter_map(|l| RecorderLine::parse(l)).map(|r| r.seen).collect()
}

/// `wink replay PLUGIN RECORDING`, with no kubeconfig to reach a server by.
fn replay(plugin: &Path, recording: &Path) -> Output {
    wink()
        .arg("replay")
        .arg(plugin)
        .arg(recording)
        .env("RUST_LOG", "info")
        .env("KUBECONFIG", "/nonexistent")
        .output()
        .expect("running wink replay")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn config_map(name: &str) -> Result<ConfigMap> {
    Ok(serde_json::from_value(json!({"metadata": {"name": name}, "data": {"step": "1"}}))?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_recording_replays_offline_to_the_same_calls_with_writes_as_a_dry_run() -> Result<()> {
    let cp = ControlPlane::start().await?;
    // Deployment web, naming ConfigMap settings for the reloader; and ConfigMap doomed.
    let namespace = reloader_tenant(&cp, "record").await?;
    let client = cp.admin_client().await?;
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    let deployments = Api::<Deployment>::namespaced(client, &namespace);
    let doomed_v1 = config_maps.create(&PostParams::default(), &config_map("doomed")?).await?;
    let settings_v1 = config_maps.get("settings").await?;
    let web_v1 = deployments.get("web").await?;

    let work = tempfile::tempdir()?;
    let plugins = work.path().join("plugins");
    let recorder = install_plugin("event-recorder", &plugins, "recorder", Some(&recorder_tail(&namespace)));
    let recording = work.path().join("real.jsonl");
    let source = format!("kube:{}", cp.kubeconfig().display());
    let mut record = Running::spawn(
        wink()
            .args(["record", "--source", &source, "--resources", RESOURCES])
            .arg(&recording)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG"),
    );
    // The same plugin, live on the same server.
    let mut live = Running::spawn(
        wink()
            .args(["run", "--no-cache", "--no-watch", "--metrics-interval", "0", "--source", &source, "--plugins"])
            .arg(&plugins)
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .env_remove("KUBECONFIG"),
    );
    let settings = format!("{namespace}/settings");
    let initial =
        |calls: &[Seen]| calls.iter().any(|c| matches!(c, Seen::Add { key, initial: true, .. } if *key == settings));
    let synced = eventually(TIMEOUT, || {
        initial(&recorded_calls(&recorded(&recording), &namespace)) && initial(&logged_calls(&live.stderr.snapshot()))
    })
    .await;
    ensure!(
        synced,
        "the recorder and the live plugin did not both list the namespace:\nrecord: {}\nrun: {}",
        record.stderr.snapshot().join("\n"),
        live.stderr.snapshot().join("\n")
    );

    // Changes while recording: an update, a create, its update, and two deletes.
    let step = |n: &str| Patch::Merge(json!({"data": {"step": n}}));
    let settings_v2 = config_maps
        .patch("settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"currency": "USD"}})))
        .await?;
    let extra = config_maps.create(&PostParams::default(), &config_map("extra")?).await?;
    let extra_v2 = config_maps.patch("extra", &PatchParams::default(), &step("2")).await?;
    config_maps.delete("extra", &DeleteParams::default()).await?;
    config_maps.delete("doomed", &DeleteParams::default()).await?;
    let doomed = format!("{namespace}/doomed");
    let deleted = |calls: &[Seen]| calls.iter().any(|c| matches!(c, Seen::Delete { key, .. } if *key == doomed));
    let seen = eventually(TIMEOUT, || {
        deleted(&recorded_calls(&recorded(&recording), &namespace)) && deleted(&logged_calls(&live.stderr.snapshot()))
    })
    .await;
    ensure!(seen, "the last delete was not recorded and seen live:\n{}", live.stderr.snapshot().join("\n"));
    record.sigterm();
    let exit = record.wait_exit().await;
    ensure!(exit.success(), "wink record exited with {exit}:\n{}", record.stderr.snapshot().join("\n"));
    ensure!(record.stderr.snapshot().iter().any(|l| l.contains("recorded")), "no summary");
    live.sigterm();
    let exit = live.wait_exit().await;
    ensure!(exit.success(), "wink run exited with {exit}");
    let live_calls = logged_calls(&live.stderr.snapshot());

    // The recording: a header, then the namespace's objects as the server made them.
    let lines = recorded(&recording);
    let header = lines.first().context("an empty recording")?;
    ensure!(header["type"] == "header" && header["version"] == 1, "header: {header}");
    ensure!(header["source"] == source.as_str(), "header: {header}");
    ensure!(header["resources"] == json!(["apps/v1/Deployment", "v1/ConfigMap"]), "header: {header}");
    let calls = recorded_calls(&lines, &namespace);
    let keys = per_key(&calls);
    let key = |name: &str| format!("{namespace}/{name}");
    let calls_of = |name: &str| keys.get(&key(name)).cloned().unwrap_or_default();
    let add = |name: &str, rv: String, initial: bool| Seen::Add { key: key(name), rv, initial };
    let update = |name: &str, old: &ConfigMap, new: &ConfigMap| Seen::Update {
        key: key(name),
        old_rv: version(&old.metadata),
        new_rv: version(&new.metadata),
    };
    let deleted_known = |calls: &[Seen]| matches!(calls, [Seen::Delete { unknown: false, .. }]);
    ensure!(calls_of("web") == [add("web", version(&web_v1.metadata), true)], "web: {:?}", calls_of("web"));
    let expected =
        [add("settings", version(&settings_v1.metadata), true), update("settings", &settings_v1, &settings_v2)];
    ensure!(calls_of("settings") == expected, "settings: {:?}", calls_of("settings"));
    // The recorder is a listener like any other: busy writing when the update came, it may
    // fold the pending add and the update into one add of the newer object (wink's bounded
    // queue); replay then replays that.
    let extra_calls = calls_of("extra");
    let expected = [add("extra", version(&extra.metadata), false), update("extra", &extra, &extra_v2)];
    let folded = [add("extra", version(&extra_v2.metadata), false)];
    ensure!(
        (extra_calls.len() == 3 && extra_calls[..2] == expected && deleted_known(&extra_calls[2..]))
            || (extra_calls.len() == 2 && extra_calls[..1] == folded && deleted_known(&extra_calls[1..])),
        "extra: {extra_calls:?}"
    );
    let doomed_calls = calls_of("doomed");
    ensure!(
        doomed_calls.len() == 2
            && doomed_calls[0] == add("doomed", version(&doomed_v1.metadata), true)
            && deleted_known(&doomed_calls[1..]),
        "doomed: {doomed_calls:?}"
    );
    ensure!(keys.len() == 4, "only the test's objects: {:?}", keys.keys());

    // Replayed to the reloader while the server still runs: a dry run, the server untouched.
    let reloaded = replay(&plugin("reloader"), &recording);
    let stdout = text(&reloaded.stdout);
    ensure!(reloaded.status.code() == Some(0), "{stdout}\n{}", text(&reloaded.stderr));
    ensure!(stdout.contains(&format!("would patch apps/v1 Deployment {namespace}/web (merge)")), "{stdout}");
    ensure!(stdout.contains("reloader.wink.dev/config-hash"), "{stdout}");
    let after = deployments.get("web").await?;
    ensure!(version(&after.metadata) == version(&web_v1.metadata), "the Deployment changed on the server: {after:?}");

    // No server at all: replayed to the event-recorder, the calls are the recorded ones, in
    // order, and per object those the live plugin got.
    let url = cp.url().to_owned();
    drop(cp);
    let gone = tokio::net::TcpStream::connect(url.trim_start_matches("https://")).await;
    ensure!(gone.is_err(), "the control plane still answers on {url}");
    let replayed = replay(&recorder, &recording);
    let stdout = text(&replayed.stdout);
    ensure!(replayed.status.code() == Some(0), "{stdout}\n{}", text(&replayed.stderr));
    let replayed_calls = logged_calls(&text(&replayed.stderr).lines().map(str::to_owned).collect::<Vec<_>>());
    ensure!(replayed_calls == calls, "replayed {replayed_calls:?}\nrecorded {calls:?}");
    ensure!(stdout.contains(&format!("{} calls, 0 failed", calls.len())), "{stdout}");
    // An object created and deleted while the live plugin was busy with another may reach it
    // as nothing: its listener folds a pending add and its delete away (wink's bounded queue,
    // a stated difference from client-go). Such a key may be missing live; every other key's
    // calls are the same.
    let mut replayed_keys = per_key(&replayed_calls);
    let mut live_keys = per_key(&live_calls);
    replayed_keys.retain(|key, calls| live_keys.contains_key(key) || !vanished(calls));
    if extra_calls.len() == 2 {
        // Folded by the recorder (above): the live plugin may have had the update apart.
        replayed_keys.remove(&key("extra"));
        live_keys.remove(&key("extra"));
    }
    ensure!(replayed_keys == live_keys, "replayed {replayed_calls:?}\nlive {live_calls:?}");
    Ok(())
}

/// Whether `calls` are those of an object created after the initial list and deleted.
fn vanished(calls: &[Seen]) -> bool {
    matches!(calls, [Seen::Add { initial: false, .. }, .., Seen::Delete { .. }])
}

/// The calls of each object, in order.
fn per_key(calls: &[Seen]) -> BTreeMap<String, Vec<Seen>> {
    by_key(&calls.iter().map(|c| RecorderLine { seen: c.clone(), tag: None }).collect::<Vec<_>>())
}

fn version(meta: &ObjectMeta) -> String {
    meta.resource_version.clone().unwrap_or_default()
}

//! What the `wink` binary lets plugins take, run as a user runs it, with real plugins built
//! from `plugins/`.
//!
//! Specifies that:
//! - `wink check` refuses a plugin whose memory limit does not fit in the plugin memory
//!   budget, a component file larger than `--max-component-size`, and a component whose
//!   memory before its first call exceeds its `limits.memory`, each with an error naming the
//!   plugin or file and the figures;
//! - `wink run --start-plugins on-deploy` refuses to deploy a plugin whose limit does not fit
//!   in what the deployed plugins left of `--plugin-memory-budget`, keeps serving the others,
//!   and deploys it once a removed plugin's reservation is released; a replaced plugin's old
//!   reservation is released too;
//! - `wink run` with the default start deploys plugins that only fit the budget one at a
//!   time, and serves them all: each instance reserves its limit while it lives, and one
//!   that does not fit makes room by recycling the least recently used idle instance;
//! - `wink run` refuses a component over `--max-component-size` without reading it, and
//!   serves the other plugins;
//! - `wink run` refuses to start a plugin once every place of the instance pool
//!   (`--max-instances`) is held, saying so, keeps serving the others, and deploys it once a
//!   removed plugin's instance gives its place back;
//! - `wink run` prunes the compile cache (`--cache-max-size`): another engine's files go,
//!   the deployed plugin's compiled component stays even over the bound, and goes once the
//!   plugin is removed.
//!
//! Run with `cargo xtask test` or `cargo test -p wink-tests --test bounds`.

use std::path::Path;
use std::process::{Command, Output};

use wink_tests::binary::wink_binary;
use wink_tests::process::{Lines, Running, field};
use wink_tests::{install_plugin, write_atomic};

fn wink() -> Command {
    Command::new(wink_binary())
}

/// Runs `wink check` with `flags`, a private compile cache and no backtraces.
fn check(path: &Path, cache: &Path, flags: &[&str]) -> Output {
    wink().arg("check").arg(path).args(flags).env("XDG_CACHE_HOME", cache).env("RUST_BACKTRACE", "0").output().unwrap()
}

fn assert_rejected(out: &Output, expected: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("is not a valid wink plugin"), "{stderr}");
    for e in expected {
        assert!(stderr.contains(e), "the error does not mention {e:?}:\n{stderr}");
    }
}

/// Watches Pods with this memory limit.
fn with_memory(memory: &str) -> String {
    format!("resources:\n  - {{apiVersion: v1, kind: Pod}}\nlimits:\n  memory: {memory}\n")
}

#[test]
fn check_reports_memory_and_refuses_a_limit_over_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = install_plugin("event-recorder", dir.path(), "greedy", Some(&with_memory("32Mi")));
    let out = check(&plugin, dir.path(), &["--plugin-memory-budget", "64Mi"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("before the first call"), "{stdout}");
    assert!(stdout.contains("reserves 32Mi of the plugin memory budget of 64Mi"), "{stdout}");

    let out = check(&plugin, dir.path(), &["--plugin-memory-budget", "16Mi"]);
    assert_rejected(&out, &["plugin greedy reserves 32Mi", "budget of 16Mi", "--plugin-memory-budget"]);
}

#[test]
fn check_refuses_an_oversized_component_file() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = install_plugin("event-recorder", dir.path(), "bulky", None);
    let out = check(&plugin, dir.path(), &["--max-component-size", "1Ki"]);
    assert_rejected(&out, &["event-recorder.wasm", "larger than the largest component this host loads (1Ki"]);
}

#[test]
fn check_refuses_a_component_needing_more_memory_than_its_limit_before_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    // A Rust guest's memory starts at more than 1 MiB (its stack and data).
    let plugin = install_plugin("event-recorder", dir.path(), "cramped", Some(&with_memory("512Ki")));
    let out = check(&plugin, dir.path(), &[]);
    assert_rejected(&out, &["event-recorder.wasm", "plugin cramped", "initial memory", "limits.memory of 512Ki"]);
    assert_eq!(std::fs::read_dir(dir.path().join("wink/components")).map_or(0, Iterator::count), 0, "compiled");
}

fn run(plugins: &Path, cluster: &Path, flags: &[&str]) -> Running {
    Running::spawn(
        wink()
            .arg("run")
            .arg("--plugins")
            .arg(plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .args(flags)
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    )
}

fn cluster_with_a_pod() -> tempfile::TempDir {
    let cluster = tempfile::tempdir().unwrap();
    write_atomic(
        &cluster.path().join("web.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n",
    );
    cluster
}

/// A log line of `plugin`'s initial add of shop/web.
fn initial_add(plugin: &str) -> impl Fn(&str) -> Option<()> + '_ {
    move |l: &str| {
        (l.contains(plugin) && field(l, "event") == Some("add") && field(l, "key") == Some("shop/web")).then_some(())
    }
}

/// Waits for the log line refusing to deploy `plugin`, and checks that it says each of
/// `parts`.
async fn refusal(stderr: &Lines, plugin: &str, parts: &[&str]) {
    let line = stderr
        .wait_for("the refusal", |l| (l.contains("plugin not deployed") && l.contains(plugin)).then(|| l.to_owned()))
        .await;
    for part in parts {
        assert!(line.contains(part), "`{part}` missing from: {line}");
    }
}

/// Stops wink with SIGTERM and checks that it exits cleanly.
async fn stop(mut child: Running) {
    child.sigterm();
    let exit = child.wait_exit().await;
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", child.stderr.snapshot().join("\n"));
}

#[tokio::test]
async fn run_refuses_a_plugin_over_the_memory_budget_until_reservations_are_released() {
    let cluster = cluster_with_a_pod();
    let plugins = tempfile::tempdir().unwrap();
    let first = install_plugin("event-recorder", plugins.path(), "a-first", Some(&with_memory("32Mi")));
    install_plugin("event-recorder", plugins.path(), "b-second", Some(&with_memory("32Mi")));
    let flags = ["--no-cache", "--plugin-memory-budget", "48Mi", "--start-plugins", "on-deploy"];
    let child = run(plugins.path(), cluster.path(), &flags);
    let stderr = child.stderr.clone();
    refusal(&stderr, "b-second", &["plugin b-second reserves 32Mi", "only 16Mi", "budget of 48Mi"]).await;
    stderr.wait_for("a-first's initial add", initial_add("a-first")).await;

    // Removing a-first releases its reservation: b-second now fits and is deployed.
    std::fs::remove_dir_all(&first).unwrap();
    stderr.wait_for("b-second's initial add", initial_add("b-second")).await;

    // Replacing b-second with a smaller limit releases its old reservation: 32Mi are free.
    install_plugin("event-recorder", plugins.path(), "b-second", Some(&with_memory("16Mi")));
    let replaced = |l: &str| (l.contains("plugin replaced") && l.contains("b-second")).then_some(());
    stderr.wait_for("b-second's replacement", replaced).await;
    install_plugin("event-recorder", plugins.path(), "c-third", Some(&with_memory("32Mi")));
    stderr.wait_for("c-third's initial add", initial_add("c-third")).await;
    stop(child).await;
}

/// Started on their first event (the default), plugins that fit the memory budget only one
/// at a time all deploy and all get every event: each instance reserves its limit while it
/// lives, and makes room by recycling an idle one.
#[tokio::test]
async fn run_shares_the_memory_budget_between_instances_started_on_first_event() {
    let names = ["a-first", "b-second"];
    let flags = ["--no-cache", "--plugin-memory-budget", "48Mi"];
    // Both fit alone, so both deploy.
    every_plugin_gets_every_event(&names, Some(&with_memory("32Mi")), &flags, "plugin not deployed").await;
}

/// More plugins than the instance pool has places: each start takes the place of the least
/// recently used instance, so every plugin gets every event (the pool bounds the instances
/// alive at once, not the plugins deployed).
#[tokio::test]
async fn run_shares_a_full_instance_pool_least_recently_used_first() {
    let names = ["a-first", "b-second", "c-third"];
    let flags = ["--no-cache", "--max-instances", "1"];
    // A place was always made.
    every_plugin_gets_every_event(&names, None, &flags, "instance pool is full").await;
}

/// Runs the event recorder as each of `names` (with `manifest_tail`) under `flags`, and
/// checks that each gets the initial add and then an update, and that no line says `refused`.
async fn every_plugin_gets_every_event(names: &[&str], manifest_tail: Option<&str>, flags: &[&str], refused: &str) {
    let cluster = cluster_with_a_pod();
    let plugins = tempfile::tempdir().unwrap();
    for name in names {
        install_plugin("event-recorder", plugins.path(), name, manifest_tail);
    }
    let child = run(plugins.path(), cluster.path(), flags);
    let stderr = child.stderr.clone();
    for name in names {
        stderr.wait_for("every plugin's initial add", initial_add(name)).await;
    }
    write_atomic(
        &cluster.path().join("web.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  labels: {tier: front}\n",
    );
    for name in names {
        let update = |l: &str| (l.contains(name) && field(l, "event") == Some("update")).then_some(());
        stderr.wait_for("every plugin's update", update).await;
    }
    let lines = stderr.snapshot().into_iter().filter(|l| l.contains(refused)).count();
    assert_eq!(lines, 0, "`{refused}`: {:?}", stderr.snapshot());
    stop(child).await;
}

/// The peak resident memory of a process (`VmHWM`), in bytes, where `/proc` tells.
fn peak_resident(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    Some(line.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? << 10)
}

// Regression: the plugins folder's change detection read a whole component into memory
// before the loader could refuse it by size.
#[tokio::test]
async fn run_refuses_an_oversized_component_without_reading_it_and_runs_the_others() {
    let cluster = cluster_with_a_pod();
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), "a-normal", None);
    let huge = install_plugin("event-recorder", plugins.path(), "b-huge", None);
    // A sparse 2 GiB component: reading it would take 2 GiB of memory.
    let file = std::fs::File::options().write(true).open(huge.join("event-recorder.wasm")).unwrap();
    file.set_len(2 << 30).unwrap();
    let child = run(plugins.path(), cluster.path(), &["--no-cache", "--max-component-size", "1Mi"]);
    let stderr = child.stderr.clone();
    refusal(&stderr, "b-huge", &["is 2Gi, larger than the largest component this host loads (1Mi"]).await;
    stderr.wait_for("a-normal's initial add", initial_add("a-normal")).await;
    if let Some(peak) = peak_resident(child.id()) {
        assert!(peak < 1 << 30, "wink's resident memory peaked at {peak} bytes: the component was read");
    }
    stop(child).await;
}

fn cwasm_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn run_prunes_the_compile_cache_but_never_a_component_in_use() {
    let cluster = cluster_with_a_pod();
    let plugins = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let foreign = cache.path().join(format!("{}-0123456789abcdef.cwasm", "ab".repeat(32)));
    std::fs::write(&foreign, b"compiled by another wink").unwrap();
    let plugin = install_plugin("event-recorder", plugins.path(), "cached", None);
    let cache_dir = cache.path().to_str().unwrap();
    let child = run(plugins.path(), cluster.path(), &["--cache-dir", cache_dir, "--cache-max-size", "0"]);
    let stderr = child.stderr.clone();

    let pruned = |l: &str| l.contains("compile cache pruned").then(|| l.to_owned());
    let first = stderr.wait_for("the prune at start", pruned).await;
    assert_eq!(field(&first, "other_engines"), Some("1"), "{first}");
    assert!(!foreign.exists(), "another engine's file is garbage");
    let kept = cwasm_files(cache.path());
    assert_eq!(kept.len(), 1, "the deployed plugin's component stays over the bound: {kept:?}");
    stderr.wait_for("the initial add", initial_add("cached")).await;

    // Once the plugin is removed, its component is no longer in use and goes.
    std::fs::remove_dir_all(&plugin).unwrap();
    let evicted = |l: &str| (l.contains("compile cache pruned") && field(l, "evicted") == Some("1")).then_some(());
    stderr.wait_for("the prune after removal", evicted).await;
    assert_eq!(cwasm_files(cache.path()), Vec::<String>::new());
    stop(child).await;
}

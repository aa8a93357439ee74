//! The `wink` binary, run as a user runs it, with real plugins built from `plugins/`.
//!
//! Specifies that:
//! - `wink run` delivers the initial list, an edit and a removal of a file in the directory
//!   source to a plugin (seen in the plugin's log lines on stderr, plain text when piped),
//!   and on SIGTERM drains, prints one summary line per plugin on stdout and exits 0;
//! - `wink run --namespace` places objects written without a namespace in that namespace;
//! - `wink check` does what `run` does before the first event: it accepts a good plugin
//!   (whose `init` accepts its config) and prints what it watches, and rejects — with a
//!   non-zero exit and an error naming the problem and the file — a component of another
//!   world, a component path that is not wasm, a manifest with an unknown field or a
//!   malformed apiVersion, and a config the plugin's `init` refuses (with the plugin's
//!   reason); a kind Kubernetes does not build in is a warning, not an error.
//!
//! The binary comes from [`wink_tests::binary::wink_binary`] (built once with cargo), the
//! plugins from [`wink_tests::plugins_dir`], and the child-process helpers from
//! [`wink_tests::process`]. Run with `cargo xtask test` or
//! `cargo test -p wink-tests --test cli`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wink_tests::binary::wink_binary;
use wink_tests::process::{Running, field};
use wink_tests::{install_plugin, plugin, write_atomic};

fn wink() -> Command {
    Command::new(wink_binary())
}

/// Copies the built event-recorder into `dest/<name>/`, renamed.
fn install_recorder(dest: &Path, name: &str) -> PathBuf {
    install_plugin("event-recorder", dest, name, None)
}

fn pod(labels: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  labels: {{{labels}}}\n")
}

/// Runs `wink check` with a private compile cache and no backtraces (what a user sees).
fn check(path: &Path, cache: &Path) -> Output {
    wink().arg("check").arg(path).env("XDG_CACHE_HOME", cache).env("RUST_BACKTRACE", "0").output().unwrap()
}

#[tokio::test]
async fn run_delivers_events_and_reports_on_sigterm() {
    let cluster = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    install_recorder(plugins.path(), "cli-recorder");
    let file = cluster.path().join("web.yaml");
    write_atomic(&file, &pod("app: web"));

    let mut child = Running::spawn(
        wink()
            .args(["run", "--no-cache", "--plugins"])
            .arg(plugins.path())
            .arg("--source")
            .arg(format!("dir:{}", cluster.path().display()))
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    );
    let (stdout, stderr) = (child.stdout.clone(), child.stderr.clone());

    let event = |line: &str, kind: &str| {
        (line.contains("cli-recorder") && field(line, "event") == Some(kind) && field(line, "key") == Some("shop/web"))
            .then(|| line.to_owned())
    };
    let add = stderr.wait_for("the initial add", |l| event(l, "add")).await;
    assert_eq!(field(&add, "initial"), Some("true"), "{add}");
    let rv: u64 = field(&add, "rv").unwrap().parse().unwrap();

    write_atomic(&file, &pod("app: web, version: '2'"));
    let update = stderr.wait_for("the update", |l| event(l, "update")).await;
    assert_eq!(field(&update, "old_rv"), Some(rv.to_string().as_str()), "{update}");
    let new_rv: u64 = field(&update, "new_rv").unwrap().parse().unwrap();
    assert!(new_rv > rv, "{update}");

    std::fs::remove_file(&file).unwrap();
    let delete = stderr.wait_for("the delete", |l| event(l, "delete")).await;
    assert_eq!(field(&delete, "unknown"), Some("false"), "{delete}");

    child.sigterm();
    let exit = child.wait_exit().await;
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));

    // The summary: one line per plugin, counting init and the three events.
    let summary = stdout.wait_for("the summary", |l| l.starts_with("plugin=cli-recorder ").then(|| l.to_owned())).await;
    let calls: u64 = field(&summary, "calls").unwrap().parse().unwrap();
    assert!(calls >= 4, "{summary}");
    assert!(summary.contains(" traps=0 ") && summary.ends_with("quarantined=no"), "{summary}");
    assert_eq!(stdout.snapshot().len(), 1, "one line per plugin: {:?}", stdout.snapshot());
    let stderr = stderr.snapshot();
    assert!(stderr.iter().any(|l| l.contains("shutting down")), "{stderr:?}");
    // Regression: logs written to a pipe used to carry ANSI colour codes.
    assert!(stderr.iter().all(|l| !l.contains('\u{1b}')), "escape codes in piped logs: {stderr:?}");
}

/// `wink run --namespace NS` places namespaced objects written without a namespace in NS,
/// as `kubectl apply -n NS` does.
#[tokio::test]
async fn run_with_a_namespace_places_objects_without_one_there() {
    let cluster = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    install_recorder(plugins.path(), "cli-ns-recorder");
    write_atomic(&cluster.path().join("web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n");

    let mut child = Running::spawn(
        wink()
            .args(["run", "--no-cache", "--namespace", "team-a", "--plugins"])
            .arg(plugins.path())
            .arg("--source")
            .arg(format!("dir:{}", cluster.path().display()))
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR"),
    );
    let stderr = child.stderr.clone();
    let add = stderr
        .wait_for("the initial add", |l| {
            (l.contains("cli-ns-recorder") && field(l, "event") == Some("add")).then(|| l.to_owned())
        })
        .await;
    assert_eq!(field(&add, "key"), Some("team-a/web"), "{add}");
    child.sigterm();
    let exit = child.wait_exit().await;
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));
}

#[test]
fn check_accepts_a_good_plugin_and_prints_what_it_watches() {
    let dir = tempfile::tempdir().unwrap();
    // The resources replaced with a filtered, resynced one (and nothing after them).
    let manifest = "resources:\n  - apiVersion: v1\n    kind: Pod\n    namespaces: [shop]\n    resyncPeriod: 30s\n";
    let plugin = install_plugin("event-recorder", dir.path(), "checked", Some(manifest));
    let out = check(&plugin, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("plugin checked is valid"), "{stdout}");
    assert!(stdout.contains("implements wink:plugin/handler-plugin@0.4.0"), "{stdout}");
    assert!(stdout.contains("watches v1/Pod in shop, resync every 30s"), "{stdout}");
    assert!(stdout.contains("cluster: no permissions (every request is refused)"), "{stdout}");
    assert!(stdout.contains("init: accepted its config"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"), "{}", String::from_utf8_lossy(&out.stderr));
}

fn assert_rejected(out: &Output, expected: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("is not a valid wink plugin"), "{stderr}");
    for e in expected {
        assert!(stderr.contains(e), "the error does not mention {e:?}:\n{stderr}");
    }
}

#[test]
fn check_rejects_a_component_of_another_world() {
    let cache = tempfile::tempdir().unwrap();
    let out = check(&plugin("hostile/wrong-world"), cache.path());
    assert_rejected(&out, &["wrong-world.wasm", "does not implement the wink:plugin/handler-plugin world"]);
}

#[test]
fn check_rejects_a_component_that_is_not_wasm() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = install_recorder(dir.path(), "text");
    let manifest = std::fs::read_to_string(plugin.join("plugin.yaml")).unwrap();
    let manifest = manifest.replace("component: event-recorder.wasm", "component: notes.txt");
    std::fs::write(plugin.join("plugin.yaml"), manifest).unwrap();
    std::fs::write(plugin.join("notes.txt"), "not a component\n").unwrap();
    let out = check(&plugin, dir.path());
    assert_rejected(&out, &["notes.txt", "is not a WebAssembly file"]);
}

#[test]
fn check_rejects_a_manifest_with_an_unknown_field() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = install_recorder(dir.path(), "typo");
    let mut manifest = std::fs::OpenOptions::new().append(true).open(plugin.join("plugin.yaml")).unwrap();
    manifest.write_all(b"colour: blue\n").unwrap();
    drop(manifest);
    let out = check(&plugin, dir.path());
    assert_rejected(&out, &["plugin.yaml", "unknown field `colour`"]);
}

#[test]
fn check_refuses_a_config_the_plugins_init_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "resources:\n  - apiVersion: v1\n    kind: Pod\nconfig:\n  fail_init: true\n";
    let plugin = install_plugin("event-recorder", dir.path(), "refuses", Some(manifest));
    let out = check(&plugin, dir.path());
    assert_rejected(
        &out,
        &[
            "plugin.yaml",
            "plugin refuses does not start with this config",
            "init failed on purpose (config.fail_init is true)",
        ],
    );
}

#[test]
fn check_refuses_a_malformed_api_version() {
    let dir = tempfile::tempdir().unwrap();
    for (i, bad) in ["deployments", "apps", "apps/v1/x", "''"].into_iter().enumerate() {
        let manifest = format!("resources:\n  - apiVersion: {bad}\n    kind: Deployment\n");
        let plugin = install_plugin("event-recorder", dir.path(), &format!("malformed-{i}"), Some(&manifest));
        let out = check(&plugin, dir.path());
        assert_rejected(&out, &["plugin.yaml", "resources[0].apiVersion", "is not an apiVersion"]);
    }
}

#[test]
fn check_warns_about_a_kind_kubernetes_does_not_build_in() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "resources:\n  - apiVersion: apps/v1\n    kind: Deploymnet\n";
    let plugin = install_plugin("event-recorder", dir.path(), "typo-kind", Some(manifest));
    let out = check(&plugin, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a warning only:\n{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("plugin typo-kind is valid"));
    assert!(
        stderr.contains("warning:")
            && stderr.contains("resources: apps/v1 has no built-in kind Deploymnet (did you mean Deployment?)"),
        "{stderr}"
    );
}

/// The rules a new author wrote for a PodDisruptionBudget controller, each of which RBAC
/// accepts and never matches: refused by `check`, naming the entry and what to write.
#[test]
fn check_refuses_permission_rules_that_can_never_match() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("{apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [list]}", "permissions[0].verbs", "cache"),
        ("{apiGroups: [policy/v1], resources: [poddisruptionbudgets], verbs: [get]}", "apiGroups[0]", "`policy`"),
        (
            "{apiGroups: [policy], resources: [PodDisruptionBudget], verbs: [get]}",
            "resources[0]",
            "poddisruptionbudgets",
        ),
        ("{apiGroups: [''], resources: [pods], verbs: [Get]}", "verbs[0]", "write `get`"),
    ];
    for (i, (rule, field, suggestion)) in cases.into_iter().enumerate() {
        let manifest = format!("resources:\n  - apiVersion: v1\n    kind: Pod\npermissions:\n  - {rule}\n");
        let plugin = install_plugin("event-recorder", dir.path(), &format!("rules-{i}"), Some(&manifest));
        assert_rejected(&check(&plugin, dir.path()), &["plugin.yaml", field, suggestion]);
    }
}

/// Rules valid but partly unusable are warnings: verbs a plugin never sends, and Events it
/// may create but not record again (which patches).
#[test]
fn check_warns_about_permissions_a_plugin_cannot_use_or_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "resources:\n  - apiVersion: v1\n    kind: Pod\npermissions:\n  \
        - {apiGroups: [''], resources: [pods], verbs: [get, list, watch]}\n  \
        - {apiGroups: [events.k8s.io], resources: [events], verbs: [create]}\n";
    let plugin = install_plugin("event-recorder", dir.path(), "partly", Some(manifest));
    let out = check(&plugin, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "warnings only:\n{stderr}");
    assert!(stderr.contains("warning:") && stderr.contains("permissions[0]: verbs `list`, `watch`"), "{stderr}");
    assert!(stderr.contains("permissions[1]: allows creating Events but no rule allows `patch`"), "{stderr}");
    // The event recorder makes no request: its component does not import the cluster calls.
    assert!(stderr.contains("the component does not import wink:plugin/cluster"), "{stderr}");
}

/// What the component and the manifest say together: a plugin that does make requests is
/// not told its rules go unused; a reconciler whose rules do not let it create what it owns
/// is told so, with the rule to add.
#[test]
fn check_warns_about_a_reconciler_that_cannot_create_what_it_owns() {
    let dir = tempfile::tempdir().unwrap();
    let auditor = install_plugin("label-auditor", dir.path(), "auditor", None);
    let out = check(&auditor, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("does not import"), "{stderr}");

    let shipped = install_plugin("pdb-for-deployment", dir.path(), "budgets", None);
    let out = check(&shipped, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("warning:"), "{stderr}");
    let manifest = std::fs::read_to_string(shipped.join("plugin.yaml")).unwrap();
    let tail = manifest.split_once("component: pdb-for-deployment.wasm").expect("the component line").1;
    let tail = tail.split_once('\n').unwrap().1.replace("verbs: [get, create, update, delete]", "verbs: [get, update]");
    assert!(tail.contains("verbs: [get, update]"), "{tail}");
    let watcher = install_plugin("pdb-for-deployment", dir.path(), "watcher", Some(&tail));
    let out = check(&watcher, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a warning only:\n{stderr}");
    assert!(
        stderr.contains("reconcile.owns[0]: no permission allows creating policy/v1 PodDisruptionBudget")
            && stderr.contains("add `create` on `poddisruptionbudgets` in apiGroups [policy]"),
        "{stderr}"
    );
}

/// `wink check` on a plugin's source folder (as a new author tries first): it says the
/// plugin must be built, and how.
#[test]
fn check_on_a_source_folder_says_to_build_it_first() {
    let cache = tempfile::tempdir().unwrap();
    let source = wink_tests::repo_root().join("plugins").join("label-auditor");
    assert_rejected(&check(&source, cache.path()), &["holds the source of a plugin (Cargo.toml)", "build it first"]);
}

/// `wink run` outside a checkout of wink: the default source folder is missing, and the
/// error says what to pass.
#[test]
fn run_outside_the_checkout_says_which_source_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    let out = wink().current_dir(dir.path()).args(["run", "--plugins", "plugins"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--source dir:examples/cluster: there is no such folder"), "{stderr}");
    assert!(stderr.contains("Pass --source dir:FOLDER") && stderr.contains("--source kube"), "{stderr}");
}

//! The `wink` binary, run as a user runs it, with real plugins built from `plugins/`.
//!
//! Specifies that:
//! - `wink run` delivers the initial list, an edit and a removal of a file in the directory
//!   source to a plugin (seen in the plugin's log lines on stderr, plain text when piped),
//!   and on SIGTERM drains, prints one summary line per plugin on stdout and exits 0;
//! - `wink check` accepts a good plugin and prints what it watches, and rejects — with a
//!   non-zero exit and an error naming the problem and the file — a component of another
//!   world, a component path that is not wasm, and a manifest with an unknown field.
//!
//! Plugins come from `WINK_PLUGINS_DIR` (set by `cargo xtask test`) or `<repo>/.wink/plugins`,
//! built with `cargo run -p xtask -- build-plugins` when missing. Run with `cargo xtask test`
//! or `cargo test -p wink-host --test cli`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Far longer than anything takes on an idle machine.
const TIMEOUT: Duration = Duration::from_secs(15);

fn wink() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wink"))
}

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ lives in the repository")
}

/// The folder of built plugins, building them first if there is none.
fn plugins_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("WINK_PLUGINS_DIR") {
            return PathBuf::from(dir);
        }
        let dir = repo_root().join(".wink").join("plugins");
        let built = ["event-recorder", "hostile/wrong-world"].iter().all(|p| dir.join(p).join("plugin.yaml").is_file());
        if !built {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .current_dir(repo_root())
                .args(["run", "--quiet", "-p", "xtask", "--", "build-plugins", "--out"])
                .arg(&dir)
                .status()
                .expect("running cargo xtask build-plugins");
            assert!(status.success(), "cargo xtask build-plugins failed ({status})");
        }
        dir
    })
}

/// Copies the built event-recorder into `dest/<name>/`, renamed, with `extra` appended to
/// its manifest.
fn install_recorder(dest: &Path, name: &str, extra: &str) -> PathBuf {
    let src = plugins_dir().join("event-recorder");
    let target = dest.join(name);
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(src.join("event-recorder.wasm"), target.join("event-recorder.wasm")).unwrap();
    let manifest = std::fs::read_to_string(src.join("plugin.yaml")).unwrap();
    let renamed: Vec<String> =
        manifest.lines().map(|l| if l.starts_with("name:") { format!("name: {name}") } else { l.to_owned() }).collect();
    std::fs::write(target.join("plugin.yaml"), renamed.join("\n") + "\n" + extra).unwrap();
    target
}

fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn pod(labels: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  labels: {{{labels}}}\n")
}

/// Runs `wink check` with a private compile cache and no backtraces (what a user sees).
fn check(path: &Path, cache: &Path) -> Output {
    wink().arg("check").arg(path).env("XDG_CACHE_HOME", cache).env("RUST_BACKTRACE", "0").output().unwrap()
}

/// The lines a child writes to a pipe, collected by a thread.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn collect(pipe: impl Read + Send + 'static) -> Self {
        let lines = Self::default();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                sink.0.lock().unwrap().push(line);
            }
        });
        lines
    }

    fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Waits for a line matching `find` and returns what it extracted.
    fn wait_for<T>(&self, what: &str, find: impl Fn(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(found) = self.snapshot().iter().find_map(|l| find(l)) {
                return found;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; stderr:\n{}", self.snapshot().join("\n"));
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// Kills the child if the test fails before it exits.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "wink did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// The value of `name=` in a log line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

#[test]
fn run_delivers_events_and_reports_on_sigterm() {
    let cluster = tempfile::tempdir().unwrap();
    let plugins = tempfile::tempdir().unwrap();
    install_recorder(plugins.path(), "cli-recorder", "");
    let file = cluster.path().join("web.yaml");
    write_atomic(&file, &pod("app: web"));

    let mut child = Running(
        wink()
            .args(["run", "--no-cache", "--plugins"])
            .arg(plugins.path())
            .arg("--source")
            .arg(format!("dir:{}", cluster.path().display()))
            .env("RUST_LOG", "info")
            .env_remove("NO_COLOR")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = Lines::collect(child.0.stdout.take().unwrap());
    let stderr = Lines::collect(child.0.stderr.take().unwrap());

    let event = |line: &str, kind: &str| {
        (line.contains("cli-recorder") && field(line, "event") == Some(kind) && field(line, "key") == Some("shop/web"))
            .then(|| line.to_owned())
    };
    let add = stderr.wait_for("the initial add", |l| event(l, "add"));
    assert_eq!(field(&add, "initial"), Some("true"), "{add}");
    let rv: u64 = field(&add, "rv").unwrap().parse().unwrap();

    write_atomic(&file, &pod("app: web, version: '2'"));
    let update = stderr.wait_for("the update", |l| event(l, "update"));
    assert_eq!(field(&update, "old_rv"), Some(rv.to_string().as_str()), "{update}");
    let new_rv: u64 = field(&update, "new_rv").unwrap().parse().unwrap();
    assert!(new_rv > rv, "{update}");

    std::fs::remove_file(&file).unwrap();
    let delete = stderr.wait_for("the delete", |l| event(l, "delete"));
    assert_eq!(field(&delete, "unknown"), Some("false"), "{delete}");

    let status = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait_exit();
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));

    // The summary: one line per plugin, counting init and the three events.
    let summary = stdout.wait_for("the summary", |l| l.starts_with("plugin=cli-recorder ").then(|| l.to_owned()));
    let calls: u64 = field(&summary, "calls").unwrap().parse().unwrap();
    assert!(calls >= 4, "{summary}");
    assert!(summary.contains(" traps=0 ") && summary.ends_with("quarantined=no"), "{summary}");
    assert_eq!(stdout.snapshot().len(), 1, "one line per plugin: {:?}", stdout.snapshot());
    let stderr = stderr.snapshot();
    assert!(stderr.iter().any(|l| l.contains("shutting down")), "{stderr:?}");
    // Regression: logs written to a pipe used to carry ANSI colour codes.
    assert!(stderr.iter().all(|l| !l.contains('\u{1b}')), "escape codes in piped logs: {stderr:?}");
}

#[test]
fn check_accepts_a_good_plugin_and_prints_what_it_watches() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "resources:\n  - apiVersion: v1\n    kind: Pod\n    namespaces: [shop]\n    resyncPeriod: 30s\n";
    let plugin = {
        let p = install_recorder(dir.path(), "checked", "");
        // Replace the resources with a filtered, resynced one.
        let text = std::fs::read_to_string(p.join("plugin.yaml")).unwrap();
        let head: String =
            text.lines().take_while(|l| !l.starts_with("resources:")).map(|l| format!("{l}\n")).collect();
        std::fs::write(p.join("plugin.yaml"), head + manifest).unwrap();
        p
    };
    let out = check(&plugin, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("plugin checked is valid"), "{stdout}");
    assert!(stdout.contains("implements wink:plugin/handler-plugin@0.1.0"), "{stdout}");
    assert!(stdout.contains("watches v1/Pod in shop, resync every 30s"), "{stdout}");
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
    let out = check(&plugins_dir().join("hostile/wrong-world"), cache.path());
    assert_rejected(&out, &["wrong-world.wasm", "does not implement the wink:plugin/handler-plugin@0.1.0 world"]);
}

#[test]
fn check_rejects_a_component_that_is_not_wasm() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = install_recorder(dir.path(), "text", "");
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
    let plugin = install_recorder(dir.path(), "typo", "colour: blue\n");
    let out = check(&plugin, dir.path());
    assert_rejected(&out, &["plugin.yaml", "unknown field `colour`"]);
}

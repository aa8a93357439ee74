//! A plugin's text cannot forge the host's log lines nor make the host hold it: the
//! `hostile/log-forger` plugin, run by the real `wink` binary, logs messages in which a
//! newline, a carriage return, ANSI escapes, Unicode separators and bidi overrides precede a
//! fake host line (dated `1999-12-31T23:59:59`, naming a plugin `victim`), and returns tens of
//! MB of such text as `retry` and `fatal` reasons and as an `init` refusal.
//!
//! Specifies that, in the text format and in `--log-format json`:
//! - every line the plugin caused is one line, begins with the host's own timestamp, and is
//!   attributed (its first `plugin=` / `listener=` field, or the plugin folder of a refused
//!   deployment) to the plugin that wrote it; no line holds a carriage return, an escape or
//!   another control character, and every JSON line parses;
//! - every guest string in the log is at most 4 KiB plus the truncation marker, which gives
//!   the original length;
//! - the host's memory stays bounded: while each kind of huge string is handled, the peak
//!   resident size of the `wink` process (VmHWM, reset through `/proc/<pid>/clear_refs`
//!   before each step) grows by less than 1.5 times the string's size — the guest's own copy
//!   is resident once, and before the fix the host copied it at least once more.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test hostile_text`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wink::plugin::MAX_GUEST_TEXT;
use wink_tests::binary::wink_binary;
use wink_tests::cluster::Cluster;
use wink_tests::install_plugin;
use wink_tests::process::{Lines, Running};

const FORGER: &str = "log-forger";
const FORGER_INIT: &str = "log-forger-init";
const LABEL: &str = "wink.test/forge";
/// The date of every fake line the plugin writes.
const FAKE_DATE: &str = "1999-12-31T23:59:59";
/// What a line adds to a guest's text: timestamp, level, target, the host's own fields and
/// message, the truncation marker.
const LINE_OVERHEAD: usize = 512;
/// Characters that must never reach the log raw.
const RAW: [char; 9] = ['\r', '\x1b', '\x07', '\0', '\u{85}', '\u{2028}', '\u{2029}', '\u{202e}', '\u{2066}'];

/// The manifest tail of a forger with `size` bytes of filler.
fn manifest(size: usize, init_error: bool) -> String {
    format!(
        "resources:\n  - apiVersion: v1\n    kind: Pod\nlimits:\n  memory: 200Mi\n  callTimeout: 10s\n\
         failurePolicy:\n  onError: skip\n  quarantineAfter: 0\nconfig:\n  size: {size}\n  initError: {init_error}\n"
    )
}

/// Starts `wink run` over `cluster` and `plugins` with a private compile cache, logging in
/// the default format or with `--log-format <format>`.
fn start(cluster: &Cluster, plugins: &Path, cache: &Path, format: Option<&str>) -> Running {
    let format = format.map(|f| ["--log-format", f]);
    Running::spawn(
        Command::new(wink_binary())
            // Started as they deploy: a refused `init` is then a refused deploy, whose line
            // is one of those checked.
            .args(["run", "--metrics-interval", "0", "--start-plugins", "on-deploy", "--plugins"])
            .arg(plugins)
            .arg("--source")
            .arg(format!("dir:{}", cluster.path().display()))
            .arg("--cache-dir")
            .arg(cache)
            .args(format.iter().flatten())
            .env("RUST_LOG", "info,wink::informer::listener=debug")
            .env_remove("NO_COLOR"),
    )
}

/// Waits for a line containing every one of `parts`.
async fn wait_line(lines: &Lines, parts: &[&str]) {
    lines.wait_for(&format!("a line with {parts:?}"), |l| parts.iter().all(|p| l.contains(p)).then_some(())).await;
}

/// A `/proc/<pid>/status` figure, in bytes.
fn status_bytes(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"));
    kib * 1024
}

/// How much the peak resident size of `pid` grows while `trigger` runs and `done` completes.
async fn peak_growth(pid: u32, trigger: impl FnOnce(), done: impl Future<Output = ()>) -> u64 {
    // Writing 5 to clear_refs resets the peak (VmHWM) to the current resident size.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resetting the peak resident size");
    let before = status_bytes(pid, "VmRSS");
    trigger();
    done.await;
    status_bytes(pid, "VmHWM").saturating_sub(before)
}

/// The plugin a text line is attributed to: its first `plugin=` or `listener=` field, or the
/// folder of a refused deployment.
fn attribution(line: &str) -> Option<&str> {
    line.split_whitespace().find_map(|w| {
        let value = w.strip_prefix("plugin=").or_else(|| w.strip_prefix("listener="));
        let folder = || w.strip_prefix("dir=").and_then(|d| d.rsplit('/').next());
        value.map(|v| v.trim_matches('"')).or_else(folder)
    })
}

/// The original length a truncation marker gives.
fn marked_length(text: &str) -> Option<usize> {
    let (_, rest) = text.split_once("…[truncated: ")?;
    rest.split_once(" bytes in all]")?.0.parse().ok()
}

/// Checks every text line (see the module docs); returns how many lines quote a fake line.
fn check_text_lines(lines: &[String], size: usize) -> usize {
    let mut forged = 0;
    for line in lines {
        assert!(!line.contains(RAW), "a raw control character reached the log: {line:?}");
        assert!(line.len() <= MAX_GUEST_TEXT + LINE_OVERHEAD, "a line of {} bytes: {}", line.len(), &line[..200]);
        if let Some(length) = marked_length(line) {
            assert!(length > size, "the marker gives the original length: {length} in {}", &line[..200]);
        }
        if !line.contains(FAKE_DATE) {
            continue;
        }
        forged += 1;
        assert!(!line.starts_with(FAKE_DATE) && line.starts_with("20"), "a forged line: {line}");
        let by = attribution(line);
        assert!(by == Some(FORGER) || by == Some(FORGER_INIT), "attributed to {by:?}: {}", &line[..200]);
    }
    forged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_text_stays_on_one_attributed_line_and_the_host_stays_small() {
    const SIZE: usize = 64 << 20;
    let cluster = Cluster::new();
    let (plugins, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    install_plugin("hostile/log-forger", plugins.path(), FORGER, Some(&manifest(SIZE, false)));
    cluster.put_pod("shop", "calm", &[]);
    let wink = start(&cluster, plugins.path(), cache.path(), None);
    let (stderr, pid) = (wink.stderr.clone(), wink.id());
    wait_line(&stderr, &[FORGER, "seen key=shop/calm"]).await;

    let budget = SIZE as u64 * 3 / 2;
    let mut growth = Vec::new();
    let cluster = &cluster;
    let put = |name: &'static str, what: &'static str| move || drop(cluster.put_pod("shop", name, &[(LABEL, what)]));
    growth.push((
        "a huge log message",
        peak_growth(pid, put("log", "log"), wait_line(&stderr, &[FORGER, "forge done key=shop/log"])).await,
    ));
    growth.push((
        "a huge retry reason",
        peak_growth(pid, put("retry", "retry"), wait_line(&stderr, &[FORGER, "retry attempt 2 key=shop/retry"])).await,
    ));
    growth.push((
        "a huge fatal reason",
        peak_growth(pid, put("fatal", "fatal"), wait_line(&stderr, &["handler failed", "key=shop/fatal"])).await,
    ));
    let install =
        || drop(install_plugin("hostile/log-forger", plugins.path(), FORGER_INIT, Some(&manifest(SIZE, true))));
    growth.push((
        "a huge init refusal",
        peak_growth(pid, install, wait_line(&stderr, &["plugin not deployed", FORGER_INIT])).await,
    ));
    wait_line(&stderr, &[FORGER, "retry attempt 3 key=shop/retry"]).await;

    eprintln!("peak RSS growth of wink (budget {budget} bytes): {growth:?}");
    let lines = stderr.snapshot();
    let dump = || lines.iter().map(|l| l.chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n");
    for (what, grew) in &growth {
        assert!(*grew < budget, "{what} grew the host's peak RSS by {grew} bytes (budget {budget})\n{}", dump());
    }
    let forged = check_text_lines(&lines, SIZE);
    // 4 forged messages + 1 huge message, 2 retry reasons, 1 fatal reason, the init refusal
    // (reported by the plugin runner and by the registry).
    assert!(forged >= 10, "{forged} lines quote a fake line\n{}", dump());
    for message in ["forger says hi\\n1999", "innocent\\r1999", "\\u{1b}[2K\\u{1b}[1G1999", "separators\\u{2028}1999"] {
        let found: Vec<&String> = lines.iter().filter(|l| l.contains(message)).collect();
        assert_eq!(found.len(), 1, "{message}: {found:#?}");
        assert!(found[0].contains(&format!("wink::plugin::guest: plugin=\"{FORGER}\" ")), "{}", found[0]);
    }
    let marked = lines.iter().filter(|l| marked_length(l).is_some()).count();
    assert!(marked >= 5, "log, 2 retries, fatal and init are marked as truncated: {marked}\n{}", dump());
}

/// Every string value of a JSON record's `fields`.
fn field_strings(record: &Value) -> Vec<(&str, &str)> {
    record["fields"]
        .as_object()
        .map_or_else(Vec::new, |fields| fields.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_log_lines_parse_and_attribute_every_guest_string() {
    const SIZE: usize = 16 << 20;
    let cluster = Cluster::new();
    let (plugins, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    install_plugin("hostile/log-forger", plugins.path(), FORGER, Some(&manifest(SIZE, false)));
    install_plugin("hostile/log-forger", plugins.path(), FORGER_INIT, Some(&manifest(SIZE, true)));
    for what in ["log", "retry", "fatal"] {
        cluster.put_pod("shop", what, &[(LABEL, what)]);
    }
    let wink = start(&cluster, plugins.path(), cache.path(), Some("json"));
    let stderr = wink.stderr.clone();
    wait_line(&stderr, &["forge done key=shop/log"]).await;
    wait_line(&stderr, &["retry attempt 3 key=shop/retry"]).await;
    wait_line(&stderr, &["handler failed", "shop/fatal"]).await;
    wait_line(&stderr, &["plugin not deployed", FORGER_INIT]).await;

    let lines = stderr.snapshot();
    let mut forged = 0;
    for line in &lines {
        assert!(line.len() <= MAX_GUEST_TEXT + LINE_OVERHEAD, "a line of {} bytes", line.len());
        let record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let fields = field_strings(&record);
        for (key, value) in &fields {
            assert!(!value.contains(|c: char| c.is_control()), "{key} holds a control character: {value:?}");
        }
        if !line.contains(FAKE_DATE) {
            continue;
        }
        forged += 1;
        let field = |name: &str| fields.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let by = field("plugin").or_else(|| field("listener")).or_else(|| field("dir")?.rsplit('/').next());
        assert!(by == Some(FORGER) || by == Some(FORGER_INIT), "attributed to {by:?}: {record}");
        assert!(record["timestamp"].as_str().is_some_and(|t| !t.starts_with(FAKE_DATE)), "{record}");
    }
    assert!(forged >= 10, "{forged} records quote a fake line:\n{}", lines.join("\n"));
    let guest = lines.iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|r| {
        r["target"] == "wink::plugin::guest"
            && r["fields"]["message"].as_str().is_some_and(|m| m.starts_with("forger says hi"))
    });
    let guest = guest.expect("the first forged message");
    assert_eq!(guest["fields"]["plugin"], FORGER);
    assert!(
        guest["fields"]["message"].as_str().unwrap().starts_with("forger says hi\\n1999-12-31T23:59:59"),
        "{guest}"
    );
}

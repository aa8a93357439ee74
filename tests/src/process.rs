//! The `wink` binary as a child process of a test ([`crate::binary::wink_binary`] finds it):
//! its stdout and stderr collected line by line ([`Lines`]), waits for a line with a generous
//! deadline, SIGTERM and waiting for the exit, and a guard that kills the child if the test
//! fails first ([`Running`]).
//!
//! Waits sleep on tokio's timer, so a server on the test's runtime (the local API server)
//! keeps serving while the test waits.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::recorder::{RecorderLine, Seen, by_key};

/// Far longer than anything takes on an idle machine.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// How often the lines are polled.
const POLL: Duration = Duration::from_millis(25);

/// The lines a child writes to a pipe, collected by a thread.
#[derive(Clone)]
pub struct Lines {
    /// The pipe's name (`stdout`, `stderr`), for failure messages.
    name: &'static str,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Lines {
    /// Collects the lines of `pipe` (named `name` in failure messages) until it closes.
    pub fn collect(name: &'static str, pipe: impl Read + Send + 'static) -> Self {
        let lines = Self { name, lines: Arc::default() };
        let sink = Arc::clone(&lines.lines);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                sink.lock().push(line);
            }
        });
        lines
    }

    /// The lines so far.
    pub fn snapshot(&self) -> Vec<String> {
        self.lines.lock().clone()
    }

    /// Waits until `find` extracts something from the lines so far, and returns it; panics
    /// naming `what`, with the lines, after [`TIMEOUT`].
    pub async fn wait_until<T>(&self, what: &str, find: impl Fn(&[String]) -> Option<T>) -> T {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(found) = find(&self.snapshot()) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; {}:\n{}",
                self.name,
                self.snapshot().join("\n")
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits for a line matching `find` and returns what it extracted.
    pub async fn wait_for<T>(&self, what: &str, find: impl Fn(&str) -> Option<T>) -> T {
        self.wait_until(what, |lines| lines.iter().find_map(|l| find(l))).await
    }

    /// How many of `lines` are `plugin`'s and contain `text`.
    fn count_in(lines: &[String], plugin: &str, text: &str) -> usize {
        lines.iter().filter(|l| l.contains(plugin) && l.contains(text)).count()
    }

    /// How many lines so far are `plugin`'s and contain `text`.
    pub fn count(&self, plugin: &str, text: &str) -> usize {
        Self::count_in(&self.snapshot(), plugin, text)
    }

    /// Waits until more than `before` lines of `plugin` contain `text`.
    pub async fn wait_for_text(&self, plugin: &str, text: &str, before: usize) {
        let what = format!("{plugin} to log {text:?}");
        self.wait_until(&what, |lines| (Self::count_in(lines, plugin, text) > before).then_some(())).await;
    }

    /// The events the event-recorder plugin `plugin` logged so far, per key.
    pub fn recorded(&self, plugin: &str) -> BTreeMap<String, Vec<Seen>> {
        let lines: Vec<RecorderLine> =
            self.snapshot().iter().filter(|l| l.contains(plugin)).filter_map(|l| RecorderLine::parse(l)).collect();
        by_key(&lines)
    }

    /// Waits until the event-recorder plugin `plugin` has logged `event`.
    pub async fn wait_seen(&self, plugin: &str, event: &Seen) {
        self.wait_for(&format!("{plugin} to see {event:?}"), |l| {
            (l.contains(plugin) && RecorderLine::parse(l).is_some_and(|r| &r.seen == event)).then_some(())
        })
        .await
    }
}

/// A running child with its stdout and stderr collected; killed if the test fails before it
/// exits.
pub struct Running {
    child: Child,
    /// What it wrote to stdout.
    pub stdout: Lines,
    /// What it wrote to stderr.
    pub stderr: Lines,
}

impl Running {
    /// Spawns `command` with stdout and stderr piped and collected.
    pub fn spawn(command: &mut Command) -> Self {
        let mut child =
            command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting the child process");
        let stdout = Lines::collect("stdout", child.stdout.take().expect("piped stdout"));
        let stderr = Lines::collect("stderr", child.stderr.take().expect("piped stderr"));
        Self { child, stdout, stderr }
    }

    /// The child's process id (e.g. to read `/proc/<id>/status`).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Kills the child at once (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("running kill");
        assert!(status.success(), "kill -TERM failed ({status})");
    }

    /// Waits for the child to exit (after [`Running::sigterm`]).
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("polling the child") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the child did not exit after SIGTERM; stderr:\n{}",
                self.stderr.snapshot().join("\n")
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of `name=` in a log line.
pub fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

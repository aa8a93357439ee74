//! client-go's SharedIndexInformer as a consumer: the Go program of `benches/client-go/`
//! (client-go's informer of typed Pods with a no-op handler), run as a child process and
//! driven over its stdin and stdout (the line protocol is described in its `main.go`).
//!
//! One program ([`ClientGoPeer`]) serves a whole benchmark; each run starts a new client and
//! informer in it ([`ClientGoPeer::start`] → [`ClientGoConsumer`]) against the local API server
//! the run uses. It does what the other consumers do where they do it, so the figures compare:
//!
//! - its no-op handler reads the Pod's name, then counts the delivery as
//!   [`Progress`](crate::track::Progress) does (one map lookup by name, a comparison of
//!   resourceVersions), in the Go process;
//! - it stamps, with the clock of Rust's [`Instant`] (`CLOCK_MONOTONIC`), the informer's start
//!   (after its client is built, as the Rust consumers' clients are built before their
//!   start), the last listed Pod handled, the opening of its watch gate (a `RoundTripper`
//!   holding WATCH requests, as [`gate`](crate::gate) does for the kube client) and the last
//!   final state handled; in the latency benchmark, each update's handler return;
//! - this side turns those stamps into [`Instant`]s, so the pipe between the processes is
//!   never inside a measured time.
//!
//! The program is found through `WINK_CLIENT_GO_PEER` (set by `cargo xtask bench`; empty when
//! it could not be built), else built or found by `cargo xtask client-go-peer`. Without it
//! (no Go, a failed build) the benchmarks skip the client-go rows and say why.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::cluster::Targets;
use crate::track::Progress;

/// The variable naming the built program (empty: none could be built).
pub const ENV: &str = "WINK_CLIENT_GO_PEER";

/// Where a latency run's handler returns are recorded: `(resourceVersion, when)`.
pub type Updates = Arc<Mutex<Vec<(u64, Instant)>>>;

/// What a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Benchmark 1: the WATCH waits at a closed gate; synced and done are reported.
    Stream,
    /// Benchmark 9: no gate; every update's handler return is reported.
    Latency,
}

impl Mode {
    fn word(self) -> &'static str {
        match self {
            Self::Stream => "stream",
            Self::Latency => "latency",
        }
    }
}

/// Relates `CLOCK_MONOTONIC` readings (what the Go program reports) to [`Instant`]s.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    at: Instant,
    nanos: i128,
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `Instant::now()` reads on Linux.
#[allow(unsafe_code, reason = "clock_gettime writes the timespec it is given; std has no safe reading")]
fn monotonic_nanos() -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC)");
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

impl Anchor {
    /// The pair read in the shortest interval of 100 (well under a microsecond apart).
    fn read() -> Self {
        let mut best: Option<(Duration, Anchor)> = None;
        for _ in 0..100 {
            let before = Instant::now();
            let nanos = monotonic_nanos();
            let gap = before.elapsed();
            if best.is_none_or(|(g, _)| gap < g) {
                best = Some((gap, Anchor { at: before + gap / 2, nanos }));
            }
        }
        best.expect("read at least once").1
    }

    fn instant(&self, nanos: i128) -> Instant {
        let delta = nanos - self.nanos;
        let magnitude = Duration::from_nanos(delta.unsigned_abs().try_into().unwrap_or(u64::MAX));
        if delta >= 0 { self.at + magnitude } else { self.at - magnitude }
    }
}

/// Where the reader thread sends what the current run reports.
#[derive(Default)]
struct Route {
    progress: Option<Arc<Progress>>,
    updates: Option<Updates>,
    /// The informer's start and the gate's opening, as the program stamped them.
    started: Option<Instant>,
    opened: Option<Instant>,
}

/// Counts of the reports that runs wait for.
#[derive(Clone, Copy, Debug, Default)]
struct Signals {
    held: u64,
    stopped: u64,
}

struct Shared {
    anchor: Anchor,
    route: Mutex<Route>,
    signals: watch::Sender<Signals>,
    /// Set when this side ends the program (its exit is then expected).
    closing: AtomicBool,
}

/// The client-go program, running.
pub struct ClientGoPeer {
    child: Mutex<Child>,
    /// `None` once closed (which ends the program).
    stdin: Mutex<Option<BufWriter<ChildStdin>>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ClientGoPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGoPeer").finish_non_exhaustive()
    }
}

/// The built program: `WINK_CLIENT_GO_PEER`, else what `cargo xtask client-go-peer` builds or
/// finds; or why there is none.
pub fn binary() -> Result<PathBuf, String> {
    let path = match std::env::var_os(ENV) {
        Some(path) if path.is_empty() => {
            return Err("`cargo xtask bench` could not build it (its message above says why)".into());
        }
        Some(path) => PathBuf::from(path),
        None => build_with_xtask()?,
    };
    if path.is_file() { Ok(path) } else { Err(format!("{} does not exist", path.display())) }
}

/// Runs `cargo xtask client-go-peer` (which builds the program once per release and change)
/// and reads the path it prints.
fn build_with_xtask() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(wink_tests::repo_root())
        .args(["run", "--quiet", "-p", "xtask", "--", "client-go-peer"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run `cargo xtask client-go-peer`: {e}"))?;
    if !output.status.success() {
        return Err(format!("`cargo xtask client-go-peer` failed ({}; its message above says why)", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(ENV)?.strip_prefix('='))
        .map(PathBuf::from)
        .ok_or_else(|| format!("`cargo xtask client-go-peer` printed no {ENV}=…"))
}

impl ClientGoPeer {
    /// Starts the program, or says (on stderr, naming `bench`) why the client-go rows are
    /// skipped.
    pub fn start_or_skip(bench: &str) -> Option<Arc<Self>> {
        match binary().and_then(|path| Self::spawn(&path)) {
            Ok(peer) => Some(peer),
            Err(why) => {
                eprintln!("{bench}: client-go rows skipped: no client-go consumer: {why}");
                None
            }
        }
    }

    /// Starts the program at `path` and waits until it is ready.
    pub fn spawn(path: &Path) -> Result<Arc<Self>, String> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
        let stdin = BufWriter::new(child.stdin.take().expect("stdin is piped"));
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        if first.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} did not start (it printed {first:?})", path.display()));
        }
        let shared = Arc::new(Shared {
            anchor: Anchor::read(),
            route: Mutex::default(),
            signals: watch::Sender::new(Signals::default()),
            closing: AtomicBool::new(false),
        });
        let reader = shared.clone();
        std::thread::Builder::new()
            .name("client-go-peer".into())
            .spawn(move || read_reports(stdout, &reader))
            .map_err(|e| format!("cannot start the reader thread: {e}"))?;
        Ok(Arc::new(Self { child: Mutex::new(child), stdin: Mutex::new(Some(stdin)), shared }))
    }

    fn send(&self, lines: &str) {
        let mut stdin = self.stdin.lock();
        let stdin = stdin.as_mut().expect("the client-go consumer runs until dropped");
        stdin.write_all(lines.as_bytes()).and_then(|()| stdin.flush()).expect("writing to the client-go consumer");
    }

    /// Starts an informer of Pods against the server of `kubeconfig`, which holds `pods`
    /// Pods, reporting to `progress` (and, in [`Mode::Latency`], each update's handler
    /// return to `updates`).
    pub fn start(
        self: &Arc<Self>,
        kubeconfig: &Path,
        mode: Mode,
        pods: usize,
        progress: Arc<Progress>,
        updates: Option<Updates>,
    ) -> ClientGoConsumer {
        let kubeconfig = kubeconfig.to_str().expect("a UTF-8 kubeconfig path");
        assert!(!kubeconfig.contains(char::is_whitespace), "a kubeconfig path without spaces: {kubeconfig}");
        *self.shared.route.lock() = Route { progress: Some(progress), updates, started: None, opened: None };
        let held = self.shared.signals.borrow().held;
        self.send(&format!("start {} {pods} {kubeconfig}\n", mode.word()));
        ClientGoConsumer { peer: self.clone(), held }
    }
}

impl Drop for ClientGoPeer {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        // Closing stdin ends the program; it is killed if it lingers.
        drop(self.stdin.lock().take());
        let mut child = self.child.lock();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reads the program's reports until it exits.
fn read_reports(stdout: BufReader<std::process::ChildStdout>, shared: &Shared) {
    let instant = |word: Option<&str>| word.and_then(|w| w.parse::<i128>().ok()).map(|n| shared.anchor.instant(n));
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        match words.next() {
            Some("held") => shared.signals.send_modify(|s| s.held += 1),
            Some("stopped") => shared.signals.send_modify(|s| s.stopped += 1),
            Some("synced") => {
                let (started, synced) = (instant(words.next()), instant(words.next()));
                let mut route = shared.route.lock();
                route.started = started;
                if let (Some(progress), Some(at)) = (&route.progress, synced) {
                    progress.synced_at(at);
                }
            }
            Some("done") => {
                let (opened, done) = (instant(words.next()), instant(words.next()));
                let calls = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let mut route = shared.route.lock();
                route.opened = opened;
                if let (Some(progress), Some(at)) = (&route.progress, done) {
                    progress.done_at(at, calls);
                }
            }
            Some("update") => {
                let rv = words.next().and_then(|w| w.parse().ok());
                let at = instant(words.next());
                if let (Some(rv), Some(at), Some(updates)) = (rv, at, &shared.route.lock().updates) {
                    updates.lock().push((rv, at));
                }
            }
            _ => eprintln!("client-go consumer: unexpected report {line:?}"),
        }
    }
    if !shared.closing.load(Ordering::SeqCst) {
        // A run waiting for it would wait forever.
        eprintln!("client-go consumer: the program exited during the benchmark (its stderr above says why)");
        std::process::exit(1);
    }
}

/// One informer started in the client-go program.
pub struct ClientGoConsumer {
    peer: Arc<ClientGoPeer>,
    /// WATCH requests held before this run.
    held: u64,
}

impl std::fmt::Debug for ClientGoConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGoConsumer").finish_non_exhaustive()
    }
}

impl ClientGoConsumer {
    /// The Go program's process id (for its CPU time, [`crate::cpu::of_process`]).
    pub fn pid(&self) -> u32 {
        self.peer.child.lock().id()
    }

    /// Waits until the informer's WATCH is held at its gate ([`Mode::Stream`]).
    pub async fn held(&self) {
        let mut rx = self.peer.shared.signals.subscribe();
        let _ = rx.wait_for(|s| s.held > self.held).await;
    }

    /// Tells the program the final state every Pod must reach (what [`Progress::expect`]
    /// is told on this side).
    pub fn expect(&self, targets: &Targets) {
        let mut lines = format!("expect {}\n", targets.len());
        for (name, rv) in targets.iter() {
            lines.push_str(&format!("{name} {rv}\n"));
        }
        self.peer.send(&lines);
    }

    /// Lets the held WATCH through.
    pub fn open(&self) {
        self.peer.send("open\n");
    }

    /// When the informer started, as the program stamped it (once it reported its sync).
    pub fn started(&self) -> Option<Instant> {
        self.peer.shared.route.lock().started
    }

    /// When its gate opened, as the program stamped it (once it reported the final states).
    pub fn opened(&self) -> Option<Instant> {
        self.peer.shared.route.lock().opened
    }

    /// Stops the informer and waits until the program says it stopped.
    pub async fn stop(self) {
        let mut rx = self.peer.shared.signals.subscribe();
        let stopped = rx.borrow_and_update().stopped;
        self.peer.send("stop\n");
        let _ = rx.wait_for(|s| s.stopped > stopped).await;
        *self.peer.shared.route.lock() = Route::default();
    }
}

//! The stream of benchmarks 1 and 2: 10,000 Pods listed, then 50,000 watch events, from the
//! local API server, through one consumer; timed from start to synced plus from the watch's
//! release to the last final state handled (the events are written while the watch waits at
//! the gate, untimed; the first run writes them, later runs rewind the server and replay them).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client_go::ClientGoConsumer;
use crate::cluster::BenchCluster;
use crate::consumers::{KubeRsConsumer, WinkConsumer};
use crate::gate::{WatchGate, gated_client};
use crate::track::Progress;

/// Pods listed.
pub const OBJECTS: usize = 10_000;
/// Watch events after the list.
pub const EVENTS: usize = 50_000;

/// A running consumer.
#[derive(Debug)]
pub enum Running {
    /// wink's informer.
    Wink(WinkConsumer),
    /// kube-rs's watcher + store.
    KubeRs(KubeRsConsumer),
    /// client-go's informer, in the Go program (started in [`crate::client_go::Mode::Stream`]).
    ClientGo(ClientGoConsumer),
}

impl Running {
    /// Stops it.
    pub async fn stop(self) {
        match self {
            Self::Wink(w) => w.stop().await,
            Self::KubeRs(k) => k.stop().await,
            Self::ClientGo(c) => c.stop().await,
        }
    }

    /// Its own CPU time so far: the process's outside the API server's threads, or the Go
    /// program's ([`crate::cpu`]).
    fn cpu(&self) -> Duration {
        match self {
            Self::ClientGo(c) => crate::cpu::of_process(c.pid()),
            Self::Wink(_) | Self::KubeRs(_) => crate::cpu::outside_server(),
        }
    }

    /// Waits until its first WATCH is held: at `gate` (the kube client's), or at the Go
    /// program's own gate.
    async fn held(&self, gate: &WatchGate) {
        match self {
            Self::ClientGo(c) => c.held().await,
            Self::Wink(_) | Self::KubeRs(_) => gate.held(1).await,
        }
    }

    /// Lets its WATCH through.
    fn open(&self, gate: &WatchGate) {
        match self {
            Self::ClientGo(c) => c.open(),
            Self::Wink(_) | Self::KubeRs(_) => gate.open(),
        }
    }
}

/// One run: the list phase, the watch phase, and the handler calls made (over all
/// listeners; fewer than events × listeners when a busy listener's queue coalesced updates).
#[derive(Clone, Copy, Debug)]
pub struct StreamRun {
    /// From start until every listener received every listed Pod.
    pub list: Duration,
    /// From the watch's release until every listener saw every Pod's final state.
    pub watch: Duration,
    /// Handler calls (or stream events) observed.
    pub calls: u64,
    /// The consumer's own CPU time over both timed phases (see [`crate::cpu`]): the process's
    /// outside the API server's threads, or client-go's program's.
    pub cpu: Duration,
}

impl StreamRun {
    /// `list + watch`.
    pub fn total(&self) -> Duration {
        self.list + self.watch
    }

    /// Objects and events handled per second: `(OBJECTS + EVENTS) / total`.
    pub fn rate(&self) -> f64 {
        (OBJECTS + EVENTS) as f64 / self.total().as_secs_f64()
    }

    /// The headings of [`cells`](Self::cells).
    pub const COLUMNS: [&str; 5] = ["list + sync", "50k events", "total", "events/s", "handler calls"];

    /// The table cells shared by the stream benchmarks: list + sync, watch, total, events/s,
    /// handler calls.
    pub fn cells(&self) -> [String; 5] {
        [
            crate::results::human_duration(self.list),
            crate::results::human_duration(self.watch),
            crate::results::human_duration(self.total()),
            crate::results::thousands(self.rate()),
            crate::results::thousands(self.calls as f64),
        ]
    }

    /// The medians of several runs, phase by phase (calls: the largest).
    pub fn median_of(runs: &[StreamRun]) -> StreamRun {
        let pick = |f: fn(&StreamRun) -> Duration| crate::results::median(&runs.iter().map(f).collect::<Vec<_>>());
        StreamRun {
            list: pick(|r| r.list),
            watch: pick(|r| r.watch),
            calls: runs.iter().map(|r| r.calls).max().unwrap_or(0),
            cpu: pick(|r| r.cpu),
        }
    }
}

/// Runs the stream once through the consumer `start` builds from a gated client and the
/// run's progress, with `listeners` listeners reporting to it. client-go's consumer does
/// not use the client: its own client holds the WATCH in the Go program, which stamps the
/// informer's start and the gate's opening itself (the instants timed from).
pub async fn run_stream(
    cluster: &mut BenchCluster,
    listeners: usize,
    start: impl FnOnce(kube::Client, Arc<Progress>) -> Running,
) -> StreamRun {
    // The previous run's events, undone: this run lists the same Pods and is sent the same
    // events (replayed, not written again; see `BenchCluster::update`).
    cluster.rewind();
    let gate = WatchGate::closed();
    let client = gated_client(cluster.kubeconfig(), gate.clone()).await;
    let progress = Progress::new(cluster.len(), listeners);
    let list_profiled = crate::profile::Section::start_if(crate::profile::Phase::List);
    let started = Instant::now();
    let own_cpu = crate::cpu::outside_server();
    let running = start(client, progress.clone());
    // client-go's program ran before this run (it waits between runs): its count starts
    // once it is told to start, a few microseconds late.
    let cpu_started = if let Running::ClientGo(_) = running { running.cpu() } else { own_cpu };
    let synced = progress.synced().await;
    let list_cpu = running.cpu().saturating_sub(cpu_started);
    drop(list_profiled);
    running.held(&gate).await;
    // Not timed: the server records the events while the consumer's watch waits.
    let targets = cluster.update(EVENTS);
    if let Running::ClientGo(c) = &running {
        c.expect(&targets);
    }
    progress.expect(targets, listeners);
    let profiled = crate::profile::Section::start_if(crate::profile::Phase::Watch);
    let released = Instant::now();
    let cpu_released = running.cpu();
    running.open(&gate);
    let done = progress.done().await;
    let watch_cpu = running.cpu().saturating_sub(cpu_released);
    drop(profiled);
    let (started, released) = match &running {
        Running::ClientGo(c) => (c.started().unwrap_or(started), c.opened().unwrap_or(released)),
        Running::Wink(_) | Running::KubeRs(_) => (started, released),
    };
    let run = StreamRun {
        list: synced - started,
        watch: done - released,
        calls: progress.calls(),
        cpu: list_cpu + watch_cpu,
    };
    running.stop().await;
    run
}

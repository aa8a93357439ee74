//! Profiling one phase of a benchmark with `perf`, leaving out its setup.
//!
//! With `WINK_PERF_CTL=<fifo>` set, [`Section::start`] writes `enable` to that FIFO and
//! dropping the section writes `disable`, which a `perf record` started with
//! `--control fifo:<fifo> --delay=-1` (recording off until enabled) obeys:
//!
//! ```sh
//! mkfifo /tmp/perf.ctl
//! WINK_PERF_CTL=/tmp/perf.ctl perf record -e cpu-clock -g --control fifo:/tmp/perf.ctl --delay=-1 \
//!     target/release/deps/informer_throughput-* --bench --profile-time 5 'informer_throughput/4KB/wink$'
//! ```
//!
//! The stream benchmarks profile their watch phase; `WINK_PERF_PHASE=list` profiles the list
//! and sync phase instead. Without `WINK_PERF_CTL` a section does nothing.

use std::io::Write;

/// A profiled phase: recording is on while it lives.
#[derive(Debug)]
pub struct Section {
    fifo: Option<std::fs::File>,
}

/// A phase of a stream benchmark that can be profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Listing and syncing (`WINK_PERF_PHASE=list`).
    List,
    /// The watch events (the default).
    Watch,
}

impl Phase {
    /// The phase `WINK_PERF_PHASE` chooses.
    fn chosen() -> Self {
        match std::env::var("WINK_PERF_PHASE").as_deref() {
            Ok("list") => Phase::List,
            _ => Phase::Watch,
        }
    }
}

impl Section {
    /// Starts a section if `phase` is the one chosen for profiling, else does nothing.
    pub fn start_if(phase: Phase) -> Self {
        if phase == Phase::chosen() { Self::start() } else { Self { fifo: None } }
    }

    /// Turns recording on (when `WINK_PERF_CTL` names perf's control FIFO).
    pub fn start() -> Self {
        let fifo = std::env::var_os("WINK_PERF_CTL").and_then(|path| {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).ok()?;
            f.write_all(b"enable\n").ok()?;
            Some(f)
        });
        Self { fifo }
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        if let Some(f) = &mut self.fifo {
            let _ = f.write_all(b"disable\n");
        }
    }
}

//! Faults the test arms on the local API server: error answers for the next N requests of
//! some verbs, response delays, watch frames split across chunks, and how the server treats
//! streaming lists. (Faults that act on open watches — drops, malformed frames, ERROR
//! events — act at once through the [`layer`](super::layer)'s open watches.)

use std::collections::HashMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What kind of request the server received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Discovery and version documents (`/api`, `/apis/...`, `/version`).
    Discovery,
    /// LIST of a collection.
    List,
    /// WATCH of a collection (`?watch=1`).
    Watch,
    /// GET of one object.
    Get,
    /// A write: POST, PUT, PATCH or DELETE of a resource.
    Write,
    /// Anything else (unknown paths, other methods).
    Other,
}

impl Verb {
    /// The verbs that read resources (not discovery).
    pub const RESOURCES: &'static [Verb] = &[Verb::List, Verb::Watch, Verb::Get];
}

/// How the server answers a streaming list (`sendInitialEvents=true`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchListSupport {
    /// As Kubernetes ≥ 1.27 with the WatchList feature: initial ADDED events, then a
    /// bookmark annotated `k8s.io/initial-events-end: "true"`.
    #[default]
    Supported,
    /// As a server with the feature off: `422 Invalid` ("sendInitialEvents is forbidden for
    /// watch unless the WatchList feature gate is enabled").
    Rejected,
    /// As a server that predates the parameters and ignores them: a plain watch (synthetic
    /// ADDED events of the current state, then changes); the end-of-initial-events bookmark
    /// never comes, only ordinary bookmarks.
    Ignored,
}

struct ErrorFault {
    verbs: Vec<Verb>,
    remaining: usize,
    code: u16,
}

/// The armed faults.
pub(crate) struct Faults {
    errors: Vec<ErrorFault>,
    delays: HashMap<Verb, Duration>,
    pub split_frames: bool,
    pub retry_after_secs: u64,
    pub watch_list: WatchListSupport,
    rng: StdRng,
}

impl Faults {
    pub(crate) fn new(seed: u64, watch_list: WatchListSupport, retry_after_secs: u64) -> Self {
        Self {
            errors: Vec::new(),
            delays: HashMap::new(),
            split_frames: false,
            retry_after_secs,
            watch_list,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    pub(crate) fn fail_next(&mut self, verbs: &[Verb], count: usize, code: u16) {
        if count > 0 {
            self.errors.push(ErrorFault { verbs: verbs.to_vec(), remaining: count, code });
        }
    }

    pub(crate) fn clear_errors(&mut self) {
        self.errors.clear();
    }

    /// The error code to answer this request with, if one is armed for its verb.
    pub(crate) fn take_error(&mut self, verb: Verb) -> Option<u16> {
        let fault = self.errors.iter_mut().find(|f| f.remaining > 0 && f.verbs.contains(&verb))?;
        fault.remaining -= 1;
        let code = fault.code;
        self.errors.retain(|f| f.remaining > 0);
        Some(code)
    }

    pub(crate) fn set_delay(&mut self, verbs: &[Verb], delay: Option<Duration>) {
        for verb in verbs {
            match delay {
                Some(d) => self.delays.insert(*verb, d),
                None => self.delays.remove(verb),
            };
        }
    }

    pub(crate) fn delay(&self, verb: Verb) -> Option<Duration> {
        self.delays.get(&verb).copied()
    }

    /// Error answers still armed.
    pub(crate) fn pending_errors(&self) -> usize {
        self.errors.iter().map(|f| f.remaining).sum()
    }

    /// Random cut points for `chunk` (1 to max(3, its frames) cuts), when splitting is on.
    /// Its frames are counted only then: a watch's every chunk passes here.
    pub(crate) fn split_points(&mut self, chunk: &[u8]) -> Vec<usize> {
        let len = chunk.len();
        if !self.split_frames || len < 2 {
            return Vec::new();
        }
        let frames = memchr::memchr_iter(b'\n', chunk).count();
        let cuts = self.rng.random_range(1..=frames.max(3).min(len - 1));
        let mut points: Vec<usize> = (0..cuts).map(|_| self.rng.random_range(1..len)).collect();
        points.sort_unstable();
        points.dedup();
        points
    }
}

//! The benchmarks' cluster: the tests' local API server (the real list/watch protocol on
//! loopback) filled with the generated Pods of [`workload`](crate::workload).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use wink::embedded::EmbeddedCluster;
use wink::embedded::{MemorySource, Recorded};
use wink::informer::split_key;
use wink_tests::apiserver::{ApiServer, ServerOptions};

use crate::workload::{self, PodSize};

/// Final resourceVersions by Pod name: what a consumer must have seen to be done.
pub type Targets = Arc<HashMap<String, u64>>;

/// A local API server holding generated Pods.
pub struct BenchCluster {
    /// The server.
    pub server: ApiServer,
    size: PodSize,
    count: usize,
    /// The Pods as last written (empty for a read-only cluster).
    pods: Vec<Value>,
    seq: u64,
    next: usize,
    /// The last [`update`](Self::update)'s events, to serve again after a rewind.
    recording: Option<Recording>,
}

/// The events one [`BenchCluster::update`] wrote.
struct Recording {
    /// The resourceVersion before them.
    base: u64,
    events: usize,
    targets: Targets,
    /// Set while they are rewound (undone, waiting to be replayed).
    rewound: Option<Recorded>,
}

impl std::fmt::Debug for BenchCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchCluster").field("size", &self.size).field("pods", &self.pods.len()).finish()
    }
}

fn name_of(pod: &Value) -> String {
    pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl BenchCluster {
    /// Starts a server that keeps `history` changes for watches (it must hold every event a
    /// benchmark writes while a consumer's watch is held) and creates `count` Pods of `size`.
    /// No periodic bookmarks: the stream is exactly the events written.
    pub async fn start(size: PodSize, count: usize, history: usize) -> Self {
        Self::build(size, count, history, true).await
    }

    /// A cluster of `count` Pods that will not be updated: the benchmark keeps no copy of
    /// them (only the server holds them), for memory measurements with many objects.
    pub async fn start_read_only(size: PodSize, count: usize) -> Self {
        Self::build(size, count, 1, false).await
    }

    async fn build(size: PodSize, count: usize, history: usize, keep: bool) -> Self {
        let options =
            ServerOptions { history_limit: history.max(1), bookmark_interval: None, ..ServerOptions::default() };
        let server = ApiServer::start_with(options).await.expect("starting the local API server");
        let mut pods = Vec::new();
        for i in 0..count {
            let pod = workload::pod(size, &workload::namespace(i, workload::NAMESPACES), i);
            server.apply(pod.clone()).expect("creating a Pod");
            if keep {
                pods.push(pod);
            }
        }
        Self { server, size, count, pods, seq: 0, next: 0, recording: None }
    }

    /// The Pods' size.
    pub fn size(&self) -> PodSize {
        self.size
    }

    /// The number of Pods.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no Pods.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The server's kubeconfig.
    pub fn kubeconfig(&self) -> &std::path::Path {
        self.server.kubeconfig()
    }

    /// The average size of a Pod's JSON as the server stores and serves it (watch events and
    /// GET carry this; LIST items lack `apiVersion` and `kind`).
    pub fn average_json_size(&self) -> f64 {
        let objects = self.server.objects("v1", "Pod");
        let total: usize = objects.iter().map(|o| o.to_string().len()).sum();
        total as f64 / objects.len().max(1) as f64
    }

    /// Every Pod's current resourceVersion, by name.
    pub fn current(&self) -> Targets {
        let versions = self.server.versions("v1", "Pod").into_iter();
        Arc::new(versions.map(|(key, rv)| (split_key(&key).1.to_owned(), rv.parse().unwrap_or(0))).collect())
    }

    /// The Pods' store in the server.
    fn pods_source(&self) -> MemorySource {
        self.server.cluster().collection("v1", "Pod").expect("Pods are served").source.clone()
    }

    /// Writes `events` status updates, round-robin over the Pods (as kubelets do), and
    /// returns every Pod's resourceVersion afterwards. After a [`rewind`](Self::rewind) and
    /// for the same number of events, the events written last time are replayed instead:
    /// the same changes, resourceVersions and objects, recorded again without paying the
    /// server's write path a second time (consumers see exactly the same list and watch).
    pub fn update(&mut self, events: usize) -> Targets {
        let source = self.pods_source();
        if let Some(recording) = &mut self.recording
            && recording.events == events
            && let Some(recorded) = recording.rewound.take()
        {
            source.replay(&recorded).expect("replaying the recorded events");
            return recording.targets.clone();
        }
        let base = source.resource_version();
        for _ in 0..events {
            self.update_one_stamped();
        }
        let targets = self.current();
        self.recording = Some(Recording { base, events, targets: targets.clone(), rewound: None });
        targets
    }

    /// Puts the server back to its state before the last [`update`](Self::update)'s events
    /// (see [`MemorySource::rewind`]); the next `update` of as many events replays them.
    /// Does nothing when no update was recorded or it is already rewound.
    pub fn rewind(&mut self) {
        let source = self.pods_source();
        if let Some(recording) = &mut self.recording
            && recording.rewound.is_none()
        {
            recording.rewound = Some(source.rewind(recording.base).expect("rewinding the recorded events"));
        }
    }

    /// Writes `events` status updates and undoes them, returning them to be replayed
    /// ([`replay`](Self::replay), in parts at a pace with [`Recorded::into_parts`]): a writer
    /// that replays pays the server's write path before the measurement instead of during
    /// it, on the cores the consumer runs on. Every recorded change must be replayed, in
    /// order, before the next write.
    pub fn prerecord(&mut self, events: usize) -> Recorded {
        let source = self.pods_source();
        let base = source.resource_version();
        for _ in 0..events {
            self.update_one_stamped();
        }
        source.rewind(base).expect("rewinding the prerecorded events")
    }

    /// Records `part` of what [`prerecord`](Self::prerecord) undid again: the same changes,
    /// resourceVersions and objects reach the store and every open watch.
    pub fn replay(&self, part: &Recorded) {
        self.pods_source().replay(part).expect("replaying prerecorded events in order");
    }

    /// Writes one status update (the next Pod in round-robin order); returns its name and
    /// new resourceVersion. Panics on a read-only cluster.
    pub fn update_one(&mut self) -> (String, u64) {
        let (name, rv, _) = self.update_one_stamped();
        (name, rv)
    }

    /// [`update_one`](Self::update_one), also returning the instant the update was committed
    /// (see [`ApiServer::update_status`](wink_tests::apiserver::ApiServer::update_status)):
    /// the status alone is written, as a kubelet reports it.
    pub fn update_one_stamped(&mut self) -> (String, u64, Instant) {
        assert!(!self.pods.is_empty(), "a read-only cluster is not updated");
        // A write of its own makes the recorded events no longer the last ones.
        self.recording = None;
        let i = self.next;
        self.next = (self.next + 1) % self.pods.len();
        self.seq += 1;
        let pod = &mut self.pods[i];
        workload::touch(pod, self.seq);
        let (rv, committed) = self.server.update_status(pod).expect("updating a Pod's status");
        (name_of(pod), rv, committed)
    }
}

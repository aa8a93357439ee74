//! Recording what informers deliver ([`Recorder`], an [`EventHandler`]): each notification
//! becomes one line of the [recording format](super::format), written as it arrives.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::format::{FORMAT, Line, VERSION, to_line};
use crate::informer::{DONE, EventHandler, HandlerResult, Object};

/// Where lines go, shared by every resource's recorder.
pub struct Sink {
    out: Mutex<Box<dyn Write + Send>>,
    started: Instant,
    written: AtomicU64,
    max_events: Option<u64>,
    /// Fired once `max_events` lines are written.
    full: CancellationToken,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("written", &self.written).finish_non_exhaustive()
    }
}

impl Sink {
    /// A sink writing to `out`, after the header; `full` fires after `max_events` events.
    pub fn new(
        mut out: Box<dyn Write + Send>,
        source: &str,
        resources: Vec<String>,
        max_events: Option<u64>,
        full: CancellationToken,
    ) -> std::io::Result<Arc<Self>> {
        let started = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let header =
            Line::Header { format: FORMAT.into(), version: VERSION, started, source: source.into(), resources };
        out.write_all(to_line(&header).as_bytes())?;
        out.flush()?;
        Ok(Arc::new(Self {
            out: Mutex::new(out),
            started: Instant::now(),
            written: AtomicU64::new(0),
            max_events,
            full,
        }))
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    fn write(&self, line: &Line) {
        if self.max_events.is_some_and(|max| self.written() >= max) {
            return;
        }
        let mut out = self.out.lock();
        if let Err(err) = out.write_all(to_line(line).as_bytes()).and_then(|()| out.flush()) {
            tracing::error!(error = %err, "cannot write the recording");
            self.full.cancel();
            return;
        }
        let written = self.written.fetch_add(1, Ordering::Relaxed) + 1;
        if self.max_events.is_some_and(|max| written >= max) {
            self.full.cancel();
        }
    }

    fn at_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

fn value(obj: &Object) -> Value {
    obj.to_value().unwrap_or(Value::Null)
}

/// Records one resource's notifications into a [`Sink`].
#[derive(Debug)]
pub struct Recorder {
    resource: String,
    sink: Arc<Sink>,
}

impl Recorder {
    /// A recorder of `resource` (`apiVersion/Kind`).
    pub fn new(resource: String, sink: Arc<Sink>) -> Self {
        Self { resource, sink }
    }
}

#[async_trait]
impl EventHandler for Recorder {
    async fn on_add(&self, obj: &Object, is_initial_list: bool) -> HandlerResult {
        let resource = self.resource.clone();
        self.sink.write(&Line::Add {
            at_ms: self.sink.at_ms(),
            resource,
            initial: is_initial_list,
            object: value(obj),
        });
        DONE
    }

    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        let resource = self.resource.clone();
        self.sink.write(&Line::Update { at_ms: self.sink.at_ms(), resource, old: value(old), object: value(new) });
        DONE
    }

    async fn on_delete(&self, obj: &Object, final_state_unknown: bool) -> HandlerResult {
        let (resource, unknown) = (self.resource.clone(), final_state_unknown);
        self.sink.write(&Line::Delete { at_ms: self.sink.at_ms(), resource, unknown, object: value(obj) });
        DONE
    }
}

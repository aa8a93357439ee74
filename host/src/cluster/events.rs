//! [`EventRecorder`]: Events (events.k8s.io/v1) about objects, aggregated as client-go's
//! recorder (`k8s.io/client-go/tools/events`) does.
//!
//! Events are isomorphic when they agree on the object they are about, type, reason, action,
//! note and reporting controller. The first is created; the second turns it into a series
//! (`series.count: 2`) with a patch; later ones only count up in memory, and a heartbeat every
//! [`REFRESH`] patches each series whose count moved. A series unobserved for [`REFRESH`] is
//! forgotten, so the next isomorphic Event starts a new one. So a plugin that records the
//! same Event on every call costs the API server two requests per six minutes per object, not
//! one per call.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use super::{Cause, ClusterClient, Identity, PatchType, Request, RequestError, Verb};

/// How often series are refreshed, and how long an unobserved series is kept.
pub(crate) const REFRESH: Duration = Duration::from_secs(6 * 60);

/// The most series remembered per recorder (the oldest are forgotten first).
const MAX_SERIES: usize = 4096;

/// The most bytes of a note kept (the API server refuses notes above 1 KiB).
const MAX_NOTE: usize = 1024;

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Information.
    Normal,
    /// Needs attention.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The object an Event is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Regarding {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// The namespace (none: cluster-scoped; the Event then goes to `default`).
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
    /// The uid (may be empty).
    pub uid: String,
}

/// One Event to record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventSpec {
    /// What it is about.
    pub regarding: Regarding,
    /// Its type.
    pub event_type: EventType,
    /// UpperCamelCase reason.
    pub reason: String,
    /// UpperCamelCase action.
    pub action: String,
    /// Human-readable note.
    pub note: String,
}

/// The longest `reason` and `action` the API server accepts.
pub(crate) const REASON_MAX: usize = 128;
/// The longest `note` the API server accepts, in bytes.
pub(crate) const NOTE_MAX: usize = 1024;

impl EventSpec {
    /// Checks the fields the API server bounds (`reason` and `action`: 1 to 128 characters,
    /// `note`: at most 1 KiB), before anything is sent or kept for aggregation.
    pub fn check(&self) -> Result<(), RequestError> {
        let mut causes = Vec::new();
        for (field, value) in [("reason", &self.reason), ("action", &self.action)] {
            if value.is_empty() {
                causes.push(Cause {
                    field: field.into(),
                    reason: "FieldValueRequired".into(),
                    message: "Required value".into(),
                });
            } else if value.len() > REASON_MAX {
                causes.push(too_long(field, REASON_MAX));
            }
        }
        if self.note.len() > NOTE_MAX {
            causes.push(too_long("note", NOTE_MAX));
        }
        if causes.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        Err(RequestError::Invalid { message: format!("Event is invalid: {}", listed.join(", ")), causes })
    }
}

fn too_long(field: &str, max: usize) -> Cause {
    Cause {
        field: field.into(),
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"\": can have at most {max} characters"),
    }
}

struct Series {
    namespace: String,
    name: String,
    count: u64,
    /// The count the server has.
    sent: u64,
    last_observed: SystemTime,
}

struct Inner {
    client: Arc<dyn ClusterClient>,
    controller: String,
    instance: String,
    series: Mutex<HashMap<EventSpec, Series>>,
}

/// Records Events through a client, aggregating isomorphic ones. Cheap to clone.
#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder").field("controller", &self.inner.controller).finish_non_exhaustive()
    }
}

/// A `MicroTime`: RFC 3339 with microseconds.
fn micro_time(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

impl EventRecorder {
    /// A recorder whose Events name `controller` as their reporting controller (a plugin's
    /// name) and this host as the reporting instance.
    pub fn new(client: Arc<dyn ClusterClient>, controller: String) -> Self {
        let host = std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "wink".to_owned());
        let instance = format!("{controller}-{host}");
        Self { inner: Arc::new(Inner { client, controller, instance, series: Mutex::default() }) }
    }

    /// Records one Event: creates it, or counts it into the series of an isomorphic one.
    pub async fn record(&self, mut spec: EventSpec, identity: Option<&Identity>) -> Result<(), RequestError> {
        if spec.note.len() > MAX_NOTE {
            let mut end = MAX_NOTE;
            while !spec.note.is_char_boundary(end) {
                end -= 1;
            }
            spec.note.truncate(end);
        }
        let now = SystemTime::now();
        let patch = {
            let mut series = self.inner.series.lock();
            forget_stale(&mut series, now);
            match series.get_mut(&spec) {
                Some(s) if s.count >= 2 => {
                    s.count += 1;
                    s.last_observed = now;
                    return Ok(());
                }
                Some(s) => {
                    s.count = 2;
                    s.last_observed = now;
                    Some((s.namespace.clone(), s.name.clone()))
                }
                None => None,
            }
        };
        match patch {
            Some((namespace, name)) => {
                self.patch_series(&namespace, &name, 2, now, identity).await?;
                if let Some(s) = self.inner.series.lock().get_mut(&spec) {
                    s.sent = s.sent.max(2);
                }
                Ok(())
            }
            None => self.create(spec, now, identity).await,
        }
    }

    async fn create(&self, spec: EventSpec, now: SystemTime, identity: Option<&Identity>) -> Result<(), RequestError> {
        let namespace = spec.regarding.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let nanos = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let name = format!("{}.{nanos:x}", spec.regarding.name);
        let r = &spec.regarding;
        let mut regarding = serde_json::json!({"apiVersion": r.api_version, "kind": r.kind, "name": r.name});
        if let Some(ns) = &r.namespace {
            regarding["namespace"] = ns.clone().into();
        }
        if !r.uid.is_empty() {
            regarding["uid"] = r.uid.clone().into();
        }
        let event = serde_json::json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": self.inner.controller,
            "reportingInstance": self.inner.instance,
            "action": spec.action,
            "reason": spec.reason,
            "regarding": regarding,
            "note": spec.note,
            "type": spec.event_type.as_str(),
        });
        let request = Request::new(Verb::Create, "events.k8s.io/v1", "Event", Some(namespace.clone()), name.clone())
            .with_body(event.to_string());
        self.inner.client.execute(request, identity).await?;
        let mut series = self.inner.series.lock();
        if series.len() >= MAX_SERIES
            && let Some(oldest) = series.iter().min_by_key(|(_, s)| s.last_observed).map(|(k, _)| k.clone())
        {
            series.remove(&oldest);
        }
        series.insert(spec, Series { namespace, name, count: 1, sent: 1, last_observed: now });
        Ok(())
    }

    async fn patch_series(
        &self,
        namespace: &str,
        name: &str,
        count: u64,
        last_observed: SystemTime,
        identity: Option<&Identity>,
    ) -> Result<(), RequestError> {
        let patch = serde_json::json!({"series": {"count": count, "lastObservedTime": micro_time(last_observed)}});
        let request =
            Request::new(Verb::Patch(PatchType::Merge), "events.k8s.io/v1", "Event", Some(namespace.to_owned()), name)
                .with_body(patch.to_string());
        self.inner.client.execute(request, identity).await.map(drop)
    }

    /// Sends the counts of series that moved since they were last sent, and forgets series
    /// unobserved for [`REFRESH`]. Called every [`REFRESH`] by [`run_heartbeat`](Self::run_heartbeat).
    pub async fn refresh(&self, identity: Option<&Identity>) {
        let now = SystemTime::now();
        let due: Vec<(EventSpec, String, String, u64, SystemTime)> = {
            let mut series = self.inner.series.lock();
            forget_stale(&mut series, now);
            series
                .iter()
                .filter(|(_, s)| s.count > s.sent)
                .map(|(k, s)| (k.clone(), s.namespace.clone(), s.name.clone(), s.count, s.last_observed))
                .collect()
        };
        for (spec, namespace, name, count, observed) in due {
            match self.patch_series(&namespace, &name, count, observed, identity).await {
                Ok(()) => {
                    if let Some(s) = self.inner.series.lock().get_mut(&spec) {
                        s.sent = s.sent.max(count);
                    }
                }
                Err(error) => {
                    tracing::debug!(controller = %self.inner.controller, %error, event = %name, "cannot refresh an Event series");
                }
            }
        }
    }

    /// Refreshes series every [`REFRESH`] until the recorder's last other clone is gone.
    pub async fn run_heartbeat(self, identity: Option<Identity>) {
        let weak = Arc::downgrade(&self.inner);
        drop(self);
        let mut tick = tokio::time::interval(REFRESH);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            EventRecorder { inner }.refresh(identity.as_ref()).await;
        }
    }

    /// The count recorded for an Event (tests, diagnostics).
    pub fn count(&self, spec: &EventSpec) -> Option<u64> {
        self.inner.series.lock().get(spec).map(|s| s.count)
    }
}

fn forget_stale(series: &mut HashMap<EventSpec, Series>, now: SystemTime) {
    series.retain(|_, s| now.duration_since(s.last_observed).unwrap_or_default() < REFRESH);
}

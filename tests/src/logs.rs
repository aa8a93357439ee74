//! Capturing `tracing` output in memory, so tests can read what plugins logged and what the
//! host reported about them.
//!
//! Plugin calls run on tokio workers and on blocking threads, so a per-test (thread-local)
//! subscriber would miss them: [`logs`] installs one global subscriber per test binary that
//! records every event of the `wink` targets at debug level and above, and every record
//! plugins log (the guest target, [`LOG_TARGET`]) at every level, trace included (the
//! conformance suite checks each level). A test binary can install only one global
//! subscriber, so every test that reads logs goes through this one. Tests in one binary run
//! concurrently and share it, so each test gives its plugins unique names and reads only
//! their records ([`Logs::guest_records`], [`Logs::guest_lines`], [`Logs::host_records`],
//! [`Logs::recorded`]).
//!
//! With `RUST_LOG` set, events are also printed to stderr (filtered by it), for debugging.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use wink::plugin::LOG_TARGET;

use crate::recorder::RecorderLine;

/// One captured event.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its level.
    pub level: Level,
    /// Its target (plugin logs: `wink::plugin::guest`).
    pub target: String,
    /// The message.
    pub message: String,
    /// The other fields, formatted (strings without quotes).
    pub fields: BTreeMap<String, String>,
}

impl Record {
    /// A field's value.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// Whether this is a plugin's own log record.
    pub fn is_guest(&self) -> bool {
        self.target == LOG_TARGET
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.level, self.target, self.message)?;
        for (k, v) in &self.fields {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Visitor {
    message: String,
    fields: BTreeMap<String, String>,
}

impl Visit for Visitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.message);
        } else {
            self.fields.insert(field.name().to_owned(), value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields.insert(field.name().to_owned(), format!("{value:?}"));
        }
    }
}

/// Every event captured so far, in the order they were emitted.
#[derive(Default)]
pub struct Logs {
    records: Mutex<Vec<Arc<Record>>>,
}

struct Capture(&'static Logs);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut visitor = Visitor::default();
        event.record(&mut visitor);
        let meta = event.metadata();
        let record = Record {
            level: *meta.level(),
            target: meta.target().to_owned(),
            message: visitor.message,
            fields: visitor.fields,
        };
        self.0.records.lock().push(Arc::new(record));
    }
}

/// The captured events of this test binary; installs the global subscriber on first use.
pub fn logs() -> &'static Logs {
    static LOGS: OnceLock<&'static Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Logs = Box::leak(Box::default());
        let targets =
            Targets::new().with_target("wink", LevelFilter::DEBUG).with_target(LOG_TARGET, LevelFilter::TRACE);
        let capture = Capture(logs).with_filter(targets);
        let print = std::env::var_os("RUST_LOG").map(|_| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(tracing_subscriber::EnvFilter::from_default_env())
        });
        let subscriber = tracing_subscriber::registry().with(capture).with(print);
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in the integration tests");
        logs
    })
}

impl Logs {
    /// Every record so far.
    pub fn records(&self) -> Vec<Arc<Record>> {
        self.records.lock().clone()
    }

    /// The records a plugin logged (at every level), in order.
    pub fn guest_records(&self, plugin: &str) -> Vec<Arc<Record>> {
        self.records.lock().iter().filter(|r| r.is_guest() && r.field("plugin") == Some(plugin)).cloned().collect()
    }

    /// The messages a plugin logged, in order.
    pub fn guest_lines(&self, plugin: &str) -> Vec<String> {
        self.guest_records(plugin).iter().map(|r| r.message.clone()).collect()
    }

    /// What the host (not the plugin itself) reported about a plugin: records outside the
    /// guest target with a `plugin` field naming it.
    pub fn host_records(&self, plugin: &str) -> Vec<Arc<Record>> {
        self.records.lock().iter().filter(|r| !r.is_guest() && r.field("plugin") == Some(plugin)).cloned().collect()
    }

    /// The events an event-recorder plugin was told about, in order.
    pub fn recorded(&self, plugin: &str) -> Vec<RecorderLine> {
        self.guest_lines(plugin).iter().filter_map(|l| RecorderLine::parse(l)).collect()
    }

    /// Everything captured about a plugin (its own lines and the host's), for failure
    /// messages.
    pub fn dump(&self, plugin: &str) -> String {
        let lines: Vec<String> =
            self.records.lock().iter().filter(|r| r.field("plugin") == Some(plugin)).map(ToString::to_string).collect();
        format!("records about {plugin}:\n  {}", lines.join("\n  "))
    }
}

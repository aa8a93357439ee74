//! Every record plugins log, at every level (trace included), captured in memory.
//!
//! Guest calls run on tokio workers and on blocking threads, so a thread-local subscriber
//! would miss them: [`guest_log`] installs one global subscriber for the test binary that
//! keeps each record of the guest target ([`LOG_TARGET`]) with its plugin, level and message.
//! Tests in one binary run concurrently and share it; each reads the records of its own
//! plugin names. With `RUST_LOG` set, every event is also printed to stderr.
//!
//! (`logs` keeps the host's records too, from debug level up; this one keeps only guest
//! records, and keeps trace: the conformance suite checks every log level.)

use std::fmt;
use std::sync::OnceLock;

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use wink::plugin::imports::log::LOG_TARGET;

/// One record a plugin logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestRecord {
    /// The plugin's name.
    pub plugin: String,
    /// The level it logged at.
    pub level: Level,
    /// The message.
    pub message: String,
}

impl fmt::Display for GuestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>5} {}", self.level, self.message)
    }
}

/// The records captured so far.
#[derive(Default)]
pub struct GuestLog {
    records: Mutex<Vec<GuestRecord>>,
}

impl GuestLog {
    /// The records of `plugin`, in the order they were logged.
    pub fn of(&self, plugin: &str) -> Vec<GuestRecord> {
        self.records.lock().iter().filter(|r| r.plugin == plugin).cloned().collect()
    }

    /// The messages of `plugin`, in order.
    pub fn messages(&self, plugin: &str) -> Vec<String> {
        self.of(plugin).into_iter().map(|r| r.message).collect()
    }

    /// The records of `plugin`, one per line, for failure messages.
    pub fn dump(&self, plugin: &str) -> String {
        let lines: Vec<String> = self.of(plugin).iter().map(ToString::to_string).collect();
        format!("{plugin} logged:\n  {}", lines.join("\n  "))
    }
}

#[derive(Default)]
struct Fields {
    plugin: Option<String>,
    message: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "plugin" => self.plugin = Some(value.to_owned()),
            "message" => value.clone_into(&mut self.message),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "plugin" => self.plugin = Some(format!("{value:?}").trim_matches('"').to_owned()),
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

struct Capture(&'static GuestLog);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(plugin) = fields.plugin {
            let record = GuestRecord { plugin, level: *event.metadata().level(), message: fields.message };
            self.0.records.lock().push(record);
        }
    }
}

/// The guest records of this test binary; installs the global subscriber on first use.
///
/// # Panics
/// If another global subscriber was installed first in this test binary.
pub fn guest_log() -> &'static GuestLog {
    static LOG: OnceLock<&'static GuestLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let log: &'static GuestLog = Box::leak(Box::default());
        let capture = Capture(log).with_filter(Targets::new().with_target(LOG_TARGET, LevelFilter::TRACE));
        let print = std::env::var_os("RUST_LOG").map(|_| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(tracing_subscriber::EnvFilter::from_default_env())
        });
        let subscriber = tracing_subscriber::registry().with(capture).with(print);
        tracing::subscriber::set_global_default(subscriber)
            .expect("guest_log() installs the only global subscriber of its test binary");
        log
    })
}

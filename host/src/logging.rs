//! The `wink` command's log output: human-readable text (the default) or JSON, one object per
//! line, as log shippers (Fluent Bit, Vector, Loki's promtail…) expect.
//!
//! Both formats go to one writer (stderr for `wink run`) through the same filter
//! (`RUST_LOG`, default `info,cranelift=warn,wasmtime=warn`). In JSON, an event's fields are
//! the keys of its `fields` object: a plugin's record is
//! `{"timestamp":…,"level":"INFO","fields":{"plugin":"web-auditor","message":"…"},"target":"wink::plugin::guest"}`,
//! so the plugin's name is a key the guest's text cannot write.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::{SubscriberInitExt, TryInitError};

/// The format of the log lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colours only on a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter of `wink`'s log: `RUST_LOG` if set, else info (wasmtime and cranelift at warn).
pub(crate) fn default_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,cranelift=warn,wasmtime=warn".into())
}

/// A subscriber writing `format` lines through `writer`; `ansi` colours text lines.
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
    ansi: bool,
) -> Box<dyn tracing::Subscriber + Send + Sync + 'static>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.with_ansi(ansi).finish()),
        LogFormat::Json => Box::new(builder.json().finish()),
    }
}

/// Installs the process-wide subscriber: `format` lines on stderr, coloured only when stderr
/// is a terminal (logs piped to a file or a collector stay plain), with [`default_filter`].
pub fn init(format: LogFormat) -> Result<(), TryInitError> {
    use std::io::IsTerminal;
    subscriber(format, default_filter(), std::io::stderr, std::io::stderr().is_terminal()).try_init()
}

/// A log writer for tests: keeps what a subscriber wrote, shared with the test.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Captured(pub(crate) std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

#[cfg(test)]
impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::contract::bindings::log::Level;
    use crate::plugin::imports::log::LogSink;

    /// The lines written in `format` while `f` runs.
    fn lines(format: LogFormat, f: impl FnOnce()) -> Vec<String> {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = subscriber(format, EnvFilter::new("info"), move || writer.clone(), false);
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(captured.0.lock().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }

    fn emit() {
        let mut sink = LogSink::new("web-auditor".into());
        sink.log(Level::Info, "ok\n{\"level\":\"ERROR\",\"fields\":{\"plugin\":\"victim\"}}".into());
        tracing::warn!(plugin = "web-auditor", key = "shop/web", "handler failed; event dropped");
    }

    #[test]
    fn json_lines_parse_and_carry_the_plugin_as_a_key() {
        let lines = lines(LogFormat::Json, emit);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        let records: Vec<serde_json::Value> =
            lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
        let guest = &records[0];
        assert_eq!(guest["level"], "INFO");
        assert_eq!(guest["target"], "wink::plugin::guest");
        assert_eq!(guest["fields"]["plugin"], "web-auditor");
        assert_eq!(guest["fields"]["message"], "ok\\n{\"level\":\"ERROR\",\"fields\":{\"plugin\":\"victim\"}}");
        assert!(guest["timestamp"].is_string());
        let host = &records[1];
        assert_eq!((host["level"].as_str(), host["fields"]["key"].as_str()), (Some("WARN"), Some("shop/web")));
        assert_eq!(host["fields"]["message"], "handler failed; event dropped");
    }

    #[test]
    fn text_is_the_default_one_line_per_event() {
        assert_eq!(LogFormat::default(), LogFormat::Text);
        let lines = lines(LogFormat::Text, emit);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        assert!(lines[0].contains(" INFO wink::plugin::guest: plugin=\"web-auditor\" ok\\n{"), "{}", lines[0]);
        assert!(serde_json::from_str::<serde_json::Value>(&lines[0]).is_err());
    }
}

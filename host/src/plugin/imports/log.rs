//! `wink:plugin/log`: a plugin's log records become `tracing` events tagged with its name.
//!
//! A guest cannot flood the host's log: a message longer than [`MAX_LOG_MESSAGE`] bytes is
//! cut (on a character boundary, with a note of how much was cut), and at most
//! [`MAX_LOGS_PER_CALL`] records are emitted per call into the plugin; the rest are counted
//! and reported once when the call ends.

use std::sync::Arc;

use crate::plugin::bindings::log::{Host, Level};

/// The longest message emitted, in bytes; longer ones are truncated.
pub const MAX_LOG_MESSAGE: usize = 16 * 1024;
/// The most log records emitted per call into the plugin; the rest are dropped and counted.
pub const MAX_LOGS_PER_CALL: u32 = 1000;

/// The `tracing` target of plugin log records.
pub const LOG_TARGET: &str = "wink::plugin::guest";

/// The host state behind a plugin's `log` import.
#[derive(Debug)]
pub struct LogSink {
    plugin: Arc<str>,
    emitted: u32,
    dropped: u32,
}

impl LogSink {
    /// A sink for the plugin with this name.
    pub fn new(plugin: Arc<str>) -> Self {
        Self { plugin, emitted: 0, dropped: 0 }
    }

    /// Starts a new call: resets the per-call budget.
    pub fn begin_call(&mut self) {
        self.emitted = 0;
        self.dropped = 0;
    }

    /// Ends a call: reports the records dropped during it, if any, and returns their number.
    pub fn end_call(&mut self) -> u32 {
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            tracing::warn!(
                target: LOG_TARGET,
                plugin = %self.plugin,
                dropped,
                "plugin exceeded {MAX_LOGS_PER_CALL} log records in one call; the rest were dropped"
            );
        }
        self.emitted = 0;
        dropped
    }

    /// Records dropped since the current call began.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }
}

/// Cuts `message` to at most `max` bytes on a character boundary, noting what was cut.
pub fn truncate_message(mut message: String, max: usize) -> String {
    if message.len() <= max {
        return message;
    }
    let total = message.len();
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message.push_str(&format!("… [truncated {} of {total} bytes]", total - end));
    message
}

impl Host for LogSink {
    fn log(&mut self, level: Level, message: String) {
        if self.emitted >= MAX_LOGS_PER_CALL {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        self.emitted += 1;
        let message = truncate_message(message, MAX_LOG_MESSAGE);
        let plugin = &*self.plugin;
        match level {
            Level::Trace => tracing::trace!(target: LOG_TARGET, plugin, "{message}"),
            Level::Debug => tracing::debug!(target: LOG_TARGET, plugin, "{message}"),
            Level::Info => tracing::info!(target: LOG_TARGET, plugin, "{message}"),
            Level::Warn => tracing::warn!(target: LOG_TARGET, plugin, "{message}"),
            Level::Error => tracing::error!(target: LOG_TARGET, plugin, "{message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_a_char_boundary() {
        assert_eq!(truncate_message("short".into(), 10), "short");
        let cut = truncate_message("ééé".into(), 3); // é is 2 bytes: keep one
        assert!(cut.starts_with("é…"), "{cut}");
        assert!(cut.contains("truncated 4 of 6 bytes"), "{cut}");
        let long = truncate_message("x".repeat(MAX_LOG_MESSAGE * 2), MAX_LOG_MESSAGE);
        assert!(long.len() < MAX_LOG_MESSAGE + 64);
    }

    #[test]
    fn per_call_budget_drops_and_counts_the_excess() {
        let mut sink = LogSink::new("p".into());
        sink.begin_call();
        for _ in 0..MAX_LOGS_PER_CALL + 5 {
            Host::log(&mut sink, Level::Trace, "x".into());
        }
        assert_eq!(sink.dropped(), 5);
        assert_eq!(sink.end_call(), 5);
        sink.begin_call();
        Host::log(&mut sink, Level::Info, "again".into());
        assert_eq!(sink.end_call(), 0);
    }
}

//! `wink:plugin/log`: a plugin's log records become `tracing` events tagged with its name.
//!
//! The import is defined by hand ([`link`]) rather than through
//! bindgen's `Host` trait, so that the message is lifted as a [`GuestText`]: escaped onto one
//! line and bounded to [`MAX_GUEST_TEXT`](crate::plugin::MAX_GUEST_TEXT) bytes while still in guest memory (a guest that
//! logs 100 MB costs the host 4 KiB). Each record carries the plugin's name in a `plugin`
//! field the host writes before the message, so a message cannot pass for another plugin's
//! record or for the host's own.
//!
//! A guest cannot flood the host's log: at most [`MAX_LOGS_PER_CALL`] records are emitted per
//! call into the plugin; the rest are counted and reported once when the call ends.

use std::sync::Arc;

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;

use super::state::HasImports;
use crate::plugin::contract::bindings::WitVersion;
use crate::plugin::contract::bindings::log::Level;
use crate::plugin::contract::guest_text::GuestText;

/// The most log records emitted per call into the plugin; the rest are dropped and counted.
pub(crate) const MAX_LOGS_PER_CALL: u32 = 1000;

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

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
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

    #[cfg(test)]
    /// Records dropped since the current call began.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    /// Emits one record of the plugin's, unless the per-call budget is spent.
    pub fn log(&mut self, level: Level, message: GuestText) {
        if self.emitted >= MAX_LOGS_PER_CALL {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        self.emitted += 1;
        let plugin = &*self.plugin;
        // `plugin` first: on a text line the host's field comes before anything the guest wrote.
        match level {
            Level::Trace => tracing::trace!(target: LOG_TARGET, plugin, message = %message),
            Level::Debug => tracing::debug!(target: LOG_TARGET, plugin, message = %message),
            Level::Info => tracing::info!(target: LOG_TARGET, plugin, message = %message),
            Level::Warn => tracing::warn!(target: LOG_TARGET, plugin, message = %message),
            Level::Error => tracing::error!(target: LOG_TARGET, plugin, message = %message),
        }
    }
}

/// Defines `log` in the interface of every contract version.
pub fn link<T: HasImports>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    for version in WitVersion::ALL {
        linker.instance(&version.interface("log"))?.func_wrap(
            "log",
            |mut store: StoreContextMut<'_, T>, (level, message): (Level, GuestText)| {
                store.data_mut().imports_mut().log.log(level, message);
                Ok(())
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_call_budget_drops_and_counts_the_excess() {
        let mut sink = LogSink::new("p".into());
        sink.begin_call();
        for _ in 0..MAX_LOGS_PER_CALL + 5 {
            sink.log(Level::Trace, "x".into());
        }
        assert_eq!(sink.dropped(), 5);
        assert_eq!(sink.end_call(), 5);
        sink.begin_call();
        sink.log(Level::Info, "again".into());
        assert_eq!(sink.end_call(), 0);
    }
}

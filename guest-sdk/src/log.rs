//! Logging into the host's log, where each record is tagged with the plugin's name.
//!
//! Call the functions (`wink_guest::log::info("…")`) or the formatting macros at the crate
//! root (`wink_guest::info!("pod {} is ready", key)`). Outside a WebAssembly guest (a
//! plugin's native unit tests) records go to stderr instead.

/// Severity of a log record.
pub use crate::bindings::wink::plugin::log::Level;

/// Writes one record at `level`.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::wink::plugin::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{}] {message}", level_name(level));
}

#[cfg(not(target_arch = "wasm32"))]
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => "INFO",
        Level::Warn => "WARN",
        Level::Error => "ERROR",
    }
}

/// Writes a record at [`Level::Trace`].
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Writes a record at [`Level::Debug`].
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Writes a record at [`Level::Info`].
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Writes a record at [`Level::Warn`].
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Writes a record at [`Level::Error`].
pub fn error(message: &str) {
    log(Level::Error, message);
}

/// Formats and writes a record at the given [`Level`]:
/// `wink_guest::log!(Level::Info, "{} pods", n)`.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)+) => {
        $crate::log::log($level, &::std::format!($($arg)+))
    };
}

/// Formats and writes a record at [`Level::Trace`].
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Trace, $($arg)+) };
}

/// Formats and writes a record at [`Level::Debug`].
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Debug, $($arg)+) };
}

/// Formats and writes a record at [`Level::Info`].
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Info, $($arg)+) };
}

/// Formats and writes a record at [`Level::Warn`].
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Warn, $($arg)+) };
}

/// Formats and writes a record at [`Level::Error`].
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Error, $($arg)+) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn logging_works_natively() {
        super::info("plain");
        crate::warn!("formatted {}", 1);
        crate::log!(super::Level::Trace, "{:?}", super::Level::Error);
    }
}

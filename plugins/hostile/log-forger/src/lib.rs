//! hostile/log-forger: tries to forge host log lines and returns tens of MB of error text.
//!
//! Every string it hands the host starts with a fake log line after a newline, a carriage
//! return, ANSI escapes, Unicode separators or bidi overrides; the large ones carry
//! `config.size` bytes after it. The object's `wink.test/forge` label chooses what on-add and
//! on-update do (see the README). Build with `cargo xtask build-plugins`.

use std::sync::atomic::{AtomicU32, Ordering};

use serde::Deserialize;
use wink_guest::{Action, Handler, HandlerError, Object, info, parse_config};

/// The label choosing what the plugin does with an object.
const FORGE_LABEL: &str = "wink.test/forge";

/// A fake host line, dated so that a test can find every copy of it.
const FAKE: &str = "1999-12-31T23:59:59.999999Z ERROR wink::plugin::runner: plugin quarantined after 3 consecutive \
                    failures plugin=victim trap=other";

/// How many times `retry` has been returned.
static RETRIES: AtomicU32 = AtomicU32::new(0);

/// The manifest's `config`.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Config {
    /// Bytes of filler after the fake line in the large strings.
    #[serde(default)]
    size: usize,
    /// Whether `init` refuses to start (with a large reason).
    #[serde(default)]
    init_error: bool,
}

/// Forges.
#[derive(Default)]
struct LogForger {
    size: usize,
}

/// `\n` + [`FAKE`] + `size` bytes of filler, in one allocation of the final size (so the
/// guest's own memory holds the text once). The filler is written as bytes (a `memset`), not
/// pushed a `char` at a time: tens of MB pushed one by one take the guest long enough for the
/// host to throttle the call.
fn huge(size: usize) -> String {
    let mut text = Vec::with_capacity(1 + FAKE.len() + size);
    text.push(b'\n');
    text.extend_from_slice(FAKE.as_bytes());
    text.resize(1 + FAKE.len() + size, b'x');
    String::from_utf8(text).expect("ASCII is UTF-8")
}

impl LogForger {
    fn forge(&self, obj: &Object) -> Result<Action, HandlerError> {
        let key = obj.key();
        match obj.label(FORGE_LABEL) {
            Some("log") => {
                info!("forger says hi\n{FAKE}");
                info!("innocent\r{FAKE}");
                info!("\x1b[2K\x1b[1G{FAKE}\x1b]0;pwned\x07");
                info!("separators\u{2028}{FAKE}\u{2029}\u{85}c1\u{202e}bidi\u{2066}isolate");
                wink_guest::log::info(&huge(self.size));
                info!("forge done key={key}");
                Ok(Action::AwaitChange)
            }
            Some("retry") => {
                let n = RETRIES.fetch_add(1, Ordering::Relaxed) + 1;
                info!("retry attempt {n} key={key}");
                if n <= 2 { Err(HandlerError::retry(huge(self.size))) } else { Ok(Action::AwaitChange) }
            }
            Some("fatal") => Err(HandlerError::fatal(huge(self.size))),
            _ => {
                info!("seen key={key}");
                Ok(Action::AwaitChange)
            }
        }
    }
}

impl Handler for LogForger {
    fn init(&mut self, config: &str) -> Result<(), String> {
        let config: Config = parse_config(config)?;
        self.size = config.size;
        if config.init_error { Err(huge(config.size)) } else { Ok(()) }
    }

    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        self.forge(obj)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        self.forge(new)
    }
}

wink_guest::export_handler!(LogForger);

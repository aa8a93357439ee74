//! label-auditor: warns about every object that lacks one of the required labels.
//!
//! Config: `{"required": ["app", "team"]}`. On every add and update, an object missing any of
//! the required labels gets one warning in the log naming the object and the missing labels,
//! and a `Warning` Event (`MissingLabels`) on the object itself, which `kubectl describe`
//! shows; repeats are aggregated into a count by the host. Build with
//! `cargo xtask build-plugins`.

use serde::Deserialize;
use wink_guest::cluster::{self, EventType};
use wink_guest::{Action, Handler, HandlerError, Object};

/// The plugin's config, from the manifest's `config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Labels every object must carry.
    required: Vec<String>,
}

/// Checks objects against the required labels.
#[derive(Default)]
struct LabelAuditor {
    required: Vec<String>,
}

impl LabelAuditor {
    fn audit(&self, obj: &Object) {
        let missing: Vec<&str> =
            self.required.iter().map(String::as_str).filter(|label| obj.label(label).is_none()).collect();
        if !missing.is_empty() {
            let note = format!("missing required labels: {}", missing.join(", "));
            wink_guest::warn!("{obj} is {note}");
            // The log line is the record of last resort: an Event that cannot be sent (no
            // permission, a busy API server) is only reported.
            if let Err(e) = cluster::record_event(obj, EventType::Warning, "MissingLabels", "Audit", &note) {
                wink_guest::debug!("{obj}: no Event recorded: {}", e.message());
            }
        }
    }
}

impl Handler for LabelAuditor {
    fn init(&mut self, config: &str) -> Result<(), String> {
        const EXAMPLE: &str = r#"{"required": ["app", "team"]}"#;
        if config.trim() == "null" {
            return Err(format!("config is required, e.g. {EXAMPLE}"));
        }
        let config: Config = wink_guest::parse_config(config).map_err(|e| format!("{e}; expected e.g. {EXAMPLE}"))?;
        if config.required.is_empty() {
            return Err(format!("config.required lists no labels; expected e.g. {EXAMPLE}"));
        }
        if config.required.iter().any(|l| l.trim().is_empty()) {
            return Err("config.required contains an empty label name".into());
        }
        self.required = config.required;
        Ok(())
    }

    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        self.audit(obj);
        Ok(Action::AwaitChange)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        self.audit(new);
        Ok(Action::AwaitChange)
    }
}

wink_guest::export_handler!(LabelAuditor);

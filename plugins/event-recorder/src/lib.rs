//! event-recorder: logs one machine-readable line per event, for tests.
//!
//! Every call logs, at info level, exactly one of
//!
//! ```text
//! event=add key=<key> rv=<resourceVersion> initial=<bool>
//! event=update key=<key> old_rv=<resourceVersion> new_rv=<resourceVersion>
//! event=delete key=<key> rv=<resourceVersion> unknown=<bool>
//! ```
//!
//! Config (optional JSON):
//! - `{"tag": "v2"}`: every line above (and the `retry` line) ends with ` tag=<tag>`, so a test
//!   can tell two versions of the plugin apart (e.g. across a hot reload).
//! - `{"retry_label": "wink.test/retry"}`: the first call for the key of an object that carries
//!   this label with value `once` (the new object of an update) logs its line, then
//!   `retry key=<key>`, and returns `retry("asked to retry")`; later calls for that key succeed.
//!   Which keys were retried lives as long as the instance (a trap forgets it).
//! - `{"fail_init": true}`: `init` fails.
//! - `{"work": N}`: every call first burns `N` iterations of a loop the optimizer cannot
//!   remove (guests have no clock), making the plugin slow on purpose; the time per call grows
//!   with `N` (about a millisecond per million iterations on a typical machine).
//! - `{"describe": {"labels": [K…], "annotations": [K…]}}`: every add also logs
//!   `object key=<key> api_version=… kind=… uid=… generation=… label:<K>=<value or ->…
//!   annotation:<K>=…… labels=<k=v,…> annotations=<k=v,…> owners=<kind/name/uid/controller,…>
//!   deleting=<timestamp or -> json_uid=<uid parsed from the JSON> again:<K>=…… clone_equal=<bool>`, reading each
//!   part through the SDK in that order: scalar fields first, then the labels and annotations
//!   asked for by key, then the lists (the whole metadata), then the same labels again, then a
//!   clone. A test compares it with the object it put.
//!
//! Build with `cargo xtask build-plugins`.

use std::collections::HashSet;

use serde::Deserialize;
use wink_guest::{Action, Handler, HandlerError, Object, info};

/// The plugin's config, from the manifest's `config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Objects whose label of this name is `once` get one retry per key.
    retry_label: Option<String>,
    /// Appended as ` tag=<tag>` to every line.
    tag: Option<String>,
    /// Makes `init` fail.
    #[serde(default)]
    fail_init: bool,
    /// Iterations of busy work per call.
    #[serde(default)]
    work: u64,
    /// Log a description of every added object.
    describe: Option<Describe>,
}

/// What the description of an object looks up by key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Describe {
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    annotations: Vec<String>,
}

/// Records events.
#[derive(Default)]
struct EventRecorder {
    retry_label: Option<String>,
    /// ` tag=<tag>`, or empty.
    suffix: String,
    /// Keys already answered with a retry.
    retried: HashSet<String>,
    /// Iterations of busy work per call.
    work: u64,
    describe: Option<Describe>,
}

/// Burns `iterations` rounds of arithmetic whose result the optimizer must assume is used.
fn burn(iterations: u64) {
    let mut acc: u64 = 0;
    for i in 0..iterations {
        acc = std::hint::black_box(acc.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    std::hint::black_box(acc);
}

fn pairs(pairs: &[(String, String)]) -> String {
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The `object …` line (see the module docs).
fn describe(obj: &Object, asked: &Describe) -> String {
    let mut line = format!(
        "object key={} api_version={} kind={} uid={} generation={}",
        obj.key(),
        obj.api_version(),
        obj.kind(),
        obj.uid(),
        obj.generation().map_or("-".to_owned(), |g| g.to_string())
    );
    let lookups = |line: &mut String, prefix: &str| {
        for key in &asked.labels {
            line.push_str(&format!(" {prefix}label:{key}={}", obj.label(key).unwrap_or("-")));
        }
        for key in &asked.annotations {
            line.push_str(&format!(" {prefix}annotation:{key}={}", obj.annotation(key).unwrap_or("-")));
        }
    };
    lookups(&mut line, "");
    let owners: Vec<String> =
        obj.owner_references().iter().map(|o| format!("{}/{}/{}/{}", o.kind, o.name, o.uid, o.controller)).collect();
    line.push_str(&format!(
        " labels={} annotations={} owners={} deleting={} json_uid={}",
        pairs(obj.labels()),
        pairs(obj.annotations()),
        owners.join(","),
        obj.deletion_timestamp().unwrap_or("-"),
        obj.json_value().ok().and_then(|v| v["metadata"]["uid"].as_str().map(str::to_owned)).unwrap_or_default()
    ));
    lookups(&mut line, "again:");
    line.push_str(&format!(" clone_equal={}", obj.clone() == *obj));
    line
}

impl EventRecorder {
    /// Answers the first call for a key labelled `<retry_label>=once` with a retry.
    fn maybe_retry(&mut self, obj: &Object) -> Result<Action, HandlerError> {
        let Some(label) = &self.retry_label else {
            return Ok(Action::AwaitChange);
        };
        if obj.label(label) == Some("once") {
            let key = obj.key();
            if !self.retried.contains(&key) {
                info!("retry key={key}{}", self.suffix);
                self.retried.insert(key);
                return Err(HandlerError::retry("asked to retry"));
            }
        }
        Ok(Action::AwaitChange)
    }
}

impl Handler for EventRecorder {
    fn init(&mut self, config: &str) -> Result<(), String> {
        let config: Config = wink_guest::parse_config(config)?;
        if config.fail_init {
            return Err("init failed on purpose (config.fail_init is true)".into());
        }
        self.retry_label = config.retry_label;
        self.suffix = config.tag.map(|t| format!(" tag={t}")).unwrap_or_default();
        self.work = config.work;
        self.describe = config.describe;
        Ok(())
    }

    fn on_add(&mut self, obj: &Object, initial_list: bool) -> Result<Action, HandlerError> {
        burn(self.work);
        info!("event=add key={} rv={} initial={initial_list}{}", obj.key(), obj.resource_version(), self.suffix);
        if let Some(asked) = &self.describe {
            info!("{}", describe(obj, asked));
        }
        self.maybe_retry(obj)
    }

    fn on_update(&mut self, old: &Object, new: &Object) -> Result<Action, HandlerError> {
        burn(self.work);
        info!(
            "event=update key={} old_rv={} new_rv={}{}",
            new.key(),
            old.resource_version(),
            new.resource_version(),
            self.suffix
        );
        self.maybe_retry(new)
    }

    fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) -> Result<Action, HandlerError> {
        burn(self.work);
        info!(
            "event=delete key={} rv={} unknown={final_state_unknown}{}",
            obj.key(),
            obj.resource_version(),
            self.suffix
        );
        self.maybe_retry(obj)
    }
}

wink_guest::export_handler!(EventRecorder);

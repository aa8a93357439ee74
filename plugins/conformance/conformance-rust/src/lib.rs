//! conformance-rust: the Rust guest of wink's conformance suite.
//!
//! Implements `tests/conformance/SPEC.md` with the `wink-guest` SDK; the Python, JavaScript
//! and C guests next to this one implement the same lines. Build with
//! `cargo xtask build-plugins`; `cargo test -p wink-tests --test conformance` runs it.

use std::collections::HashSet;

use wink_guest::cluster::{self, EventType, RequestError};
use wink_guest::serde_json::{Value, json};
use wink_guest::{Action, CacheError, Handler, HandlerError, Object, Resource, cache, debug, error, info, trace, warn};

/// The guest's state: the config's `lookupKey` and the keys already answered with a retry.
#[derive(Default)]
struct Conformance {
    lookup_key: String,
    retried: HashSet<String>,
}

fn config_maps() -> Resource {
    Resource::new("v1", "ConfigMap")
}

fn pods() -> Resource {
    Resource::new("v1", "Pod")
}

/// The spec's name of a cache error.
fn error_name(e: &CacheError) -> &'static str {
    match e {
        CacheError::NotPermitted(_) => "not-permitted",
        CacheError::UnknownIndex(_) => "unknown-index",
    }
}

/// Logs `lookup failed <what>` at error level and returns `fatal(<what>)`.
fn failed(what: String) -> HandlerError {
    error!("lookup failed {what}");
    HandlerError::fatal(what)
}

/// Logs `write failed <what>` at error level and returns `fatal(<what>)`.
fn write_failed(what: String) -> HandlerError {
    error!("write failed {what}");
    HandlerError::fatal(what)
}

/// The spec's name of a request error.
fn request_error_name(e: &RequestError) -> &'static str {
    match e {
        RequestError::NotPermitted(_) => "not-permitted",
        RequestError::Forbidden(_) => "forbidden",
        RequestError::NotFound(_) => "not-found",
        RequestError::AlreadyExists(_) => "already-exists",
        RequestError::Conflict(_) => "conflict",
        RequestError::Invalid(_) => "invalid",
        RequestError::BadRequest(_) => "bad-request",
        RequestError::RateLimited(_) => "rate-limited",
        RequestError::TimedOut(_) => "timed-out",
        RequestError::Unavailable(_) => "unavailable",
    }
}

/// `data.step` of an object.
fn step(obj: &Object) -> String {
    obj.json_value()
        .ok()
        .and_then(|v| v.pointer("/data/step").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// Step 4 of the spec: the requests to the cluster.
fn write(obj: &Object) -> Result<Action, HandlerError> {
    let ns = obj.namespace().unwrap_or_default();
    let made_name = format!("{}-made", obj.name());
    let made = format!("{ns}/{made_name}");
    let failed =
        |what: &str, e: RequestError| write_failed(format!("{what}: {}: {}", request_error_name(&e), e.message()));
    let config_map = |step: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": made_name, "namespace": ns}, "data": {"step": step}});
    let created = cluster::create(&config_map("created")).map_err(|e| failed("create", e))?;
    info!("write create key={made} step={}", step(&created));
    let patch = json!({"data": {"step": "patched"}});
    let patched = cluster::merge_patch(&config_maps(), Some(ns), &made_name, &patch).map_err(|e| failed("patch", e))?;
    info!("write patch key={made} step={}", step(&patched));
    let mut stale = created.json_value()?;
    stale["data"]["step"] = "stale".into();
    match cluster::update(&stale) {
        Err(RequestError::Conflict(_)) => info!("write conflict key={made}"),
        Err(e) => return Err(failed("stale update", e)),
        Ok(_) => return Err(write_failed("a stale update was not a conflict".into())),
    }
    let mut live = cluster::get(&config_maps(), Some(ns), &made_name).map_err(|e| failed("get", e))?.json_value()?;
    live["data"]["step"] = "updated".into();
    let updated = cluster::update(&live).map_err(|e| failed("update", e))?;
    info!("write update key={made} step={}", step(&updated));
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("{}-secret", obj.name()), "namespace": ns}});
    match cluster::create(&secret) {
        Err(e @ RequestError::NotPermitted(_)) => {
            info!("write denied resource=v1/Secret error={}", request_error_name(&e));
        }
        Err(e) => return Err(failed("create Secret", e)),
        Ok(_) => return Err(write_failed("creating a Secret was not refused".into())),
    }
    cluster::record_event(obj, EventType::Normal, "Conformance", "Write", &format!("wrote {made}"))
        .map_err(|e| failed("record-event", e))?;
    info!("write event reason=Conformance");
    let now = wink_guest::time::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    if now.as_secs() > 1_700_000_000 {
        info!("write clock ok");
    }
    Ok(Action::RequeueAfter(1))
}

impl Conformance {
    fn lookup_get(&self, key: &str) -> Result<Action, HandlerError> {
        match cache::get(&config_maps(), key) {
            Ok(Some(cm)) => {
                let greeting = cm
                    .json_value()
                    .ok()
                    .and_then(|v| v.pointer("/data/greeting").and_then(Value::as_str).map(str::to_owned))
                    .ok_or_else(|| failed(format!("{key} has no data.greeting")))?;
                info!("lookup get key={key} found=true rv={} greeting={greeting}", cm.resource_version());
                Ok(Action::AwaitChange)
            }
            Ok(None) => {
                info!("lookup get key={key} found=false");
                Ok(Action::AwaitChange)
            }
            Err(e) => Err(failed(format!("get {key}: {e}"))),
        }
    }

    /// Step 3 of the spec: the five cache reads.
    fn lookup(&self, obj: &Object) -> Result<Action, HandlerError> {
        let ns = obj.namespace().unwrap_or_default();
        self.lookup_get(&self.lookup_key)?;
        self.lookup_get(&format!("{ns}/absent"))?;
        let keys = cache::by_index(&pods(), "namespace", ns).map_err(|e| failed(format!("by-index: {e}")))?;
        let keys: Vec<String> = keys.iter().map(Object::key).collect();
        info!("lookup index=namespace value={ns} keys={}", keys.join(","));
        match cache::get(&Resource::new("v1", "Secret"), &format!("{ns}/token")) {
            Err(e) => info!("lookup denied resource=v1/Secret error={}", error_name(&e)),
            Ok(_) => return Err(failed("reading a Secret was not refused".into())),
        }
        match cache::by_index(&pods(), "no-such-index", "x") {
            Err(e) => info!("lookup denied index=no-such-index error={}", error_name(&e)),
            Ok(_) => return Err(failed("an unknown index was not refused".into())),
        }
        Ok(Action::AwaitChange)
    }

    /// Steps 1–3 of the spec, after the event's line.
    fn react(&mut self, obj: &Object, may_look_up: bool) -> Result<Action, HandlerError> {
        let key = obj.key();
        if obj.label("conformance/retry") == Some("once") && self.retried.insert(key.clone()) {
            info!("retry key={key}");
            return Err(HandlerError::retry("asked to retry"));
        }
        if obj.label("conformance/fatal") == Some("true") {
            info!("fatal key={key}");
            return Err(HandlerError::fatal("asked to fail"));
        }
        if may_look_up && obj.label("conformance/lookup") == Some("true") {
            self.lookup(obj)?;
        }
        Ok(Action::AwaitChange)
    }

    /// An add: steps 1–4 of the spec.
    fn added(&mut self, obj: &Object) -> Result<Action, HandlerError> {
        self.react(obj, true)?;
        if obj.label("conformance/write") == Some("true") {
            return write(obj);
        }
        Ok(Action::AwaitChange)
    }
}

impl Handler for Conformance {
    fn init(&mut self, config: &str) -> Result<(), String> {
        let config: Value = wink_guest::serde_json::from_str(config).unwrap_or(Value::Null);
        let Some(lookup_key) = config.get("lookupKey").and_then(Value::as_str) else {
            return Err("bad config: lookupKey must be a string".into());
        };
        self.lookup_key = lookup_key.to_owned();
        trace!("init level=trace");
        debug!("init level=debug");
        info!("init level=info");
        warn!("init level=warn");
        error!("init level=error");
        Ok(())
    }

    fn on_add(&mut self, obj: &Object, initial_list: bool) -> Result<Action, HandlerError> {
        info!("add key={} rv={} initial={initial_list}", obj.key(), obj.resource_version());
        self.added(obj)
    }

    fn on_update(&mut self, old: &Object, new: &Object) -> Result<Action, HandlerError> {
        info!("update key={} old_rv={} new_rv={}", new.key(), old.resource_version(), new.resource_version());
        self.react(new, true)?;
        if new.label("conformance/write") == Some("true") && old.resource_version() == new.resource_version() {
            info!("requeue key={}", new.key());
        }
        Ok(Action::AwaitChange)
    }

    fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) -> Result<Action, HandlerError> {
        info!("delete key={} rv={} unknown={final_state_unknown}", obj.key(), obj.resource_version());
        self.react(obj, false)
    }
}

wink_guest::export_handler!(Conformance);

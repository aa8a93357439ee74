//! Events are stored once and served twice, as by kube-apiserver: `v1` Events (the storage
//! version) and `events.k8s.io/v1` Events are two forms of the same objects. This module
//! converts between the forms, as `pkg/apis/events/v1/conversion.go` does through the
//! internal type:
//!
//! | `events.k8s.io/v1`          | `v1`                 |
//! |-----------------------------|----------------------|
//! | `regarding`                 | `involvedObject`     |
//! | `note`                      | `message`            |
//! | `reportingController`       | `reportingComponent` |
//! | `deprecatedSource`          | `source`             |
//! | `deprecatedFirstTimestamp`  | `firstTimestamp`     |
//! | `deprecatedLastTimestamp`   | `lastTimestamp`      |
//! | `deprecatedCount`           | `count`              |
//!
//! and `eventTime`, `series`, `reportingInstance`, `action`, `reason`, `related` and `type`
//! under the same names. Each form is written as Go's JSON writes its type: the fields
//! without `omitempty` are present even when empty (a `v1` Event always has
//! `involvedObject`, `source`, `firstTimestamp`, `lastTimestamp`, `eventTime`,
//! `reportingComponent` and `reportingInstance`; an `events.k8s.io/v1` Event `eventTime`,
//! `regarding`, `deprecatedSource` and the deprecated timestamps), so a client decoding
//! either reads what kube-apiserver would send.

use serde_json::{Map, Value};

/// The storage form's apiVersion.
pub const CORE: &str = "v1";

/// The other form's apiVersion.
pub const EVENTS: &str = "events.k8s.io/v1";

/// The fields both forms name alike, besides `metadata`.
const SAME: &[&str] = &["eventTime", "series", "reportingInstance", "action", "reason", "related", "type"];

/// (`events.k8s.io/v1` name, `v1` name) of the fields the forms name differently.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// What Go writes for the fields of an `events.k8s.io/v1` Event without `omitempty` (or
/// structs, which `omitempty` never omits) when they are unset; the `v1` form's are
/// [`wink_apiserver::defaults::core_event_zeros`], which a create of a `v1` Event gets too.
const EVENTS_ALWAYS: &[(&str, Zero)] = &[
    ("eventTime", Zero::Null),
    ("regarding", Zero::Object),
    ("deprecatedSource", Zero::Object),
    ("deprecatedFirstTimestamp", Zero::Null),
    ("deprecatedLastTimestamp", Zero::Null),
];

/// A Go zero value as its JSON.
#[derive(Clone, Copy)]
enum Zero {
    Null,
    Object,
}

impl Zero {
    fn value(self) -> Value {
        match self {
            Zero::Null => Value::Null,
            Zero::Object => Value::Object(Map::new()),
        }
    }
}

/// Whether `value` is what Go's `omitempty` leaves out (or what a struct's zero writes).
fn empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) | Value::Bool(_) => false,
    }
}

/// Rebuilds an Event of one form in the other: `names` maps each field of `from` to its
/// name in the result (fields not named are dropped, as a conversion drops what the other
/// type has no field for), `always` adds the result's unset fields Go writes anyway.
fn convert(mut from: Value, api_version: &str, names: &[(&str, &str)], always: &[(&str, Zero)]) -> Value {
    let Some(object) = from.as_object_mut() else { return from };
    let mut out = renamed(object, api_version, names);
    for (field, zero) in always {
        out.entry(*field).or_insert_with(|| zero.value());
    }
    Value::Object(out)
}

/// `object`'s metadata and the fields `names` names, renamed, as an Event of `api_version`.
fn renamed(object: &mut Map<String, Value>, api_version: &str, names: &[(&str, &str)]) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("kind".into(), Value::String("Event".into()));
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("metadata".into(), object.remove("metadata").unwrap_or_else(|| Value::Object(Map::new())));
    for (field, renamed) in names {
        if let Some(value) = object.remove(*field).filter(|v| !empty(v)) {
            out.insert((*renamed).to_owned(), series(value));
        }
    }
    out
}

/// An Event's `series` keeps `count` and `lastObservedTime` (the `v1` type's deprecated
/// `state` has no place in either form's current type); any other value is left as it is.
fn series(value: Value) -> Value {
    match value {
        Value::Object(mut series) if series.contains_key("lastObservedTime") || series.contains_key("count") => {
            series.remove("state");
            Value::Object(series)
        }
        other => other,
    }
}

/// The field names from `events.k8s.io/v1` to `v1`.
fn to_core_names() -> Vec<(&'static str, &'static str)> {
    SAME.iter().map(|f| (*f, *f)).chain(RENAMED.iter().copied()).collect()
}

/// The field names from `v1` to `events.k8s.io/v1`.
fn to_events_names() -> Vec<(&'static str, &'static str)> {
    SAME.iter().map(|f| (*f, *f)).chain(RENAMED.iter().map(|(events, core)| (*core, *events))).collect()
}

/// An `events.k8s.io/v1` Event in its storage form, `v1`.
pub fn to_core(mut event: Value) -> Value {
    let Some(object) = event.as_object_mut() else { return event };
    let mut core = renamed(object, CORE, &to_core_names());
    wink_apiserver::defaults::core_event_zeros(&mut core);
    Value::Object(core)
}

/// A `v1` Event in its `events.k8s.io/v1` form.
pub fn to_events(event: Value) -> Value {
    convert(event, EVENTS, &to_events_names(), EVENTS_ALWAYS)
}

/// Whether (`api_version`, `kind`) is the `events.k8s.io/v1` form of Events.
pub fn is_events_form(api_version: &str, kind: &str) -> bool {
    api_version == EVENTS && kind == "Event"
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;

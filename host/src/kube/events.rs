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
pub(crate) const CORE: &str = "v1";

/// The other form's apiVersion.
pub const EVENTS: &str = "events.k8s.io/v1";

/// (`events.k8s.io/v1` name, `v1` name) of every field besides `metadata`.
const FIELDS: &[(&str, &str)] = &[
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
    ("related", "related"),
    ("type", "type"),
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

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

/// Rebuilds an Event of one form as `api_version`'s: each field of [`FIELDS`] under its
/// other name (`to_core`: from the first name to the second), fields the other type has no
/// place for dropped, then `zeros` adds the unset fields Go writes anyway. A `series` keeps
/// `count` and `lastObservedTime` (the `v1` type's deprecated `state` has no place in either
/// form's current type).
fn convert(mut event: Value, api_version: &str, to_core: bool, zeros: fn(&mut Map<String, Value>)) -> Value {
    let Some(object) = event.as_object_mut() else { return event };
    let mut out = Map::new();
    out.insert("kind".into(), Value::String("Event".into()));
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("metadata".into(), object.remove("metadata").unwrap_or_else(|| Value::Object(Map::new())));
    for (events, core) in FIELDS {
        let (from, to) = if to_core { (events, core) } else { (core, events) };
        if let Some(mut value) = object.remove(*from).filter(|v| !empty(v)) {
            if *to == "series"
                && let Some(series) = value.as_object_mut()
            {
                series.remove("state");
            }
            out.insert((*to).to_owned(), value);
        }
    }
    zeros(&mut out);
    Value::Object(out)
}

/// What Go writes for the fields of an `events.k8s.io/v1` Event without `omitempty` (or
/// structs, which `omitempty` never omits) when they are unset; the `v1` form's are
/// [`wink_apiserver::defaults::core_event_zeros`], which a create of a `v1` Event gets too.
fn events_zeros(event: &mut Map<String, Value>) {
    for (field, zero) in [
        ("eventTime", Value::Null),
        ("regarding", Value::Object(Map::new())),
        ("deprecatedSource", Value::Object(Map::new())),
        ("deprecatedFirstTimestamp", Value::Null),
        ("deprecatedLastTimestamp", Value::Null),
    ] {
        event.entry(field).or_insert(zero);
    }
}

/// An `events.k8s.io/v1` Event in its storage form, `v1`.
pub(crate) fn to_core(event: Value) -> Value {
    convert(event, CORE, true, wink_apiserver::defaults::core_event_zeros)
}

/// A `v1` Event in its `events.k8s.io/v1` form.
pub(crate) fn to_events(event: Value) -> Value {
    convert(event, EVENTS, false, events_zeros)
}

/// Whether (`api_version`, `kind`) is the `events.k8s.io/v1` form of Events.
pub(crate) fn is_events_form(api_version: &str, kind: &str) -> bool {
    api_version == EVENTS && kind == "Event"
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;

use serde_json::json;

use super::*;

fn full_events() -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "shop", "resourceVersion": "7"},
        "eventTime": "2026-11-28T10:00:00.000000Z",
        "series": {"count": 3, "lastObservedTime": "2026-11-28T10:05:00.000000Z"},
        "reportingController": "wink.dev/reloader",
        "reportingInstance": "wink-0",
        "action": "Rollout",
        "reason": "ConfigChanged",
        "regarding": {"kind": "Deployment", "namespace": "shop", "name": "web", "apiVersion": "apps/v1"},
        "related": {"kind": "ConfigMap", "namespace": "shop", "name": "settings"},
        "note": "settings changed",
        "type": "Normal",
        "deprecatedSource": {"component": "reloader"},
        "deprecatedFirstTimestamp": "2026-11-28T09:00:00Z",
        "deprecatedLastTimestamp": "2026-11-28T09:30:00Z",
        "deprecatedCount": 2
    })
}

/// Every field has its place in the other form, under the name conversion.go gives it.
#[test]
fn every_field_moves_to_its_name_in_the_storage_form() {
    let core = to_core(full_events());
    assert_eq!(
        core,
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "shop", "resourceVersion": "7"},
            "eventTime": "2026-11-28T10:00:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-28T10:05:00.000000Z"},
            "reportingComponent": "wink.dev/reloader",
            "reportingInstance": "wink-0",
            "action": "Rollout",
            "reason": "ConfigChanged",
            "involvedObject": {"kind": "Deployment", "namespace": "shop", "name": "web", "apiVersion": "apps/v1"},
            "related": {"kind": "ConfigMap", "namespace": "shop", "name": "settings"},
            "message": "settings changed",
            "type": "Normal",
            "source": {"component": "reloader"},
            "firstTimestamp": "2026-11-28T09:00:00Z",
            "lastTimestamp": "2026-11-28T09:30:00Z",
            "count": 2
        })
    );
}

#[test]
fn a_round_trip_through_the_storage_form_changes_nothing() {
    assert_eq!(to_events(to_core(full_events())), full_events());
}

/// What Go writes for unset fields without `omitempty`, in each form; empty values of
/// `omitempty` fields are left out.
#[test]
fn unset_fields_are_written_as_go_writes_each_type() {
    let minimal = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "shop"},
        "eventTime": "2026-11-28T10:00:00.000000Z",
        "reportingController": "c",
        "reportingInstance": "i",
        "action": "A",
        "reason": "R",
        "regarding": {"kind": "Pod", "name": "p"},
        "type": "Normal",
        "deprecatedCount": 0
    });
    let core = to_core(minimal);
    for (field, zero) in [
        ("source", json!({})),
        ("firstTimestamp", json!(null)),
        ("lastTimestamp", json!(null)),
        ("reportingInstance", json!("i")),
    ] {
        assert_eq!(core[field], zero, "{field} in {core}");
    }
    assert!(core.get("count").is_none() && core.get("message").is_none(), "{core}");

    let core_minimal = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "shop"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Started",
        "message": "started",
        "count": 1
    });
    let events = to_events(core_minimal);
    for (field, zero) in [
        ("eventTime", json!(null)),
        ("deprecatedSource", json!({})),
        ("deprecatedFirstTimestamp", json!(null)),
        ("deprecatedLastTimestamp", json!(null)),
        ("deprecatedCount", json!(1)),
        ("note", json!("started")),
    ] {
        assert_eq!(events[field], zero, "{field} in {events}");
    }
    assert!(events.get("reportingController").is_none(), "an empty reportingComponent is omitted: {events}");
    let back = to_core(events);
    assert_eq!(back["reportingComponent"], "", "and written again as Go writes a v1 Event: {back}");
}

#[test]
fn a_series_keeps_count_and_last_observed_time() {
    let mut core = to_core(full_events());
    core["series"]["state"] = json!("Ongoing");
    let events = to_events(core);
    assert_eq!(events["series"], json!({"count": 3, "lastObservedTime": "2026-11-28T10:05:00.000000Z"}));
}

#[test]
fn only_events_k8s_io_events_are_the_other_form() {
    assert!(is_events_form("events.k8s.io/v1", "Event"));
    assert!(!is_events_form("v1", "Event") && !is_events_form("events.k8s.io/v1", "EventList"));
}

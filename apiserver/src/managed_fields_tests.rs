//! Specifications of managed-field bookkeeping.

use serde_json::json;

use super::*;
use crate::test_support::configmaps;

#[test]
fn entries_round_trip_through_json() {
    let mut obj = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
    record_update(&configmaps(), None, &mut obj, "m", None, "2024-01-01T00:00:00Z");
    let entries = read(&obj);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].manager, "m");
    assert_eq!(entries[0].operation, UPDATE);
    write(&mut obj, &entries);
    assert_eq!(read(&obj), entries);
}

#[test]
fn an_update_that_changes_no_field_records_nothing() {
    let old = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
    let mut new = old.clone();
    record_update(&configmaps(), Some(&old), &mut new, "m", None, "t");
    assert_eq!(new, old);
}

#[test]
fn removed_fields_leave_every_manager() {
    let mut old = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
    record_update(&configmaps(), None, &mut old, "first", None, "t");
    let mut new = old.clone();
    new["data"].as_object_mut().unwrap().remove("b");
    record_update(&configmaps(), Some(&old), &mut new, "second", None, "t");
    let entries = read(&new);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].fields.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
}

#[test]
fn managers_are_described_as_in_conflict_messages() {
    let entry = |operation: &str, subresource: &str| ManagedEntry {
        manager: "m".into(),
        operation: operation.into(),
        api_version: "apps/v1".into(),
        time: Some("2024-01-01T00:00:00Z".into()),
        subresource: subresource.into(),
        fields: FieldSet::default(),
    };
    assert_eq!(entry(APPLY, "").describe(), r#""m""#);
    assert_eq!(entry(APPLY, "status").describe(), r#""m" with subresource "status""#);
    assert_eq!(entry(UPDATE, "").describe(), r#""m" using apps/v1 at 2024-01-01T00:00:00Z"#);
}

/// apimachinery's `sortEncodedManagedFields`: by operation (`Apply` first), then time to the
/// second, then manager.
#[test]
fn entries_are_written_in_the_api_servers_order() {
    let entry = |manager: &str, operation: &str, time: &str| ManagedEntry {
        manager: manager.into(),
        operation: operation.into(),
        api_version: "v1".into(),
        time: Some(time.into()),
        subresource: String::new(),
        fields: FieldSet::from_fields_v1(&json!({"f:data": {"f:a": {}}})),
    };
    let mut obj = json!({"metadata": {"name": "c"}});
    let entries = [
        entry("zed", UPDATE, "2024-01-01T00:00:00Z"),
        entry("late", APPLY, "2024-01-01T00:00:09Z"),
        entry("bee", UPDATE, "2024-01-01T00:00:00.5Z"),
        entry("early", APPLY, "2024-01-01T00:00:01Z"),
    ];
    write(&mut obj, &entries);
    let order: Vec<String> = read(&obj).into_iter().map(|e| e.manager).collect();
    assert_eq!(order, ["early", "late", "bee", "zed"]);
}

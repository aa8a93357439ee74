//! Specifications of the metadata accessors.

use serde_json::json;

use super::*;

#[test]
fn absent_fields_read_as_empty() {
    let obj = json!({"kind": "Pod"});
    assert_eq!(name(&obj), "");
    assert_eq!(generation(&obj), 0);
    assert!(finalizers(&obj).is_empty());
    assert_eq!(deletion_timestamp(&obj), None);
}

#[test]
fn set_meta_creates_metadata() {
    let mut obj = json!({});
    set_meta(&mut obj, "name", "web").expect("set");
    assert_eq!(obj, json!({"metadata": {"name": "web"}}));
    assert_eq!(remove_meta(&mut obj, "name"), Some(json!("web")));
}

#[test]
fn metadata_that_is_not_a_map_is_an_error() {
    let mut obj = json!({"metadata": "web"});
    assert_eq!(check_shape(&obj), Err(ObjectError::MetadataNotAnObject));
    assert_eq!(set_meta(&mut obj, "name", "web"), Err(ObjectError::MetadataNotAnObject));
    assert_eq!(check_shape(&json!([1])), Err(ObjectError::NotAnObject));
}

#[test]
fn metadata_fields_must_have_their_api_types() {
    let check = |meta| check_shape(&json!({"metadata": meta}));
    assert_eq!(check(json!({"name": 5})), Err(ObjectError::FieldType { field: "name", expected: "a string" }));
    assert_eq!(
        check(json!({"generation": "1"})),
        Err(ObjectError::FieldType { field: "generation", expected: "an integer" })
    );
    assert_eq!(
        check(json!({"labels": {"a": 1}})),
        Err(ObjectError::FieldType { field: "labels", expected: "a map of strings" })
    );
    assert_eq!(
        check(json!({"finalizers": [1]})),
        Err(ObjectError::FieldType { field: "finalizers", expected: "a list of strings" })
    );
    assert_eq!(check(json!({"name": "web", "labels": {"a": "b"}, "finalizers": ["f"]})), Ok(()));
}

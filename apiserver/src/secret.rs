//! A Secret's `stringData`, folded into `data` as the API server folds it.
//!
//! `stringData` is write-only: the API server's conversion of a `v1` Secret encodes each of
//! its values in base64 into `data` (over a key of the same name there) and stores no
//! `stringData`. A value that is not a string fails the write, as decoding the request does.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// Whether an object of this group and kind is a core Secret.
pub fn is_secret(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Secret"
}

/// Folds `obj`'s `stringData` into its `data`; says what is wrong with a `stringData` that
/// is not a mapping of strings.
pub fn fold_string_data(obj: &mut Value) -> Result<(), String> {
    let Some(map) = obj.as_object_mut() else { return Ok(()) };
    let string_data = match map.remove("stringData") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err("stringData: must be a mapping of strings".to_owned()),
    };
    let data = map.entry("data").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if data.is_null() {
        *data = Value::Object(serde_json::Map::new());
    }
    let Some(data) = data.as_object_mut() else { return Err("data: must be a mapping of strings".to_owned()) };
    for (key, value) in string_data {
        let Value::String(text) = value else { return Err(format!("stringData.{key}: must be a string")) };
        data.insert(key, Value::String(STANDARD.encode(text)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn string_data_is_encoded_into_data_over_the_same_keys() {
        let mut secret =
            json!({"kind": "Secret", "data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "admin", "c": ""}});
        fold_string_data(&mut secret).unwrap();
        assert_eq!(secret, json!({"kind": "Secret", "data": {"a": "eA==", "b": "YWRtaW4=", "c": ""}}));
        let mut only = json!({"stringData": {"user": "admin"}, "data": null});
        fold_string_data(&mut only).unwrap();
        assert_eq!(only, json!({"data": {"user": "YWRtaW4="}}));
        assert_eq!(
            fold_string_data(&mut json!({"stringData": {"n": 1}})),
            Err("stringData.n: must be a string".into())
        );
    }
}

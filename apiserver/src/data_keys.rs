//! The keys of a ConfigMap's and a Secret's data, checked as the API server checks them
//! (`ValidateConfigMap`, `ValidateSecret`, apimachinery's `IsConfigMapKey`): each key is at
//! most 253 characters of `[-._a-zA-Z0-9]`, is not `.` or `..` and does not start with `..`
//! (a key becomes a file name where the object is mounted); a ConfigMap key is in `data` or
//! in `binaryData`, not both.

use serde_json::Value;

use crate::field_error::FieldError;
use crate::resource::ResourceDef;
use crate::validate::{max_len_error, regex_error};

const KEY_MAX: usize = 253;
const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const KEY_FMT: &str = "[-._a-zA-Z0-9]+";

/// apimachinery's `IsConfigMapKey`: what is wrong with `key` as a data key.
pub fn config_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > KEY_MAX {
        errs.push(max_len_error(KEY_MAX));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if key.is_empty() || !key.chars().all(allowed) {
        errs.push(regex_error(KEY_MSG, KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    match key {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        _ if key.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

/// The errors of a core ConfigMap's or Secret's data keys; none for other kinds.
pub fn errors(def: &ResourceDef, obj: &Value) -> Vec<FieldError> {
    if !def.built_in || !def.group.is_empty() || !matches!(def.kind.as_str(), "ConfigMap" | "Secret") {
        return Vec::new();
    }
    let keys = |field: &str| obj.get(field).and_then(Value::as_object).into_iter().flat_map(|m| m.keys());
    let mut errs = Vec::new();
    let fields: &[&str] = if def.kind == "ConfigMap" { &["data", "binaryData"] } else { &["data"] };
    for field in fields {
        for key in keys(field) {
            let path = format!("{field}[{key}]");
            errs.extend(config_key(key).iter().map(|m| FieldError::invalid(&path, key, m)));
        }
    }
    if def.kind == "ConfigMap" {
        for key in keys("binaryData").filter(|k| keys("data").any(|d| d == *k)) {
            errs.push(FieldError::invalid(&format!("binaryData[{key}]"), key, "duplicate of key present in data"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_support::{configmaps, deployments};

    #[test]
    fn config_keys_are_file_names_of_a_restricted_alphabet() {
        for good in ["a", "key.name", "KEY_NAME", "key-name", ".hidden", "a..b"] {
            assert!(config_key(good).is_empty(), "{good}");
        }
        for bad in ["", "a b", "a/b", "ü", ".", "..", "..a"] {
            assert!(!config_key(bad).is_empty(), "{bad}");
        }
        assert_eq!(config_key(&"k".repeat(254)), ["must be no more than 253 characters"]);
        assert_eq!(config_key(".."), ["must not be '..'"]);
    }

    #[test]
    fn config_map_and_secret_data_keys_are_checked_at_their_paths() {
        let cm = json!({"data": {"a b": "1", "ok": "2"}, "binaryData": {"ok": "AA=="}});
        let errs = errors(&configmaps(), &cm);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["data[a b]", "binaryData[ok]"]);
        assert_eq!(
            errors(
                &ResourceDef::built_in("", "v1", "Secret", "secrets", true, false),
                &json!({"data": {"../x": "AA=="}})
            )
            .len(),
            2
        );
        assert!(errors(&deployments(), &json!({"data": {"a b": 1}})).is_empty());
    }
}

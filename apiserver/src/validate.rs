//! Validation of object metadata: names, label keys and values, annotations.
//!
//! The checks and their messages are the API server's (apimachinery's `IsDNS1123Subdomain`,
//! `IsQualifiedName`, `IsValidLabelValue`, `ValidateAnnotations`): most names are DNS-1123
//! subdomains (at most 253 characters), namespace and service names DNS-1123 labels (at most
//! 63; a service's may start with a digit since Kubernetes 1.34), RBAC role and binding names
//! path segments; label keys and
//! annotation keys are qualified names; the annotations of one object hold at most 256 KiB. Each message the checker returns becomes one
//! [`FieldError`] at the real field path (`metadata.name`, `metadata.labels`...).

use serde_json::Value;

use crate::field_error::FieldError;
use crate::object;
use crate::resource::ResourceDef;

/// The longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// The longest DNS-1123 or DNS-1035 label.
pub const DNS1123_LABEL_MAX: usize = 63;
/// The longest name part of a qualified name, and the longest label value.
pub const QUALIFIED_NAME_MAX: usize = 63;
/// The most bytes all annotations of one object may hold (keys plus values).
pub const TOTAL_ANNOTATION_SIZE_MAX: usize = 256 * 1024;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// The API server's wording of a pattern failure: message, examples and the regex.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut s = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push_str(&format!("'{example}', "));
    }
    s.push_str(&format!("regex used for validation is '{fmt}')"));
    s
}

pub(crate) fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_label(s: &str) -> bool {
    s.starts_with(is_lower_alnum) && s.ends_with(is_lower_alnum) && s.chars().all(|c| is_lower_alnum(c) || c == '-')
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.starts_with(alnum) && s.ends_with(alnum) && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Messages for a value that is not a DNS-1123 subdomain; empty when it is one.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !value.split('.').all(matches_label) {
        errs.push(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// Messages for a value that is not a DNS-1123 label; empty when it is one.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_label(value) {
        errs.push(regex_error(LABEL_MSG, LABEL_FMT, &["my-name", "123-abc"]));
    }
    errs
}

/// Messages for a value that is not a DNS-1035 label; empty when it is one.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !(matches_label(value) && value.starts_with(|c: char| c.is_ascii_lowercase())) {
        errs.push(regex_error(DNS1035_MSG, DNS1035_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// Messages for a value that is not a qualified name (`[prefix/]name`); empty when it is one.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            let pattern = regex_error(QUALIFIED_MSG, QUALIFIED_FMT, &["MyName", "my.name", "123-abc"]);
            errs.push(format!(
                "a qualified name {pattern} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !matches_qualified(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_MSG, QUALIFIED_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// Messages for a value that is not a valid label value; empty when it is one.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > QUALIFIED_NAME_MAX {
        errs.push(max_len_error(QUALIFIED_NAME_MAX));
    }
    if !value.is_empty() && !matches_qualified(value) {
        errs.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// The name rule of a resource's objects.
fn name_errors(def: &ResourceDef, name: &str) -> Vec<String> {
    if def.name_is_path_segment() {
        path_segment(name)
    } else if def.name_is_label() {
        dns1123_label(name)
    } else {
        dns1123_subdomain(name)
    }
}

/// apimachinery's `IsValidPathSegmentName`: a name that may stand in a URL path as one
/// segment — not `.` or `..`, no `/` or `%`.
pub fn path_segment(name: &str) -> Vec<String> {
    if let Some(dots) = [".", ".."].into_iter().find(|dots| name == *dots) {
        return vec![format!("may not be '{dots}'")];
    }
    ["/", "%"].into_iter().filter(|c| name.contains(c)).map(|c| format!("may not contain '{c}'")).collect()
}

/// Validates an object's metadata: its name (when set), namespace (when set), labels and
/// annotations. The object's shape must have passed [`object::check_shape`].
pub fn object_meta(def: &ResourceDef, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = object::name(obj);
    if !name.is_empty() {
        errs.extend(name_errors(def, name).iter().map(|m| FieldError::invalid("metadata.name", name, m)));
    }
    let namespace = object::namespace(obj);
    if !namespace.is_empty() {
        errs.extend(dns1123_label(namespace).iter().map(|m| FieldError::invalid("metadata.namespace", namespace, m)));
    }
    let meta = object::metadata(obj);
    if let Some(labels) = meta.and_then(|m| m.get("labels")).and_then(Value::as_object) {
        for (key, value) in labels {
            errs.extend(qualified_name(key).iter().map(|m| FieldError::invalid("metadata.labels", key, m)));
            let value = value.as_str().unwrap_or_default();
            errs.extend(label_value(value).iter().map(|m| FieldError::invalid("metadata.labels", value, m)));
        }
    }
    if def.built_in && def.kind == "Event" && (def.group.is_empty() || def.group == "events.k8s.io") {
        errs.extend(event_errors(def, obj));
    }
    if let Some(finalizers) = meta.and_then(|m| m.get("finalizers")).and_then(Value::as_array) {
        errs.extend(finalizer_errors(finalizers));
    }
    if let Some(annotations) = meta.and_then(|m| m.get("annotations")).and_then(Value::as_object) {
        let mut total = 0;
        for (key, value) in annotations {
            errs.extend(
                qualified_name(&key.to_lowercase()).iter().map(|m| FieldError::invalid("metadata.annotations", key, m)),
            );
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_MAX {
            errs.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_MAX));
        }
    }
    errs
}

/// The longest Event `reason` and `action`.
pub const EVENT_REASON_MAX: usize = 128;
/// The longest Event `note` (core: `message`), in bytes.
pub const EVENT_NOTE_MAX: usize = 1024;

/// The API server's bounds on an Event's texts (`ValidateEventCreate`): `reason` and `action`
/// at most 128 characters, the note (`message` of a core Event) at most 1 KiB.
fn event_errors(def: &ResourceDef, obj: &Value) -> Vec<FieldError> {
    let note = if def.group.is_empty() { "message" } else { "note" };
    [("reason", EVENT_REASON_MAX), ("action", EVENT_REASON_MAX), (note, EVENT_NOTE_MAX)]
        .into_iter()
        .filter(|(field, max)| obj.get(*field).and_then(Value::as_str).is_some_and(|text| text.len() > *max))
        .map(|(field, max)| FieldError::invalid(field, "", &format!("can have at most {max} characters")))
        .collect()
}

/// apimachinery's `ValidateFinalizers`: each finalizer is a qualified name, and an object
/// is not deleted both in the foreground and orphaning its dependents. (Their number is
/// bounded by the size of the object, as on the API server.)
fn finalizer_errors(finalizers: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, finalizer) in finalizers.iter().enumerate() {
        let field = format!("metadata.finalizers[{i}]");
        let Some(name) = finalizer.as_str() else {
            errs.push(FieldError::invalid(&field, &finalizer.to_string(), "must be a string"));
            continue;
        };
        errs.extend(qualified_name(name).iter().map(|m| FieldError::invalid(&field, name, m)));
    }
    let has = |name: &str| finalizers.iter().any(|f| f.as_str() == Some(name));
    if has(crate::ORPHAN_FINALIZER) && has(crate::FOREGROUND_FINALIZER) {
        errs.push(FieldError::invalid(
            "metadata.finalizers",
            crate::FOREGROUND_FINALIZER,
            &format!("finalizer {} and {} cannot be both set", crate::ORPHAN_FINALIZER, crate::FOREGROUND_FINALIZER),
        ));
    }
    errs
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;

//! Answers made comparable: what two servers must differ in (uids, times, resource versions,
//! generated names, continue tokens) becomes a placeholder, so that what is left differs
//! only where the servers disagree. Presence is kept: a field one server sets and the other
//! does not still shows.

use serde_json::{Map, Value};

/// `body` with the values every server makes up replaced by placeholders.
pub fn normalise(body: &Value) -> Value {
    let mut body = body.clone();
    walk(&mut body, &mut Vec::new(), None);
    body
}

/// The name of a Pod's service account token volume, before its random suffix.
const TOKEN_VOLUME: &str = "kube-api-access-";

/// The prefix of the name of an object whose name was generated, from its metadata.
fn generated_prefix(metadata: &Value) -> Option<String> {
    metadata.get("generateName").and_then(Value::as_str).map(str::to_owned)
}

/// The cells of a Table's date columns (an age, `12s`, which moves with the clock).
fn hide_ages(table: &mut Map<String, Value>) {
    let Some(Value::Array(columns)) = table.get("columnDefinitions") else { return };
    let dates: Vec<usize> =
        columns.iter().enumerate().filter(|(_, c)| c["type"] == "date" || c["name"] == "Age").map(|(i, _)| i).collect();
    let Some(Value::Array(rows)) = table.get_mut("rows") else { return };
    for cells in rows.iter_mut().filter_map(|row| row.get_mut("cells")).filter_map(Value::as_array_mut) {
        for &i in &dates {
            if let Some(cell) = cells.get_mut(i) {
                *cell = Value::String("<age>".into());
            }
        }
    }
}

fn walk(value: &mut Value, path: &mut Vec<String>, generated: Option<&str>) {
    match value {
        Value::Object(map) => {
            hide_ages(map);
            // Each object of a list has its own generated name.
            let own = map.get("metadata").and_then(generated_prefix);
            let generated = own.as_deref().or(generated);
            normalise_fields(map, path, generated);
            for (key, child) in map.iter_mut() {
                path.push(key.clone());
                walk(child, path, generated);
                path.pop();
            }
        }
        Value::Array(items) => {
            for item in items {
                path.push("[]".into());
                walk(item, path, generated);
                path.pop();
            }
        }
        Value::String(text) => {
            if is_uid(text) {
                *text = "<uid>".into();
            } else if is_time(text) {
                *text = "<time>".into();
            } else if let Some(suffix) = text.strip_prefix(TOKEN_VOLUME)
                && suffix.len() == 5
            {
                *text = format!("{TOKEN_VOLUME}<generated>");
            } else if path.last().is_some_and(|k| k == "message") {
                *text = numbers_hidden(text);
            }
        }
        _ => {}
    }
}

/// The fields of one map that are made up by the server.
fn normalise_fields(map: &mut Map<String, Value>, path: &[String], generated: Option<&str>) {
    let in_metadata = path.last().is_some_and(|k| k == "metadata");
    if in_metadata {
        for field in ["resourceVersion", "continue"] {
            if let Some(v) = map.get_mut(field)
                && v.as_str().is_some_and(|s| !s.is_empty())
            {
                *v = Value::String(format!("<{field}>"));
            }
        }
        if let (Some(prefix), Some(Value::String(name))) = (generated, map.get_mut("name"))
            && name.starts_with(prefix)
        {
            *name = format!("{prefix}<generated>");
        }
        if let Some(Value::Number(_)) = map.get("remainingItemCount") {
            map.insert("remainingItemCount".into(), Value::String("<count>".into()));
        }
    }
    // A Status's details name the generated object too.
    if path.last().is_some_and(|k| k == "details")
        && let (Some(prefix), Some(Value::String(name))) = (generated, map.get_mut("name"))
        && name.starts_with(prefix)
    {
        *name = format!("{prefix}<generated>");
    }
}

/// `8-4-4-4-12` hexadecimal digits.
fn is_uid(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// An RFC 3339 time (`2024-01-01T00:00:00Z`, with fractions or an offset).
fn is_time(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
}

/// A message with its runs of two or more digits (resource versions, sizes) hidden, so that
/// the servers' own counters do not tell their messages apart.
fn numbers_hidden(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() >= 2 {
            out.push_str("<n>");
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn made_up_values_become_placeholders_and_presence_stays() {
        let body = json!({"metadata": {
            "name": "web-x7k2p", "generateName": "web-", "uid": "0b6c3a44-52f0-4c0e-9d8e-1f2a3b4c5d6e",
            "resourceVersion": "4711", "creationTimestamp": "2026-11-28T04:00:00Z",
            "managedFields": [{"time": "2026-11-28T04:00:00Z", "manager": "m"}],
        }, "message": "ResourceVersion in precondition: 4711, 1 object"});
        let normal = normalise(&body);
        assert_eq!(normal["metadata"]["name"], "web-<generated>");
        assert_eq!(normal["metadata"]["uid"], "<uid>");
        assert_eq!(normal["metadata"]["resourceVersion"], "<resourceVersion>");
        assert_eq!(normal["metadata"]["creationTimestamp"], "<time>");
        assert_eq!(normal["metadata"]["managedFields"][0]["time"], "<time>");
        assert_eq!(normal["metadata"]["managedFields"][0]["manager"], "m");
        assert_eq!(normal["message"], "ResourceVersion in precondition: <n>, 1 object");
        assert!(normalise(&json!({"metadata": {}}))["metadata"].get("uid").is_none(), "absent stays absent");
        let list = json!({"items": [{"metadata": {"name": "gen-abcde", "generateName": "gen-"}}, {"metadata": {"name": "plain"}}]});
        let list = normalise(&list);
        assert_eq!(list["items"][0]["metadata"]["name"], "gen-<generated>", "a list item's own generated name");
        assert_eq!(list["items"][1]["metadata"]["name"], "plain");
    }

    #[test]
    fn a_tables_ages_become_placeholders() {
        let table = json!({
            "kind": "Table",
            "columnDefinitions": [{"name": "Name", "type": "string"}, {"name": "Age", "type": "date"}],
            "rows": [{"cells": ["web", "12s"]}]
        });
        assert_eq!(normalise(&table)["rows"][0]["cells"], json!(["web", "<age>"]));
    }
}

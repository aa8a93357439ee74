//! A custom resource's columns: its CustomResourceDefinition version's
//! `additionalPrinterColumns` (or, when it declares none, `Age`), after `Name`, with the
//! cells apiextensions-apiserver's table convertor makes of them: the value at the column's
//! JSONPath as the column's type (a `date` as an age), none when absent or of another type.

use serde_json::{Value, json};

use super::{NAME, since};

/// The columns of one custom resource version.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CustomColumns {
    columns: Vec<(Value, String)>,
}

/// The columns `crd` (a CustomResourceDefinition) gives its `version`.
pub(crate) fn custom_columns(crd: &Value, version: &str) -> CustomColumns {
    let declared = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
        .and_then(|v| v.get("additionalPrinterColumns"))
        .or_else(|| crd.pointer("/spec/additionalPrinterColumns"))
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]);
    let columns = declared
        .into_iter()
        .map(|c| {
            let field = |f: &str| c.get(f).cloned().unwrap_or_else(|| json!(""));
            let definition = json!({
                "name": field("name"), "type": field("type"), "format": field("format"),
                "description": field("description"), "priority": c.get("priority").cloned().unwrap_or(json!(0)),
            });
            (definition, c.get("jsonPath").and_then(Value::as_str).unwrap_or_default().to_owned())
        })
        .collect();
    CustomColumns { columns }
}

impl CustomColumns {
    /// The column definitions, `Name` first.
    pub fn definitions(&self) -> Vec<Value> {
        std::iter::once(NAME.definition()).chain(self.columns.iter().map(|(d, _)| d.clone())).collect()
    }

    /// The cells of `object` (`now` in Unix seconds).
    pub fn cells(&self, object: &Value, now: i64) -> Vec<Value> {
        let mut cells = vec![json!(super::name(object))];
        for (definition, path) in &self.columns {
            let value = find(object, path);
            cells.push(match (definition["type"].as_str().unwrap_or_default(), value) {
                (_, None | Some(Value::Null)) => Value::Null,
                ("integer", Some(v)) => {
                    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)).map_or(Value::Null, |i| json!(i))
                }
                ("number", Some(v)) => v.as_f64().map_or(Value::Null, |f| json!(f)),
                ("boolean", Some(v)) => v.as_bool().map_or(Value::Null, |b| json!(b)),
                ("date", Some(v)) => v.as_str().map_or(Value::Null, |t| json!(since(t, now))),
                // A string column prints whatever is there, as JSONPath prints it.
                (_, Some(Value::String(s))) => json!(s),
                (_, Some(other)) => json!(other.to_string()),
            });
        }
        cells
    }
}

/// The value at a simple JSONPath: `.a.b`, `.a[0].b`, `.a[?(@.type=="Ready")].status`,
/// `{.a.b}`; the first match.
pub fn find<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}').trim_start_matches('$');
    let mut at = object;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            at = at.get(&after[..end])?;
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let (inside, next) = (&after[..end], &after[end + 1..]);
            at = match inside.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                Some(filter) => {
                    let (field, wanted) = filter.split_once("==")?;
                    let wanted = wanted.trim().trim_matches(|c| c == '"' || c == '\'');
                    at.as_array()?.iter().find(|item| {
                        item.get(field.trim())
                            .is_some_and(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned) == wanted)
                    })?
                }
                None => at.get(inside.trim().parse::<usize>().ok()?)?,
            };
            rest = next;
        } else {
            return None;
        }
    }
    Some(at)
}

//! Field sets: which fields of an object a manager owns, in the `FieldsV1` format.
//!
//! A path is a list of elements written as `FieldsV1` writes them: `f:spec` (a map field),
//! `k:{"name":"web"}` (the item of an associative list with that key), `v:"x"` (an item of a
//! set list), `i:0` (a list item by index, for keyed lists whose item lacks its key). A
//! [`FieldSet`] holds the paths a manager owns: every leaf, every associative list item
//! (`.` in FieldsV1), and atomic lists as a whole. Which lists are associative follows
//! [`crate::strategic`]'s table; without a schema, other lists are atomic.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::resource::ResourceDef;
use crate::strategic::{ListStrategy, list_strategy};
use crate::write::Subresource;

/// One field path, as `FieldsV1` elements (`f:spec`, `k:{"name":"web"}`...).
pub type FieldPath = Vec<String>;

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet(BTreeSet<FieldPath>);

/// Metadata fields the server owns; they are never part of a manager's set.
const SERVER_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

impl FieldSet {
    /// The fields an object (or an applied configuration) sets, as seen by a write to
    /// `subresource`: apiVersion, kind and server-owned metadata are left out; a write to the
    /// main resource of a kind with a status subresource leaves out `status`, a write to
    /// `/status` covers only `status`.
    pub fn of_object(def: &ResourceDef, obj: &Value, subresource: Option<Subresource>) -> FieldSet {
        let mut set = FieldSet::default();
        let Some(map) = obj.as_object() else { return set };
        for (key, value) in map {
            let wanted = match (subresource, key.as_str()) {
                (_, "apiVersion" | "kind") => false,
                (Some(Subresource::Status), k) => k == "status",
                (None, "status") => !def.status_subresource,
                _ => true,
            };
            if !wanted {
                continue;
            }
            let mut path = vec![format!("f:{key}")];
            if key == "metadata" {
                let Some(meta) = value.as_object() else { continue };
                let mut ancestors = vec![key.clone()];
                for (field, v) in meta {
                    if SERVER_METADATA.contains(&field.as_str()) {
                        continue;
                    }
                    path.push(format!("f:{field}"));
                    collect(def.built_in, &mut ancestors, &mut path, field, v, &mut set);
                    path.pop();
                }
            } else {
                collect(def.built_in, &mut Vec::new(), &mut path, key, value, &mut set);
            }
        }
        set
    }

    /// Reads a `fieldsV1` tree.
    pub fn from_fields_v1(tree: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        decode(tree, &mut Vec::new(), &mut set);
        set
    }

    /// Writes the set as a `fieldsV1` tree.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<String, Node>,
        }
        fn emit(node: &Node) -> Value {
            let mut map = Map::new();
            if node.member && !node.children.is_empty() {
                map.insert(".".into(), Value::Object(Map::new()));
            }
            for (k, child) in &node.children {
                map.insert(k.clone(), emit(child));
            }
            Value::Object(map)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for element in path {
                node = node.children.entry(element.clone()).or_default();
            }
            node.member = true;
        }
        emit(&root)
    }

    /// Adds a path.
    pub fn insert(&mut self, path: FieldPath) {
        self.0.insert(path);
    }

    /// Removes a path; whether it was there.
    pub fn remove(&mut self, path: &FieldPath) -> bool {
        self.0.remove(path)
    }

    /// Whether the path is in the set.
    pub fn contains(&self, path: &FieldPath) -> bool {
        self.0.contains(path)
    }

    /// Whether the set holds this path or a path below it.
    pub fn covers(&self, path: &FieldPath) -> bool {
        self.0.iter().any(|p| p.starts_with(path))
    }

    /// The paths, in order.
    pub fn iter(&self) -> std::collections::btree_set::Iter<'_, FieldPath> {
        self.0.iter()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The paths of `self` that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }
}

impl FromIterator<FieldPath> for FieldSet {
    fn from_iter<I: IntoIterator<Item = FieldPath>>(iter: I) -> Self {
        FieldSet(iter.into_iter().collect())
    }
}

/// Adds the paths of `value`, the value of field `field` (under the fields `ancestors`),
/// whose path is `path`.
fn collect(
    built_in: bool,
    ancestors: &mut Vec<String>,
    path: &mut FieldPath,
    field: &str,
    value: &Value,
    set: &mut FieldSet,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            ancestors.push(field.to_string());
            for (k, v) in map {
                path.push(format!("f:{k}"));
                collect(built_in, ancestors, path, k, v, set);
                path.pop();
            }
            ancestors.pop();
        }
        Value::Array(items) => match list_strategy(built_in, ancestors, field) {
            ListStrategy::Atomic => set.insert(path.clone()),
            ListStrategy::Set => {
                for item in items {
                    let mut p = path.clone();
                    p.push(format!("v:{item}"));
                    set.insert(p);
                }
            }
            ListStrategy::Keyed(key) => {
                ancestors.push(field.to_string());
                for (index, item) in items.iter().enumerate() {
                    let element = match item.get(key) {
                        Some(id) => format!("k:{}", Value::Object(Map::from_iter([(key.to_string(), id.clone())]))),
                        None => format!("i:{index}"),
                    };
                    path.push(element);
                    set.insert(path.clone());
                    if let Some(fields) = item.as_object() {
                        for (k, v) in fields {
                            path.push(format!("f:{k}"));
                            collect(built_in, ancestors, path, k, v, set);
                            path.pop();
                        }
                    }
                    path.pop();
                }
                ancestors.pop();
            }
        },
        // A built-in kind's typed object has no null: Go reads it as unset (a field without
        // `omitempty`, written back as null, is not set by anyone).
        Value::Null if built_in => {}
        _ => set.insert(path.clone()),
    }
}

fn decode(node: &Value, path: &mut FieldPath, set: &mut FieldSet) {
    let Some(map) = node.as_object() else { return };
    if !path.is_empty() && (map.is_empty() || map.contains_key(".")) {
        set.insert(path.clone());
    }
    for (k, child) in map {
        if k == "." {
            continue;
        }
        path.push(k.clone());
        decode(child, path, set);
        path.pop();
    }
}

/// Whether the path ends at a list item (an associative or set list item) rather than a field.
pub fn ends_at_item(path: &FieldPath) -> bool {
    path.last().is_some_and(|e| e.starts_with("k:") || e.starts_with("v:") || e.starts_with("i:"))
}

/// Finds the list item an element designates.
fn find_item(items: &[Value], element: &str) -> Option<usize> {
    if let Some(key) = element.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(key).ok()?;
        items.iter().position(|item| key.iter().all(|(k, v)| item.get(k) == Some(v)))
    } else if let Some(value) = element.strip_prefix("v:") {
        let value: Value = serde_json::from_str(value).ok()?;
        items.iter().position(|item| *item == value)
    } else {
        let index: usize = element.strip_prefix("i:")?.parse().ok()?;
        (index < items.len()).then_some(index)
    }
}

/// The value at a path, if present.
pub fn value_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = obj;
    for element in path {
        node = match (element.strip_prefix("f:"), node) {
            (Some(field), Value::Object(map)) => map.get(field)?,
            (None, Value::Array(items)) => &items[find_item(items, element)?],
            _ => return None,
        };
    }
    Some(node)
}

/// Removes the value at a path; whether there was one.
pub fn remove_at(obj: &mut Value, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut node = obj;
    for element in parents {
        node = match (element.strip_prefix("f:"), node) {
            (Some(field), Value::Object(map)) => match map.get_mut(field) {
                Some(v) => v,
                None => return false,
            },
            (None, Value::Array(items)) => match find_item(items, element) {
                Some(i) => &mut items[i],
                None => return false,
            },
            _ => return false,
        };
    }
    match (last.strip_prefix("f:"), node) {
        (Some(field), Value::Object(map)) => map.remove(field).is_some(),
        (None, Value::Array(items)) => match find_item(items, last) {
            Some(i) => {
                items.remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// A path as conflict messages print it: `.spec.containers[name="web"].image`.
pub fn display(path: &[String]) -> String {
    let mut out = String::new();
    for element in path {
        if let Some(field) = element.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(key) = element.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
            let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(value) = element.strip_prefix("v:") {
            out.push_str(&format!("[={value}]"));
        } else if let Some(index) = element.strip_prefix("i:") {
            out.push_str(&format!("[{index}]"));
        }
    }
    out
}

#[cfg(test)]
#[path = "fieldset_tests.rs"]
mod tests;

//! `metadata.managedFields`: which manager owns which fields, and how writes change that.
//!
//! Each entry names a manager, an operation (`Apply` for server-side apply, `Update` for any
//! other write), the apiVersion it wrote with, the time, an optional subresource, and its
//! [`FieldSet`] as `fieldsV1`. [`record_update`] gives a non-apply write's manager the fields
//! it set or changed, taking them from other managers, as the API server does.

use serde_json::{Map, Value};

use crate::fieldset::{FieldSet, ends_at_item, value_at};
use crate::object;
use crate::resource::ResourceDef;
use crate::write::Subresource;

/// The operation of a server-side apply.
pub const APPLY: &str = "Apply";
/// The operation of any other write.
pub const UPDATE: &str = "Update";
/// The manager that owns the fields of an object that had no managed fields when it was
/// first applied to.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedEntry {
    /// The field manager.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// The apiVersion the manager wrote with.
    pub api_version: String,
    /// When the manager last changed its fields (RFC 3339).
    pub time: Option<String>,
    /// The subresource written (`status`), or empty for the main resource.
    pub subresource: String,
    /// The fields owned.
    pub fields: FieldSet,
}

impl ManagedEntry {
    /// Whether this entry is the one of `manager` with `operation` on `subresource`.
    pub fn is(&self, manager: &str, operation: &str, subresource: Option<Subresource>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == sub_name(subresource)
    }

    /// How conflict messages name the entry's manager: `"m"`, `"m" with subresource "status"`,
    /// and for updates `"m" using apps/v1 at <time>`.
    pub fn describe(&self) -> String {
        let mut s = crate::field_error::quote(&self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {}", crate::field_error::quote(&self.subresource)));
        }
        if self.operation == UPDATE {
            s.push_str(&format!(" using {}", self.api_version));
            if let Some(time) = &self.time {
                s.push_str(&format!(" at {time}"));
            }
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("manager".into(), self.manager.clone().into());
        map.insert("operation".into(), self.operation.clone().into());
        map.insert("apiVersion".into(), self.api_version.clone().into());
        if let Some(time) = &self.time {
            map.insert("time".into(), time.clone().into());
        }
        map.insert("fieldsType".into(), "FieldsV1".into());
        map.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            map.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(map)
    }
}

pub(crate) fn sub_name(subresource: Option<Subresource>) -> &'static str {
    subresource.map_or("", Subresource::as_str)
}

/// The managed-field entries of an object; entries that are not `FieldsV1` read as empty sets.
pub fn read(obj: &Value) -> Vec<ManagedEntry> {
    let Some(list) = object::metadata(obj).and_then(|m| m.get("managedFields")).and_then(Value::as_array) else {
        return Vec::new();
    };
    let text = |entry: &Value, field: &str| entry.get(field).and_then(Value::as_str).unwrap_or("").to_string();
    list.iter()
        .map(|entry| ManagedEntry {
            manager: text(entry, "manager"),
            operation: text(entry, "operation"),
            api_version: text(entry, "apiVersion"),
            time: entry.get("time").and_then(Value::as_str).map(String::from),
            subresource: text(entry, "subresource"),
            fields: entry.get("fieldsV1").map(FieldSet::from_fields_v1).unwrap_or_default(),
        })
        .collect()
}

/// Writes the entries that own something, in the API server's order (operation — `Apply`
/// before `Update` —, then time to the second, manager, apiVersion, subresource); removes
/// `managedFields` when none does.
pub fn write(obj: &mut Value, entries: &[ManagedEntry]) {
    let mut owning: Vec<&ManagedEntry> = entries.iter().filter(|e| !e.fields.is_empty()).collect();
    let second = |e: &ManagedEntry| e.time.as_deref().map(|t| t.get(..19).unwrap_or(t).to_owned()).unwrap_or_default();
    owning.sort_by(|p, q| {
        (p.operation.as_str(), second(p), p.manager.as_str(), p.api_version.as_str(), p.subresource.as_str()).cmp(&(
            q.operation.as_str(),
            second(q),
            q.manager.as_str(),
            q.api_version.as_str(),
            q.subresource.as_str(),
        ))
    });
    let list: Vec<Value> = owning.into_iter().map(ManagedEntry::to_json).collect();
    if list.is_empty() {
        object::remove_meta(obj, "managedFields");
    } else if let Ok(meta) = object::metadata_mut(obj) {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

/// Records a non-apply write by `manager`: the fields of `new` that are new or changed since
/// `old` become the manager's (operation `Update`) and are taken from every other manager;
/// fields `old` had and `new` lacks are dropped from every manager. A write that changes no
/// field leaves the entries as they are.
pub fn record_update(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<Subresource>,
    now: &str,
) {
    let new_fields = FieldSet::of_object(def, new, subresource);
    let old_fields = old.map(|o| FieldSet::of_object(def, o, subresource)).unwrap_or_default();
    let changed: FieldSet = new_fields
        .iter()
        .filter(|path| match old {
            None => true,
            Some(_) if ends_at_item(path) => !old_fields.contains(path),
            Some(o) => value_at(o, path) != value_at(new, path),
        })
        .cloned()
        .collect();
    let removed = old_fields.difference(&new_fields);
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let mut entries = read(new);
    for entry in &mut entries {
        for path in changed.iter().chain(removed.iter()) {
            entry.fields.remove(path);
        }
    }
    if !changed.is_empty() {
        let index = match entries.iter().position(|e| e.is(manager, UPDATE, subresource)) {
            Some(i) => i,
            None => {
                entries.push(ManagedEntry {
                    manager: manager.into(),
                    operation: UPDATE.into(),
                    api_version: String::new(),
                    time: None,
                    subresource: sub_name(subresource).into(),
                    fields: FieldSet::default(),
                });
                entries.len() - 1
            }
        };
        let entry = &mut entries[index];
        entry.api_version = def.api_version();
        entry.time = Some(now.into());
        for path in changed.iter() {
            entry.fields.insert(path.clone());
        }
    }
    write(new, &entries);
}

#[cfg(test)]
#[path = "managed_fields_tests.rs"]
mod tests;

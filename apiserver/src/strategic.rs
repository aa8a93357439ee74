//! Strategic merge: the merge patch of built-in kinds, where some lists merge by a key.
//!
//! A strategic merge patch behaves like a JSON merge patch (RFC 7386: maps merge, `null`
//! deletes a field, other values replace), except for lists the type declares mergeable:
//! `containers` merge by `name`, `ports` by `containerPort`, `conditions` by `type`,
//! `finalizers` as a set, and so on (`list_strategy` holds the table, covering the common
//! fields of the core and apps types). Directives: `$patch: replace` on a map or in a list
//! replaces it; `$patch: delete` on a map removes it, on a list item removes the item with
//! that key; `$deleteFromPrimitiveList/<field>` removes values from a set list;
//! `$retainKeys` is accepted and ignored. Custom resources have no such type information:
//! their lists are atomic, except the `metadata` lists every object shares.
//!
//! A merged list is ordered as apimachinery orders it ([`ListOrder::Patch`]): the patch's
//! items in the patch's order (or in `$setElementOrder/<field>`'s, when given), with the
//! items only the live list has slotted in where the live list had them — so an item new to
//! the list comes before the live items, as it does on a real API server.
//!
//! Server-side apply uses the same merge to bring an applied configuration into the live
//! object, keeping the live order and appending new items ([`ListOrder::Live`]).

use serde_json::{Map, Value};

use crate::status::Status;

/// How a list merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// The list is replaced as a whole.
    Atomic,
    /// Items are maps merged by the value of this key field.
    Keyed(&'static str),
    /// Items are scalars merged as a set.
    Set,
}

/// How the items of a merged list are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListOrder {
    /// As a strategic merge patch orders them (apimachinery's `normalizeElementOrder`).
    Patch,
    /// The live list's order, new items appended.
    Live,
}

/// What a merge needs to know besides the values.
#[derive(Debug, Clone, Copy)]
struct Rules {
    built_in: bool,
    order: ListOrder,
}

/// The merge strategy of the list in field `field`, under the fields `ancestors` (root first).
pub(crate) fn list_strategy(built_in: bool, ancestors: &[String], field: &str) -> ListStrategy {
    let in_metadata = ancestors.len() == 1 && ancestors[0] == "metadata";
    if in_metadata {
        return match field {
            "finalizers" => ListStrategy::Set,
            "ownerReferences" => ListStrategy::Keyed("uid"),
            _ => ListStrategy::Atomic,
        };
    }
    if !built_in {
        return ListStrategy::Atomic;
    }
    let in_container =
        ancestors.last().is_some_and(|a| matches!(a.as_str(), "containers" | "initContainers" | "ephemeralContainers"));
    match field {
        "containers" | "initContainers" | "ephemeralContainers" | "env" | "volumes" | "imagePullSecrets" => {
            ListStrategy::Keyed("name")
        }
        "ports" if in_container => ListStrategy::Keyed("containerPort"),
        "ports" => ListStrategy::Keyed("port"),
        "volumeMounts" => ListStrategy::Keyed("mountPath"),
        "volumeDevices" => ListStrategy::Keyed("devicePath"),
        "hostAliases" => ListStrategy::Keyed("ip"),
        "conditions" => ListStrategy::Keyed("type"),
        _ => ListStrategy::Atomic,
    }
}

const PATCH: &str = "$patch";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const RETAIN_KEYS: &str = "$retainKeys";

/// Merges `patch` into `target` with the list strategies of a built-in (`built_in`) or a
/// custom resource, ordering merged lists by `order`.
pub(crate) fn merge(built_in: bool, order: ListOrder, target: &Value, patch: &Value) -> Result<Value, Status> {
    let mut ancestors = Vec::new();
    match merge_value(Rules { built_in, order }, &mut ancestors, Some(target), patch)? {
        Some(v) => Ok(v),
        None => Ok(Value::Object(Map::new())),
    }
}

/// The merge of one value; `None` when a `$patch: delete` removes it.
fn merge_value(
    rules: Rules,
    ancestors: &mut Vec<String>,
    target: Option<&Value>,
    patch: &Value,
) -> Result<Option<Value>, Status> {
    let Some(patch_map) = patch.as_object() else { return Ok(Some(patch.clone())) };
    match patch_map.get(PATCH).and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => return Ok(Some(strip_directives(patch))),
        Some("merge") | None => {}
        Some(other) => return Err(Status::bad_request(format!("unknown patch type: {other}"))),
    }
    let mut result = match target {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let remove = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(list)) = result.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if key == PATCH || key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if value.is_null() {
            result.remove(key);
            continue;
        }
        let merged = match value {
            Value::Array(items) => {
                let strategy = list_strategy(rules.built_in, ancestors, key);
                let order = patch_map.get(&format!("{SET_ELEMENT_ORDER}{key}")).and_then(Value::as_array);
                ancestors.push(key.clone());
                let merged = merge_list(rules, ancestors, strategy, result.get(key), items, order);
                ancestors.pop();
                Some(merged?)
            }
            Value::Object(_) => {
                ancestors.push(key.clone());
                let merged = merge_value(rules, ancestors, result.get(key), value);
                ancestors.pop();
                merged?
            }
            _ => Some(value.clone()),
        };
        match merged {
            Some(v) => result.insert(key.clone(), v),
            None => result.remove(key),
        };
    }
    if rules.order == ListOrder::Patch {
        reorder_unpatched_lists(rules, ancestors, patch_map, &mut result);
    }
    Ok(Some(Value::Object(result)))
}

/// A `$setElementOrder/<field>` whose field the patch leaves alone still orders the live list.
fn reorder_unpatched_lists(
    rules: Rules,
    ancestors: &[String],
    patch: &Map<String, Value>,
    result: &mut Map<String, Value>,
) {
    for (key, order) in patch {
        let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) else { continue };
        let (Some(order), false) = (order.as_array(), patch.contains_key(field)) else { continue };
        let key = match list_strategy(rules.built_in, ancestors, field) {
            ListStrategy::Keyed(key) => Some(key),
            ListStrategy::Set => None,
            ListStrategy::Atomic => continue,
        };
        if let Some(Value::Array(live)) = result.get_mut(field) {
            *live = patch_order(live, order, &live.clone(), key);
        }
    }
}

fn merge_list(
    rules: Rules,
    ancestors: &mut Vec<String>,
    strategy: ListStrategy,
    target: Option<&Value>,
    patch: &[Value],
    set_order: Option<&Vec<Value>>,
) -> Result<Value, Status> {
    let replace = patch.iter().any(|i| i.get(PATCH).and_then(Value::as_str) == Some("replace"));
    let live = match (target, replace) {
        (Some(Value::Array(items)), false) => items.clone(),
        _ => Vec::new(),
    };
    match strategy {
        ListStrategy::Atomic => Ok(Value::Array(patch.iter().map(strip_directives).collect())),
        ListStrategy::Set => {
            let mut result = live.clone();
            for item in patch {
                if !result.contains(item) {
                    result.push(item.clone());
                }
            }
            Ok(Value::Array(ordered(rules, result, set_order.map_or(patch, Vec::as_slice), &live, None)))
        }
        ListStrategy::Keyed(key) => {
            let mut result = live.clone();
            for item in patch {
                if !item.is_object() {
                    result.push(item.clone());
                    continue;
                }
                if item.get(PATCH).and_then(Value::as_str) == Some("replace") && item.get(key).is_none() {
                    continue;
                }
                let Some(id) = item.get(key) else {
                    return Err(Status::bad_request(format!("map: {item} does not contain declared merge key: {key}")));
                };
                let found = result.iter().position(|live| live.get(key) == Some(id));
                let merged = merge_value(rules, ancestors, found.map(|i| &result[i]), item)?;
                match (found, merged) {
                    (Some(i), Some(v)) => result[i] = v,
                    (Some(i), None) => {
                        result.remove(i);
                    }
                    (None, Some(v)) => result.push(v),
                    (None, None) => {}
                }
            }
            let order = set_order.map_or(patch, Vec::as_slice);
            Ok(Value::Array(ordered(rules, result, order, &live, Some(key))))
        }
    }
}

/// `merged` in the order `rules` asks for; `key` identifies map items (scalars are their own).
fn ordered(rules: Rules, merged: Vec<Value>, patch: &[Value], live: &[Value], key: Option<&str>) -> Vec<Value> {
    match rules.order {
        ListOrder::Live => merged,
        ListOrder::Patch => patch_order(&merged, patch, live, key),
    }
}

/// apimachinery's order of a merged list: the items the patch names, in the patch's order,
/// with the live-only items slotted in where the live list had them relative to those items.
fn patch_order(merged: &[Value], patch: &[Value], live: &[Value], key: Option<&str>) -> Vec<Value> {
    let id = |item: &Value| -> Option<Value> {
        match key {
            Some(key) => item.get(key).cloned(),
            None => Some(item.clone()),
        }
    };
    let index =
        |list: &[Value], item: &Value| id(item).and_then(|i| list.iter().position(|x| id(x).as_ref() == Some(&i)));
    let (mut named, mut live_only): (Vec<&Value>, Vec<&Value>) =
        merged.iter().partition(|item| index(patch, item).is_some());
    named.sort_by_key(|item| index(patch, item));
    live_only.sort_by_key(|item| index(live, item));
    let mut out = Vec::with_capacity(merged.len());
    let (mut left, mut right) = (live_only.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
            (Some(l), Some(r)) => matches!((index(live, l), index(live, r)), (Some(li), Some(ri)) if li < ri),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next.cloned());
    }
    out
}

/// A patch value with its directives and nulls removed, as it is stored when nothing merges.
fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| {
                    !(k.as_str() == PATCH
                        || k.as_str() == RETAIN_KEYS
                        || k.starts_with(SET_ELEMENT_ORDER)
                        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                        || v.is_null())
                })
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|i| {
                    i.get(PATCH).and_then(Value::as_str) != Some("replace")
                        || i.as_object().is_some_and(|m| m.len() > 1)
                })
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
#[path = "strategic_tests.rs"]
mod tests;

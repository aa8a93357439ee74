//! Two answers compared, and each difference explained by a stated reason.
//!
//! A difference is a list of [`Item`]s: the status code, the Status reason, and every path
//! of the normalised body where the two differ. The reasons (`tests/api-agreement/
//! reasons.yaml`) say which items of which steps they explain; an item no reason explains
//! is a regression, and a reason that explains nothing is stale.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;

use super::corpus::{Compare, Step};
use super::normalise::normalise;

/// A server's answer to a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The HTTP status code.
    pub code: u16,
    /// The `reason` of a Status body; empty otherwise.
    pub reason: String,
    /// The normalised body (`Null` when it was not JSON).
    pub body: Value,
}

impl Answer {
    /// An answer from its status code and raw body.
    pub fn new(code: u16, body: &[u8]) -> Self {
        let body = serde_json::from_slice::<Value>(body).map(|b| normalise(&b)).unwrap_or(Value::Null);
        let reason = match body.get("kind").and_then(Value::as_str) {
            Some("Status") => body["reason"].as_str().unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        Self { code, reason, body }
    }
}

/// One way two answers differ.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Item {
    /// Status codes: (real, embedded).
    Code(u16, u16),
    /// Status reasons: (real, embedded).
    Reason(String, String),
    /// A body path where the values differ, with where it is present.
    Body {
        /// The path, segments joined by `.` (list items by index).
        path: String,
        /// Which answers have it.
        on: Presence,
    },
}

/// Where a differing body path is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Presence {
    /// Only in the real server's answer.
    RealOnly,
    /// Only in the embedded cluster's answer.
    EmbeddedOnly,
    /// In both, with other values.
    Both,
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::Code(real, ours) => write!(f, "status {real} (embedded {ours})"),
            Item::Reason(real, ours) => write!(f, "reason {real:?} (embedded {ours:?})"),
            Item::Body { path, on: Presence::RealOnly } => write!(f, "`{path}` only from the real server"),
            Item::Body { path, on: Presence::EmbeddedOnly } => write!(f, "`{path}` only from the embedded cluster"),
            Item::Body { path, on: Presence::Both } => write!(f, "`{path}` differs"),
        }
    }
}

/// How `embedded` differs from `real` for `step`; empty when they agree.
pub fn differences(step: &Step, real: &Answer, embedded: &Answer) -> Vec<Item> {
    let mut items = Vec::new();
    if real.code != embedded.code {
        items.push(Item::Code(real.code, embedded.code));
    }
    if real.reason != embedded.reason {
        items.push(Item::Reason(real.reason.clone(), embedded.reason.clone()));
    }
    if step.compare == Compare::All {
        diff(&real.body, &embedded.body, &mut Vec::new(), &mut items);
    }
    items
}

/// The paths where `a` (real) and `b` (embedded) differ.
fn diff(a: &Value, b: &Value, path: &mut Vec<String>, out: &mut Vec<Item>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                path.push(key.clone());
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => diff(u, v, path, out),
                    (Some(_), None) => out.push(Item::Body { path: path.join("."), on: Presence::RealOnly }),
                    (None, Some(_)) => out.push(Item::Body { path: path.join("."), on: Presence::EmbeddedOnly }),
                    (None, None) => {}
                }
                path.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                path.push(i.to_string());
                diff(u, v, path, out);
                path.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(Item::Body { path: path.join("."), on: Presence::Both }),
    }
}

/// A stated reason for differences.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reason {
    /// Why the embedded cluster answers otherwise.
    pub why: String,
    /// The steps it covers (`*` matches any text); all steps when absent.
    #[serde(default)]
    pub steps: Vec<String>,
    /// Whether it explains a different status code and reason.
    #[serde(default)]
    pub status: bool,
    /// The body paths it explains (segments by `.`, `*` one segment, `**` any rest).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Only paths present on this side (`real` or `embedded`).
    #[serde(default)]
    pub only: Option<String>,
}

impl Reason {
    /// Whether this reason explains `item` of step `step`.
    pub fn explains(&self, step: &str, item: &Item) -> bool {
        if !self.steps.is_empty() && !self.steps.iter().any(|p| wildcard(p, step)) {
            return false;
        }
        match item {
            Item::Code(..) | Item::Reason(..) => self.status,
            Item::Body { path, on } => {
                let side = matches!(
                    (self.only.as_deref(), on),
                    (None, _) | (Some("real"), Presence::RealOnly) | (Some("embedded"), Presence::EmbeddedOnly)
                );
                side && self.paths.iter().any(|p| path_matches(p, path))
            }
        }
    }
}

/// The reasons of `file`.
pub fn load_reasons(file: &Path) -> Result<Vec<Reason>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    serde_norway::from_str(&text).with_context(|| format!("parsing {}", file.display()))
}

/// `*` in `pattern` matches any text.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether body path `path` matches `pattern`.
fn path_matches(pattern: &str, path: &str) -> bool {
    // The empty pattern is the body as a whole.
    let pattern: Vec<&str> = if pattern.is_empty() { Vec::new() } else { pattern.split('.').collect() };
    let path: Vec<&str> = if path.is_empty() { Vec::new() } else { path.split('.').collect() };
    segments_match(&pattern, &path)
}

fn segments_match(pattern: &[&str], path: &[&str]) -> bool {
    match (pattern.first(), path.first()) {
        (Some(&"**"), _) => true,
        (None, None) => true,
        (Some(p), Some(s)) if *p == "*" || p == s => segments_match(&pattern[1..], &path[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> Step {
        serde_norway::from_str("{category: c, name: n, method: GET, path: /}").unwrap()
    }

    #[test]
    fn differences_name_code_reason_and_body_paths_by_side() {
        let real = Answer::new(201, br#"{"spec": {"a": 1, "b": [1, 2]}, "status": {}}"#);
        let ours = Answer::new(200, br#"{"spec": {"a": 2, "b": [1, 3], "c": true}}"#);
        let items = differences(&step(), &real, &ours);
        let shown: Vec<String> = items.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "status 201 (embedded 200)",
                "`spec.a` differs",
                "`spec.b.1` differs",
                "`spec.c` only from the embedded cluster",
                "`status` only from the real server"
            ]
        );
        assert!(differences(&step(), &real, &real.clone()).is_empty());
    }

    #[test]
    fn reasons_explain_the_steps_paths_and_sides_they_name() {
        let reason: Reason =
            serde_norway::from_str("{why: w, steps: ['create *'], paths: ['spec.*.image', 'status.**'], only: real}")
                .unwrap();
        let real_only = |path: &str| Item::Body { path: path.into(), on: Presence::RealOnly };
        assert!(reason.explains("create a Pod", &real_only("spec.containers.image")));
        assert!(reason.explains("create a Pod", &real_only("status.phase.deep")));
        assert!(!reason.explains("create a Pod", &real_only("spec.containers.0.image")));
        assert!(!reason.explains("delete a Pod", &real_only("status")));
        assert!(!reason.explains("create a Pod", &Item::Body { path: "status".into(), on: Presence::Both }));
        assert!(!reason.explains("create a Pod", &Item::Code(201, 200)), "status differences need status: true");
        assert!(wildcard("*", "anything") && wildcard("a*c*e", "abcde") && !wildcard("a*c", "abd"));
    }
}

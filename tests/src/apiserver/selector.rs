//! Label and field selectors as the API server parses and applies them.
//!
//! Labels: comma-separated requirements `key`, `!key`, `key=v`, `key==v`, `key!=v`,
//! `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n` (all must hold; `!=` and `notin` also
//! match objects without the key). Fields: `field=v`, `field==v`, `field!=v` over
//! `metadata.name`, `metadata.namespace` and the kind's own selectable fields; any other field
//! is rejected, as the API server does ("field label not supported").

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::resources::ResourceDef;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Exists(k) => labels.contains_key(k),
            Self::NotExists(k) => !labels.contains_key(k),
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Self::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
            Self::GreaterThan(k, n) => labels.get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
            Self::LessThan(k, n) => labels.get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        }
    }
}

/// A parsed label selector (empty: everything).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

fn is_value(v: &str) -> bool {
    v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) && v.len() <= 63
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced parentheses in `{text}`"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced parentheses in `{text}`"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_set(rest: &str, whole: &str) -> Result<BTreeSet<String>, String> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesized set of values in `{whole}`"))?;
    let mut set = BTreeSet::new();
    for value in inner.split(',').map(str::trim) {
        if !is_value(value) {
            return Err(format!("invalid label value `{value}` in `{whole}`"));
        }
        set.insert(value.to_owned());
    }
    Ok(set)
}

fn parse_requirement(text: &str) -> Result<Requirement, String> {
    let text = text.trim();
    if let Some(key) = text.strip_prefix('!') {
        let key = key.trim();
        if key.is_empty() || !key.chars().all(is_key_char) {
            return Err(format!("invalid label key in `{text}`"));
        }
        return Ok(Requirement::NotExists(key.to_owned()));
    }
    let key_end = text.find(|c: char| !is_key_char(c)).unwrap_or(text.len());
    let key = &text[..key_end];
    if key.is_empty() {
        return Err(format!("missing label key in `{text}`"));
    }
    let rest = text[key_end..].trim_start();
    let value = |v: &str| -> Result<String, String> {
        let v = v.trim();
        if is_value(v) { Ok(v.to_owned()) } else { Err(format!("invalid label value `{v}` in `{text}`")) }
    };
    let number = |v: &str| v.trim().parse::<i64>().map_err(|_| format!("`{text}` needs an integer"));
    let key = key.to_owned();
    Ok(if rest.is_empty() {
        Requirement::Exists(key)
    } else if let Some(v) = rest.strip_prefix("==") {
        Requirement::Equals(key, value(v)?)
    } else if let Some(v) = rest.strip_prefix("!=") {
        Requirement::NotEquals(key, value(v)?)
    } else if let Some(v) = rest.strip_prefix('=') {
        Requirement::Equals(key, value(v)?)
    } else if let Some(v) = rest.strip_prefix('>') {
        Requirement::GreaterThan(key, number(v)?)
    } else if let Some(v) = rest.strip_prefix('<') {
        Requirement::LessThan(key, number(v)?)
    } else if let Some(v) = rest.strip_prefix("notin") {
        Requirement::NotIn(key, parse_set(v, text)?)
    } else if let Some(v) = rest.strip_prefix("in") {
        Requirement::In(key, parse_set(v, text)?)
    } else {
        return Err(format!("unable to parse requirement `{text}`"));
    })
}

impl LabelSelector {
    /// Parses a selector; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        split_top_level(text)?.into_iter().map(parse_requirement).collect::<Result<_, _>>().map(Self)
    }

    /// Whether objects with these labels are selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }

    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A parsed field selector (empty: everything).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a selector for objects of `def`.
    pub fn parse(text: &str, def: &ResourceDef) -> Result<Self, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{text}'; can't understand '{term}'"));
            };
            let field = field.trim();
            let pointer = match field {
                "metadata.name" => "/metadata/name".to_owned(),
                "metadata.namespace" => "/metadata/namespace".to_owned(),
                other => def
                    .selectable_fields
                    .iter()
                    .find(|(label, _)| label == other)
                    .map(|(_, pointer)| pointer.clone())
                    .ok_or_else(|| format!("field label not supported: {other}"))?,
            };
            terms.push((pointer, equal, value.trim().to_owned()));
        }
        Ok(Self(terms))
    }

    /// Whether `object` is selected (an absent field reads as the empty string).
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(pointer, equal, value)| {
            let actual = object.pointer(pointer).and_then(Value::as_str).unwrap_or("");
            (actual == value) == *equal
        })
    }

    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn label_selectors_follow_the_api_server_grammar() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5"), ("example.com/x", "y")]);
        for (selector, expected) in [
            ("", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app=web", true),
            ("app==web", true),
            ("app = web", true),
            ("app!=web", false),
            ("missing!=x", true),
            ("app in (web, api)", true),
            ("app in(api)", false),
            ("app notin (api)", true),
            ("missing notin (api)", true),
            ("missing in (api)", false),
            ("app=web,tier in (front,back),!gone", true),
            ("app=web,tier=back", false),
            ("n>4", true),
            ("n<5", false),
            ("example.com/x=y", true),
        ] {
            assert_eq!(LabelSelector::parse(selector).unwrap().matches(&l), expected, "{selector}");
        }
        for bad in ["app in web", "=x", "app=(", "app in (a,b", "n>x", "a b"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors_support_metadata_and_declared_fields_only() {
        let pods = ResourceDef::builtin("", "v1", "Pod", "pods", true).with_field("spec.nodeName", "/spec/nodeName");
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}});
        for (selector, expected) in [
            ("metadata.name=p", true),
            ("metadata.name!=p", false),
            ("metadata.namespace==ns,spec.nodeName=n1", true),
            ("spec.nodeName=n2", false),
        ] {
            assert_eq!(FieldSelector::parse(selector, &pods).unwrap().matches(&pod), expected, "{selector}");
        }
        assert!(FieldSelector::parse("spec.other=x", &pods).unwrap_err().contains("not supported"));
        assert!(FieldSelector::parse("metadata.name", &pods).is_err());
    }
}

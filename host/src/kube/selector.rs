//! Kubernetes label selectors in their string form (`app=web, tier in (a,b), !canary`).
//!
//! A plugin's manifest filters each watched resource with a label selector written as
//! `kubectl -l` and the API server's `labelSelector` parameter accept it. kube-core's
//! `Selector` can be built from a `LabelSelector` object but does not parse strings, so this
//! module carries its own parser for the grammar of apimachinery's `labels.Parse`:
//!
//! ```text
//! selector    := requirement ( "," requirement )*      (empty string: match everything)
//! requirement := "!" key | key | key op
//! op          := ("=" | "==" | "!=") value
//!              | ("in" | "notin") "(" value ( "," value )* ")"
//!              | (">" | "<") integer
//! ```
//!
//! Semantics are the API server's: `!=` and `notin` also match objects without the key;
//! `>`/`<` need the label to hold an integer. [`LabelSelector`]'s `Display` writes a
//! canonical string that parses back to an equal selector and is what the reflector can pass
//! to the API server.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

/// Why a label selector string could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A requirement is empty, e.g. `a=b,,c` or a trailing comma.
    #[error("empty requirement at byte {position}")]
    EmptyRequirement {
        /// Byte offset in the selector string.
        position: usize,
    },
    /// Something else was found where the grammar expects a token.
    #[error("expected {expected} at byte {position}, found {found}")]
    Unexpected {
        /// What the grammar expects there.
        expected: &'static str,
        /// What was found (`end of input` at the end).
        found: String,
        /// Byte offset in the selector string.
        position: usize,
    },
    /// A label key is not a valid qualified name (`[prefix/]name`).
    #[error("invalid label key `{key}`: {reason}")]
    InvalidKey {
        /// The key as written.
        key: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A label value is not valid (at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric
    /// at both ends).
    #[error("invalid label value `{value}`: {reason}")]
    InvalidValue {
        /// The value as written.
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// `in ()` or `notin ()`: the value set of a set-based requirement must not be empty.
    #[error("`{key}` {operator} (): the value set must not be empty")]
    EmptyValueSet {
        /// The requirement's key.
        key: String,
        /// `in` or `notin`.
        operator: &'static str,
    },
    /// The operand of `>` or `<` is not an integer.
    #[error("`{value}` is not an integer (operators > and < compare integers)")]
    NotAnInteger {
        /// The operand as written.
        value: String,
    },
}

/// The condition a [`Requirement`] puts on one label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` or `key==value`: the label exists and equals the value.
    Equals(String),
    /// `key!=value`: the label is absent or differs from the value.
    NotEquals(String),
    /// `key in (a,b)`: the label exists and is one of the values.
    In(BTreeSet<String>),
    /// `key notin (a,b)`: the label is absent or none of the values.
    NotIn(BTreeSet<String>),
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label holds an integer greater than `n`.
    GreaterThan(i64),
    /// `key<n`: the label holds an integer less than `n`.
    LessThan(i64),
}

/// A set of labels a selector can be matched against.
pub trait LabelSet {
    /// The value of the label `key`, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl LabelSet for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// One comma-separated term of a selector: a key and a condition on its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The condition on the label.
    pub operator: Operator,
}

impl Requirement {
    /// Whether a label set satisfies this requirement.
    pub fn matches(&self, labels: &(impl LabelSet + ?Sized)) -> bool {
        let value = labels.label(&self.key);
        match &self.operator {
            Operator::Equals(v) => value == Some(v.as_str()),
            Operator::NotEquals(v) => value != Some(v.as_str()),
            Operator::In(set) => value.is_some_and(|v| set.contains(v)),
            Operator::NotIn(set) => value.is_none_or(|v| !set.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan(n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
            Operator::LessThan(n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |f: &mut fmt::Formatter<'_>, op: &str, values: &BTreeSet<String>| {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            write!(f, "{} {op} ({})", self.key, values.join(","))
        };
        match &self.operator {
            Operator::Equals(v) => write!(f, "{}={v}", self.key),
            Operator::NotEquals(v) => write!(f, "{}!={v}", self.key),
            Operator::In(values) => set(f, "in", values),
            Operator::NotIn(values) => set(f, "notin", values),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan(n) => write!(f, "{}>{n}", self.key),
            Operator::LessThan(n) => write!(f, "{}<{n}", self.key),
        }
    }
}

/// A parsed label selector: the conjunction of its requirements. The empty selector matches
/// every label set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Whether every requirement holds for `labels`.
    pub fn matches(&self, labels: &(impl LabelSet + ?Sized)) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The selector a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`)
    /// means, its requirements sorted by key as `LabelSelectorAsSelector` sorts them (its
    /// string form is the one the API server writes: `app=web,tier in (a,b)`). An unknown
    /// operator is read as `DoesNotExist`, as a selector that cannot match much.
    pub fn of_object(selector: &serde_json::Value) -> Self {
        let mut requirements =
            Self::of_labels(selector.get("matchLabels").unwrap_or(&serde_json::Value::Null)).requirements;
        for e in selector.get("matchExpressions").and_then(serde_json::Value::as_array).into_iter().flatten() {
            let key = e.get("key").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
            let values: BTreeSet<String> = e
                .get("values")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            let operator = match e.get("operator").and_then(serde_json::Value::as_str).unwrap_or_default() {
                "In" => Operator::In(values),
                "NotIn" => Operator::NotIn(values),
                "Exists" => Operator::Exists,
                _ => Operator::DoesNotExist,
            };
            requirements.push(Requirement { key, operator });
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// The selector a map of labels means (a ReplicationController's, a Service's):
    /// `key=value` for each, sorted by key.
    pub fn of_labels(labels: &serde_json::Value) -> Self {
        let mut requirements: Vec<Requirement> = labels
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                operator: Operator::Equals(v.as_str().unwrap_or_default().to_owned()),
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Parser { tokens: tokenize(s), pos: 0, len: s.len() }.selector()
    }
}

impl TryFrom<String> for LabelSelector {
    type Error = SelectorError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl<'de> serde::Deserialize<'de> for LabelSelector {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for LabelSelector {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Bang => "`!`".into(),
            Tok::Eq => "`=`".into(),
            Tok::DoubleEq => "`==`".into(),
            Tok::NotEq => "`!=`".into(),
            Tok::Gt => "`>`".into(),
            Tok::Lt => "`<`".into(),
            Tok::Open => "`(`".into(),
            Tok::Close => "`)`".into(),
            Tok::Comma => "`,`".into(),
        }
    }
}

/// Splits a selector into tokens with their byte offsets. Words run until whitespace or one
/// of the punctuation characters `! = < > ( ) ,`.
fn tokenize(s: &str) -> Vec<(usize, Tok)> {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'!' if next == Some(b'=') => Some((Tok::NotEq, 2)),
            b'!' => Some((Tok::Bang, 1)),
            b'=' if next == Some(b'=') => Some((Tok::DoubleEq, 2)),
            b'=' => Some((Tok::Eq, 1)),
            b'>' => Some((Tok::Gt, 1)),
            b'<' => Some((Tok::Lt, 1)),
            b'(' => Some((Tok::Open, 1)),
            b')' => Some((Tok::Close, 1)),
            b',' => Some((Tok::Comma, 1)),
            _ => None,
        };
        if let Some((tok, width)) = tok {
            out.push((i, tok));
            i += width;
            continue;
        }
        let start = i;
        while i < bytes.len() && !b" \t\n\r!=<>(),".contains(&bytes[i]) {
            i += 1;
        }
        out.push((start, Tok::Word(s[start..i].to_owned())));
    }
    out
}

struct Parser {
    tokens: Vec<(usize, Tok)>,
    pos: usize,
    len: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.len, |(o, _)| *o)
    }

    fn next(&mut self) -> Option<Tok> {
        let tok = self.tokens.get(self.pos).map(|(_, t)| t.clone());
        self.pos += 1;
        tok
    }

    fn unexpected(&self, expected: &'static str) -> SelectorError {
        SelectorError::Unexpected {
            expected,
            found: self.peek().map_or_else(|| "end of input".to_owned(), Tok::describe),
            position: self.offset(),
        }
    }

    fn selector(mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        if self.peek().is_none() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            if matches!(self.peek(), None | Some(Tok::Comma)) {
                return Err(SelectorError::EmptyRequirement { position: self.offset() });
            }
            requirements.push(self.requirement()?);
            match self.peek() {
                None => return Ok(LabelSelector { requirements }),
                Some(Tok::Comma) => self.pos += 1,
                Some(_) => return Err(self.unexpected("`,` or end of input")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(&Tok::Bang) {
            self.pos += 1;
            let key = self.key()?;
            return Ok(Requirement { key, operator: Operator::DoesNotExist });
        }
        let key = self.key()?;
        let operator = match self.peek() {
            None | Some(Tok::Comma) => Operator::Exists,
            Some(Tok::Eq | Tok::DoubleEq) => {
                self.pos += 1;
                Operator::Equals(self.value()?)
            }
            Some(Tok::NotEq) => {
                self.pos += 1;
                Operator::NotEquals(self.value()?)
            }
            Some(Tok::Gt | Tok::Lt) => {
                let greater = self.next() == Some(Tok::Gt);
                let Some(Tok::Word(word)) = self.next() else {
                    self.pos -= 1;
                    return Err(self.unexpected("an integer"));
                };
                let n = word.parse::<i64>().map_err(|_| SelectorError::NotAnInteger { value: word })?;
                if greater { Operator::GreaterThan(n) } else { Operator::LessThan(n) }
            }
            Some(Tok::Word(w)) if w == "in" || w == "notin" => {
                let in_set = w == "in";
                self.pos += 1;
                let values = self.value_set()?;
                let operator = if in_set { "in" } else { "notin" };
                if values.is_empty() {
                    return Err(SelectorError::EmptyValueSet { key, operator });
                }
                if in_set { Operator::In(values) } else { Operator::NotIn(values) }
            }
            Some(_) => return Err(self.unexpected("an operator (=, ==, !=, in, notin, >, <), `,` or end of input")),
        };
        Ok(Requirement { key, operator })
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        match self.peek() {
            Some(Tok::Word(w)) if w != "in" && w != "notin" => {
                let key = w.clone();
                self.pos += 1;
                validate_key(&key)?;
                Ok(key)
            }
            _ => Err(self.unexpected("a label key")),
        }
    }

    /// A value after `=`, `==` or `!=`; may be empty (`a=` or `a=,b`).
    fn value(&mut self) -> Result<String, SelectorError> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                let value = w.clone();
                self.pos += 1;
                validate_value(&value)?;
                Ok(value)
            }
            None | Some(Tok::Comma) => Ok(String::new()),
            Some(_) => Err(self.unexpected("a label value")),
        }
    }

    /// `( v1, v2, ... )`; empty values are allowed between commas, as in apimachinery.
    fn value_set(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        if self.peek() != Some(&Tok::Open) {
            return Err(self.unexpected("`(`"));
        }
        self.pos += 1;
        let mut values = BTreeSet::new();
        if self.peek() == Some(&Tok::Close) {
            self.pos += 1;
            return Ok(values);
        }
        loop {
            let value = match self.peek() {
                Some(Tok::Word(w)) => {
                    let w = w.clone();
                    self.pos += 1;
                    validate_value(&w)?;
                    w
                }
                Some(Tok::Comma | Tok::Close) => String::new(),
                _ => return Err(self.unexpected("a label value")),
            };
            values.insert(value);
            match self.next() {
                Some(Tok::Comma) => continue,
                Some(Tok::Close) => return Ok(values),
                _ => {
                    self.pos -= 1;
                    return Err(self.unexpected("`,` or `)`"));
                }
            }
        }
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn check_name(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if s.len() > 63 {
        return Err("must be at most 63 characters");
    }
    let b = s.as_bytes();
    if !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return Err("must start and end with an alphanumeric character");
    }
    if !b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        return Err("may contain only alphanumerics, `-`, `_` and `.`");
    }
    Ok(())
}

/// A DNS subdomain: lowercase labels of `[a-z0-9-]` separated by dots, at most 253 chars.
fn check_dns_subdomain(s: &str) -> Result<(), &'static str> {
    if s.is_empty() || s.len() > 253 {
        return Err("prefix must be a DNS subdomain of 1 to 253 characters");
    }
    let ok = s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    });
    if ok { Ok(()) } else { Err("prefix must be a lowercase DNS subdomain") }
}

fn validate_key(key: &str) -> Result<(), SelectorError> {
    let invalid = |reason| SelectorError::InvalidKey { key: key.to_owned(), reason };
    match key.split_once('/') {
        Some((prefix, name)) => {
            check_dns_subdomain(prefix).map_err(invalid)?;
            check_name(name).map_err(invalid)
        }
        None => check_name(key).map_err(invalid),
    }
}

fn validate_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    check_name(value).map_err(|reason| SelectorError::InvalidValue { value: value.to_owned(), reason })
}

#[cfg(test)]
#[path = "selector_tests.rs"]
mod tests;

//! YAML documents read as kubectl reads them, into JSON.
//!
//! kubectl turns YAML into JSON with `sigs.k8s.io/yaml` over go-yaml v2, which resolves an
//! unquoted (plain) scalar by YAML 1.1's rules, where a YAML 1.2 reader sees strings:
//! - `0644` is the octal number 420 (a volume's `defaultMode`), `0x1F` hex, `0b101` binary,
//!   and `1_000` is 1000;
//! - `y`, `Y`, `yes`, `on`, `true` (and their capitalised forms) are `true`; `n`, `no`,
//!   `off`, `false` are `false`;
//! - `~`, `null` and nothing are null; a float with no fraction is written as an integer,
//!   as Go writes it into JSON (`1.0` is `1`).
//!
//! Quoted and block scalars are strings, as is a plain one tagged `!!str` or with a tag of
//! its own (`!custom`); `!!int`, `!!bool`, `!!float` and `!!null` resolve even a quoted one.
//! A mapping key is resolved the same way, then written as a string (`yes:` is `"true"`).
//! A key given twice keeps its last value. A merge key (`<<: *anchor`, or a list of them)
//! sets the merged mappings' keys where it stands, as go-yaml v2 does: keys after it
//! override them, and the earlier of two merged mappings wins. Aliases are expanded, with a
//! bound on the nodes they add (go-yaml's "excessive aliasing"), and collections deeper than
//! [`MAX_DEPTH`] are refused as they are read.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, StrInput, Tag};
use serde_json::{Map, Number, Value};

use super::MAX_DEPTH;

/// Nodes aliases may add to a document before the ratio of aliased nodes counts
/// ([`Builder::count_alias`]).
const ALIAS_FREE_NODES: u64 = 100_000;

/// Why a document could not be read.
#[derive(Debug, PartialEq)]
pub(crate) enum Yaml11Error {
    /// The parser's error, with its line and column in the text parsed; nothing after it
    /// in the stream is read.
    Parse(String),
    /// The document is YAML, but has no JSON form (or is refused): what is wrong. The
    /// stream's next documents are read.
    NotJson(String),
}

/// The documents of a YAML stream, as JSON (an empty document is `null`), until the first
/// parse error.
pub(crate) struct Documents<'a> {
    parser: Parser<'a, StrInput<'a>>,
    failed: bool,
}

/// Reads the documents of `text`.
pub(crate) fn documents(text: &str) -> Documents<'_> {
    Documents { parser: Parser::new_from_str(text), failed: false }
}

impl Iterator for Documents<'_> {
    type Item = Result<Value, Yaml11Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            match self.parser.next_event()? {
                Err(e) => return Some(Err(self.fail(&e))),
                Ok((Event::DocumentStart(_), _)) => {
                    let document = Builder::default().document(&mut self.parser);
                    self.failed = matches!(document, Err(Yaml11Error::Parse(_)));
                    return Some(document);
                }
                Ok((Event::StreamEnd, _)) => return None,
                Ok(_) => {}
            }
        }
    }
}

impl Documents<'_> {
    fn fail(&mut self, e: &ScanError) -> Yaml11Error {
        self.failed = true;
        parse_error(e)
    }
}

/// The one document of `text` (an API request's YAML body), read as kubectl reads YAML.
pub(crate) fn one_document(text: &str) -> Result<Value, String> {
    let mut docs = documents(text);
    let value = match docs.next() {
        None => Value::Null,
        Some(Ok(value)) => value,
        Some(Err(Yaml11Error::Parse(why) | Yaml11Error::NotJson(why))) => return Err(why),
    };
    match docs.next() {
        None => Ok(value),
        Some(_) => Err("more than one document".to_owned()),
    }
}

/// A parser's error as `{what} at line L column C`.
fn parse_error(e: &ScanError) -> Yaml11Error {
    Yaml11Error::Parse(format!("{} at line {} column {}", e.info(), e.marker().line(), e.marker().col() + 1))
}

/// A collection being read.
enum Frame {
    Seq { items: Vec<Value>, anchor: usize, nodes_before: u64 },
    Map { map: Map<String, Value>, anchor: usize, nodes_before: u64, key: Option<Key> },
}

/// A mapping's key, read, waiting for its value.
enum Key {
    Name(String),
    /// `<<`: the value is merged.
    Merge,
}

/// Builds one document's value from the parser's events.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Anchored values, and the nodes each holds.
    anchors: HashMap<usize, (Value, u64)>,
    /// Nodes of the document so far, aliases' expansions included.
    nodes: u64,
    /// Nodes added by aliases so far.
    aliased: u64,
    /// Why the document is refused, once it is (its events are still read to its end).
    refused: Option<String>,
}

impl Builder {
    /// Reads events up to the document's end: its value, or why it has none.
    fn document(mut self, parser: &mut Parser<'_, StrInput<'_>>) -> Result<Value, Yaml11Error> {
        let mut root = Value::Null;
        loop {
            let event = match parser.next_event() {
                None => return Err(Yaml11Error::Parse("unexpected end of the stream".to_owned())),
                Some(Err(e)) => return Err(parse_error(&e)),
                Some(Ok((event, _))) => event,
            };
            if matches!(event, Event::DocumentEnd | Event::StreamEnd) {
                return match self.refused {
                    Some(why) => Err(Yaml11Error::NotJson(why)),
                    None => Ok(root),
                };
            }
            if self.refused.is_some() {
                continue;
            }
            match self.event(event) {
                Ok(Some(value)) => root = value,
                Ok(None) => {}
                Err(why) => self.refused = Some(why),
            }
        }
    }

    /// Takes one event inside the document; the document's value once it is complete.
    fn event(&mut self, event: Event<'_>) -> Result<Option<Value>, String> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let merges = style == ScalarStyle::Plain && is_merge(&text, tag.as_deref());
                let value = resolve(&text, style, tag.as_deref())?;
                self.nodes += 1;
                if anchor != 0 {
                    self.anchors.insert(anchor, (value.clone(), 1));
                }
                if self.expects_key() {
                    self.set_key(if merges { Key::Merge } else { Key::Name(key_string(&value)?) });
                    return Ok(None);
                }
                self.complete(value)
            }
            Event::Alias(anchor) => {
                let (value, nodes) = self.anchors.get(&anchor).cloned().ok_or("an alias names no anchor before it")?;
                self.count_alias(nodes)?;
                if self.expects_key() {
                    self.set_key(Key::Name(key_string(&value)?));
                    return Ok(None);
                }
                self.complete(value)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.expects_key() {
                    let what = if matches!(event, Event::SequenceStart(..)) { "a list" } else { "a mapping" };
                    return Err(collection_key(what));
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err(format!("nested deeper than {MAX_DEPTH} levels"));
                }
                self.nodes += 1;
                let nodes_before = self.nodes;
                self.stack.push(match event {
                    Event::SequenceStart(..) => Frame::Seq { items: Vec::new(), anchor, nodes_before },
                    _ => Frame::Map { map: Map::new(), anchor, nodes_before, key: None },
                });
                Ok(None)
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, anchor, nodes_before) = match self.stack.pop() {
                    Some(Frame::Seq { items, anchor, nodes_before }) => (Value::Array(items), anchor, nodes_before),
                    Some(Frame::Map { map, anchor, nodes_before, .. }) => (Value::Object(map), anchor, nodes_before),
                    None => return Err("a collection ends that did not start".to_owned()),
                };
                if anchor != 0 {
                    let nodes = self.nodes - nodes_before + 1;
                    self.anchors.insert(anchor, (value.clone(), nodes));
                }
                self.complete(value)
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) | Event::DocumentEnd => {
                Ok(None)
            }
        }
    }

    /// Whether the next node is a mapping's key.
    fn expects_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn set_key(&mut self, next: Key) {
        if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
            *key = Some(next);
        }
    }

    /// Places a complete value in the collection being read; the document's value when
    /// there is none.
    fn complete(&mut self, value: Value) -> Result<Option<Value>, String> {
        match self.stack.last_mut() {
            None => Ok(Some(value)),
            Some(Frame::Seq { items, .. }) => {
                items.push(value);
                Ok(None)
            }
            Some(Frame::Map { map, key, .. }) => {
                match key.take() {
                    Some(Key::Name(name)) => {
                        map.insert(name, value);
                    }
                    Some(Key::Merge) => merge(map, value)?,
                    None => return Err("a mapping's value came without its key".to_owned()),
                }
                Ok(None)
            }
        }
    }

    /// Counts an alias of a value of `nodes` nodes: refused once aliases have added more
    /// than [`ALIAS_FREE_NODES`] nodes and most of the document's nodes (a few kilobytes of
    /// aliases of aliases can stand for billions of nodes).
    fn count_alias(&mut self, nodes: u64) -> Result<(), String> {
        self.nodes = self.nodes.saturating_add(nodes);
        self.aliased = self.aliased.saturating_add(nodes);
        if self.aliased > ALIAS_FREE_NODES && self.aliased > self.nodes / 10 * 9 {
            return Err(format!("excessive aliasing: aliases stand for more than {ALIAS_FREE_NODES} nodes"));
        }
        Ok(())
    }
}

/// Whether a plain key is the merge key `<<` (untagged, or tagged `!!merge`).
fn is_merge(text: &str, tag: Option<&Tag>) -> bool {
    text == "<<" && tag.is_none_or(|t| t.is_yaml_core_schema() && t.suffix == "merge")
}

/// Merges `value` (a mapping, or a list of mappings) into `map` where the merge key stands.
fn merge(map: &mut Map<String, Value>, value: Value) -> Result<(), String> {
    const WANT: &str = "a merge key's value must be a mapping or a list of mappings";
    match value {
        Value::Object(merged) => map.extend(merged),
        Value::Array(list) => {
            // Backwards: the earlier mappings take precedence.
            for item in list.into_iter().rev() {
                match item {
                    Value::Object(merged) => map.extend(merged),
                    _ => return Err(WANT.to_owned()),
                }
            }
        }
        _ => return Err(WANT.to_owned()),
    }
    Ok(())
}

/// A scalar's value: a plain one (or one with a core tag that resolves) by YAML 1.1's
/// rules, any other a string.
fn resolve(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    let resolves = match tag {
        None => style == ScalarStyle::Plain,
        Some(tag) => tag.is_yaml_core_schema() && matches!(tag.suffix.as_str(), "null" | "bool" | "int" | "float"),
    };
    if resolves { resolve_plain(text) } else { Ok(Value::String(text.to_owned())) }
}

/// A plain scalar's value, as go-yaml v2 resolves it.
fn resolve_plain(text: &str) -> Result<Value, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Ok(Value::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Ok(Value::Bool(false));
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf"
        | "-.INF" => return Err(format!("{text} is not a JSON number")),
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => {
            if let Ok(f) = text.parse::<f64>() {
                return float(f, text);
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = text.replace('_', "");
            if let Some(n) = go_int(&plain) {
                return Ok(Value::Number(n));
            }
            if is_yaml_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
            {
                return float(f, text);
            }
        }
        _ => {}
    }
    Ok(Value::String(text.to_owned()))
}

/// An integer as Go's `strconv.ParseInt(text, 0, 64)` reads it (a sign; `0x`, `0o`, `0b` or
/// a leading `0` for hex, octal, binary and octal), then as `ParseUint` past `i64`'s range.
fn go_int(text: &str) -> Option<Number> {
    let (negative, signed, body) = match text.as_bytes().first()? {
        b'-' => (true, true, &text[1..]),
        b'+' => (false, true, &text[1..]),
        _ => (false, false, text),
    };
    let prefixed = |lower: &str, upper: &str| body.strip_prefix(lower).or_else(|| body.strip_prefix(upper));
    let (radix, digits) = if let Some(d) = prefixed("0x", "0X") {
        (16, d)
    } else if let Some(d) = prefixed("0o", "0O") {
        (8, d)
    } else if let Some(d) = prefixed("0b", "0B") {
        (2, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        let value = 0i64.checked_sub_unsigned(magnitude)?;
        Some(value.into())
    } else if let Ok(value) = i64::try_from(magnitude) {
        Some(value.into())
    } else if signed {
        None
    } else {
        Some(magnitude.into())
    }
}

/// go-yaml v2's float form: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(text: &str) -> bool {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let s = text.strip_prefix(['+', '-']).unwrap_or(text);
    let rest = if let Some(fraction) = s.strip_prefix('.') {
        let n = digits(fraction);
        if n == 0 {
            return false;
        }
        &fraction[n..]
    } else {
        let n = digits(s);
        if n == 0 {
            return false;
        }
        let after = &s[n..];
        match after.strip_prefix('.') {
            Some(fraction) => &fraction[digits(fraction)..],
            None => after,
        }
    };
    match rest.strip_prefix(['e', 'E']) {
        None => rest.is_empty(),
        Some(exponent) => {
            let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            !exponent.is_empty() && digits(exponent) == exponent.len()
        }
    }
}

/// A float as kubectl sends it: Go writes a float with no fraction below 1e21 as an integer.
fn float(f: f64, text: &str) -> Result<Value, String> {
    #[allow(clippy::cast_possible_truncation, reason = "checked: integral and within i64's range")]
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        return Ok(Value::Number((f as i64).into()));
    }
    Number::from_f64(f).map(Value::Number).ok_or_else(|| format!("{text} is not a JSON number"))
}

/// A resolved mapping key as a JSON object key; a collection has none.
fn key_string(key: &Value) -> Result<String, String> {
    match key {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok("null".to_owned()),
        Value::Array(_) => Err(collection_key("a list")),
        Value::Object(_) => Err(collection_key("a mapping")),
        other => Ok(other.to_string()),
    }
}

/// Why a collection (`what`: "a list", "a mapping") cannot be a mapping key.
fn collection_key(what: &str) -> String {
    format!("a mapping key is {what}, which JSON cannot hold")
}

#[cfg(test)]
#[path = "yaml11_tests.rs"]
mod tests;

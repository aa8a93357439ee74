//! What one manifest file's text means: its documents, and the objects they hold.
//!
//! A YAML file's documents are separated by `---` lines, as kubectl's reader separates them.
//! One bad document is skipped with an error naming the file and the document (its number,
//! and its kind and name where readable) while the file's other documents still load: where
//! the parser fails, it starts again at the next `---` line. A `kind: List` (or any `*List`
//! with `items`) stands for its items; an invalid item is skipped the same way, named by its
//! index; an item of a typed list (`ConfigMapList`) without `apiVersion` and `kind` takes them
//! from the list; a Secret's `stringData` is folded into its `data`, as the API server stores
//! it. A JSON file holds one object after another, each a document (a `.json`
//! file that does not start like JSON is read as YAML). As kubectl reads them, a UTF-8 byte order mark at the
//! start of the file is ignored, and YAML is read by YAML 1.1's rules (`0644` is 420, `yes`
//! is `true`; see [`yaml11`](crate::kube::yaml11)), merge keys (`<<: *anchor`) applied, mapping
//! keys that are numbers or booleans written as strings, a key given twice keeping its last
//! value.
//!
//! Each object must have a string `apiVersion`, `kind` and `metadata.name`; the message says
//! what is wrong (missing, empty, or not a string). An `apiVersion` of a built-in group that
//! Kubernetes does not serve (`policy/v1beta1`, `apps/v42`) is refused, as an API server has
//! nowhere to create it; so is an object whose name, namespace, labels or annotations the API
//! server's validation refuses (`Upper_Name`, a Service named `1svc`, a template's `{{uid}}`). Documents nested too deeply are refused
//! before or after parsing (see [`nesting`](super::nesting)). A refused document keeps the
//! objects it held in the file's previous version ([`ParsedManifest::keep_refused`]).

use std::path::Path;

use super::dir::DirSourceError;
use crate::informer::object::{MAX_DEPTH, Object, ObjectError};
use crate::kube::nesting::{Estimate, estimated_depth, split_documents, value_depth};
use crate::kube::yaml11::{self, Yaml11Error};

/// Where an object is in its file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// The document's number in the file, from 1.
    pub document: usize,
    /// The object's index among a `List` document's items, from 0.
    pub item: Option<usize>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {}", self.document)?;
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        Ok(())
    }
}

/// An object of a manifest file, as written, with where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestObject {
    /// Where it is in the file.
    pub location: Location,
    /// The object.
    pub value: serde_json::Value,
}

impl ManifestObject {
    /// The object's kind and name (`Kind namespace/name`), as far as they can be read.
    pub fn describe(&self) -> String {
        describe(&self.value)
    }
}

/// A manifest file's objects, and the documents refused.
#[derive(Debug, Default)]
pub struct ParsedManifest {
    /// The objects, in file order.
    pub objects: Vec<ManifestObject>,
    /// One error per refused document or `List` item, naming the file and the document.
    pub refused: Vec<DirSourceError>,
    /// Where the refused documents and items are.
    refused_at: Vec<Location>,
}

impl ParsedManifest {
    /// Keeps the objects a refused document (or `List` item) held in the file's previous
    /// version, found by its place in the file: a document being written, or edited into
    /// something invalid, does not take its objects away.
    pub fn keep_refused(&mut self, previous: &[ManifestObject]) {
        let refused = |at: &Location| {
            self.refused_at.iter().any(|r| r.document == at.document && (r.item.is_none() || r.item == at.item))
        };
        let kept: Vec<ManifestObject> = previous.iter().filter(|o| refused(&o.location)).cloned().collect();
        if !kept.is_empty() {
            self.objects.extend(kept);
            self.objects.sort_by(|a, b| a.location.cmp(&b.location));
        }
    }
}

/// `Kind namespace/name` of a document, as far as it can be read ("" when nothing can).
fn describe(value: &serde_json::Value) -> String {
    let text = |pointer: &str| value.pointer(pointer).and_then(|v| v.as_str()).filter(|s| !s.is_empty());
    let name = match (text("/metadata/namespace"), text("/metadata/name")) {
        (Some(ns), Some(name)) => Some(format!("{ns}/{name}")),
        (None, Some(name)) => Some(name.to_owned()),
        _ => None,
    };
    match (text("/kind"), name) {
        (Some(kind), Some(name)) => format!("{kind} {name}"),
        (Some(kind), None) => kind.to_owned(),
        (None, Some(name)) => name,
        (None, None) => String::new(),
    }
}

/// The JSON type of a value, for messages.
fn type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

/// Checks that `field` of `parent` is a non-empty string (or, when `optional`, absent).
fn check_string(parent: &serde_json::Value, field: &str, shown: &str, optional: bool) -> Result<(), String> {
    match parent.get(field) {
        None | Some(serde_json::Value::Null) if optional => Ok(()),
        None | Some(serde_json::Value::Null) => Err(format!("missing `{shown}`")),
        Some(serde_json::Value::String(s)) if s.is_empty() && !optional => Err(format!("`{shown}` is empty")),
        Some(serde_json::Value::String(_)) => Ok(()),
        Some(other) => Err(format!("`{shown}` is {}, not a string", type_name(other))),
    }
}

/// Checks that a document is an object kubectl would apply; says what is wrong if not.
fn validate(value: &serde_json::Value) -> Result<(), String> {
    if !value.is_object() {
        return Err(format!("not an object: the document is {}", type_name(value)));
    }
    check_string(value, "apiVersion", "apiVersion", false)?;
    check_string(value, "kind", "kind", false)?;
    // As an API server, which has no such version to create it at (kubectl apply: "no
    // matches for kind").
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    if let Some(why) = crate::kube::versions::unserved_version(api_version) {
        return Err(why);
    }
    // The API server's checks of the name (by the kind's rule: a namespace's is a label, a
    // role's a path segment), the namespace, labels and annotations: kubectl apply fails on
    // such an object, and the embedded cluster would refuse a plugin's write to it.
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = value["kind"].as_str().unwrap_or_default();
    let rules = wink_apiserver::ResourceDef::built_in(group, version, kind, "", true, false);
    let errors = wink_apiserver::validate::object_meta(&rules, value);
    if !errors.is_empty() {
        return Err(errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "));
    }
    let metadata = match value.get("metadata") {
        None | Some(serde_json::Value::Null) => return Err("missing `metadata.name`".to_owned()),
        Some(m) if !m.is_object() => return Err(format!("`metadata` is {}, not a mapping", type_name(m))),
        Some(m) => m,
    };
    check_string(metadata, "name", "metadata.name", false)?;
    check_string(metadata, "namespace", "metadata.namespace", true)?;
    check_string(metadata, "uid", "metadata.uid", true)?;
    // The rest of what the host reads (labels, owner references…), with its path; where in
    // the JSON text made here is of no use.
    Object::from_string(value.to_string()).map(drop).map_err(|e| match e {
        ObjectError::Malformed { path, message } => {
            let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
            format!("`{path}`: {message}")
        }
        other => other.to_string(),
    })
}

/// What the API server would store of an object kubectl applies: no null metadata fields, a
/// Secret's `stringData` folded into its `data`.
fn as_stored(value: &mut serde_json::Value) -> Result<(), String> {
    // `metadata` is typed: a field set to null (`annotations: null`) is stored as absent.
    if let Some(metadata) = value.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        metadata.retain(|_, field| !field.is_null());
    }
    let text = |field: &str| value.get(field).and_then(serde_json::Value::as_str);
    if text("apiVersion") == Some("v1") && text("kind").is_some_and(|kind| wink_apiserver::secret::is_secret("", kind))
    {
        wink_apiserver::secret::fold_string_data(value)?;
    }
    Ok(())
}

/// A refused document or item: `{path}: {location} ({Kind name}): {message}; skipped`.
fn refusal(path: &Path, location: &Location, value: Option<&serde_json::Value>, message: &str) -> DirSourceError {
    let what = value.map(describe).filter(|d| !d.is_empty()).map(|d| format!(" ({d})")).unwrap_or_default();
    DirSourceError::Malformed { path: path.to_owned(), message: format!("{location}{what}: {message}; skipped") }
}

/// Whether a document is a list of objects (`kind: List`, `ConfigMapList`…) with `items`.
fn is_list(document: &serde_json::Map<String, serde_json::Value>) -> bool {
    document.get("kind").and_then(|k| k.as_str()).is_some_and(|k| k.ends_with("List"))
        && document.get("items").is_some_and(serde_json::Value::is_array)
}

/// An item of a typed list (`ConfigMapList`, as the API server serves one) without
/// `apiVersion` and `kind` takes them from the list, as kubectl's reader gives them.
fn typed_item(list: &serde_json::Map<String, serde_json::Value>, mut item: serde_json::Value) -> serde_json::Value {
    let text = |field: &str| list.get(field).and_then(serde_json::Value::as_str).unwrap_or_default();
    let kind = text("kind").strip_suffix("List").unwrap_or_default();
    if let Some(object) = item.as_object_mut()
        && !kind.is_empty()
        && !object.contains_key("kind")
        && !object.contains_key("apiVersion")
    {
        object.insert("apiVersion".to_owned(), text("apiVersion").into());
        object.insert("kind".to_owned(), kind.into());
    }
    item
}

/// Rewrites the `line N` of a YAML error located in one document as a line of the file.
fn shift_lines(message: &str, first_line: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        out.push_str(&rest[..at + 5]);
        rest = &rest[at + 5..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(line) if rest[digits..].starts_with(" column") => {
                out.push_str(&(line + first_line - 1).to_string());
                rest = &rest[digits..];
            }
            _ => {}
        }
    }
    out.push_str(rest);
    out
}

/// Documents with their numbers in the file (from 1).
type NumberedDocuments = Vec<(usize, serde_json::Value)>;

/// Refused documents: where, and why.
type Refusals = Vec<(Location, DirSourceError)>;

/// The documents of a YAML stream, with their numbers, and the refused ones.
///
/// The stream is parsed in one go (a parser per document would cost four times as much on
/// a file of many small documents); where a document fails, parsing starts again from the
/// next one, found at its `---` line.
fn parse_yaml(path: &Path, text: &str) -> (NumberedDocuments, Refusals) {
    let refuse = |number: usize, message: String| {
        let location = Location { document: number, item: None };
        let error = refusal(path, &location, None, &message);
        (location, error)
    };
    let documents = split_documents(text);
    let parts = &documents.parts;
    let skip = usize::from(documents.leading_empty);
    let mut refused = Vec::new();
    // Documents far too deep are left out unparsed (an empty document of as many lines
    // takes each one's place, keeping numbers and lines): the parser's work grows with the
    // square of the depth.
    let mut kept = String::with_capacity(text.len());
    let mut starts = Vec::with_capacity(parts.len());
    let mut estimates = Vec::with_capacity(parts.len());
    let mut line = 1;
    for (i, part) in parts.iter().enumerate() {
        starts.push((kept.len(), line));
        let newlines = part.bytes().filter(|&b| b == b'\n').count();
        line += newlines;
        let estimate = if i < skip { Estimate::default() } else { estimated_depth(part) };
        if estimate.too_deep_to_parse() {
            refused.push(refuse(i + 1 - skip, format!("nested deeper than {MAX_DEPTH} levels")));
            kept.push_str(if part.starts_with("---") { "--- null" } else { "null" });
            kept.extend(std::iter::repeat_n('\n', newlines));
        } else {
            kept.push_str(part);
        }
        estimates.push(estimate);
    }
    let mut docs = Vec::new();
    // The stream parsed: from the start, then from the document after each failure.
    let (mut first, mut offset, mut first_line) = (skip, 0, 1);
    'stream: while first < parts.len() {
        for (j, value) in yaml11::documents(&kept[offset..]).enumerate() {
            let i = first + j;
            let number = i + 1 - skip;
            let estimate = estimates.get(i).copied().unwrap_or_default();
            if estimate.too_deep_to_parse() {
                continue;
            }
            match value {
                Ok(value) if value_depth(&value) > MAX_DEPTH => {
                    refused.push(refuse(number, format!("nested deeper than {MAX_DEPTH} levels")));
                }
                Ok(serde_json::Value::Null) => {}
                Ok(value) => docs.push((number, value)),
                Err(Yaml11Error::NotJson(message)) => refused.push(refuse(number, message)),
                Err(Yaml11Error::Parse(e)) => {
                    refused.push(refuse(number, format!("invalid YAML: {}", shift_lines(&e, first_line))));
                    first = i + 1;
                    if let Some(&(next_offset, next_line)) = starts.get(first) {
                        (offset, first_line) = (next_offset, next_line);
                    }
                    continue 'stream;
                }
            }
        }
        break;
    }
    (docs, refused)
}

/// Parses one manifest file into objects. Fails only when nothing of the file can be read
/// (invalid JSON); a bad YAML document or `List` item is refused alone, in
/// [`ParsedManifest::refused`].
pub fn parse_manifest_file(path: &Path, text: &str) -> Result<ParsedManifest, DirSourceError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // As kubectl's reader, a `.json` file is read as JSON when it starts like JSON (one
    // object after another, each a document), as YAML otherwise.
    let json = path.extension().is_some_and(|e| e == "json") && text.trim_start().starts_with(['{', '[']);
    let (docs, refused) = if json {
        // serde_json stops at its recursion limit, MAX_DEPTH, at once.
        let values: Result<Vec<serde_json::Value>, _> =
            serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>().collect();
        let values = values
            .map_err(|e| DirSourceError::Malformed { path: path.to_owned(), message: format!("invalid JSON: {e}") })?;
        (values.into_iter().enumerate().map(|(i, value)| (i + 1, value)).collect(), Vec::new())
    } else {
        parse_yaml(path, text)
    };
    let (mut refused_at, mut refused): (Vec<Location>, Vec<DirSourceError>) = refused.into_iter().unzip();
    let mut objects = Vec::new();
    for (document, doc) in docs {
        let items: Vec<(Option<usize>, serde_json::Value)> = match doc {
            serde_json::Value::Object(mut map) if is_list(&map) => match map.remove("items") {
                Some(serde_json::Value::Array(items)) => items
                    .into_iter()
                    .map(|item| typed_item(&map, item))
                    .enumerate()
                    .map(|(i, v)| (Some(i), v))
                    .collect(),
                _ => Vec::new(),
            },
            other => vec![(None, other)],
        };
        for (item, mut value) in items {
            let location = Location { document, item };
            match validate(&value).and_then(|()| as_stored(&mut value)) {
                Ok(()) => objects.push(ManifestObject { location, value }),
                Err(message) => {
                    refused.push(refusal(path, &location, Some(&value), &message));
                    refused_at.push(location);
                }
            }
        }
    }
    Ok(ParsedManifest { objects, refused, refused_at })
}

#[cfg(test)]
#[path = "documents_tests.rs"]
mod tests;

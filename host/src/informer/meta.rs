//! The metadata the host parses from every object, kept as byte ranges of the object's JSON.
//!
//! The host reads a dozen metadata fields of every object (name, namespace, uid,
//! resourceVersion, labels, annotations, owner references, …) on every event and hands them
//! to every plugin call. Owned copies of them cost an object with a typical set of labels and
//! annotations about a kilobyte beside its JSON, and one allocation per string on every
//! decode. Here each string is a [`Span`], eight bytes: a byte range of the JSON text where
//! the string has no escapes (nearly always), or of a side text holding the few strings
//! decoded from escapes. [`PackedMeta`] holds the spans; [`ObjectMeta`] is the view of them
//! with `&str` fields that [`Object::meta`](super::Object::meta) returns.

use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::labels::{Entries, Labels, Text};
use super::object::ObjectError;

/// Where one string is: a byte range of the object's JSON, or (the top bit of `start` set)
/// of its side text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

const SIDE: u32 = 1 << 31;

/// The largest JSON text an object may have: spans address it with 31 bits.
pub(crate) const MAX_JSON: usize = SIDE as usize - 1;

impl Span {
    fn in_json(self) -> bool {
        self.start & SIDE == 0
    }

    /// This span after `cut` was removed from the JSON text (it lies wholly before or after).
    fn after_cut(self, cut: &Range<usize>) -> Self {
        if !self.in_json() || (self.start as usize) < cut.end {
            return self;
        }
        let len = u32::try_from(cut.len()).unwrap_or(0);
        Self { start: self.start - len, end: self.end - len }
    }

    /// This span after `len` bytes were inserted at `at` of the JSON text (an absent field's
    /// empty span at 0 stays: no inserted text goes before the object's `{`).
    fn after_insert(self, at: usize, len: u32) -> Self {
        if !self.in_json() || (self.start as usize) < at {
            return self;
        }
        Self { start: self.start + len, end: self.end + len }
    }

    /// The span of `range` of the JSON text.
    fn of_json(range: Range<usize>) -> Self {
        Self { start: range.start as u32, end: range.end as u32 }
    }
}

/// The texts an object's spans point into.
#[derive(Clone, Copy)]
pub(crate) struct Texts<'a> {
    pub json: &'a str,
    pub side: &'a str,
}

impl<'a> Texts<'a> {
    pub fn get(self, span: Span) -> &'a str {
        let (text, start) = if span.in_json() { (self.json, span.start) } else { (self.side, span.start & !SIDE) };
        &text[start as usize..span.end as usize]
    }
}

/// An owner reference as spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwnerSpans {
    api_version: Span,
    kind: Span,
    name: Span,
    uid: Span,
    controller: Option<bool>,
}

/// The parsed metadata of one object, as spans of its JSON.
#[derive(Clone, Debug)]
pub(crate) struct PackedMeta {
    api_version: Span,
    kind: Span,
    namespace: Option<Span>,
    name: Span,
    uid: Span,
    resource_version: Span,
    deletion_timestamp: Option<Span>,
    generation: Option<i64>,
    /// The labels' entries, then the annotations': key and value spans, each map sorted.
    pairs: Box<[Span]>,
    /// How many spans of `pairs` are the labels'.
    label_spans: u32,
    owners: Box<[OwnerSpans]>,
    /// The strings that had escapes in the JSON, decoded (usually empty).
    side: Box<str>,
}

impl PackedMeta {
    /// Decodes the metadata of `json` (validating the whole text), and finds the byte range
    /// of its `managedFields` value.
    pub fn decode(json: &str) -> Result<(Self, Option<&str>), ObjectError> {
        if json.len() > MAX_JSON {
            return Err(ObjectError::Malformed { path: ".".into(), message: "larger than 2 GiB".into() });
        }
        let mut de = serde_json::Deserializer::from_str(json);
        // Tracking the path costs every decode; only a failed one is decoded again to name it.
        let Ok(head) = Head::deserialize(&mut de) else {
            let mut de = serde_json::Deserializer::from_str(json);
            let error = serde_path_to_error::deserialize::<_, Head<'_>>(&mut de).err();
            return Err(error.map_or_else(
                || ObjectError::Malformed { path: ".".into(), message: "not a JSON object".into() },
                |e| ObjectError::Malformed { path: e.path().to_string(), message: e.inner().to_string() },
            ));
        };
        de.end().map_err(|e| ObjectError::Malformed { path: ".".into(), message: e.to_string() })?;
        let m = head.metadata.ok_or(ObjectError::Missing("metadata"))?;
        let name = m.name.filter(|n| !n.0.is_empty()).ok_or(ObjectError::Missing("metadata.name"))?;
        let mut spans = Spans { json, side: String::new() };
        let (api_version, kind) = (spans.or_empty(head.api_version), spans.or_empty(head.kind));
        let name = spans.of(&name.0);
        let (uid, resource_version) = (spans.or_empty(m.uid), spans.or_empty(m.resource_version));
        let namespace = m.namespace.filter(|ns| !ns.0.is_empty()).map(|ns| spans.of(&ns.0));
        let deletion_timestamp = m.deletion_timestamp.map(|t| spans.of(&t.0));
        let (labels, annotations) =
            (m.labels.map_or_else(Vec::new, |l| l.0), m.annotations.map_or_else(Vec::new, |a| a.0));
        let mut pairs = Vec::with_capacity(2 * (labels.len() + annotations.len()));
        for (key, value) in labels.iter().chain(&annotations) {
            pairs.extend([spans.of(&key.0), spans.of(&value.0)]);
        }
        let owners = m
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| OwnerSpans {
                api_version: spans.of(&o.api_version.0),
                kind: spans.of(&o.kind.0),
                name: spans.of(&o.name.0),
                uid: spans.of(&o.uid.0),
                controller: o.controller,
            })
            .collect();
        let meta = Self {
            api_version,
            kind,
            namespace,
            name,
            uid,
            resource_version,
            deletion_timestamp,
            generation: m.generation,
            pairs: pairs.into_boxed_slice(),
            label_spans: u32::try_from(2 * labels.len()).unwrap_or(u32::MAX),
            owners,
            side: spans.side.into_boxed_str(),
        };
        Ok((meta, m.managed_fields.map(RawValue::get)))
    }

    /// The same metadata after `cut` was removed from the JSON text.
    pub fn after_cut(&mut self, cut: &Range<usize>) {
        self.move_spans(|span| span.after_cut(cut));
    }

    /// Whether the JSON lacks the top-level `apiVersion` and `kind` members (an empty value
    /// is present).
    pub fn lacks_type(&self) -> (bool, bool) {
        (self.api_version == Span::default(), self.kind == Span::default())
    }

    /// The same metadata after `len` bytes were inserted at `at` of the JSON text (after the
    /// object's `{`), among them the values of `apiVersion` and `kind` at the given ranges of
    /// the new text, for each one inserted.
    pub fn after_insert(
        &mut self,
        at: usize,
        len: usize,
        api_version: Option<Range<usize>>,
        kind: Option<Range<usize>>,
    ) {
        let len = u32::try_from(len).unwrap_or(0);
        self.move_spans(|span| span.after_insert(at, len));
        if let Some(range) = api_version {
            self.api_version = Span::of_json(range);
        }
        if let Some(range) = kind {
            self.kind = Span::of_json(range);
        }
    }

    fn move_spans(&mut self, moved: impl Fn(Span) -> Span) {
        let fixed = [&mut self.api_version, &mut self.kind, &mut self.name, &mut self.uid, &mut self.resource_version];
        for span in fixed.into_iter().chain(&mut self.namespace).chain(&mut self.deletion_timestamp) {
            *span = moved(*span);
        }
        for span in self.pairs.iter_mut() {
            *span = moved(*span);
        }
        for owner in self.owners.iter_mut() {
            for span in [&mut owner.api_version, &mut owner.kind, &mut owner.name, &mut owner.uid] {
                *span = moved(*span);
            }
        }
    }

    /// The view of this metadata over `json`, the text it was decoded from.
    pub fn view<'a>(&'a self, json: &'a str) -> ObjectMeta<'a> {
        let texts = self.texts(json);
        ObjectMeta {
            api_version: texts.get(self.api_version),
            kind: texts.get(self.kind),
            namespace: self.namespace(json),
            name: self.name(json),
            uid: self.uid(json),
            resource_version: self.resource_version(json),
            generation: self.generation,
            labels: self.labels(json),
            annotations: Labels::new(texts, &self.pairs[self.label_spans as usize..]),
            deletion_timestamp: self.deletion_timestamp.map(|s| texts.get(s)),
            owner_references: self.owner_references(json),
        }
    }

    // The fields read on every event, each resolved alone (the hot path need not build the
    // whole view).

    /// `metadata.namespace`, over `json`.
    pub fn namespace<'a>(&'a self, json: &'a str) -> Option<&'a str> {
        self.namespace.map(|s| self.texts(json).get(s))
    }

    /// `metadata.name`, over `json`.
    pub fn name<'a>(&'a self, json: &'a str) -> &'a str {
        self.texts(json).get(self.name)
    }

    /// `metadata.uid`, over `json`.
    pub fn uid<'a>(&'a self, json: &'a str) -> &'a str {
        self.texts(json).get(self.uid)
    }

    /// `metadata.resourceVersion`, over `json`.
    pub fn resource_version<'a>(&'a self, json: &'a str) -> &'a str {
        self.texts(json).get(self.resource_version)
    }

    /// `metadata.labels`, over `json`.
    pub fn labels<'a>(&'a self, json: &'a str) -> Labels<'a> {
        Labels::new(self.texts(json), &self.pairs[..self.label_spans as usize])
    }

    /// `metadata.ownerReferences`, over `json`.
    pub fn owner_references<'a>(&'a self, json: &'a str) -> OwnerReferences<'a> {
        OwnerReferences { texts: self.texts(json), owners: &self.owners }
    }

    fn texts<'a>(&'a self, json: &'a str) -> Texts<'a> {
        Texts { json, side: &self.side }
    }

    /// Heap bytes held beyond the JSON text.
    pub fn heap_size(&self) -> usize {
        std::mem::size_of_val::<[Span]>(&self.pairs)
            + std::mem::size_of_val::<[OwnerSpans]>(&self.owners)
            + self.side.len()
    }
}

/// Turns strings borrowed from the JSON into spans, and copies the others into the side text.
struct Spans<'a> {
    json: &'a str,
    side: String,
}

impl Spans<'_> {
    fn or_empty(&mut self, text: Option<Text<'_>>) -> Span {
        text.map_or(Span::default(), |t| self.of(&t.0))
    }

    /// A string borrowed from the JSON (its bytes lie within the JSON's, which no other
    /// allocation's can) is a range of it; any other is copied to the side text.
    fn of(&mut self, text: &str) -> Span {
        let base = self.json.as_ptr() as usize;
        let at = text.as_ptr() as usize;
        // Both fit in 31 bits: the JSON is at most MAX_JSON bytes, the side text is part of it.
        if at >= base && at + text.len() <= base + self.json.len() {
            return Span { start: (at - base) as u32, end: (at - base + text.len()) as u32 };
        }
        let start = self.side.len() as u32 | SIDE;
        self.side.push_str(text);
        Span { start, end: self.side.len() as u32 }
    }
}

/// The metadata fields the host parses from every object, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectMeta<'a> {
    /// `apiVersion` (empty when absent).
    pub api_version: &'a str,
    /// `kind` (empty when absent).
    pub kind: &'a str,
    /// `metadata.namespace`; `None` (or empty in JSON) for cluster-scoped objects.
    pub namespace: Option<&'a str>,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid` (empty when absent).
    pub uid: &'a str,
    /// `metadata.resourceVersion` (empty when absent).
    pub resource_version: &'a str,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.labels`.
    pub labels: Labels<'a>,
    /// `metadata.annotations`.
    pub annotations: Labels<'a>,
    /// `metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<&'a str>,
    /// `metadata.ownerReferences`.
    pub owner_references: OwnerReferences<'a>,
}

/// An owner reference (`metadata.ownerReferences[*]`), borrowed from its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerReference<'a> {
    /// The owner's apiVersion.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name (same namespace as the owned object).
    pub name: &'a str,
    /// The owner's uid.
    pub uid: &'a str,
    /// Whether this owner is the managing controller.
    pub controller: Option<bool>,
}

/// An object's owner references, in order.
#[derive(Clone, Copy)]
pub struct OwnerReferences<'a> {
    texts: Texts<'a>,
    owners: &'a [OwnerSpans],
}

impl<'a> OwnerReferences<'a> {
    /// The owner reference at `index`.
    pub fn get(&self, index: usize) -> Option<OwnerReference<'a>> {
        self.owners.get(index).map(|o| self.resolve(o))
    }

    /// The owner references, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = OwnerReference<'a>> + 'a {
        let this = *self;
        self.owners.iter().map(move |o| this.resolve(o))
    }

    fn resolve(&self, o: &OwnerSpans) -> OwnerReference<'a> {
        let texts = self.texts;
        OwnerReference {
            api_version: texts.get(o.api_version),
            kind: texts.get(o.kind),
            name: texts.get(o.name),
            uid: texts.get(o.uid),
            controller: o.controller,
        }
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }
}

impl PartialEq for OwnerReferences<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for OwnerReferences<'_> {}

impl fmt::Debug for OwnerReferences<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    #[serde(default, borrow)]
    api_version: Option<Text<'a>>,
    #[serde(default, borrow)]
    kind: Option<Text<'a>>,
    #[serde(borrow)]
    metadata: Option<MetaHead<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaHead<'a> {
    #[serde(default, borrow)]
    namespace: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    uid: Option<Text<'a>>,
    #[serde(default, borrow)]
    resource_version: Option<Text<'a>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default, borrow)]
    labels: Option<Entries<'a>>,
    #[serde(default, borrow)]
    annotations: Option<Entries<'a>>,
    #[serde(default, borrow)]
    deletion_timestamp: Option<Text<'a>>,
    #[serde(default, borrow)]
    owner_references: Option<Vec<OwnerHead<'a>>>,
    #[serde(default, borrow)]
    managed_fields: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerHead<'a> {
    #[serde(borrow)]
    api_version: Text<'a>,
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    uid: Text<'a>,
    #[serde(default)]
    controller: Option<bool>,
}

#[cfg(test)]
mod tests {
    use crate::informer::Object;

    /// `managedFields` before the other fields, escapes in several of them.
    const POD: &str = r#"{"metadata":{"managedFields":[{"manager":"m"}],"name":"w\u0065b","namespace":"shop","labels":{"b":"2","a":"x\"y"},"annotations":{"note":"caf\u00e9"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u\/1"},{"apiVersion":"v1","kind":"Node","name":"n","uid":"u2","controller":false}],"resourceVersion":"9","deletionTimestamp":"2025-01-01T00:00:00Z"},"apiVersion":"v1","kind":"Pod"}"#;

    #[test]
    fn every_field_reads_back_including_escaped_strings() {
        let obj = Object::from_str(POD).unwrap();
        let m = obj.meta();
        assert_eq!((m.name, m.namespace, m.resource_version, m.uid), ("web", Some("shop"), "9", ""));
        assert_eq!((m.api_version, m.kind), ("v1", "Pod"));
        assert_eq!(m.deletion_timestamp, Some("2025-01-01T00:00:00Z"));
        assert_eq!(m.labels.iter().collect::<Vec<_>>(), [("a", "x\"y"), ("b", "2")]);
        assert_eq!(m.annotations.get("note"), Some("café"));
        let owners: Vec<_> = m.owner_references.iter().map(|o| (o.kind, o.name, o.uid, o.controller)).collect();
        assert_eq!(owners, [("ReplicaSet", "rs", "u/1", None), ("Node", "n", "u2", Some(false))]);
        assert_eq!(m.owner_references.len(), 2);
        assert!(m.owner_references.get(2).is_none());
        assert_eq!(obj.key(), "shop/web");
    }

    #[test]
    fn fields_after_the_stripped_managed_fields_still_read_right() {
        let stripped = Object::from_str(POD).unwrap().without_managed_fields();
        assert!(!stripped.json().contains("managedFields"));
        let reparsed = Object::from_str(stripped.json()).unwrap();
        assert_eq!(stripped.meta(), reparsed.meta());
        assert_eq!(stripped.meta(), Object::from_str(POD).unwrap().meta());
        let in_place = Object::from_str(POD).unwrap().into_without_managed_fields();
        assert_eq!(in_place.meta(), reparsed.meta());
        assert_eq!(in_place.labels().get("a"), Some("x\"y"));
    }

    #[test]
    fn strings_without_escapes_are_not_copied() {
        let plain = Object::from_str(r#"{"metadata":{"name":"a","labels":{"k":"v"}}}"#).unwrap();
        let escaped = Object::from_str(r#"{"metadata":{"name":"a","labels":{"k":"\u0076"}}}"#).unwrap();
        assert_eq!(plain.labels(), escaped.labels());
        assert_eq!(escaped.heap_size() - escaped.json().len(), plain.heap_size() - plain.json().len() + 1);
    }
}

//! [`Labels`]: an object's labels or annotations, as a small sorted map read in place.
//!
//! Objects carry a handful of labels and annotations, and the cache holds every object of a
//! resource: a `BTreeMap` allocates nodes sized for eleven entries (over half a kilobyte
//! for two string pairs), and even a sorted slice of `(String, String)` costs 48 bytes and
//! two allocations per entry. wink copies none of the text: each entry is two [`Span`]s
//! (16 bytes) into the object's JSON, sorted by key, in the object's one slice of spans, and
//! a [`Labels`] is a view of them with the lookups a map gives (binary search by key).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use super::meta::{Span, Texts};

/// Keys and values sorted by key, each key once: a view into an object's metadata.
#[derive(Clone, Copy)]
pub struct Labels<'a> {
    texts: Texts<'a>,
    /// Key 0, value 0, key 1, value 1, …
    pairs: &'a [Span],
}

impl<'a> Labels<'a> {
    pub(crate) fn new(texts: Texts<'a>, pairs: &'a [Span]) -> Self {
        Self { texts, pairs }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        let mut low = 0;
        let mut high = self.len();
        while low < high {
            let mid = low + (high - low) / 2;
            match self.key_at(mid).cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(self.value_at(mid)),
            }
        }
        None
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> Iter<'a> {
        Iter { labels: *self, front: 0, back: self.len() }
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        self.iter().map(|(_, v)| v)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.pairs.len() / 2
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    fn key_at(&self, i: usize) -> &'a str {
        self.texts.get(self.pairs[2 * i])
    }

    fn value_at(&self, i: usize) -> &'a str {
        self.texts.get(self.pairs[2 * i + 1])
    }
}

/// A selector is matched against an object's labels where they are.
impl crate::kube::LabelSet for Labels<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

impl PartialEq for Labels<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Labels<'_> {}

/// The entries of a [`Labels`], sorted by key.
#[derive(Clone)]
pub struct Iter<'a> {
    labels: Labels<'a>,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        (self.front < self.back).then(|| {
            let i = self.front;
            self.front += 1;
            (self.labels.key_at(i), self.labels.value_at(i))
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            (self.labels.key_at(self.back), self.labels.value_at(self.back))
        })
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl fmt::Debug for Labels<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for Labels<'a> {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A JSON object of strings as decoded: sorted by key and, for a key given twice, the last
/// value kept (as a JSON object decoded into a map does). Each string borrowed from the
/// input where it has no escapes.
pub(crate) struct Entries<'de>(pub Vec<(Text<'de>, Text<'de>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;

        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    entries.push((key, map.next_value::<Text<'de>>()?));
                }
                // Stable: among equal keys the later one stays later, and dedup keeps the
                // first of a run, so reverse first to keep the last.
                entries.reverse();
                entries.sort_by(|a, b| a.0.0.cmp(&b.0.0));
                entries.dedup_by(|later, earlier| later.0.0 == earlier.0.0);
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// A string borrowed from the input where the deserializer can (no escapes), else owned.
pub(crate) struct Text<'de>(pub Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use crate::informer::Object;

    fn object(labels: &str) -> Object {
        Object::from_string(format!(r#"{{"metadata":{{"name":"x","labels":{labels}}}}}"#)).unwrap()
    }

    #[test]
    fn decodes_sorted_and_looks_up_by_key() {
        let obj = object(r#"{"tier":"web","app":"shop","team":"a"}"#);
        let labels = obj.labels();
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["app", "team", "tier"]);
        assert_eq!(labels.values().collect::<Vec<_>>(), ["shop", "a", "web"]);
        assert_eq!(labels.iter().next_back(), Some(("tier", "web")));
        assert_eq!(labels.get("app"), Some("shop"));
        assert_eq!(labels.get("tier"), Some("web"));
        assert_eq!(labels.get("aaa"), None);
        assert_eq!(labels.get("zzz"), None);
        assert_eq!(labels.get("nope"), None);
        assert!(labels.contains_key("tier"));
        assert_eq!(labels.len(), 3);
        assert_eq!(format!("{labels:?}"), r#"{"app": "shop", "team": "a", "tier": "web"}"#);
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value_like_a_map() {
        let obj = object(r#"{"a":"1","b":"2","a":"3"}"#);
        assert_eq!(obj.labels().iter().collect::<Vec<_>>(), [("a", "3"), ("b", "2")]);
        assert_eq!(obj.labels(), object(r#"{"b":"2","a":"3"}"#).labels());
        assert_ne!(obj.labels(), object(r#"{"b":"2","a":"1"}"#).labels());
    }

    #[test]
    fn empty_keys_and_values_and_escapes_round_trip() {
        let obj = object(r#"{"":"","b":"\u00e9\"q","a":""}"#);
        let labels = obj.labels();
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("", ""), ("a", ""), ("b", "é\"q")]);
        assert_eq!(labels.get(""), Some(""));
        assert_eq!(labels.get("b"), Some("é\"q"));
        assert!(object("{}").labels().is_empty());
    }
}

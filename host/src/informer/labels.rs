//! [`Labels`]: an object's labels or annotations, as a small sorted map.
//!
//! Objects carry a handful of labels and annotations, and the cache holds every object of a
//! resource: a `BTreeMap` allocates nodes sized for eleven entries (over half a kilobyte
//! for two string pairs), and even a sorted slice of `(String, String)` costs 48 bytes and
//! two allocations per entry. wink packs them instead: every key and value, sorted by key,
//! in one string, and where each ends in one slice of offsets — two allocations per map,
//! 8 bytes per entry beyond the text — with the lookups a map gives (binary search by key).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// Keys and values sorted by key, each key once.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels {
    /// Key 0, value 0, key 1, value 1, … with nothing in between.
    text: Box<str>,
    /// `ends[2i]` is where key `i` ends in `text`, `ends[2i + 1]` where its value ends.
    ends: Box<[u32]>,
}

impl Labels {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
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
    pub fn iter(&self) -> Iter<'_> {
        Iter { labels: self, front: 0, back: self.len() }
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Heap bytes held (the text and the offsets).
    pub fn heap_size(&self) -> usize {
        self.text.len() + std::mem::size_of_val::<[u32]>(&self.ends)
    }

    fn bound(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] as usize }
    }

    fn key_at(&self, i: usize) -> &str {
        &self.text[self.bound(2 * i)..self.ends[2 * i] as usize]
    }

    fn value_at(&self, i: usize) -> &str {
        &self.text[self.ends[2 * i] as usize..self.ends[2 * i + 1] as usize]
    }

    /// Sorts and, for a key given twice, keeps the last value (as a JSON object decoded into
    /// a map does).
    fn from_unsorted<K: AsRef<str>, V: AsRef<str>>(mut entries: Vec<(K, V)>) -> Self {
        // Stable: among equal keys the later one stays later, and dedup keeps the first of a
        // run, so reverse first to keep the last.
        entries.reverse();
        entries.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        entries.dedup_by(|later, earlier| later.0.as_ref() == earlier.0.as_ref());
        Self::from_sorted(&entries)
    }

    /// Packs entries already sorted by key, each key once.
    fn from_sorted<K: AsRef<str>, V: AsRef<str>>(entries: &[(K, V)]) -> Self {
        let size = entries.iter().map(|(k, v)| k.as_ref().len() + v.as_ref().len()).sum();
        let mut text = String::with_capacity(size);
        let mut ends = Vec::with_capacity(entries.len() * 2);
        for (key, value) in entries {
            for part in [key.as_ref(), value.as_ref()] {
                text.push_str(part);
                // Labels live inside objects the API server accepted (at most 1.5 MiB each).
                ends.push(u32::try_from(text.len()).expect("labels larger than 4 GiB"));
            }
        }
        Self { text: text.into_boxed_str(), ends: ends.into_boxed_slice() }
    }
}

/// The entries of a [`Labels`], sorted by key.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    labels: &'a Labels,
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

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(String, String)> for Labels {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        Self::from_unsorted(iter.into_iter().collect())
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Labels {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(iter: I) -> Self {
        Self::from_unsorted(iter.into_iter().collect())
    }
}

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Self {
        Self::from_sorted(&map.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LabelsVisitor;

        impl<'de> Visitor<'de> for LabelsVisitor {
            type Value = Labels;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
                // Borrowed from the input where it has no escapes: packing copies each
                // string once, into the one text.
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    let Text(value) = map.next_value::<Text<'de>>()?;
                    entries.push((key, value));
                }
                Ok(Labels::from_unsorted(entries))
            }
        }

        deserializer.deserialize_map(LabelsVisitor)
    }
}

/// A string borrowed from the input where the deserializer can (no escapes), else owned.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
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
    use super::*;

    #[test]
    fn decodes_sorted_and_looks_up_by_key() {
        let labels: Labels = serde_json::from_str(r#"{"tier":"web","app":"shop","team":"a"}"#).unwrap();
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
        let labels: Labels = serde_json::from_str(r#"{"a":"1","b":"2","a":"3"}"#).unwrap();
        let map: BTreeMap<String, String> = serde_json::from_str(r#"{"a":"1","b":"2","a":"3"}"#).unwrap();
        assert_eq!(labels, Labels::from(map));
        assert_eq!(labels.get("a"), Some("3"));
    }

    #[test]
    fn holds_the_text_and_eight_bytes_per_entry() {
        let labels: Labels = [("app", "web"), ("team", "a")].into_iter().collect();
        // A (String, String) slice would hold 2 × 48 bytes before the text.
        assert_eq!(labels.heap_size(), "appwebteama".len() + 2 * 8);
        assert!(Labels::default().is_empty());
        assert_eq!(Labels::default().heap_size(), 0);
    }

    #[test]
    fn empty_keys_and_values_and_escapes_round_trip() {
        let labels: Labels = serde_json::from_str(r#"{"":"","b":"\u00e9\"q","a":""}"#).unwrap();
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("", ""), ("a", ""), ("b", "é\"q")]);
        assert_eq!(labels.get(""), Some(""));
        assert_eq!(labels.get("b"), Some("é\"q"));
    }
}

//! [`Labels`]: an object's labels or annotations, as a small sorted map.
//!
//! Objects carry a handful of labels and annotations, and the cache holds every object of a
//! resource: a `BTreeMap` allocates nodes sized for eleven entries (over half a kilobyte
//! for two string pairs), so wink keeps them as one sorted slice instead — one allocation
//! of exactly the entries — with the lookups a map gives (binary search by key).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// Keys and values sorted by key, each key once.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(Box<[(String, String)]>);

impl Labels {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok().map(|i| &self.0[i].1)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &String)> + '_ {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> + '_ {
        self.0.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &String> + '_ {
        self.0.iter().map(|(_, v)| v)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Heap bytes held (the slice and the strings).
    pub fn heap_size(&self) -> usize {
        self.0.len() * std::mem::size_of::<(String, String)>()
            + self.0.iter().map(|(k, v)| k.capacity() + v.capacity()).sum::<usize>()
    }

    /// Sorts and, for a key given twice, keeps the last value (as a JSON object decoded into
    /// a map does).
    fn from_unsorted(mut entries: Vec<(String, String)>) -> Self {
        // Stable: among equal keys the later one stays later, and dedup keeps the first of a
        // run, so reverse first to keep the last.
        entries.reverse();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        Self(entries.into_boxed_slice())
    }
}

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

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Self {
        Self(map.into_iter().collect::<Vec<_>>().into_boxed_slice())
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, String)>, fn(&'a (String, String)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
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
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value::<String>()?;
                    entries.push((key, value));
                }
                Ok(Labels::from_unsorted(entries))
            }
        }

        deserializer.deserialize_map(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_sorted_and_looks_up_by_key() {
        let labels: Labels = serde_json::from_str(r#"{"tier":"web","app":"shop","team":"a"}"#).unwrap();
        assert_eq!(labels.keys().map(String::as_str).collect::<Vec<_>>(), ["app", "team", "tier"]);
        assert_eq!(labels.get("app").map(String::as_str), Some("shop"));
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
        assert_eq!(labels.get("a").map(String::as_str), Some("3"));
    }

    #[test]
    fn is_smaller_than_a_btree_map() {
        let labels: Labels =
            [("app".to_owned(), "web".to_owned()), ("team".to_owned(), "a".to_owned())].into_iter().collect();
        // A BTreeMap<String, String> leaf node alone holds 11 × 48 bytes.
        assert!(labels.heap_size() < 11 * 48, "{}", labels.heap_size());
        assert!(Labels::default().is_empty());
    }
}

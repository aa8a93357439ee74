//! The lines of the `event-recorder` plugin (plugins/event-recorder), parsed:
//!
//! ```text
//! event=add key=<key> rv=<rv> initial=<bool> [tag=<tag>]
//! event=update key=<key> old_rv=<rv> new_rv=<rv> [tag=<tag>]
//! event=delete key=<key> rv=<rv> unknown=<bool> [tag=<tag>]
//! retry key=<key> [tag=<tag>]        (after the line of a call it answers with `retry`)
//! ```
//!
//! and the view they add up to ([`view`]). [`Seen`] is also what a native handler records
//! ([`crate::apiserver::testing::Recorder`], from a [`Notification`]), and
//! [`Seen::apply_to`] builds the views of both.

use std::collections::{BTreeMap, HashMap};

use wink::informer::Notification;

use crate::logs::logs;
use crate::wait::wait_for;

/// One event as a plugin (or a native handler) was told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// `on-add`.
    Add {
        /// The object's key.
        key: String,
        /// Its resourceVersion.
        rv: String,
        /// Whether it came with the initial list.
        initial: bool,
    },
    /// `on-update` (a resync when `old_rv == new_rv`).
    Update {
        /// The object's key.
        key: String,
        /// The old object's resourceVersion.
        old_rv: String,
        /// The new object's resourceVersion.
        new_rv: String,
    },
    /// `on-delete`.
    Delete {
        /// The object's key.
        key: String,
        /// The last known resourceVersion.
        rv: String,
        /// Whether the final state is unknown (inferred on a relist: a tombstone).
        unknown: bool,
    },
}

impl Seen {
    /// The object's key.
    pub fn key(&self) -> &str {
        match self {
            Seen::Add { key, .. } | Seen::Update { key, .. } | Seen::Delete { key, .. } => key,
        }
    }

    /// Whether this is a resync: an update with the same old and new resourceVersion.
    pub fn is_resync(&self) -> bool {
        matches!(self, Seen::Update { old_rv, new_rv, .. } if old_rv == new_rv)
    }

    /// Applies this event to a view (key → resourceVersion): adds and updates set the key's
    /// resourceVersion, deletes remove the key.
    pub fn apply_to(self, view: &mut BTreeMap<String, String>) {
        match self {
            Seen::Add { key, rv, .. } | Seen::Update { key, new_rv: rv, .. } => {
                view.insert(key, rv);
            }
            Seen::Delete { key, .. } => {
                view.remove(&key);
            }
        }
    }
}

impl From<&Notification> for Seen {
    fn from(notification: &Notification) -> Self {
        match notification {
            Notification::Add { obj, initial } => {
                Seen::Add { key: obj.key().to_owned(), rv: obj.resource_version().to_owned(), initial: *initial }
            }
            Notification::Update { old, new } => Seen::Update {
                key: new.key().to_owned(),
                old_rv: old.resource_version().to_owned(),
                new_rv: new.resource_version().to_owned(),
            },
            Notification::Delete { obj, final_state_unknown } => Seen::Delete {
                key: obj.key().to_owned(),
                rv: obj.resource_version().to_owned(),
                unknown: *final_state_unknown,
            },
        }
    }
}

/// One parsed line: the event and the plugin's `tag` config, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecorderLine {
    /// What the plugin was told.
    pub seen: Seen,
    /// The `tag` the plugin was configured with.
    pub tag: Option<String>,
}

impl RecorderLine {
    /// Parses one line; `None` for other lines (e.g. `retry key=…`).
    pub fn parse(line: &str) -> Option<Self> {
        let fields: HashMap<&str, &str> = line.split_whitespace().filter_map(|w| w.split_once('=')).collect();
        let get = |k: &str| fields.get(k).map(|v| (*v).to_owned());
        let flag = |k: &str| fields.get(k).map(|v| *v == "true");
        let key = get("key")?;
        let seen = match *fields.get("event")? {
            "add" => Seen::Add { key, rv: get("rv")?, initial: flag("initial")? },
            "update" => Seen::Update { key, old_rv: get("old_rv")?, new_rv: get("new_rv")? },
            "delete" => Seen::Delete { key, rv: get("rv")?, unknown: flag("unknown")? },
            _ => return None,
        };
        Some(Self { seen, tag: get("tag") })
    }
}

/// Whether the event-recorder plugin `plugin` has been told `event`.
pub fn has_seen(plugin: &str, event: &Seen) -> bool {
    logs().recorded(plugin).iter().any(|l| &l.seen == event)
}

/// Waits until the event-recorder plugin `plugin` has been told `event`.
pub async fn wait_seen(plugin: &str, event: &Seen) {
    wait_for(&format!("{plugin} to see {event:?}"), || has_seen(plugin, event), || logs().dump(plugin)).await;
}

/// The key of a `retry key=<key>` line (the plugin answered the call just logged for that key
/// with `retry`).
fn retried_key(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("retry ")?;
    rest.split_whitespace().find_map(|w| w.strip_prefix("key="))
}

/// The view an event-recorder's log lines add up to: key → resourceVersion after applying,
/// in order, every add, update and delete the plugin accepted. A call it answered with
/// `retry` (its line followed, among the lines about that key, by `retry key=<key>`) does not
/// count: the host delivers that key again.
pub fn view(lines: &[String]) -> BTreeMap<String, String> {
    // Per key: the events in order, each with whether it was refused.
    let mut calls: BTreeMap<String, Vec<(Seen, bool)>> = BTreeMap::new();
    for line in lines {
        if let Some(parsed) = RecorderLine::parse(line) {
            calls.entry(parsed.seen.key().to_owned()).or_default().push((parsed.seen, false));
        } else if let Some(key) = retried_key(line)
            && let Some(last) = calls.get_mut(key).and_then(|c| c.last_mut())
        {
            last.1 = true;
        }
    }
    let mut view = BTreeMap::new();
    for (seen, _) in calls.into_values().flatten().filter(|(_, refused)| !refused) {
        seen.apply_to(&mut view);
    }
    view
}

/// [`view`] of what the event-recorder plugin `plugin` logged so far.
pub fn view_of(plugin: &str) -> BTreeMap<String, String> {
    view(&logs().guest_lines(plugin))
}

/// The events of each key, in the order they were delivered.
pub fn by_key(lines: &[RecorderLine]) -> BTreeMap<String, Vec<Seen>> {
    let mut out: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    for line in lines {
        out.entry(line.seen.key().to_owned()).or_default().push(line.seen.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind_of_line() {
        assert_eq!(
            RecorderLine::parse("event=add key=shop/x rv=5 initial=true"),
            Some(RecorderLine { seen: Seen::Add { key: "shop/x".into(), rv: "5".into(), initial: true }, tag: None })
        );
        let update = RecorderLine::parse("event=update key=a old_rv=3 new_rv=3 tag=v2").unwrap();
        assert!(update.seen.is_resync());
        assert_eq!(update.tag.as_deref(), Some("v2"));
        assert_eq!(
            RecorderLine::parse("event=delete key=ns/y rv=9 unknown=false").unwrap().seen,
            Seen::Delete { key: "ns/y".into(), rv: "9".into(), unknown: false }
        );
        assert_eq!(RecorderLine::parse("retry key=ns/y"), None);
    }

    #[test]
    fn the_view_skips_calls_answered_with_retry() {
        let lines: Vec<String> = [
            "event=add key=a/x rv=1 initial=true",
            "event=add key=a/y rv=2 initial=false",
            "event=update key=a/x old_rv=1 new_rv=3",
            "retry key=a/x",
            "event=delete key=a/y rv=4 unknown=false",
            "event=add key=a/z rv=5 initial=false tag=t",
            "retry key=a/z tag=t",
            "something else",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let expected: BTreeMap<String, String> = [("a/x".to_owned(), "1".to_owned())].into();
        assert_eq!(view(&lines), expected);
        let mut more = lines;
        more.push("event=update key=a/x old_rv=1 new_rv=3".into());
        more.push("event=add key=a/z rv=5 initial=false tag=t".into());
        let expected: BTreeMap<String, String> = [("a/x".into(), "3".into()), ("a/z".into(), "5".into())].into();
        assert_eq!(view(&more), expected);
    }
}

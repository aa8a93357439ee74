//! `Context`: the clock and the randomness a write needs, so the rules stay pure.
//!
//! A create stamps `creationTimestamp` and a new `uid`, and may pick a random name suffix for
//! `generateName`; a delete stamps `deletionTimestamp`; managed fields carry a time. The rules
//! ask a `Context` for these: [`SystemContext`] uses the system clock and random UUIDs,
//! [`FixedContext`] a fixed time and counted uids, for deterministic tests.

use std::cell::Cell;
use std::time::{Duration, SystemTime};

/// The characters of a generated name suffix: the API server's alphabet, without vowels
/// (no words) and without look-alikes (0, 1, 3).
pub const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The length of a generated name suffix.
pub const NAME_SUFFIX_LEN: usize = 5;

/// Where a write gets the current time, new uids and random name suffixes.
pub trait Context {
    /// The current time.
    fn now(&self) -> SystemTime;
    /// A new object uid (a UUID).
    fn new_uid(&self) -> String;
    /// A random [`NAME_SUFFIX_LEN`]-character suffix from [`NAME_SUFFIX_ALPHABET`].
    fn name_suffix(&self) -> String;

    /// The current time as the API server writes timestamps: RFC 3339, seconds, UTC.
    fn timestamp(&self) -> String {
        humantime::format_rfc3339_seconds(self.now()).to_string()
    }
}

/// The system clock and random UUIDs (v4).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemContext;

impl Context for SystemContext {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn new_uid(&self) -> String {
        uuid::Uuid::new_v4().to_string()
    }

    fn name_suffix(&self) -> String {
        let random = uuid::Uuid::new_v4();
        random.as_bytes()[..NAME_SUFFIX_LEN]
            .iter()
            .map(|b| NAME_SUFFIX_ALPHABET[usize::from(*b) % NAME_SUFFIX_ALPHABET.len()] as char)
            .collect()
    }
}

/// A fixed time; uids and name suffixes counted from 1, so every run gives the same objects.
#[derive(Debug)]
pub struct FixedContext {
    now: SystemTime,
    counter: Cell<u64>,
}

impl FixedContext {
    /// A context whose time is `secs` seconds after the Unix epoch.
    pub fn at_unix(secs: u64) -> Self {
        Self { now: SystemTime::UNIX_EPOCH + Duration::from_secs(secs), counter: Cell::new(0) }
    }

    fn next(&self) -> u64 {
        let n = self.counter.get() + 1;
        self.counter.set(n);
        n
    }
}

impl Context for FixedContext {
    fn now(&self) -> SystemTime {
        self.now
    }

    /// `00000000-0000-4000-8000-000000000001`, then `...002`, ...
    fn new_uid(&self) -> String {
        format!("00000000-0000-4000-8000-{:012x}", self.next())
    }

    /// The count written in the suffix alphabet: `bbbbc`, `bbbbd`, ...
    fn name_suffix(&self) -> String {
        let mut n = self.next();
        let base = NAME_SUFFIX_ALPHABET.len() as u64;
        let mut chars = [NAME_SUFFIX_ALPHABET[0]; NAME_SUFFIX_LEN];
        for slot in chars.iter_mut().rev() {
            *slot = NAME_SUFFIX_ALPHABET[(n % base) as usize];
            n /= base;
        }
        chars.iter().map(|b| *b as char).collect()
    }
}

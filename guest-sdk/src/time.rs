//! The clocks: the host gives every plugin the WASI wall clock and monotonic clock.
//!
//! `std::time::SystemTime::now()` panics on `wasm32-unknown-unknown`; use [`now`] and
//! [`monotonic`] instead. Natively they read the operating system's clocks.

use std::time::{Duration, SystemTime};

/// The current time (wall clock).
pub fn now() -> SystemTime {
    imp::now()
}

/// Time since an unspecified start (monotonic clock): for measuring durations.
pub fn monotonic() -> Duration {
    imp::monotonic()
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::time::{Duration, SystemTime};

    use crate::bindings::wasi::clocks::{monotonic_clock, wall_clock};

    pub(super) fn now() -> SystemTime {
        let t = wall_clock::now();
        SystemTime::UNIX_EPOCH + Duration::new(t.seconds, t.nanoseconds)
    }

    pub(super) fn monotonic() -> Duration {
        Duration::from_nanos(monotonic_clock::now())
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::sync::LazyLock;
    use std::time::{Duration, Instant, SystemTime};

    static START: LazyLock<Instant> = LazyLock::new(Instant::now);

    pub(super) fn now() -> SystemTime {
        SystemTime::now()
    }

    pub(super) fn monotonic() -> Duration {
        START.elapsed()
    }
}

/// Formats a time as Kubernetes writes timestamps (RFC 3339, seconds, UTC), e.g.
/// `2024-05-01T12:00:00Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(1_714_564_800)), "2024-05-01T12:00:00Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn clocks_move_forward() {
        let a = monotonic();
        assert!(monotonic() >= a);
        assert!(now() > SystemTime::UNIX_EPOCH);
    }
}

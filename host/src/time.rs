//! Time, shared by every service: an injected [`Clock`] (the Second Brain, the gate and
//! the scheduler never read the system clock directly, so every transition is tested
//! by moving a clock, not by sleeping) and the one RFC 3339 format of the API.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub const MINUTE_MS: i64 = 60_000;
pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 86_400_000;

/// Milliseconds since the Unix epoch, UTC.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// A clock that only moves when told to (tests, benchmarks, replays).
#[derive(Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start_ms: i64) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    pub fn advance(&self, by_ms: i64) {
        self.0.fetch_add(by_ms, Ordering::SeqCst);
    }

    pub fn set(&self, to_ms: i64) {
        self.0.store(to_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The UTC calendar date of `ms`, `2026-11-22`.
pub fn date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

/// How long before `now` a moment was, as a person says it: "today", "yesterday",
/// "3 days ago", "2 weeks ago", "5 months ago", "2 years ago" (a moment after `now`,
/// from a skewed clock, is "today").
pub fn ago(at: i64, now: i64) -> String {
    let days = (now - at).max(0) / DAY_MS;
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit} ago")
        } else {
            format!("{n} {unit}s ago")
        }
    };
    match days {
        0 => "today".to_string(),
        1 => "yesterday".to_string(),
        2..=13 => plural(days, "day"),
        14..=59 => plural(days / 7, "week"),
        60..=729 => plural(days / 30, "month"),
        _ => plural(days / 365, "year"),
    }
}

/// Milliseconds <-> RFC 3339 (`2026-11-22T10:00:00.123Z`), lossless at millisecond
/// precision; `serde(with = "crate::time::rfc3339")` on an `i64` field.
pub mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn format(ms: i64) -> String {
        jiff::Timestamp::from_millisecond(ms)
            .map(|t| t.to_string())
            .unwrap_or_else(|_| ms.to_string())
    }

    /// Always three fractional digits, so that stamps compare correctly as strings
    /// (`05.1Z` would sort after `05.12Z`): for files whose readers sort text.
    pub fn format_fixed(ms: i64) -> String {
        jiff::Timestamp::from_millisecond(ms)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
            .unwrap_or_else(|_| ms.to_string())
    }

    pub fn parse(text: &str) -> Result<i64, String> {
        text.parse::<jiff::Timestamp>()
            .map(|t| t.as_millisecond())
            .map_err(|e| format!("`{text}` is not an RFC 3339 timestamp: {e}"))
    }

    pub fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*ms))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        parse(&String::deserialize(d)?).map_err(D::Error::custom)
    }

    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer, de::Error};

        pub fn serialize<S: Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
            match ms {
                Some(ms) => s.serialize_str(&super::format(*ms)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|t| super::parse(&t).map_err(D::Error::custom))
                .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ago_reads_as_a_person_says_it() {
        let now = 1_790_000_000_000;
        for (days, said) in [
            (0, "today"),
            (1, "yesterday"),
            (2, "2 days ago"),
            (13, "13 days ago"),
            (14, "2 weeks ago"),
            (60, "2 months ago"),
            (400, "13 months ago"),
            (800, "2 years ago"),
        ] {
            assert_eq!(ago(now - days * DAY_MS - 1, now), said, "{days}");
        }
        assert_eq!(ago(now + DAY_MS, now), "today");
    }

    #[test]
    fn fixed_stamps_have_one_width_so_that_they_sort_as_strings() {
        let stamp = rfc3339::format_fixed(SystemClock.now_ms());
        assert_eq!(stamp.len(), "2026-11-22T08:43:05.120Z".len(), "{stamp}");
        assert!(stamp.ends_with('Z'));
        assert_eq!(rfc3339::format_fixed(1_000), "1970-01-01T00:00:01.000Z");
        assert_eq!(date(951_782_400_000 + 86_399_999), "2000-02-29");
        assert_eq!(rfc3339::parse(&rfc3339::format(1_234)), Ok(1_234));
    }
}

//! Cron expressions: the standard five fields `minute hour day-of-month month
//! day-of-week`, evaluated in UTC. Each field is `*`, a value, a range `a-b`, a step
//! `*/n` or `a-b/n`, or a comma-separated list of these; months take `JAN`..`DEC` and
//! weekdays `SUN`..`SAT` (any case), and day-of-week 0 and 7 are both Sunday.
//!
//! Days follow the usual (Vixie cron) rule: when both day fields are restricted, a day
//! matches if either does (`0 0 1 * MON` runs on the 1st and on every Monday); when
//! either starts with `*`, both must match, which leaves the other one alone.
//!
//! An expression that can never fire (`0 0 31 2 *`) is refused when parsed, so a
//! parsed [`Cron`] always has a next time (until the calendar ends at year 9999).

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::Offset;

use crate::time::MINUTE_MS;

/// Longest expression accepted.
pub const MAX_CRON_CHARS: usize = 200;

/// How far ahead the next time is looked for. The Gregorian calendar repeats every
/// 400 years (146,097 days, exactly 20,871 weeks), so an expression that matches
/// any minute at all matches one in every 400-year window: past that, it never will.
const SEARCH_YEARS: i16 = 400;

/// Where the "does it ever fire" check starts (2000-01-01T00:00Z): any fixed instant
/// works, by the 400-year period.
const NEVER_FIRES_PROBE_MS: i64 = 946_684_800_000;

/// One of the five fields, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    const ALL: [Field; 5] = [
        Field::Minute,
        Field::Hour,
        Field::DayOfMonth,
        Field::Month,
        Field::DayOfWeek,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }

    /// The values the field accepts (day-of-week 7 is Sunday again).
    fn bounds(self) -> (u32, u32) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 7),
        }
    }

    /// The names the field accepts, the first one standing for the lowest value.
    fn names(self) -> Option<(&'static [&'static str], u32)> {
        const MONTHS: &[&str] = &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ];
        const WEEKDAYS: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
        match self {
            Field::Month => Some((MONTHS, 1)),
            Field::DayOfWeek => Some((WEEKDAYS, 0)),
            _ => None,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an expression is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("is empty; give 5 fields: minute hour day-of-month month day-of-week")]
    Empty,
    #[error("is longer than {MAX_CRON_CHARS} characters")]
    TooLong,
    #[error(
        "has {0} fields; give 5: minute hour day-of-month month day-of-week (evaluated in UTC)"
    )]
    FieldCount(usize),
    #[error("{field}: {reason}")]
    Field { field: Field, reason: String },
}

impl CronError {
    /// The field at fault, when the error is about one.
    pub fn field(&self) -> Option<Field> {
        match self {
            CronError::Field { field, .. } => Some(*field),
            _ => None,
        }
    }
}

/// A parsed expression: one bit per accepted value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    /// Bits 1..=31.
    days: u64,
    /// Bits 1..=12.
    months: u64,
    /// Bits 0..=6, Sunday = 0 (7 is folded into 0).
    weekdays: u64,
    /// Both day fields are restricted (neither starts with `*`): a day matches when
    /// either matches. Otherwise both must.
    days_either: bool,
}

impl FromStr for Cron {
    type Err = CronError;

    fn from_str(text: &str) -> Result<Cron, CronError> {
        Cron::parse(text)
    }
}

impl Cron {
    pub fn parse(text: &str) -> Result<Cron, CronError> {
        if text.chars().count() > MAX_CRON_CHARS {
            return Err(CronError::TooLong);
        }
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.is_empty() {
            return Err(CronError::Empty);
        }
        if fields.len() != Field::ALL.len() {
            return Err(CronError::FieldCount(fields.len()));
        }
        let mut masks = [0u64; 5];
        for ((mask, field), spec) in masks.iter_mut().zip(Field::ALL).zip(&fields) {
            *mask =
                parse_field(field, spec).map_err(|reason| CronError::Field { field, reason })?;
        }
        let [minutes, hours, days, months, weekdays] = masks;
        // 7 is Sunday too.
        let weekdays = (weekdays | (weekdays >> 7)) & 0x7f;
        let cron = Cron {
            minutes,
            hours,
            days,
            months,
            weekdays,
            days_either: !fields[2].starts_with('*') && !fields[4].starts_with('*'),
        };
        // Only a day-of-month no month of the expression has can make it match
        // nothing (a `*`-led day field always includes the 1st, and under the OR rule
        // any weekday occurs in every month).
        if cron.next_after(NEVER_FIRES_PROBE_MS).is_none() {
            return Err(CronError::Field {
                field: Field::DayOfMonth,
                reason: format!(
                    "`{}` is in none of the months given (like 31 February), so the expression never fires",
                    fields[2]
                ),
            });
        }
        Ok(cron)
    }

    fn day_matches(&self, day: i8, weekday: i8) -> bool {
        let dom = has(self.days, day as u32);
        let dow = has(self.weekdays, weekday as u32);
        if self.days_either {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first time (milliseconds, UTC, on a whole minute) strictly after
    /// `after_ms` that the expression matches; `None` past year 9999 (or, for an
    /// expression that never fires, which [`Cron::parse`] refuses).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start_ms = after_ms
            .div_euclid(MINUTE_MS)
            .checked_add(1)?
            .checked_mul(MINUTE_MS)?;
        let start = Offset::UTC.to_datetime(Timestamp::from_millisecond(start_ms).ok()?);
        let last_year = start.year().saturating_add(SEARCH_YEARS).min(9999);
        for year in start.year()..=last_year {
            let first_month = if year == start.year() {
                start.month()
            } else {
                1
            };
            for month in first_month..=12 {
                if !has(self.months, month as u32) {
                    continue;
                }
                let first_of_month = Date::new(year, month, 1).ok()?;
                let this_month = year == start.year() && month == start.month();
                let first_day = if this_month { start.day() } else { 1 };
                let weekday_of_1st = first_of_month.weekday().to_sunday_zero_offset();
                for day in first_day..=first_of_month.days_in_month() {
                    if !self.day_matches(day, (weekday_of_1st + day - 1) % 7) {
                        continue;
                    }
                    let today = this_month && day == start.day();
                    let first_hour = if today { start.hour() } else { 0 };
                    for hour in first_hour..24 {
                        if !has(self.hours, hour as u32) {
                            continue;
                        }
                        let first_minute = if today && hour == start.hour() {
                            start.minute()
                        } else {
                            0
                        };
                        if let Some(minute) = first_from(self.minutes, first_minute as u32) {
                            let at =
                                DateTime::new(year, month, day, hour, minute as i8, 0, 0).ok()?;
                            return Offset::UTC
                                .to_timestamp(at)
                                .ok()
                                .map(|t| t.as_millisecond());
                        }
                    }
                }
            }
        }
        None
    }
}

fn has(mask: u64, value: u32) -> bool {
    value < 64 && mask & (1 << value) != 0
}

/// The lowest value at or above `from` in `mask`.
fn first_from(mask: u64, from: u32) -> Option<u32> {
    let rest = mask.checked_shr(from)?;
    (rest != 0).then(|| from + rest.trailing_zeros())
}

/// One field's list into a bit mask; the error is the reason, for [`CronError::Field`].
fn parse_field(field: Field, spec: &str) -> Result<u64, String> {
    let (min, max) = field.bounds();
    let mut mask = 0u64;
    for item in spec.split(',') {
        if item.is_empty() {
            return Err(format!("`{spec}` has an empty list item"));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        let (low, high) = if range == "*" {
            // `*` on day-of-week is 0-6: 7 would only repeat Sunday.
            (min, if field == Field::DayOfWeek { 6 } else { max })
        } else if let Some((a, b)) = range.split_once('-') {
            let (low, high) = (value(field, a)?, value(field, b)?);
            if low > high {
                return Err(format!(
                    "the range `{range}` runs backwards; write the lower end first"
                ));
            }
            (low, high)
        } else {
            if step.is_some() {
                return Err(format!(
                    "`{item}`: a step goes after `*` or a range (`*/n`, `a-b/n`)"
                ));
            }
            let one = value(field, range)?;
            (one, one)
        };
        let step = match step {
            None => 1,
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => n,
                _ => {
                    return Err(format!("the step `{text}` in `{item}` must be 1 to {max}"));
                }
            },
        };
        for v in (low..=high).step_by(step as usize) {
            mask |= 1 << v;
        }
    }
    Ok(mask)
}

/// A number in the field's bounds, or one of its names.
fn value(field: Field, text: &str) -> Result<u32, String> {
    let (min, max) = field.bounds();
    if let Ok(n) = text.parse::<u32>() {
        if !(min..=max).contains(&n) {
            return Err(format!("`{text}` is out of range {min}-{max}"));
        }
        return Ok(n);
    }
    if let Some((names, first)) = field.names()
        && let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text))
    {
        return Ok(first + i as u32);
    }
    let accepted = match field.names() {
        Some((names, _)) => format!(
            "a number {min}-{max} or a name {}..{}",
            names[0],
            names[names.len() - 1]
        ),
        None => format!("a number {min}-{max}"),
    };
    Err(format!("`{text}` is not {accepted}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        crate::time::rfc3339::parse(text).expect("timestamp")
    }

    fn next(expr: &str, after: &str) -> String {
        let cron = Cron::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let at = cron.next_after(ms(after)).expect("fires");
        crate::time::rfc3339::format(at)
    }

    fn field_error(expr: &str) -> (Field, String) {
        match Cron::parse(expr) {
            Err(CronError::Field { field, reason }) => (field, reason),
            other => panic!("{expr}: {other:?}"),
        }
    }

    #[test]
    fn cron_next_is_the_first_whole_minute_strictly_after() {
        assert_eq!(
            next("* * * * *", "2026-03-10T12:00:00Z"),
            "2026-03-10T12:01:00Z"
        );
        assert_eq!(
            next("* * * * *", "2026-03-10T12:00:59.999Z"),
            "2026-03-10T12:01:00Z"
        );
        assert_eq!(
            next("*/5 * * * *", "2026-03-10T12:03:10Z"),
            "2026-03-10T12:05:00Z"
        );
        assert_eq!(
            next("*/5 * * * *", "2026-03-10T12:05:00Z"),
            "2026-03-10T12:10:00Z"
        );
        assert_eq!(
            next("30 9 * * *", "2026-03-10T09:30:00Z"),
            "2026-03-11T09:30:00Z"
        );
        assert_eq!(
            next("30 9 * * *", "2026-03-10T09:29:00Z"),
            "2026-03-10T09:30:00Z"
        );
        // Lists, ranges and stepped ranges.
        assert_eq!(
            next("15,45 8-10/2 * * *", "2026-03-10T08:46:00Z"),
            "2026-03-10T10:15:00Z"
        );
        assert_eq!(
            next("0 22-23 * * *", "2026-03-10T23:00:00Z"),
            "2026-03-11T22:00:00Z"
        );
    }

    #[test]
    fn cron_crosses_month_and_year_ends() {
        assert_eq!(
            next("0 0 1 * *", "2026-01-31T23:59:00Z"),
            "2026-02-01T00:00:00Z"
        );
        assert_eq!(
            next("59 23 31 12 *", "2026-06-01T00:00:00Z"),
            "2026-12-31T23:59:00Z"
        );
        assert_eq!(
            next("* * * * *", "2026-12-31T23:59:30Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 1 1 *", "2026-01-01T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        // The 31st skips the months without one.
        assert_eq!(
            next("0 12 31 * *", "2026-03-31T12:00:00Z"),
            "2026-05-31T12:00:00Z"
        );
        assert_eq!(
            next("0 0 30 * *", "2026-01-30T00:00:00Z"),
            "2026-03-30T00:00:00Z"
        );
    }

    #[test]
    fn cron_february_29_waits_for_a_leap_year() {
        assert_eq!(
            next("0 0 29 2 *", "2026-01-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2028-02-29T00:00:00Z"),
            "2032-02-29T00:00:00Z"
        );
        // 2100 is no leap year: eight years from 2096.
        assert_eq!(
            next("0 0 29 2 *", "2096-03-01T00:00:00Z"),
            "2104-02-29T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * 2 *", "2028-02-28T12:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
    }

    #[test]
    fn cron_day_of_month_or_day_of_week() {
        // 2026-03-10 is a Tuesday.
        // Both restricted: the 15th or any Friday, whichever comes first.
        assert_eq!(
            next("0 9 15 * FRI", "2026-03-10T00:00:00Z"),
            "2026-03-13T09:00:00Z"
        );
        assert_eq!(
            next("0 9 15 * FRI", "2026-03-13T09:00:00Z"),
            "2026-03-15T09:00:00Z"
        );
        assert_eq!(
            next("0 9 15 * fri", "2026-03-15T09:00:00Z"),
            "2026-03-20T09:00:00Z"
        );
        // Only the weekday restricted: Mondays only.
        assert_eq!(
            next("0 9 * * 1", "2026-03-10T00:00:00Z"),
            "2026-03-16T09:00:00Z"
        );
        // Only the day restricted: the 1st whatever the weekday.
        assert_eq!(
            next("0 9 1 * *", "2026-03-10T00:00:00Z"),
            "2026-04-01T09:00:00Z"
        );
        // A `*`-led step is not a restriction for the rule: both must match
        // (odd days that are Saturdays).
        assert_eq!(
            next("0 0 */2 * SAT", "2026-03-10T00:00:00Z"),
            "2026-03-21T00:00:00Z"
        );
        // 0 and 7 are both Sunday; weekday ranges and names.
        assert_eq!(
            next("0 0 * * 7", "2026-03-10T00:00:00Z"),
            "2026-03-15T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * 0", "2026-03-10T00:00:00Z"),
            "2026-03-15T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * 5-7", "2026-03-13T00:00:00Z"),
            "2026-03-14T00:00:00Z"
        );
        assert_eq!(
            next("0 8 * * MON-FRI", "2026-03-13T08:00:00Z"),
            "2026-03-16T08:00:00Z"
        );
        assert_eq!(
            next("0 0 1 jan,Jul *", "2026-02-01T00:00:00Z"),
            "2026-07-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 1 OCT-DEC/2 *", "2026-10-01T00:00:00Z"),
            "2026-12-01T00:00:00Z"
        );
    }

    #[test]
    fn cron_invalid_expressions_name_the_bad_field() {
        for (expr, field, words) in [
            ("60 * * * *", Field::Minute, "out of range 0-59"),
            ("* 24 * * *", Field::Hour, "out of range 0-23"),
            ("* * 0 * *", Field::DayOfMonth, "out of range 1-31"),
            ("* * 32 * *", Field::DayOfMonth, "out of range 1-31"),
            ("* * * 13 *", Field::Month, "out of range 1-12"),
            ("* * * FOO *", Field::Month, "JAN..DEC"),
            ("* * * * 8", Field::DayOfWeek, "out of range 0-7"),
            ("* * * * MONDAY", Field::DayOfWeek, "SUN..SAT"),
            ("* * * * JAN", Field::DayOfWeek, "SUN..SAT"),
            ("*/0 * * * *", Field::Minute, "step `0`"),
            ("*/x * * * *", Field::Minute, "step `x`"),
            ("5/15 * * * *", Field::Minute, "after `*` or a range"),
            ("1,,2 * * * *", Field::Minute, "empty list item"),
            ("* 10-2 * * *", Field::Hour, "backwards"),
            ("* * * * -1", Field::DayOfWeek, "``"),
            ("a * * * *", Field::Minute, "not a number 0-59"),
            ("* * 31 2 *", Field::DayOfMonth, "never fires"),
            ("0 0 30,31 2 *", Field::DayOfMonth, "never fires"),
            ("0 0 31 4,6,9,11 *", Field::DayOfMonth, "never fires"),
        ] {
            let (got, reason) = field_error(expr);
            assert_eq!(got, field, "{expr}: {reason}");
            assert!(reason.contains(words), "{expr}: {reason}");
            let shown = Cron::parse(expr).expect_err(expr).to_string();
            assert!(shown.starts_with(field.name()), "{shown}");
        }
        // The OR rule rescues a day that no month has: any Monday of February.
        assert!(Cron::parse("0 0 31 2 MON").is_ok());
        assert_eq!(Cron::parse(""), Err(CronError::Empty));
        assert_eq!(Cron::parse("   "), Err(CronError::Empty));
        assert_eq!(Cron::parse("* * * *"), Err(CronError::FieldCount(4)));
        assert_eq!(Cron::parse("* * * * * *"), Err(CronError::FieldCount(6)));
        assert_eq!(Cron::parse(&"* ".repeat(150)), Err(CronError::TooLong));
        assert_eq!(
            Cron::parse("* * * * 8").err().and_then(|e| e.field()),
            Some(Field::DayOfWeek)
        );
    }

    #[test]
    fn cron_ends_with_the_calendar() {
        let cron = Cron::parse("0 0 1 1 *").expect("parse");
        assert_eq!(cron.next_after(ms("9999-01-01T00:00:00Z")), None);
        let every_minute = Cron::parse("* * * * *").expect("parse");
        assert_eq!(every_minute.next_after(i64::MAX), None);
        // Before the epoch works too.
        assert_eq!(
            every_minute.next_after(-1),
            Some(0),
            "the minute after 1969-12-31T23:59:59.999Z"
        );
    }
}

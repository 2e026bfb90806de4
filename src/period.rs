//! `--once-per`'s period and its slots (pure: a time in, a slot out).
//!
//! A period is a fixed length (`--once-per 1h`: the slot is the Redis server's time
//! rounded down to a multiple of it from the Unix epoch, computed by the acquire
//! script itself) or a calendar unit in a time zone (`--once-per day|week|month --tz
//! ZONE`, UTC by default): a slot starts at local midnight, on Monday (ISO weeks) or
//! on the 1st, so across a DST change a day is 23 or 25 hours and a slot never starts
//! twice or not at all. A calendar slot's bounds are computed here, from the server's
//! time as the client last learnt it, and handed to the script, which checks that the
//! server's `TIME` falls in them (else it says its time and the client computes again:
//! `scripts::completion`). Zones come from jiff: the system's zoneinfo, the bundled
//! database where a host has none.

use std::time::Duration;

use jiff::ToSpan;
use jiff::tz::TimeZone;

/// The calendar units a slot can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Day,
    Week,
    Month,
}

impl Unit {
    /// The word `--once-per` takes.
    pub fn word(self) -> &'static str {
        match self {
            Unit::Day => "day",
            Unit::Week => "week",
            Unit::Month => "month",
        }
    }

    fn of(word: &str) -> Option<Unit> {
        [Unit::Day, Unit::Week, Unit::Month]
            .into_iter()
            .find(|u| u.word() == word)
    }

    /// The shortest and longest a slot of the unit can be (an hour off either way for
    /// DST; a zone whose change is 30 minutes stays inside).
    fn bounds(self) -> (Duration, Duration) {
        const H: u64 = 3600;
        let (short, long) = match self {
            Unit::Day => (23 * H, 25 * H),
            Unit::Week => (7 * 24 * H - H, 7 * 24 * H + H),
            Unit::Month => (28 * 24 * H - H, 31 * 24 * H + H),
        };
        (Duration::from_secs(short), Duration::from_secs(long))
    }
}

/// The spellings the duration parser (humantime) takes for weeks, months and years:
/// lengths from the Unix epoch (7 days from a Thursday, 30.44 days, 365.25 days), never
/// the calendar's, so `--once-per` refuses them (see [`calendar_unit_in`]).
const CALENDAR_SPELLINGS: [&str; 13] = [
    "weeks", "week", "wk", "wks", "w", "months", "month", "M", "years", "year", "yr", "yrs", "y",
];

/// The first unit of a fixed period `raw` (`1w`, `2weeks`, `1M`, `1d 1w`) that reads as
/// a calendar unit but counts from the Unix epoch: `--once-per 1w` would be 7 days from
/// a Thursday 00:00 UTC, `1month` 30.44 days from an odd instant, and `1M` (a month)
/// sits beside `1m` (a minute). Returns the unit as people say it (`weeks`, `months`,
/// `years`); `None` when every unit is a fixed one.
pub fn calendar_unit_in(raw: &str) -> Option<&'static str> {
    let at = raw
        .split(|c: char| !c.is_alphabetic())
        .find_map(|unit| CALENDAR_SPELLINGS.iter().position(|s| *s == unit))?;
    Some(match at {
        0..5 => "weeks",
        5..8 => "months",
        _ => "years",
    })
}

/// A zone by its IANA name.
#[derive(Debug, Clone)]
pub struct Zone {
    pub name: String,
    tz: TimeZone,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.name == other.name
    }
}

impl Eq for Zone {}

impl Zone {
    /// The zone of an IANA name (`Europe/Berlin`, `UTC`; any case), named as the zone
    /// database spells it (`asia/bangkok` is `Asia/Bangkok`); `None` when the system's
    /// zoneinfo and the bundled database both do not know it, or when it is no zone's
    /// name but a file of the zoneinfo tree ([`Zone::not_a_name`]).
    pub fn named(name: &str) -> Option<Zone> {
        if Zone::not_a_name(name).is_some() || !Zone::looks_like_a_name(name) {
            return None;
        }
        let tz = TimeZone::get(name).ok()?;
        Some(Zone {
            name: tz.iana_name().unwrap_or(name).to_string(),
            tz,
        })
    }

    /// Why `name` is no IANA zone name though the zoneinfo tree may hold a file of it:
    /// `localtime` and `posixrules` are each host's own zone (hosts in other zones
    /// would each read their own calendar), `posix/…` and `right/…` other trees of the
    /// same zones (`right/` counts leap seconds), and a path is a file, not a name.
    /// `None`: a name of the form the database uses (`Area/Location`, `UTC`), which the
    /// database must still know.
    pub fn not_a_name(name: &str) -> Option<&'static str> {
        let parts: Vec<&str> = name.split('/').collect();
        let first = parts[0].to_ascii_lowercase();
        if ["localtime", "posixrules"].contains(&first.as_str()) && parts.len() == 1 {
            Some("is each host's own zone, not a zone's name")
        } else if ["posix", "right"].contains(&first.as_str()) && parts.len() > 1 {
            Some("is another tree of the zoneinfo files, not a zone's name")
        } else if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            Some("is a path, not a zone's name")
        } else {
            None
        }
    }

    /// Whether `name` is made of what the database's names are made of (`Area/Location`
    /// parts of letters, digits, `_`, `+` and `-`).
    fn looks_like_a_name(name: &str) -> bool {
        name.split('/').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_+-".contains(c))
        })
    }

    /// UTC (the default zone).
    pub fn utc() -> Zone {
        Zone {
            name: "UTC".to_string(),
            tz: TimeZone::UTC,
        }
    }

    /// A time (Unix ms) as people read it in the zone: `2026-03-29T00:00:00+01:00`.
    pub fn show(&self, ms: u64) -> String {
        match jiff::Timestamp::from_millisecond(ms as i64) {
            Ok(ts) => ts
                .to_zoned(self.tz.clone())
                .strftime("%Y-%m-%dT%H:%M:%S%:z")
                .to_string(),
            Err(_) => ms.to_string(),
        }
    }
}

/// `--once-per`'s period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Period {
    /// A fixed length, from the Unix epoch.
    Every(Duration),
    /// A calendar unit in a zone.
    Calendar(Unit, Zone),
}

/// One slot: `[start_ms, end_ms)`, Unix ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub start_ms: u64,
    pub end_ms: u64,
}

impl Slot {
    pub fn len_ms(self) -> u64 {
        self.end_ms.saturating_sub(self.start_ms)
    }
}

impl Period {
    /// The calendar unit `word` names (`day`, `week`, `month`), in `zone`.
    pub fn calendar(word: &str, zone: Zone) -> Option<Period> {
        Unit::of(word).map(|unit| Period::Calendar(unit, zone))
    }

    /// Whether `word` is a calendar unit (what `--tz` needs).
    pub fn is_calendar_word(word: &str) -> bool {
        Unit::of(word).is_some()
    }

    /// The slot `now_ms` falls in.
    pub fn slot_at(&self, now_ms: u64) -> Slot {
        match self {
            Period::Every(d) => {
                let len = (d.as_millis() as u64).max(1);
                let start = now_ms - now_ms % len;
                Slot {
                    start_ms: start,
                    end_ms: start + len,
                }
            }
            Period::Calendar(unit, zone) => calendar_slot(*unit, &zone.tz, now_ms),
        }
    }

    /// The shortest a slot can be (what `--splay` must stay below).
    pub fn shortest(&self) -> Duration {
        match self {
            Period::Every(d) => *d,
            Period::Calendar(unit, _) => unit.bounds().0,
        }
    }

    /// The longest a slot can be (what the history must outlive).
    pub fn longest(&self) -> Duration {
        match self {
            Period::Every(d) => *d,
            Period::Calendar(unit, _) => unit.bounds().1,
        }
    }

    /// The period as the acquire scripts take it (`scripts::completion`'s `slot_of`):
    /// a fixed length in ms, or the calendar slot of `now_ms` as `start+length`.
    pub fn script_arg(&self, now_ms: u64) -> String {
        match self {
            Period::Every(d) => (d.as_millis() as u64).max(1).to_string(),
            Period::Calendar(..) => {
                let slot = self.slot_at(now_ms);
                format!("{}+{}", slot.start_ms, slot.len_ms())
            }
        }
    }

    /// The zone of a calendar period (`None`: a fixed period, UTC from the epoch).
    pub fn zone(&self) -> Option<&Zone> {
        match self {
            Period::Every(_) => None,
            Period::Calendar(_, zone) => Some(zone),
        }
    }

    /// As a person says it: `1h`, `day in Europe/Berlin`.
    pub fn words(&self) -> String {
        match self {
            Period::Every(d) => crate::report::human(*d),
            Period::Calendar(unit, zone) => format!("{} in {}", unit.word(), zone.name),
        }
    }

    /// A slot's start as people read it: in the slot's zone for a calendar period,
    /// UTC for a fixed one.
    pub fn show(&self, ms: u64) -> String {
        match self {
            Period::Every(_) => crate::report::rfc3339(ms),
            Period::Calendar(_, zone) => zone.show(ms),
        }
    }

    /// For the records (history, events): the fixed length in ms (`None` for a
    /// calendar period, whose slots differ in length).
    pub fn fixed_ms(&self) -> Option<u64> {
        match self {
            Period::Every(d) => Some(d.as_millis() as u64),
            Period::Calendar(..) => None,
        }
    }

    /// For the records: the calendar unit and zone (`None` for a fixed period).
    pub fn calendar_words(&self) -> Option<(&'static str, &str)> {
        match self {
            Period::Every(_) => None,
            Period::Calendar(unit, zone) => Some((unit.word(), zone.name.as_str())),
        }
    }
}

/// The calendar slot of `now_ms` in `tz`: from the first instant of its first local
/// day (midnight, or the end of a DST gap that swallows midnight) to the first instant
/// of the next slot's.
fn calendar_slot(unit: Unit, tz: &TimeZone, now_ms: u64) -> Slot {
    let start_of = |date: jiff::civil::Date| -> Option<u64> {
        let zoned = date.to_zoned(tz.clone()).ok()?.start_of_day().ok()?;
        u64::try_from(zoned.timestamp().as_millisecond()).ok()
    };
    let slot = || -> Option<Slot> {
        let now = jiff::Timestamp::from_millisecond(now_ms as i64).ok()?;
        let today = now.to_zoned(tz.clone()).date();
        let (first, next) = match unit {
            Unit::Day => (today, today.tomorrow().ok()?),
            Unit::Week => {
                let back = i64::from(today.weekday().to_monday_zero_offset());
                let monday = today.checked_sub(back.days()).ok()?;
                (monday, monday.checked_add(7.days()).ok()?)
            }
            Unit::Month => {
                let first = today.first_of_month();
                (first, first.checked_add(1.month()).ok()?)
            }
        };
        Some(Slot {
            start_ms: start_of(first)?,
            end_ms: start_of(next)?,
        })
    };
    // Outside jiff's range (years beyond 9999): the UTC day, never a panic.
    slot().unwrap_or_else(|| Period::Every(Duration::from_secs(86_400)).slot_at(now_ms))
}

#[cfg(test)]
mod tests;

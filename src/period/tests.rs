use super::*;

const S: u64 = 1000;
const H: u64 = 3600 * S;

fn cal(word: &str, zone: &str) -> Period {
    Period::calendar(word, Zone::named(zone).expect(zone)).expect(word)
}

/// The slot of a moment an hour after `start_s` (Unix seconds of the slot's local
/// start, from `TZ=zone date -d 'DATE 00:00' +%s`): its start and its length in hours.
fn slot_from(period: &Period, start_s: u64) -> (u64, f64) {
    let slot = period.slot_at(start_s * S + H);
    (slot.start_ms / S, slot.len_ms() as f64 / H as f64)
}

#[test]
fn a_day_starts_at_local_midnight_and_lasts_23_or_25_hours_across_dst() {
    let berlin = cal("day", "Europe/Berlin");
    // 2026-03-29: the clocks go forward at 02:00 (23 h); 03-30 is 24 h again.
    assert_eq!(slot_from(&berlin, 1_774_738_800), (1_774_738_800, 23.0));
    assert_eq!(slot_from(&berlin, 1_774_821_600), (1_774_821_600, 24.0));
    // 2026-10-25: back at 03:00 (25 h).
    assert_eq!(slot_from(&berlin, 1_792_879_200), (1_792_879_200, 25.0));
    assert_eq!(slot_from(&berlin, 1_792_969_200), (1_792_969_200, 24.0));
}

#[test]
fn a_day_in_a_zone_of_half_and_three_quarter_hours() {
    // Asia/Kolkata +05:30 and Asia/Kathmandu +05:45, no DST: 2026-11-28.
    assert_eq!(
        slot_from(&cal("day", "Asia/Kolkata"), 1_795_804_200),
        (1_795_804_200, 24.0)
    );
    assert_eq!(
        slot_from(&cal("day", "Asia/Kathmandu"), 1_795_803_300),
        (1_795_803_300, 24.0)
    );
    // Australia/Adelaide +09:30 goes to +10:30 on 2026-10-04 (23 h); America/St_Johns
    // -02:30 back to -03:30 on 2026-11-01 (25 h); Lord Howe's DST is 30 minutes.
    assert_eq!(
        slot_from(&cal("day", "Australia/Adelaide"), 1_791_037_800),
        (1_791_037_800, 23.0)
    );
    assert_eq!(
        slot_from(&cal("day", "America/St_Johns"), 1_793_500_200),
        (1_793_500_200, 25.0)
    );
    assert_eq!(
        slot_from(&cal("day", "Australia/Lord_Howe"), 1_791_034_200),
        (1_791_034_200, 23.5)
    );
}

#[test]
fn a_day_whose_midnight_does_not_exist_starts_when_the_gap_ends() {
    // America/Santiago jumps from 2026-09-05 24:00 -04 to 09-06 01:00 -03: 09-05 is
    // a full 24 h, 09-06 starts at 01:00 (23 h).
    let santiago = cal("day", "America/Santiago");
    assert_eq!(slot_from(&santiago, 1_788_580_800), (1_788_580_800, 24.0));
    assert_eq!(slot_from(&santiago, 1_788_667_200), (1_788_667_200, 23.0));
}

#[test]
fn a_week_starts_on_monday_and_a_month_on_the_first() {
    // Saturday 2026-11-28 14:00 UTC: the ISO week from Monday 11-23, the month 11-01.
    let now = 1_795_874_400 * S;
    let week = cal("week", "Europe/Berlin").slot_at(now);
    assert_eq!(
        (week.start_ms / S, week.end_ms / S),
        (1_795_388_400, 1_795_993_200)
    );
    let month = cal("month", "Asia/Kathmandu").slot_at(now);
    assert_eq!(
        (month.start_ms / S, month.end_ms / S),
        (1_793_470_500, 1_796_062_500)
    );
    // October 2026 in Adelaide holds the change to DST: 31 days less an hour.
    let october = cal("month", "Australia/Adelaide").slot_at(1_790_778_600 * S + H);
    assert_eq!(
        (october.start_ms / S, october.end_ms / S),
        (1_790_778_600, 1_793_453_400)
    );
    // The week of New York's change (2026-03-08): Monday 03-02 to 03-09, 167 h.
    assert_eq!(
        slot_from(&cal("week", "America/New_York"), 1_772_427_600),
        (1_772_427_600, 167.0)
    );
    assert_eq!(cal("week", "UTC").slot_at(now).start_ms % (24 * H), 0);
}

#[test]
fn slots_tile_time_no_slot_starts_twice_or_not_at_all() {
    let zones = [
        "UTC",
        "Europe/Berlin",
        "America/Santiago",
        "Australia/Lord_Howe",
        "Asia/Kathmandu",
        "America/St_Johns",
    ];
    for zone in zones {
        for word in ["day", "week", "month"] {
            let period = cal(word, zone);
            let (short, long) = (
                period.shortest().as_millis() as u64,
                period.longest().as_millis() as u64,
            );
            // 2026 from its first slot: each slot ends where the next starts.
            let mut slot = period.slot_at(1_767_225_600 * S);
            for _ in 0..400 {
                let next = period.slot_at(slot.end_ms);
                assert_eq!(next.start_ms, slot.end_ms, "{word} in {zone}");
                assert_eq!(period.slot_at(slot.end_ms - 1), slot, "{word} in {zone}");
                assert!(
                    short <= slot.len_ms() && slot.len_ms() <= long,
                    "{word} in {zone}: {slot:?}"
                );
                slot = next;
                if slot.start_ms > 1_798_761_600 * S {
                    break;
                }
            }
        }
    }
}

#[test]
fn the_script_takes_a_fixed_length_or_a_calendar_slots_bounds() {
    assert_eq!(
        Period::Every(Duration::from_secs(60)).script_arg(61_000),
        "60000"
    );
    let day = cal("day", "Asia/Kolkata");
    let arg = day.script_arg(1_795_804_200 * S + 5);
    assert_eq!(arg, format!("{}+{}", 1_795_804_200 * S, 24 * H));
    assert_eq!(day.words(), "day in Asia/Kolkata");
    assert_eq!(day.show(1_795_804_200 * S), "2026-11-28T00:00:00+05:30");
}

#[test]
fn unknown_zones_are_none_and_far_times_never_panic() {
    for name in [
        "Europe/Nowhere",
        "",
        "../../etc/passwd",
        "+05:30",
        "Europe/Berlin\n",
    ] {
        assert!(Zone::named(name).is_none(), "{name:?}");
    }
    let far = cal("month", "Europe/Berlin").slot_at(u64::MAX / 2);
    assert!(far.start_ms <= u64::MAX / 2 && u64::MAX / 2 < far.end_ms);
}

#[test]
fn weeks_months_and_years_are_found_in_any_spelling() {
    for (raw, unit) in [
        ("1w", Some("weeks")),
        ("2weeks", Some("weeks")),
        ("1wk", Some("weeks")),
        ("1d 1w", Some("weeks")),
        ("1M", Some("months")),
        ("1month", Some("months")),
        ("1y", Some("years")),
        ("3yrs", Some("years")),
        ("1m", None),
        ("30days", None),
        ("1h30m", None),
        ("250ms", None),
    ] {
        assert_eq!(calendar_unit_in(raw), unit, "{raw}");
    }
}

#[test]
fn zone_names_are_the_databases_and_nothing_else() {
    assert_eq!(
        Zone::named("asia/bangkok").map(|z| z.name),
        Some("Asia/Bangkok".into())
    );
    assert_eq!(Zone::named("UTC").map(|z| z.name), Some("UTC".into()));
    assert!(Zone::named("Etc/GMT+7").is_some());
    for name in [
        "localtime",
        "posixrules",
        "posix/Asia/Bangkok",
        "right/Asia/Bangkok",
        "/usr/share/zoneinfo/UTC",
        "Asia/../Asia/Bangkok",
        "./UTC",
        "+05:30",
        "zone.tab",
    ] {
        assert!(Zone::named(name).is_none(), "{name}");
    }
    assert_eq!(Zone::not_a_name("Europe/Berlin"), None);
}

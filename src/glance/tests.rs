use super::*;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

const PLAIN: Glance = Glance {
    period: None,
    may_wait: false,
    reruns: false,
    pin_ms: 0,
};

fn plain(mode: Value, lock: Value) -> Option<Acquired> {
    let meta = Value::Array(vec![bulk("token"), bulk("h1"), bulk("host"), bulk("web1")]);
    PLAIN.answer(vec![mode, lock, Value::Int(1500), meta], "mine")
}

#[test]
fn a_lock_held_by_another_is_busy_with_its_holder() {
    let Some(Acquired::Busy { held, place, wake }) = plain(Value::Nil, bulk("h1")) else {
        panic!("not busy")
    };
    assert_eq!((held.token.as_slice(), held.pttl_ms), (&b"h1"[..], 1500));
    assert_eq!(held.meta.len(), 2);
    assert_eq!((place, wake.len()), (None, 0));
    // A shared name's writer that does not wait is told busy too (the script's answer).
    assert!(matches!(
        plain(bulk("shared"), bulk("shared")),
        Some(Acquired::Busy { .. })
    ));
}

#[test]
fn another_kind_is_refused_whatever_the_lock() {
    for lock in [Value::Nil, bulk("h1")] {
        assert_eq!(
            plain(bulk("limit 3"), lock),
            Some(Acquired::OtherKind("limit 3".into()))
        );
    }
}

#[test]
fn the_script_decides_a_free_lock_our_own_or_a_key_of_another_type() {
    // A key of another type: the command's error, in its place in the pipeline.
    let wrong = || redis::parse_redis_value(b"-WRONGTYPE Operation against a key\r\n").unwrap();
    for (mode, lock) in [
        (Value::Nil, Value::Nil),
        (Value::Nil, bulk("mine")),
        (wrong(), bulk("h1")),
        (Value::Nil, wrong()),
    ] {
        assert_eq!(plain(mode, lock), None);
    }
    assert_eq!(PLAIN.answer(vec![Value::Nil], "mine"), None);
}

const HOUR: u64 = 3_600_000;
static HOURLY: Period = Period::Every(std::time::Duration::from_secs(3600));

fn once(may_wait: bool, records: &[String], lock: Value) -> Option<Acquired> {
    once_as(
        Glance {
            period: Some(&HOURLY),
            may_wait,
            reruns: false,
            pin_ms: 0,
        },
        records,
        lock,
    )
}

fn once_as(glance: Glance, records: &[String], lock: Value) -> Option<Acquired> {
    // 10:30:00.250 in the slot starting at 10:00.
    let time = Value::Array(vec![bulk(&(10 * 3600 + 1800).to_string()), bulk("250000")]);
    let records = Value::Array(records.iter().map(|r| bulk(r)).collect());
    glance.answer(vec![time, records, lock], "mine")
}

fn record(token: &str, start_min: u64, rest: &str) -> String {
    format!(
        r#"{{"token":"{token}","start_ms":{}{rest}}}"#,
        10 * HOUR + start_min * 60_000
    )
}

#[test]
fn a_run_of_the_slot_that_exited_0_closes_it() {
    let ran = record(
        "t1",
        1,
        r#","once_per_ms":3600000,"status":0,"lost":false,"end_ms":36061000"#,
    );
    let failed = record(
        "t2",
        5,
        r#","once_per_ms":3600000,"status":1,"end_ms":36301000"#,
    );
    let Some(Acquired::Skipped(skip)) = once(false, &[failed, ran.clone()], Value::Nil) else {
        panic!("not a skip")
    };
    assert_eq!(
        (skip.slot_ms, skip.why, skip.record, skip.now_ms),
        (10 * HOUR, Closed::Ran, ran.into_bytes(), 0)
    );
}

#[test]
fn its_run_holding_the_lock_is_in_progress_for_a_try_that_may_not_wait() {
    let mark = record("t1", 0, r#","running":true,"started":true"#);
    let Some(Acquired::Skipped(skip)) = once(false, std::slice::from_ref(&mark), bulk("t1")) else {
        panic!("not a skip")
    };
    assert_eq!(
        (skip.why, skip.now_ms),
        (Closed::InProgress, 10 * HOUR + 1_800_250)
    );
    assert_eq!(once(true, &[mark], bulk("t1")), None);
}

#[test]
fn what_the_newest_records_do_not_settle_is_the_scripts() {
    let vanished = record("t1", 0, r#","running":true,"started":true"#);
    let granted = record("t1", 0, r#","running":true,"started":false"#);
    let earlier = format!(
        r#"{{"token":"t0","start_ms":{},"status":0,"end_ms":{}}}"#,
        9 * HOUR,
        9 * HOUR + 1000
    );
    let later_ran = record("t3", 2, r#","once_per_ms":3600000,"status":0"#);
    for records in [
        vec![vanished],
        // Not a start: the scan goes on, and ends at a run that ended before the slot.
        vec![granted, earlier.clone(), later_ran.clone()],
        vec![earlier],
        vec![record("mine", 1, r#","status":0"#)],
        vec![],
        vec!["not json".into()],
    ] {
        assert_eq!(once(false, &records, Value::Nil), None, "{records:?}");
    }
    // A record that is not JSON is passed over, as the script does.
    assert!(matches!(
        once(false, &["not json".into(), later_ran], Value::Nil),
        Some(Acquired::Skipped(_))
    ));
}

#[test]
fn a_slot_is_the_period_multiple_below_the_time() {
    assert_eq!(HOURLY.slot_at(10 * HOUR + 5).start_ms, 10 * HOUR);
    assert_eq!(
        server_ms(Value::Array(vec![bulk("2"), bulk("999999")])),
        Some(2999)
    );
    assert_eq!(server_ms(Value::Nil), None);
}

#[test]
fn a_vanished_run_told_already_closes_its_slot_but_for_a_rerun() {
    let told = record("t1", 0, r#","running":true,"started":true,"told":true"#);
    let Some(Acquired::Skipped(skip)) = once(false, std::slice::from_ref(&told), Value::Nil) else {
        panic!("not a skip")
    };
    assert_eq!((skip.why, skip.told, skip.now_ms), (Closed::Ran, false, 0));
    let reruns = Glance {
        period: Some(&HOURLY),
        may_wait: false,
        reruns: true,
        pin_ms: 0,
    };
    assert_eq!(once_as(reruns, &[told], Value::Nil), None);
}

#[test]
fn a_try_for_a_slot_that_is_over_is_over_and_one_for_this_slot_reads_on() {
    let ran = record("t1", 1, r#","once_per":"day","tz":"UTC","status":0"#);
    let pinned = |pin_ms| Glance {
        period: Some(&HOURLY),
        may_wait: false,
        reruns: false,
        pin_ms,
    };
    let Some(Acquired::Skipped(skip)) = once_as(pinned(9 * HOUR), &[], Value::Nil) else {
        panic!("not a skip")
    };
    assert_eq!((skip.why, skip.slot_ms), (Closed::SlotOver, 9 * HOUR));
    let Some(Acquired::Skipped(skip)) = once_as(pinned(10 * HOUR), &[ran], Value::Nil) else {
        panic!("not a skip")
    };
    assert_eq!(skip.why, Closed::Ran);
}

/// Issue 58 items 5 and 7: a run of the name without `--once-per` (no period in its
/// record) neither closes the slot nor settles it; a run told as vanished that came
/// back later (its record kept `"told":true`) keeps its slot closed but for a rerun.
#[test]
fn only_the_jobs_runs_close_a_slot_and_a_told_run_keeps_it_closed() {
    let ad_hoc = record(
        "t1",
        1,
        r#","once_per_ms":null,"status":0,"end_ms":36061000"#,
    );
    assert_eq!(once(false, std::slice::from_ref(&ad_hoc), Value::Nil), None);
    let late = record(
        "t2",
        2,
        r#","once_per_ms":3600000,"status":79,"lost":true,"told":true"#,
    );
    let Some(Acquired::Skipped(skip)) = once(false, std::slice::from_ref(&late), Value::Nil) else {
        panic!("not a skip")
    };
    assert_eq!(skip.why, Closed::Ran);
    let reruns = Glance {
        period: Some(&HOURLY),
        may_wait: false,
        reruns: true,
        pin_ms: 0,
    };
    assert_eq!(once_as(reruns, &[late], Value::Nil), None);
}

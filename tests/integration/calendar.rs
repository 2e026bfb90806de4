//! Calendar slots (issue 51 item 3): `--once-per day|week|month --tz ZONE` runs a job
//! once per local day (from midnight), ISO week (from Monday) or month (from the 1st)
//! of the zone, on the Redis server's clock; across DST a day is 23 or 25 hours and a
//! slot never starts twice or not at all. The server's clock is set to the moment
//! under test (`Redis::start_at_time`: a DST change night), far from this host's, so
//! every try also takes the way of a host whose clock is off (the script says its time,
//! the try computes the slot again). Hosts are UTS namespaces where `unshare` may run.

use std::path::Path;
use std::time::Duration;

use crate::harness::*;

/// 2026-03-29T21:59:57Z: three seconds before midnight in Berlin (CEST, +02:00) at the
/// end of the day the clocks went forward.
const BERLIN_SPRING_NIGHT: u64 = 1_774_821_597_000;
/// That day's start (00:00 CET, +01:00) and the next day's (00:00 CEST): 23 hours.
const MARCH_29: u64 = 1_774_738_800_000;
const MARCH_30: u64 = 1_774_821_600_000;
/// 2026-10-25T22:59:57Z, three seconds before midnight at the end of the day the
/// clocks went back; that day from 00:00 CEST and the next from 00:00 CET: 25 hours.
const BERLIN_AUTUMN_NIGHT: u64 = 1_792_969_197_000;
const OCTOBER_25: u64 = 1_792_879_200_000;
const OCTOBER_26: u64 = 1_792_969_200_000;
const HOUR: u64 = 3_600_000;

/// The cron guide's nightly line (`cron-nightly-tz`): `redlock-run`'s arguments as
/// written, the job replaced by `job`.
fn nightly_line(job: &Path) -> Vec<String> {
    let text = example("cron-nightly-tz");
    let line = text
        .lines()
        .find(|l| l.contains(" redlock-run "))
        .expect("the nightly example is a cron line");
    let mut args: Vec<String> = line.split_whitespace().skip(6).map(String::from).collect();
    *args.last_mut().unwrap() = job.display().to_string();
    args
}

/// Fires `args` on three hosts at once: each host's exit status and output.
fn fire(hosts: &[&str], args: &[String], url: &str) -> Vec<(i32, String)> {
    let namespaces = hosts_can_be_namespaces();
    let children: Vec<_> = hosts
        .iter()
        .map(|host| {
            on_host(host, args, namespaces)
                .env("REDLOCK_REDIS_URL", url)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            (out.status.code().unwrap_or(-1), text)
        })
        .collect()
}

/// The slot starts the job wrote, one line per run (`RUN host slot`).
fn runs_in(log: &Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.get(1)?.to_string(), w.get(2)?.parse().ok()?))
        })
        .collect()
}

/// Exactly one host ran, the others were skipped without a byte of output.
fn one_ran_the_others_silent(fired: &[(i32, String)], what: &str) {
    let ran = fired.iter().filter(|(c, _)| *c == 0).count();
    let silent = fired
        .iter()
        .filter(|(c, t)| *c == 75 && t.is_empty())
        .count();
    assert_eq!((ran, silent), (1, fired.len() - 1), "{what}: {fired:?}");
}

/// The guide's nightly line on three hosts over Berlin's spring-forward midnight: one
/// run for March 29 (from 00:00 CET), one for March 30 (from 00:00 CEST), 23 hours
/// apart; every other try is a silent 75; `status` and the timeline say the slot in
/// Berlin's time.
#[test]
fn the_nightly_example_runs_once_per_berlin_day_across_the_spring_change() {
    let redis = Redis::start_at_time(BERLIN_SPRING_NIGHT);
    let s = Scratch::new();
    let log = s.path("log");
    let job = s.script(
        "backup.sh",
        &format!(
            "echo \"RUN $(hostname) $REDLOCK_SLOT_START\" >> '{}'",
            log.display()
        ),
    );
    let args = nightly_line(&job);
    let hosts = ["db-1", "db-2", "db-3"];
    let fired = fire(&hosts, &args, &redis.url());
    one_ran_the_others_silent(&fired, "before midnight");
    // Past the server's midnight (it started 3 s before it).
    std::thread::sleep(Duration::from_millis(3500));
    let fired = fire(&hosts, &args, &redis.url());
    one_ran_the_others_silent(&fired, "after midnight");
    let again = fire(&hosts, &args, &redis.url());
    assert!(
        again.iter().all(|(c, t)| *c == 75 && t.is_empty()),
        "{again:?}"
    );
    let slots: Vec<u64> = runs_in(&log).into_iter().map(|r| r.1).collect();
    assert_eq!(slots, [MARCH_29, MARCH_30]);
    assert_eq!(MARCH_30 - MARCH_29, 23 * HOUR);
    let status = stdout(&output(redlock().args([
        "status",
        "nightly-backup",
        "--redis",
        &redis.url(),
    ])));
    assert!(
        status.contains("its slot: day from 2026-03-30T00:00:00+02:00 (Europe/Berlin)"),
        "{status}"
    );
    let timeline = stdout(&output(redlock().args([
        "history",
        "nightly-backup",
        "--timeline",
        "--since",
        "365d",
        "--redis",
        &redis.url(),
    ])));
    assert!(
        timeline.contains("newest run's slot: day from 2026-03-30T00:00:00+02:00 (Europe/Berlin)"),
        "{timeline}"
    );
}

/// A day's run and a try of the same day, then the next day: the slot start each run
/// saw (`REDLOCK_SLOT_START`), and the second try's status and output.
fn two_days(redis: &Redis, args: &[&str]) -> (u64, (i32, String), u64) {
    let s = Scratch::new();
    let seen = s.path("seen");
    let job = format!("echo $REDLOCK_SLOT_START > '{}'", seen.display());
    let run = |script: &str| {
        let mut cmd = redlock_run();
        cmd.args(["--redis", &redis.url()])
            .args(args)
            .args(["--", "sh", "-c", script]);
        let out = output(&mut cmd);
        (code(&out), stderr(&out) + &stdout(&out))
    };
    assert_eq!(run(&job).0, 0);
    let first = read_trimmed(&seen).parse().unwrap();
    let second = run(&job);
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(run(&job).0, 0);
    (first, second, read_trimmed(&seen).parse().unwrap())
}

/// Berlin's autumn change: the day the clocks go back is 25 hours, from 00:00 CEST to
/// 00:00 CET; a second try in the day is a silent 75.
#[test]
fn the_day_the_clocks_go_back_lasts_25_hours() {
    let redis = Redis::start_at_time(BERLIN_AUTUMN_NIGHT);
    let args = [
        "--key",
        "autumn",
        "--once-per",
        "day",
        "--tz",
        "Europe/Berlin",
    ];
    let (first, second, next) = two_days(&redis, &args);
    assert_eq!((first, next), (OCTOBER_25, OCTOBER_26));
    assert_eq!(second, (75, String::new()));
    assert_eq!(next - first, 25 * HOUR);
}

/// At one moment of the server's clock (Saturday 2026-11-28 14:00 UTC), each period and
/// zone starts its slot where that zone's calendar says (`TZ=ZONE date -d '…' +%s`):
/// an ISO week on Monday, a month on the 1st, a day at local midnight in zones of
/// +05:30, +05:45, -03:30 and +10:30 (Adelaide in DST), and UTC by default.
#[test]
fn weeks_months_and_days_start_where_their_zone_says() {
    let redis = Redis::start_at_time(1_795_874_400_000);
    let cases: [(&str, &[&str], u64); 7] = [
        ("week", &["--tz", "Europe/Berlin"], 1_795_388_400_000),
        ("month", &["--tz", "Asia/Kathmandu"], 1_793_470_500_000),
        ("month", &["--tz", "Australia/Adelaide"], 1_793_453_400_000),
        ("day", &["--tz", "Asia/Kolkata"], 1_795_804_200_000),
        ("day", &["--tz", "Asia/Kathmandu"], 1_795_803_300_000),
        ("day", &["--tz", "America/St_Johns"], 1_795_836_600_000),
        ("day", &[], 1_795_824_000_000),
    ];
    let s = Scratch::new();
    let url = redis.url();
    for (i, (period, tz, start)) in cases.into_iter().enumerate() {
        let seen = s.path(&format!("seen{i}"));
        let name = format!("cal{i}");
        let mut args = vec![
            "--redis",
            url.as_str(),
            "--key",
            &name,
            "--once-per",
            period,
        ];
        args.extend(tz);
        let job = format!("echo $REDLOCK_SLOT_START > '{}'", seen.display());
        let first = output(redlock_run().args(&args).args(["--", "sh", "-c", &job]));
        assert_eq!(code(&first), 0, "{period} {tz:?}: {}", stderr(&first));
        assert_eq!(
            read_trimmed(&seen).parse::<u64>().unwrap(),
            start,
            "{period} {tz:?}"
        );
        let second = output(redlock_run().args(&args).args(["--", "sh", "-c", &job]));
        assert_eq!(
            (code(&second), stderr(&second)),
            (75, String::new()),
            "{period} {tz:?}"
        );
    }
}

/// `--splay` and `--if-vanished rerun` with a calendar slot: the winner's wrapper is
/// SIGKILLed mid-job; the next try (splayed into the slot) runs the day again as
/// attempt 2 of the same slot, its record saying which run it reruns, and a later try
/// is a silent 75.
#[test]
fn a_calendar_slot_with_splay_reruns_a_vanished_run_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let (log, started) = (s.path("log"), s.path("started"));
    let mut args = lock_args(&redis, "nightly");
    args.extend(
        [
            "--once-per",
            "day",
            "--tz",
            "Asia/Kathmandu",
            "--splay",
            "1s",
        ]
        .into_iter()
        .chain(["--if-vanished", "rerun", "--ttl", "1s"])
        .map(String::from),
    );
    let job = format!(
        "echo \"RUN $REDLOCK_ATTEMPT $REDLOCK_SLOT_START\" >> '{}'; touch '{}'; sleep ${{NAP:-0}}",
        log.display(),
        started.display()
    );
    let mut first = redlock_run()
        .args(&args)
        .args(["--", "sh", "-c", &job])
        .env("NAP", "30")
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || started.exists()));
    first.kill().unwrap();
    first.wait().unwrap();
    let rerun = output(redlock_run().args(&args).args(["--", "sh", "-c", &job]));
    assert_eq!(code(&rerun), 0, "{}", stderr(&rerun));
    let later = output(redlock_run().args(&args).args(["--", "sh", "-c", &job]));
    assert_eq!((code(&later), stderr(&later)), (75, String::new()));
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let slot = |l: &str| l.split(' ').nth(2).map(String::from);
    assert_eq!(slot(lines[0]), slot(lines[1]), "{text}");
    assert!(
        lines[0].starts_with("RUN 1 ") && lines[1].starts_with("RUN 2 "),
        "{text}"
    );
    let history = history_json(&redis, "nightly");
    let newest = &history["runs"][0];
    assert_eq!(newest["attempt"], 2, "{history}");
    assert_eq!(
        (&newest["once_per"], &newest["tz"]),
        (&"day".into(), &"Asia/Kathmandu".into())
    );
    assert!(
        newest["rerun_of"].as_str().is_some_and(|t| !t.is_empty()),
        "{history}"
    );
}

/// `--tz` without a calendar period, an unknown zone, a malformed one: one line naming
/// it, the usage status, and no key written.
#[test]
fn a_zone_without_a_calendar_period_or_unknown_is_refused_in_one_line() {
    let redis = Redis::start();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--once-per", "1h", "--tz", "Europe/Berlin"],
            "--tz Europe/Berlin needs a calendar period",
        ),
        (&["--tz", "UTC"], "--tz UTC needs a calendar period"),
        (
            &["--once-per", "day", "--tz", "Mars/Olympus"],
            "--tz Mars/Olympus: no such time zone",
        ),
        (
            &["--once-per", "week", "--tz", "+05:30"],
            "no such time zone",
        ),
        (
            &["--once-per", "month", "--tz", "Europe/Ber\u{1b}[2Jlin"],
            "Europe/Ber\\u{1b}[2Jlin",
        ),
    ];
    for (extra, says) in cases {
        let out = output(
            redlock_run()
                .args(["--redis", &redis.url(), "--key", "tz"])
                .args(extra)
                .args(["--", "true"]),
        );
        let err = stderr(&out);
        assert_eq!(code(&out), 64, "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!err.contains('\u{1b}'), "{extra:?}: {err}");
        assert!(redis.keys().is_empty(), "{extra:?}: a key was written");
    }
}

/// Issue 58 item 8 (newcomer-7 #4): a `--once-per` in weeks, months or years (any
/// spelling the duration parser takes) is a fixed period from the Unix epoch (`1w`: 7
/// days from a Thursday; `1month`: 30.44 days from an odd instant; `1M` beside `1m`), not
/// a calendar unit: refused with one line pointing to `--once-per week|month --tz`. A
/// unit nobody takes is refused with the one unit list; days and minutes still run.
#[test]
fn periods_in_weeks_months_or_years_are_refused() {
    let redis = Redis::start();
    let run = |period: &str| {
        output(
            redlock_run()
                .args([
                    "--redis",
                    &redis.url(),
                    "--key",
                    period,
                    "--once-per",
                    period,
                ])
                .args(["--", "true"]),
        )
    };
    for period in [
        "1w", "2weeks", "1wk", "1month", "1months", "1M", "1y", "1d 1w",
    ] {
        let out = run(period);
        let err = stderr(&out);
        assert_eq!(code(&out), 64, "{period}: {err}");
        assert_eq!(err.lines().count(), 1, "{period}: {err}");
        assert!(
            err.contains("--once-per week|month --tz ZONE"),
            "{period}: {err}"
        );
        assert!(redis.keys().is_empty(), "{period}: a key was written");
    }
    let out = run("1fortnight");
    let err = stderr(&out);
    assert_eq!(code(&out), 64, "{err}");
    assert_eq!(err.matches("ms, s, m, h, d").count(), 1, "{err}");
    assert!(!err.contains("weeks, months"), "two unit lists: {err}");
    for period in ["30days", "1m"] {
        assert_eq!(code(&run(period)), 0, "{period}");
    }
}

/// Issue 58 item 9 (newcomer-7 #11): `--tz` takes a zone's IANA name, never a file of
/// the zoneinfo tree that is a host's own zone (`localtime`, `posixrules`), another
/// tree (`posix/…`, `right/…`) or a path: each is refused with one line (64). A name in
/// another case is the zone, recorded as the zone database spells it.
#[test]
fn only_iana_zone_names_are_zones() {
    let redis = Redis::start();
    let run = |tz: &str| {
        output(
            redlock_run()
                .args(["--redis", &redis.url(), "--key", "zones"])
                .args(["--once-per", "day", "--tz", tz])
                .args(["--", "true"]),
        )
    };
    for tz in [
        "localtime",
        "posixrules",
        "posix/Asia/Bangkok",
        "right/Asia/Bangkok",
        "/usr/share/zoneinfo/Asia/Bangkok",
        "Asia/../Asia/Bangkok",
        "./UTC",
    ] {
        let out = run(tz);
        let err = stderr(&out);
        assert_eq!(code(&out), 64, "{tz}: {err}");
        assert_eq!(err.lines().count(), 1, "{tz}: {err}");
        assert!(err.contains("IANA"), "{tz}: {err}");
        assert!(redis.keys().is_empty(), "{tz}: a key was written");
    }
    let out = run("asia/bangkok");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = history_json(&redis, "zones");
    assert_eq!(runs["runs"][0]["tz"], "Asia/Bangkok", "{runs}");
    for tz in ["UTC", "Etc/GMT+7"] {
        let out = output(
            redlock_run()
                .args(["--redis", &redis.url(), "--key", tz])
                .args(["--once-per", "day", "--tz", tz, "--", "true"]),
        );
        assert_eq!(code(&out), 0, "{tz}: {}", stderr(&out));
    }
}

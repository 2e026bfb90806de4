//! Once per period and the run history: `--once-per` runs a job once per slot of the
//! server's clock across "hosts" whose clocks differ (libfaketime), never by sleeping to
//! a boundary; a slot starts exactly at a multiple of the period; a failed run leaves
//! its slot open; the history is bounded, outlives the lock, records lost runs, and
//! reads the same over Redlock nodes; `status` shows the last run.

use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::harness::*;

/// `redlock history <name> --json` over `redis_args`: the runs, newest first.
fn history(redis_args: &[String], name: &str) -> Vec<serde_json::Value> {
    let out = output(redlock().args(["history", name, "--json"]).args(redis_args));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    doc["runs"].as_array().expect("runs").clone()
}

fn statuses(runs: &[serde_json::Value]) -> Vec<i64> {
    runs.iter().map(|r| r["status"].as_i64().unwrap()).collect()
}

fn real_now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Ages every run in `name`'s history by `ms` (as if it ran that much earlier): the
/// next slot, without waiting for it. (Moving the server's clock instead is not
/// possible: see `harness::clock`.)
fn age_history(redis: &Redis, name: &str, ms: u64) {
    let key = format!("{}:history", lock_key(name));
    let runs: Vec<String> = redis.cmd(&["LRANGE", &key, "0", "-1"]);
    let _: i64 = redis.cmd(&["DEL", &key]);
    for raw in runs {
        let mut run: serde_json::Value = serde_json::from_str(&raw).unwrap();
        for field in ["start_ms", "end_ms"] {
            run[field] = (run[field].as_u64().unwrap() - ms).into();
        }
        let _: i64 = redis.cmd(&["RPUSH", &key, &run.to_string()]);
    }
}

/// Eight "hosts" whose clocks are off by -7h … +5h (the -7h one lives in yesterday)
/// start together, waiting, each with `--once-per 1d`: exactly one runs the job in the
/// day-slot of the server's clock; the seven others get the lock in turn, find the slot
/// done and exit 75 saying so. Three rounds; between them the runs recorded are aged
/// by a day, so the next round is a new slot. The job's own `date` shows that its
/// host's clock really was off.
#[test]
fn once_per_runs_once_per_slot_across_hosts_with_different_clocks() {
    let s = Scratch::new();
    let redis = Redis::start();
    let offsets: [(&str, i64); 8] = [
        ("-7h", -7 * 3600),
        ("-3h", -3 * 3600),
        ("-45m", -45 * 60),
        ("-1s", -1),
        ("+0", 0),
        ("+2s", 2),
        ("+50m", 50 * 60),
        ("+5h", 5 * 3600),
    ];
    let mut args = lock_args(&redis, "nightly");
    args.extend(["--once-per", "1d", "--wait", "60s", "--verbose"].map(String::from));
    let day = 86_400_000;
    for slot in 0..3 {
        if slot > 0 {
            age_history(&redis, "nightly", day);
        }
        let hosts: Vec<_> = offsets
            .iter()
            .enumerate()
            .map(|(i, (offset, _))| {
                let mut cmd = redlock_run();
                with_clock_offset(&mut cmd, offset);
                let ran = s.path(&format!("ran-{slot}-{i}"));
                cmd.args(&args)
                    .args(["--", "sh", "-c"])
                    .arg(format!("date +%s > '{}'; sleep 0.1", ran.display()))
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                cmd.spawn().expect("spawn redlock-run")
            })
            .collect();
        let results: Vec<(i32, String)> = hosts
            .into_iter()
            .map(|h| finish(h, Duration::from_secs(90)))
            .collect();
        let ran: Vec<usize> = (0..8)
            .filter(|i| s.path(&format!("ran-{slot}-{i}")).exists())
            .collect();
        assert_eq!(ran.len(), 1, "slot {slot}: ran on hosts {ran:?}");
        let host = ran[0];
        for (i, (code, err)) in results.iter().enumerate() {
            if i == host {
                assert_eq!(*code, 0, "slot {slot} host {i}: {err}");
            } else {
                assert_eq!(*code, 75, "slot {slot} host {i}: {err}");
                assert!(
                    err.contains("already ran in this --once-per 1day slot"),
                    "slot {slot} host {i}: {err}"
                );
            }
        }
        // The job saw its host's clock, not the real one.
        let seen: i64 = read_trimmed(&s.path(&format!("ran-{slot}-{host}")))
            .parse()
            .unwrap();
        let want = real_now_s() + offsets[host].1;
        assert!(
            (seen - want).abs() < 120,
            "host {host} should run {}: date said {seen}, want about {want}",
            offsets[host].0
        );
    }
    let runs = history(&lock_args(&redis, "nightly")[2..], "nightly");
    assert_eq!(statuses(&runs), [0, 0, 0], "{runs:?}");
    let slots: Vec<u64> = runs
        .iter()
        .map(|r| r["start_ms"].as_u64().unwrap() / day)
        .collect();
    assert_eq!(slots, [slots[2] + 2, slots[2] + 1, slots[2]], "{runs:?}");
    assert!(runs.iter().all(|r| r["once_per_ms"] == day), "{runs:?}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// The slot is the server's `TIME` rounded down to a multiple of the period: a
/// successful run that started at the slot's first millisecond counts, one that started
/// a millisecond before does not.
#[test]
fn a_slot_starts_at_a_multiple_of_the_period_of_the_servers_clock() {
    let redis = Redis::start();
    let key = format!("{}:history", lock_key("daily"));
    let time: Vec<String> = redis.cmd(&["TIME"]);
    let now_ms = time[0].parse::<u64>().unwrap() * 1000 + time[1].parse::<u64>().unwrap() / 1000;
    let day = 86_400_000;
    let slot = now_ms - now_ms % day;
    let mut args = lock_args(&redis, "daily");
    args.extend(["--once-per".into(), "1d".into()]);
    // A `--once-per` run's record (it says its period: the job's, issue 58 item 5).
    let record = |start: u64| {
        format!(r#"{{"token":"t{start}","once_per_ms":{day},"status":0,"start_ms":{start}}}"#)
    };
    let _: i64 = redis.cmd(&["LPUSH", &key, &record(slot - 1)]);
    assert_eq!(
        try_once(&args, "true").0,
        0,
        "yesterday's run does not count"
    );
    let _: i64 = redis.cmd(&["DEL", &key]);
    let _: i64 = redis.cmd(&["LPUSH", &key, &record(slot)]);
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 75, "a run at the slot's first ms counts: {err}");
}

/// A failed run leaves the slot open (the next try runs again); once a run exits 0 the
/// slot is done: quietly skipped (exit 75, nothing on stderr without --verbose). A run
/// without --once-per is not held back by it.
#[test]
fn a_failed_run_leaves_the_slot_open() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "hourly");
    args.extend(["--once-per".into(), "1h".into()]);
    assert_eq!(try_once(&args, "exit 3").0, 3);
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 0, "{err}");
    let (code, err) = try_once(&args, "echo ran >&2");
    assert_eq!(code, 75, "{err}");
    assert_eq!(err, "", "a skipped slot is quiet without --verbose");
    let (code, err) = try_once(&lock_args(&redis, "hourly"), "true");
    assert_eq!(code, 0, "{err}");
    let runs = history(&lock_args(&redis, "hourly")[2..], "hourly");
    assert_eq!(statuses(&runs), [0, 0, 3], "{runs:?}");
    assert_eq!(runs[2]["command_status"], 3);
    assert_eq!(runs[1]["once_per_ms"], 3_600_000);
    assert!(runs[0]["once_per_ms"].is_null());
}

/// The history keeps the last N runs (--history), never expires, records a run whose
/// lock expired under it as lost, and `status` shows the last run of a free lock.
#[test]
fn history_is_bounded_and_outlives_the_lock() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "job");
    args.extend(["--history".into(), "5".into()]);
    for i in 0..8 {
        assert_eq!(try_once(&args, &format!("exit {i}")).0, i);
    }
    let key = format!("{}:history", lock_key("job"));
    assert_eq!(redis.cmd::<i64>(&["LLEN", &key]), 5);
    let retain = 30 * 24 * 3600 * 1000;
    assert!(
        (retain - 60_000..=retain).contains(&redis.pttl(&key)),
        "the history is kept the default --retain of 30 days: {}",
        redis.pttl(&key)
    );
    let conn = &lock_args(&redis, "job")[2..];
    let runs = history(conn, "job");
    assert_eq!(statuses(&runs), [7, 6, 5, 4, 3]);
    let fences: Vec<u64> = runs.iter().map(|r| r["fence"].as_u64().unwrap()).collect();
    assert!(fences.windows(2).all(|w| w[0] > w[1]), "{fences:?}");
    for run in &runs {
        assert!(run["end_ms"].as_u64() >= run["start_ms"].as_u64(), "{run}");
        assert_eq!(run["lost"], false);
        assert!(run["host"].is_string() && run["pid"].is_u64() && run["user"].is_string());
        assert_eq!(run["cmd"], format!("sh -c 'exit {}'", run["status"]));
    }

    // The lock expires under a running command (its key is given 1 ms to live): the
    // renewal finds it gone, the run ends lost, and the history says so.
    let (code, err) = try_once(
        &args,
        &format!(
            "redis-cli -p {} PEXPIRE '{}' 1 >/dev/null; sleep 30",
            redis.port,
            lock_key("job")
        ),
    );
    assert_eq!(code, 79, "{err}");
    let runs = history(conn, "job");
    assert_eq!(
        (runs[0]["status"].as_i64(), &runs[0]["lost"]),
        (Some(79), &serde_json::json!(true))
    );
    assert_eq!(runs.len(), 5);

    let out = output(redlock().args(["status", "job"]).args(conn));
    assert_eq!(crate::harness::code(&out), 1, "free");
    let text = stdout(&out);
    assert!(text.starts_with("job: free\n  last run: "), "{text}");
    assert!(text.contains("lost the lock, exit 79"), "{text}");
    let out = output(redlock().args(["status", "job", "--json"]).args(conn));
    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(doc["state"], "free");
    assert_eq!(doc["last_run"]["status"], 79);
    let out = output(
        redlock()
            .args(["history", "job", "--limit", "2"])
            .args(conn),
    );
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.starts_with("job: last 2 runs, newest first\n"),
        "{text}"
    );

    // --history 0 records nothing and leaves the history as it is.
    let mut quiet = lock_args(&redis, "job");
    quiet.extend(["--history".into(), "0".into()]);
    assert_eq!(try_once(&quiet, "true").0, 0);
    assert_eq!(history(conn, "job").len(), 5);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// Over three Redlock nodes every node keeps the history; `history` shows each run once
/// (and still does with a node down); `--once-per` skips a slot that ran.
#[test]
fn history_and_once_per_over_three_nodes() {
    let mut nodes: Vec<Redis> = (0..3).map(|_| Redis::start()).collect();
    let mut conn: Vec<String> = Vec::new();
    for n in &nodes {
        conn.extend(["--redis".into(), n.url()]);
    }
    let mut args = vec!["--key".to_string(), "q".to_string()];
    args.extend(conn.iter().cloned());
    let mut once = args.clone();
    once.extend(["--once-per".into(), "1h".into()]);
    assert_eq!(try_once(&once, "true").0, 0);
    assert_eq!(try_once(&once, "true").0, 75);
    assert_eq!(try_once(&args, "exit 4").0, 4);
    for n in &nodes {
        assert_eq!(n.cmd::<i64>(&["LLEN", "redlock:{q}:history"]), 2);
        assert!(n.keys().is_empty(), "left behind: {:?}", n.keys());
    }
    assert_eq!(statuses(&history(&conn, "q")), [4, 0]);
    nodes[0].stop();
    assert_eq!(statuses(&history(&conn, "q")), [4, 0]);
}

/// What is not a list on the history key is not ours: a once-per run refuses it with
/// one line and the Redis exit status, and touches nothing.
#[test]
fn a_foreign_history_key_is_refused_and_left_alone() {
    let redis = Redis::start();
    let key = format!("{}:history", lock_key("odd"));
    let _: () = redis.cmd(&["SET", &key, "mine"]);
    let mut args = lock_args(&redis, "odd");
    args.extend(["--once-per".into(), "1h".into()]);
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 76, "{err}");
    assert!(err.contains("redlock's run history"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // A plain run records nothing there but runs.
    assert_eq!(try_once(&lock_args(&redis, "odd"), "true").0, 0);
    assert_eq!(redis.get(&key).as_deref(), Some("mine"));
    let out = output(redlock().args(["history", "odd", "--redis", &redis.url()]));
    assert_eq!(crate::harness::code(&out), 76, "{}", stderr(&out));
    assert!(redis.keys().is_empty(), "{:?}", redis.keys());
}

// Timeline -------------------------------------------------------------------------

/// 2026-11-26 00:00:00 UTC.
const T0: u64 = 1_795_651_200_000;

/// A run record as the release writes it.
fn record(host: &str, start_min: u64, minutes: u64, status: i64, lost: bool) -> String {
    serde_json::json!({
        "token": format!("tok-{host}-{start_min}"),
        "host": host, "pid": 42, "user": "ops", "cmd": "./nightly.sh",
        "fence": start_min, "duration_ms": minutes * 60_000,
        "command_status": status, "status": status, "lost": lost,
        "start_ms": T0 + start_min * 60_000,
        "end_ms": T0 + (start_min + minutes) * 60_000,
    })
    .to_string()
}

/// The history of the unit test's golden picture (src/verbs/timeline.rs), in Redis.
fn fixed_history(redis: &Redis, name: &str) {
    let key = format!("{}:history", lock_key(name));
    for r in [
        record("web-1", 60, 30, 0, false),
        record("web-2", 180, 20, 3, false),
        record("web-1", 300, 90, 79, true),
        record("web-2", 500, 30, 124, true),
        record("db-1", 900, 60, 0, false),
    ] {
        let _: i64 = redis.cmd(&["LPUSH", &key, &r]);
    }
    // A start mark whose run no longer holds the lock: it vanished (its own mark, a bar
    // to the earliest its lease can have ended, not one that runs on to now: P13).
    let vanished = serde_json::json!({"token": "tok-run", "start_ms": T0 + 1300 * 60_000, "running": true, "started": true, "host": "db-1", "ttl_ms": 3_600_000});
    let _: i64 = redis.cmd(&["LPUSH", &key, &vanished.to_string()]);
}

/// `redlock history …` with the wall clock frozen at 2026-11-27 00:00:00 UTC.
fn at_fixed_now(args: &[&str]) -> std::process::Command {
    let mut cmd = redlock();
    with_clock_offset(&mut cmd, "2026-11-27 00:00:00");
    cmd.env("TZ", "UTC").args(["history"]).args(args);
    cmd
}

/// Issue 52 item 6 (newcomer-6 P7): without `--since` the window fits the runs
/// recorded (the oldest shown to now) at a round column width: a minute job's last 20
/// runs are 20 marks, not one 20-minute column of a 24-hour day.
#[test]
fn timeline_without_since_fits_the_runs_recorded() {
    let redis = Redis::start();
    let key = format!("{}:history", lock_key("close-order"));
    // 23:40 to 23:59 of 2026-11-26, one 5 s run a minute; now is 00:00 the next day.
    for minute in 0..20u64 {
        let start_ms = T0 + (23 * 60 + 40 + minute) * 60_000;
        let r = serde_json::json!({
            "token": format!("tok-{minute}"), "host": "web-1", "pid": 42, "user": "ops",
            "cmd": "./close_orders.sh", "fence": minute + 1, "duration_ms": 5_000,
            "command_status": 0, "status": 0, "lost": false,
            "start_ms": start_ms, "end_ms": start_ms + 5_000,
        });
        let _: i64 = redis.cmd(&["LPUSH", &key, &r.to_string()]);
    }
    let out = output(
        at_fixed_now(&["close-order", "--timeline", "--redis", &redis.url()]).env("COLUMNS", "80"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.contains("web-1 |"))
        .expect("the row");
    let marks = row.split(|c| c != '#').filter(|s| !s.is_empty()).count();
    assert_eq!(marks, 20, "every run its own mark:\n{text}");
    let head = text.lines().next().unwrap_or_default();
    assert!(head.starts_with("close-order: 2026-11-26 23:"), "{text}");
    assert!(head.ends_with("UTC, one column 20s"), "{text}");
    for line in text.lines().take(4) {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
}

#[test]
fn timeline_in_a_pipe_is_the_golden_picture_at_the_width_asked() {
    let redis = Redis::start();
    fixed_history(&redis, "nightly");
    let out = output(
        at_fixed_now(&[
            "nightly",
            "--timeline",
            "--since",
            "24h",
            "--redis",
            &redis.url(),
        ])
        .env("COLUMNS", "60"),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want = "\
nightly: 2026-11-26 00:00 to 2026-11-27 00:00 UTC, one column 28m 48s
   db-1 |                               ###           ???  |
  web-1 |  ##      LLLL                                    |
  web-2 |      x          MM                               |
        ++-----------+------------+-----------+-----------++
         00:00       06:00        12:00       18:00
  # exit 0   x exit non-zero   L lost the lock
  M stopped at --max-hold   P preempted by a newer run
  S stopped on request   : running
  ? vanished (end never recorded)
";
    assert_eq!(stdout(&out), want, "\n{}", stdout(&out));
    // 80 columns without COLUMNS; every drawn line within it.
    let out = output(&mut at_fixed_now(&[
        "nightly",
        "--timeline",
        "--redis",
        &redis.url(),
    ]));
    for line in stdout(&out).lines().take(6) {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    assert!(stdout(&out).lines().nth(4).unwrap().chars().count() == 80);
    // --since: the last 2 hours hold only the vanished run.
    let out = output(&mut at_fixed_now(&[
        "nightly",
        "--timeline",
        "--since",
        "2h",
        "--redis",
        &redis.url(),
    ]));
    assert!(
        stdout(&out).contains("db-1 |???") && !stdout(&out).contains("web-1"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn timeline_on_a_terminal_is_coloured_to_its_width_unless_no_color() {
    let redis = Redis::start();
    fixed_history(&redis, "nightly");
    let draw = |no_color: bool| {
        let mut cmd = std::process::Command::new("sh");
        with_clock_offset(&mut cmd, "2026-11-27 00:00:00");
        cmd.env("TZ", "UTC").env_remove("COLUMNS").args([
            "-c",
            "stty cols 72 rows 24; exec \"$@\"",
            "sh",
            REDLOCK,
            "history",
            "nightly",
            "--timeline",
            "--redis",
            &redis.url(),
        ]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        } else {
            cmd.env_remove("NO_COLOR");
        }
        let (mut running, _master) = start_on_pty(cmd, None);
        assert_eq!(running.code(), 0);
        running.said()
    };
    let coloured = draw(false);
    assert!(coloured.contains("\x1b[32m█\x1b[0m"), "{coloured:?}");
    assert!(
        coloured.contains("\x1b[35m█\x1b[0m"),
        "lost in magenta: {coloured:?}"
    );
    let frame = coloured
        .lines()
        .find(|l| l.contains('└'))
        .expect("the axis");
    assert_eq!(
        frame.trim_end_matches('\r').chars().count(),
        72,
        "{frame:?}"
    );
    let plain = draw(true);
    assert!(
        !plain.contains('\x1b') && plain.contains("LLL"),
        "{plain:?}"
    );
}

#[test]
fn timeline_over_a_pattern_draws_every_name() {
    let redis = Redis::start();
    fixed_history(&redis, "nightly-a");
    fixed_history(&redis, "nightly-b");
    fixed_history(&redis, "hourly");
    let out = output(&mut at_fixed_now(&[
        "nightly-*",
        "--timeline",
        "--since",
        "24h",
        "--redis",
        &redis.url(),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("nightly-a: 2026-11-26 00:00") && text.contains("nightly-b: "),
        "{text}"
    );
    assert!(!text.contains("hourly"), "{text}");
}

/// (review 4, #7) A `--once-per` grant whose reply and undo are both lost (a partition
/// at the wrong moment) leaves a start mark; the command never started, so the mark
/// must not close the slot: the next try in the slot runs the job. The grant's reply
/// is dropped by a proxy (the first try's plain reads pass, see `src/glance.rs`; the
/// acquire script's reply is the first dropped), and once the mark is in Redis the link
/// is blackholed, so the undo is lost too; the first run exits 69 without running
/// anything.
#[test]
fn a_grant_whose_command_never_started_does_not_close_the_slot() {
    use crate::harness::proxy::{Mode, Proxy};
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("job.log");
    let job = format!("echo ran >> '{}'", log.display());
    // The scripts in the server's cache, so that the first run's script request is
    // the acquire's EVALSHA.
    let warm = output(redlock_run().args([
        "--key",
        "warm",
        "--once-per",
        "1h",
        "--redis",
        &redis.url(),
        "--",
        "true",
    ]));
    assert_eq!(code(&warm), 0, "{}", stderr(&warm));
    let proxy = Proxy::start(redis.port);
    proxy.set(Mode::DropRepliesFrom("EVALSHA"));
    let mut first = redlock_run()
        .args([
            "--key",
            "op2",
            "--once-per",
            "1d",
            "--ttl",
            "3s",
            "--node-timeout",
            "300ms",
        ])
        .args(["--redis", &proxy.url(), "--", "sh", "-c", &job])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let history_key = "redlock:{op2}:history";
    if !eventually(READY, || redis.exists(history_key)) {
        let _ = first.kill();
        let out = first.wait_with_output().unwrap();
        panic!(
            "the grant never reached Redis: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    proxy.set(Mode::Blackhole);
    let status = wait_child(&mut first, Duration::from_secs(30));
    assert_eq!(status.code(), Some(codes::UNREACHABLE));
    assert!(!log.exists(), "the first run ran its command");
    proxy.pass();
    assert!(
        eventually(Duration::from_secs(10), || !redis.exists("redlock:{op2}")),
        "the granted lock never expired"
    );
    let again = || {
        output(
            redlock_run()
                .args(["--key", "op2", "--once-per", "1d", "--redis", &redis.url()])
                .args(["--", "sh", "-c", &job]),
        )
    };
    let second = again();
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(read_trimmed(&log), "ran", "the job did not run in its slot");
    // Now the slot has its run: a third try skips it.
    let third = again();
    assert_eq!(code(&third), codes::BUSY, "{}", stderr(&third));
    assert_eq!(read_trimmed(&log), "ran");
}

/// A `--once-per` run's history keeps its expiry while the run is under way: turning
/// the start mark into a started one must not empty the list (an emptied list is
/// deleted, and a push would make it again with no expiry; the generated family's
/// "every key written expires" caught it on a fresh name, where the mark is the only
/// record).
#[test]
fn a_once_per_runs_history_keeps_its_expiry_while_it_runs() {
    let redis = Redis::start();
    let s = Scratch::new();
    let ready = s.path("ready");
    let go = s.path("go");
    let mut run = redlock_run()
        .args(["--key", "fresh", "--once-per", "1h", "--redis", &redis.url(), "--", "sh", "-c"])
        .arg(format!(
            "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done",
            ready.display(),
            go.display()
        ))
        .spawn()
        .unwrap();
    assert!(eventually(READY, || ready.exists()));
    let ttl = pttl(&redis, "redlock:{fresh}:history");
    std::fs::write(&go, "").unwrap();
    assert!(wait_child(&mut run, Duration::from_secs(30)).success());
    assert!(
        ttl > 0,
        "the history has no expiry while the run is under way: {ttl}"
    );
}

/// Issue 58 item 11 (newcomer-7 #15): `history --json` gives a `--once-per` run in
/// progress, and one that vanished, the period it ran for (`once_per_ms`, or
/// `once_per` and `tz` for a calendar slot) and `null` for the end and duration it does
/// not have (never 0: a script that averages durations or selects once-per runs by
/// `once_per_ms` would miscount exactly these runs).
#[test]
fn a_running_or_vanished_once_per_run_says_its_period_and_no_end() {
    let redis = Redis::start();
    let s = Scratch::new();
    for (name, period) in [
        ("fixed", &["--once-per", "1h"][..]),
        (
            "calendar",
            &["--once-per", "week", "--tz", "Asia/Bangkok"][..],
        ),
    ] {
        let ready = s.path(&format!("{name}.ready"));
        let mut args = lock_args(&redis, name);
        args.extend(period.iter().map(|a| a.to_string()));
        args.extend(["--ttl", "2s", "--no-local-queue"].map(String::from));
        let job = format!("echo \"$PPID\" > '{}'; sleep 30", ready.display());
        let mut child = start_run(&args, &job);
        assert!(wait_for_file(&ready, "\n", READY), "never started");
        let says = |life: &str| {
            let json = history_json(&redis, name);
            let run = &json["runs"][0];
            assert_eq!(run[life], true, "{json}");
            assert!(
                run["end_ms"].is_null() && run["duration_ms"].is_null(),
                "{json}"
            );
            if name == "fixed" {
                assert_eq!(run["once_per_ms"], 3_600_000, "{json}");
            } else {
                assert!(run["once_per_ms"].is_null(), "{json}");
                assert_eq!(
                    (&run["once_per"], &run["tz"]),
                    (&"week".into(), &"Asia/Bangkok".into()),
                    "{json}"
                );
            }
        };
        says("running");
        let wrapper = read_trimmed(&ready).parse::<i32>().unwrap();
        for pid in [wrapper, child.id() as i32] {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        wait_child(&mut child, READY);
        assert!(eventually(READY, || !redis.exists(&lock_key(name))));
        says("vanished");
    }
}

//! Regression rows for the findings of the independent review (issue 17), one test per
//! finding, each seed-independent: the fault or the flag combination is set up by hand
//! and the invariant the README promises is checked directly.

use std::process::Stdio;
use std::time::Duration;

use crate::harness::proxy::{Mode, Proxy};
use crate::harness::*;

/// (1) The command's leader handles SIGTERM and exits late, a background member
/// ignores SIGTERM: the whole group is dead by the lease's end, so nothing of the first
/// run writes after the second run (which reaches Redis directly) started.
#[test]
fn stragglers_die_by_the_lease_end_when_the_leader_exits_late() {
    let redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    let s = Scratch::new();
    let log = s.path("log");
    let first = format!(
        "( trap '' TERM; while :; do echo alive >> '{log}'; sleep 0.05; done ) &\n\
         trap 'sleep 1.9; exit 0' TERM\n\
         echo started >> '{log}'\n\
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let holder = redlock_run()
        .args(["--key", "strag", "--redis", &proxy.url()])
        .args([
            "--ttl",
            "6s",
            "--kill-after",
            "2s",
            "--",
            "sh",
            "-c",
            &first,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for_file(&log, "alive", READY));
    proxy.set(Mode::Blackhole);
    let out = output_within(
        redlock_run()
            .args(lock_args(&redis, "strag"))
            .args(["--wait", "30s", "--", "sh", "-c"])
            .arg(format!("echo second >> '{}'; sleep 1", log.display())),
        Duration::from_secs(60),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (code_first, _) = finish(holder, Duration::from_secs(30));
    assert_eq!(code_first, codes::LOST);
    let text = read_trimmed(&log);
    let after: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "second")
        .filter(|l| *l == "alive")
        .collect();
    assert!(
        after.is_empty(),
        "{} writes of the first run after the second run started",
        after.len()
    );
}

/// (11) A URL whose password stands after a stray `#` is never echoed.
#[test]
fn a_url_fragment_never_echoes_a_password() {
    for url in ["unix?:#//s/?pass=SECRET", "unix:#///tmp/x?pass=SECRET"] {
        let out = output(redlock_run().args(["--key", "k", "--redis", url, "--", "true"]));
        assert_eq!(code(&out), codes::USAGE);
        assert!(!stderr(&out).contains("SECRET"), "{}", stderr(&out));
    }
}

/// (12) Several runs appending to one `--events` file never tear each other's lines:
/// every line parses as one JSON object.
#[test]
fn events_from_concurrent_runs_never_tear_lines() {
    let redis = Redis::start();
    let s = Scratch::new();
    let events = s.path("events.jsonl");
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let loop_ = format!(
                "for n in $(seq 40); do '{RUN}' --redis '{url}' --key ev{i} --events '{ev}' -- true || exit 1; done",
                url = redis.url(),
                ev = events.display()
            );
            std::process::Command::new("sh")
                .args(["-c", &loop_])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut w in writers {
        assert!(wait_child(&mut w, Duration::from_secs(120)).success());
    }
    let text = std::fs::read_to_string(&events).unwrap();
    let torn: Vec<&str> = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).map_or(true, |v| !v.is_object()))
        .collect();
    assert_eq!(
        text.lines().count(),
        8 * 40 * 3,
        "acquired, released, exited per run"
    );
    assert!(
        torn.is_empty(),
        "{} torn lines, e.g. {:?}",
        torn.len(),
        torn.first()
    );
}

/// A holder that stays parked until `go` exists, started with `args` in the background.
fn parked(args: &[String], s: &Scratch, name: &str) -> std::process::Child {
    let go = s.path(&format!("{name}.go"));
    let started = s.path(&format!("{name}.started"));
    let script = format!(
        "echo $$ > '{started}'; while [ ! -e '{go}' ]; do sleep 0.02; done",
        started = started.display(),
        go = go.display()
    );
    start_run(args, &script)
}

fn go(s: &Scratch, name: &str) {
    std::fs::write(s.path(&format!("{name}.go")), "").unwrap();
}

fn has_started(s: &Scratch, name: &str) -> bool {
    s.path(&format!("{name}.started")).exists()
}

/// Waits (up to `limit`) for the parked run `name` to start its command; how long after
/// `since` it did.
fn started_after(s: &Scratch, name: &str, since: std::time::Instant, limit: Duration) -> Duration {
    assert!(
        eventually(limit, || has_started(s, name)),
        "{name} never started"
    );
    since.elapsed()
}

fn args(redis: &Redis, name: &str, extra: &[&str]) -> Vec<String> {
    let mut a = lock_args(redis, name);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// (10) `release NAME --if-dead` without `--slot` on a semaphore looks at every slot:
/// it removes slot 2, whose holder was killed with -9, and leaves slot 1's live holder.
#[test]
fn release_if_dead_without_slot_finds_the_dead_slot_of_a_semaphore() {
    let redis = Redis::start();
    let s = Scratch::new();
    let a = args(&redis, "sem", &["--limit", "2", "--ttl", "60s"]);
    let live = parked(&a, &s, "live");
    assert!(eventually(READY, || has_started(&s, "live")));
    let mut dead = parked(&a, &s, "dead");
    assert!(eventually(READY, || has_started(&s, "dead")));
    let dead_cmd = read_pid(&s.path("dead.started"));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-dead_cmd),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = dead.kill();
    let _ = dead.wait();
    assert!(eventually(READY, || !alive(dead_cmd)));
    assert!(
        redis.exists("redlock:{sem}:slot:2"),
        "slot 2 kept by its ttl"
    );
    let out = output(redlock().args(["release", "sem", "--if-dead", "--redis", &redis.url()]));
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("slot 2"), "{}", stdout(&out));
    assert!(!redis.exists("redlock:{sem}:slot:2"));
    assert!(
        redis.exists("redlock:{sem}"),
        "the live holder of slot 1 is kept"
    );
    // With --slot the slot's own keys are read (not `…:slot:2:slot:i`).
    let out = output(redlock().args([
        "release",
        "sem",
        "--if-dead",
        "--slot",
        "1",
        "--redis",
        &redis.url(),
    ]));
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    go(&s, "live");
    assert_eq!(finish(live, Duration::from_secs(30)).0, 0);
}

/// (2a) A holder in another PID namespace (same host name): `--if-dead` cannot tell
/// whether it lives, so it refuses and removes nothing.
#[test]
fn release_if_dead_refuses_a_holder_in_another_pid_namespace() {
    let probe = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: unshare --pid needs root (CI runs as root)");
        return;
    }
    let redis = Redis::start();
    let s = Scratch::new();
    let started = s.path("started");
    let mut holder = std::process::Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            RUN,
            "--key",
            "ns",
            "--redis",
            &redis.url(),
        ])
        .args(["--ttl", "60s", "--", "sh", "-c"])
        .arg(format!("echo $$ > '{}'; sleep 60", started.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(READY, || started.exists()));
    let out = output(redlock().args(["release", "ns", "--if-dead", "--redis", &redis.url()]));
    assert_eq!(code(&out), codes::BUSY, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("PID namespace"), "{}", stderr(&out));
    assert!(redis.exists("redlock:{ns}"));
    let _ = holder.kill();
    let _ = holder.wait();
}

/// (2b) The README's script pattern, `token=$(redlock acquire …)` with redirections or
/// under `timeout`, records the script, not the subshell that ran the command: while
/// the script runs, `--if-dead` refuses.
#[test]
fn acquire_in_a_command_substitution_belongs_to_the_script() {
    let redis = Redis::start();
    let s = Scratch::new();
    let forms = [
        (
            "sh",
            "token=$('{R}' acquire pat --redis '{U}' --ttl 60s 2>/dev/null) || exit 1",
        ),
        (
            "bash",
            "token=$('{R}' acquire pat --redis '{U}' --ttl 60s 2>/dev/null) || exit 1",
        ),
        (
            "sh",
            "token=$(timeout 60 '{R}' acquire pat --redis '{U}' --ttl 60s) || exit 1",
        ),
        (
            "bash",
            "token=$('{R}' acquire pat --redis '{U}' --ttl 60s | cat) || exit 1",
        ),
    ];
    for (i, (shell, take)) in forms.iter().enumerate() {
        let take = take.replace("{R}", REDLOCK).replace("{U}", &redis.url());
        let ready = s.path(&format!("ready{i}"));
        let go = s.path(&format!("go{i}"));
        let body = format!(
            "{take}\ntouch '{ready}'\nwhile [ ! -e '{go}' ]; do sleep 0.02; done\n'{REDLOCK}' release pat --token \"$token\" --redis '{U}'",
            ready = ready.display(),
            go = go.display(),
            U = redis.url(),
        );
        let mut script = std::process::Command::new(shell)
            .args(["-c", &body])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        assert!(eventually(READY, || ready.exists()), "{shell}: {take}");
        let out = output(redlock().args(["release", "pat", "--if-dead", "--redis", &redis.url()]));
        assert_eq!(
            code(&out),
            codes::BUSY,
            "{shell}: {take}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        std::fs::write(&go, "").unwrap();
        assert!(wait_child(&mut script, Duration::from_secs(30)).success());
        assert!(!redis.exists("redlock:{pat}"));
    }
}

/// (5d) `release --token` on a `--fair` lock wakes the queue's head at once (not at its
/// next heartbeat try, up to 5 s later).
#[test]
fn release_by_token_wakes_the_head_of_a_fair_queue() {
    let redis = Redis::start();
    let s = Scratch::new();
    let holder = Holding::start(&args(&redis, "fq", &["--fair", "--ttl", "60s"]));
    let waiter = parked(&args(&redis, "fq", &["--fair", "--wait", "60s"]), &s, "w");
    assert!(eventually(READY, || redis
        .cmd::<i64>(&["ZCARD", "redlock:{fq}:queue"])
        == 1));
    let freed = std::time::Instant::now();
    let out = output(redlock().args([
        "release",
        "fq",
        "--token",
        &holder.token(),
        "--redis",
        &redis.url(),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let slept = started_after(&s, "w", freed, Duration::from_secs(30));
    assert!(
        slept < Duration::from_millis(2500),
        "the head slept {slept:?} with the lock free"
    );
    go(&s, "w");
    assert_eq!(finish(waiter, Duration::from_secs(30)).0, 0);
    holder.stop();
}

/// (9) A queue entry whose heartbeat deadline lies far in the future (written by hand,
/// or by a host whose clock is years ahead) does not block a fair queue: deadlines are
/// bounded by what a waiter may claim.
#[test]
fn a_fair_queue_entry_with_a_future_deadline_does_not_block_the_queue() {
    let redis = Redis::start();
    let _: i64 = redis.cmd(&["ZADD", "redlock:{gq}:queue", "0", "ghost"]);
    let _: i64 = redis.cmd(&["ZADD", "redlock:{gq}:beats", "99999999999999", "ghost"]);
    let _: () = redis.cmd(&["SET", "redlock:{gq}:mode", "fair", "PX", "60000"]);
    let out = output_within(
        redlock_run()
            .args(lock_args(&redis, "gq"))
            .args(["--fair", "--wait", "30s", "--", "true"]),
        Duration::from_secs(60),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// (7) `--hold-min` with `--fair` or `--limit`: the name's kind (its mode key) lives as
/// long as the kept lock, so runs of the same kind wait (75) instead of being refused
/// (64), and runs of another kind are refused.
#[test]
fn hold_min_keeps_the_name_kind_as_long_as_the_lock() {
    let redis = Redis::start();
    for (kind, other, lock) in [
        (vec!["--fair"], vec!["--limit", "2"], "redlock:{hm}"),
        (vec!["--limit", "3"], vec!["--limit", "2"], "redlock:{hm}"),
    ] {
        let mut first = args(&redis, "hm", &["--ttl", "2s", "--hold-min", "15s"]);
        first.extend(kind.iter().map(|s| s.to_string()));
        let (c, err) = try_once(&first, "true");
        assert_eq!(c, 0, "{err}");
        let lock_ttl = redis.pttl(lock);
        let mode_ttl = redis.pttl("redlock:{hm}:mode");
        assert!(
            lock_ttl > 10_000,
            "{kind:?}: kept for --hold-min: {lock_ttl}"
        );
        assert!(
            mode_ttl >= lock_ttl - 1000,
            "{kind:?}: the mode key expires first: {mode_ttl} < {lock_ttl}"
        );
        let mut again = lock_args(&redis, "hm");
        again.extend(other.iter().map(|s| s.to_string()));
        assert_eq!(
            try_once(&again, "true").0,
            codes::USAGE,
            "{kind:?} then {other:?}"
        );
        let _: i64 = redis.cmd(&["DEL", lock, "redlock:{hm}:meta", "redlock:{hm}:mode"]);
    }
}

/// (5c) `--hold-min` shortens the kept lock's life without a release: the waiter is
/// woken when the hold ends, not a whole ttl later.
#[test]
fn a_waiter_wakes_when_hold_min_ends() {
    let redis = Redis::start();
    let s = Scratch::new();
    let holder = Holding::start(&args(&redis, "hw", &["--ttl", "30s", "--hold-min", "3s"]));
    let waiter = parked(&args(&redis, "hw", &["--wait", "60s"]), &s, "w");
    assert!(eventually(READY, || redis.exists("redlock:{hw}:waiters")));
    let started = std::time::Instant::now();
    holder.let_go();
    let slept = started_after(&s, "w", started, Duration::from_secs(60));
    assert!(
        slept < Duration::from_secs(8),
        "the waiter started {slept:?} after the command ended (hold 3 s)"
    );
    go(&s, "w");
    assert_eq!(finish(waiter, Duration::from_secs(30)).0, 0);
    holder.stop();
}

/// (5a) A waiter that joined while a holder with a short ttl held the lock, then saw a
/// holder with a long ttl take over (here another client's SET, with no free moment
/// between): its entry in the waiters set outlives its nap, so the long holder's
/// release wakes it.
#[test]
fn a_waiter_stays_registered_when_a_longer_holder_takes_over() {
    let redis = Redis::start();
    let s = Scratch::new();
    let _: () = redis.cmd(&["SET", "redlock:{hb}", "short", "PX", "2000"]);
    let third = parked(
        &args(&redis, "hb", &["--wait", "120s", "--node-timeout", "200ms"]),
        &s,
        "third",
    );
    assert!(eventually(READY, || redis.exists("redlock:{hb}:waiters")));
    let _: () = redis.cmd(&["SET", "redlock:{hb}", "long", "PX", "60000"]);
    // Longer than the short holder's ttl and a try: an entry sized from it is gone.
    std::thread::sleep(Duration::from_secs(6));
    let freed = std::time::Instant::now();
    let out = output(redlock().args(["release", "hb", "--token", "long", "--redis", &redis.url()]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let slept = started_after(&s, "third", freed, Duration::from_secs(90));
    assert!(
        slept < Duration::from_secs(4),
        "the waiter slept {slept:?} with the lock free"
    );
    go(&s, "third");
    assert_eq!(finish(third, Duration::from_secs(30)).0, 0);
}

/// (4) `redlock wait` on a semaphore whose slot 1 is free and slot 2 held blocks like a
/// waiter: a handful of scripts, not thousands per second.
#[test]
fn redlock_wait_blocks_on_a_semaphore_with_a_free_first_slot() {
    let redis = Redis::start();
    let s = Scratch::new();
    let a = args(&redis, "sw", &["--limit", "2", "--ttl", "30s"]);
    let one = parked(&a, &s, "one");
    assert!(eventually(READY, || has_started(&s, "one")));
    let two = parked(&a, &s, "two");
    assert!(eventually(READY, || has_started(&s, "two")));
    go(&s, "one");
    assert_eq!(finish(one, Duration::from_secs(30)).0, 0);
    assert!(redis.exists("redlock:{sw}:slot:2") && !redis.exists("redlock:{sw}"));
    let _: () = redis.cmd(&["CONFIG", "RESETSTAT"]);
    let out = output(redlock().args(["wait", "sw", "--timeout", "3s", "--redis", &redis.url()]));
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    let scripts = crate::waiting::evalsha_runs(&redis);
    assert!(
        scripts < 50,
        "{scripts} scripts in 3 s from one idle redlock wait"
    );
    go(&s, "two");
    assert_eq!(finish(two, Duration::from_secs(30)).0, 0);
}

/// (3a) The history is in end order: a run L that started before the slot and ended
/// after the slot's successful run R (L lost its lock while stalled and R took it; or,
/// before `--once-per` with `--limit` was refused, two slots at once) stands before R.
/// The once-per check must still find R: the slot is done.
#[test]
fn once_per_finds_the_slots_run_behind_a_longer_one_that_started_before() {
    let redis = Redis::start();
    let now = redis.now_ms();
    let slot = now - now % 3_600_000;
    let record = |token: &str, start: u64, end: u64, status: i32| {
        format!(
            r#"{{"token":"{token}","host":"h","pid":1,"once_per_ms":3600000,"duration_ms":{},"status":{status},"command_status":{status},"lost":false,"start_ms":{start},"end_ms":{end}}}"#,
            end - start
        )
    };
    let r = record("r", slot + 1, now.max(slot + 2), 0);
    let l = record("l", slot - 2000, now.max(slot + 2) + 1, 79);
    let _: i64 = redis.cmd(&["LPUSH", "redlock:{op}:history", &r, &l]);
    let out = output(redlock_run().args(lock_args(&redis, "op")).args([
        "--once-per",
        "1h",
        "--",
        "true",
    ]));
    assert_eq!(
        code(&out),
        codes::BUSY,
        "the slot already had a successful run: {}",
        stderr(&out)
    );
}

/// (3b) The release's reply is held by the network for a moment after the command's
/// work: the release is tried again until the lease's end, so the run's record is
/// written and the next try in the slot finds it done.
#[test]
fn once_per_records_the_run_when_the_release_is_held_up() {
    let redis = Redis::start();
    let (c, err) = once_per_run_cut_off(&redis, "opr", "6s", "500ms", Some(Duration::from_secs(3)));
    assert_eq!(c, 0, "{err}");
    assert_eq!(
        once_per_try(&redis, "opr"),
        codes::BUSY,
        "ran twice in one slot: {err}"
    );
}

/// A `--once-per 1h` run through a proxy whose link is cut as its command ends, for
/// `cut` (`None`: until the run has ended); its exit code and stderr.
fn once_per_run_cut_off(
    redis: &Redis,
    name: &str,
    ttl: &str,
    node_timeout: &str,
    cut: Option<Duration>,
) -> (i32, String) {
    let proxy = Proxy::start(redis.port);
    let s = Scratch::new();
    let (ready, go) = (s.path("ready"), s.path("go"));
    let run = redlock_run()
        .args(["--key", name, "--redis", &proxy.url(), "--once-per", "1h"])
        .args([
            "--ttl",
            ttl,
            "--node-timeout",
            node_timeout,
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "touch '{}'; while [ ! -e '{}' ]; do sleep 0.02; done",
            ready.display(),
            go.display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(eventually(READY, || ready.exists()));
    proxy.set(Mode::Blackhole);
    std::fs::write(&go, "").unwrap();
    if let Some(cut) = cut {
        std::thread::sleep(cut);
        proxy.pass();
    }
    finish(run, Duration::from_secs(30))
}

/// The next try in the slot, waiting for the lock if it is still held: its exit code.
fn once_per_try(redis: &Redis, name: &str) -> i32 {
    code(&output(redlock_run().args(lock_args(redis, name)).args([
        "--once-per",
        "1h",
        "--wait",
        "30s",
        "--",
        "true",
    ])))
}

/// (5b) Over three Redlock nodes, a holder that lists the nodes in another order than
/// its waiter, and that does not hold the node where waiters wait (another client held
/// it there when it acquired): its release still wakes the waiter at once.
#[test]
fn a_redlock_release_wakes_waiters_whatever_the_order_of_the_nodes() {
    let servers = [Redis::start(), Redis::start(), Redis::start()];
    let mut urls: Vec<String> = servers.iter().map(|r| r.url()).collect();
    urls.sort();
    let first = servers.iter().find(|r| r.url() == urls[0]).unwrap();
    let with = |order: &[String], extra: &[&str]| {
        let mut a = vec!["--key".to_string(), "rw".into()];
        for u in order {
            a.extend(["--redis".to_string(), u.clone()]);
        }
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let reversed: Vec<String> = urls.iter().rev().cloned().collect();
    let s = Scratch::new();
    let _: () = first.cmd(&["SET", "redlock:{rw}", "other", "PX", "60000"]);
    let holder = Holding::start(&with(&reversed, &["--ttl", "60s"]));
    let _: i64 = first.cmd(&["DEL", "redlock:{rw}"]);
    let waiter = parked(&with(&urls, &["--wait", "120s"]), &s, "w");
    assert!(eventually(READY, || servers
        .iter()
        .any(|r| r.exists("redlock:{rw}:waiters"))));
    let freed = std::time::Instant::now();
    holder.let_go();
    let slept = started_after(&s, "w", freed, Duration::from_secs(90));
    assert!(
        slept < Duration::from_secs(3),
        "the waiter slept {slept:?} with the lock free"
    );
    go(&s, "w");
    assert_eq!(finish(waiter, Duration::from_secs(30)).0, 0);
    holder.stop();
}

/// (6) A Sentinel failover while a run waits: the waiting run rides through it (READONLY
/// from the demoted master is not the end of the wait) and takes the lock on the new
/// master once the holder is done.
#[test]
fn a_waiting_run_rides_through_a_sentinel_failover() {
    let m = Monitored::start();
    let (master, url) = (&m.master, m.url());
    let s = Scratch::new();
    let a = |extra: &[&str]| {
        let mut a = vec![
            "--key".to_string(),
            "sfo".into(),
            "--redis".into(),
            url.clone(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let holder = parked(&a(&["--ttl", "15s", "--renew-every", "1s"]), &s, "holder");
    assert!(eventually(READY, || has_started(&s, "holder")));
    let waiter = parked(&a(&["--wait", "2m"]), &s, "waiter");
    assert!(eventually(READY, || master.exists("redlock:{sfo}:waiters")));
    m.fail_over();
    // Let the waiter's tries meet the demoted master before the holder goes.
    std::thread::sleep(Duration::from_secs(3));
    go(&s, "holder");
    assert_eq!(finish(holder, Duration::from_secs(30)).0, 0);
    eventually(Duration::from_secs(60), || has_started(&s, "waiter"));
    go(&s, "waiter");
    let (c, err) = finish(waiter, Duration::from_secs(60));
    assert_eq!(
        c, 0,
        "the waiting run did not ride through the failover: {err}"
    );
}

/// (8) A `--fair` head whose acquire reply comes later than its node timeout keeps its
/// turn: it does not give the lock back to the next in line and rejoin at the back.
#[test]
fn a_fair_head_with_a_late_reply_keeps_its_turn() {
    let redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    let s = Scratch::new();
    let log = s.path("log");
    let holder = Holding::start(&args(&redis, "late", &["--fair"]));
    let write = |who: &str| format!("echo {who} >> '{}'", log.display());
    let head = start_run(
        &[
            "--key",
            "late",
            "--redis",
            &proxy.url(),
            "--fair",
            "--wait",
            "60s",
            "--node-timeout",
            "300ms",
        ]
        .map(String::from),
        &write("head"),
    );
    assert!(eventually(READY, || redis
        .cmd::<i64>(&["ZCARD", "redlock:{late}:queue"])
        == 1));
    let next = start_run(
        &args(&redis, "late", &["--fair", "--wait", "60s"]),
        &write("next"),
    );
    assert!(eventually(READY, || redis
        .cmd::<i64>(&["ZCARD", "redlock:{late}:queue"])
        == 2));
    proxy.set(Mode::Latency(Duration::from_millis(700)));
    holder.let_go();
    // The head's tries reach the server but their replies come too late for a while.
    std::thread::sleep(Duration::from_secs(3));
    proxy.pass();
    assert_eq!(finish(head, Duration::from_secs(60)).0, 0);
    assert_eq!(finish(next, Duration::from_secs(60)).0, 0);
    assert_eq!(read_trimmed(&log), "head\nnext", "first come, first served");
    holder.stop();
}

/// (found by the generated family) Releasing one slot of a semaphore (`--slot 2
/// --if-dead`) must not let the name's kind go while another slot is held: the next
/// `--limit 2` run takes the free slot instead of being refused as if the name were a
/// plain lock.
#[test]
fn releasing_one_slot_keeps_the_semaphore_kind_while_another_is_held() {
    let redis = Redis::start();
    let s = Scratch::new();
    let a = args(&redis, "keep", &["--limit", "2", "--ttl", "60s"]);
    let live = parked(&a, &s, "live");
    assert!(eventually(READY, || has_started(&s, "live")));
    let mut dead = parked(&a, &s, "dead");
    assert!(eventually(READY, || has_started(&s, "dead")));
    let dead_cmd = read_pid(&s.path("dead.started"));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-dead_cmd),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = dead.kill();
    let _ = dead.wait();
    assert!(eventually(READY, || !alive(dead_cmd)));
    let out = output(redlock().args([
        "release",
        "keep",
        "--if-dead",
        "--slot",
        "2",
        "--redis",
        &redis.url(),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        redis.exists("redlock:{keep}:mode"),
        "the kind went with slot 1 held"
    );
    let (c, err) = try_once(&a, "true");
    assert_eq!(c, 0, "{err}");
    go(&s, "live");
    assert_eq!(finish(live, Duration::from_secs(30)).0, 0);
}

/// (3b) The release never reaches Redis (the link stays cut past the lease's end): the
/// run's record is missing, but its start mark, written with the acquisition, keeps the
/// slot closed: the next try in the slot does not run the job again. The run says so.
#[test]
fn once_per_keeps_the_slot_closed_when_the_release_never_arrives() {
    let redis = Redis::start();
    let (_, err) = once_per_run_cut_off(&redis, "opm", "2s", "200ms", None);
    assert!(err.contains("--once-per record was not written"), "{err}");
    assert_eq!(
        once_per_try(&redis, "opm"),
        codes::BUSY,
        "ran twice in one slot"
    );
}

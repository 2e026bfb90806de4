//! The life of a lease against real redis-server processes: renewal, loss, a
//! blackholed server, a killed or paused wrapper, `--hold-min`, re-entrancy,
//! script-cache flushes, dropped connections, `--on-lost keep` and the metadata.
//!
//! Rules these tests keep: children signal readiness with marker files (no fixed sleeps
//! before acting), and time is only ever compared as an order of events with wide
//! margins (e.g. "the child was dead before the key's server-side expiry"), never as a
//! duration threshold on a small number.

use std::io::Read;
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::*;

// Renewal ---------------------------------------------------------------------------

#[test]
fn renewal_keeps_the_lock_past_its_ttl() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("renewed");
    let (ready, done, token) = (s.path("ready"), s.path("done"), s.path("token"));
    let mut args = lock_args(&redis, "renewed");
    args.extend(["--ttl".into(), "1s".into()]);
    let run = start_run(
        &args,
        &format!(
            "echo \"$REDLOCK_TOKEN\" > '{token}'; touch '{ready}'; sleep 3; touch '{done}'",
            token = token.display(),
            ready = ready.display(),
            done = done.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let ready_at = Instant::now();
    let ours = read_trimmed(&token);

    // A contender that gets in while the child has not finished is an overlap: its
    // command fails with 99 then. Once the child wrote `done`, getting in is legitimate.
    let contender = format!("[ -e '{}' ] || exit 99", done.display());
    let mut busy = 0;
    let mut last_busy_after = Duration::ZERO;
    while !done.exists() {
        let (code, err) = try_once(&lock_args(&redis, "renewed"), &contender);
        match code {
            codes::BUSY => {
                busy += 1;
                last_busy_after = ready_at.elapsed();
            }
            0 => assert!(done.exists(), "contender ran before the holder finished"),
            other => panic!("contender exit {other}: {err}"),
        }
        // Paces the polling (a busy machine is shared); not a wait for an event.
        std::thread::sleep(Duration::from_millis(30));
        if !done.exists() {
            assert_eq!(get(&redis, &key).as_deref(), Some(ours.as_str()));
        }
    }
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    eprintln!("{busy} busy contenders; the last one {last_busy_after:?} after ready");
    assert!(busy >= 3, "only {busy} contenders ran during the hold");
    // Without renewal the key would have expired 1 s after the acquire; a contender was
    // still refused at twice that (the child sleeps 3 s, so the margin is wide).
    assert!(
        last_busy_after >= Duration::from_secs(2),
        "no contender was refused after 2 ttl ({last_busy_after:?})"
    );
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// Lost lock -------------------------------------------------------------------------

/// A holder whose child starts a grandchild in its process group and writes both pids;
/// returns (wrapper, child pid, grandchild pid, token).
fn holder_with_grandchild(redis: &Redis, name: &str, s: &Scratch) -> (Child, i32, i32, String) {
    let (ready, token) = (s.path("ready"), s.path("token"));
    let (cpid, gpid) = (s.path("cpid"), s.path("gpid"));
    let mut args = lock_args(redis, name);
    args.extend(["--ttl".into(), "3s".into()]);
    let run = start_run(
        &args,
        &format!(
            "sleep 1000 & echo $! > '{gpid}'; echo $$ > '{cpid}'
             echo \"$REDLOCK_TOKEN\" > '{token}'; touch '{ready}'; wait",
            gpid = gpid.display(),
            cpid = cpid.display(),
            token = token.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let (child, grandchild) = (read_pid(&cpid), read_pid(&gpid));
    assert!(alive(child) && alive(grandchild));
    (run, child, grandchild, read_trimmed(&token))
}

fn assert_lost(run: Child, child: i32, grandchild: i32) -> String {
    let (code, err) = finish(run, Duration::from_secs(30));
    eprintln!("wrapper stderr: {err}");
    assert_eq!(code, codes::LOST, "{err}");
    assert_eq!(lost_lines(&err), 1, "one line about the loss: {err}");
    assert!(
        eventually(Duration::from_secs(5), || !alive(child)
            && !alive(grandchild)),
        "child alive: {}, grandchild alive: {}",
        alive(child),
        alive(grandchild)
    );
    err
}

#[test]
fn deleted_key_is_lost_and_the_whole_group_stops() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("deleted");
    let (run, child, grandchild, _) = holder_with_grandchild(&redis, "deleted", &s);
    let _: i64 = redis.cmd(&["DEL", &key]);
    assert_lost(run, child, grandchild);
    assert!(!redis.exists(&key), "a lost lock was re-created");
    // Its metadata went with the release attempt, not a ttl later.
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn replaced_key_is_lost_and_the_new_value_survives_release() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("replaced");
    let (run, child, grandchild, ours) = holder_with_grandchild(&redis, "replaced", &s);
    assert_ne!(ours, "othertoken");
    let _: String = redis.cmd(&["SET", &key, "othertoken"]);
    assert_lost(run, child, grandchild);
    assert_eq!(get(&redis, &key).as_deref(), Some("othertoken"));
    assert_eq!(pttl(&redis, &key), -1, "the new value's ttl was touched");
    assert_eq!(redis.keys(), vec![key], "our metadata stayed behind");
}

// Blackholed server -----------------------------------------------------------------

#[test]
fn blackholed_server_child_dies_before_server_expiry() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("blackhole");
    let (ready, cpid, fifo) = (s.path("ready"), s.path("cpid"), s.path("alive"));
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    // The child (and every process it starts) holds the fifo's write end; the reader
    // sees EOF the instant the last of them is gone, which times the group's death
    // without polling. The child ignores SIGTERM, so only the SIGKILL before the lease
    // end can stop it: the strictest path of the termination schedule.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&fifo).expect("open fifo");
            let mut sink = Vec::new();
            f.read_to_end(&mut sink).ok();
            Instant::now()
        })
    };
    let mut args = lock_args(&redis, "blackhole");
    args.extend(
        [
            "--ttl",
            "2s",
            "--node-timeout",
            "200ms",
            "--kill-after",
            "300ms",
        ]
        .map(String::from),
    );
    let run = start_run(
        &args,
        &format!(
            "exec 3>'{fifo}'; trap '' TERM; echo $$ > '{cpid}'; touch '{ready}'
             while :; do sleep 0.05; done",
            fifo = fifo.display(),
            cpid = cpid.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let child = read_pid(&cpid);
    // Stop the server after a renewal, so the lease end comes from a renewal's send
    // time, not the acquire's.
    assert!(
        renewed_after_now(&redis, &key),
        "no renewal before the blackhole"
    );

    // The server's expiry is at least t0 + p: t0 is taken before the PTTL request is
    // sent, and a renewal arriving between PTTL and SIGSTOP only pushes it later.
    let t0 = Instant::now();
    let p = pttl(&redis, &key);
    redis.pause();
    assert!(p > 0, "pttl {p}");
    let expiry = t0 + Duration::from_millis(p as u64);

    let t1 = reader.join().expect("reader");
    assert!(!alive(child) || eventually(Duration::from_secs(2), || !alive(child)));
    eprintln!(
        "child gone {:?} after SIGSTOP; server expiry {:?} after SIGSTOP (pttl {p} ms)",
        t1 - t0,
        expiry - t0
    );
    assert!(
        t1 < expiry,
        "child outlived the key: died {:?} after the server-side expiry",
        t1 - expiry
    );
    let (status, err) = finish(run, Duration::from_secs(30));
    assert_eq!(status, codes::LOST, "{err}");
    assert_eq!(lost_lines(&err), 1, "{err}");

    redis.resume();
    acquires_later_and_leaves_nothing(&redis, "blackhole");
}

// kill -9 of the wrapper ------------------------------------------------------------

#[test]
fn killed_wrapper_takes_its_child_along_and_the_lock_expires() {
    killed_wrapper_takes_its_group_along("orphan", false);
}

/// A run that waited forked its guard while it waited, not before the spawn: the guard
/// still stops the command's group.
#[test]
fn killed_wrapper_that_waited_takes_its_child_along() {
    killed_wrapper_takes_its_group_along("orphan-waited", true);
}

fn killed_wrapper_takes_its_group_along(name: &str, after_waiting: bool) {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key(name);
    let (ready, cpid, token) = (s.path("ready"), s.path("cpid"), s.path("token"));
    let gpid = s.path("gpid");
    let mut args = lock_args(&redis, name);
    args.extend(["--ttl".into(), "3s".into()]);
    if after_waiting {
        // Held by someone else for a moment: the run waits, then takes it.
        let _: String = redis.cmd(&["SET", &key, "someone", "PX", "700"]);
        args.extend(["--wait".into(), "20s".into()]);
    }
    // The child starts a background job in its group: the parent-death signal reaches
    // only the child, so the job shows whether the whole group is stopped.
    let mut run = start_run(
        &args,
        &format!(
            "sleep 1000 & echo $! > '{gpid}'
             echo $$ > '{cpid}'; echo \"$REDLOCK_TOKEN\" > '{token}'; touch '{ready}'
             exec sleep 1000",
            gpid = gpid.display(),
            cpid = cpid.display(),
            token = token.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let (child, grandchild) = (read_pid(&cpid), read_pid(&gpid));
    let ours = read_trimmed(&token);
    run.kill().expect("kill -9 the wrapper");
    run.wait().ok();
    let stopped = eventually(Duration::from_secs(5), || {
        !alive(child) && !alive(grandchild)
    });
    let (c, g) = (alive(child), alive(grandchild));
    let _ = kill(Pid::from_raw(grandchild), Signal::SIGKILL);
    assert!(
        stopped,
        "outlived the wrapper: child {c}, background job {g}"
    );
    // Nobody released: the key is still ours until its ttl runs out.
    assert_eq!(get(&redis, &key), Some(ours));

    acquires_later_and_leaves_nothing(&redis, name);
}

// --hold-min ------------------------------------------------------------------------

#[test]
fn hold_min_keeps_the_key_after_a_short_job() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("cron");
    let token = s.path("token");
    let mut args = lock_args(&redis, "cron");
    args.extend(["--hold-min".into(), "3s".into()]);
    let out = output(redlock_run().args(&args).args([
        "--",
        "sh",
        "-c",
        &format!("echo \"$REDLOCK_TOKEN\" > '{}'; sleep 0.1", token.display()),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        get(&redis, &key),
        Some(read_trimmed(&token)),
        "key kept, ours"
    );
    let left = pttl(&redis, &key);
    assert!(0 < left && left <= 3000, "pttl {left}");
    let meta_left = pttl(&redis, &format!("{key}:meta"));
    assert!(0 < meta_left && meta_left <= 3000, "meta pttl {meta_left}");

    let (busy, err) = try_once(&lock_args(&redis, "cron"), "echo ran");
    assert_eq!(busy, codes::BUSY, "{err}");

    acquires_later_and_leaves_nothing(&redis, "cron");
}

// Re-entrancy -----------------------------------------------------------------------

#[test]
fn nested_run_with_our_token_runs_at_once_and_a_forged_one_does_not() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("nested");
    let (ready, go, token) = (s.path("ready"), s.path("go"), s.path("token"));
    let (inner, forged) = (s.path("inner"), s.path("forged"));
    let args = lock_args(&redis, "nested");
    let url = redis.url();
    let run = start_run(
        &args,
        &format!(
            "echo \"$REDLOCK_TOKEN\" > '{token}'
             '{bin}' --key nested --redis '{url}' --wait 0 -- sh -c 'exit 3'
             echo $? > '{inner}'
             REDLOCK_TOKEN=forged-token REDLOCK_TOKEN_NESTED=forged-token '{bin}' --key nested --redis '{url}' --wait 0 -- true
             echo $? > '{forged}'
             touch '{ready}'
             while [ ! -e '{go}' ]; do sleep 0.02; done",
            bin = RUN,
            token = token.display(),
            inner = inner.display(),
            forged = forged.display(),
            ready = ready.display(),
            go = go.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    assert_eq!(read_trimmed(&inner), "3", "the nested command's own status");
    assert_eq!(
        read_trimmed(&forged),
        codes::BUSY.to_string(),
        "a forged token got in"
    );
    assert_eq!(
        get(&redis, &key),
        Some(read_trimmed(&token)),
        "the nested run released the outer lock"
    );
    std::fs::write(&go, "").unwrap();
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn stale_token_of_a_finished_run_gets_no_bypass() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("stale");
    // A run that is over: its token is stale.
    let out = output(redlock_run().args(lock_args(&redis, "stale")).args([
        "--",
        "sh",
        "-c",
        "echo \"$REDLOCK_TOKEN\"",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stale = stdout(&out).trim().to_string();
    // Someone else holds the lock now.
    let _: String = redis.cmd(&["SET", &key, "othertoken", "PX", "10000"]);
    let ran = s.path("ran");
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "stale"))
            .env("REDLOCK_KEY", &key)
            .env("REDLOCK_TOKEN", &stale)
            .args(["--wait", "0", "--", "touch"])
            .arg(&ran),
    );
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    assert!(!ran.exists(), "the command ran without the lock");
    assert_eq!(get(&redis, &key).as_deref(), Some("othertoken"));
}

// Script cache flushed, connection killed ------------------------------------------

#[test]
fn script_flush_during_a_hold_is_no_loss() {
    let redis = Redis::start();
    let key = lock_key("flushed");
    // ttl 3 s: the reload after NOSCRIPT costs extra round trips inside one node
    // timeout (ttl/15), which a 1 s ttl makes tight on a loaded machine.
    let mut args = lock_args(&redis, "flushed");
    args.extend(["--ttl".into(), "3s".into()]);
    let holding = Holding::start(&args);
    let ours = holding.token();
    let renew_sha = redlock::scripts::renew::RENEW.sha().to_string();
    for _ in 0..3 {
        let _: String = redis.cmd(&["SCRIPT", "FLUSH"]);
        assert!(
            renewed_after_now(&redis, &key),
            "no renewal after SCRIPT FLUSH"
        );
        let loaded: Vec<i64> = redis.cmd(&["SCRIPT", "EXISTS", &renew_sha]);
        assert_eq!(loaded, vec![1], "the renewal script was not reloaded");
        assert_eq!(get(&redis, &key).as_deref(), Some(ours.as_str()));
    }
    // The release script must load itself too: by EVAL with its text, one round trip
    // (no SCRIPT LOAD).
    let _: String = redis.cmd(&["SCRIPT", "FLUSH"]);
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(lost_lines(&err), 0, "{err}");
    let stats: String = redis.cmd(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_eval:calls="), "{stats}");
    assert!(!stats.contains("cmdstat_script|load"), "{stats}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn killed_connection_during_a_hold_reconnects() {
    let redis = Redis::start();
    let key = lock_key("reset");
    let mut args = lock_args(&redis, "reset");
    args.extend(["--ttl".into(), "2s".into()]);
    let holding = Holding::start(&args);
    let ours = holding.token();
    for _ in 0..3 {
        // SKIPME defaults to yes: the test's own connection survives.
        let killed: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
        assert!(killed >= 1, "no connection of the holder was killed");
        assert!(
            renewed_after_now(&redis, &key),
            "no renewal after CLIENT KILL"
        );
        assert_eq!(get(&redis, &key).as_deref(), Some(ours.as_str()));
    }
    let _: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(lost_lines(&err), 0, "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// --on-lost keep, and what the metadata records ------------------------------------------

#[test]
fn on_lost_keep_lets_the_command_finish_and_says_so() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("kept");
    let (ready, go, done) = (s.path("ready"), s.path("go"), s.path("done"));
    let errors = s.path("stderr");
    let mut run = redlock_run()
        .args(lock_args(&redis, "kept"))
        .args(["--ttl", "1s", "--on-lost", "keep", "--", "sh", "-c"])
        .arg(format!(
            "touch '{ready}'; while [ ! -e '{go}' ]; do sleep 0.02; done; touch '{done}'",
            ready = ready.display(),
            go = go.display(),
            done = done.display()
        ))
        .stderr(std::fs::File::create(&errors).unwrap())
        .spawn()
        .expect("spawn redlock-run");
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let _: i64 = redis.cmd(&["DEL", &key]);
    // The wrapper says so while the command still runs; the command goes on.
    assert!(
        wait_for_file(&errors, "WITHOUT the lock", READY),
        "no warning: {:?}",
        std::fs::read_to_string(&errors)
    );
    std::fs::write(&go, "").unwrap();
    let status = wait_child(&mut run, Duration::from_secs(30));
    let (code, err) = (
        status.code().unwrap(),
        std::fs::read_to_string(&errors).unwrap(),
    );
    assert!(
        done.exists(),
        "the command was stopped despite --on-lost keep"
    );
    assert_eq!(code, codes::LOST, "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("lost")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("WITHOUT the lock"), "{err}");
    assert!(!redis.exists(&key), "a lost lock must not be re-created");
}

#[test]
fn metadata_records_the_command_without_secrets() {
    let redis = Redis::start();
    let meta = format!("{}:meta", lock_key("meta"));
    let read_cmd = format!("redis-cli -p {} hget '{meta}' cmd", redis.port);
    let recorded = |extra: &[&str]| {
        let out = output(
            redlock_run()
                .args(lock_args(&redis, "meta"))
                .args(extra)
                .args(["--", "sh", "-c", &read_cmd, "job", "--password=hunter2"]),
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    let full = recorded(&[]);
    // Quoted as typed, so it can be read (and pasted) back.
    assert!(full.starts_with("sh -c 'redis-cli"), "{full}");
    assert!(full.ends_with("job '--password=***'"), "{full}");
    assert!(!full.contains("hunter2"), "{full}");
    assert_eq!(recorded(&["--hide-args"]), "sh");
}

// The wrapper itself paused (SIGSTOP, a hang) ----------------------------------------------

/// A stopped wrapper renews nothing, but its group guard holds the lease's end: the
/// command is dead by the time the key expires, and the wrapper, when it runs again,
/// says it was stopped (not that renewals failed) and exits 79. (`paused.rs` measures
/// the order against the key's expiry and the next holder over many trials.)
#[test]
fn paused_wrapper_has_its_command_stopped_by_its_guard() {
    let redis = Redis::start();
    let s = Scratch::new();
    let (ready, cpid) = (s.path("ready"), s.path("cpid"));
    let (ready_file, metrics) = (s.path("ready-file"), s.path("frozen.prom"));
    let mut args = lock_args(&redis, "frozen");
    args.extend(["--ttl".into(), "1s".into()]);
    args.extend(["--ready-file".into(), ready_file.display().to_string()]);
    args.extend(["--metrics".into(), metrics.display().to_string()]);
    let run = start_run(
        &args,
        &format!(
            "echo $$ > '{cpid}'; touch '{ready}'; exec sleep 1000",
            cpid = cpid.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    let child = read_pid(&cpid);
    let wrapper = nix::unistd::Pid::from_raw(run.id() as i32);
    nix::sys::signal::kill(wrapper, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Stopped past the lease: the key expires on the server meanwhile.
    assert!(
        eventually(Duration::from_secs(10), || !redis
            .exists(&lock_key("frozen"))),
        "the key outlived its ttl"
    );
    assert!(
        !alive(child),
        "the command outlived its lease while its wrapper was stopped"
    );
    // And what operators read says so while the wrapper is still stopped: no ready
    // file, not running.
    assert!(!ready_file.exists(), "a ready file for a dead command");
    let said = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        said.contains("redlock_running{name=\"frozen\"} 0"),
        "{said}"
    );
    nix::sys::signal::kill(wrapper, nix::sys::signal::Signal::SIGCONT).unwrap();
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, codes::LOST, "{err}");
    assert_eq!(lost_lines(&err), 1, "{err}");
    assert!(err.contains("the wrapper was stopped for"), "{err}");
    assert!(!err.contains("renewals failed"), "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// A lock found lost only at the release -----------------------------------------------

/// The key vanishes (deleted, expired, or taken over) while the command runs and the
/// command ends before the next renewal: only the release finds out. Exclusion may
/// have been broken, so the run must exit with the lost-lock code, with one line.
#[test]
fn a_lock_found_lost_at_the_release_exits_with_the_lost_code() {
    let redis = Redis::start();
    for (name, how) in [("deleted", "DEL"), ("expired", "PEXPIRE"), ("taken", "SET")] {
        let key = lock_key(name);
        let mut args = lock_args(&redis, name);
        args.extend(["--ttl".into(), "60s".into()]);
        let holding = Holding::start(&args);
        match how {
            "DEL" => {
                let _: i64 = redis.cmd(&["DEL", &key]);
            }
            "PEXPIRE" => {
                let _: i64 = redis.cmd(&["PEXPIRE", &key, "1"]);
                assert!(eventually(Duration::from_secs(5), || !redis.exists(&key)));
            }
            _ => {
                let _: () = redis.cmd(&["SET", &key, "someone-else", "PX", "60000"]);
            }
        }
        let (code, err) = holding.finish();
        assert_eq!(code, codes::LOST, "{name}: {err}");
        assert_eq!(lost_lines(&err), 1, "{name}: one line says so: {err}");
        if how == "SET" {
            assert_eq!(get(&redis, &key).as_deref(), Some("someone-else"));
            let _: i64 = redis.cmd(&["DEL", &key]);
        }
        assert!(redis.keys().is_empty(), "{name}: {:?}", redis.keys());
    }
}

/// Redis stays up but every connection is killed every 150 ms: a failed renewal is
/// retried at once on a fresh connection, so a 2 s holder keeps its lock.
/// A release whose reply was lost (the script ran, then the connection dropped) is
/// tried again, and the retry finds the key gone. It is the run's own release, not a
/// lost lock: the retry finds its record in the history and says released (3), and
/// writes no second record. A run whose first try found the lock lost stays lost (0).
/// (The nemesis suite saw the false loss, exit 79, about once in 400 releases with
/// connections killed; here the retry is the script run twice.)
#[test]
fn a_retried_release_after_a_lost_reply_is_not_a_lost_lock() {
    let redis = Redis::start();
    use redlock::scripts::release::{self, Outcome, Record, Request};
    let release = |name: &str, token: &str| -> Outcome {
        let keys = redlock::keys::LockKeys::new("redlock:", name.as_bytes()).unwrap();
        let head = format!(r#"{{"token":"{token}""#);
        let request = Request {
            keys: &keys,
            wakes_head: false,
            token,
            keep_ms: 0,
            inside: false,
            retain_ms: 60_000,
            once_per: false,
            untell: false,
            once_key: None,
            record: Some(Record {
                size: 20,
                head: &head,
                held_ms: 5,
                start_ms: 0,
                status: 0,
                status_if_lost: 79,
                lost: false,
            }),
        };
        let reply = request
            .call(false)
            .eval()
            .query(&mut redis.conn())
            .expect("release script");
        release::decode(reply).expect("a release reply").0
    };
    let _: () = redis.cmd(&["SET", &lock_key("done"), "tok-1", "PX", "30000"]);
    assert_eq!(
        release("done", "tok-1"),
        Outcome::Deleted,
        "the first try deletes"
    );
    assert_eq!(
        release("done", "tok-1"),
        Outcome::AlreadyReleased,
        "the retry: released by us"
    );
    let history = format!("{}:history", lock_key("done"));
    assert_eq!(redis.cmd::<i64>(&["LLEN", &history]), 1, "one record");
    // Lost before the release: both tries say not ours.
    assert_eq!(release("gone", "tok-2"), Outcome::NotOurs);
    assert_eq!(release("gone", "tok-2"), Outcome::NotOurs);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn renewals_survive_connections_killed_every_150ms() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "flaky");
    args.extend(["--ttl".into(), "2s".into()]);
    let holding = Holding::start(&args);
    let killer_conn = redis.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_flag = stop.clone();
    let killer = std::thread::spawn(move || {
        let client = redis::Client::open(killer_conn).unwrap();
        let mut conn = client.get_connection().unwrap();
        let mut kills = 0;
        // Six ttls' worth, bounded in count.
        for _ in 0..80 {
            if stop_flag.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("normal")
                .arg("SKIPME")
                .arg("yes")
                .query(&mut conn);
            kills += 1;
            std::thread::sleep(Duration::from_millis(150));
        }
        kills
    });
    let kills = killer.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(kills >= 40, "{kills}");
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
    assert_eq!(lost_lines(&err), 0, "{err}");
}

// --max-hold ------------------------------------------------------------------------------

/// `--max-hold 1s` on a command that would run a minute: renewals stop, the command is
/// stopped (it sees SIGTERM), the lock is given up, one line says why, exit 124.
#[test]
fn max_hold_stops_the_command_and_gives_the_lock_up() {
    let redis = Redis::start();
    let s = Scratch::new();
    let stopped = s.path("stopped");
    let mut args = lock_args(&redis, "bounded");
    args.extend([
        "--ttl".into(),
        "30s".into(),
        "--max-hold".into(),
        "1s".into(),
    ]);
    let out = output_within(
        redlock_run().args(&args).args([
            "--",
            "sh",
            "-c",
            &format!(
                "trap 'echo stopped > {}; exit 0' TERM; sleep 60 & wait",
                stopped.display()
            ),
        ]),
        Duration::from_secs(30),
    );
    let err = stderr(&out);
    assert_eq!(code(&out), codes::MAX_HOLD, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--max-hold of 1s"), "{err}");
    assert!(stopped.exists(), "the command was not stopped by SIGTERM");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// Fencing numbers ---------------------------------------------------------------------

/// The fencing number grows with every acquisition, also across a holder killed with
/// SIGKILL (its lock expires; the next holder's number is larger), and `status` and
/// `acquire --json` show it.
#[test]
fn fencing_numbers_grow_across_a_killed_holder() {
    let redis = Redis::start();
    let s = Scratch::new();
    let fence_of = |file: &str| -> u64 {
        std::fs::read_to_string(s.path(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let record = |file: &str| format!("echo \"$REDLOCK_FENCE\" > '{}'", s.path(file).display());
    let mut args = lock_args(&redis, "fenced");
    args.extend(["--ttl".into(), "1s".into()]);
    let (first_code, err) = try_once(&args, &record("first"));
    assert_eq!(first_code, 0, "{err}");
    let first = fence_of("first");
    assert!(first >= 1);

    let holding = Holding::start(&args);
    let status = output(redlock().args(["status", "fenced", "--json", "--redis", &redis.url()]));
    let killed_fence =
        serde_json::from_str::<serde_json::Value>(&stdout(&status)).unwrap()["holder"]["fence"]
            .as_u64()
            .expect("status shows the fence");
    assert!(killed_fence > first);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holding.wrapper_pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = holding.wait();
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "20s".into()]);
    let out = output_within(
        redlock_run()
            .args(&wargs)
            .args(["--", "sh", "-c", &record("after")]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        fence_of("after") > killed_fence,
        "the killed holder's number came back"
    );

    let out = output(redlock().args([
        "acquire",
        "fenced",
        "--json",
        "--redis",
        &redis.url(),
        "--ttl",
        "1m",
    ]));
    let acquired: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        acquired["fence"].as_u64().unwrap() > fence_of("after"),
        "{acquired}"
    );
    let _: i64 = redis.cmd(&[
        "DEL",
        &lock_key("fenced"),
        &format!("{}:meta", lock_key("fenced")),
    ]);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// --events --------------------------------------------------------------------------------

/// The events of a run, parsed line by line (each must be one JSON object with
/// `ts_ms`, `event` and `name`).
fn events(path: &std::path::Path, name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert!(v["ts_ms"].as_u64().is_some(), "{line}");
            assert_eq!(v["name"], name, "{line}");
            v
        })
        .collect()
}

fn kinds_of(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect()
}

/// `--events FILE`: a run that waits, holds through renewals and releases writes
/// waiting, acquired, renewed…, released, exited; a run that loses its lock writes
/// acquired, lost, exited with status 79.
#[test]
fn events_cover_a_whole_run_and_a_lost_one() {
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("events.jsonl");
    let holder = Holding::start(&lock_args(&redis, "ev"));
    let mut args = lock_args(&redis, "ev");
    args.extend(
        ["--ttl", "1s", "--wait", "30s", "--events"]
            .iter()
            .map(|a| a.to_string()),
    );
    args.push(file.display().to_string());
    let run = start_run(&args, "sleep 1.5");
    assert!(
        wait_for_file(&file, "\"waiting\"", READY),
        "no waiting event"
    );
    let (code_, err) = holder.finish();
    assert_eq!(code_, 0, "{err}");
    let (code_, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code_, 0, "{err}");
    let seen = events(&file, "ev");
    let kinds = kinds_of(&seen);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("waiting"),
        "{kinds:?}"
    );
    assert_eq!(kinds[1], "acquired", "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "renewed"), "{kinds:?}");
    assert_eq!(
        &kinds[kinds.len() - 2..],
        ["released", "exited"],
        "{kinds:?}"
    );
    assert!(seen[1]["fence"].as_u64().unwrap() >= 2, "{}", seen[1]);
    assert_eq!(seen.last().unwrap()["status"], 0);

    let lost_file = s.path("lost.jsonl");
    let mut args = lock_args(&redis, "ev-lost");
    args.extend(["--ttl".into(), "1s".into(), "--events".into()]);
    args.push(lost_file.display().to_string());
    let holding = Holding::start(&args);
    let _: i64 = redis.cmd(&["DEL", &lock_key("ev-lost")]);
    let out = holding.wait();
    assert_eq!(out.status.code(), Some(codes::LOST));
    let seen = events(&lost_file, "ev-lost");
    let kinds = kinds_of(&seen);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("acquired"),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k == "lost"), "{kinds:?}");
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("exited"),
        "{kinds:?}"
    );
    assert_eq!(seen.last().unwrap()["status"], codes::LOST);
}

/// (newcomer-5, F) What the FAQ's "What if Redis restarts?" says, as it happens: a
/// server restarted without persistence comes back empty, another run takes the lock
/// at once, with a larger fence; the holder finds its key gone at its next renewal
/// (ttl/3), stops its command and exits 79 with one line. The other run's host talked
/// to the server before (the holder kept its run ID): it starts its command only after
/// the lock-delay, so after the holder's stopped.
#[test]
fn a_redis_restart_without_persistence_is_79_at_the_next_renewal_as_the_faq_says() {
    let faq = doc("docs/faq.md");
    let entry = faq
        .split("<a id=\"redis-restarts\"></a>")
        .nth(1)
        .expect("the FAQ answers \"What if Redis restarts?\"");
    let entry = entry.split("<a id=").next().unwrap();
    for says in [
        "## What if Redis restarts?",
        "next\nrenewal (every ttl/3",
        "exits **79**",
        "**lock-delay**",
        "never talked to the server before it restarted",
        "`redlock doctor`",
        "(operations/deployments.md#one-server)",
        "two runs overlap",
    ] {
        assert!(entry.contains(says), "the entry lacks {says:?}:\n{entry}");
    }

    let mut redis = Redis::start();
    let s = Scratch::new();
    let fence = s.path("fence1");
    let (ready, second) = (s.path("ready"), s.path("fence2"));
    let mut args = lock_args(&redis, "rr");
    args.extend(["--ttl".into(), "3s".into()]);
    let first = start_run(
        &args,
        &format!(
            "echo $REDLOCK_FENCE > '{}'; touch '{}'; sleep 30",
            fence.display(),
            ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "never ran");
    let renewed = wall_ms();
    redis.restart();
    // Another run takes the lock at once (the key is gone), and waits out the lock-delay.
    let other = start_run(
        &args,
        &format!("echo $REDLOCK_FENCE > '{}'", second.display()),
    );
    let (code1, err1) = finish(first, Duration::from_secs(30));
    let lost_after = wall_ms() - renewed;
    assert!(!second.exists(), "the other run started beside the holder");
    assert_eq!(code1, codes::LOST, "{err1}");
    assert_eq!(lost_lines(&err1), 1, "{err1}");
    assert!(
        err1.contains("the key is gone or holds another token"),
        "{err1}"
    );
    // At its next renewal: within ttl/3 (1 s) of the restart, plus the test's slack.
    assert!(lost_after < 3000.0, "79 after {lost_after} ms");
    let (code2, err2) = finish(other, Duration::from_secs(30));
    assert_eq!(code2, 0, "{err2}");
    assert!(err2.contains("(lock-delay, ttl 3s)"), "{err2}");
    let (f1, f2): (u64, u64) = (
        read_trimmed(&fence).parse().unwrap(),
        read_trimmed(&second).parse().unwrap(),
    );
    assert!(f2 > f1, "fences {f1} then {f2}");
}

/// A wrapper that is running stops its command itself when renewals fail (Redis
/// stopped), and tells its group guard so: the command gets one SIGTERM, not a second
/// from the guard at the same SIGTERM point.
#[test]
fn a_lost_lock_sends_one_sigterm_with_the_guard_standing_by() {
    let redis = Redis::start();
    let s = Scratch::new();
    let (ready, terms) = (s.path("ready"), s.path("terms"));
    let mut args = lock_args(&redis, "one-term");
    args.extend(["--ttl".into(), "1s".into()]);
    let run = start_run(
        &args,
        &format!(
            "trap 'echo TERM >> {terms}' TERM; touch '{ready}'; while :; do sleep 0.02; done",
            terms = terms.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "child never got ready");
    redis.pause();
    let (code, err) = finish(run, Duration::from_secs(30));
    redis.resume();
    assert_eq!(code, codes::LOST, "{err}");
    assert!(err.contains("renewals failed"), "{err}");
    let got = std::fs::read_to_string(&terms).unwrap_or_default();
    assert_eq!(got.lines().count(), 1, "SIGTERMs the command got: {got:?}");
}

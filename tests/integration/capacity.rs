//! Capacity: semaphores (`--limit N`): never more than N holders, each in its own slot
//! with its own token; a killed holder's slot comes back after its ttl; every run on a
//! name agrees on N; status, list and release show and name the slots.

use std::time::Duration;

use crate::harness::*;

/// What a semaphore workload saw (see [`contend_limited`]).
#[derive(Debug, Default)]
struct Concurrency {
    sections: usize,
    /// The most holders inside at once, by log order.
    max_inside: usize,
    /// A BEGIN on a slot another holder was still inside.
    slot_overlaps: usize,
    /// A BEGIN whose REDLOCK_SLOT was outside 1..=N.
    bad_slots: usize,
    duplicate_tokens: usize,
    failures: Vec<i32>,
}

/// `procs` processes each run `rounds` sections under `--limit limit --wait forever`;
/// each section appends `BEGIN token slot` and, after a short pause (so that holders
/// meet), `END token slot` to one O_APPEND log. The log's order is the real order.
fn contend_limited(args: &[String], procs: usize, rounds: usize, limit: usize) -> Concurrency {
    let scratch = Scratch::new();
    let log = scratch.path("log");
    let child = scratch.script(
        "section",
        &format!(
            "echo \"BEGIN $REDLOCK_TOKEN $REDLOCK_SLOT\" >> '{log}'\n\
             sleep 0.02\n\
             echo \"END $REDLOCK_TOKEN $REDLOCK_SLOT\" >> '{log}'",
            log = log.display()
        ),
    );
    let workers: Vec<_> = (0..procs)
        .map(|_| {
            let mut args = args.to_vec();
            args.extend(["--limit".into(), limit.to_string()]);
            let child = child.clone();
            std::thread::spawn(move || {
                (0..rounds)
                    .map(|_| {
                        let out = output_within(
                            redlock_run()
                                .args(&args)
                                .args(["--wait", "forever", "--"])
                                .arg(&child),
                            Duration::from_secs(120),
                        );
                        out.status.code().unwrap_or(-1)
                    })
                    .filter(|code| *code != 0)
                    .collect::<Vec<i32>>()
            })
        })
        .collect();
    let mut seen = Concurrency::default();
    for w in workers {
        seen.failures.extend(w.join().expect("worker"));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut inside: Vec<(String, String)> = Vec::new();
    let mut tokens = std::collections::HashSet::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (what, token, slot) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        match what {
            "BEGIN" => {
                if !tokens.insert(token.clone()) {
                    seen.duplicate_tokens += 1;
                }
                if !slot
                    .parse::<usize>()
                    .is_ok_and(|s| (1..=limit).contains(&s))
                {
                    seen.bad_slots += 1;
                }
                if inside.iter().any(|(_, s)| *s == slot) {
                    seen.slot_overlaps += 1;
                }
                inside.push((token, slot));
                seen.max_inside = seen.max_inside.max(inside.len());
            }
            "END" => {
                inside.retain(|(t, _)| *t != token);
                seen.sections += 1;
            }
            _ => {}
        }
    }
    seen
}

/// 16 processes, N = 3, 608 sections: never more than 3 inside at once (and 3 is
/// reached), never two in one slot, every token new, every run exit 0, nothing left.
#[test]
fn never_more_than_n_hold_a_semaphore() {
    let redis = Redis::start();
    let c = contend_limited(&lock_args(&redis, "runners"), 16, 38, 3);
    eprintln!("semaphore contention, N = 3: {c:?}");
    assert_eq!(c.sections, 608, "{c:?}");
    assert_eq!(c.max_inside, 3, "{c:?}");
    assert_eq!(
        (c.slot_overlaps, c.bad_slots, c.duplicate_tokens),
        (0, 0, 0),
        "{c:?}"
    );
    assert!(c.failures.is_empty(), "{c:?}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// A holder killed outright keeps its slot until its ttl; then a waiter gets that slot.
#[test]
fn a_killed_holders_slot_comes_back_after_its_ttl() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "pool");
    args.extend(["--limit", "2", "--ttl", "1s"].map(String::from));
    let first = Holding::start(&args);
    let second = Holding::start(&args);
    let pttl_of = |slot: &str| redis.pttl(&format!("{}{slot}", lock_key("pool")));
    assert!(pttl_of("") > 0 && pttl_of(":slot:2") > 0);
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 75, "{err}");
    assert!(err.contains("all 2 slots held"), "{err}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.wrapper_pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let s = Scratch::new();
    let got = s.path("slot");
    let waiter = start_run(
        &[args.clone(), vec!["--wait".into(), "20s".into()]].concat(),
        &format!("echo $REDLOCK_SLOT > '{}'", got.display()),
    );
    let (code, err) = finish(waiter, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert_eq!(read_trimmed(&got), "1", "the killed holder's slot");
    let _ = first.wait();
    let (code, err) = second.finish();
    assert_eq!(code, 0, "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// A run nested inside a semaphore holder's command (same name and N) runs at once in
/// its parent's slot, whichever slot that is, instead of waiting for a slot of its own.
#[test]
fn a_nested_run_reenters_its_parents_slot() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "nest");
    args.extend(["--limit".into(), "2".into()]);
    let first = Holding::start(&args);
    let inner = format!(
        "{RUN} --key nest --redis {} --limit 2 -- sh -c 'echo inner in slot $REDLOCK_SLOT >&2'",
        redis.url()
    );
    let (code, err) = try_once(&args, &inner);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("inner in slot 2"), "{err}");
    assert_eq!(first.finish().0, 0);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// Runs on one name agree on N: another N, or a plain run, is a usage error (64) with
/// one line naming both, and touches nothing; N = 1 is a plain lock.
#[test]
fn every_run_on_a_name_agrees_on_n() {
    let redis = Redis::start();
    let mut three = lock_args(&redis, "deploys");
    three.extend(["--limit".into(), "3".into()]);
    let holder = Holding::start(&three);
    let before = redis.keys();
    let mut two = lock_args(&redis, "deploys");
    two.extend(["--limit".into(), "2".into()]);
    let (code, err) = try_once(&two, "echo ran");
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("semaphore of 3 slots (--limit 3)") && err.contains("--limit 2"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, err) = try_once(&lock_args(&redis, "deploys"), "echo ran");
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("asked for a plain lock"), "{err}");
    assert_eq!(redis.keys(), before, "a refused run touches nothing");
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    // A plain holder: a semaphore run is refused too.
    let plain = Holding::start(&lock_args(&redis, "deploys"));
    let (code, err) = try_once(&three, "echo ran");
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("a plain lock (no --limit"), "{err}");
    let (code, err) = plain.finish();
    assert_eq!(code, 0, "{err}");
    let mut one = lock_args(&redis, "deploys");
    one.extend(["--limit".into(), "1".into()]);
    assert_eq!(try_once(&one, "true").0, 0);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// `status` and `list` show "2 of 3 slots held" and each holder; `release --slot K`
/// names the slot, and its holder finds the lock lost at its release (79).
#[test]
fn status_list_and_release_show_the_slots() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "ci");
    args.extend(["--limit".into(), "3".into()]);
    let a = Holding::start(&args);
    let b = Holding::start(&args);
    let conn = ["--redis".to_string(), redis.url()];
    let out = output(redlock().args(["status", "ci"]).args(&conn));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("ci: 2 of 3 slots held\n"), "{text}");
    assert!(text.contains("\n  slot 3: free"), "{text}");
    let out = output(redlock().args(["status", "ci", "--json"]).args(&conn));
    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (doc["limit"].as_u64(), doc["held"].as_u64()),
        (Some(3), Some(2))
    );
    let slots = doc["slots"].as_array().unwrap();
    let pids: Vec<_> = slots.iter().map(|s| s["holder"]["pid"].as_u64()).collect();
    assert!(pids.contains(&Some(u64::from(a.wrapper_pid()))), "{doc}");
    assert!(pids.contains(&Some(u64::from(b.wrapper_pid()))), "{doc}");
    assert!(slots[2]["holder"].is_null(), "{doc}");
    let out = output(redlock().args(["list"]).args(&conn));
    assert!(
        stdout(&out).starts_with("ci\t2 of 3 slots held: slot 1: "),
        "{}",
        stdout(&out)
    );
    let (slot1, slot2) = if pids[0] == Some(u64::from(a.wrapper_pid())) {
        (a, b)
    } else {
        (b, a)
    };
    // Slot 1 free: the semaphore is still listed (found by its mode key).
    let (code1, err) = slot1.finish();
    assert_eq!(code1, 0, "{err}");
    let out = output(redlock().args(["list"]).args(&conn));
    assert!(
        stdout(&out).starts_with("ci\t1 of 3 slots held: slot 2: "),
        "{}",
        stdout(&out)
    );
    let out = output(
        redlock()
            .args(["release", "ci", "--slot", "2", "--force"])
            .args(&conn),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("removed ci slot 2: it was held by "),
        "{}",
        stdout(&out)
    );
    let (code2, err) = slot2.finish();
    assert_eq!(code2, 79, "the holder whose slot was removed: {err}");
    let out = output(redlock().args(["list"]).args(&conn));
    assert_eq!(stdout(&out), "", "nobody holds a slot any more");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// A fair queue (--fair) ------------------------------------------------------------------

/// The tokens waiting in `name`'s fair queue.
fn queued(redis: &Redis, name: &str) -> usize {
    redis.cmd::<i64>(&["ZCARD", &format!("{}:queue", lock_key(name))]) as usize
}

/// Starts `n` fair waiters one after the other, each once the previous one is in line
/// (arrival order is then known); each appends its index to `order` and exits.
fn line_up(
    args: &[String],
    redis: &Redis,
    name: &str,
    order: &std::path::Path,
    n: usize,
) -> Vec<std::process::Child> {
    let before = queued(redis, name);
    (0..n)
        .map(|i| {
            let waiter = start_run(args, &format!("echo {i} >> '{}'", order.display()));
            assert!(
                eventually(READY, || queued(redis, name) == before + i + 1),
                "waiter {i} never joined the queue"
            );
            waiter
        })
        .collect()
}

/// Ten waiters started in a known order get the lock in that order, every time, over
/// twenty rounds; nothing is left behind.
#[test]
fn fair_waiters_get_the_lock_in_arrival_order() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "deploy");
    args.extend(["--fair".into(), "--ttl".into(), "30s".into()]);
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into()]);
    for round in 0..20 {
        let order = s.path(&format!("order{round}"));
        let holder = Holding::start(&args);
        let waiters = line_up(&wargs, &redis, "deploy", &order, 10);
        let (code, err) = holder.finish();
        assert_eq!(code, 0, "{err}");
        for waiter in waiters {
            let (code, err) = finish(waiter, Duration::from_secs(60));
            assert_eq!(code, 0, "round {round}: {err}");
        }
        let got: Vec<String> = read_trimmed(&order).lines().map(String::from).collect();
        let want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(got, want, "round {round}");
    }
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// A waiter killed (SIGKILL) in the middle of the queue holds the line for at most its
/// heartbeat: the one behind it gets the lock no later than the dead waiter's heartbeat
/// deadline (plus a second for the last round trips), by the server's own clock.
#[test]
fn a_killed_waiter_holds_the_line_for_at_most_its_heartbeat() {
    let redis = Redis::start();
    let s = Scratch::new();
    let order = s.path("order");
    let mut args = lock_args(&redis, "line");
    args.push("--fair".into());
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let mut waiters = line_up(&wargs, &redis, "line", &order, 3);
    let queue = format!("{}:queue", lock_key("line"));
    let dead: String = redis.cmd::<Vec<String>>(&["ZRANGE", &queue, "1", "1"])[0].clone();
    let mut middle = waiters.remove(1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(middle.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_child(&mut middle, Duration::from_secs(10));
    // Its last promise to come back (server time, ms): it cannot renew it any more.
    let beats = format!("{}:beats", lock_key("line"));
    let deadline: f64 = redis
        .cmd::<String>(&["ZSCORE", &beats, &dead])
        .parse()
        .unwrap();
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    for waiter in waiters {
        let (code, err) = finish(waiter, Duration::from_secs(60));
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(read_trimmed(&order), "0\n2");
    let runs: Vec<String> =
        redis.cmd(&["LRANGE", &format!("{}:history", lock_key("line")), "0", "0"]);
    let last: serde_json::Value = serde_json::from_str(&runs[0]).unwrap();
    let started = last["start_ms"].as_f64().unwrap();
    assert!(
        started <= deadline + 1000.0,
        "the last waiter got the lock {} ms after the dead one's heartbeat ran out",
        started - deadline
    );
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// Each waiter says its place when it starts waiting ("you are #3 of 3"); `status` lists the queue in order (text and JSON); a plain run on
/// the name is refused while the queue is in use, and so is a fair run beside a plain
/// holder.
#[test]
fn fair_waiters_see_their_place_and_status_lists_the_queue() {
    let redis = Redis::start();
    let s = Scratch::new();
    let order = s.path("order");
    let mut args = lock_args(&redis, "prod");
    args.push("--fair".into());
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let waiters = line_up(&wargs, &redis, "prod", &order, 3);
    let conn = ["--redis".to_string(), redis.url()];
    let out = output(redlock().args(["status", "prod"]).args(&conn));
    let text = stdout(&out);
    assert!(
        text.contains("\n  queue:   3 waiting (--fair)\n    #1 "),
        "{text}"
    );
    assert!(text.contains("\n    #3 "), "{text}");
    let out = output(redlock().args(["status", "prod", "--json"]).args(&conn));
    let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let pids: Vec<u64> = doc["queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["pid"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = waiters.iter().map(|w| u64::from(w.id())).collect();
    assert_eq!(pids, want, "{doc}");
    let (code, err) = try_once(&lock_args(&redis, "prod"), "true");
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("a fair queue (--fair)"), "{err}");
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    let mut errs = Vec::new();
    for waiter in waiters {
        let (code, err) = finish(waiter, Duration::from_secs(60));
        assert_eq!(code, 0, "{err}");
        errs.push(err);
    }
    for (i, err) in errs.iter().enumerate() {
        let first = err.lines().next().unwrap_or("");
        let place = format!("; you are #{} of {}; ", i + 1, i + 1);
        assert!(
            first.starts_with("redlock-run: waiting for prod: held by "),
            "{err}"
        );
        assert!(first.contains(&place), "waiter {i}: {err}");
    }
    // Only the head is woken at a release: the others learn their new place at their
    // next try (at least every heartbeat), not at every hand-over.
    // A plain holder: a fair run is refused.
    let plain = Holding::start(&lock_args(&redis, "prod"));
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("a plain lock"), "{err}");
    assert_eq!(plain.finish().0, 0);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

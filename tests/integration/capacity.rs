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

//! CI "newest wins" (`--supersede waiting|running`, `--order-key`, `--uninterruptible`,
//! `redlock preempt`): the newest waiter runs, the others exit 73 at once; a preempted
//! holder stops gracefully before the newcomer starts; an older order key never runs
//! after a newer one. Hosts are UTS namespaces where `unshare` may run.
//!
//! CI runs a few rounds of each; `REDLOCK_FULL_FIGURES=1` runs the figures (50
//! rounds of 20 waiters, 200 preemptions, 200 uninterruptible rounds, 100 shuffled
//! order-key trials, 500 cancelled waiters) and prints them.

use std::process::{Child, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::harness::nemesis::summary;
use crate::harness::*;

/// A file of `date +%s%N`, in ms.
fn ms_in(path: &std::path::Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().parse::<f64>().ok()? / 1e6)
}

/// A run as host `host` of `name` with `flags`, running `sh -c script`.
fn run_as(host: &str, redis: &Redis, name: &str, flags: &[&str], script: &str) -> Child {
    let mut args: Vec<String> = ["--redis", &redis.url(), "--key", name]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(flags.iter().map(|s| s.to_string()));
    args.extend(["--", "sh", "-c", script].iter().map(|s| s.to_string()));
    on_host(host, &args, hosts_can_be_namespaces())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// A run's end on a thread of its own: when it exited, and its output.
/// The holder (`holder`, watched) was preempted (80) and the newcomer (`new`) ran (0).
fn handed_over(holder: std::thread::JoinHandle<(Instant, Output)>, new: &Output) {
    let (_, held) = holder.join().unwrap();
    assert_eq!(
        held.status.code(),
        Some(codes::PREEMPTED),
        "{}",
        stderr(&held)
    );
    assert_eq!(new.status.code(), Some(0), "{}", stderr(new));
}

fn watch(child: Child) -> std::thread::JoinHandle<(Instant, Output)> {
    std::thread::spawn(move || {
        let out = child.wait_with_output().expect("wait");
        (Instant::now(), out)
    })
}

fn waits_for(path: &std::path::Path) {
    assert!(
        eventually(Duration::from_secs(20), || path.exists()),
        "{} never appeared",
        path.display()
    );
}

/// The p99 (the largest for fewer than 100 values) of `values`.
fn p99(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let at = ((values.len() as f64) * 0.99).ceil() as usize;
    values[at.clamp(1, values.len()) - 1]
}

/// 1 holder and 20 waiters arriving 100 ms apart from 4 hosts: when the holder ends
/// exactly the 20th runs; each of the other 19 exits 73 soon after the arrival that
/// superseded it (the bound is 1 s); nothing else runs.
#[test]
fn the_newest_of_twenty_waiters_runs_and_the_others_exit_superseded() {
    let redis = Redis::start();
    let s = Scratch::new();
    let flags = ["--supersede", "waiting", "--wait", "1m"];
    let mut latencies = Vec::new();
    let total = rounds(2, 50);
    for round in 0..total {
        let name = format!("deploy{round}");
        let journal = s.path(&format!("journal{round}"));
        let j = journal.display().to_string();
        let holder = run_as(
            "ci-host-0",
            &redis,
            &name,
            &flags,
            &format!("echo START holder >> {j}; sleep 3; echo END holder >> {j}"),
        );
        let holder = watch(holder);
        waits_for(&journal);
        let mut spawned = Vec::new();
        let mut ends = Vec::new();
        for i in 1..=20 {
            let host = format!("ci-host-{}", i % 4);
            let job = format!("echo START w{i} >> {j}; echo END w{i} >> {j}");
            spawned.push(Instant::now());
            ends.push(watch(run_as(&host, &redis, &name, &flags, &job)));
            std::thread::sleep(Duration::from_millis(100));
        }
        if round == 0 {
            // What operators read meanwhile: the one waiting run, and the count.
            let url = redis.url();
            let mut text = String::new();
            let read = eventually(Duration::from_millis(800), || {
                text = stdout(&output(redlock().args(["status", &name, "--redis", &url])));
                text.contains("queue:   1 waiting (--supersede)")
                    && text.contains("superseded: 19 waiting runs while it held")
            });
            assert!(read, "{text}");
            let top = output(redlock().args(["top", "--once", "--redis", &url]));
            assert!(stdout(&top).contains("19 superseded"), "{}", stdout(&top));
        }
        let ends: Vec<(Instant, Output)> = ends.into_iter().map(|h| h.join().unwrap()).collect();
        let (_, held) = holder.join().unwrap();
        assert_eq!(held.status.code(), Some(0), "{}", stderr(&held));
        for (i, (at, out)) in ends.iter().enumerate().take(19) {
            assert_eq!(
                out.status.code(),
                Some(codes::SUPERSEDED),
                "waiter {}: {}",
                i + 1,
                stderr(out)
            );
            assert!(
                stderr(out).contains("superseded by a newer run"),
                "{}",
                stderr(out)
            );
            let after = at.saturating_duration_since(spawned[i + 1]);
            latencies.push(after.as_secs_f64() * 1e3);
            assert!(
                after < Duration::from_secs(1),
                "waiter {} exited {after:?} after the arrival that superseded it",
                i + 1
            );
        }
        let (_, last) = &ends[19];
        assert_eq!(last.status.code(), Some(0), "{}", stderr(last));
        let lines = std::fs::read_to_string(&journal).unwrap();
        assert_eq!(
            lines, "START holder\nEND holder\nSTART w20\nEND w20\n",
            "round {round}"
        );
        assert!(
            eventually(Duration::from_secs(5), || redis.keys().is_empty()),
            "{:?}",
            redis.keys()
        );
    }
    summary(&format!(
        "supersede waiting: {total} rounds of 1 holder + 20 waiters from 4 hosts: the 20th ran in {total}/{total}, 19 superseded each round, exit after the superseding arrival p99 {:.0} ms, max {:.0} ms, 0 overlaps",
        p99(&mut latencies.clone()),
        latencies.iter().cloned().fold(0.0, f64::max)
    ));
}

/// `--supersede running`: the holder's command traps SIGTERM and spends 2 s cleaning
/// up; SIGTERM reaches it within a round trip of the newcomer's start (not a renewal
/// period: the ttl is 30 s), the cleanup is done before the newcomer's command starts,
/// the holder exits 80 and its record says so with the command's own status.
#[test]
fn a_preempted_holder_cleans_up_before_the_newcomer_starts() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut latencies = Vec::new();
    let total = rounds(4, 200);
    for round in 0..total {
        let name = format!("tf{round}");
        let dir = s.path(&format!("r{round}"));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let holder = run_as(
            "ci-a",
            &redis,
            &name,
            &[
                "--supersede",
                "running",
                "--wait",
                "1m",
                "--kill-after",
                "5s",
            ],
            &format!(
                "trap 'date +%s%N > {d}/term_at; sleep 2; touch {d}/marker; exit 0' TERM; touch {d}/ready; while :; do sleep 0.05; done"
            ),
        );
        let holder = watch(holder);
        waits_for(&dir.join("ready"));
        let t0 = wall_ms();
        let newcomer = run_as(
            "ci-b",
            &redis,
            &name,
            &["--supersede", "running", "--wait", "1m"],
            &format!("if test -e {d}/marker; then echo yes; else echo no; fi > {d}/clean_before"),
        );
        let (_, new) = watch(newcomer).join().unwrap();
        handed_over(holder, &new);
        let clean = std::fs::read_to_string(dir.join("clean_before")).unwrap();
        assert_eq!(
            clean.trim(),
            "yes",
            "round {round}: the newcomer started before the cleanup"
        );
        let term = ms_in(&dir.join("term_at")).expect("the holder got SIGTERM") - t0;
        assert!(
            term < 3000.0,
            "SIGTERM {term:.0} ms after the newcomer started: it waited for a renewal"
        );
        latencies.push(term);
        if round == 0 {
            let history = output(redlock().args(["history", &name, "--redis", &redis.url()]));
            let text = stdout(&history);
            assert!(
                text.contains("preempted by a newer run (the command exited 0), exit 80"),
                "{text}"
            );
        }
    }
    summary(&format!(
        "supersede running: {total} preemptions, SIGTERM after the newcomer's start p99 {:.0} ms, max {:.0} ms; the 2 s cleanup done before the newcomer's command in {total}/{total}; holder exit 80 in {total}/{total}",
        p99(&mut latencies.clone()),
        latencies.iter().cloned().fold(0.0, f64::max)
    ));
}

/// Issue 52 item 7 (newcomer-6 P9): a `--supersede running` newcomer's own waiting
/// line says who holds and that this run asked it to stop, not "asked to stop by"
/// itself under its own host and pid.
#[test]
fn the_newcomer_says_it_asked_the_holder_to_stop() {
    let redis = Redis::start();
    let s = Scratch::new();
    let d = s.path("").display().to_string();
    let flags = ["--supersede", "running", "--wait", "1m"];
    let holder = run_as(
        "ci-a",
        &redis,
        "stg",
        &flags,
        &format!("trap 'sleep 1; exit 0' TERM; touch {d}/ready; while :; do sleep 0.05; done"),
    );
    let holder = watch(holder);
    waits_for(&s.path("ready"));
    let (_, new) = watch(run_as("ci-b", &redis, "stg", &flags, "true"))
        .join()
        .unwrap();
    handed_over(holder, &new);
    let said = stderr(&new);
    let line = said
        .lines()
        .find(|l| l.contains("waiting for stg"))
        .unwrap_or_else(|| panic!("no waiting line: {said}"));
    assert!(line.contains("held by ci-a pid"), "{line}");
    assert!(line.contains("this run asked it to stop"), "{line}");
    assert!(!line.contains("by ci-b"), "{line}");
}

/// An `--uninterruptible` holder is never preempted: the newcomer waits for it, and
/// its waiting line says why.
#[test]
fn an_uninterruptible_holder_is_never_preempted() {
    let redis = Redis::start();
    let s = Scratch::new();
    let total = rounds(3, 200);
    for round in 0..total {
        let name = format!("promote{round}");
        let dir = s.path(&format!("u{round}"));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let holder = run_as(
            "ci-a",
            &redis,
            &name,
            &[
                "--supersede",
                "running",
                "--wait",
                "1m",
                "--uninterruptible",
            ],
            &format!(
                "trap 'touch {d}/term; exit 9' TERM; touch {d}/ready; sleep 0.6; date +%s%N > {d}/end"
            ),
        );
        let holder = watch(holder);
        waits_for(&dir.join("ready"));
        let newcomer = run_as(
            "ci-b",
            &redis,
            &name,
            &["--supersede", "running", "--wait", "1m"],
            &format!("date +%s%N > {d}/start"),
        );
        let (_, new) = watch(newcomer).join().unwrap();
        let (_, held) = holder.join().unwrap();
        assert_eq!(held.status.code(), Some(0), "{}", stderr(&held));
        assert_eq!(new.status.code(), Some(0), "{}", stderr(&new));
        assert!(!dir.join("term").exists(), "round {round}: preempted");
        assert!(ms_in(&dir.join("start")) > ms_in(&dir.join("end")));
        if round == 0 {
            assert!(
                stderr(&new).contains("--uninterruptible"),
                "{}",
                stderr(&new)
            );
        }
    }
    summary(&format!(
        "supersede running against --uninterruptible: 0 preemptions in {total} rounds; the newcomer ran after the holder in {total}/{total}"
    ));
}

/// `--order-key`: 100 runs with keys 1–100 submitted in shuffled order against a
/// "deploy" that writes its key: the final value is 100 and the values written never
/// decrease; every run that did not deploy exits 73 (superseded or outdated).
#[test]
fn an_older_order_key_never_deploys_over_a_newer_one() {
    let redis = Redis::start();
    let s = Scratch::new();
    let total = rounds(2, 100);
    let mut deployed = Vec::new();
    for trial in 0..total {
        let name = format!("prod{trial}");
        let journal = s.path(&format!("deploys{trial}"));
        let j = journal.display().to_string();
        let mut keys: Vec<u32> = (1..=100).collect();
        fastrand::shuffle(&mut keys);
        let mut ends = Vec::new();
        for key in keys {
            let k = key.to_string();
            let flags = ["--supersede", "waiting", "--order-key", &k, "--wait", "1m"];
            let job = format!("echo {key} >> {j}; sleep 0.05");
            ends.push(watch(run_as("ci-c", &redis, &name, &flags, &job)));
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut outdated = 0;
        for end in ends {
            let (_, out) = end.join().unwrap();
            match out.status.code() {
                Some(0) => {}
                Some(codes::SUPERSEDED) => {
                    let err = stderr(&out);
                    outdated += usize::from(err.contains("(outdated)"));
                    assert!(
                        err.contains("superseded") || err.contains("outdated"),
                        "{err}"
                    );
                }
                other => panic!("{other:?}: {}", stderr(&out)),
            }
        }
        let written: Vec<u32> = std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(written.last(), Some(&100), "trial {trial}: {written:?}");
        assert!(
            written.windows(2).all(|w| w[0] < w[1]),
            "trial {trial}: a lower key deployed after a higher one: {written:?}"
        );
        deployed.push((written.len(), outdated));
    }
    summary(&format!(
        "order key: {total} trials of 100 shuffled runs: final value 100 in {total}/{total}, 0 decreases; deploys per trial {:?}, outdated per trial {:?}",
        deployed.iter().map(|d| d.0).collect::<Vec<_>>(),
        deployed.iter().map(|d| d.1).collect::<Vec<_>>()
    ));
}

/// `redlock preempt` from a third host: a newest-wins holder (which listens) stops at
/// once, a plain one at its next renewal; `--signal` names the signal; `--wait` returns
/// once the lock is released. An `--uninterruptible` holder and another client's lock
/// are refused (75, untouched); a free lock is 0; a semaphore is a usage error.
#[test]
fn preempt_asks_the_holder_to_stop_and_refuses_what_it_cannot_prove() {
    let redis = Redis::start();
    let s = Scratch::new();
    let url = redis.url();
    let preempt = |name: &str, extra: &[&str]| {
        output_within(
            redlock()
                .args(["preempt", name, "--redis", &url])
                .args(extra),
            Duration::from_secs(30),
        )
    };
    for (name, flags, signal, trap) in [
        (
            "p-listens",
            vec!["--supersede", "waiting", "--wait", "1m"],
            None,
            "TERM",
        ),
        ("p-plain", vec!["--ttl", "3s"], Some("INT"), "INT"),
    ] {
        let dir = s.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let holder = run_as(
            "ops-a",
            &redis,
            name,
            &flags,
            &format!(
                "trap 'echo {trap} > {d}/got; exit 0' {trap}; touch {d}/ready; while :; do sleep 0.05; done"
            ),
        );
        let holder = watch(holder);
        waits_for(&dir.join("ready"));
        let mut extra = vec!["--wait", "20s"];
        if let Some(signal) = signal {
            extra.extend(["--signal", signal]);
        }
        let asked = preempt(name, &extra);
        assert_eq!(code(&asked), 0, "{}", stderr(&asked));
        assert!(
            stdout(&asked).contains("stopped and released"),
            "{}",
            stdout(&asked)
        );
        let (_, held) = holder.join().unwrap();
        assert_eq!(
            held.status.code(),
            Some(codes::PREEMPTED),
            "{}",
            stderr(&held)
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("got")).unwrap().trim(),
            trap
        );
        assert!(redis.get(&lock_key(name)).is_none());
    }
    // Refused: --uninterruptible, another client's lock; the lock is left as it was.
    let dir = s.path("u");
    std::fs::create_dir_all(&dir).unwrap();
    let holder = run_as(
        "ops-a",
        &redis,
        "p-unint",
        &["--uninterruptible"],
        &format!("touch {}/ready; sleep 3", dir.display()),
    );
    let holder = watch(holder);
    waits_for(&dir.join("ready"));
    let token = redis.get(&lock_key("p-unint"));
    let refused = preempt("p-unint", &[]);
    assert_eq!(code(&refused), codes::BUSY, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--uninterruptible"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(redis.get(&lock_key("p-unint")), token);
    let (_, held) = holder.join().unwrap();
    assert_eq!(held.status.code(), Some(0));
    let _: () = redis.cmd(&["SET", &lock_key("p-foreign"), "someone", "PX", "60000"]);
    let refused = preempt("p-foreign", &[]);
    assert_eq!(code(&refused), codes::BUSY, "{}", stderr(&refused));
    assert_eq!(stderr(&refused).trim().lines().count(), 1);
    assert_eq!(
        redis.get(&lock_key("p-foreign")).as_deref(),
        Some("someone")
    );
    assert_eq!(redis.keys(), vec![lock_key("p-foreign")]);
    // Nothing to stop.
    let free = preempt("p-free", &[]);
    assert_eq!(code(&free), 0, "{}", stderr(&free));
    assert!(stdout(&free).contains("not held"), "{}", stdout(&free));
}

/// A cancelled waiter can never release the holder's lock: waiters SIGTERMed at random
/// moments while runs hand the lock on: no run loses its lock, no two overlap.
#[test]
fn cancelled_waiters_never_release_the_holder() {
    let redis = Redis::start();
    let s = Scratch::new();
    let journal = s.path("journal");
    let j = journal.display().to_string();
    // A run killed while it holds writes its end from the trap.
    let job = format!(
        "trap 'echo E $$ >> {j}; exit 1' TERM; echo S $$ >> {j}; sleep 0.1; echo E $$ >> {j}"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flags = ["--supersede", "waiting", "--wait", "1m"];
    let contenders: Vec<_> = (0..3)
        .map(|i| {
            let (stop, url, job) = (stop.clone(), redis.url(), job.clone());
            std::thread::spawn(move || {
                let mut statuses = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let out = output(
                        redlock_run()
                            .args(["--redis", &url, "--key", "handover"])
                            .args(flags)
                            .args(["--", "sh", "-c", &job]),
                    );
                    statuses.push(code(&out));
                    let _ = i;
                }
                statuses
            })
        })
        .collect();
    let kills = rounds(60, 500);
    for _ in 0..kills {
        let mut waiter = redlock_run()
            .args(["--redis", &redis.url(), "--key", "handover"])
            .args(flags)
            .args(["--", "sh", "-c", &job])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..120)));
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(waiter.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = waiter.wait();
    }
    stop.store(true, Ordering::SeqCst);
    let statuses: Vec<i32> = contenders
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(
        statuses.iter().all(|c| [0, codes::SUPERSEDED].contains(c)),
        "{statuses:?}"
    );
    let lines = std::fs::read_to_string(&journal).unwrap();
    let mut inside: Option<&str> = None;
    for line in lines.lines() {
        match line.split_once(' ') {
            Some(("S", pid)) => {
                assert!(
                    inside.is_none(),
                    "two runs inside at once: {inside:?} and {pid}"
                );
                inside = Some(pid);
            }
            Some(("E", pid)) if inside == Some(pid) => inside = None,
            _ => {}
        }
    }
    summary(&format!(
        "supersede: {kills} waiters SIGTERMed during hand-overs beside 3 looping runs: {} runs, 0 lost locks (no 79), 0 overlaps",
        statuses.len()
    ));
}

/// Every combination the README refuses for newest wins: one line, 64, nothing written.
#[test]
fn refused_combinations_and_bad_values_say_one_line() {
    let redis = Redis::start();
    let url = redis.url();
    let (other, another) = ("redis://127.0.0.1:1", "redis://127.0.0.1:2");
    for (flags, says) in [
        (
            vec!["--order-key", "5", "--wait", "1m"],
            "--order-key says which run",
        ),
        (vec!["--supersede", "waiting"], "give --wait too"),
        (
            vec!["--supersede", "waiting", "--wait", "1m", "--fair"],
            "--fair the oldest",
        ),
        (
            vec!["--supersede", "running", "--wait", "1m", "--limit", "2"],
            "--limit 2",
        ),
        (
            vec!["--supersede", "waiting", "--wait", "1m", "--once-per", "1m"],
            "--once-per",
        ),
        (
            vec!["--supersede", "waiting", "--wait", "1m", "--once-id", "v1"],
            "--once-id",
        ),
        (
            vec![
                "--supersede",
                "waiting",
                "--wait",
                "1m",
                "--redis",
                other,
                "--redis",
                another,
            ],
            "independent --redis nodes",
        ),
        (vec!["--supersede", "newest", "--wait", "1m"], "newest"),
        (
            vec![
                "--supersede",
                "waiting",
                "--wait",
                "1m",
                "--order-key",
                "-1",
            ],
            "--order-key",
        ),
        (
            vec![
                "--supersede",
                "waiting",
                "--wait",
                "1m",
                "--order-key",
                "9007199254740992",
            ],
            "--order-key",
        ),
        (vec!["--preempt-signal", "FOO"], "--preempt-signal"),
    ] {
        let mut cmd = redlock_run();
        if !flags.contains(&"--redis") {
            cmd.args(["--redis", &url]);
        }
        let out = output(
            cmd.args(["--key", "refused"])
                .args(&flags)
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), codes::USAGE, "{flags:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(redis.keys().is_empty(), "{flags:?}: {:?}", redis.keys());
    }
    let out = output(redlock().args(["preempt", "x", "--redis", &url, "--signal", "NOPE"]));
    assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    // A newest-wins name refuses a run of another kind while in use, and the other way.
    let _ = output(redlock_run().args(["--redis", &url, "--key", "kinds", "--", "true"]));
    let mut holder = redlock_run()
        .args([
            "--redis",
            &url,
            "--key",
            "kinds",
            "--supersede",
            "waiting",
            "--wait",
            "1m",
        ])
        .args(["--", "sleep", "2"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(5), || redis
        .get(&lock_key("kinds"))
        .is_some()));
    let plain = output(redlock_run().args([
        "--redis", &url, "--key", "kinds", "--wait", "1s", "--", "true",
    ]));
    assert_eq!(code(&plain), codes::USAGE, "{}", stderr(&plain));
    assert!(stderr(&plain).contains("--supersede"), "{}", stderr(&plain));
    holder.wait().unwrap();
}

/// The line of a README CI example (a YAML list item: `item` before the command) whose
/// command starts with `command`, as `sh` runs it.
fn readme_ci_line(example: &str, item: &str, command: &str) -> String {
    example
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix(item))
        .find(|l| l.starts_with(command))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("the example has no line {item}{command}…"))
}

/// `sh -c line` with `./deploy.sh` replaced by `deploy` and `env` set; `redlock-run` is
/// the built one.
fn ci_step(line: &str, deploy: &std::path::Path, env: &[(&str, &str)], redis: &Redis) -> Child {
    let line = line
        .replace("./deploy.sh", &deploy.display().to_string())
        .replacen("redlock-run", RUN, 1);
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", &line])
        .env("REDLOCK_REDIS_URL", redis.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn")
}

/// The README's GitHub Actions and GitLab CI lines, run as written: a newer run stops
/// the deploy in progress gracefully (GitHub: SIGINT) or lets it finish (GitLab), only
/// the newest waiting one deploys after it, and an old run retried late exits 73
/// without deploying; the GitHub step of a preempted (80) or outdated (73) run is a
/// success with a notice, and of any other failure fails.
#[test]
fn the_readme_ci_examples_keep_only_the_newest() {
    let redis = Redis::start();
    let s = Scratch::new();
    let journal = s.path("deploys");
    let j = journal.display().to_string();
    let deploy = s.script(
        "deploy.sh",
        &format!(
            "trap 'echo INT $N >> {j}; sleep 0.5; echo cleaned $N >> {j}; exit 130' INT\n\
             echo start $N >> {j}; i=0; while [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done; echo end $N >> {j}"
        ),
    );
    let github = readme_ci_line(
        &example("ci-github-newest"),
        "- run: ",
        "redlock-run --key deploy-production --supersede",
    );
    let step = |n: &str| {
        ci_step(
            &github,
            &deploy,
            &[("GITHUB_RUN_NUMBER", n), ("N", n)],
            &redis,
        )
    };
    let first = watch(step("1"));
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&journal).is_ok_and(|t| t.contains("start 1"))
    }));
    let (_, second) = watch(step("2")).join().unwrap();
    let (_, first) = first.join().unwrap();
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    // (newcomer-5 P9) Preempted (80): the step ends as a success, with a notice, as
    // GitHub's cancel-in-progress would not fail it; it failed (80 is not 73).
    assert_eq!(
        first.status.code(),
        Some(0),
        "preempted: the step succeeds: {}",
        stderr(&first)
    );
    assert!(
        stdout(&first).contains("::notice::not deployed by this run (exit 80)"),
        "{}",
        stdout(&first)
    );
    let (_, retried) = watch(step("1")).join().unwrap();
    assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    assert!(
        stderr(&retried).contains("(outdated)"),
        "{}",
        stderr(&retried)
    );
    assert!(
        stdout(&retried).contains("::notice::not deployed by this run (exit 73)"),
        "{}",
        stdout(&retried)
    );
    // Any other status fails the step with it.
    let failing = s.script("fail.sh", "exit 3");
    let line = github.replace("./deploy.sh", &failing.display().to_string());
    let (_, failed) = watch(ci_step(
        &line,
        &deploy,
        &[("GITHUB_RUN_NUMBER", "3")],
        &redis,
    ))
    .join()
    .unwrap();
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "start 1\nINT 1\ncleaned 1\nstart 2\nend 2\n"
    );

    let gitlab = readme_ci_line(
        &example("ci-gitlab-newest"),
        "- ",
        "redlock-run --key \"deploy-$CI_ENVIRONMENT_SLUG\"",
    );
    std::fs::remove_file(&journal).unwrap();
    let step = |n: &str| {
        let env = [
            ("CI_ENVIRONMENT_SLUG", "production"),
            ("CI_PIPELINE_IID", n),
            ("N", n),
        ];
        ci_step(&gitlab, &deploy, &env, &redis)
    };
    let fifth = watch(step("5"));
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&journal).is_ok_and(|t| t.contains("start 5"))
    }));
    let sixth = watch(step("6"));
    std::thread::sleep(Duration::from_millis(300));
    let seventh = watch(step("7"));
    let (_, sixth) = sixth.join().unwrap();
    assert_eq!(
        sixth.status.code(),
        Some(codes::SUPERSEDED),
        "{}",
        stderr(&sixth)
    );
    for run in [fifth, seventh] {
        let (_, out) = run.join().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let (_, retried) = watch(step("6")).join().unwrap();
    assert_eq!(
        retried.status.code(),
        Some(codes::SUPERSEDED),
        "{}",
        stderr(&retried)
    );
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "start 5\nend 5\nstart 7\nend 7\n"
    );
}

/// (review-5 §8) `redlock preempt` against an `--uninterruptible` holder said
/// "--uninterruptible (not preempted) with --uninterruptible: not preempted": once now.
#[test]
fn preempt_of_an_uninterruptible_holder_says_so_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let ready = s.path("ready");
    let holder = redlock_run()
        .args(["--redis", &redis.url(), "--key", "new", "--uninterruptible"])
        .args(["--", "sh", "-c"])
        .arg(format!("touch '{}'; sleep 60", ready.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    waits_for(&ready);
    let out = output(redlock().args(["preempt", "new", "--redis", &redis.url()]));
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("--uninterruptible").count(), 1, "{err}");
    assert!(
        err.contains(", --uninterruptible (not preempted); wait for it to end"),
        "{err}"
    );
    let mut holder = holder;
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = holder.wait();
}

/// (newcomer-5 P10) GitLab IIDs after a GitHub run number on one name were all
/// outdated, for the 30 days the mark is kept, and the line did not say what to do: it
/// names `redlock forget NAME`, and after that forget the GitLab line deploys.
#[test]
fn an_outdated_run_says_how_to_start_the_count_again() {
    let redis = Redis::start();
    let s = Scratch::new();
    let journal = s.path("deploys");
    let deploy = s.script(
        "deploy.sh",
        &format!("echo deploy $N >> '{}'", journal.display()),
    );
    let github = readme_ci_line(
        &example("ci-github-newest"),
        "- run: ",
        "redlock-run --key deploy-production --supersede",
    );
    let gitlab = readme_ci_line(
        &example("ci-gitlab-newest"),
        "- ",
        "redlock-run --key \"deploy-$CI_ENVIRONMENT_SLUG\"",
    );
    let (_, out) = watch(ci_step(
        &github,
        &deploy,
        &[("GITHUB_RUN_NUMBER", "203"), ("N", "gh203")],
        &redis,
    ))
    .join()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gitlab_step = || {
        let env = [
            ("CI_ENVIRONMENT_SLUG", "production"),
            ("CI_PIPELINE_IID", "11"),
            ("N", "gl11"),
        ];
        watch(ci_step(&gitlab, &deploy, &env, &redis))
            .join()
            .unwrap()
            .1
    };
    let out = gitlab_step();
    assert_eq!(
        out.status.code(),
        Some(codes::SUPERSEDED),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(
            "--order-key 11 is older than 203, which has already started (--supersede); not running (outdated); "
        ) && stderr(&out).trim_end().ends_with("start the count again with: redlock forget deploy-production"),
        "{}",
        stderr(&out)
    );
    let forget = output(redlock().args(["forget", "deploy-production", "--redis", &redis.url()]));
    assert_eq!(code(&forget), 0, "{}", stderr(&forget));
    let out = gitlab_step();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "deploy gh203\ndeploy gl11\n"
    );
}

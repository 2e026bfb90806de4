//! A run's life (granted, started, ended, vanished), judged the same way by every
//! feature and every view (issue 39; review-5 #1, #2, #3, #6; newcomer-5 P3, P4, P5,
//! P13): attempts count starts, never grants; a run in progress is never "exhausted";
//! `--if-vanished rerun` reruns a slot on any period; a vanished run names where it ran
//! and is never a success; `status` and `top` tell the last run from the running one;
//! Redlock's slot state is what a majority says.

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::nemesis::summary;
use crate::harness::proxy::{Mode, Proxy};
use crate::harness::*;

/// Starts `redlock-run ARGS -- sh -c JOB` whose job first touches `started`, and waits
/// until it has: the run is then started (its start recorded) and holds the lock.
fn started_run(args: &[String], started: &std::path::Path, job: &str) -> Child {
    let child = start_run(args, &format!("touch '{}'; {job}", started.display()));
    assert!(
        eventually(READY, || started.exists()),
        "the run never started"
    );
    child
}

/// review-5 #1: a run of a `--once-id` that comes while the ID's last permitted attempt
/// is in progress waits for it, and exits 0 without running once it succeeds — with
/// `--max-attempts 1`, and with the default (3) after two failed attempts. Today's main
/// exited 75 at once ("1 runs started … and none succeeded").
#[test]
fn a_run_of_the_id_during_its_last_attempt_waits_for_it_and_exits_0() {
    let redis = Redis::start();
    let rounds = rounds(4, 20);
    for round in 0..rounds {
        for (attempts, failures) in [(Some("1"), 0), (None, 2)] {
            let s = Scratch::new();
            let id = format!("v{round}-{failures}");
            let mut args = lock_args(&redis, "migrate");
            args.extend(["--once-id".to_string(), id.clone()]);
            if let Some(n) = attempts {
                args.extend(["--max-attempts".to_string(), n.to_string()]);
            }
            for _ in 0..failures {
                let (status, err) = try_once(&args, "exit 1");
                assert_eq!(status, 1, "{err}");
            }
            let started = s.path("started");
            let last = started_run(&args, &started, "sleep 1; echo A");
            let out = output_within(
                redlock_run()
                    .args(&args)
                    .args(["--", "sh", "-c", "echo B ran"]),
                Duration::from_secs(30),
            );
            let err = stderr(&out);
            assert_eq!(
                (code(&out), stdout(&out).as_str()),
                (0, ""),
                "round {round}, {failures} failures: {err}"
            );
            assert!(
                err.contains(&format!("--once-id {id} already done")),
                "{err}"
            );
            let (status, err) = finish(last, Duration::from_secs(20));
            assert_eq!(status, 0, "{err}");
        }
    }
    summary(&format!(
        "lifecycle: --once-id, a run during the last attempt: exited 0 without running in {rounds} of {rounds} rounds, with --max-attempts 1 and with the default after two failures"
    ));
}

/// review-5 #2: `--once-per --wait` (the shipped unit's flags) with the slot's last
/// permitted attempt in progress: the waiting try waits, and skips the slot silently
/// (`already_ran`) when that attempt succeeds; when it fails, the slot's attempts are
/// spent only then (one line, `attempts_exhausted`). Today's main said "1 runs started …
/// and none succeeded" at once, while the attempt went on to succeed.
#[test]
fn a_waiting_try_during_the_last_attempt_of_its_slot_waits_for_its_end() {
    let redis = Redis::start();
    for (job, reason) in [
        ("sleep 1", "already_ran"),
        ("sleep 1; exit 3", "attempts_exhausted"),
    ] {
        let s = Scratch::new();
        let name = format!("rep-{}", reason.len());
        let mut args = lock_args(&redis, &name);
        args.extend(["--once-per", "1d", "--max-attempts", "1"].map(String::from));
        let started = s.path("started");
        let last = started_run(&args, &started, job);
        let events = s.path("events");
        let out = output_within(
            redlock_run().args(&args).args([
                "--wait",
                "30s",
                "--events",
                events.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                "echo B ran",
            ]),
            Duration::from_secs(30),
        );
        let events = std::fs::read_to_string(&events).unwrap();
        assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
        assert_eq!(stdout(&out), "", "it did not run");
        assert!(
            events.contains(&format!("\"reason\":\"{reason}\"")),
            "{events}"
        );
        // It decided after the attempt ended, not while it ran.
        let (status, _) = finish(last, Duration::from_secs(20));
        match reason {
            "already_ran" => {
                assert_eq!(status, 0);
                assert_eq!(stderr(&out), "", "a skipped slot says nothing");
            }
            _ => {
                assert_eq!(status, 3);
                assert!(stderr(&out).contains("none succeeded"), "{}", stderr(&out));
            }
        }
    }
}

/// review-5 #3: an acquire whose reply is lost (the grant runs in Redis, the wrapper
/// never hears it, the command never starts) uses no attempt of a `--once-id`: the next
/// run of the ID runs it, with `--max-attempts 1`. Today's main closed the ID for 30 days.
#[test]
fn a_lost_grant_uses_no_attempt() {
    let redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    // The scripts in the server's cache, so that the lossy try's EVALSHA runs at once.
    let (status, err) = try_once(&lock_args(&redis, "warm-up"), "true");
    assert_eq!(status, 0, "{err}");
    let args = |url: String| {
        vec![
            "--key".to_string(),
            "mig".into(),
            "--redis".into(),
            url,
            "--once-id".into(),
            "v1".into(),
            "--max-attempts".into(),
            "1".into(),
            "--ttl".into(),
            "2s".into(),
        ]
    };
    let s = Scratch::new();
    let ran = s.path("ran");
    let job = format!("echo ran >> '{}'", ran.display());
    proxy.set(Mode::DropReplies);
    let mut lossy = redlock_run()
        .args(args(proxy.url()))
        .args(["--", "sh", "-c", &job])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The grant lands in Redis; its reply never comes back.
    assert!(eventually(READY, || redis.exists(&lock_key("mig"))));
    std::thread::sleep(Duration::from_millis(500));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(lossy.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    wait_child(&mut lossy, Duration::from_secs(20));
    proxy.pass();
    assert!(!ran.exists(), "the lossy try ran its command");
    // The next run of the ID waits out the lossy grant's lease and runs it.
    let out = output_within(
        redlock_run()
            .args(args(redis.url()))
            .args(["--", "sh", "-c", &job]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read_trimmed(&ran), "ran");
    let starts: Option<String> = redis.cmd(&["HGET", "redlock:{mig}:once:v1", "starts"]);
    assert_eq!(starts.as_deref(), Some("1"), "one start counted");
}

/// newcomer-5 P3: the README's minute line with `--if-vanished rerun` and no `--wait`,
/// on three hosts whose ticks are 0, 0.2 and 0.4 s apart (every try of a slot in its
/// first moments, before the vanished run's lease ends), the winner's wrapper SIGKILLed
/// mid-run in every slot: the tries that found the slot's run in progress wait for it
/// (until the end of the slot) and one of them reruns it, so every slot ends with
/// exactly one successful run. Today's main lost every such slot. The minute is 5 s here,
/// the job 1.5 s and the ttl 1 s, so that ten slots take under a minute.
#[test]
fn the_minute_line_with_rerun_gets_its_run_when_the_winner_dies() {
    let namespaces = hosts_can_be_namespaces();
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let readme = example("cron-first");
    let line = readme
        .lines()
        .find(|l| l.starts_with("* * * * * redlock-run"))
        .expect("the README's minute line");
    let mut args: Vec<String> = line
        .split_whitespace()
        .skip(6)
        .take_while(|a| *a != "--")
        .map(String::from)
        .collect();
    let at = args.iter().position(|a| a == "--once-per").unwrap();
    args[at + 1] = "5s".into();
    args.extend(
        [
            "--if-vanished",
            "rerun",
            "--redis",
            &redis.url(),
            "--ttl",
            "1s",
            "--no-local-queue",
        ]
        .map(String::from),
    );
    let job = format!(
        "echo \"BEGIN $PPID $REDLOCK_ATTEMPT $(date +%s%N)\" >> '{log}'; sleep 1.5; echo \"END $PPID $(date +%s%N)\" >> '{log}'",
        log = log.display()
    );
    let slots = rounds(6, 10);
    for _ in 0..slots {
        let slot = redis.now_ms() / 5000 * 5000 + 5000;
        let now = redis.now_ms();
        std::thread::sleep(Duration::from_millis(slot + 50 - now));
        let before = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count();
        let hosts: Vec<Child> = (0..3)
            .map(|h| {
                let mut cmd = on_host(&format!("h{h}"), &args, namespaces);
                let child = cmd
                    .args(["--", "sh", "-c", &job])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                std::thread::sleep(Duration::from_millis(200));
                child
            })
            .collect();
        // The winner's wrapper (the job's parent) dies 300 ms into its job.
        kill_first_begun(&log, before, Duration::from_millis(300));
        for mut host in hosts {
            wait_child(&mut host, Duration::from_secs(20));
        }
    }
    let runs = history_json(&redis, "close-order");
    let mut per_slot = HashMap::<u64, usize>::new();
    let mut vanished = 0;
    for run in runs["runs"].as_array().unwrap() {
        if run["vanished"] == true {
            vanished += 1;
            assert!(
                run.get("status").is_none(),
                "a vanished run has no status: {run}"
            );
            assert!(
                run["host"]
                    .as_str()
                    .is_some_and(|h| h.starts_with('h') || !namespaces),
                "{run}"
            );
        }
        if run["status"] == 0 {
            *per_slot
                .entry(run["start_ms"].as_u64().unwrap() / 5000)
                .or_default() += 1;
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        per_slot.len(),
        slots,
        "slots with a success: {per_slot:?}\n{text}"
    );
    assert!(per_slot.values().all(|n| *n == 1), "{per_slot:?}\n{text}");
    assert_eq!(vanished, slots, "one vanished run a slot: {runs}");
    summary(&format!(
        "lifecycle: the README's minute line with --if-vanished rerun, 3 hosts, winner SIGKILLed mid-run: {} of {slots} slots with exactly one success",
        per_slot.len()
    ));
}

/// newcomer-5 P4, P5, P13: a vanished run names its host, pid and user; `history
/// --json` gives it `"vanished": true`, `"running": false` and no status (never 0); the
/// history lists it by its start, newest first; while a run is in progress, `status`
/// says the last run that is over, not the running one's own start mark.
#[test]
fn a_vanished_run_reads_as_vanished_everywhere() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "rep");
    args.extend(["--once-per", "1d", "--ttl", "1s", "--history", "5"].map(String::from));
    // An earlier run that ended (another name's slot would not do: the same name, a
    // record written as a run's release writes it, a day earlier).
    let day_ago = redis.now_ms() - 86_400_000;
    let earlier = format!(
        "{{\"token\":\"e1\",\"host\":\"old-host\",\"pid\":7,\"user\":\"u\",\"fence\":1,\"once_per_ms\":86400000,\"duration_ms\":5,\"command_status\":0,\"status\":0,\"lost\":false,\"start_ms\":{day_ago},\"end_ms\":{}}}",
        day_ago + 5
    );
    let _: i64 = redis.cmd(&["RPUSH", "redlock:{rep}:history", &earlier]);
    let started = s.path("started");
    let mut run = started_run(&args, &started, "sleep 30");
    // In progress: status shows the earlier run as the last run, the holder as running.
    let out = output(redlock().args(["status", "rep", "--redis", &redis.url()]));
    let text = stdout(&out);
    let last = text
        .lines()
        .find(|l| l.contains("last run:"))
        .unwrap_or_default()
        .to_string();
    assert!(
        last.contains("old-host") && last.contains("exit 0"),
        "{text}"
    );
    let json = output(redlock().args(["status", "rep", "--redis", &redis.url(), "--json"]));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["last_run"]["token"], "e1", "{json}");
    // The wrapper dies; its lease ends a ttl later: the run vanished.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_child(&mut run, Duration::from_secs(5));
    assert!(eventually(Duration::from_secs(5), || !redis.exists(&lock_key("rep"))));
    let runs = history_json(&redis, "rep");
    let first = &runs["runs"][0];
    assert_eq!(first["vanished"], true, "{runs}");
    assert!(
        first.get("running").is_none() && first.get("status").is_none(),
        "{runs}"
    );
    assert!(
        first["host"].is_string() && first["pid"].is_u64() && first["user"].is_string(),
        "{runs}"
    );
    assert_eq!(
        runs["runs"][1]["token"], "e1",
        "newest first by start: {runs}"
    );
    let out = output(redlock().args(["history", "rep", "--redis", &redis.url()]));
    let text = stdout(&out);
    assert!(
        text.contains("vanished") && !text.contains("? pid ?"),
        "{text}"
    );
    let out = output(redlock().args(["status", "rep", "--redis", &redis.url()]));
    assert!(
        stdout(&out).contains("last run:") && stdout(&out).contains("vanished"),
        "{}",
        stdout(&out)
    );
}

/// review-5 #6: over three nodes, one node that missed a failed run's release (its
/// start mark still there, read as a vanished run) does not close the slot: a majority
/// recorded the failure, so the next try runs the job. Today's main skipped it
/// (`unfinished_run`). The nodes' state is written as the review wrote it.
#[test]
fn one_node_that_missed_a_release_never_vetoes_the_slot() {
    let now = Redis::start().now_ms();
    let failed = format!(
        "{{\"token\":\"t1\",\"host\":\"h1\",\"pid\":1,\"user\":\"u\",\"fence\":1,\"once_per_ms\":86400000,\"duration_ms\":5,\"command_status\":1,\"status\":1,\"lost\":false,\"start_ms\":{now},\"end_ms\":{}}}",
        now + 5
    );
    let mark = format!(
        "{{\"token\":\"t1\",\"start_ms\":{now},\"running\":true,\"started\":true,\"attempt\":1}}"
    );
    // Three fresh nodes, `marked` of them holding the start mark and the others the
    // failed run's record; the next try's output.
    let next_try = |marked: usize| {
        let nodes: Vec<Redis> = (0..3).map(|_| Redis::start()).collect();
        let mut args = vec!["--key".to_string(), "rep".into()];
        for (i, node) in nodes.iter().enumerate() {
            let record = if i < marked { &mark } else { &failed };
            let _: i64 = node.cmd(&["LPUSH", "redlock:{rep}:history", record]);
            args.extend(["--redis".to_string(), node.url()]);
        }
        args.extend(["--once-per", "1d"].map(String::from));
        output(redlock_run().args(&args).args(["--", "echo", "ran"]))
    };
    let out = next_try(1);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (0, "ran\n"),
        "{}",
        stderr(&out)
    );
    // With the mark on two nodes of three, the slot is closed (at most once).
    let out = next_try(2);
    assert_eq!(
        (code(&out), stdout(&out).as_str()),
        (codes::BUSY, ""),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("unfinished_run") || stderr(&out).contains("never recorded"),
        "{}",
        stderr(&out)
    );
}

/// Issue 39 item 7: `redlock wait` returns only when the lock is free and no run that
/// waited to acquire it was woken to take it: with a holder, a run waiting to acquire
/// and a `wait` blocked beside it, the release hands the lock to the run, and `wait`
/// returns after that run's release, not at the first one. Today's main returned at the
/// first release in 1–2 of 5 rounds.
#[test]
fn redlock_wait_outlasts_the_run_woken_to_take_the_lock() {
    let redis = Redis::start();
    let url = redis.url();
    let rounds = rounds(10, 50);
    for round in 0..rounds {
        let name = format!("job{round}");
        let args: Vec<String> = ["--key", &name, "--redis", &url, "--ttl", "60s"]
            .map(String::from)
            .to_vec();
        let holder = Holding::start(&args);
        let s = Scratch::new();
        let mut watcher = redlock()
            .args(["wait", &name, "--timeout", "60s", "--redis", &url])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let ended = s.path("ended");
        let mut wargs = args.clone();
        wargs.extend(["--wait".into(), "60s".into()]);
        let waiter = start_run(&wargs, &format!("sleep 0.3; touch '{}'", ended.display()));
        assert!(
            eventually(READY, || redis.waiting_blocked(&name, 2)),
            "both never blocked"
        );
        let (status, err) = holder.finish();
        assert_eq!(status, 0, "{err}");
        let status = wait_child(&mut watcher, Duration::from_secs(30));
        assert_eq!(status.code(), Some(0));
        assert!(
            ended.exists(),
            "round {round}: wait returned while the woken run held the lock"
        );
        let (status, err) = finish(waiter, Duration::from_secs(30));
        assert_eq!(status, 0, "{err}");
    }
    summary(&format!(
        "lifecycle: redlock wait outlasted the run woken to take the lock in {rounds} of {rounds} rounds"
    ));
}

/// The faults the `--once-id` family draws.
#[derive(Debug, Clone, Copy, PartialEq)]
enum IdFault {
    /// The proxy in front of half the contenders swallows replies for 1.5 s.
    RepliesDropped,
    /// A running wrapper is SIGKILLed.
    WrapperKilled,
    /// A running wrapper is SIGSTOPped for 2 s (longer than the ttl).
    WrapperStopped,
    /// Redis is killed and started again empty.
    RestartedEmpty,
}

/// Issue 39 item 8: the generated flag × fault family for `--once-id` and
/// `--max-attempts` (its own family: the fixed seeds below; `NEMESIS_SEED=S` replays
/// one). Six contenders, half through a proxy, each take IDs `id0`…`id3` in turn with
/// `--once-id ID --max-attempts M` (M drawn 1–3), a job that fails about half the time,
/// while a drawn fault fires. Checked over the jobs' own log, the events and the
/// history: at most one success per ID and at most M starts (per Redis lifetime: a
/// Redis restarted empty forgets the ID, as the docs say); no try says
/// `attempts_exhausted` while a run of its ID is started and not ended; every started
/// run has ended or is judged vanished a ttl + 1 s after the last wrapper stopped.
#[test]
fn once_id_family_under_faults() {
    let seeds: Vec<u64> = match std::env::var("NEMESIS_SEED") {
        Ok(s) => vec![s.parse().expect("NEMESIS_SEED")],
        Err(_) => (1..=rounds(4, 12) as u64).collect(),
    };
    for seed in seeds {
        once_id_trial(seed);
    }
}

/// A job of the family: its ID, its start (ms), its fence, and its end and status once
/// it ended.
type Job = (String, u64, u64, Option<(u64, String)>);

fn once_id_trial(seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let faults = [
        IdFault::RepliesDropped,
        IdFault::WrapperKilled,
        IdFault::WrapperStopped,
        IdFault::RestartedEmpty,
    ];
    let fault = faults[(seed as usize - 1) % faults.len()];
    let attempts = rng.usize(1..=3);
    let mut redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    let s = Scratch::new();
    let (log, events) = (s.path("log"), s.path("events"));
    // `1$(date +%N)`: nanoseconds with a leading zero are octal to the shell's
    // arithmetic, and an 8 or 9 in them made the job exit 2 before its END line (the
    // release then raced the test's reading of the run's end: a flake in CI).
    let job = format!(
        "echo \"BEGIN $REDLOCK_ONCE_ID_SEEN $$ $(date +%s%3N) $REDLOCK_FENCE\" >> '{log}'; sleep 0.$(( 1$(date +%N) % 4 + 1 )); st=$(( 1$(date +%N) % 2 )); echo \"END $$ $st $(date +%s%3N)\" >> '{log}'; exit $st",
        log = log.display()
    );
    let contenders: Vec<std::thread::JoinHandle<()>> = (0..6)
        .map(|i| {
            let url = if i % 2 == 0 { redis.url() } else { proxy.url() };
            let (job, events) = (job.clone(), events.clone());
            std::thread::spawn(move || {
                for id in 0..4 {
                    let job = job.replace("$REDLOCK_ONCE_ID_SEEN", &format!("id{id}"));
                    let _ = output_within(
                        redlock_run()
                            .args(["--key", "fam", "--redis", &url, "--ttl", "1s"])
                            .args(["--once-id", &format!("id{id}")])
                            .args(["--max-attempts", &attempts.to_string()])
                            .args(["--wait", "20s", "--no-local-queue", "--history", "100"])
                            .args(["--events", events.to_str().unwrap()])
                            .args(["--", "sh", "-c", &job]),
                        Duration::from_secs(60),
                    );
                }
            })
        })
        .collect();
    // The fault, once a job runs.
    assert!(
        eventually(READY, || log.exists()),
        "seed {seed}: no job began"
    );
    std::thread::sleep(Duration::from_millis(rng.u64(50..400)));
    let wrapper = || -> Option<i32> {
        // The wrapper of the newest job still running (the job's parent).
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let begun: Vec<&str> = text.lines().filter(|l| l.starts_with("BEGIN")).collect();
        let pid: i32 = begun.last()?.split(' ').nth(2)?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    match fault {
        IdFault::RepliesDropped => {
            proxy.set(Mode::DropReplies);
            std::thread::sleep(Duration::from_millis(1500));
            proxy.pass();
        }
        IdFault::WrapperKilled | IdFault::WrapperStopped => {
            if let Some(pid) = wrapper() {
                let pid = nix::unistd::Pid::from_raw(pid);
                if fault == IdFault::WrapperKilled {
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                } else {
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP);
                    std::thread::sleep(Duration::from_secs(2));
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
                }
            }
        }
        IdFault::RestartedEmpty => redis.restart(),
    }
    for c in contenders {
        c.join().unwrap();
    }
    // A ttl + 1 s after the last wrapper: nothing is in progress any more.
    std::thread::sleep(Duration::from_millis(2000));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let events = std::fs::read_to_string(&events).unwrap_or_default();
    let what = format!("seed {seed} ({fault:?}, --max-attempts {attempts})");
    // Each job (by its shell's pid): its ID, its start, its end and status if it ended.
    let mut jobs: HashMap<String, Job> = HashMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w[..] {
            ["BEGIN", id, pid, at, fence] => {
                let job = (
                    id.to_string(),
                    at.parse().unwrap(),
                    fence.parse().unwrap(),
                    None,
                );
                jobs.insert(pid.to_string(), job);
            }
            ["END", pid, status, at] => {
                if let Some(job) = jobs.get_mut(pid) {
                    job.3 = Some((at.parse().unwrap(), status.to_string()));
                }
            }
            _ => panic!("{what}: a torn line {line:?}"),
        }
    }
    // The wrappers' events of a run, by its fence.
    let event_of = |event: &str, fence: u64| {
        events.lines().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["event"] == event && v["fence"] == fence).then_some(v)
        })
    };
    let ts = |v: serde_json::Value| v["ts_ms"].as_u64().unwrap();
    // The job itself never fails but on purpose (1): a shell error would end it before
    // its END line, and its end would be read from the wrapper's later events.
    assert!(
        !events.contains("\"command_status\":2,"),
        "{what}: a job's shell failed\n{text}\n{events}"
    );
    let history = history_json(&redis, "fam");
    let runs = history["runs"].as_array().cloned().unwrap_or_default();
    // Redis restarted empty forgets the IDs: the counts hold per Redis lifetime only.
    let forgets = fault == IdFault::RestartedEmpty;
    for id in (0..4).map(|i| format!("id{i}")) {
        let of_id: Vec<_> = jobs.values().filter(|j| j.0 == id).collect();
        // A success is what the history records as one (status 0, lock kept to the
        // end): a job whose wrapper lost the lock meanwhile, or whose release never
        // reached Redis (it vanished: the ID stays open, at least once), is an attempt
        // without a recorded success.
        let succeeded = of_id
            .iter()
            .filter(|j| {
                runs.iter()
                    .any(|r| r["fence"] == j.2 && r["status"] == 0 && r["lost"] == false)
            })
            .count();
        if !forgets {
            assert!(
                of_id.len() <= attempts,
                "{what}: {id} started {} times\n{text}",
                of_id.len()
            );
            assert!(
                succeeded <= 1,
                "{what}: {id} succeeded {succeeded} times\n{text}\n{history}"
            );
        }
    }
    // No `attempts_exhausted` while a run of the ID held the lock: from its `acquired`
    // event to its command's end (or, for a command that never ended, the `lost` or
    // `exited` event, the first).
    // (Redis restarted empty forgets the lock of the run in progress as well.)
    let exhausted = events.lines().filter(|l| l.contains("attempts_exhausted"));
    for line in exhausted.filter(|_| !forgets) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (id, at) = (
            v["once_id"].as_str().unwrap_or(""),
            v["ts_ms"].as_u64().unwrap(),
        );
        let holding = jobs.values().any(|j| {
            // A run that lost its lock (a wrapper starved past its lease on a loaded
            // machine) held it until an unknown moment before it found out: not judged.
            if event_of("lost", j.2).is_some() {
                return false;
            }
            let held_from = event_of("acquired", j.2).map_or(u64::MAX, ts);
            // Until its command ended (a waiter woken by the release may write its
            // event before the holder writes `exited`), or its lock was found lost.
            let held_to = j.3.as_ref().map(|(end, _)| *end).or_else(|| {
                ["lost", "exited"]
                    .iter()
                    .filter_map(|e| event_of(e, j.2).map(ts))
                    .min()
            });
            let held_to = held_to.unwrap_or(0);
            j.0 == id && held_from < at && at < held_to
        });
        assert!(
            !holding,
            "{what}: exhausted while a run of {id} held the lock: {line}\n{text}\n{events}"
        );
    }
    // Nothing left in progress: every started run ended or is judged vanished.
    let running: Vec<_> = runs.iter().filter(|r| r["running"] == true).collect();
    assert!(running.is_empty(), "{what}: still running: {running:?}");
    summary(&format!(
        "lifecycle: --once-id family {what}: {} starts for 4 IDs, every invariant held",
        jobs.len()
    ));
}

/// Issue 52 item 3 (review-6 #5): a `--once-id` run whose wrapper was SIGKILLed is a
/// record: `history` (and its JSON) lists it vanished with its host and pid, `status`
/// names it as the last run, and the next try's refusal (its only attempt spent) says
/// where and when that attempt ran. Today's main said "no runs recorded".
#[test]
fn a_vanished_once_id_run_is_seen_in_every_view() {
    let redis = Redis::start();
    let s = Scratch::new();
    let url = redis.url();
    let mut args = lock_args(&redis, "idjob");
    args.extend(["--once-id", "v1", "--max-attempts", "1", "--ttl", "1s"].map(String::from));
    let started = s.path("started");
    let mut run = started_run(&args, &started, "sleep 30");
    let wrapper = run.id();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(wrapper as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_child(&mut run, Duration::from_secs(5));
    assert!(eventually(Duration::from_secs(5), || !redis.exists(&lock_key("idjob"))));
    let doc = history_json(&redis, "idjob");
    let gone = &doc["runs"][0];
    assert_eq!(gone["vanished"], true, "{doc}");
    assert_eq!(gone["pid"], wrapper, "{doc}");
    assert!(gone.get("status").is_none(), "{doc}");
    let host = gone["host"].as_str().unwrap_or_default().to_string();
    assert!(!host.is_empty(), "{doc}");
    let pid = format!("pid {wrapper}");
    let said = stdout(&output(
        redlock().args(["history", "idjob", "--redis", &url]),
    ));
    assert!(said.contains("vanished") && said.contains(&pid), "{said}");
    let status = stdout(&output(
        redlock().args(["status", "idjob", "--redis", &url]),
    ));
    let last = status
        .lines()
        .find(|l| l.contains("last run:"))
        .unwrap_or_default();
    assert!(last.contains("vanished") && last.contains(&pid), "{status}");
    let (code, err) = try_once(&args, "true");
    assert_ne!(code, 0, "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("1 runs started for --once-id v1"))
        .unwrap_or_default();
    assert!(line.contains(&host) && line.contains(&pid), "{err}");
    // When: the start as `history` prints it (its line's first word).
    let when = said
        .lines()
        .find(|l| l.contains("vanished"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or("?");
    assert!(line.contains(when), "{when}: {err}");
}

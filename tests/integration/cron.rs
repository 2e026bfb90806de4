//! Cron on many hosts: `--once-per` runs a job once per tick on one host, silent on the
//! others; `--if-vanished rerun` runs a slot again when its run vanished, up to
//! `--max-attempts` starts. Hosts are UTS namespaces with their own host name (where
//! `unshare` may run: CI runs as root), else plain processes.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::nemesis::summary;
use crate::harness::*;

/// The README's first example (`cron-first`): the `redlock-run …` of its cron line.
fn readme_first_cron_line() -> Vec<String> {
    let example = example("cron-first");
    let line = example
        .lines()
        .find(|l| l.starts_with("* * * * * redlock-run"))
        .expect("the README's first example is a cron line");
    // The five time fields, then the program; its arguments are what runs.
    line.split_whitespace().skip(6).map(String::from).collect()
}

/// A run's output, both streams, once it ended.
fn ended(child: Child) -> (i32, String) {
    let out = child.wait_with_output().expect("wait");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The README's first example on three hosts whose cron ticks are 0, 1.5 and 3 s apart,
/// a 0.5 s job, 10 ticks: 10 runs in all, one per tick, and not a byte of output from
/// the hosts that skipped (cron mails output). The period is 4 s instead of the
/// README's minute, so that 10 ticks take 40 s; nothing else of the line changes.
#[test]
fn the_readme_first_example_runs_once_per_tick_on_one_of_three_hosts() {
    let namespaces = hosts_can_be_namespaces();
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let job = s.script(
        "close_orders.sh",
        &format!(
            "echo \"RUN $(hostname) $REDLOCK_SLOT_START\" >> '{}'; sleep 0.5",
            log.display()
        ),
    );
    let mut line = readme_first_cron_line();
    let period = line
        .iter()
        .position(|a| a == "--once-per")
        .expect("--once-per")
        + 1;
    line[period] = "4s".into();
    let last = line.len() - 1;
    line[last] = job.display().to_string();
    let ticks = 10;
    let first_slot = redis.now_ms() / 4000 * 4000 + 4000;
    let mut runs: Vec<(String, Child)> = Vec::new();
    for tick in 0..ticks {
        for (h, offset_ms) in [0u64, 1500, 3000].into_iter().enumerate() {
            redis.sleep_until(first_slot + tick * 4000 + 100 + offset_ms);
            let host = format!("cron-host-{h}");
            let child = on_host(&host, &line, namespaces)
                .env("REDLOCK_REDIS_URL", redis.url())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn");
            runs.push((format!("{host} tick {tick}"), child));
        }
    }
    let mut silent_skips = 0;
    for (who, child) in runs {
        let (code, text) = ended(child);
        // The job's own status where it ran, the busy status (75) where it was skipped:
        // cron mails output, not statuses.
        assert!(
            code == 0 || code == codes::BUSY,
            "{who}: exit {code}: {text}"
        );
        assert!(text.is_empty(), "{who} wrote output: {text:?}");
        silent_skips += usize::from(code == codes::BUSY);
    }
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let mut per_slot: HashMap<&str, usize> = HashMap::new();
    for l in log.lines() {
        *per_slot
            .entry(l.split(' ').nth(2).unwrap_or(""))
            .or_default() += 1;
    }
    assert_eq!(log.lines().count(), ticks as usize, "runs in all:\n{log}");
    assert!(
        per_slot.values().all(|n| *n == 1),
        "one run per tick:\n{log}"
    );
    assert_eq!(silent_skips, 2 * ticks as usize);
    summary(&format!(
        "cron: README's first example, 3 hosts{}, ticks 0/1.5/3 s apart, 0.5 s job, {ticks} ticks: {} runs, one per tick, {} tries with no output",
        if namespaces { " (UTS namespaces)" } else { "" },
        log.lines().count(),
        silent_skips
    ));
}

/// A try whose slot's run is still in progress is a skip, not "busy": silent (the busy
/// status, the `skipped` event with the reason `in_progress`).
#[test]
fn a_try_while_its_slot_runs_elsewhere_is_a_silent_skip() {
    let redis = Redis::start();
    let args = [
        lock_args(&redis, "inprog"),
        vec!["--once-per".into(), "1h".into()],
    ]
    .concat();
    let holder = start_run(&args, "sleep 1.5");
    assert!(eventually(Duration::from_secs(5), || {
        redis.get(&lock_key("inprog")).is_some()
    }));
    let s = Scratch::new();
    let events = s.path("events");
    let out = output(redlock_run().args(&args).args([
        "--events",
        events.to_str().unwrap(),
        "--",
        "true",
    ]));
    assert_eq!((code(&out), stderr(&out).as_str()), (codes::BUSY, ""));
    let events = std::fs::read_to_string(&events).unwrap();
    assert!(events.contains("\"reason\":\"in_progress\""), "{events}");
    let (held, err) = finish(holder, Duration::from_secs(10));
    assert_eq!(held, 0, "{err}");
    let out = output(
        redlock_run()
            .args(&args)
            .args(["--busy-exit-code", "0", "--", "true"]),
    );
    assert_eq!((code(&out), stderr(&out).as_str()), (0, ""));
}

/// One slot's worth of hosts: `hosts` runs started `gap` apart, each waiting; when
/// `kill` the first to start its job has its wrapper SIGKILLed 300 ms into the job (its
/// group guard stops the job), so its end is never recorded.
fn slot_of_hosts(redis: &Redis, name: &str, extra: &[&str], log: &std::path::Path, kill: bool) {
    // Each job first looks for an earlier job of the name still alive (not a zombie):
    // two at once would be an overlap.
    let job = format!(
        "for p in $(awk '$1==\"BEGIN\"{{print $5}}' '{log}' 2>/dev/null); do s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); [ -n \"$s\" ] && [ \"$s\" != Z ] && echo \"OVERLAP $p\" >> '{log}'; done; echo \"BEGIN $PPID $REDLOCK_FENCE $REDLOCK_ATTEMPT $$\" >> '{log}'; sleep 0.6; echo \"END $PPID\" >> '{log}'",
        log = log.display()
    );
    let mut args = lock_args(redis, name);
    args.extend(
        [
            "--ttl",
            "1s",
            "--once-per",
            "3s",
            "--wait",
            "2600ms",
            "--no-local-queue",
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|s| s.to_string()));
    let slot = redis.now_ms() / 3000 * 3000 + 3000;
    redis.sleep_until(slot + 50);
    let begins = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count();
    let runs: Vec<Child> = (0..4)
        .map(|_| {
            let child = start_run(&args, &job);
            std::thread::sleep(Duration::from_millis(60));
            child
        })
        .collect();
    if kill {
        kill_first_begun(log, begins, Duration::from_millis(300));
    }
    for mut run in runs {
        // The killed wrapper has no exit code; the others end 0.
        let _ = wait_child(&mut run, Duration::from_secs(20));
    }
}

/// Successful records per 3 s slot in the lock's history.
fn successes_per_slot(redis: &Redis, name: &str) -> HashMap<u64, usize> {
    successes_per_slot_of(redis, name, 3000)
}

/// Successful records per slot of `period_ms` in the lock's history (`redlock history
/// --json`).
fn successes_per_slot_of(redis: &Redis, name: &str, period_ms: u64) -> HashMap<u64, usize> {
    let runs = history_json(redis, name);
    let mut per_slot = HashMap::new();
    for run in runs["runs"].as_array().cloned().unwrap_or_default() {
        if run["status"] == 0 && run["running"] != true {
            let slot = run["start_ms"].as_u64().unwrap_or(0) / period_ms;
            *per_slot.entry(slot).or_default() += 1;
        }
    }
    per_slot
}

/// Four hosts per 3 s slot, each waiting, the job 0.6 s; in every other slot the
/// winner's wrapper is SIGKILLed mid-run. With `--if-vanished rerun` every slot ends
/// with exactly one successful run, no job starts while another is alive, and each
/// re-run's fence is above the vanished run's; with the default (skip), the slots whose run was killed have none, the others
/// one. (The figures are 8 hosts and 100 slots of 10 s; this is the same
/// schedule, smaller, so that it runs in under a minute.)
#[test]
fn a_vanished_slot_runs_again_with_rerun_and_stays_closed_by_default() {
    let redis = Redis::start();
    let s = Scratch::new();
    for (name, extra, rerun) in [
        ("van-rerun", &["--if-vanished", "rerun"][..], true),
        ("van-skip", &[][..], false),
    ] {
        let log = s.path(name);
        let slots = 6;
        for i in 0..slots {
            slot_of_hosts(&redis, name, extra, &log, i % 2 == 0);
        }
        let per_slot = successes_per_slot(&redis, name);
        let ok_slots = per_slot.values().filter(|n| **n == 1).count();
        assert!(per_slot.values().all(|n| *n == 1), "{name}: {per_slot:?}");
        let expected = if rerun { slots } else { slots / 2 };
        assert_eq!(ok_slots, expected, "{name}: successful slots {per_slot:?}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            !text.contains("OVERLAP"),
            "{name}: two jobs at once:\n{text}"
        );
        if rerun {
            // In each killed slot: BEGIN (attempt 1, killed), then BEGIN attempt 2 with a
            // larger fence.
            let begins: Vec<(u64, String)> = text
                .lines()
                .filter(|l| l.starts_with("BEGIN"))
                .map(|l| {
                    let w: Vec<&str> = l.split(' ').collect();
                    (w[2].parse().unwrap(), w[3].to_string())
                })
                .collect();
            let reruns: Vec<_> = begins.windows(2).filter(|w| w[1].1 == "2").collect();
            assert_eq!(reruns.len(), slots / 2, "{text}");
            assert!(reruns.iter().all(|w| w[1].0 > w[0].0), "fences: {text}");
        }
        summary(&format!(
            "cron: {name}: 4 hosts, {slots} slots of 3 s, winner SIGKILLed in {}: {ok_slots} slots with exactly one successful run",
            slots / 2
        ));
    }
}

/// A job that always kills its own wrapper runs exactly `--max-attempts` times in its
/// slot; the next try is skipped with `attempts_exhausted` (busy status, one line told
/// once, the `skipped` event says why).
#[test]
fn a_job_that_kills_its_host_runs_max_attempts_times_per_slot() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let events = s.path("events");
    let mut args = lock_args(&redis, "crash");
    args.extend(
        [
            "--ttl",
            "1s",
            "--once-per",
            "1h",
            "--if-vanished",
            "rerun",
            "--max-attempts",
            "2",
        ]
        .map(String::from),
    );
    let job = format!(
        "echo \"RUN $REDLOCK_ATTEMPT\" >> '{}'; kill -9 $PPID; sleep 5",
        log.display()
    );
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let out = output(redlock_run().args(&args).args([
            "--events",
            events.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &job,
        ]));
        statuses.push((out.status.code().unwrap_or(-1), stderr(&out)));
        // The vanished run's lease ends a ttl after its last renewal.
        assert!(eventually(Duration::from_secs(5), || {
            redis.get(&lock_key("crash")).is_none()
        }));
    }
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(runs, "RUN 1\nRUN 2\n", "{statuses:?}");
    // Told once for the fleet (issue 58 item 3): the first try that finds the slot
    // spent says it in one line, the next is silent.
    let (code, err) = &statuses[2];
    assert_eq!(*code, codes::BUSY, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("none succeeded (--max-attempts 2)"), "{err}");
    assert_eq!(statuses[3], (codes::BUSY, String::new()), "told twice");
    let events = std::fs::read_to_string(&events).unwrap();
    assert!(
        events.contains("\"reason\":\"attempts_exhausted\""),
        "{events}"
    );
}

/// `--if-vanished` says what a `--once-per` slot does, `--max-attempts` what a slot or
/// a `--once-id` does: without them they are refused with one line.
#[test]
fn rerun_flags_without_once_per_are_refused() {
    let redis = Redis::start();
    for (extra, says) in [
        (
            &["--if-vanished", "rerun"][..],
            "give --once-per PERIOD too",
        ),
        (&["--max-attempts", "2"][..], "give one of them too"),
    ] {
        let out = output(
            redlock_run()
                .args(lock_args(&redis, "nope"))
                .args(extra)
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1);
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(redis.keys().is_empty());
    }
}

/// The shipped unit's `ExecStart`, its program and metrics file made local.
fn shipped_exec_start(metrics: &std::path::Path, job: &std::path::Path) -> Vec<String> {
    let (unit, args) = shipped_unit("redlock-nightly-report.service", |a| match a {
        _ if a.ends_with(".prom") => Some(metrics.display().to_string()),
        "/opt/report/run" => Some(job.display().to_string()),
        _ => None,
    });
    assert!(
        unit.contains("\nUser="),
        "the unit runs the job as a named user"
    );
    args
}

/// The shipped systemd unit, as its timer fires it on three hosts at 02:00: the job
/// runs on one host; the others wait for that run and skip the day without a word
/// (75, which the unit's SuccessExitStatus makes a success). When the winner's host
/// dies mid-run, one of the waiting hosts runs the job as soon as its lease ends:
/// exactly one successful run either way.
#[test]
fn the_shipped_unit_runs_the_nightly_job_once_across_three_hosts() {
    let namespaces = hosts_can_be_namespaces();
    let s = Scratch::new();
    for kill_winner in [false, true] {
        let redis = Redis::start();
        let log = s.path(&format!("log-{kill_winner}"));
        let job = s.script(
            &format!("report-{kill_winner}"),
            &format!(
                "echo \"RUN $(hostname) $PPID $REDLOCK_ATTEMPT\" >> '{}'; sleep 1",
                log.display()
            ),
        );
        let metrics = s.path(&format!("report-{kill_winner}.prom"));
        let args = shipped_exec_start(&metrics, &job);
        let hosts: Vec<Child> = (0..3)
            .map(|h| {
                on_host(&format!("unit-host-{h}"), &args, namespaces)
                    // What /etc/redlock/env would hold; a short ttl so that a dead
                    // winner's lease ends within the test.
                    .env("REDLOCK_REDIS_URL", redis.url())
                    .env("REDLOCK_TTL", "2s")
                    // Each host its own local queue, as on separate machines.
                    .env(
                        "REDLOCK_LOCAL_DIR",
                        s.path(&format!("local-{kill_winner}-{h}")),
                    )
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        if kill_winner {
            assert!(wait_for_file(&log, "RUN", Duration::from_secs(10)));
            let text = std::fs::read_to_string(&log).unwrap();
            let wrapper: i32 = text.split(' ').nth(2).unwrap().parse().unwrap();
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(wrapper),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let mut statuses = Vec::new();
        for host in hosts {
            let (code, text) = ended(host);
            if code != -1 {
                assert!(text.is_empty(), "a host wrote output: {text:?}");
            }
            statuses.push(code);
        }
        statuses.sort();
        let runs = std::fs::read_to_string(&log).unwrap();
        let succeeded = successes_per_slot_of(&redis, "nightly-report", 86_400_000);
        if kill_winner {
            assert_eq!(runs.lines().count(), 2, "{runs}");
            assert!(
                runs.lines().nth(1).unwrap().ends_with(" 2"),
                "attempt 2: {runs}"
            );
            assert_eq!(statuses, [-1, 0, codes::BUSY], "{runs}");
        } else {
            assert_eq!(runs.lines().count(), 1, "{runs}");
            assert_eq!(statuses, [0, codes::BUSY, codes::BUSY], "{runs}");
        }
        assert_eq!(succeeded.values().sum::<usize>(), 1, "{succeeded:?}");
        summary(&format!(
            "cron: the shipped unit's ExecStart on 3 hosts{}, winner {}: {} job run(s), 1 success, statuses {statuses:?}",
            if namespaces { " (UTS namespaces)" } else { "" },
            if kill_winner {
                "SIGKILLed mid-run"
            } else {
                "alive"
            },
            runs.lines().count()
        ));
    }
}

/// `--once-id`: `n` runs of one ID started at once on this host; each appends `EXIT
/// <status> <ns>` to `exits` when it ends, and what it said to `errs`.
fn once_id_round(redis: &Redis, id: &str, n: usize, job: &str, s: &Scratch) -> Vec<Child> {
    let (exits, errs) = (s.path("exits"), s.path("errs"));
    (0..n)
        .map(|_| {
            let wrapped = format!(
                "{RUN} --key barrier --redis {} --once-id {id} -- sh -c {} 2>> '{}'; echo \"EXIT $? $(date +%s%N)\" >> '{}'",
                redis.url(),
                shell_words::quote(job),
                errs.display(),
                exits.display()
            );
            Command::new("sh")
                .args(["-c", &wrapped])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect()
}

/// The run-once barrier: 50 runs of one ID at once, 20 rounds (a new ID each): the
/// command runs exactly once a round, and the other 49 exit 0 within 1 s of its end
/// without running it; a later run of a done ID exits 0 at once, saying who ran it.
#[test]
fn once_id_runs_the_command_once_and_releases_every_other_run_of_the_id() {
    let redis = Redis::start();
    let mut slowest_ms = 0u64;
    let rounds = 20;
    for round in 0..rounds {
        let s = Scratch::new();
        let log = s.path("log");
        let job = format!(
            "echo \"RUN $REDLOCK_ATTEMPT\" >> '{log}'; sleep 0.3; echo \"END $(date +%s%N)\" >> '{log}'",
            log = log.display()
        );
        let id = format!("v1.{round}");
        for mut child in once_id_round(&redis, &id, 50, &job, &s) {
            wait_child(&mut child, Duration::from_secs(60));
        }
        let log = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            log.lines().filter(|l| l.starts_with("RUN")).count(),
            1,
            "round {round}: {log}"
        );
        let end: u64 = log
            .lines()
            .find_map(|l| l.strip_prefix("END "))
            .unwrap()
            .parse()
            .unwrap();
        let exits = std::fs::read_to_string(s.path("exits")).unwrap();
        assert_eq!(exits.lines().count(), 50);
        for line in exits.lines() {
            let w: Vec<&str> = line.split(' ').collect();
            assert_eq!(w[1], "0", "round {round}: {exits}");
            let at: u64 = w[2].parse().unwrap();
            slowest_ms = slowest_ms.max(at.saturating_sub(end) / 1_000_000);
        }
        assert!(
            slowest_ms < 1000,
            "round {round}: a run ended {slowest_ms} ms after the command"
        );
        // Each run that did not run it said one line: who did.
        let errs = std::fs::read_to_string(s.path("errs")).unwrap();
        assert_eq!(errs.lines().count(), 49, "{errs}");
        let done = format!("--once-id {id} already done");
        let other: Vec<&str> = errs.lines().filter(|l| !l.contains(&done)).collect();
        assert!(other.is_empty(), "round {round}: {other:?}");
    }
    // Later: exit 0 at once, nothing run, one line naming the run that did it.
    let out = output(redlock_run().args(lock_args(&redis, "barrier")).args([
        "--once-id",
        "v1.0",
        "--",
        "sh",
        "-c",
        "echo ran",
    ]));
    assert_eq!((code(&out), stdout(&out).as_str()), (0, ""));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--once-id v1.0 already done") && err.contains("exit 0"),
        "{err}"
    );
    // Every key written expires (the ID's record with --retain).
    let ttl = pttl(&redis, "redlock:{barrier}:once:v1.0");
    assert!(ttl > 0, "the ID's record has no expiry: {ttl}");
    summary(&format!(
        "cron: --once-id, 50 runs at once, {rounds} rounds: the command ran once a round; the other 49 exited 0 at most {slowest_ms} ms after its end"
    ));
}

/// A failing first run of an ID gives exactly one more run (by one of the waiting
/// runs); the first run exits with its command's status, every other run 0.
#[test]
fn once_id_runs_again_once_after_a_failure() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let marker = s.path("failed-once");
    let job = format!(
        "echo \"RUN $REDLOCK_ATTEMPT\" >> '{log}'; sleep 0.2; if [ -e '{m}' ]; then exit 0; fi; touch '{m}'; exit 3",
        log = log.display(),
        m = marker.display()
    );
    for mut child in once_id_round(&redis, "migrate-7", 10, &job, &s) {
        wait_child(&mut child, Duration::from_secs(60));
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "RUN 1\nRUN 2\n");
    let exits = std::fs::read_to_string(s.path("exits")).unwrap();
    let mut statuses: Vec<&str> = exits
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    statuses.sort();
    assert_eq!(statuses, [["0"; 9].as_slice(), &["3"]].concat(), "{exits}");
}

/// `--once-id` with `--once-per` or `--limit` is refused with one line, nothing written.
#[test]
fn once_id_with_once_per_or_limit_is_refused() {
    let redis = Redis::start();
    for extra in [&["--once-per", "1h"][..], &["--limit", "2"][..]] {
        let out = output(
            redlock_run()
                .args(lock_args(&redis, "nope"))
                .args(["--once-id", "x"])
                .args(extra)
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1);
        assert!(redis.keys().is_empty());
    }
}

/// A crontab block run as cron runs it: each `NAME=value` line sets a variable for the
/// lines below it, and each job line's command (after its five time fields) runs
/// under `/bin/sh -c` with cron's own environment (`PATH=/usr/bin:/bin`, measured by
/// newcomer-5 from cron's mail headers; `SHELL`, `HOME`, `LOGNAME`) plus those. Texts
/// in `paths` are replaced first (a path of the docs by the test's). Each job line's
/// status and output, in order; `before` runs before each line.
fn as_cron(block: &str, paths: &[(&str, String)], mut before: impl FnMut()) -> Vec<(i32, String)> {
    let mut vars: Vec<(String, String)> = Vec::new();
    let mut ran = Vec::new();
    for line in block.lines().map(str::trim) {
        let mut line = line.to_string();
        for (from, to) in paths {
            line = line.replace(from, to);
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((name, value)) = first.split_once('=')
            && !line.starts_with('*')
        {
            vars.push((name.to_string(), value.to_string()));
            continue;
        }
        let command = line
            .splitn(6, char::is_whitespace)
            .nth(5)
            .expect("a job line");
        before();
        let out = Command::new("/bin/sh")
            .args(["-c", command])
            .env_clear()
            .envs([
                ("PATH", "/usr/bin:/bin"),
                ("SHELL", "/bin/sh"),
                ("HOME", "/root"),
                ("LOGNAME", "root"),
            ])
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("sh");
        ran.push((
            out.status.code().unwrap_or(-1),
            format!(
                "{command}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    ran
}

/// (newcomer-5 P7) Cron's PATH is `/usr/bin:/bin`: a `redlock-run` in `/usr/local/bin`
/// (the archive's) is not found, exit 127 on every host at every tick. The cron guide's
/// and the install page's lines (`PATH=` in the crontab, or the absolute path) run the
/// job under cron's environment; the bare line without them does not.
#[test]
fn the_documented_crontab_lines_find_redlock_run_on_crons_path() {
    let redis = Redis::start();
    let s = Scratch::new();
    let bin = s.path("usr-local-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(RUN, bin.join("redlock-run")).unwrap();
    let url = s.path("url");
    std::fs::write(&url, redis.url()).unwrap();
    let ran = s.path("ran");
    let job = s.script(
        "close_orders.sh",
        &format!("echo ran >> '{}'", ran.display()),
    );
    let paths = [
        ("/usr/local/bin", bin.display().to_string()),
        ("/etc/redlock/url", url.display().to_string()),
        ("/opt/jobs/close_orders.sh", job.display().to_string()),
    ];
    let url_line = format!("REDLOCK_REDIS_URL_FILE={}\n", url.display());
    let fresh = || redis.forget_names();
    let mut jobs = 0;
    for (id, block) in [
        ("cron-path", example("cron-path")),
        // The install page's block names no URL: the guide's file gives it.
        (
            "install-cron-path",
            url_line.clone() + &example("install-cron-path"),
        ),
    ] {
        for (status, said) in as_cron(&block, &paths, fresh) {
            assert_eq!(status, 0, "{id}: {said}");
            jobs += 1;
        }
    }
    assert_eq!(std::fs::read_to_string(&ran).unwrap().lines().count(), jobs);
    // What the line without them does under cron's PATH (unless this machine has the
    // package installed: then /usr/bin/redlock-run is found, as the docs say).
    if !std::path::Path::new("/usr/bin/redlock-run").exists() {
        let bare = format!(
            "{url_line}* * * * * redlock-run --key close-order --once-per 1m -- /opt/jobs/close_orders.sh"
        );
        let ran = as_cron(&bare, &paths, fresh);
        assert_eq!(ran[0].0, 127, "{}", ran[0].1);
        assert!(ran[0].1.contains("not found"), "{}", ran[0].1);
    }
}

/// Issue 58 item 6 (review-7 #3): a slot's starts are counted in the run history, so a
/// `--history` that keeps fewer records than `--max-attempts` counts (3 by default with
/// `--if-vanished rerun`) would let a failing job start again and again in one slot (6
/// starts in 6 tries with `--history 1`). Such a run is refused with one line (64),
/// nothing written; a history as long as the attempts is accepted.
#[test]
fn a_history_shorter_than_max_attempts_is_refused() {
    let redis = Redis::start();
    for (extra, says) in [
        (
            &["--if-vanished", "rerun", "--history", "1"][..],
            "--history 1",
        ),
        (
            &["--max-attempts", "3", "--history", "2"][..],
            "--history 2",
        ),
        (
            &[
                "--if-vanished",
                "rerun",
                "--max-attempts",
                "5",
                "--history",
                "4",
            ][..],
            "--max-attempts 5",
        ),
    ] {
        let out = output(
            redlock_run()
                .args(lock_args(&redis, "short"))
                .args(["--once-per", "1h"])
                .args(extra)
                .args(["--", "true"]),
        );
        let err = stderr(&out);
        assert_eq!(code(&out), codes::USAGE, "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(redis.keys().is_empty(), "{extra:?}: a key was written");
    }
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "short"))
            .args(["--once-per", "1h", "--max-attempts", "3", "--history", "3"])
            .args(["--", "true"]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

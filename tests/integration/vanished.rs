//! A vanished run is told once (issue 51): a run whose host died mid-job is said in one
//! line by one try in the whole fleet (the next slot's first try, or the next try of
//! the `--once-id`), with its `vanished` event and metric; every other try says nothing
//! of it. Hosts are UTS namespaces with their own host name (where `unshare` may run).

use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::nemesis::summary;
use crate::harness::*;

/// Every try's lease: short, so a killed winner's lease ends within its 4 s slot, with
/// a node timeout a loaded machine keeps (ttl/15 would be 133 ms); no local queue.
const LEASE: [&str; 5] = ["--ttl", "2s", "--node-timeout", "300ms", "--no-local-queue"];

/// A slot's tries: one `redlock-run` per host, started together, each with its own
/// `--events` and `--metrics` files (kept across slots, as a host's would be).
fn fire(redis: &Redis, s: &Scratch, hosts: usize, job: &str, namespaces: bool) -> Vec<Child> {
    (0..hosts)
        .map(|h| {
            let mut args = lock_args(redis, "told");
            args.extend(["--once-per", "4s"].map(String::from));
            args.extend(LEASE.map(String::from));
            for (flag, file) in [("--events", "events"), ("--metrics", "metrics")] {
                args.extend([
                    flag.into(),
                    s.path(&format!("{file}-{h}")).display().to_string(),
                ]);
            }
            on_host(&format!("told-host-{h}"), &args, namespaces)
                .args(["--", "sh", "-c", job])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect()
}

/// The `BEGIN <wrapper pid> <command pid> <host>` line the slot's winner wrote.
fn begun(log: &std::path::Path) -> (i32, i32, String) {
    assert!(wait_for_file(log, "BEGIN", READY), "no run began");
    let text = std::fs::read_to_string(log).unwrap();
    let w: Vec<&str> = text.lines().next().unwrap().split(' ').collect();
    (
        w[1].parse().unwrap(),
        w[2].parse().unwrap(),
        w[3].to_string(),
    )
}

/// SIGKILLs the run's wrapper and its command, as a host that dies does.
fn kill_run(wrapper: i32, command: i32) {
    for pid in [wrapper, command] {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Slot k (starting at `slot`) on three hosts that fire together: the two that lose are
/// silent `in_progress` skips, then the winner is SIGKILLed (its wrapper and its
/// command) mid-job; returns once its lease is gone, within slot k: (the winner's
/// wrapper pid, its host).
fn slot_whose_winner_is_killed(redis: &Redis, s: &Scratch, slot: u64, ns: bool) -> (i32, String) {
    let log = s.path("begun");
    redis.sleep_until(slot + 100);
    let job = format!(
        "echo \"BEGIN $PPID $$ $(hostname)\" >> '{}'; sleep 5",
        log.display()
    );
    let mut tries = fire(redis, s, 3, &job, ns);
    let (wrapper, command, host) = begun(&log);
    let winner = tries.iter().position(|c| c.id() as i32 == wrapper);
    let mut winner = tries.remove(winner.expect("the winner is one of the tries"));
    for child in tries {
        assert_eq!(finish(child, READY), (codes::BUSY, String::new()), "slot k");
    }
    kill_run(wrapper, command);
    wait_child(&mut winner, READY);
    assert!(eventually(READY, || !redis.exists(&lock_key("told"))));
    assert!(redis.now_ms() < slot + 4000, "the lease outlived slot k");
    (wrapper, host)
}

/// Of the tries' stderr (`ends`), exactly one says something: one line naming the run
/// of `host` and `wrapper` that vanished in the slot starting at `slot`. Returns it.
fn told_once(ends: &[(i32, String)], host: &str, wrapper: i32, slot: u64) -> String {
    let told: Vec<&String> = ends
        .iter()
        .map(|(_, e)| e)
        .filter(|e| !e.is_empty())
        .collect();
    assert_eq!(told.len(), 1, "one try tells: {ends:?}");
    let line = told[0];
    let started =
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_millis(slot));
    assert_eq!(line.lines().count(), 1, "{line}");
    for needle in [
        "vanished".to_string(),
        format!("{host} pid {wrapper}"),
        format!("slot from {started}"),
    ] {
        assert!(line.contains(&needle), "{needle:?} not in {line}");
    }
    line.clone()
}

/// The default cron line on three hosts that fire together: slot k's winner is
/// SIGKILLed (its wrapper and its command) mid-job, while the other two tries of slot k
/// were silent `in_progress` skips. Slot k+1 runs once, and exactly one of its tries
/// says, in one line, which run vanished (its slot, host, pid and start), with a
/// `vanished` event and `redlock_vanished_runs_total` 1 in its metrics; the other tries
/// print nothing.
#[test]
fn a_vanished_run_is_told_once_by_the_next_slot() {
    let namespaces = hosts_can_be_namespaces();
    let redis = Redis::start();
    let s = Scratch::new();
    let runs = s.path("runs");
    let slot = redis.now_ms() / 4000 * 4000 + 4000;
    let (wrapper, host) = slot_whose_winner_is_killed(&redis, &s, slot, namespaces);
    redis.sleep_until(slot + 4100);
    let job = format!("echo \"RUN $REDLOCK_SLOT_START\" >> '{}'", runs.display());
    let ends: Vec<(i32, String)> = fire(&redis, &s, 3, &job, namespaces)
        .into_iter()
        .map(|c| finish(c, READY))
        .collect();
    let ran = std::fs::read_to_string(&runs).unwrap_or_default();
    assert_eq!(ran, format!("RUN {}\n", slot + 4000), "slot k+1 runs once");
    let line = told_once(&ends, &host, wrapper, slot);
    let said = |file: &str, needle: &str| {
        (0..3)
            .filter(|h| {
                std::fs::read_to_string(s.path(&format!("{file}-{h}")))
                    .unwrap_or_default()
                    .contains(needle)
            })
            .count()
    };
    assert_eq!(said("events", "\"event\":\"vanished\""), 1);
    let count = |n: u32| format!("redlock_vanished_runs_total{{name=\"told\"}} {n}");
    assert_eq!(
        (said("metrics", &count(1)), said("metrics", &count(0))),
        (1, 2)
    );
    summary(&format!(
        "vanished: 3 hosts{}, slot k's winner SIGKILLed: slot k+1 ran once, 1 of its 3 tries told it: {line}",
        if namespaces { " (UTS namespaces)" } else { "" },
    ));
}

/// `--once-id`: the first run of an ID is SIGKILLed (wrapper and command) mid-run; the
/// two runs of the ID that come next run it once more between them, and exactly one of
/// them says, in one line, which attempt vanished; a later run says nothing of it.
#[test]
fn a_vanished_once_id_attempt_is_told_once_by_the_next_try() {
    let redis = Redis::start();
    let s = Scratch::new();
    let (log, runs) = (s.path("begun"), s.path("runs"));
    let mut args = lock_args(&redis, "told-id");
    args.extend(["--once-id", "v9"].map(String::from));
    args.extend(LEASE.map(String::from));
    let job = format!(
        "echo \"BEGIN $PPID $$ $(hostname)\" >> '{}'; sleep 5",
        log.display()
    );
    let first = start_run(&args, &job);
    let (wrapper, command, _) = begun(&log);
    kill_run(wrapper, command);
    let mut first = first;
    wait_child(&mut first, READY);
    let job = format!("echo \"RUN $REDLOCK_ATTEMPT\" >> '{}'", runs.display());
    let next: Vec<Child> = (0..2).map(|_| start_run(&args, &job)).collect();
    let ends: Vec<(i32, String)> = next.into_iter().map(|c| finish(c, READY)).collect();
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "RUN 2\n");
    assert!(ends.iter().all(|(code, _)| *code == 0), "{ends:?}");
    let told: Vec<&String> = ends
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e.contains("vanished"))
        .collect();
    assert_eq!(told.len(), 1, "one try tells: {ends:?}");
    let line = told[0].lines().find(|l| l.contains("vanished")).unwrap();
    assert!(line.contains(&format!("pid {wrapper}")), "{line}");
    assert!(line.contains("--once-id v9"), "{line}");
    let (code, err) = try_once(&args, "true");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("vanished"), "told again: {err}");
}

/// A `--once-per 1h` run of `name` (`extra` flags beside) whose host dies mid-job: its
/// wrapper, group guard and command SIGKILLed together, so nothing of it tidies; returns
/// once its lease is gone.
fn host_dies_mid_run(redis: &Redis, s: &Scratch, name: &str, extra: &[String]) {
    let log = s.path(&format!("begun-{name}"));
    let mut args = lock_args(redis, name);
    args.extend(["--once-per", "1h"].map(String::from));
    args.extend(LEASE.map(String::from));
    args.extend(extra.iter().cloned());
    let job = format!(
        "echo \"BEGIN $PPID $$ $(hostname)\" >> '{}'; sleep 30",
        log.display()
    );
    let mut run = start_run(&args, &job);
    let (wrapper, command, _) = begun(&log);
    let guard = guard_of(wrapper).expect("the run's group guard");
    kill_run(guard, wrapper);
    kill_run(command, guard);
    wait_child(&mut run, READY);
    assert!(eventually(READY, || !redis.exists(&lock_key(name))));
}

/// Issue 58 item 2 (newcomer-7 #9): a `-q` try that marks a vanished run told still
/// prints its one line (it asks a human to check: neither a waiting line nor a busy
/// note), so a fleet whose lines say `-q` still mails it once; the next try, told, says
/// nothing. Before, the quiet try printed nothing and marked it told: no host said it.
#[test]
fn a_quiet_try_still_tells_the_vanished_run() {
    let redis = Redis::start();
    let s = Scratch::new();
    host_dies_mid_run(&redis, &s, "quiet", &[]);
    let mut args = lock_args(&redis, "quiet");
    args.extend(["--once-per", "1h"].map(String::from));
    args.extend(LEASE.map(String::from));
    let quiet = [&args[..], &["-q".to_string()]].concat();
    let (status, err) = try_once(&quiet, "true");
    assert_eq!(status, codes::BUSY, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("its end was never recorded"), "{err}");
    let (status, err) = try_once(&args, "true");
    assert_eq!((status, err.as_str()), (codes::BUSY, ""), "told twice");
}

/// Issue 58 item 10 (newcomer-7 #10): a host that died mid-run (its wrapper, guard and
/// command together) left its `--metrics` file at `redlock_running 1`; the next try of
/// that host that tells the dead run (name `own`), or sees it told by another host's
/// try (name `seen`), settles the file to `redlock_running 0`: the dead run is no
/// longer read as running hours later. Before, the file said 1 until the host won a
/// later slot.
#[test]
fn a_try_that_tells_or_sees_its_hosts_dead_run_settles_its_metrics() {
    let redis = Redis::start();
    let s = Scratch::new();
    for (name, told_elsewhere) in [("own", false), ("seen", true)] {
        let file = s.path(&format!("{name}.prom"));
        let metrics = ["--metrics".to_string(), file.display().to_string()];
        host_dies_mid_run(&redis, &s, name, &metrics);
        let running = |v: u8| format!("redlock_running{{name=\"{name}\"}} {v}\n");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(&running(1)), "nothing tidied: {text}");
        let mut args = lock_args(&redis, name);
        args.extend(["--once-per", "1h"].map(String::from));
        args.extend(LEASE.map(String::from));
        if told_elsewhere {
            let mut other = args.clone();
            other.extend([
                "--metrics".into(),
                s.path("other.prom").display().to_string(),
            ]);
            let (status, err) = try_once(&other, "true");
            assert!(
                status == codes::BUSY && err.contains("never recorded"),
                "{err}"
            );
        }
        args.extend(metrics);
        let (status, err) = try_once(&args, "true");
        assert_eq!(status, codes::BUSY, "{err}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(&running(0)), "{name}: still running: {text}");
        assert!(!text.contains(&running(1)), "{name}: {text}");
    }
}

//! Waiting for a busy lock: a waiter takes over on release long before the ttl, gets
//! the lock of a crashed holder after its expiry, survives killed connections, and
//! shows that it waits (a status line on a terminal, lines in a log).

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::*;

// Waiters --------------------------------------------------------------------------

/// Waits until a waiter has joined the lock's waiters (it is in its wait loop; a
/// release from now on pushes a wake-up that it will find).
fn wait_for_waiter(redis: &Redis, name: &str) -> bool {
    let waiters = format!("{}:waiters", lock_key(name));
    eventually(READY, || redis.cmd::<i64>(&["SCARD", &waiters]) >= 1)
}

/// Whether some client is blocked in BLPOP (a waiter waiting for a wake-up).
fn blocked_in_pop(redis: &Redis) -> bool {
    let clients: String = redis.cmd(&["CLIENT", "LIST"]);
    clients.lines().any(|l| l.contains("cmd=blpop"))
}

#[test]
fn waiter_takes_over_on_release_long_before_the_ttl() {
    let redis = Redis::start();
    let s = Scratch::new();
    let ran = s.path("ran");
    let mut args = lock_args(&redis, "handover");
    args.extend(["--ttl".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let acquired_by = Instant::now();

    let mut wargs = lock_args(&redis, "handover");
    wargs.extend(["--wait".into(), "30s".into()]);
    let waiter = start_run(&wargs, &format!("touch '{}'", ran.display()));
    assert!(
        wait_for_waiter(&redis, "handover"),
        "waiter never joined the waiters"
    );
    assert!(!ran.exists(), "waiter ran while the lock was held");

    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    let (code, err) = finish(waiter, Duration::from_secs(40));
    assert_eq!(code, 0, "{err}");
    assert!(ran.exists());
    // Order, not duration: the waiter was done before the holder's key would have
    // expired on its own (60 s after it was taken), so the release woke it.
    assert!(
        Instant::now() < acquired_by + Duration::from_secs(60),
        "the waiter only got in after the holder's ttl"
    );
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn waiter_gets_the_lock_of_a_crashed_holder_after_expiry() {
    let redis = Redis::start();
    let s = Scratch::new();
    let key = lock_key("crashed");
    let (ready, cpid, ran) = (s.path("ready"), s.path("cpid"), s.path("ran"));
    let mut args = lock_args(&redis, "crashed");
    args.extend(["--ttl".into(), "2s".into()]);
    let mut holder = start_run(
        &args,
        &format!(
            "echo $$ > '{cpid}'; touch '{ready}'; exec sleep 1000",
            cpid = cpid.display(),
            ready = ready.display()
        ),
    );
    assert!(wait_for_file(&ready, "", READY), "holder never got ready");
    let child = read_pid(&cpid);

    let mut wargs = lock_args(&redis, "crashed");
    wargs.extend(["--wait".into(), "30s".into()]);
    let waiter = start_run(
        &wargs,
        // The old child must be gone (or a zombie) by the time the waiter's command
        // starts; 98 says it was not.
        &format!(
            "if kill -0 {child} 2>/dev/null && ! grep -q '^State:.*Z' /proc/{child}/status
             then exit 98; fi
             touch '{ran}'",
            ran = ran.display()
        ),
    );
    assert!(
        wait_for_waiter(&redis, "crashed"),
        "waiter never joined the waiters"
    );
    holder.kill().expect("kill -9 the holder");
    holder.wait().ok();
    assert!(redis.exists(&key), "a crashed holder released its lock");

    let (code, err) = finish(waiter, Duration::from_secs(40));
    assert_eq!(code, 0, "{err}");
    assert!(ran.exists());
    assert!(!alive(child), "the crashed holder's child still runs");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

#[test]
fn waiter_survives_killed_connections_while_waiting() {
    let redis = Redis::start();
    let s = Scratch::new();
    let ran = s.path("ran");
    let holder = Holding::start(&lock_args(&redis, "patient"));
    let mut wargs = lock_args(&redis, "patient");
    wargs.extend(["--wait".into(), "30s".into()]);
    let mut waiter = start_run(&wargs, &format!("touch '{}'", ran.display()));
    assert!(
        wait_for_waiter(&redis, "patient"),
        "waiter never joined the waiters"
    );
    assert!(
        eventually(READY, || blocked_in_pop(&redis)),
        "never blocked"
    );
    // The waiter's command connection and its blocked pop go; the holder's command
    // connection too. Neither may turn into an error or a missed release.
    let killed: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert!(killed >= 3, "killed {killed}");
    // The waiter polls again within its backoff cap (2 s): once an EVALSHA reached the
    // server after the kill, the waiter has been through its broken connection.
    let n0 = evalsha_calls(&redis);
    assert!(
        eventually(READY, || evalsha_calls(&redis) > n0
            || matches!(waiter.try_wait(), Ok(Some(_)))),
        "nobody tried again"
    );
    assert!(
        matches!(waiter.try_wait(), Ok(None)),
        "the waiter gave up after its connection was killed"
    );
    assert!(!ran.exists(), "waiter ran while the lock was held");
    // It blocks again, so the release below wakes it, not its safety net.
    assert!(
        eventually(READY, || blocked_in_pop(&redis)),
        "the waiter did not block again"
    );
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    let (code, err) = finish(waiter, Duration::from_secs(40));
    assert_eq!(code, 0, "{err}");
    assert!(ran.exists());
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// How many EVALSHA calls the server has run (INFO commandstats).
fn evalsha_calls(redis: &Redis) -> u64 {
    let info: String = redis.cmd(&["INFO", "commandstats"]);
    stat(&info, "evalsha", "calls")
}

/// Script calls that ran a script: EVALSHA calls, but those answered NOSCRIPT, and
/// the EVAL that follows them.
pub fn evalsha_runs(redis: &Redis) -> u64 {
    let info: String = redis.cmd(&["INFO", "commandstats"]);
    // A script the server did not have yet is run by EVAL after a failed EVALSHA.
    ["evalsha", "eval"]
        .iter()
        .map(|command| stat(&info, command, "calls") - stat(&info, command, "failed_calls"))
        .sum()
}

fn stat(info: &str, command: &str, field: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:")))
        .and_then(|rest| {
            rest.split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

// Waiting people can see ----------------------------------------------------------------

/// A waiter started in the background with stderr into a file (a CI log).
fn waiter_to_file(
    redis: &Redis,
    name: &str,
    extra: &[&str],
    err: &std::path::Path,
) -> std::process::Child {
    redlock_run()
        .args(lock_args(redis, name))
        .args(["--wait", "60s"])
        .args(extra)
        .args(["--", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .expect("spawn waiter")
}

/// Off a terminal (a CI log): a line when waiting starts, naming the holder, a line
/// when the holder changes, and "acquired … after …" at the end; without --verbose.
#[test]
fn a_waiter_in_a_log_says_it_waits_who_holds_and_when_it_got_the_lock() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let err = scratch.path("waiter.err");
    // A short ttl: the waiter's safety net (the holder's time to live) is short too, so
    // it notices soon a holder that changed without a release.
    let mut args = lock_args(&redis, "logged");
    args.extend(["--ttl".into(), "3s".into()]);
    let holder = Holding::start(&args);
    let mut waiter = waiter_to_file(&redis, "logged", &[], &err);
    assert!(wait_for_file(&err, "waiting for logged: held by", READY));
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(
        said.contains(&format!("pid {}", holder.wrapper_pid())),
        "{said}"
    );
    // Another holder takes over behind the first one's back.
    let key = lock_key("logged");
    let _: () = redis.cmd(&["SET", &key, "another-client", "PX", "8000"]);
    assert!(
        wait_for_file(&err, "now held by an unknown holder", READY),
        "{}\n{}\n{:?}",
        std::fs::read_to_string(&err).unwrap_or_default(),
        redis.cmd::<String>(&["CLIENT", "LIST"]),
        redis.keys()
    );
    let status = wait_child(&mut waiter, Duration::from_secs(60));
    let said = std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(
        said.lines()
            .last()
            .unwrap_or("")
            .contains("acquired logged after"),
        "{said}"
    );
    assert!(
        !said.contains('\r') && !said.contains('\x1b'),
        "no terminal codes in a log: {said:?}"
    );
    let (code, _) = holder.finish();
    assert_eq!(code, codes::LOST);
}

/// `--quiet` silences waiting; so does `--busy-exit-code 0` off a terminal.
#[test]
fn a_quiet_or_busy_is_fine_waiter_says_nothing() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    for (name, extra) in [
        ("q1", vec!["--quiet"]),
        ("q2", vec!["--busy-exit-code", "0"]),
    ] {
        let err = scratch.path(&format!("{name}.err"));
        let holder = Holding::start(&lock_args(&redis, name));
        let mut waiter = waiter_to_file(&redis, name, &extra, &err);
        assert!(wait_for_waiter(&redis, name));
        let (code, _) = holder.finish();
        assert_eq!(code, 0);
        let status = wait_child(&mut waiter, Duration::from_secs(60));
        let said = std::fs::read_to_string(&err).unwrap();
        assert_eq!(status.code(), Some(0), "{said}");
        assert_eq!(said, "", "{extra:?} must say nothing");
    }
}

/// On a terminal: one status line updated in place (the time waited goes up), cut to
/// the width, and cleared when the lock is taken.
#[test]
fn a_waiter_on_a_terminal_updates_one_status_line() {
    use std::process::Command;
    let redis = Redis::start();
    let holder = Holding::start(&lock_args(&redis, "tty"));
    let mut cmd = Command::new(RUN);
    cmd.args(lock_args(&redis, "tty"))
        .args(["--wait", "60s", "--", "true"]);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("REDLOCK_") {
            cmd.env_remove(name);
        }
    }
    let (mut running, _master) = start_on_pty(cmd, None);
    assert!(
        eventually(READY, || running.said().contains("waited 2s")),
        "{:?}",
        running.said()
    );
    let (code, _) = holder.finish();
    assert_eq!(code, 0);
    assert_eq!(running.code(), 0, "{:?}", running.said());
    let screen = running.said();
    assert!(
        screen.contains("\rredlock-run: waiting for tty: waited 1s, "),
        "{screen:?}"
    );
    assert!(screen.contains("left; held by "), "{screen:?}");
    // Every update rewrites the same line: no newline until it is cleared.
    assert!(!screen.contains('\n'), "{screen:?}");
    assert!(
        screen.ends_with("\r\x1b[K"),
        "cleared at the end: {screen:?}"
    );
}

// One waiter woken per release ------------------------------------------------------------

/// The ids of the clients blocked in BLPOP.
fn blocked_clients(redis: &Redis) -> Vec<String> {
    let clients: String = redis.cmd(&["CLIENT", "LIST"]);
    let mut ids: Vec<String> = clients
        .lines()
        .filter(|l| l.contains("cmd=blpop") && l.contains("flags=b"))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    ids.sort();
    ids
}

/// A waiter whose command marks that it ran, then waits for `go`.
fn parked_waiter(args: &[String], s: &Scratch, i: usize) -> std::process::Child {
    start_run(
        args,
        &format!(
            "touch '{ran}'; while [ ! -e '{go}' ]; do sleep 0.02; done",
            ran = s.path(&format!("ran{i}")).display(),
            go = s.path("go").display()
        ),
    )
}

/// How many parked waiters have run their command.
fn ran(s: &Scratch, n: usize) -> usize {
    (0..n)
        .filter(|i| s.path(&format!("ran{i}")).exists())
        .count()
}

/// Every command Redis ran (those inside scripts included), by name, less the test's
/// own INFO and CONFIG RESETSTAT.
fn commands_run(redis: &Redis) -> Vec<(String, u64)> {
    let info: String = redis.cmd(&["INFO", "commandstats"]);
    let mut out: Vec<(String, u64)> = info
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, _) = l.split_once(':')?;
            Some((name.to_string(), stat(&info, name, "calls")))
        })
        .filter(|(name, _)| name != "info" && name != "config|resetstat")
        .collect();
    out.sort();
    out
}

/// A hand-over (the holder's release, the wake-up, the woken waiter's acquire) costs
/// 18 commands after the waiter's BLPOP (counted when it blocked), the scripts' own
/// included: the release's EVALSHA, GET, LPUSH and PEXPIRE of its record, DEL, EXISTS,
/// LPUSH and PEXPIRE of the wake-up; the acquire's EVALSHA, GET of the mode, SET, GET
/// and SET of the fence, TIME, HSET and PEXPIRE of the metadata, SREM from the waiters
/// and DEL of the wake list. The taker of a plain lock clears the wake list without
/// first asking whether others wait (19 before: EXISTS).
#[test]
fn a_hand_over_is_eighteen_commands_after_the_pop() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "handover");
    args.extend(["--ttl".into(), "60s".into()]);
    // The scripts in the server's cache, as on any server in use.
    let warm = output(redlock_run().args(&args).args(["--", "true"]));
    assert_eq!(code(&warm), 0, "{}", stderr(&warm));
    let holder = Holding::start(&args);
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into(), "--no-local-queue".into()]);
    let mut waiter = parked_waiter(&wargs, &s, 0);
    assert!(
        eventually(READY, || blocked_clients(&redis).len() == 1),
        "the waiter never blocked"
    );
    let _: String = redis.cmd(&["CONFIG", "RESETSTAT"]);
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    assert!(eventually(READY, || ran(&s, 1) == 1), "nobody took over");
    let run = commands_run(&redis);
    let total: u64 = run.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 18, "{run:?}");
    std::fs::write(s.path("go"), "").unwrap();
    assert_eq!(waiter.wait().unwrap().code(), Some(0));
}

/// Five waiters blocked; one release: exactly one of them wakes to take the lock, and
/// one more as its backup, which tries once after a grace period (a woken waiter may be
/// stopped) and blocks again; the other three stay blocked on the same connections.
/// Counted from the server, never timed.
#[test]
fn one_release_wakes_one_waiter() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "herd");
    // A long ttl: no waiter's safety net and no renewal comes due during the test.
    args.extend(["--ttl".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let mut wargs = args.clone();
    // The Redis level's wake-one: every waiter in Redis (on one host they would queue
    // locally, one contender at a time; see local_queue.rs).
    wargs.extend(["--wait".into(), "60s".into(), "--no-local-queue".into()]);
    let mut waiters: Vec<_> = (0..5).map(|i| parked_waiter(&wargs, &s, i)).collect();
    assert!(
        eventually(READY, || blocked_clients(&redis).len() == 5),
        "five waiters never blocked: {:?}",
        blocked_clients(&redis)
    );
    let before = blocked_clients(&redis);
    let runs = evalsha_runs(&redis);
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    assert!(eventually(READY, || ran(&s, 5) == 1), "nobody took over");
    // The release, one acquire (the woken waiter's) and one try of the backup after
    // its grace period, which finds the lock taken and blocks again. Nobody else tried.
    // (The waiter that took the lock blocks again 250 ms into its command, on a new
    // connection of its own, listening for a request to stop: not one of `before`.)
    let still_blocked = || -> Vec<String> {
        let now = blocked_clients(&redis);
        now.into_iter().filter(|id| before.contains(id)).collect()
    };
    assert!(
        eventually(READY, || evalsha_runs(&redis) - runs >= 3
            && still_blocked().len() == 4),
        "the backup never tried and blocked again"
    );
    assert_eq!(evalsha_runs(&redis) - runs, 3, "more than two waiters woke");
    let after = still_blocked();
    assert_eq!(after.len(), 4, "{before:?} -> {after:?}");
    std::fs::write(s.path("go"), "").unwrap();
    for waiter in &mut waiters {
        let status = wait_child(waiter, Duration::from_secs(60));
        assert_eq!(status.code(), Some(0));
    }
    assert_eq!(ran(&s, 5), 5);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// The wake-up of a release is taken by a waiter that then dies before trying (here:
/// the test pops it, blocked before everyone else). The others are not stranded: their
/// safety net brings them back when the released holder's key could have expired, and
/// they all get the lock in turn.
#[test]
fn a_waiter_dead_after_its_wake_up_does_not_strand_the_others() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "stranded");
    args.extend(["--ttl".into(), "3s".into()]);
    let holder = Holding::start(&args);
    // The "dead waiter": first in line on the wake list.
    let wake = format!("{}:wake", lock_key("stranded"));
    let url = redis.url();
    let thief = std::thread::spawn(move || {
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        let popped: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(&wake)
            .arg(60)
            .query(&mut conn)
            .unwrap();
        popped.is_some()
    });
    assert!(eventually(READY, || blocked_clients(&redis).len() == 1));
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into(), "--no-local-queue".into()]);
    let mut waiters: Vec<_> = (0..3).map(|i| parked_waiter(&wargs, &s, i)).collect();
    assert!(eventually(READY, || blocked_clients(&redis).len() == 4));
    std::fs::write(s.path("go"), "").unwrap();
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    assert!(
        thief.join().unwrap(),
        "the first blocked client got the wake-up"
    );
    for waiter in &mut waiters {
        let status = wait_child(waiter, Duration::from_secs(60));
        assert_eq!(status.code(), Some(0));
    }
    assert_eq!(ran(&s, 3), 3);
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// A wake-up pushed for a waiter that then takes the lock without popping it (its own
/// try, or a quorum on other nodes) is not left behind: the last waiter to leave the
/// waiters deletes the wake list. Set up without timing: the waiter is frozen (SIGSTOP)
/// while blocked, so the first release's wake-up goes to its socket and a second
/// release (the set still names it) pushes one it never pops.
#[test]
fn a_wake_up_nobody_pops_leaves_with_the_last_waiter() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let redis = Redis::start();
    let mut args = lock_args(&redis, "unpopped");
    args.extend(["--ttl".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into()]);
    let waiter = start_run(&wargs, "true");
    assert!(eventually(READY, || blocked_clients(&redis).len() == 1));
    let pid = Pid::from_raw(waiter.id() as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    let (code, err) = Holding::start(&args).finish();
    assert_eq!(code, 0, "{err}");
    let wake = format!("{}:wake", lock_key("unpopped"));
    assert_eq!(redis.cmd::<i64>(&["LLEN", &wake]), 1, "the set-up");
    kill(pid, Signal::SIGCONT).unwrap();
    let (code, err) = finish(waiter, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// (review 4, #14) The waiter a release wakes is stopped (SIGSTOP: a Ctrl-Z'd CI job,
/// a paused container): its BLPOP pops the wake-up and it will not take the lock. The
/// other waiter takes the free lock long before its safety net (the released holder's
/// 60 s ttl): the release's backup wake-up makes it try after a grace period. Without
/// the backup it slept until the holder's key could have expired.
#[test]
fn a_stopped_waiter_does_not_keep_a_free_lock_from_the_others() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "stopped-waiter");
    args.extend(["--ttl".into(), "60s".into()]);
    let holder = Holding::start(&args);
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "2m".into(), "--no-local-queue".into()]);
    // The first in line is the one the release wakes to take the lock.
    let mut first = parked_waiter(&wargs, &s, 0);
    assert!(eventually(READY, || blocked_clients(&redis).len() == 1));
    let mut second = parked_waiter(&wargs, &s, 1);
    assert!(eventually(READY, || blocked_clients(&redis).len() == 2));
    let stopped = nix::unistd::Pid::from_raw(first.id() as i32);
    nix::sys::signal::kill(stopped, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let released = Instant::now();
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    // Well within the 60 s the safety net would take: the lock came free, the stopped
    // waiter popped the wake-up, and the backup took it after its grace period.
    assert!(
        eventually(Duration::from_secs(15), || s.path("ran1").exists()),
        "the second waiter did not take the free lock while the first was stopped"
    );
    assert!(released.elapsed() < Duration::from_secs(15));
    assert!(!s.path("ran0").exists());
    nix::sys::signal::kill(stopped, nix::sys::signal::Signal::SIGCONT).unwrap();
    std::fs::write(s.path("go"), "").unwrap();
    assert_eq!(
        wait_child(&mut second, Duration::from_secs(30)).code(),
        Some(0)
    );
    assert_eq!(
        wait_child(&mut first, Duration::from_secs(90)).code(),
        Some(0)
    );
}

// Lock-delay ------------------------------------------------------------------------

/// A restart test's commands: the holder's writes `START-H`, then `END-H` when told to
/// stop (SIGTERM); the waiter's `START-W` and `END-W`; both to the returned journal.
fn journalled(s: &Scratch) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let journal = s.path("journal");
    let j = journal.display();
    let holder = s.script(
        "holder",
        &format!("echo START-H >> {j}; trap 'echo END-H >> {j}; exit 0' TERM; while :; do sleep 0.05; done"),
    );
    let waiter = s.script("waiter", &format!("echo START-W >> {j}; echo END-W >> {j}"));
    (journal, holder, waiter)
}

/// Redis restarted empty while a run of a set of names waits behind a holder of one of
/// them (review-7 finding 5): the waiter's blocking connection drops, and the restarted
/// server has forgotten the lock. The waiter takes its names, then holds them without
/// starting its command until the holder's lease from before the restart has ended
/// (its own ttl, 10 s, the larger): its command starts after the holder's has stopped,
/// one line says why it waited, and one `lock_delay` event. The holder, the first run
/// this host made on a fresh server, is not delayed and says nothing of it.
#[test]
fn a_waiter_after_a_restart_empty_waits_out_the_old_lease_once() {
    const DELAY_LINE: &str = "for any lease from before it to end";
    let mut redis = Redis::start();
    let s = Scratch::new();
    let (journal, holder_cmd, waiter_cmd) = journalled(&s);
    let local = |who: &str| s.path(&format!("local-{who}")).display().to_string();
    let mut holder = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--ttl", "6s", "--local-dir", &local("h")])
        .arg("--")
        .arg(&holder_cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = || std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(eventually(READY, || started().contains("START-H")));
    let events = s.path("events");
    let mut waiter = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--key", "other", "--ttl", "10s", "--wait", "60s"])
        .args(["--local-dir", &local("w")])
        .args(["--events", &events.display().to_string()])
        .arg("--")
        .arg(&waiter_cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The waiter is in the waiters set and blocked (the holder blocks too, on its own
    // wake list).
    let waiting = || {
        let clients: String = redis.cmd(&["CLIENT", "LIST"]);
        redis.cmd::<i64>(&["SCARD", "redlock:{job}:waiters"]) == 1
            && clients.matches("cmd=blpop").count() >= 2
    };
    assert!(eventually(READY, waiting), "the waiter blocks");
    redis.restart();
    let waited = wait_child(&mut waiter, Duration::from_secs(60));
    let held = wait_child(&mut holder, Duration::from_secs(30));
    let said = |child: &mut std::process::Child| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
        text
    };
    let (waiter_said, holder_said) = (said(&mut waiter), said(&mut holder));
    assert_eq!(waited.code(), Some(0), "{waiter_said}");
    assert_eq!(held.code(), Some(codes::LOST), "{holder_said}");
    ran_after_the_holder_and_said_why_once(&started(), &waiter_said);
    assert!(!holder_said.contains(DELAY_LINE), "{holder_said}");
    let events = std::fs::read_to_string(&events).unwrap();
    assert_eq!(
        events.matches("\"event\":\"lock_delay\"").count(),
        1,
        "{events}"
    );
}

/// A restart empty that no process of this host saw (issue 57 item 3): a cron run
/// starts after it, never connected before, and finds the name free on the restarted
/// server while the old holder's command runs on until its next renewal. This host's
/// earlier run kept the server's run ID in its local directory; the cron run finds
/// another one and holds its name without starting its command until the holder's
/// lease from before the restart has ended: its command starts after the holder's
/// stopped, with one line that says why. A host that never saw the server (a demo on a
/// fresh server: another local directory) has nothing to compare and is not delayed.
#[test]
fn a_cron_run_after_a_restart_its_host_never_saw_waits_out_the_old_lease() {
    cron_run_after(|redis| redis.restart(), "the server restarted");
}

/// The same for a flush (`FLUSHALL`: the same process, its keys gone; the run ID says
/// nothing): a cron host that saw the server's data epoch before finds another (a
/// demo on a fresh host wrote it again after the flush, and is not delayed), and holds
/// its name without starting its command until the holder's lease from before the
/// flush has ended. Before the data epoch, the cron run's command started at once,
/// beside the holder's (which ran on until its next renewal found the key gone).
#[test]
fn a_cron_run_after_a_flush_its_host_never_saw_waits_out_the_old_lease() {
    cron_run_after(
        |redis| {
            let _: String = redis.cmd(&["FLUSHALL"]);
        },
        "the server's data was flushed",
    );
}

/// The cron scenario of the two tests above: a host runs once (keeping what it saw of
/// the server), a holder starts on another, `lose` takes the server's data away, a
/// demo on a fresh host runs undelayed, and the first host's cron run waits out the
/// holder's lease, saying `why` once.
fn cron_run_after(lose: impl FnOnce(&mut Redis), why: &str) {
    const DELAY_LINE: &str = "for any lease from before it to end";
    let mut redis = Redis::start();
    let s = Scratch::new();
    let (journal, holder_cmd, cron_cmd) = journalled(&s);
    let local = |who: &str| s.path(&format!("local-{who}")).display().to_string();
    let earlier = redlock_run()
        .args(lock_args(&redis, "warm"))
        .args(["--local-dir", &local("cron"), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(earlier.status.code(), Some(0), "{earlier:?}");
    let mut holder = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--ttl", "6s", "--local-dir", &local("h")])
        .arg("--")
        .arg(&holder_cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = || std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(eventually(READY, || started().contains("START-H")));
    lose(&mut redis);
    let demo = redlock_run()
        .args(lock_args(&redis, "demo"))
        .args(["-v", "--local-dir", &local("new"), "--", "true"])
        .output()
        .unwrap();
    let demo_said = String::from_utf8_lossy(&demo.stderr);
    assert_eq!(demo.status.code(), Some(0), "{demo_said}");
    assert!(!demo_said.contains(DELAY_LINE), "{demo_said}");
    let cron = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--ttl", "6s", "--local-dir", &local("cron")])
        .arg("--")
        .arg(&cron_cmd)
        .output()
        .unwrap();
    let held = wait_child(&mut holder, Duration::from_secs(30));
    let cron_said = String::from_utf8_lossy(&cron.stderr);
    let mut holder_said = String::new();
    std::io::Read::read_to_string(&mut holder.stderr.take().unwrap(), &mut holder_said).unwrap();
    assert_eq!(cron.status.code(), Some(0), "{cron_said}");
    assert_eq!(held.code(), Some(codes::LOST), "{holder_said}");
    said_why_once(&started(), &cron_said, why);
}

/// The journal of a restart test (see [`journalled`]): the later run's command started
/// after the holder's stopped, and the later run said once that the server restarted.
fn ran_after_the_holder_and_said_why_once(journal: &str, said: &str) {
    said_why_once(journal, said, "the server restarted");
}

/// [`ran_after_the_holder_and_said_why_once`], the line saying `why`.
fn said_why_once(journal: &str, said: &str, why: &str) {
    let lines: Vec<&str> = journal.lines().collect();
    assert_eq!(lines, ["START-H", "END-H", "START-W", "END-W"], "{said}");
    let delays: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("for any lease from before it to end"))
        .collect();
    assert_eq!(delays.len(), 1, "{said}");
    assert!(delays[0].contains(why), "{said}");
}

/// The overlap of review-7 finding 5, made certain: a waiter blocked on a server that
/// restarts empty is woken on the new server at once (a wake-up pushed there, as any
/// release on it would), finds the lock free and takes it, while the old holder's
/// command runs on until its next renewal (4 s after the last at `--ttl 12s`; the
/// restart comes just after one). The waiter's pop ended on the dropped connection: it
/// holds the lock without starting its command until the holder's lease has ended, so
/// its command starts after the holder's has stopped.
#[test]
fn a_waiter_woken_on_a_restarted_server_never_runs_beside_the_old_holder() {
    let mut redis = Redis::start();
    let s = Scratch::new();
    let (journal, holder_cmd, waiter_cmd) = journalled(&s);
    let local = |who: &str| s.path(&format!("local-{who}")).display().to_string();
    let mut holder = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--ttl", "12s", "--local-dir", &local("h")])
        .arg("--")
        .arg(&holder_cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let lines = || std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(eventually(READY, || lines().contains("START-H")));
    let mut waiter = redlock_run()
        .args(lock_args(&redis, "job"))
        .args(["--ttl", "3s", "--wait", "60s", "--local-dir", &local("w")])
        .arg("--")
        .arg(&waiter_cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let waiting = || {
        let clients: String = redis.cmd(&["CLIENT", "LIST"]);
        redis.cmd::<i64>(&["SCARD", "redlock:{job}:waiters"]) == 1
            && clients.matches("cmd=blpop").count() >= 2
    };
    assert!(eventually(READY, waiting), "the waiter blocks");
    // Just after a renewal: the holder's next one is about 4 s away.
    assert!(eventually(READY, || redis.pttl(&lock_key("job")) > 11_500));
    let waiter_pid = Pid::from_raw(waiter.id() as i32);
    kill(waiter_pid, Signal::SIGSTOP).unwrap();
    redis.restart();
    let _: i64 = redis.cmd(&["LPUSH", "redlock:{job}:wake", "1"]);
    kill(waiter_pid, Signal::SIGCONT).unwrap();
    let waited = wait_child(&mut waiter, Duration::from_secs(60));
    let held = wait_child(&mut holder, Duration::from_secs(30));
    let mut said = String::new();
    std::io::Read::read_to_string(&mut waiter.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(waited.code(), Some(0), "{said}");
    assert_eq!(held.code(), Some(codes::LOST));
    let order: Vec<String> = lines().lines().map(String::from).collect();
    assert_eq!(order, ["START-H", "END-H", "START-W", "END-W"], "{said}");
    assert_eq!(said.matches("lock-delay").count(), 1, "{said}");
}

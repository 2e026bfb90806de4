//! Issue 58 (cron, round 4): one line per event, one answer per slot. Which runs close
//! a `--once-per` slot (the job's, not an ad-hoc run of the name), a slot or ID whose
//! attempts are spent told once for the fleet, and a slot told closed that stays
//! closed when its paused wrapper comes back.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::*;

/// A short lease (a paused wrapper's lease ends soon), a node timeout a loaded machine
/// keeps, no local queue.
const LEASE: [&str; 5] = ["--ttl", "2s", "--node-timeout", "300ms", "--no-local-queue"];

fn once_per(redis: &Redis, name: &str, extra: &[&str]) -> Vec<String> {
    let mut args = lock_args(redis, name);
    args.extend(["--once-per", "1h"].map(String::from));
    args.extend(LEASE.map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// Starts `args`'s run of a job that says its wrapper's pid and sleeps: the child and
/// that pid, once the job began.
fn running(s: &Scratch, args: &[String]) -> (std::process::Child, i32) {
    let log = s.path("begun");
    let job = format!("echo \"$PPID\" >> '{}'; sleep 30", log.display());
    let run = start_run(args, &job);
    assert!(wait_for_file(&log, "\n", READY), "the run never began");
    let wrapper: i32 = read_trimmed(&log).parse().unwrap();
    (run, wrapper)
}

/// Item 5 (review-7 #9): an operator's ad-hoc run of the name (no `--once-per`) that
/// exits 0 is not the job: the nightly job still runs its slot. A run by hand with the
/// job's `--once-per` is the slot's run: the next try is skipped and names it.
#[test]
fn only_a_once_per_run_closes_its_slot() {
    let redis = Redis::start();
    let s = Scratch::new();
    let ran = s.path("ran");
    let job = format!("echo x >> '{}'", ran.display());
    let (status, err) = try_once(&lock_args(&redis, "nightly"), "true");
    assert_eq!(status, 0, "{err}");
    let (status, err) = try_once(&once_per(&redis, "nightly", &[]), &job);
    assert_eq!(status, 0, "an ad-hoc run closed the slot: {err}");
    assert!(ran.exists(), "the job did not run");
    let (status, err) = try_once(&once_per(&redis, "nightly", &["-v"]), &job);
    assert_eq!(status, codes::BUSY, "{err}");
    assert!(err.contains("already ran"), "{err}");
    assert_eq!(read_trimmed(&ran), "x", "the job ran twice in its slot");
}

/// Item 3 (newcomer-7 #6): a slot whose attempts are spent is said once for the whole
/// fleet ("attempts exhausted" on every later try of the slot, on every host, before),
/// and so is an `--once-id` whose attempts are spent.
#[test]
fn spent_attempts_are_told_once() {
    let redis = Redis::start();
    let failing = once_per(&redis, "spent", &["--max-attempts", "2"]);
    for _ in 0..2 {
        let (status, err) = try_once(&failing, "exit 3");
        assert_eq!(status, 3, "{err}");
    }
    let said: Vec<String> = (0..4).map(|_| try_once(&failing, "true").1).collect();
    let telling: Vec<&String> = said
        .iter()
        .filter(|e| e.contains("none succeeded"))
        .collect();
    assert_eq!(telling.len(), 1, "told {} times: {said:?}", telling.len());
    assert!(
        said[0].contains("none succeeded"),
        "the first try did not tell: {said:?}"
    );
    assert!(said[1..].iter().all(String::is_empty), "{said:?}");

    let mut id = lock_args(&redis, "release");
    id.extend(["--once-id", "v1", "--max-attempts", "1"].map(String::from));
    let (status, err) = try_once(&id, "exit 3");
    assert_eq!(status, 3, "{err}");
    let said: Vec<String> = (0..3).map(|_| try_once(&id, "true").1).collect();
    let telling = said.iter().filter(|e| e.contains("none succeeded")).count();
    assert_eq!(telling, 1, "{said:?}");
}

/// Item 7 (review-7 #11): a run whose wrapper was paused past its lease is told
/// vanished, its slot closed (`--if-vanished skip`); when the wrapper comes back its
/// late record (lost, 79) replaced the told mark and the next try ran the job again in
/// the same slot. A told run keeps its slot closed.
#[test]
fn a_slot_told_closed_stays_closed_when_its_paused_run_comes_back() {
    let redis = Redis::start();
    let s = Scratch::new();
    let args = once_per(&redis, "paused", &[]);
    let (run, wrapper) = running(&s, &args);
    kill(Pid::from_raw(wrapper), Signal::SIGSTOP).unwrap();
    assert!(
        eventually(READY, || !redis.exists(&lock_key("paused"))),
        "the paused run's lease never ended"
    );
    let (status, err) = try_once(&args, "echo ran-again");
    assert_eq!(status, codes::BUSY, "{err}");
    assert!(err.contains("never recorded"), "not told: {err}");
    kill(Pid::from_raw(wrapper), Signal::SIGCONT).unwrap();
    let (status, err) = finish(run, Duration::from_secs(40));
    assert_eq!(status, codes::LOST, "{err}");
    let ran = s.path("ran");
    let (status, err) = try_once(&args, &format!("touch '{}'", ran.display()));
    assert_eq!(status, codes::BUSY, "the told slot reopened: {err}");
    assert!(!ran.exists(), "the job ran again in a slot told closed");
}

/// Item 1 (newcomer-7 #5): a winner killed with its lease reaching into the next slot
/// made every host of that slot mail "lock … is busy: held by …" about the dead
/// holder. A try that finds an earlier slot's run holding the lock is silent (the busy
/// status, a `skipped` event saying why); the dead run is told once, later.
#[test]
fn a_try_behind_an_earlier_slots_run_is_silent() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut args = lock_args(&redis, "crash");
    args.extend(
        [
            "--once-per",
            "2s",
            "--ttl",
            "8s",
            "--node-timeout",
            "300ms",
            "--no-local-queue",
        ]
        .map(String::from),
    );
    let (mut run, wrapper) = running(&s, &args);
    let slot_of = |redis: &Redis| {
        let (secs, _): (u64, u64) = redis.cmd(&["TIME"]);
        secs / 2
    };
    let first = slot_of(&redis);
    kill(Pid::from_raw(wrapper), Signal::SIGKILL).unwrap();
    wait_child(&mut run, READY);
    assert!(
        eventually(READY, || slot_of(&redis) != first),
        "the next slot never came"
    );
    let events = s.path("events");
    let mut tries = args.clone();
    tries.extend(["--events".to_string(), events.display().to_string()]);
    for _ in 0..3 {
        assert!(
            redis.exists(&lock_key("crash")),
            "the dead run's lease ended early"
        );
        let (status, err) = try_once(&tries, "true");
        assert_eq!(
            (status, err.as_str()),
            (codes::BUSY, ""),
            "a try mailed a line"
        );
    }
    let said = std::fs::read_to_string(&events).unwrap_or_default();
    let skips = said.matches("earlier_run_holds").count();
    assert_eq!(skips, 3, "{said}");
}

/// Item 12 (newcomer-7 #8): with `--splay`, a cron line that fires again while the
/// host's try still waits its offset added one more sleeping process per tick (5 per
/// host at a midnight with `--splay 5m` on a minute line). A try that finds this
/// host's try of the name waiting for the same slot ends at once, silent and counted
/// (`skipped`, reason `splay_waiting`). The name is searched for one whose offset
/// leaves the first try a wait of at least 3 s in its 10 s slot (room for the second
/// try's start on a loaded machine).
#[test]
fn a_second_splayed_try_of_the_slot_on_one_host_ends_at_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let local = s.path("local");
    std::fs::create_dir_all(&local).unwrap();
    for i in 0..40 {
        early_in_a_ten_second_slot();
        let name = format!("sp{i}");
        let mut args = lock_args(&redis, &name);
        args.extend(["--once-per", "10s", "--splay", "9s", "--local-dir"].map(String::from));
        args.push(local.display().to_string());
        let said = s.path(&format!("said-{i}"));
        let mut first = redlock_run()
            .args(&args)
            .args(["-v", "--", "true"])
            .stderr(std::fs::File::create(&said).unwrap())
            .spawn()
            .unwrap();
        let nap = || {
            let text = std::fs::read_to_string(&said).unwrap_or_default();
            let at = text.find("--splay: trying ")? + "--splay: trying ".len();
            text[at..].split(' ').next()?.parse::<u64>().ok()
        };
        let napping = eventually(READY, || {
            nap().is_some() || first.try_wait().ok().flatten().is_some()
        });
        assert!(napping, "the first try neither waited nor ended");
        if nap().is_none_or(|ms| ms < 3000) {
            let _ = first.kill();
            let _ = first.wait();
            continue;
        }
        let events = s.path("events");
        let (status, err) = try_once(
            &[
                &args[..],
                &["--events".into(), events.display().to_string()],
            ]
            .concat(),
            "true",
        );
        let _ = first.kill();
        let _ = first.wait();
        assert_eq!((status, err.as_str()), (codes::BUSY, ""), "{err}");
        let said = std::fs::read_to_string(&events).unwrap_or_default();
        assert!(said.contains("splay_waiting"), "{said}");
        return;
    }
    panic!("no name's offset left the first try waiting");
}

/// Sleeps, if need be, to the first 4 s of a 10 s `--once-per` slot (slots start at
/// multiples of the period since the epoch; the test's server is on this host's clock):
/// late in a slot no offset leaves a try 3 s to wait, and 40 names can be tried within
/// those last seconds.
fn early_in_a_ten_second_slot() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let into = now.map_or(0, |d| d.as_millis() as u64 % 10_000);
    if into > 4_000 {
        std::thread::sleep(std::time::Duration::from_millis(10_000 - into + 50));
    }
}

/// Item 13 (review-7, read in code): the acquire script marks a vanished run told in
/// the script that answers the try; when that reply is lost, the try takes its token
/// back and says nothing, and every later try found the run told: told zero times.
/// The take-back after a lost reply untells what this token told, so the next try
/// tells it: once.
#[test]
fn a_tell_whose_reply_is_lost_is_told_by_the_next_try() {
    use crate::harness::proxy::{Mode, Proxy};
    let redis = Redis::start();
    let s = Scratch::new();
    // The scripts in the server's cache (a server in use), so that the take-back's
    // request runs though its reply is lost too.
    let (status, err) = try_once(&once_per(&redis, "warm", &[]), "true");
    assert_eq!(status, 0, "{err}");
    let args = once_per(&redis, "unheard", &[]);
    let (mut run, wrapper) = running(&s, &args);
    kill(Pid::from_raw(wrapper), Signal::SIGKILL).unwrap();
    wait_child(&mut run, READY);
    assert!(
        eventually(READY, || !redis.exists(&lock_key("unheard"))),
        "the dead run's lease never ended"
    );
    let proxy = Proxy::start(redis.port);
    proxy.set(Mode::DropRepliesFrom("EVALSHA"));
    let mut lost = once_per(&redis, "unheard", &[]);
    let at = lost.iter().position(|a| a == "--redis").unwrap() + 1;
    lost[at] = proxy.url();
    let out = output_within(
        redlock_run().args(&lost).args(["--", "true"]),
        Duration::from_secs(30),
    );
    assert_ne!(code(&out), 0, "the try whose replies were lost ran");
    assert!(!stderr(&out).contains("never recorded"), "{}", stderr(&out));
    let (status, err) = try_once(&args, "true");
    assert_eq!(status, codes::BUSY, "{err}");
    assert!(
        err.contains("never recorded"),
        "the vanished run was never told: {err:?}"
    );
    let (status, err) = try_once(&args, "true");
    assert_eq!((status, err.as_str()), (codes::BUSY, ""), "told twice");
}

/// A fleet host's cron line: 4 s slots, a lease of 6 s (a dead winner's reaches into
/// the next slot).
fn fleet_args(redis: &Redis, name: &str) -> Vec<String> {
    let mut args = lock_args(redis, name);
    let line = ["--once-per", "4s", "--ttl", "6s", "--node-timeout", "300ms"];
    args.extend(
        line.iter()
            .chain(&["--no-local-queue"])
            .map(|a| a.to_string()),
    );
    args
}

/// The fleet's tries of one slot on three hosts (the third `-q`), started together:
/// each one's (status, stderr).
fn fleet_slot(redis: &Redis, name: &str, extra: &[&str], job: &str) -> Vec<(i32, String)> {
    let tries: Vec<_> = (0..3)
        .map(|h| {
            let mut args = fleet_args(redis, name);
            args.extend(extra.iter().map(|a| a.to_string()));
            if h == 2 {
                args.push("-q".into());
            }
            start_run(&args, job)
        })
        .collect();
    tries.into_iter().map(|t| finish(t, READY)).collect()
}

/// Issue 58, done when: a cron fleet of three hosts (one `-q`) with a crashed winner
/// whose lease reaches into the next slot, and a slot whose attempts are spent, prints
/// one line per event for the whole fleet: the vanished run told once (by the slot
/// after its lease, `-q` or not), the spent slot told once, every other try silent.
#[test]
fn a_fleet_says_each_event_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("begun");
    let slot = redis.now_ms() / 4000 * 4000 + 4000;
    redis.sleep_until(slot + 100);
    let crash = format!("echo \"$PPID $$\" >> '{}'; sleep 30", log.display());
    let tries: Vec<_> = (0..3)
        .map(|_| start_run(&fleet_args(&redis, "fleet"), &crash))
        .collect();
    assert!(wait_for_file(&log, "\n", READY), "no run began");
    let pids: Vec<i32> = read_trimmed(&log)
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    for pid in &pids {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    let mut lines: Vec<String> = tries
        .into_iter()
        .filter(|t| t.id() as i32 != pids[0])
        .map(|t| finish(t, READY).1)
        .collect();
    // Slot k+1: the dead run's lease (6 s) still holds the lock.
    redis.sleep_until(slot + 4100);
    assert!(
        redis.exists(&lock_key("fleet")),
        "the lease ended before slot k+1"
    );
    let next = fleet_slot(&redis, "fleet", &[], "true");
    assert!(next.iter().all(|(c, _)| *c == codes::BUSY), "{next:?}");
    lines.extend(next.into_iter().map(|(_, e)| e));
    // Slot k+2: its lease is over; one try takes the slot and tells the dead run.
    redis.sleep_until(slot + 8100);
    let after = fleet_slot(&redis, "fleet", &[], "true");
    assert_eq!(
        after.iter().filter(|(c, _)| *c == 0).count(),
        1,
        "{after:?}"
    );
    lines.extend(after.into_iter().map(|(_, e)| e));
    // A slot whose one attempt failed: the fleet's later tries of it.
    let spent = ["--max-attempts", "1"];
    let failed = fleet_slot(&redis, "spent", &spent, "exit 3");
    assert_eq!(
        failed.iter().filter(|(c, _)| *c == 3).count(),
        1,
        "{failed:?}"
    );
    lines.extend(failed.into_iter().map(|(_, e)| e));
    for _ in 0..2 {
        lines.extend(
            fleet_slot(&redis, "spent", &spent, "true")
                .into_iter()
                .map(|(_, e)| e),
        );
    }
    let said: Vec<&String> = lines.iter().filter(|l| !l.is_empty()).collect();
    assert_eq!(said.len(), 2, "one line per event: {said:?}");
    assert_eq!(
        said.iter().filter(|l| l.contains("never recorded")).count(),
        1,
        "{said:?}"
    );
    assert_eq!(
        said.iter().filter(|l| l.contains("none succeeded")).count(),
        1,
        "{said:?}"
    );
}

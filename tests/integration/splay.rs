//! `--splay D` (issues 44, 51): a fleet's `--once-per` tries spread over the first D of
//! each slot, each host at an offset drawn from its name, the lock's and the slot's, so
//! the winner rotates, and a try never runs on behalf of the next slot. Hosts are UTS
//! namespaces with their own host name (the offset's seed).

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::nemesis::summary;
use crate::harness::*;

/// Ten hosts fire `--once-per 5s --splay 3500ms` together at the start of each of 12
/// slots: every slot runs exactly once, with `REDLOCK_SLOT_START` the slot its hosts
/// fired in; the winner rotates (the offset is drawn from host, name and slot): at
/// least 3 different hosts win, none more than half of the slots, and most hosts try
/// at offsets more than 600 ms apart over the slots; the tries span at least 2 s of
/// the window and no 1-second window holds more than 70 % of them.
#[test]
fn a_fleet_spreads_its_tries_over_the_splay_and_the_winner_rotates() {
    let namespaces = hosts_can_be_namespaces();
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let job = format!(
        "echo \"RUN $REDLOCK_SLOT_START $(hostname)\" >> '{}'; sleep 0.2",
        log.display()
    );
    let (hosts, slots) = (10, 12);
    let mut offsets: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut fired = Vec::new();
    for _ in 0..slots {
        let slot = redis.now_ms() / 5_000 * 5_000 + 5_000;
        redis.sleep_until(slot + 20);
        fired.push(slot);
        for (h, decided) in fire_fleet(&redis, &s, hosts, slot, &job, namespaces) {
            offsets
                .entry(h)
                .or_default()
                .push(decided.saturating_sub(slot));
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let runs: Vec<(u64, &str)> = text
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            (w[1].parse().unwrap(), w[2])
        })
        .collect();
    let ran: Vec<u64> = runs.iter().map(|(slot, _)| *slot).collect();
    assert_eq!(
        ran, fired,
        "one run per slot, for the slot fired in:\n{text}"
    );
    let tally = assert_winners_rotate(&runs);
    let moving = offsets
        .values()
        .filter(|o| o.iter().max().unwrap() - o.iter().min().unwrap() > 600)
        .count();
    assert!(moving >= hosts / 2, "offsets fixed per host: {offsets:?}");
    let all: Vec<u64> = offsets.values().flatten().copied().collect();
    assert!(
        all.iter().all(|o| *o < 4_100),
        "a try past the window: {all:?}"
    );
    let busiest = assert_spread(&all);
    summary(&format!(
        "splay: {hosts} hosts, {slots} slots of 5 s, --splay 3500ms: one run per slot; wins per host {tally:?}; at most {busiest} of {} tries in one second",
        all.len()
    ));
}

/// The slots' winners (slot, host): at least 3 different hosts, none in more than half
/// of the slots. Returns the wins per host.
fn assert_winners_rotate(runs: &[(u64, &str)]) -> Vec<(String, usize)> {
    let mut wins: HashMap<String, usize> = HashMap::new();
    for (_, host) in runs {
        *wins.entry(host.to_string()).or_default() += 1;
    }
    let most = *wins.values().max().unwrap();
    assert!(wins.len() >= 3, "winners: {wins:?}");
    assert!(
        most * 2 <= runs.len(),
        "one host won {most} of {}: {wins:?}",
        runs.len()
    );
    let mut tally: Vec<_> = wins.into_iter().collect();
    tally.sort();
    tally
}

/// One slot's tries: `hosts` runs of `--once-per 5s --splay 3500ms` started together,
/// each as its own host; (host, when it decided: its `acquired` or `skipped` event).
fn fire_fleet(
    redis: &Redis,
    s: &Scratch,
    hosts: usize,
    slot: u64,
    job: &str,
    namespaces: bool,
) -> Vec<(usize, u64)> {
    let runs: Vec<(usize, Child, std::path::PathBuf)> = (0..hosts)
        .map(|h| {
            let events = s.path(&format!("events-{h}-{slot}"));
            let mut args = lock_args(redis, "fleet");
            args.extend(
                ["--once-per", "5s", "--splay", "3500ms", "--no-local-queue"].map(String::from),
            );
            args.extend(["--events".to_string(), events.display().to_string()]);
            let child = on_host(&format!("web-{h}"), &args, namespaces)
                .args(["--", "sh", "-c", job])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (h, child, events)
        })
        .collect();
    runs.into_iter()
        .map(|(h, mut child, events)| {
            wait_child(&mut child, Duration::from_secs(20));
            let text = std::fs::read_to_string(&events).unwrap_or_default();
            let decided = text.lines().find_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).ok()?;
                ["acquired", "skipped"]
                    .contains(&v["event"].as_str()?)
                    .then(|| v["ts_ms"].as_u64().unwrap())
            });
            (
                h,
                decided.unwrap_or_else(|| panic!("host {h} decided nothing: {text}")),
            )
        })
        .collect()
}

/// The tries' offsets span at least 2 s, and no 1-second window holds more than 70 % of
/// them; returns the most in one second.
fn assert_spread(all: &[u64]) -> usize {
    let (lo, hi) = (all.iter().min().unwrap(), all.iter().max().unwrap());
    assert!(hi - lo >= 2_000, "tries span {} ms: {all:?}", hi - lo);
    let busiest = (0..3_500u64)
        .step_by(100)
        .map(|from| {
            all.iter()
                .filter(|o| (from..from + 1_000).contains(o))
                .count()
        })
        .max()
        .unwrap();
    assert!(
        busiest * 10 <= all.len() * 7,
        "{busiest} of {} tries in one second: {all:?}",
        all.len()
    );
    busiest
}

/// A host that fires 8 s into a 10 s slot with `--splay 6s` tries for that slot only:
/// waiting (`--wait`) for the slot's run in progress, which ends in the next slot, it is
/// skipped silently when the slot is over instead of running for the next one.
#[test]
fn a_late_try_never_runs_for_the_next_slot() {
    let redis = Redis::start();
    let mut args = lock_args(&redis, "late");
    args.extend(["--once-per", "10s"].map(String::from));
    let slot = redis.now_ms() / 10_000 * 10_000 + 10_000;
    redis.sleep_until(slot + 7_500);
    // The slot's run: it fails 3.5 s later, in the next slot.
    let holder = start_run(&args, "sleep 3.5; exit 1");
    assert!(eventually(READY, || redis.exists(&lock_key("late"))));
    redis.sleep_until(slot + 8_000);
    let s = Scratch::new();
    let ran = s.path("ran");
    let out = output_within(
        redlock_run()
            .args(&args)
            .args(["--splay", "6s", "--wait", "5s", "--"])
            .args([
                "sh",
                "-c",
                &format!("echo $REDLOCK_SLOT_START > '{}'", ran.display()),
            ]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a slot that is over is skipped silently");
    assert!(!ran.exists(), "ran for slot {}", read_trimmed(&ran));
    let (status, _) = finish(holder, Duration::from_secs(20));
    assert_eq!(status, 1);
}

/// `--splay D` with D not shorter than the period, or without `--once-per`: one line,
/// 64, nothing written.
#[test]
fn a_splay_as_long_as_the_period_is_refused() {
    let redis = Redis::start();
    for extra in [
        &["--once-per", "10s", "--splay", "20s"][..],
        &["--once-per", "10s", "--splay", "10s"][..],
        &["--splay", "2s"][..],
    ] {
        let out = output(
            redlock_run()
                .args(lock_args(&redis, "nope"))
                .args(extra)
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), codes::USAGE, "{extra:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1);
        assert!(redis.keys().is_empty());
    }
}

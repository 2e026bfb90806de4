//! `--splay D` (issue 44): a fleet's `--once-per` tries spread over the first D of each
//! slot, each host at the same offset every slot, and a try never runs on behalf of the
//! next slot. Hosts are UTS namespaces with their own host name (the offset's seed).

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::nemesis::summary;
use crate::harness::*;

/// Ten hosts fire `--once-per 10s --splay 6s` together at the start of each slot: every
/// slot runs exactly once, with `REDLOCK_SLOT_START` the slot its hosts fired in; each
/// host tries at the same offset every slot (within ±300 ms); the tries span at least
/// 2 s of the window and no 1-second window holds more than 70 % of them.
#[test]
fn a_fleet_spreads_its_tries_over_the_splay_and_runs_once_per_slot() {
    let namespaces = hosts_can_be_namespaces();
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let job = format!(
        "echo \"RUN $REDLOCK_SLOT_START\" >> '{}'; sleep 0.2",
        log.display()
    );
    let hosts = 10;
    let slots = rounds(3, 12);
    // (host, slot) -> the try's offset into the slot (its decision's event time).
    let mut offsets: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut fired = Vec::new();
    for _ in 0..slots {
        let slot = redis.now_ms() / 10_000 * 10_000 + 10_000;
        redis.sleep_until(slot + 20);
        fired.push(slot);
        let runs: Vec<(usize, Child, std::path::PathBuf)> = (0..hosts)
            .map(|h| {
                let events = s.path(&format!("events-{h}-{slot}"));
                let mut args = lock_args(&redis, "fleet");
                args.extend(
                    ["--once-per", "10s", "--splay", "6s", "--no-local-queue"].map(String::from),
                );
                args.extend(["--events".to_string(), events.display().to_string()]);
                let child = on_host(&format!("web-{h}"), &args, namespaces)
                    .args(["--", "sh", "-c", &job])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                (h, child, events)
            })
            .collect();
        for (h, mut child, events) in runs {
            wait_child(&mut child, Duration::from_secs(20));
            let text = std::fs::read_to_string(&events).unwrap_or_default();
            let decided = text.lines().find_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).ok()?;
                ["acquired", "skipped"]
                    .contains(&v["event"].as_str()?)
                    .then(|| v["ts_ms"].as_u64().unwrap())
            });
            let decided = decided.unwrap_or_else(|| panic!("host {h} decided nothing: {text}"));
            offsets
                .entry(h)
                .or_default()
                .push(decided.saturating_sub(slot));
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let ran: Vec<u64> = text
        .lines()
        .map(|l| l.strip_prefix("RUN ").unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        ran, fired,
        "one run per slot, for the slot fired in:\n{text}"
    );
    let mut all: Vec<u64> = Vec::new();
    for (h, of_host) in &offsets {
        let (lo, hi) = (of_host.iter().min().unwrap(), of_host.iter().max().unwrap());
        assert!(hi - lo <= 600, "host {h}: offsets {of_host:?}");
        assert!(*hi < 6_600, "host {h} tried past the window: {of_host:?}");
        all.extend(of_host);
    }
    let (lo, hi) = (all.iter().min().unwrap(), all.iter().max().unwrap());
    assert!(hi - lo >= 2_000, "tries span {} ms: {all:?}", hi - lo);
    let busiest = (0..6_000u64)
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
    summary(&format!(
        "splay: {hosts} hosts, {slots} slots of 10 s, --splay 6s: one run per slot, tries spread over {} ms, at most {busiest} of {} tries in one second",
        hi - lo,
        all.len()
    ));
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

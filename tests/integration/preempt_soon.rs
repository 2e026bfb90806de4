//! Issue 40, item 4: `redlock preempt` reaches any holder within 1 s, at any ttl. A
//! holder started with `--ttl 30s` renews every 10 s; the request must not wait for
//! that renewal. The command traps the signal and writes the time it got it; the
//! latency is from just before `redlock preempt` starts. 5 rounds for a plain holder
//! (20 with `REDLOCK_FULL_FIGURES=1`), once for `--fair`; Redis's `connected_clients`
//! is read with the holder up and after it ended, so the figure says what one holder
//! costs in connections.

use std::process::{Child, Stdio};
use std::time::Duration;

use crate::harness::*;

/// A holder of `name` with `flags` whose command writes `ready`, then on SIGTERM the
/// time (`date +%s%N`) to `got`.
fn holder(redis: &Redis, name: &str, flags: &[&str], dir: &std::path::Path) -> Child {
    let d = dir.display();
    let script = format!(
        "trap 'date +%s%N > {d}/got.tmp; mv {d}/got.tmp {d}/got; exit 0' TERM; touch {d}/ready; while :; do sleep 0.05; done"
    );
    redlock_run()
        .args(["--redis", &redis.url(), "--key", name, "--ttl", "30s"])
        .args(flags)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// One preempt of a fresh holder: the latency in ms, and the clients Redis counted
/// while it held (the test's own connection included).
fn one_preempt(redis: &Redis, s: &Scratch, name: &str, flags: &[&str]) -> (f64, u64) {
    let (latency, clients, _) = preempt_of(redis, s, (name, name), flags);
    (latency, clients)
}

/// One preempt of `target`, a name of a fresh holder of `name` (and `flags`' names):
/// the latency in ms, the clients Redis counted while it held, the holder's stderr.
fn preempt_of(
    redis: &Redis,
    s: &Scratch,
    (name, target): (&str, &str),
    flags: &[&str],
) -> (f64, u64, String) {
    let dir = s.path(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = holder(redis, name, flags, &dir);
    assert!(
        wait_for_file(&dir.join("ready"), "", Duration::from_secs(20)),
        "{name}: the command never started"
    );
    let clients = redis.info_number("clients", "connected_clients");
    let asked_at = wall_ms();
    let asked = output_within(
        redlock().args(["preempt", target, "--redis", &redis.url()]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&asked), 0, "{name}: {}", stderr(&asked));
    let got = dir.join("got");
    // Waited for well past the bound, so that a late signal says how late it came.
    eventually(Duration::from_secs(15), || got.exists());
    let latency = std::fs::read_to_string(&got)
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .map_or(f64::INFINITY, |ns| ns / 1e6 - asked_at);
    let status = wait_child(&mut child, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(codes::PREEMPTED), "{name}: {err}");
    (latency, clients, err)
}

#[test]
fn a_preempt_reaches_a_holder_with_a_long_ttl_within_a_second() {
    let redis = Redis::start();
    let s = Scratch::new();
    let idle = redis.info_number("clients", "connected_clients");
    let mut cases: Vec<(String, Vec<&str>)> = (0..rounds(5, 20))
        .map(|round| (format!("plain{round}"), vec![]))
        .collect();
    cases.push(("fair".to_string(), vec!["--fair"]));
    let mut latencies = Vec::new();
    let mut per_holder = Vec::new();
    for (name, flags) in &cases {
        let (latency, clients) = one_preempt(&redis, &s, name, flags);
        latencies.push((name.clone(), latency));
        per_holder.push(clients.saturating_sub(idle));
    }
    let worst = latencies.iter().map(|(_, l)| *l).fold(0.0, f64::max);
    eprintln!(
        "preempt of a --ttl 30s holder: {} rounds, worst {worst:.0} ms; connections per holder {:?} (idle server: {idle})",
        latencies.len(),
        per_holder
    );
    for (name, latency) in &latencies {
        assert!(
            *latency < 1000.0,
            "{name}: the signal came after {latency:.0} ms: {latencies:?}"
        );
    }
    assert!(
        per_holder.iter().all(|n| *n <= 1),
        "a holder keeps one connection: {per_holder:?}"
    );
}

/// Issue 50, item 3 (review-6 #4): a run of several names listens on every name, so a
/// preempt of its second or third name reaches the command within a second at `--ttl
/// 30s` too (it waited for the next renewal, 7.7 s, before), and the line names the
/// name preempted. 20 rounds: a second name of two, a third name of three, by turns.
#[test]
fn a_preempt_of_a_sets_later_name_reaches_it_within_a_second() {
    let redis = Redis::start();
    let s = Scratch::new();
    let mut latencies = Vec::new();
    for round in 0..20 {
        let (a, b, c) = (
            format!("a{round}"),
            format!("b{round}"),
            format!("c{round}"),
        );
        let mut flags = vec!["--key", b.as_str()];
        let target = if round % 2 == 0 {
            &b
        } else {
            flags.extend(["--key", c.as_str()]);
            &c
        };
        let (latency, _, err) = preempt_of(&redis, &s, (&a, target), &flags);
        assert!(
            err.contains(&format!("lock {target}: preempted")),
            "{target}: the line names another name: {err}"
        );
        assert!(!err.contains(&format!("lock {a}")), "{err}");
        latencies.push((target.clone(), latency));
    }
    let worst = latencies.iter().map(|(_, l)| *l).fold(0.0, f64::max);
    eprintln!("preempt of a later name of a --ttl 30s set: 20 rounds, worst {worst:.0} ms");
    for (name, latency) in &latencies {
        assert!(
            *latency < 1000.0,
            "{name}: the signal came after {latency:.0} ms: {latencies:?}"
        );
    }
}

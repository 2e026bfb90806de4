//! The Redlock algorithm over several independent masters (`--redis` repeated): the
//! lock on every node, nodes down (refused) or hanging (SIGSTOP) before and during a
//! run, the quorum table over every pre-locked subset, mutual exclusion, a majority
//! losing the key, and what `status`/`list`/`release --force` say about the nodes.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::harness::*;

const FOREIGN: &str = "foreign";

fn servers(n: usize) -> Vec<Redis> {
    (0..n).map(|_| Redis::start()).collect()
}

/// `--redis URL` for each server (stopped ones included: they refuse connections).
fn redis_args(nodes: &[Redis]) -> Vec<String> {
    nodes
        .iter()
        .flat_map(|r| ["--redis".to_string(), r.url()])
        .collect()
}

/// Leftover keys on every server in `nodes` (each must be running).
fn leftovers(nodes: &[&Redis]) -> Vec<(u16, Vec<String>)> {
    nodes
        .iter()
        .map(|r| (r.port, r.keys()))
        .filter(|(_, k)| !k.is_empty())
        .collect()
}

/// A holder over `args` with `--verbose`, whose command exits with `exit` when let go.
fn hold(args: &[String], exit: i32) -> Holding {
    let mut args = args.to_vec();
    args.push("--verbose".into());
    Holding::start_exiting(&args, exit)
}

/// Shortens each key's ttl to two thirds of `ttl_ms` on every node, then waits until
/// it is above that again everywhere: only a renewal (compare-and-pexpire) run after
/// our PEXPIRE can raise it.
fn wait_renewed(nodes: &[&Redis], keys: &[&str], ttl_ms: i64) {
    let shortened = ttl_ms * 2 / 3;
    for node in nodes {
        for key in keys {
            let set: i64 = node.cmd(&["PEXPIRE", key, &shortened.to_string()]);
            assert_eq!(set, 1, "{key} missing on port {}", node.port);
        }
    }
    for node in nodes {
        for key in keys {
            assert!(
                eventually(Duration::from_secs(20), || pttl(node, key) > shortened),
                "no renewal of {key} seen on port {}",
                node.port
            );
        }
    }
}

/// After a test deleted only the lock key on some nodes: no lock key is left, and what
/// remains is our own metadata, which the scripts leave to expire with its ttl (they
/// trust only the lock key), gone within `ttl`.
fn only_our_metadata_expiring(nodes: &[&Redis], name: &str, token: &str, ttl: Duration) {
    let (lock, meta) = (lock_key(name), meta_key(name));
    for node in nodes {
        assert!(!node.exists(&lock), "lock key left on port {}", node.port);
        if node.exists(&meta) {
            let owner: Option<String> = node.cmd(&["HGET", &meta, "token"]);
            assert_eq!(owner.as_deref(), Some(token), "port {}", node.port);
        }
    }
    assert!(
        eventually(ttl + Duration::from_secs(1), || leftovers(nodes).is_empty()),
        "{:?}",
        leftovers(nodes)
    );
}

fn all(nodes: &[Redis]) -> Vec<&Redis> {
    nodes.iter().collect()
}

// 1. Acquire, renew and release on every node.

fn lock_lives_on_every_node(n: usize) {
    let nodes = servers(n);
    let name = format!("every-{n}");
    let mut args = vec!["--key".to_string(), name.clone()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 7);
    let token = holder.token();
    let (lock, meta) = (lock_key(&name), meta_key(&name));
    for node in &nodes {
        assert_eq!(get(node, &lock).as_deref(), Some(token.as_str()));
        let holder_token: Option<String> = node.cmd(&["HGET", &meta, "token"]);
        assert_eq!(holder_token.as_deref(), Some(token.as_str()), "meta");
        let t = pttl(node, &lock);
        assert!(t > 0 && t <= 3000, "pttl {t}");
    }
    wait_renewed(&all(&nodes), &[&lock, &meta], 3000);
    holder.let_go();
    let out = holder.wait();
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert_eq!(leftovers(&all(&nodes)), vec![]);
}

#[test]
fn three_nodes_acquire_renew_release() {
    lock_lives_on_every_node(3);
}

#[test]
fn five_nodes_acquire_renew_release() {
    lock_lives_on_every_node(5);
}

// 2. A minority of nodes down before and during the run.

fn minority_down_before(n: usize, down: usize) {
    let mut nodes = servers(n);
    for node in nodes.iter_mut().take(down) {
        node.stop();
    }
    let name = format!("down-before-{n}");
    let mut args = vec!["--key".to_string(), name.clone()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 5);
    let token = holder.token();
    let live: Vec<&Redis> = nodes[down..].iter().collect();
    let lock = lock_key(&name);
    for node in &live {
        assert_eq!(get(node, &lock).as_deref(), Some(token.as_str()));
    }
    wait_renewed(&live, &[&lock], 3000);
    holder.let_go();
    let out = holder.wait();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(leftovers(&live), vec![]);
}

#[test]
fn one_of_three_down_before_the_run() {
    minority_down_before(3, 1);
}

#[test]
fn two_of_five_down_before_the_run() {
    minority_down_before(5, 2);
}

fn minority_down_during(n: usize, down: usize) {
    let mut nodes = servers(n);
    let name = format!("down-during-{n}");
    let mut args = vec!["--key".to_string(), name.clone()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 6);
    let token = holder.token();
    for node in nodes.iter_mut().take(down) {
        node.stop();
    }
    let live: Vec<&Redis> = nodes[down..].iter().collect();
    let lock = lock_key(&name);
    // Renewals go on without the stopped nodes: two in a row on every live node.
    for _ in 0..2 {
        wait_renewed(&live, &[&lock], 3000);
    }
    for node in &live {
        assert_eq!(get(node, &lock).as_deref(), Some(token.as_str()));
    }
    assert!(alive(holder.pid()), "the command was stopped");
    holder.let_go();
    let out = holder.wait();
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert_eq!(leftovers(&live), vec![]);
}

#[test]
fn one_of_three_down_during_the_run() {
    minority_down_during(3, 1);
}

#[test]
fn two_of_five_down_during_the_run() {
    minority_down_during(5, 2);
}

// 3. A majority down: unreachable, nothing run, nothing left.

fn majority_down(n: usize, down: usize) {
    let mut nodes = servers(n);
    for node in nodes.iter_mut().take(down) {
        node.stop();
    }
    let scratch = Scratch::new();
    let ran = scratch.path("ran");
    let out = output(
        redlock_run()
            .args(["--key", "majority"])
            .args(redis_args(&nodes))
            .args(["--", "touch"])
            .arg(&ran),
    );
    let err = stderr(&out);
    assert_eq!(code(&out), codes::UNREACHABLE, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let quorum = n / 2 + 1;
    assert!(
        err.contains(&format!(
            "only {} of {n} Redis nodes reachable, {quorum} needed",
            n - down
        )),
        "{err}"
    );
    assert!(!ran.exists(), "the command ran without the lock");
    assert_eq!(leftovers(&nodes[down..].iter().collect::<Vec<_>>()), vec![]);
}

#[test]
fn two_of_three_down_is_unreachable() {
    majority_down(3, 2);
}

#[test]
fn three_of_five_down_is_unreachable() {
    majority_down(5, 3);
}

#[test]
fn majority_hanging_is_unreachable() {
    let nodes = servers(3);
    nodes[0].pause();
    nodes[1].pause();
    let scratch = Scratch::new();
    let ran = scratch.path("ran");
    let out = output(
        redlock_run()
            .args(["--key", "hanging", "--node-timeout", "200ms"])
            .args(redis_args(&nodes))
            .args(["--", "touch"])
            .arg(&ran),
    );
    let err = stderr(&out);
    assert_eq!(code(&out), codes::UNREACHABLE, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!ran.exists());
    nodes[0].resume();
    nodes[1].resume();
    assert_eq!(leftovers(&all(&nodes)), vec![]);
}

// 4. The quorum table (as redsync's tests): every subset pre-locked by someone else.

/// Pre-locks the nodes whose bit is set in `mask` with a foreign value, runs once with
/// `--wait 0`, and checks the outcome and that nothing of ours is left anywhere.
fn table_case(nodes: &[Redis], live: &[usize], mask: u32) {
    let name = "table";
    let (lock, meta) = (lock_key(name), meta_key(name));
    for &i in live {
        nodes[i].forget_names();
        if mask & (1 << i) != 0 {
            nodes[i].cmd::<()>(&["SET", &lock, FOREIGN, "PX", "60000"]);
        }
    }
    let free = live.iter().filter(|&&i| mask & (1 << i) == 0).count();
    let quorum = nodes.len() / 2 + 1;
    let scratch = Scratch::new();
    let ran = scratch.path("ran");
    let out = output(
        redlock_run()
            .args(["--key", name, "--wait", "0"])
            .args(redis_args(nodes))
            .args(["--", "touch"])
            .arg(&ran),
    );
    let case = format!(
        "N={} live={live:?} mask={mask:0w$b}",
        nodes.len(),
        w = nodes.len()
    );
    if free >= quorum {
        assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        assert!(ran.exists(), "{case}");
    } else {
        assert_eq!(code(&out), codes::BUSY, "{case}: {}", stderr(&out));
        assert!(!ran.exists(), "{case}: ran without a quorum");
    }
    for &i in live {
        let node = &nodes[i];
        if mask & (1 << i) != 0 {
            assert_eq!(
                get(node, &lock).as_deref(),
                Some(FOREIGN),
                "{case} node {i}"
            );
            assert!(pttl(node, &lock) > 0, "{case} node {i}: ttl changed");
            assert!(!node.exists(&meta), "{case} node {i}: our metadata");
        } else {
            assert_eq!(node.keys(), Vec::<String>::new(), "{case} node {i}");
        }
    }
}

fn quorum_table(n: usize) {
    let nodes = servers(n);
    let live: Vec<usize> = (0..n).collect();
    for mask in 0..(1u32 << n) {
        table_case(&nodes, &live, mask);
    }
}

#[test]
fn quorum_table_three_nodes() {
    quorum_table(3);
}

#[test]
fn quorum_table_five_nodes() {
    quorum_table(5);
}

/// The quorum is a majority of the nodes given, not of those that answered the
/// connect: with 2 of 5 down, all 3 others must agree.
#[test]
fn quorum_counts_the_nodes_given_not_the_nodes_reached() {
    let mut nodes = servers(5);
    nodes[3].stop();
    nodes[4].stop();
    let live = [0, 1, 2];
    for mask in 0..8u32 {
        table_case(&nodes, &live, mask);
    }
}

// 5. A hanging node (SIGSTOP) costs at most the node timeout per call.

#[test]
fn hanging_node_before_the_run() {
    let nodes = servers(3);
    nodes[0].pause();
    let name = "hang-before";
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--node-timeout", "200ms", "--ttl", "30s"].map(String::from));
    let start = Instant::now();
    let holder = hold(&args, 3);
    let token = holder.token();
    for node in &nodes[1..] {
        assert_eq!(get(node, &lock_key(name)).as_deref(), Some(token.as_str()));
    }
    holder.let_go();
    let out = holder.wait();
    let took = start.elapsed();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // A connect costs at most 1 s (the floor) + the node timeout; all of it well
    // before the ttl.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(leftovers(&nodes[1..].iter().collect::<Vec<_>>()), vec![]);
    nodes[0].resume();
    // The hanging node was left out of the lease: nothing was ever written there.
    assert_eq!(leftovers(&[&nodes[0]]), vec![]);
}

#[test]
fn hanging_node_during_the_run() {
    let nodes = servers(3);
    let name = "hang-during";
    let lock = lock_key(name);
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(
        [
            "--node-timeout",
            "200ms",
            "--ttl",
            "30s",
            "--renew-every",
            "1s",
        ]
        .map(String::from),
    );
    let holder = hold(&args, 4);
    let token = holder.token();
    nodes[2].pause();
    let live: Vec<&Redis> = nodes[..2].iter().collect();
    // Renewals go on while one node hangs.
    wait_renewed(&live, &[&lock], 30_000);
    let start = Instant::now();
    holder.let_go();
    let out = holder.wait();
    let took = start.elapsed();
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(took < Duration::from_secs(15), "release took {took:?}");
    assert_eq!(leftovers(&live), vec![]);
    nodes[2].resume();
    // The hanging node may still hold our token (the release never reached it while it
    // hung); then it is ours and expires within the ttl.
    if let Some(value) = get(&nodes[2], &lock) {
        assert_eq!(value, token);
        let t = pttl(&nodes[2], &lock);
        assert!(t > 0 && t <= 30_000, "pttl {t}");
    }
}

// 6. Mutual exclusion over three nodes.

fn mutual_exclusion(n: usize) {
    let nodes = servers(n);
    let mut args = vec!["--key".to_string(), "mx".to_string()];
    args.extend(redis_args(&nodes));
    let c = contend(&args, 16, 50);
    eprintln!("quorum contention over {n} nodes: {c:?}");
    assert_eq!(c.sections, 800, "{c:?}");
    assert_eq!((c.overlaps, c.duplicate_tokens), (0, 0), "{c:?}");
    // The largest of the quorum's counters: still strictly increasing.
    assert_eq!(c.fences_not_increasing, 0, "{c:?}");
    assert_eq!(c.counter, 800, "{c:?}");
    assert!(c.failures.is_empty(), "{c:?}");
    assert_eq!(leftovers(&all(&nodes)), vec![]);
}

#[test]
fn mutual_exclusion_three_nodes() {
    mutual_exclusion(3);
}

#[test]
fn mutual_exclusion_five_nodes() {
    mutual_exclusion(5);
}

// 7. A majority losing the key while the command runs.

#[test]
fn majority_losing_the_key_is_lost() {
    let nodes = servers(3);
    let name = "lose";
    let lock = lock_key(name);
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 0);
    let token = holder.token();
    let pid = holder.pid();
    nodes[0].cmd::<i64>(&["DEL", &lock]);
    nodes[1].cmd::<i64>(&["DEL", &lock]);
    let out = holder.wait();
    let err = stderr(&out);
    assert_eq!(code(&out), codes::LOST, "{err}");
    assert!(
        err.contains("lost") && err.contains("2 of 3 nodes"),
        "{err}"
    );
    assert!(!alive(pid), "the command outlived the lost lock");
    let ttl = Duration::from_secs(3);
    only_our_metadata_expiring(&all(&nodes), name, &token, ttl);
}

/// Nodes down since the start count against the quorum of a renewal too: with 2 of 5
/// never reached, losing the key on 1 of the 3 others leaves no quorum to renew.
#[test]
fn nodes_down_since_the_start_count_when_renewing() {
    let mut nodes = servers(5);
    nodes[3].stop();
    nodes[4].stop();
    let name = "lose-given";
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 0);
    let token = holder.token();
    let pid = holder.pid();
    nodes[0].cmd::<i64>(&["DEL", &lock_key(name)]);
    let out = holder.wait();
    let err = stderr(&out);
    assert_eq!(code(&out), codes::LOST, "{err}");
    assert!(err.contains("1 of 5 nodes (2 more unreachable"), "{err}");
    assert!(!alive(pid));
    let live: Vec<&Redis> = nodes[..3].iter().collect();
    only_our_metadata_expiring(&live, name, &token, Duration::from_secs(3));
}

/// A majority stopped while the command runs: renewals fail, the command is stopped
/// before the lease can end, and the run says the lock was lost.
#[test]
fn majority_down_during_the_run_is_lost() {
    let mut nodes = servers(3);
    let name = "down-majority";
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 0);
    let pid = holder.pid();
    nodes[0].stop();
    nodes[1].stop();
    let out = holder.wait();
    let err = stderr(&out);
    assert_eq!(code(&out), codes::LOST, "{err}");
    assert!(err.contains("renewals failed"), "{err}");
    assert!(!alive(pid), "the command outlived the lease");
    assert_eq!(leftovers(&[&nodes[2]]), vec![]);
}

#[test]
fn minority_losing_the_key_is_not_lost() {
    let nodes = servers(3);
    let name = "lose-one";
    let lock = lock_key(name);
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 9);
    let token = holder.token();
    nodes[0].cmd::<i64>(&["DEL", &lock]);
    let live: Vec<&Redis> = nodes[1..].iter().collect();
    for _ in 0..2 {
        wait_renewed(&live, &[&lock], 3000);
    }
    // Renewals never re-create a missing key.
    assert!(!nodes[0].exists(&lock));
    holder.let_go();
    let out = holder.wait();
    assert_eq!(code(&out), 9, "{}", stderr(&out));
    only_our_metadata_expiring(&all(&nodes), name, &token, Duration::from_secs(3));
}

// 8. status / list / release --force say on how many nodes a lock is present.

fn inspect(nodes: &[Redis], verb: &[&str]) -> Output {
    output(redlock().args(verb).args(redis_args(nodes)))
}

#[test]
fn inspection_counts_nodes() {
    let nodes = servers(3);
    let name = "seen";
    let lock = lock_key(name);
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--ttl", "3s", "--renew-every", "300ms"].map(String::from));
    let holder = hold(&args, 0);
    let token = holder.token();

    let out = inspect(&nodes, &["status", name]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("present on 3 of 3 nodes"),
        "{}",
        stdout(&out)
    );

    nodes[0].cmd::<i64>(&["DEL", &lock]);
    let out = inspect(&nodes, &["status", name, "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["nodes_present"], 2, "{json}");
    assert_eq!(json["nodes"], 3, "{json}");
    // Which nodes: the two that still hold it, not the one whose key was deleted.
    let on: Vec<String> = json["present_on"]
        .as_array()
        .expect("present_on")
        .iter()
        .map(|u| u.as_str().unwrap().to_string())
        .collect();
    assert_eq!(on, [nodes[1].url(), nodes[2].url()], "{json}");
    assert_eq!(json["holder"]["token"], token.as_str(), "{json}");
    let out = inspect(&nodes, &["status", name]);
    assert!(
        stdout(&out).contains(&format!(
            "present on 2 of 3 nodes: {}, {}",
            nodes[1].url(),
            nodes[2].url()
        )),
        "{}",
        stdout(&out)
    );

    let out = inspect(&nodes, &["list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = stdout(&out);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(
        listed.starts_with(name) && listed.contains("on 2 of 3 nodes"),
        "{listed}"
    );

    let out = inspect(&nodes, &["release", name, "--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("removed seen from 2 of 3 nodes"), "{said}");
    assert!(said.contains(&token[..8]), "{said}");

    // The holder finds the key gone everywhere: lost.
    let out = holder.wait();
    assert_eq!(code(&out), codes::LOST, "{}", stderr(&out));
    only_our_metadata_expiring(&all(&nodes), name, &token, Duration::from_secs(3));
    let out = inspect(&nodes, &["status", name]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
}

#[test]
fn inspection_with_a_node_down() {
    let mut nodes = servers(3);
    let lock = lock_key("down");
    for node in &nodes {
        node.cmd::<()>(&["SET", &lock, FOREIGN, "PX", "60000"]);
    }
    nodes[2].stop();
    let out = inspect(&nodes, &["status", "down"]);
    let said = stdout(&out);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        said.contains("present on 2 of 3 nodes (1 unreachable)"),
        "{said}"
    );
    let out = inspect(&nodes, &["status", "down", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (
            &json["nodes_present"],
            &json["nodes"],
            &json["nodes_unreachable"]
        ),
        (&2.into(), &3.into(), &1.into()),
        "{json}"
    );
    let out = inspect(&nodes, &["release", "down", "--force"]);
    let said = stdout(&out);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(said.contains("removed down from 2 of 3 nodes"), "{said}");
    assert_eq!(leftovers(&nodes[..2].iter().collect::<Vec<_>>()), vec![]);
}

// 8. A waiter whose try found the primary node free while a quorum was held.

/// Every script call a node has run so far (EVAL and EVALSHA).
fn script_calls(node: &Redis) -> u64 {
    let info: String = node.cmd(&["INFO", "commandstats"]);
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The wake-ups of releases go to the primary node's waiters. A try that finds the lock
/// free on the primary but held by a quorum (a release that reached the primary first,
/// or a holder that lost the race there) joins there after the release may have come:
/// nobody would wake it. It tries again after a short backoff instead of sleeping until
/// the holder's key could expire (here 60 s). Counted from the server: tries on the
/// primary keep coming while the quorum is held elsewhere.
#[test]
fn a_waiter_that_found_the_primary_free_tries_again_without_a_wake_up() {
    let nodes = servers(3);
    let name = "primfree";
    let lock = lock_key(name);
    let mut urls: Vec<(String, usize)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.url(), i))
        .collect();
    urls.sort();
    let primary = urls[0].1;
    for (i, node) in nodes.iter().enumerate().filter(|(i, _)| *i != primary) {
        let _: String = node.cmd(&["SET", &lock, &format!("foreign-{i}"), "PX", "60000"]);
    }
    let mut args = vec!["--key".to_string(), name.to_string()];
    args.extend(redis_args(&nodes));
    args.extend(["--wait", "60s"].map(String::from));
    let before = script_calls(&nodes[primary]);
    let waiter = start_run(&args, "true");
    // Each try on the primary: the acquire, giving back the primary's key, the join.
    assert!(
        eventually(Duration::from_secs(15), || script_calls(&nodes[primary])
            >= before + 15),
        "the waiter slept: {} script calls on the primary",
        script_calls(&nodes[primary]) - before
    );
    for (_, node) in nodes.iter().enumerate().filter(|(i, _)| *i != primary) {
        let _: i64 = node.cmd(&["DEL", &lock]);
    }
    let (code, err) = finish(waiter, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
}

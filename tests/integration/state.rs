//! The lock's state in Redis: fencing numbers that keep growing when their counter is
//! lost, keys that all expire (`--retain`), `redlock forget`, and scripts whose
//! refusals leave every key exactly as it was.

use std::time::Duration;

use crate::harness::*;

/// Runs one locked command on `redis_args` that appends its fencing number to `file`.
/// Its 2 s ttl keeps the lock-delay after a restart (this host saw the server before
/// it) short.
fn fenced_run(redis_args: &[String], file: &std::path::Path) {
    let out = output_within(
        redlock_run()
            .args(["--key", "fenced", "--ttl", "2s"])
            .args(redis_args)
            .args(["--wait", "10s", "--", "sh", "-c"])
            .arg(format!("echo \"$REDLOCK_FENCE\" >> '{}'", file.display())),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn fences(file: &std::path::Path) -> Vec<u64> {
    read_trimmed(file)
        .lines()
        .map(|l| l.parse().expect("a fencing number"))
        .collect()
}

fn assert_increasing(fences: &[u64]) {
    assert!(
        fences.windows(2).all(|w| w[0] < w[1]),
        "fencing numbers must strictly increase: {fences:?}"
    );
}

/// A Redis restarted without persistence, FLUSHALL, and the counter deleted: every
/// later fencing number is still larger than every earlier one. An old small counter
/// (from before numbers were drawn from the server's time) keeps increasing too.
#[test]
fn fences_keep_increasing_when_the_counter_is_lost() {
    let mut redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("fences");
    let conn = ["--redis".to_string(), redis.url()];
    let _: () = redis.cmd(&["SET", "redlock:{fenced}:fence", "41"]);
    fenced_run(&conn, &file);
    fenced_run(&conn, &file);
    redis.restart();
    fenced_run(&conn, &file);
    let _: () = redis.cmd(&["FLUSHALL"]);
    fenced_run(&conn, &file);
    let _: i64 = redis.cmd(&["DEL", "redlock:{fenced}:fence"]);
    fenced_run(&conn, &file);
    let seen = fences(&file);
    assert_eq!(seen.len(), 5);
    assert!(seen[0] > 41, "{seen:?}");
    assert_increasing(&seen);
}

/// A replica promoted after it missed acquisitions on its master (REPLICAOF NO ONE, as
/// a failover does): the new master's numbers are larger than the old master's.
#[test]
fn fences_keep_increasing_across_a_failover_to_a_replica_that_missed_them() {
    let master = Redis::start();
    let replica = Redis::start();
    let s = Scratch::new();
    let file = s.path("fences");
    let port = master.port.to_string();
    let _: () = replica.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    fenced_run(&["--redis".into(), master.url()], &file);
    assert!(
        eventually(Duration::from_secs(10), || replica
            .exists("redlock:{fenced}:fence")),
        "the replica never caught up"
    );
    // Cut off: the next acquisitions on the master never reach the replica.
    let _: () = replica.cmd(&["REPLICAOF", "NO", "ONE"]);
    fenced_run(&["--redis".into(), master.url()], &file);
    fenced_run(&["--redis".into(), master.url()], &file);
    fenced_run(&["--redis".into(), replica.url()], &file);
    let seen = fences(&file);
    assert_eq!(seen.len(), 4);
    assert_increasing(&seen);
}

/// Three Redlock nodes, one restarted empty between runs, another flushed.
#[test]
fn fences_keep_increasing_over_three_nodes_with_one_restarted_empty() {
    let mut nodes = [Redis::start(), Redis::start(), Redis::start()];
    let s = Scratch::new();
    let file = s.path("fences");
    let args = |nodes: &[Redis; 3]| -> Vec<String> {
        nodes
            .iter()
            .flat_map(|n| ["--redis".to_string(), n.url()])
            .collect()
    };
    fenced_run(&args(&nodes), &file);
    nodes[0].restart();
    fenced_run(&args(&nodes), &file);
    let _: () = nodes[1].cmd(&["FLUSHALL"]);
    nodes[2].restart();
    fenced_run(&args(&nodes), &file);
    let seen = fences(&file);
    assert_eq!(seen.len(), 3);
    assert_increasing(&seen);
}

/// After runs of every kind (plain, --limit, --fair, --once-per, --hold-min, a waiter,
/// `redlock acquire`, a wrapper killed with -9, a lost lock), every key the tool wrote
/// has an expiry.
#[test]
fn every_key_expires_after_any_run() {
    let redis = Redis::start();
    let url = redis.url();
    let run = |name: &str, extra: &[&str], script: &str| {
        let out = output_within(
            redlock_run()
                .args(["--key", name, "--redis", &url])
                .args(extra)
                .args(["--", "sh", "-c", script]),
            Duration::from_secs(30),
        );
        code(&out)
    };
    assert_eq!(run("plain", &[], "true"), 0);
    assert_eq!(run("sem", &["--limit", "2"], "true"), 0);
    assert_eq!(run("fair", &["--fair"], "true"), 0);
    assert_eq!(run("daily", &["--once-per", "1d"], "true"), 0);
    assert_eq!(run("kept", &["--hold-min", "20s"], "true"), 0);
    let lost = format!(
        "redis-cli -p {} DEL 'redlock:{{lost}}' >/dev/null; sleep 30",
        redis.port
    );
    assert_eq!(run("lost", &["--ttl", "1s"], &lost), codes::LOST);
    // A holder killed with -9, and a waiter behind a holder.
    let s = Scratch::new();
    let ready = s.path("ready");
    let mut holder = start_run(
        &lock_args(&redis, "killed"),
        &format!("touch '{}'; sleep 30", ready.display()),
    );
    assert!(wait_for_file(&ready, "", READY));
    let mut waiter = redlock_run()
        .args(lock_args(&redis, "killed"))
        .args(["--wait", "1m", "--", "true"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || redis
        .exists("redlock:{killed}:waiters")));
    let out = output(redlock().args(["acquire", "scripted", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let _ = holder.kill();
    let _ = holder.wait();
    for (key, pttl) in redis.all_keys() {
        assert!(pttl > 0, "{key} has no expiry ({pttl})");
    }
    let epoch = redis.pttl("redlock:epoch");
    assert!(epoch > 0, "the data epoch has no expiry ({epoch})");
    let _ = waiter.kill();
    let _ = waiter.wait();
}

/// `--retain 2s`: 300 one-off names leave nothing 3 s after their last run; inside the
/// window the history and --once-per still work.
#[test]
fn retained_state_of_one_off_names_goes() {
    let redis = Redis::start();
    let url = redis.url();
    for i in 0..300 {
        let out = output(
            redlock_run()
                .args(["--key", &format!("branch-{i}"), "--redis", &url])
                .args(["--retain", "2s", "--", "true"]),
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = output(redlock().args(["history", "branch-299", "--json", "--redis", &url]));
    assert!(stdout(&out).contains("\"status\":0"), "{}", stdout(&out));
    let once = |expect: i32| {
        let out = output(
            redlock_run()
                .args(["--key", "daily", "--redis", &url, "--retain", "2s"])
                .args(["--once-per", "1h", "--busy-exit-code", "3", "--", "true"]),
        );
        assert_eq!(code(&out), expect, "{}", stderr(&out));
    };
    once(0);
    once(3);
    let daily = redis.pttl("redlock:{daily}:history");
    assert!(
        daily > 3_600_000,
        "--once-per keeps its history at least twice the period: {daily}"
    );
    let _: i64 = redis.cmd(&["DEL", "redlock:{daily}:history", "redlock:{daily}:fence"]);
    let gone = eventually(Duration::from_secs(3), || redis.all_keys().is_empty());
    assert!(gone, "left 3 s later: {:?}", redis.all_keys());
}

/// `redlock forget` deletes a free name's history and counter, and refuses (75,
/// nothing deleted) while the lock is held.
#[test]
fn forget_deletes_a_free_names_state_and_refuses_a_held_one() {
    let redis = Redis::start();
    let url = redis.url();
    assert_eq!(try_once(&lock_args(&redis, "job"), "true").0, 0);
    assert!(redis.exists("redlock:{job}:history") && redis.exists("redlock:{job}:fence"));
    let s = Scratch::new();
    let ready = s.path("ready");
    let mut holder = start_run(
        &lock_args(&redis, "job"),
        &format!("touch '{}'; sleep 30", ready.display()),
    );
    assert!(wait_for_file(&ready, "", READY));
    let before = redis.snapshot();
    let out = output(redlock().args(["forget", "job", "--redis", &url]));
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(redis.snapshot(), before, "a refused forget changed keys");
    let _ = holder.kill();
    let _ = holder.wait();
    let _: i64 = redis.cmd(&["DEL", "redlock:{job}", "redlock:{job}:meta"]);
    let out = output(redlock().args(["forget", "job", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(redis.all_keys().is_empty(), "{:?}", redis.all_keys());
}

/// Every refusal of an acquire script (a key of ours holding another type, a name in
/// use as another kind, a --once-per slot that already ran), of the forced release (a
/// lock key of another type) and of `wait` leaves every key byte for byte as it was
/// (DUMP, and whether it expires).
#[test]
fn refusals_leave_the_keys_exactly_as_they_were() {
    let redis = Redis::start();
    let url = redis.url();
    let kinds: [&[&str]; 3] = [&[], &["--limit", "2"], &["--fair"]];
    // (what is put there, the flags that meet it, the exit status expected)
    let foreign: [(&[&str], &[&str], i32); 6] = [
        (&["RPUSH", "redlock:{x}:meta", "a"], &[], codes::REDIS),
        (&["HSET", "redlock:{x}:fence", "a", "1"], &[], codes::REDIS),
        (
            &["SET", "redlock:{x}:fence", "not-a-number"],
            &[],
            codes::REDIS,
        ),
        (&["RPUSH", "redlock:{x}:mode", "a"], &[], codes::REDIS),
        (
            &["SADD", "redlock:{x}:history", "a"],
            &["--once-per", "1h"],
            codes::REDIS,
        ),
        (
            &["SET", "redlock:{x}:mode", "limit 7", "PX", "60000"],
            &[],
            codes::USAGE,
        ),
    ];
    for kind in kinds {
        for (setup, flags, expect) in foreign {
            let _: () = redis.cmd(&["FLUSHALL"]);
            let _: redis::Value = redis.cmd(setup);
            // Something of someone else's beside it, to see it untouched too.
            let _: () = redis.cmd(&["SET", "redlock:{x}:slot:2", "theirs", "PX", "60000"]);
            let before = redis.snapshot();
            let out = output(
                redlock_run()
                    .args(["--key", "x", "--redis", &url, "--wait", "0"])
                    .args(kind)
                    .args(flags)
                    .args(["--", "true"]),
            );
            let why = format!("{kind:?} {setup:?}: {}", stderr(&out));
            // --once-per with --limit is refused before Redis is asked.
            let expect = if flags.contains(&"--once-per") && kind.contains(&"--limit") {
                codes::USAGE
            } else {
                expect
            };
            assert_eq!(code(&out), expect, "{why}");
            assert_eq!(stderr(&out).lines().count(), 1, "{why}");
            assert_eq!(redis.snapshot(), before, "{why}");
        }
    }
    // A --once-per slot that already ran.
    let _: () = redis.cmd(&["FLUSHALL"]);
    let once = [
        "--key",
        "x",
        "--redis",
        &url,
        "--once-per",
        "1h",
        "--busy-exit-code",
        "3",
    ];
    assert_eq!(
        code(&output(redlock_run().args(once).args(["--", "true"]))),
        0
    );
    let before = redis.snapshot();
    assert_eq!(
        code(&output(redlock_run().args(once).args(["--", "true"]))),
        3
    );
    assert_eq!(redis.snapshot(), before, "a once-per refusal changed keys");
    // The forced release and wait on a lock key of another type.
    let _: () = redis.cmd(&["FLUSHALL"]);
    let _: i64 = redis.cmd(&["RPUSH", "redlock:{x}", "a"]);
    let before = redis.snapshot();
    let out = output(redlock().args(["release", "x", "--force", "--redis", &url]));
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    let out = output(redlock().args(["wait", "x", "--timeout", "1s", "--redis", &url]));
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        redis.snapshot(),
        before,
        "a refused release or wait changed keys"
    );
}

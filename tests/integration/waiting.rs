//! Waiting for a busy lock: a waiter takes over on release long before the ttl, gets
//! the lock of a crashed holder after its expiry, and survives killed connections.

use std::time::{Duration, Instant};

use crate::harness::*;

// Waiters --------------------------------------------------------------------------

/// Waits until someone is subscribed to the lock's release channel (a waiter is in
/// its wait loop).
fn wait_for_waiter(redis: &Redis, name: &str) -> bool {
    let channel = format!("{}:released", lock_key(name));
    eventually(READY, || {
        let reply: (String, i64) = redis.cmd(&["PUBSUB", "NUMSUB", &channel]);
        reply.1 >= 1
    })
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
        "waiter never subscribed"
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
        "waiter never subscribed"
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
        "waiter never subscribed"
    );
    // Both the waiter's command connection and its subscription go; the holder's
    // command connection too. Neither may turn into an error or a missed release.
    let killed: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert!(killed >= 2, "killed {killed}");
    let killed: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert!(killed >= 1, "killed {killed}");
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
    // It subscribes again, so the release below wakes it by message, not by polling.
    assert!(
        wait_for_waiter(&redis, "patient"),
        "the waiter did not subscribe again"
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
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

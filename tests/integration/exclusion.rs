//! Who may hold a lock: mutual exclusion under contention, interoperability with plain
//! `SET NX PX` clients on the same key, and a key that is not a lock.

use crate::harness::*;

// Mutual exclusion ------------------------------------------------------------------

#[test]
fn mutual_exclusion_16_procs_50_rounds() {
    let redis = Redis::start();
    let (procs, rounds) = (16, 50);
    let c = contend(&lock_args(&redis, "mutex"), procs, rounds);
    eprintln!("contention: {c:?}");
    assert!(c.failures.is_empty(), "{c:?}");
    assert_eq!(c.sections, procs * rounds, "{c:?}");
    assert_eq!(c.overlaps, 0, "{c:?}");
    assert_eq!(c.duplicate_tokens, 0, "{c:?}");
    // Every acquisition got a larger fencing number than the one before it (800 of them).
    assert_eq!(c.fences_not_increasing, 0, "{c:?}");
    assert_eq!(c.counter, c.sections, "lost updates: {c:?}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// Interoperability with plain SET NX PX clients -------------------------------------

#[test]
fn foreign_set_nx_lock_makes_us_busy_and_stays_untouched() {
    let redis = Redis::start();
    let key = lock_key("interop");
    let set: Option<String> = redis.cmd(&["SET", &key, "othertoken", "NX", "PX", "10000"]);
    assert_eq!(set.as_deref(), Some("OK"));

    let (busy, err) = try_once(&lock_args(&redis, "interop"), "echo ran");
    assert_eq!(busy, codes::BUSY, "{err}");
    assert_eq!(get(&redis, &key).as_deref(), Some("othertoken"));
    let left = pttl(&redis, &key);
    assert!(0 < left && left <= 10_000, "pttl {left}");
    assert_eq!(redis.keys(), vec![key], "nothing of ours was written");
}

#[test]
fn our_lock_excludes_a_plain_set_nx() {
    let redis = Redis::start();
    let key = lock_key("interop2");
    let holding = Holding::start(&lock_args(&redis, "interop2"));
    let set: Option<String> = redis.cmd(&["SET", &key, "othertoken", "NX", "PX", "10000"]);
    assert_eq!(set, None, "SET NX succeeded on a held lock");
    assert_eq!(get(&redis, &key), Some(holding.token()));
    let (code, err) = holding.finish();
    assert_eq!(code, 0, "{err}");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

// A key that is not a lock ----------------------------------------------------------

#[test]
fn a_hash_under_the_lock_key_is_not_a_lock() {
    let redis = Redis::start();
    let key = lock_key("hashed");
    let _: i64 = redis.cmd(&["HSET", &key, "f", "v"]);

    let (code, err) = try_once(&lock_args(&redis, "hashed"), "echo ran");
    assert_eq!(code, codes::REDIS, "{err}");
    assert!(err.contains("not a lock"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    let fields: Vec<String> = redis.cmd(&["HGETALL", &key]);
    assert_eq!(fields, vec!["f", "v"]);
    assert_eq!(pttl(&redis, &key), -1, "no ttl was put on the hash");
    assert_eq!(redis.keys(), vec![key], "nothing of ours was written");
}

/// A value of another type at the metadata key is someone else's: refused with the
/// not-a-lock code, touching nothing (no lock key taken, the value intact).
#[test]
fn a_foreign_value_at_the_metadata_key_is_not_touched() {
    let redis = Redis::start();
    let meta = meta_key("m");
    let _: i64 = redis.cmd(&["RPUSH", &meta, "theirs", "also-theirs"]);
    let _: i64 = redis.cmd(&["PEXPIRE", &meta, "600000"]);
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "m"))
            .args(["--", "true"]),
    );
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(":meta") && err.contains("list"), "{err}");
    assert_eq!(redis.keys(), vec![meta.clone()]);
    let items: Vec<String> = redis.cmd(&["LRANGE", &meta, "0", "-1"]);
    assert_eq!(items, ["theirs", "also-theirs"]);
    assert!(redis.pttl(&meta) > 500_000, "its ttl was changed");
    // The fencing number drawn before the metadata was found foreign is given back: no
    // counter is created, and one there keeps its value.
    assert!(
        !redis.exists("redlock:{m}:fence"),
        "a fence counter was left"
    );
    let _: String = redis.cmd(&["SET", "redlock:{m}:fence", "7"]);
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "m"))
            .args(["--", "true"]),
    );
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    let fence: String = redis.cmd(&["GET", "redlock:{m}:fence"]);
    assert_eq!(fence, "7");
}

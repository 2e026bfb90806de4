//! The shared lock's scripts (`scripts::shared`) and the plain acquire as their writer,
//! called through the library's own calls against a real server: readers beside
//! readers, never beside a writer; writer preference; the lock key as the exclusion
//! point a foreign client sees; expiry of a reader that stops renewing; one fence
//! sequence for readers and writers; every key expiring; other kinds refused both ways.

use std::time::Duration;

use redis::Value;
use redlock::keys::LockKeys;
use redlock::scripts::acquire::{self, Acquired, Request};
use redlock::scripts::release::{self, Outcome, Record};
use redlock::scripts::renew::{self, Renewed};
use redlock::scripts::shared::{self, MARKER, MODE};
use redlock::scripts::waiters;

use crate::harness::*;

const TTL: u64 = 10_000;
const BEAT: u64 = 5_000;
const RETAIN: u64 = 60_000;

fn keys(name: &str) -> LockKeys {
    LockKeys::new("redlock:", name.as_bytes()).unwrap()
}

fn text(key: &[u8]) -> String {
    String::from_utf8(key.to_vec()).unwrap()
}

/// Runs a script's call (`Call::eval`: EVAL with its text, which caches it).
fn run(redis: &Redis, call: redis::Cmd) -> Value {
    call.query(&mut redis.conn()).expect("script")
}

fn meta(who: &str) -> Vec<(&'static str, String)> {
    vec![("host", who.to_string()), ("token", who.to_string())]
}

/// A share try by `token` (`beat`: its heartbeat, 0 for a try that does not wait).
fn share(redis: &Redis, k: &LockKeys, token: &str, ttl: u64, beat: u64) -> Acquired {
    let call = shared::share(k, token, ttl, beat, "", RETAIN, &meta(token));
    acquire::decode(run(redis, call.eval())).expect("an acquire reply")
}

/// The kind of lock a try asks for (the scripts each kind calls).
#[derive(Debug, Clone, Copy)]
enum Mode {
    Plain,
    Fair,
    Limit(u32),
    Newest,
}

/// A try of `mode` (plain: the writer) by `token`.
fn take(redis: &Redis, k: &LockKeys, mode: Mode, token: &str, beat: u64) -> Acquired {
    let meta = meta(token);
    let request = Request {
        keys: k,
        token,
        ttl_ms: TTL,
        heartbeat_ms: beat,
        known_holder: "",
        period: "0",
        retain_ms: RETAIN,
        max_attempts: 0,
        rerun: 0,
        slot_pin_ms: 0,
        once_key: None,
        who: "{}",
        order_key: None,
        preempt: "",
        meta: &meta,
    };
    let call = match mode {
        Mode::Plain => request.plain(),
        Mode::Fair => request.fair(),
        Mode::Limit(n) => request.slots(n),
        Mode::Newest => request.newest("newest"),
    };
    acquire::decode(run(redis, call.eval())).expect("an acquire reply")
}

fn writer(redis: &Redis, k: &LockKeys, token: &str, beat: u64) -> Acquired {
    take(redis, k, Mode::Plain, token, beat)
}

fn unshare(redis: &Redis, k: &LockKeys, token: &str) -> Outcome {
    let reply = run(redis, shared::release(k, token, RETAIN, None).eval());
    release::decode(reply).expect("a release reply").0
}

fn release_writer(redis: &Redis, k: &LockKeys, token: &str) -> Outcome {
    let request = release::Request {
        keys: k,
        wakes_head: false,
        token,
        keep_ms: 0,
        inside: false,
        retain_ms: RETAIN,
        once_per: false,
        untell: false,
        once_key: None,
        record: None,
    };
    release::decode(run(redis, request.call(true).eval()))
        .expect("a release reply")
        .0
}

fn fence_of(reply: &Acquired) -> u64 {
    match reply {
        Acquired::Yes { fence, .. } => *fence,
        other => panic!("not taken: {other:?}"),
    }
}

/// The holder a busy reply names.
fn busy_holder(reply: &Acquired) -> String {
    match reply {
        Acquired::Busy { held, .. } => String::from_utf8(held.token.clone()).unwrap(),
        other => panic!("not busy: {other:?}"),
    }
}

fn zcard(redis: &Redis, key: &[u8]) -> i64 {
    redis.cmd(&["ZCARD", &text(key)])
}

fn llen(redis: &Redis, key: &[u8]) -> i64 {
    redis.cmd(&["LLEN", &text(key)])
}

/// The server's digest of each script's text is the SHA1 written beside it (EVALSHA
/// finds what EVAL cached); after a test that ran each.
fn assert_cached(redis: &Redis) {
    for lua in [
        &shared::SHARE,
        &shared::RENEW,
        &shared::RELEASE,
        &acquire::PLAIN,
    ] {
        let cached: Vec<i64> = redis.cmd(&["SCRIPT", "EXISTS", lua.sha()]);
        assert_eq!(cached, vec![1], "{}", lua.sha());
    }
}

/// Two readers at once; the lock key holds the marker to the latest deadline, the mode
/// key says shared at least as long; each reader has its own metadata and fence; a
/// second try of a reader refreshes its share (same fence).
#[test]
fn two_readers_hold_at_once() {
    let redis = Redis::start();
    let k = keys("books");
    let r1 = share(&redis, &k, "r1", TTL, 0);
    let r2 = share(&redis, &k, "r2", 2 * TTL, 0);
    assert!(fence_of(&r2) > fence_of(&r1));
    assert_eq!(zcard(&redis, &k.shares), 2);
    assert_eq!(redis.get(&text(&k.lock)).as_deref(), Some(MARKER));
    assert_eq!(redis.get(&text(&k.mode)).as_deref(), Some(MODE));
    let lock_left = redis.pttl(&text(&k.lock));
    assert!(
        lock_left > TTL as i64 && lock_left <= 2 * TTL as i64,
        "{lock_left}"
    );
    assert!(redis.pttl(&text(&k.mode)) >= lock_left - 50);
    let own: String = redis.cmd(&["HGET", &text(&k.share_meta("r1")), "fence"]);
    assert_eq!(own, fence_of(&r1).to_string());
    let host: String = redis.cmd(&["HGET", &text(&k.share_meta("r2")), "host"]);
    assert_eq!(host, "r2");
    match share(&redis, &k, "r1", TTL, 0) {
        Acquired::Yes { fence, .. } => assert_eq!(fence, fence_of(&r1), "already ours"),
        other => panic!("{other:?}"),
    }
    assert_eq!(zcard(&redis, &k.shares), 2);
}

/// While a reader holds, a writer is busy (the holder it sees is the marker); a writer
/// that waits registers in the writers set and the waiters, one that does not wait
/// registers nowhere. A new reader is then refused (and waits as a waiter would); the
/// reader already in renews and stays. The first reader's release leaves the lock to the
/// second; the last one's deletes the lock key and pushes one wake-up; the writer takes
/// the lock and leaves the writers set; a writer holding refuses readers, naming itself.
#[test]
fn writer_preference_and_hand_over() {
    let redis = Redis::start();
    let k = keys("ledger");
    fence_of(&share(&redis, &k, "r1", TTL, 0));
    fence_of(&share(&redis, &k, "r2", TTL, 0));
    assert_eq!(busy_holder(&writer(&redis, &k, "w-try", 0)), MARKER);
    assert_eq!(zcard(&redis, &k.writers), 0, "a try that does not wait");
    assert_eq!(busy_holder(&writer(&redis, &k, "w", BEAT)), MARKER);
    let score: Option<String> = redis.cmd(&["ZSCORE", &text(&k.writers), "w"]);
    assert!(score.is_some(), "the waiting writer is registered");
    assert!(redis.pttl(&text(&k.writers)) > 0);
    let in_waiters: i64 = redis.cmd(&["SISMEMBER", &text(&k.waiters), "w"]);
    assert_eq!(in_waiters, 1);

    assert_eq!(busy_holder(&share(&redis, &k, "r3", TTL, 0)), MARKER);
    assert_eq!(zcard(&redis, &k.shares), 2, "refused behind the writer");
    let r1_renewed = renew::decode(run(&redis, shared::renew(&k, "r1", TTL).eval()));
    assert_eq!(r1_renewed, Renewed::Yes(None));

    assert_eq!(unshare(&redis, &k, "r1"), Outcome::Deleted);
    assert_eq!(redis.get(&text(&k.lock)).as_deref(), Some(MARKER));
    assert_eq!(
        llen(&redis, &k.wake),
        0,
        "a reader left: nobody to wake yet"
    );
    assert_eq!(unshare(&redis, &k, "r2"), Outcome::Deleted);
    assert!(
        !redis.exists(&text(&k.lock)),
        "the last reader frees the lock"
    );
    assert_eq!(llen(&redis, &k.wake), 1, "one wake-up for the one waiter");
    assert!(redis.pttl(&text(&k.wake)) > 0);

    let w = writer(&redis, &k, "w", BEAT);
    fence_of(&w);
    assert_eq!(
        zcard(&redis, &k.writers),
        0,
        "the writer left the writers set"
    );
    assert_eq!(redis.get(&text(&k.lock)).as_deref(), Some("w"));
    match share(&redis, &k, "r4", TTL, 0) {
        Acquired::Busy { held, .. } => {
            assert_eq!(held.token, b"w");
            assert!(held.meta.contains(&(b"host".to_vec(), b"w".to_vec())));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(release_writer(&redis, &k, "w"), Outcome::Deleted);
    fence_of(&share(&redis, &k, "r4", TTL, 0));
    assert_cached(&redis);
}

/// A reader refused while the lock is free (the last reader's wake-up reached it, not
/// the writer) hands a wake-up on; its busy reply names no holder and the time left of
/// the writer's heartbeat. A writer that gave up (left the waiters) no longer holds
/// readers back. A reader admitted as a waiter wakes the next waiter.
#[test]
fn a_reader_refused_with_the_lock_free_hands_the_wake_up_on() {
    let redis = Redis::start();
    let k = keys("atlas");
    fence_of(&share(&redis, &k, "r1", TTL, 0));
    writer(&redis, &k, "w", BEAT);
    assert_eq!(unshare(&redis, &k, "r1"), Outcome::Deleted);
    let _: Option<String> = redis.cmd(&["LPOP", &text(&k.wake)]);
    match share(&redis, &k, "r2", TTL, BEAT) {
        Acquired::Busy { held, .. } => {
            assert_eq!(held.token, shared::WRITER_WAITS.as_bytes());
            assert!(held.pttl_ms > 0 && held.pttl_ms <= BEAT as i64, "{held:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(llen(&redis, &k.wake), 1, "handed on to the writer");
    // The writer gives up: it leaves the waiters (LEAVE), and the next share try drops
    // its registration. r2 and r3 wait (r3 refused earlier), r2 is admitted: it wakes r3.
    run(&redis, waiters::leave(&k, "w").eval());
    let _: i64 = redis.cmd(&["DEL", &text(&k.wake)]);
    let _: i64 = redis.cmd(&["SADD", &text(&k.waiters), "r3"]);
    fence_of(&share(&redis, &k, "r2", TTL, BEAT));
    assert_eq!(
        zcard(&redis, &k.writers),
        0,
        "the writer that gave up is dropped"
    );
    assert_eq!(llen(&redis, &k.wake), 1, "the next waiter is woken");
    fence_of(&share(&redis, &k, "r3", TTL, BEAT));
    assert!(!redis.exists(&text(&k.waiters)));
    assert_eq!(
        llen(&redis, &k.wake),
        0,
        "nobody left to wake: the list is cleared"
    );
}

/// A foreign client's `SET key token NX PX` fails while readers hold.
#[test]
fn a_foreign_set_nx_fails_while_readers_hold() {
    let redis = Redis::start();
    let k = keys("foreign");
    fence_of(&share(&redis, &k, "r1", TTL, 0));
    let set: Option<String> = redis.cmd(&["SET", &text(&k.lock), "x", "NX", "PX", "1000"]);
    assert_eq!(set, None);
    assert_eq!(redis.get(&text(&k.lock)).as_deref(), Some(MARKER));
}

/// A reader that never renews is dropped after its ttl: the lock key expires with it,
/// its renewal says lost, a writer takes the name, and the next reader's try purges
/// the dead entry. A reader's renewal pushes the lock key's expiry to its new deadline.
#[test]
fn a_reader_that_never_renews_is_purged_after_its_ttl() {
    let redis = Redis::start();
    let k = keys("stale");
    fence_of(&share(&redis, &k, "quiet", 300, 0));
    fence_of(&share(&redis, &k, "busy", 300, 0));
    assert_eq!(
        renew::decode(run(&redis, shared::renew(&k, "busy", 2_000).eval())),
        Renewed::Yes(None)
    );
    assert!(
        redis.pttl(&text(&k.lock)) > 1_000,
        "renewed to the latest deadline"
    );
    let release = |token: &str| unshare(&redis, &k, token);
    assert_eq!(release("busy"), Outcome::Deleted);
    assert!(
        eventually(Duration::from_secs(5), || !redis.exists(&text(&k.lock))),
        "the lock key outlived its last reader's ttl"
    );
    assert_eq!(
        renew::decode(run(&redis, shared::renew(&k, "quiet", TTL).eval())),
        Renewed::No
    );
    fence_of(&share(&redis, &k, "next", TTL, 0));
    let left: Vec<String> = redis.cmd(&["ZRANGE", &text(&k.shares), "0", "-1"]);
    assert_eq!(left, ["next"], "the dead share is purged");
    assert_eq!(unshare(&redis, &k, "next"), Outcome::Deleted);
    assert_eq!(release("quiet"), Outcome::NotOurs);
    fence_of(&writer(&redis, &k, "w", 0));
}

/// Readers and writers draw from one counter: every fence is larger than the last.
#[test]
fn fences_strictly_increase_across_readers_and_writers() {
    let redis = Redis::start();
    let k = keys("fenced");
    let mut fences = Vec::new();
    for round in 0..5 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        fences.push(fence_of(&share(&redis, &k, &a, TTL, 0)));
        fences.push(fence_of(&share(&redis, &k, &b, TTL, 0)));
        unshare(&redis, &k, &a);
        unshare(&redis, &k, &b);
        let w = format!("w{round}");
        fences.push(fence_of(&writer(&redis, &k, &w, 0)));
        release_writer(&redis, &k, &w);
    }
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
}

/// After readers, a waiting writer, a refused waiting reader and a release with a
/// record, every key has an expiry; the fence counter and the history are kept for
/// `--retain`; once the runs end and their ttls pass, only those two are left.
#[test]
fn every_key_written_expires() {
    let redis = Redis::start();
    let k = keys("tidy");
    fence_of(&share(&redis, &k, "r1", 400, 0));
    fence_of(&share(&redis, &k, "r2", 400, 0));
    writer(&redis, &k, "w", 600);
    share(&redis, &k, "r3", 400, 600);
    let head = r#"{"token":"r1""#;
    let record = Record {
        size: 10,
        head,
        held_ms: 5,
        start_ms: 0,
        status: 0,
        status_if_lost: 79,
        lost: false,
    };
    let reply = run(
        &redis,
        shared::release(&k, "r1", RETAIN, Some(&record)).eval(),
    );
    assert_eq!(release::decode(reply).unwrap().0, Outcome::Deleted);
    let again = run(
        &redis,
        shared::release(&k, "r1", RETAIN, Some(&record)).eval(),
    );
    assert_eq!(
        release::decode(again).unwrap().0,
        Outcome::AlreadyReleased,
        "a retry finds its record"
    );
    let history: Vec<String> = redis.cmd(&["LRANGE", &text(&k.history), "0", "-1"]);
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(
        history[0].contains(r#""status":0,"lost":false"#),
        "{history:?}"
    );
    for (key, pttl) in redis.all_keys() {
        assert!(pttl > 0, "{key} has no expiry ({pttl})");
        if key == text(&k.fence) || key == text(&k.history) {
            assert!(
                pttl <= RETAIN as i64 && pttl > RETAIN as i64 - 5_000,
                "{key}"
            );
        } else {
            assert!(pttl <= 10_000, "{key} outlives its holders: {pttl}");
        }
    }
    let gone = eventually(Duration::from_secs(5), || redis.keys().is_empty());
    assert!(gone, "left: {:?}", redis.keys());
}

/// A name in use as a fair queue or a semaphore refuses a share (`{-6, mode}`), and a
/// shared name refuses them (`{-6, 'shared'}`), as it refuses newest-wins; a try that
/// is refused writes nothing.
#[test]
fn other_kinds_and_shares_refuse_each_other() {
    let redis = Redis::start();
    for (name, mode, text) in [
        ("queue", Mode::Fair, "fair"),
        ("pool", Mode::Limit(2), "limit 2"),
    ] {
        let k = keys(name);
        fence_of(&take(&redis, &k, mode, "other", 0));
        let before = redis.snapshot();
        assert_eq!(
            share(&redis, &k, "r", TTL, BEAT),
            Acquired::OtherKind(text.into())
        );
        assert_eq!(redis.snapshot(), before, "{name}: a refusal wrote");
    }
    let k = keys("shelf");
    fence_of(&share(&redis, &k, "r", TTL, 0));
    for mode in [Mode::Fair, Mode::Limit(2), Mode::Newest] {
        let before = redis.snapshot();
        assert_eq!(
            take(&redis, &k, mode, "other", BEAT),
            Acquired::OtherKind(MODE.into()),
            "{mode:?}"
        );
        assert_eq!(redis.snapshot(), before, "{mode:?}: a refusal wrote");
    }
}

/// Commands each script runs (INFO commandstats, less the EVAL itself), and a plain
/// name that was never shared costs what it cost before `--shared`: free 7, busy 6.
#[test]
fn commands_per_call() {
    let redis = Redis::start();
    let k = keys("counted");
    let count = |call: redis::Cmd| -> u64 {
        let _: () = redis.cmd(&["CONFIG", "RESETSTAT"]);
        run(&redis, call);
        let stats: String = redis.cmd(&["INFO", "commandstats"]);
        let calls: u64 = stats
            .lines()
            .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_eval:"))
            .filter(|l| !l.starts_with("cmdstat_config"))
            .filter_map(|l| {
                let n = l.split("calls=").nth(1)?.split(',').next()?;
                n.parse::<u64>().ok()
            })
            .sum();
        calls
    };
    let plain = |token: &str, beat: u64| {
        let meta = meta(token);
        Request {
            keys: &k,
            token,
            ttl_ms: TTL,
            heartbeat_ms: beat,
            known_holder: "",
            period: "0",
            retain_ms: RETAIN,
            max_attempts: 0,
            rerun: 0,
            slot_pin_ms: 0,
            once_key: None,
            who: "",
            order_key: None,
            preempt: "",
            meta: &meta,
        }
        .plain()
    };
    assert_eq!(count(plain("w", 0).eval()), 7, "a plain acquisition, free");
    assert_eq!(count(plain("v", 0).eval()), 6, "a plain try, busy");
    release_writer(&redis, &k, "w");
    let first = count(shared::share(&k, "r1", TTL, 0, "", RETAIN, &meta("r1")).eval());
    let second = count(shared::share(&k, "r2", TTL, 0, "", RETAIN, &meta("r2")).eval());
    let renewal = count(shared::renew(&k, "r1", TTL).eval());
    let writer_waits = count(plain("w", BEAT).eval());
    let refused = count(shared::share(&k, "r3", TTL, 0, "", RETAIN, &meta("r3")).eval());
    let not_last = count(shared::release(&k, "r1", RETAIN, None).eval());
    let last = count(shared::release(&k, "r2", RETAIN, None).eval());
    let writer_takes = count(plain("w", BEAT).eval());
    eprintln!(
        "commands: share {first} (first) {second} (second), renew {renewal}, writer waits \
         {writer_waits}, share refused behind it {refused}, release {not_last} (not last) \
         {last} (last), writer takes {writer_takes}"
    );
    for n in [first, second, renewal, refused, not_last, last] {
        assert!(n <= 20, "{n}");
    }
}

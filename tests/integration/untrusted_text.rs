//! Text that came from Redis is made harmless before a person reads it (review 4, #5): a
//! holder's host, user and command, and history records, are written by anyone who can
//! run `redlock-run` or write the prefix. Forged with terminal escapes (an OSC title, a
//! screen clear, a C1 CSI), they reach no verb's human output as raw bytes: `status`,
//! `list`, `top --once`, `history`, `history --timeline`, `release --force` and a busy
//! run's line show them escaped; `--json` keeps them exact.

use std::time::Duration;

use crate::harness::*;

/// An OSC that retitles the terminal, a screen clear, and a C1 control (CSI).
const EVIL: &str = "evil\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m";

/// Whether `text` holds a byte a terminal would act on: a C0 control but newline and
/// tab, DEL, or a C1 control (U+0080–U+009F).
fn has_control(text: &str) -> bool {
    text.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}')
}

/// A lock held under a forged token with forged metadata, and a forged history record.
fn forge(redis: &Redis, name: &str) {
    let key = lock_key(name);
    let _: () = redis.cmd(&["SET", &key, "forged", "PX", "60000"]);
    let _: i64 = redis.cmd(&[
        "HSET",
        &meta_key(name),
        "token",
        "forged",
        "host",
        EVIL,
        "pid",
        "1",
        "user",
        EVIL,
        "cmd",
        EVIL,
        "since_ms",
        "1795549221000",
        "ttl_ms",
        "60000",
    ]);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let record = serde_json::json!({
        "token": "t1", "host": EVIL, "pid": 2, "user": EVIL, "cmd": EVIL,
        "duration_ms": 5000, "status": 0, "lost": false,
        "start_ms": now_ms - 10_000, "end_ms": now_ms - 5_000,
    })
    .to_string();
    let history = format!("{key}:history");
    let _: i64 = redis.cmd(&["LPUSH", &history, &record]);
    let _: i64 = redis.cmd(&["PEXPIRE", &history, "60000"]);
}

fn shows_escaped(what: &str, out: &std::process::Output) {
    let (o, e) = (stdout(out), stderr(out));
    assert!(
        !has_control(&o) && !has_control(&e),
        "{what}: raw controls in {o:?} {e:?}"
    );
    assert!(
        o.contains("\\u{1b}") || e.contains("\\u{1b}"),
        "{what}: the forged text is not shown escaped: {o}{e}"
    );
}

#[test]
fn every_human_output_escapes_forged_metadata_and_history() {
    let redis = Redis::start();
    let url = redis.url();
    forge(&redis, "esc");
    let verb = |args: &[&str]| output(redlock().args(args).args(["--redis", &url]));
    shows_escaped("status", &verb(&["status", "esc"]));
    shows_escaped("list", &verb(&["list"]));
    shows_escaped("top --once", &verb(&["top", "--once"]));
    shows_escaped("history", &verb(&["history", "esc"]));
    shows_escaped(
        "history --timeline",
        &output(
            redlock()
                .args(["history", "esc", "--timeline", "--redis", &url])
                .env("COLUMNS", "100"),
        ),
    );
    // A run that finds it busy says who holds it.
    let busy = output(redlock_run().args(["--key", "esc", "--redis", &url, "--", "true"]));
    assert_eq!(code(&busy), codes::BUSY, "{}", stderr(&busy));
    shows_escaped("the busy line", &busy);
    // --json stays exact.
    let json = verb(&["status", "esc", "--json"]);
    let j: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert_eq!(j["holder"]["cmd"], EVIL);
    shows_escaped("release --force", &verb(&["release", "esc", "--force"]));
}

/// A command line with escapes, recorded by a real run, is shown escaped to a waiter
/// and to `status` while it holds the lock.
#[test]
fn a_command_line_with_escapes_is_shown_escaped() {
    let redis = Redis::start();
    let args: Vec<String> = ["--key", "esc-run", "--redis", &redis.url(), "--ttl", "60s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let s = Scratch::new();
    let ready = s.path("ready");
    let mut holder = redlock_run()
        .args(&args)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "touch '{}'; sleep 30 #\u{1b}]0;PWNED\u{7}\u{1b}[2J",
            ready.display()
        ))
        .spawn()
        .unwrap();
    assert!(eventually(READY, || ready.exists()));
    let status = output(redlock().args(["status", "esc-run", "--redis", &redis.url()]));
    shows_escaped("status", &status);
    let busy = output(redlock_run().args(&args).args(["--", "true"]));
    shows_escaped("the busy line", &busy);
    let _ = holder.kill();
    let _ = holder.wait();
}

/// (review 4, secrets) What a run records is masked at the source: `redis-cli -a PW`
/// keeps neither the password (its port stays), `curl -u user:PW` keeps the user only,
/// and `--label` records a fixed text instead of the command line. Read back by
/// `status --json` and from the history, which keeps it for `--retain`.
#[test]
fn a_recorded_command_keeps_no_secret() {
    let redis = Redis::start();
    let url = redis.url();
    let record = |extra: &[&str], cmd: &[&str]| -> String {
        let s = Scratch::new();
        let ready = s.path("ready");
        let script = format!("touch '{}'; sleep 30", ready.display());
        let mut holder = redlock_run()
            .args(["--key", "sec", "--redis", &url, "--ttl", "60s"])
            .args(extra)
            .args(["--", "sh", "-c", &script, "sh"])
            .args(cmd)
            .spawn()
            .unwrap();
        assert!(eventually(READY, || ready.exists()));
        let out = output(redlock().args(["status", "sec", "--json", "--redis", &url]));
        let _ = holder.kill();
        let _ = holder.wait();
        let _: i64 = redis.cmd(&["DEL", &lock_key("sec"), &meta_key("sec")]);
        let j: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        j["holder"]["cmd"].as_str().unwrap_or_default().to_string()
    };
    let cmd = record(&[], &["redis-cli", "-a", "S3cretPw", "-p", "27002"]);
    assert!(!cmd.contains("S3cretPw") && cmd.contains("27002"), "{cmd}");
    let cmd = record(&[], &["curl", "-u", "admin:hunter2", "https://x/"]);
    assert!(!cmd.contains("hunter2") && cmd.contains("admin:"), "{cmd}");
    let cmd = record(&["--label", "nightly-db"], &["mysql", "-phunter2"]);
    assert_eq!(cmd, "nightly-db");
}

/// (review 4, #10) No script deletes a key of a type it did not write: another
/// application's hash at a lock's `:wake` survives a hand-over (a waiter that takes
/// the lock cleared it with DEL), and `forget` refuses, naming the key, when the fence
/// counter or the history holds another type (it deleted them).
#[test]
fn keys_of_another_type_are_never_deleted() {
    let redis = Redis::start();
    let url = redis.url();
    let wake = format!("{}:wake", lock_key("fw"));
    let s = Scratch::new();
    let ready = s.path("ready");
    let go = s.path("go");
    let mut holder = redlock_run()
        .args(["--key", "fw", "--redis", &url, "--ttl", "10s", "--", "sh", "-c"])
        .arg(format!(
            "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done",
            ready.display(),
            go.display()
        ))
        .spawn()
        .unwrap();
    assert!(eventually(READY, || ready.exists()));
    let mut waiter = redlock_run()
        .args([
            "--key",
            "fw",
            "--redis",
            &url,
            "--wait",
            "30s",
            "--no-local-queue",
            "--",
            "true",
        ])
        .spawn()
        .unwrap();
    assert!(eventually(READY, || redis
        .exists(&format!("{}:waiters", lock_key("fw")))));
    let _: i64 = redis.cmd(&["HSET", &wake, "owner", "someone-else"]);
    std::fs::write(&go, "").unwrap();
    assert!(wait_child(&mut holder, Duration::from_secs(30)).success());
    assert!(wait_child(&mut waiter, Duration::from_secs(30)).success());
    let kind: String = redis.cmd(&["TYPE", &wake]);
    assert_eq!(
        kind, "hash",
        "another application's key at :wake was deleted"
    );

    let (fence, history) = (
        format!("{}:fence", lock_key("fg")),
        format!("{}:history", lock_key("fg")),
    );
    let _: i64 = redis.cmd(&["HSET", &history, "a", "b"]);
    let _: i64 = redis.cmd(&["HSET", &fence, "a", "b"]);
    let out = output(redlock().args(["forget", "fg", "--redis", &url]));
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(redis.exists(&fence) && redis.exists(&history));
}

/// (issue 41, item 4) A `sh -c '…'` line whose secret is masked is recorded as typed
/// with only the secret masked: it was re-split and every word quoted
/// (`sh -c 'sleep '\''2;'\'' redis-cli -a '\''***'\'' …`).
#[test]
fn a_masked_shell_line_is_recorded_as_typed() {
    let redis = Redis::start();
    let url = redis.url();
    let s = Scratch::new();
    let ready = s.path("ready");
    let line = format!(
        "touch {}; sleep 30; redis-cli -a S3cretPw -p 27002 info",
        ready.display()
    );
    let mut holder = redlock_run()
        .args(["--key", "sec", "--redis", &url, "--", "sh", "-c", &line])
        .spawn()
        .unwrap();
    assert!(eventually(READY, || ready.exists()));
    let out = output(redlock().args(["status", "sec", "--json", "--redis", &url]));
    let _ = holder.kill();
    let _ = holder.wait();
    let j: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        j["holder"]["cmd"],
        format!(
            "sh -c 'touch {}; sleep 30; redis-cli -a *** -p 27002 info'",
            ready.display()
        ),
        "{j}"
    );
}

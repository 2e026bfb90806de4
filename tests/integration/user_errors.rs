//! Every error a user can cause gives one stderr line, its documented code and no key
//! left behind: unreachable, silent or password-protected servers, replicas, full
//! memory, bad flags, URLs and commands.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::harness::*;

// ---------------------------------------------------------------------------------
// Errors a user can cause.

/// Checks the SPEC's bar for a user error: exactly one stderr line, the documented
/// code, no panic text; returns the line.
fn one_error_line(out: &Output, expected: i32, ctx: &str) -> String {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(expected),
        "{ctx}: wrong status; stderr: {err}"
    );
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "{ctx}: exactly one stderr line wanted, got {err:?}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{ctx}: {err}"
    );
    err
}

fn run_with(args: &[&str]) -> Output {
    output_within(redlock_run().args(args), HANG)
}

#[test]
fn a_refused_port_is_unreachable_quickly() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let start = Instant::now();
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::UNREACHABLE, "refused");
    assert!(err.contains("refused"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a refused connection must fail fast, took {:?}",
        start.elapsed()
    );
}

#[test]
fn a_server_that_never_answers_is_unreachable_within_a_bound() {
    let redis = Redis::start();
    redis.pause();
    let start = Instant::now();
    let out = run_with(&["--key", "k", "--redis", &redis.url(), "--", "true"]);
    let took = start.elapsed();
    redis.resume();
    one_error_line(&out, codes::UNREACHABLE, "stopped server");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // Whatever the wrapper wrote before it gave up is processed now; no lock may come
    // of it.
    let _: String = redis.cmd(&["PING"]);
    assert_no_keys(&redis, "stopped server");
}

#[test]
fn a_wrong_password_is_an_auth_error_and_never_printed() {
    let redis = Redis::start_with(&["--requirepass", "pw"]);
    let secret = "hunter2-not-the-password";
    for (user, verbose) in [("", false), ("", true), ("default", false)] {
        let url = format!("redis://{user}:{secret}@127.0.0.1:{}", redis.port);
        let mut args = vec!["--key", "k", "--redis", &url];
        if verbose {
            args.push("--verbose");
        }
        args.extend(["--", "true"]);
        let out = run_with(&args);
        let ctx = format!("wrong password (user {user:?}, verbose {verbose})");
        let err = one_error_line(&out, codes::AUTH, &ctx);
        assert!(!err.contains(secret), "{ctx}: password printed: {err}");
        assert!(!stdout(&out).contains(secret), "{ctx}: password printed");
        assert_no_keys(&redis, &ctx);
    }
}

#[test]
fn no_password_for_a_server_that_requires_one_is_an_auth_error() {
    let redis = Redis::start_with(&["--requirepass", "pw"]);
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::AUTH, "no password");
    assert!(err.to_lowercase().contains("password"), "{err}");
    assert_no_keys(&redis, "no password");
}

#[test]
fn a_read_only_replica_is_a_redis_error() {
    let master = Redis::start();
    let port = master.port.to_string();
    let replica = Redis::start_with(&["--replicaof", "127.0.0.1", &port]);
    assert!(
        eventually(HANG, || replica
            .cmd::<String>(&["INFO", "replication"])
            .contains("master_link_status:up")),
        "the replica never linked up"
    );
    let out = run_with(&["--key", "k", "--redis", &replica.url(), "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "replica");
    assert!(err.contains("read-only"), "{err}");
    assert_no_keys(&master, "replica (master)");
    assert_no_keys(&replica, "replica");
}

#[test]
fn out_of_memory_is_a_redis_error_and_leaves_no_key() {
    let redis = Redis::start();
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let out = run_with(&["--key", "k", "--redis", &redis.url(), "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "OOM");
    assert!(err.contains("memory"), "{err}");
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_no_keys(&redis, "OOM");
}

#[test]
fn usage_and_command_errors_give_one_line_and_their_code() {
    let redis = Redis::start();
    let url = redis.url();
    let scratch = Scratch::new();
    let no_exec = scratch.path("no-exec");
    std::fs::write(&no_exec, "#!/bin/sh\ntrue\n").unwrap();
    let no_exec = no_exec.display().to_string();
    let dir = scratch.dir.path().display().to_string();
    let r = ["--redis", url.as_str()];
    let with =
        |extra: &[&str]| -> Vec<String> { r.iter().chain(extra).map(|s| s.to_string()).collect() };
    // (arguments, expected status, text the line must contain)
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (with(&["--key", "k", "--"]), codes::USAGE, "command"),
        (with(&["--key", "k"]), codes::USAGE, "command"),
        (with(&["--key", "k", "true"]), codes::USAGE, "true"),
        (
            with(&["--key", "k", "--", "no-such-command-redlock"]),
            codes::NOT_FOUND,
            "no-such-command-redlock",
        ),
        (
            with(&["--key", "k", "--", &no_exec]),
            codes::CANNOT_EXECUTE,
            "no-exec",
        ),
        (
            with(&["--key", "k", "--", &dir]),
            codes::CANNOT_EXECUTE,
            "director",
        ),
        (with(&["--key", "", "--", "true"]), codes::USAGE, "empty"),
        (
            with(&["--key", "k", "--no-such-flag", "--", "true"]),
            codes::USAGE,
            "--no-such-flag",
        ),
        (
            with(&["--key", "k", "--ttl", "0", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--ttl", "banana", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--ttl", "30", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "3s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--renew-every",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "10s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--renew-every",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--kill-after",
                "5s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "2900ms",
                "--kill-after",
                "1s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--wait", "banana", "--", "true"]),
            codes::USAGE,
            "--wait",
        ),
        (
            with(&["--key", "k", "--kill-after", "soon", "--", "true"]),
            codes::USAGE,
            "--kill-after",
        ),
        (
            with(&["--key", "k", "--hold-min", "x", "--", "true"]),
            codes::USAGE,
            "--hold-min",
        ),
        (
            with(&["--key", "k", "--busy-exit-code", "300", "--", "true"]),
            codes::USAGE,
            "--busy-exit-code",
        ),
    ];
    for (args, expected, needle) in cases {
        let out = output_within(redlock_run().args(&args), HANG);
        let ctx = format!("{args:?}");
        let err = one_error_line(&out, expected, &ctx);
        assert!(
            err.contains(needle),
            "{ctx}: {err:?} should mention {needle:?}"
        );
        assert_no_keys(&redis, &ctx);
    }
}

#[test]
fn bad_urls_are_usage_errors_with_the_password_redacted() {
    let secret = "hunter2-url-secret";
    let urls = [
        "http://x".to_string(),
        format!("http://:{secret}@x:6379"),
        format!("redis://:{secret}@h:0"),
        format!("redis://user:{secret}@h:65536"),
        format!("redis://:{secret}@"),
        "garbage".to_string(),
        "redis:/x".to_string(),
    ];
    for url in urls {
        let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
        let ctx = format!("URL {url:?}");
        let err = one_error_line(&out, codes::USAGE, &ctx);
        assert!(!err.contains(secret), "{ctx}: password printed: {err}");
    }
}

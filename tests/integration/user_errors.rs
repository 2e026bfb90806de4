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
    assert!(err.contains("connection refused"), "{err}");
    assert!(
        !err.contains("TLS"),
        "no TLS hint for a refused port: {err}"
    );
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
        // Malformed forms that still carry a password (issue: echoed in clear).
        format!("redis:/:{secret}@127.0.0.1:6379"),
        format!("redis:://:{secret}@127.0.0.1:6379"),
        format!("redis::/user:{secret}@127.0.0.1:6379"),
        format!("redis//:{secret}@127.0.0.1:6379"),
        format!(":{secret}@127.0.0.1:6379"),
        format!("redis://127.0.0.1:6379/0?pass={secret}&bogus#frag"),
        format!("redis://127.0.0.1:0?password={secret}"),
        format!("unix://?pass={secret}"),
        format!("redis+cluster://:{secret}@h1:1,,h2:2?password={secret}"),
    ];
    for url in urls {
        let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
        let ctx = format!("URL {url:?}");
        let err = one_error_line(&out, codes::USAGE, &ctx);
        assert!(!err.contains(secret), "{ctx}: password printed: {err}");
    }
}

/// Every echo of a URL a user gave is redacted, in every verb, parsed or not.
#[test]
fn malformed_urls_never_echo_the_password_in_any_verb() {
    let secret = "hunter3-url-secret";
    for url in [
        format!("redis:/:{secret}@127.0.0.1:6379"),
        format!("redis:://:{secret}@127.0.0.1:6379"),
        format!("redis://127.0.0.1:6379/x?pass={secret}"),
    ] {
        for verb in [
            vec!["status", "k"],
            vec!["list"],
            vec!["release", "k", "--force"],
            vec!["acquire", "k"],
            vec!["extend", "k", "--token", "t"],
        ] {
            let out = output(redlock().args(&verb).args(["--redis", &url]));
            let ctx = format!("redlock {verb:?} with {url:?}");
            let err = one_error_line(&out, codes::USAGE, &ctx);
            assert!(!err.contains(secret), "{ctx}: password printed: {err}");
        }
    }
}

/// Every duration flag has an upper bound, and values too small to work are refused;
/// a negative value names its flag instead of looking like an unknown flag.
#[test]
fn durations_out_of_bounds_name_their_flag() {
    let redis = Redis::start();
    let cases: &[(&[&str], &str)] = &[
        (&["--hold-min", "1000000000000000s"], "--hold-min"),
        (&["--hold-min", "2y"], "--hold-min"),
        (&["--max-hold", "0s"], "--max-hold"),
        (&["--max-hold", "400d"], "--max-hold"),
        (&["--wait", "1000000000000000s"], "--wait"),
        (&["--ttl", "1000000000000000s"], "--ttl"),
        (&["--kill-after", "1000000000000000s"], "--kill-after"),
        (&["--node-timeout", "1ns"], "--node-timeout"),
        (&["--node-timeout", "999us"], "--node-timeout"),
        (&["--renew-every", "1ns"], "--renew-every"),
        (&["--ttl", "-1s"], "--ttl"),
        (&["--wait", "-5s"], "--wait"),
        (&["--hold-min", "-1m"], "--hold-min"),
        (&["--busy-exit-code", "-1"], "--busy-exit-code"),
    ];
    for (extra, flag) in cases {
        let mut args = vec!["--key", "k", "--redis"];
        let url = redis.url();
        args.push(&url);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        let out = run_with(&args);
        let ctx = format!("{extra:?}");
        let err = one_error_line(&out, codes::USAGE, &ctx);
        assert!(
            err.contains(flag),
            "{ctx}: the line does not name {flag}: {err}"
        );
        assert!(redis.keys().is_empty(), "{ctx}: {:?}", redis.keys());
    }
}

/// `--wait` covers a Redis that is not up yet when the run starts: connecting is
/// retried with backoff within the wait, and the run goes ahead once it answers.
#[test]
fn wait_covers_a_redis_that_is_down_at_the_start() {
    let port = free_port();
    let scratch = Scratch::new();
    let err_path = scratch.path("stderr");
    let mut run = redlock_run()
        .args(["--key", "late", "--verbose", "--wait", "60s"])
        .args(["--redis", &format!("redis://127.0.0.1:{port}")])
        .args(["--", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn");
    // The run has found the server down at least once before it comes up.
    assert!(
        wait_for_file(&err_path, "connection refused", Duration::from_secs(20)),
        "no retry seen: {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    let redis = Redis::start_on(port);
    let status = wait_child(&mut run, Duration::from_secs(60));
    let said = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(redis.keys().is_empty(), "{:?}", redis.keys());
}

/// When it gives up, the one line says how long it tried.
#[test]
fn wait_for_a_redis_that_stays_down_says_how_long_it_tried() {
    let port = free_port();
    let out = run_with(&[
        "--key",
        "never",
        "--wait",
        "1s",
        "--redis",
        &format!("redis://127.0.0.1:{port}"),
        "--",
        "true",
    ]);
    let err = one_error_line(&out, codes::UNREACHABLE, "down for all of --wait");
    assert!(err.contains("connection refused"), "{err}");
    assert!(err.contains("tried for"), "{err}");
}

/// Messages name the cause: a full server, a server that does not speak RESP, a
/// Sentinel URL pointed at a plain server, a database that is not a number.
#[test]
fn messages_name_the_cause() {
    // maxclients 1, and the one client slot taken by a connection that stays open.
    let full = Redis::start_with(&["--maxclients", "1"]);
    let _taken = full.conn();
    let out = run_with(&["--key", "k", "--redis", &full.url(), "--", "true"]);
    let err = one_error_line(&out, codes::UNREACHABLE, "maxclients");
    assert!(err.contains("full") && err.contains("maxclients"), "{err}");

    // Something that answers, but not in RESP (an HTTP server's reply).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let http = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 512];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "not RESP");
    assert!(err.contains("does not speak the Redis protocol"), "{err}");
    drop(http);

    let plain = Redis::start();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", plain.port);
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "sentinel at a plain server");
    assert!(err.contains("not a sentinel"), "{err}");

    let url = format!("redis://127.0.0.1:{}/first", plain.port);
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::USAGE, "database");
    assert!(err.contains("database \"first\" is not a number"), "{err}");
    assert!(plain.keys().is_empty());
}

//! The unit tests of `config`: the run's flags as clap parses them, checked.

use super::run::local_dir_from;
use super::*;
use clap::Parser;

fn parse(args: &[&str]) -> Result<RunConfig> {
    let mut argv = vec!["redlock-run"];
    argv.extend_from_slice(args);
    let cli = crate::cli::RunCli::try_parse_from(argv).expect("clap accepts it");
    RunConfig::from_args(cli.run)
}

fn usage_message(args: &[&str]) -> String {
    let err = parse(args).expect_err("should be refused");
    assert_eq!(err.code(), Code::Usage, "{err}");
    err.to_string()
}

#[test]
fn defaults() {
    let c = parse(&["--key", "k", "--redis", "redis://h:1", "--", "true"]).unwrap();
    assert_eq!(c.budget.ttl, DEFAULT_TTL);
    assert_eq!(c.budget.renew_every, Duration::from_secs(10));
    assert_eq!(c.budget.kill_after, Duration::from_secs(5));
    assert_eq!(c.budget.node_timeout, Duration::from_secs(2));
    assert_eq!(c.wait, Wait::For(Duration::ZERO));
    assert_eq!(c.busy_code, 75);
    assert_eq!(c.keys.lock, b"redlock:{k}");
    assert_eq!((c.policy.completion.once_per, c.history), (None, 20));
}

#[test]
fn bad_values_name_their_flag() {
    let base = ["--key", "k", "--redis", "redis://h:1"];
    let cases: &[(&[&str], &str)] = &[
        (&["--ttl", "0"], "--ttl"),
        (&["--ttl", "banana"], "--ttl"),
        (&["--ttl", "30"], "add a unit"),
        (&["--ttl=-5s"], "--ttl"),
        (&["--ttl", "10s", "--renew-every", "10s"], "--renew-every"),
        (&["--ttl", "10s", "--renew-every", "20s"], "--renew-every"),
        (&["--ttl", "2s", "--kill-after", "5s"], "too short"),
        (&["--ttl", "10ms"], "at least 100ms"),
        (&["--ttl", "300ms", "--node-timeout", "1s"], "too short"),
        (&["--wait", "soon"], "--wait"),
        (&["--busy-exit-code", "256"], "--busy-exit-code"),
        (&["--busy-exit-code", "x"], "--busy-exit-code"),
        (&["--hold-min", "5"], "--hold-min"),
        (&["--node-timeout", "0s"], "--node-timeout"),
        (&["--prefix", "a{b"], "--prefix"),
        (&["--once-per", "500ms"], "--once-per"),
        (&["--once-per", "1d", "--history", "0"], "--history 0"),
        (&["--history", "1001"], "--history"),
        (&["--history", "-1"], "--history"),
        (&["--limit", "0"], "--limit"),
        (&["--limit", "101"], "--limit"),
        (&["--limit", "3", "--redis", "redis://h:2"], "independent"),
        (&["--fair", "--redis", "redis://h:2"], "independent"),
    ];
    for (extra, needle) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        let msg = usage_message(&args);
        assert!(msg.contains(needle), "{extra:?}: {msg}");
        assert!(!msg.contains('\n'));
    }
}

#[test]
fn missing_command_and_empty_key() {
    assert!(usage_message(&["--key", "k"]).contains("no command"));
    assert!(usage_message(&["--key", "", "--", "true"]).contains("empty"));
    assert!(usage_message(&["--key", "k", "--", ""]).contains("empty"));
}

#[test]
fn wait_spellings() {
    assert_eq!(wait("forever").unwrap(), Wait::Forever);
    assert_eq!(wait("INF").unwrap(), Wait::Forever);
    assert_eq!(wait("0").unwrap(), Wait::For(Duration::ZERO));
    assert_eq!(wait("1m").unwrap(), Wait::For(Duration::from_secs(60)));
}

#[test]
fn an_empty_url_is_refused() {
    let msg = usage_message(&["--key", "k", "--redis", "", "--", "true"]);
    assert!(msg.contains("empty"), "{msg}");
}

#[test]
fn cluster_refuses_an_empty_hash_tag() {
    let url = "redis+cluster://h1:1,h2:2";
    let msg = usage_message(&["--key", "}x", "--redis", url, "--", "true"]);
    assert!(msg.contains("Cluster"), "{msg}");
    assert!(parse(&["--key", "}x", "--redis", "redis://h:1", "--", "true"]).is_ok());
    assert!(parse(&["--key", "x}", "--redis", url, "--", "true"]).is_ok());
}

#[test]
fn tls_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("c.pem");
    let key = dir.path().join("k.pem");
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nx\n").unwrap();
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nx\n").unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["--key", "k", "--redis", "rediss://h:1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        args
    }
    let c = parse(&with(&[
        "--tls-ca",
        cert,
        "--tls-cert",
        cert,
        "--tls-key",
        key,
    ]))
    .unwrap();
    assert!(c.conn.urls[0].tls().ca.is_some() && c.conn.urls[0].tls().client.is_some());
    assert!(usage_message(&with(&["--tls-cert", cert])).contains("go together"));
    assert!(usage_message(&with(&["--tls-ca", key])).contains("--tls-ca"));
    assert!(usage_message(&with(&["--tls-cert", cert, "--tls-key", cert])).contains("--tls-key"));
    assert!(usage_message(&with(&["--tls-ca", "/nonexistent"])).contains("cannot read"));
    let plain = [
        "--key",
        "k",
        "--redis",
        "redis://h:1",
        "--tls-insecure-skip-verify",
    ];
    let mut args = plain.to_vec();
    args.extend_from_slice(&["--", "true"]);
    assert!(usage_message(&args).contains("rediss://"));
}

#[test]
fn duplicate_urls_are_refused() {
    let msg = usage_message(&[
        "--key",
        "k",
        "--redis",
        "redis://h:1",
        "--redis",
        "redis://h:1",
        "--",
        "true",
    ]);
    assert!(msg.contains("twice"));
}

#[test]
fn the_command_line_wins_over_the_environment_for_the_local_queue() {
    use crate::cli::LocalArgs;
    use std::path::PathBuf;
    let args = |dir: Option<&str>, off: bool| LocalArgs {
        local_dir: dir.map(PathBuf::from),
        no_local_queue: off,
    };
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    };
    let dir = |d: &str| LocalDir::Given(PathBuf::from(d));
    type Vars = &'static [(&'static str, &'static str)];
    let cases: [(LocalArgs, Vars, LocalDir); 8] = [
        (
            args(None, true),
            &[("REDLOCK_LOCAL_DIR", "/q")],
            LocalDir::Off,
        ),
        (
            args(Some("/a"), false),
            &[("REDLOCK_NO_LOCAL_QUEUE", "true")],
            dir("/a"),
        ),
        (args(Some("/a"), true), &[], LocalDir::Off),
        (
            args(None, false),
            &[("REDLOCK_LOCAL_DIR", "/q"), ("REDLOCK_NO_LOCAL_QUEUE", "1")],
            LocalDir::Off,
        ),
        (
            args(None, false),
            &[
                ("REDLOCK_LOCAL_DIR", "/q"),
                ("REDLOCK_NO_LOCAL_QUEUE", "off"),
            ],
            dir("/q"),
        ),
        (
            args(None, false),
            &[("REDLOCK_NO_LOCAL_QUEUE", "YES")],
            LocalDir::Off,
        ),
        (
            args(None, false),
            &[("REDLOCK_NO_LOCAL_QUEUE", "0")],
            LocalDir::Default,
        ),
        (args(None, false), &[], LocalDir::Default),
    ];
    for (a, vars, want) in cases {
        assert_eq!(
            local_dir_from(&a, env(vars)).unwrap(),
            want,
            "{a:?} {vars:?}"
        );
    }
    assert!(
        local_dir_from(
            &args(None, false),
            env(&[("REDLOCK_NO_LOCAL_QUEUE", "maybe")])
        )
        .is_err()
    );
}

/// (issue 60, item 5) A refusal says each duration as it was given and suggests only
/// durations that can be pasted: `--splay 24h` was said "--splay 1day", `--once-per 1d`
/// "--once-per 1day", `--ttl 90s` "1m 30s", `--ttl 1500ms` "1s", and the suggestion
/// "e.g. --splay 11h 30m" is two arguments (exit 64 when pasted).
#[test]
fn refusals_say_durations_as_given_and_suggest_pasteable_ones() {
    let base = ["--key", "k", "--redis", "redis://h:1"];
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--once-per", "1d", "--splay", "24h"],
            &["--splay 24h", "--once-per 1d", "e.g. --splay 12h"],
        ),
        (
            &[
                "--once-per",
                "day",
                "--tz",
                "Europe/Berlin",
                "--splay",
                "24h",
            ],
            &["--splay 24h", "--once-per day", "e.g. --splay 11h30m"],
        ),
        (
            &["--ttl", "90s", "--renew-every", "90s"],
            &["--renew-every 90s", "--ttl 90s"],
        ),
        (
            &["--ttl", "1500ms", "--kill-after", "1s"],
            &["--ttl 1500ms"],
        ),
    ];
    // Two durations in a row ("11h 30m"): one value said in two words.
    let two_words = |msg: &str| {
        let words: Vec<&str> = msg
            .split_whitespace()
            .map(|w| w.trim_end_matches([',', ';', ':']))
            .collect();
        words.windows(2).any(|w| {
            w.iter()
                .all(|w| w.starts_with(|c: char| c.is_ascii_digit()) && duration("x", w).is_ok())
        })
    };
    for (extra, needles) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        let msg = usage_message(&args);
        for needle in *needles {
            assert!(msg.contains(needle), "{extra:?}: no {needle:?} in: {msg}");
        }
        assert!(
            !two_words(&msg),
            "{extra:?}: a duration in two words: {msg}"
        );
    }
}

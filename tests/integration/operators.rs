//! What an operator reads is true (issue 31, `newcomer-4.md`): "held for" is the hold,
//! typos get clap's suggestion, a wait that runs out says so.

use std::time::Duration;

use crate::harness::*;

/// "held for" and `since_ms` count from the acquisition, not from the start of the
/// holder's wait (P3): a run that waited 2 s reads as held for under a second just
/// after it took the lock.
#[test]
fn held_for_counts_from_the_acquisition_not_the_wait() {
    let redis = Redis::start();
    let s = Scratch::new();
    let url = redis.url();
    let mut first = redlock_run()
        .args(["--redis", &url, "--key", "since", "--", "sleep", "2"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(5), || redis
        .get(&lock_key("since"))
        .is_some()));
    let taken = s.path("taken");
    let job = format!("touch {}; sleep 3", taken.display());
    let mut second = redlock_run()
        .args(["--redis", &url, "--key", "since", "--wait", "1m"])
        .args(["--", "sh", "-c", &job])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || taken.exists()));
    let out = output(redlock().args(["status", "since", "--json", "--redis", &url]));
    let json: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let since = json["holder"]["since_ms"].as_u64().expect("since_ms");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        now.saturating_sub(since) < 1000,
        "held for {} ms just after the acquisition (it waited about 2 s)",
        now.saturating_sub(since)
    );
    first.wait().unwrap();
    second.wait().unwrap();
}

/// A mistyped flag or verb keeps clap's suggestion on its one line (P11).
#[test]
fn typos_get_a_suggestion_on_their_one_line() {
    for (mut cmd, args, says) in [
        (
            redlock_run(),
            vec!["--wiat", "5s", "--key", "x", "--", "true"],
            "did you mean --wait?",
        ),
        (
            redlock_run(),
            vec!["--busy-exit", "0", "--key", "x", "--", "true"],
            "did you mean --busy-exit-code?",
        ),
        (redlock(), vec!["stauts", "x"], "did you mean status?"),
        (
            redlock(),
            vec!["status", "x", "--jsn"],
            "did you mean --json?",
        ),
    ] {
        let out = output(cmd.args(&args));
        assert_eq!(code(&out), codes::USAGE, "{args:?}");
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// A `--wait` that runs out says it waited (P15), not only "busy".
#[test]
fn a_wait_that_runs_out_says_so() {
    let redis = Redis::start();
    let url = redis.url();
    let holder = Holding::start(&[
        "--redis".to_string(),
        url.clone(),
        "--key".into(),
        "to".into(),
    ]);
    let out =
        output(redlock_run().args(["--redis", &url, "--key", "to", "--wait", "1s", "--", "true"]));
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    let last = stderr(&out).trim().lines().last().unwrap_or("").to_string();
    assert!(
        last.contains("lock to is still busy after waiting 1s: held by"),
        "{last}"
    );
    let tried = output(redlock_run().args(["--redis", &url, "--key", "to", "--", "true"]));
    assert!(
        stderr(&tried).contains("lock to is busy: held by"),
        "{}",
        stderr(&tried)
    );
    drop(holder);
}

/// A URL file with a password that every user may read gets a warning (P16), which
/// does not print the password; mode 600 gets none.
#[test]
fn a_url_file_others_may_read_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let redis = Redis::start();
    let s = Scratch::new();
    let file = s.path("url");
    std::fs::write(
        &file,
        format!("redis://:S3cret-pw@127.0.0.1:{}\n", redis.port),
    )
    .unwrap();
    let run = || {
        output(
            redlock_run()
                .arg("--redis-url-file")
                .arg(&file)
                .args(["--key", "w", "--", "true"]),
        )
    };
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = stderr(&run());
    assert!(
        err.contains("every user of this machine may read it; chmod 600"),
        "{err}"
    );
    assert!(!err.contains("S3cret-pw"), "{err}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = stderr(&run());
    assert!(!err.contains("WARNING"), "{err}");
}

/// A node timeout too short for the server's answer says which timeout ran out and what
/// to give (P12), not only "cannot reach Redis (timed out)".
#[test]
fn a_node_timeout_that_runs_out_says_which_and_what_to_do() {
    use crate::harness::proxy::{Mode, Proxy};
    let redis = Redis::start();
    let proxy = Proxy::start(redis.port);
    proxy.set(Mode::Latency(Duration::from_millis(60)));
    let out = output(redlock_run().args([
        "--redis",
        &proxy.url(),
        "--key",
        "short",
        "--node-timeout",
        "20ms",
        "--",
        "true",
    ]));
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no answer within the node timeout of 20ms"),
        "{err}"
    );
    assert!(err.contains("--node-timeout"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Connection flags before the verb work too (`redlock --redis URL status NAME`), as
/// etcdctl, redis-cli and kubectl users type them.
#[test]
fn connection_flags_may_come_before_the_verb() {
    let redis = Redis::start();
    let url = redis.url();
    let _: () = redis.cmd(&["SET", &lock_key("first"), "someone", "PX", "60000"]);
    let out = output(redlock().args(["--redis", &url, "status", "first"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("first: held"), "{}", stdout(&out));
    let out = output(redlock().args([&format!("--redis={url}"), "--prefix", "redlock:", "list"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("first"), "{}", stdout(&out));
}

/// A run in progress is in `history` and its timeline, with host, pid and user (P9): a
/// plain run (whose record is only written at its end) and a `--once-per` run (whose
/// start mark carries only its token).
#[test]
fn runs_in_progress_show_who_runs_them() {
    let redis = Redis::start();
    let url = redis.url();
    for (name, extra) in [("plainrun", vec![]), ("onceper", vec!["--once-per", "1h"])] {
        let mut run = redlock_run()
            .args(["--redis", &url, "--key", name])
            .args(&extra)
            .args(["--", "sleep", "3"])
            .spawn()
            .unwrap();
        assert!(eventually(Duration::from_secs(5), || redis
            .get(&lock_key(name))
            .is_some()));
        let pid = run.id();
        let out = output(redlock().args(["history", name, "--redis", &url]));
        let text = stdout(&out);
        assert!(text.contains(&format!("pid {pid} user")), "{name}: {text}");
        assert!(
            text.contains("sleep 3") && !text.contains("? pid ?"),
            "{name}: {text}"
        );
        let out = output(
            redlock()
                .args([
                    "history",
                    name,
                    "--timeline",
                    "--since",
                    "1h",
                    "--redis",
                    &url,
                ])
                .env("COLUMNS", "80"),
        );
        let host = nix::unistd::gethostname()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let row = stdout(&out)
            .lines()
            .find(|l| l.trim_start().starts_with(&host[..host.len().min(6)]))
            .map(str::to_string)
            .unwrap_or_default();
        assert!(
            row.contains(':'),
            "{name}: no running mark on the host's row:\n{}",
            stdout(&out)
        );
        run.kill().unwrap();
        run.wait().unwrap();
    }
}

/// REDLOCK_HOST names the host operators read (a CI job in a container, P17); `release
/// --if-dead` still judges by the machine's own name: a live holder is alive, not "on
/// another host".
#[test]
fn redlock_host_names_the_host_shown() {
    let redis = Redis::start();
    let url = redis.url();
    let mut run = redlock_run()
        .env("REDLOCK_HOST", "ci-job-7")
        .args(["--redis", &url, "--key", "shown", "--", "sleep", "3"])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(5), || redis
        .get(&lock_key("shown"))
        .is_some()));
    let status = stdout(&output(
        redlock().args(["status", "shown", "--redis", &url]),
    ));
    assert!(status.contains("held by ci-job-7 pid"), "{status}");
    let dead = output(redlock().args(["release", "shown", "--if-dead", "--redis", &url]));
    assert_eq!(code(&dead), codes::BUSY, "{}", stderr(&dead));
    assert!(!stderr(&dead).contains("another host"), "{}", stderr(&dead));
    run.wait().unwrap();
}

/// (issue 60, item 4) The busy line of a live, renewed lock said "expires in 29s", which
/// reads as "free in 29 s" while the holder renews; it says the lease left and that it
/// is renewed. A lock whose holder does not renew (a foreign SET NX lock) still expires.
#[test]
fn the_busy_line_says_a_renewed_lease_is_renewed() {
    let redis = Redis::start();
    let url = redis.url();
    let args = |name: &str| {
        [
            "--redis".to_string(),
            url.clone(),
            "--key".into(),
            name.into(),
        ]
    };
    let holder = Holding::start(&args("live"));
    let tried = output(redlock_run().args(args("live")).args(["--", "true"]));
    let said = stderr(&tried);
    assert!(said.contains("lock live is busy: held by"), "{said}");
    assert!(
        said.contains("left, renewed while its command runs"),
        "{said}"
    );
    assert!(!said.contains("expires in"), "{said}");
    drop(holder);
    let _: String = redis.cmd(&["SET", "redlock:{foreign}", "theirs", "NX", "PX", "60000"]);
    let tried = output(redlock_run().args(args("foreign")).args(["--", "true"]));
    let said = stderr(&tried);
    assert!(said.contains("expires in"), "{said}");
    assert!(!said.contains("renewed"), "{said}");
}

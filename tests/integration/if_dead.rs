//! `redlock release --if-dead` removes a lock only on positive proof that nothing can
//! still use it (the README's invariant; `src/gone.rs`). The review's reproductions
//! (review 4, #1 to #3): a lock of `redlock acquire` under a forking wrapper (`xargs`) or
//! in a background subshell of a launcher that has exited, a holder hidden from this
//! user (`hidepid=2`), a twin machine with the same host name, and a `--hold-min` keep
//! are refused (75), their keys untouched; a holder recorded exactly and gone is removed.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::*;

fn if_dead(redis: &Redis, name: &str) -> std::process::Output {
    output(redlock().args(["release", name, "--if-dead", "--redis", &redis.url()]))
}

/// A script (bash) that takes `name` with `take`, says it is ready, waits for `go` (at
/// most a minute, so a failed test leaves nothing running), then releases with its own
/// token and writes that release's exit status to `rc`.
fn script(redis: &Redis, s: &Scratch, take: &str) -> String {
    format!(
        "token=$({take}) || exit 1\ntouch '{ready}'\ni=0; while [ ! -e '{go}' ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done\n'{R}' release --redis '{U}' --token \"$token\" \"$NAME\" >/dev/null 2>&1; echo $? > '{rc}'",
        ready = s.path("ready").display(),
        go = s.path("go").display(),
        rc = s.path("rc").display(),
        R = REDLOCK,
        U = redis.url(),
    )
}

/// Runs the script of `take` under bash, refuses `--if-dead` while it runs, lets it go
/// and checks that its own release found its lock (0).
fn refused_while_the_script_runs(redis: &Redis, name: &str, body: &str) {
    let s = Scratch::new();
    let body = script(redis, &s, body);
    let mut child = Command::new("bash")
        .args(["-c", &body])
        .env("NAME", name)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        eventually(READY, || s.path("ready").exists()),
        "{name}: never took the lock"
    );
    // The short-lived processes between the script and the call have exited by now.
    let out = if_dead(redis, name);
    assert_eq!(
        code(&out),
        codes::BUSY,
        "{name}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("--holder-pid"), "{}", stderr(&out));
    assert!(redis.exists(&lock_key(name)), "{name}: removed");
    std::fs::write(s.path("go"), "").unwrap();
    assert!(wait_child(&mut child, Duration::from_secs(30)).success());
    assert_eq!(
        read_trimmed(&s.path("rc")),
        "0",
        "{name}: the script's own release"
    );
}

/// (#1a) `xargs` forks `redlock acquire` and exits with it: the walk up the tree stopped
/// at xargs, and `--if-dead` removed the script's live lock. (#1b) A background subshell
/// of a launcher: the walk climbed past the subshell to the launcher, which exits.
/// Without `--holder-pid` the caller is a guess, and a guess is never proof.
#[test]
fn a_lock_taken_by_acquire_without_holder_pid_is_never_removed_as_dead() {
    let redis = Redis::start();
    let acquire = format!("'{REDLOCK}' acquire --redis '{}' --ttl 60s", redis.url());
    refused_while_the_script_runs(
        &redis,
        "ifd-x",
        &format!("echo \"$NAME\" | xargs -I{{}} {acquire} {{}}"),
    );
    // The launcher starts the holder in the background and exits at once.
    let s = Scratch::new();
    let launcher = format!(
        "( {} ) & sleep 0.3; exit 0",
        script(&redis, &s, &format!("{acquire} \"$NAME\""))
    );
    let status = Command::new("bash")
        .args(["-c", &launcher])
        .env("NAME", "ifd-bg")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(eventually(READY, || s.path("ready").exists()));
    let out = if_dead(&redis, "ifd-bg");
    assert_eq!(code(&out), codes::BUSY, "{}{}", stdout(&out), stderr(&out));
    assert!(redis.exists(&lock_key("ifd-bg")));
    std::fs::write(s.path("go"), "").unwrap();
    assert!(wait_for_file(&s.path("rc"), "0", Duration::from_secs(30)));
    // The other shapes the README's scripts take: each a guess, each refused.
    for (name, take) in [
        ("ifd-sub", acquire.clone() + " \"$NAME\""),
        ("ifd-pipe", acquire.clone() + " \"$NAME\" | cat"),
        ("ifd-timeout", format!("timeout 60 {acquire} \"$NAME\"")),
        (
            "ifd-nohup",
            format!("nohup {acquire} \"$NAME\" 2>/dev/null"),
        ),
        ("ifd-setsid", format!("setsid {acquire} \"$NAME\"")),
    ] {
        refused_while_the_script_runs(&redis, name, &take);
    }
}

/// With `--holder-pid` the lock is recorded exactly: refused while that process lives,
/// removed once it is gone (the positive control of the test above).
#[test]
fn a_lock_recorded_with_holder_pid_is_removed_once_that_process_is_gone() {
    let redis = Redis::start();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let out = output(redlock().args([
        "acquire",
        "ifd-given",
        "--ttl",
        "60s",
        "--holder-pid",
        &pid,
        "--redis",
        &redis.url(),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = if_dead(&redis, "ifd-given");
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    assert!(stderr(&out).contains("which is alive"), "{}", stderr(&out));
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let out = if_dead(&redis, "ifd-given");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("pid {pid}")),
        "{}",
        stdout(&out)
    );
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// (#2b) A machine with the same host name, in its initial PID namespace (the same
/// namespace inode on every Linux machine), whose holder's pid does not exist here: its
/// recorded boot id is another, so nothing is proved. The metadata is written as a
/// `redlock-run` on the twin writes it (the only way to show a second machine on one).
#[test]
fn a_twin_host_with_the_same_name_and_namespace_is_refused() {
    let redis = Redis::start();
    let host = nix::unistd::gethostname()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let pidns = std::fs::read_link("/proc/self/ns/pid")
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = lock_key("ifd-twin");
    let _: () = redis.cmd(&["SET", &key, "twin-token", "PX", "60000"]);
    let _: i64 = redis.cmd(&[
        "HSET",
        &meta_key("ifd-twin"),
        "token",
        "twin-token",
        "host",
        &host,
        "pid",
        "4000000",
        "user",
        "deploy",
        "cmd",
        "./job.sh",
        "started",
        "0b7c1f4e-1111-2222-3333-444455556666/123456",
        "pidns",
        &pidns,
    ]);
    let out = if_dead(&redis, "ifd-twin");
    assert_eq!(code(&out), codes::BUSY, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("another boot"), "{}", stderr(&out));
    assert_eq!(get(&redis, &key).as_deref(), Some("twin-token"));
}

/// (#2a) Another user's live holder, hidden from the user running `--if-dead` by
/// `/proc` mounted with `hidepid=2` (as systemd's `ProtectProc=invisible` does): the
/// pid exists (`kill(pid, 0)` says EPERM), so nothing is proved; the holder's run ends
/// 0, its lock never lost.
#[test]
fn a_holder_hidden_by_hidepid_is_refused() {
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t proc -o hidepid=2 proc /proc"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: mounting /proc with hidepid needs root (CI runs as root)");
        return;
    }
    let redis = Redis::start();
    // A copy of the binary that user nobody can run, wherever the checkout is.
    let dir = tempfile::Builder::new()
        .prefix("ifd-bin")
        .tempdir()
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("redlock");
    std::fs::copy(REDLOCK, &bin).unwrap();
    let args: Vec<String> = ["--key", "ifd-hp", "--redis", &redis.url(), "--ttl", "60s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let holder = Holding::start(&args);
    let out = output(Command::new("unshare").args([
        "-m",
        "sh",
        "-c",
        &format!(
            "mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups '{}' release ifd-hp --if-dead --redis '{}'",
            bin.display(),
            redis.url()
        ),
    ]));
    assert_eq!(code(&out), codes::BUSY, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("cannot be inspected"),
        "{}",
        stderr(&out)
    );
    assert!(redis.exists(&lock_key("ifd-hp")));
    let (code_, err) = holder.finish();
    assert_eq!(code_, 0, "the holder lost its lock: {err}");
}

/// (#3) A `--hold-min` keep is no dead holder: after a short job the lock is kept on
/// purpose so that no other cron host runs the job again. `status` says it is kept and
/// until when (text and JSON), and `--if-dead` refuses it.
#[test]
fn a_hold_min_keep_is_shown_as_kept_and_never_removed_as_dead() {
    let redis = Redis::start();
    let out = output(redlock_run().args([
        "--key",
        "ifd-keep",
        "--redis",
        &redis.url(),
        "--hold-min",
        "60s",
        "--",
        "true",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let status = output(redlock().args(["status", "ifd-keep", "--redis", &redis.url()]));
    assert!(
        stdout(&status).contains("kept:    by --hold-min until"),
        "{}",
        stdout(&status)
    );
    let json = output(redlock().args(["status", "ifd-keep", "--json", "--redis", &redis.url()]));
    let j: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    assert!(j["holder"]["kept"]["until_ms"].as_u64().is_some(), "{j}");
    assert!(j["holder"]["kept"]["ended_ms"].as_u64().is_some(), "{j}");
    let out = if_dead(&redis, "ifd-keep");
    assert_eq!(code(&out), codes::BUSY, "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("--hold-min"), "{}", stderr(&out));
    assert!(redis.exists(&lock_key("ifd-keep")));
    // The next cron host's try: busy, as --hold-min promises.
    let next =
        output(redlock_run().args(["--key", "ifd-keep", "--redis", &redis.url(), "--", "true"]));
    assert_eq!(code(&next), codes::BUSY, "{}", stderr(&next));
}

/// (newcomer-5 P14) On a live holder of this host, `--if-dead` advised waiting for its
/// ttl, which a live holder renews: it now says so and what to do instead; a holder it
/// cannot check still gets the ttl, as what a dead one leaves.
#[test]
fn a_live_holder_is_not_said_to_expire() {
    let redis = Redis::start();
    let holding = Holding::start(&["--key".into(), "hung".into(), "--redis".into(), redis.url()]);
    let out = if_dead(&redis, "hung");
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("which is alive"), "{err}");
    assert!(!err.contains("ttl"), "{err}");
    assert!(
        err.contains("it renews the lock while it runs: stop its command, or ask it to with redlock preempt hung"),
        "{err}"
    );
    let (status, err) = holding.finish();
    assert_eq!(status, 0, "{err}");
}

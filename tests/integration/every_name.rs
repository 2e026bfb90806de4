//! Issue 50: one run, N leases — every per-name question asked of every name and every
//! kind. A nested run finds each name its enclosing run holds (a set's later name, a
//! share, a pool's slot, a fair or newest holder) and runs at once, taking only the
//! names it does not hold; it is never a waiter, a writer or a second share. A start
//! record whose reply comes late still starts the command, and a give-back takes the
//! count back. (The preempt of a set's later name is in `preempt_soon.rs`.)

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use crate::harness::proxy::{Mode, Proxy};
use crate::harness::*;

/// A shell line that touches `<dir>/<tag>-in`, then waits for `<dir>/<tag>-go`.
fn hold_until_told(dir: &Path, tag: &str) -> String {
    let d = dir.display();
    format!("touch '{d}/{tag}-in'; while [ ! -e '{d}/{tag}-go' ]; do sleep 0.02; done")
}

/// `redlock-run` nested in a command: `names` as `--key`s, `flags`, then `script`; its
/// status goes to `<dir>/<tag>-rc`.
fn nested_line(
    redis: &Redis,
    dir: &Path,
    tag: &str,
    names: &[&str],
    flags: &str,
    script: &str,
) -> String {
    let keys: Vec<String> = names.iter().map(|n| format!("--key {n}")).collect();
    format!(
        "'{RUN}' {} {flags} --redis '{}' -- sh -c \"{script}\"; echo $? > '{}/{tag}-rc'",
        keys.join(" "),
        redis.url(),
        dir.display()
    )
}

fn told(dir: &Path, tag: &str) {
    std::fs::write(dir.join(format!("{tag}-go")), "").unwrap();
}

fn arrived(dir: &Path, tag: &str) -> bool {
    wait_for_file(&dir.join(format!("{tag}-in")), "", READY)
}

/// Tells the nested command `tag` to end: the outer run (`run`) and the nested one
/// both exit 0 (`what` names the case in a failure).
fn both_ended_0(run: Child, dir: &Path, tag: &str, what: &str) {
    told(dir, tag);
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, 0, "{what}: {err}");
    let nested = read_trimmed(&dir.join(format!("{tag}-rc")));
    assert_eq!(nested, "0", "{what}: the nested run's status");
}

fn outer(redis: &Redis, names: &[&str], flags: &[&str], script: &str) -> Child {
    let mut args: Vec<String> = names
        .iter()
        .flat_map(|n| ["--key".to_string(), n.to_string()])
        .collect();
    args.extend([
        "--redis".to_string(),
        redis.url(),
        "--ttl".into(),
        "10s".into(),
    ]);
    args.extend(flags.iter().map(|f| f.to_string()));
    start_run(&args, script)
}

/// Review-6 #3: a nested run of any name of a set runs at once (the second name waited
/// for its own holder before: 75 after `--wait`), and one that needs held names and
/// others takes only the others, while the enclosing run keeps its names.
#[test]
fn a_nested_run_of_any_name_of_a_set_runs_at_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    for (i, inner) in [&["b"][..], &["a"], &["b", "a"], &["b", "c"]]
        .iter()
        .enumerate()
    {
        let tag = format!("in{i}");
        let line = nested_line(
            &redis,
            &dir,
            &tag,
            inner,
            "--wait 5s",
            &hold_until_told(&dir, &tag),
        );
        let script = format!(
            "echo \"$REDLOCK_TOKEN_B\" > '{}/outer-b'; {line}",
            dir.display()
        );
        let run = outer(&redis, &["a", "b"], &[], &script);
        assert!(
            arrived(&dir, &tag),
            "{inner:?}: the nested command never started"
        );
        let outer_b = read_trimmed(&dir.join("outer-b"));
        assert_eq!(
            get(&redis, &lock_key("b")),
            Some(outer_b),
            "{inner:?}: b changed hands"
        );
        if inner.contains(&"c") {
            assert!(
                redis.exists(&lock_key("c")),
                "the nested run does not hold c"
            );
        }
        both_ended_0(run, &dir, &tag, &format!("{inner:?}"));
        assert!(!redis.exists(&lock_key("c")), "c left behind");
    }
}

/// Review-6 #1: a share holder's nested share of the same name runs at once though a
/// writer waits (writers first kept it out before: a deadlock until `--wait` ran out),
/// and it is not a second share.
#[test]
fn a_nested_share_runs_at_once_while_a_writer_waits() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let d = dir.display();
    let line = nested_line(
        &redis,
        &dir,
        "inner",
        &["s"],
        "--shared --wait 6s",
        &hold_until_told(&dir, "inner"),
    );
    let script = format!("{}; {line}", hold_until_told(&dir, "outer"));
    let run = outer(&redis, &["s"], &["--shared"], &script);
    assert!(arrived(&dir, "outer"), "the share never started");
    let writer = start_run(
        &[lock_args(&redis, "s"), vec!["--wait".into(), "30s".into()]].concat(),
        &format!("touch '{d}/writer-ran'"),
    );
    let writers = "redlock:{s}:writers";
    assert!(
        eventually(READY, || redis.cmd::<i64>(&["ZCARD", writers]) > 0),
        "the writer never waited"
    );
    told(&dir, "outer");
    assert!(
        arrived(&dir, "inner"),
        "the nested share waited behind the writer"
    );
    let shares: i64 = redis.cmd(&["ZCARD", "redlock:{s}:shares"]);
    assert_eq!(shares, 1, "the nested run took a second share");
    assert!(
        !dir.join("writer-ran").exists(),
        "the writer ran beside the shares"
    );
    told(&dir, "inner");
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert_eq!(read_trimmed(&dir.join("inner-rc")), "0");
    let (code, err) = finish(writer, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(dir.join("writer-ran").exists());
}

/// A nested run of every kind runs at once and takes nothing a second time: no second
/// slot of a pool, no second share, no place in a queue.
#[test]
fn a_nested_run_of_every_kind_runs_at_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let kinds: [&[&str]; 5] = [
        &[],
        &["--limit", "2"],
        &["--fair"],
        &["--supersede", "waiting", "--wait", "5s"],
        &["--shared"],
    ];
    for (i, flags) in kinds.iter().enumerate() {
        let (name, tag) = (format!("k{i}"), format!("k{i}"));
        let line = nested_line(
            &redis,
            &dir,
            &tag,
            &[&name],
            &flags.join(" "),
            &hold_until_told(&dir, &tag),
        );
        let run = outer(&redis, &[&name], flags, &line);
        assert!(
            arrived(&dir, &tag),
            "{flags:?}: the nested command never started"
        );
        let second_slot = format!("redlock:{{{name}}}:slot:2");
        assert!(
            !redis.exists(&second_slot),
            "{flags:?}: a second slot taken"
        );
        let shares: i64 = redis.cmd(&["ZCARD", &format!("redlock:{{{name}}}:shares")]);
        assert!(shares <= 1, "{flags:?}: a second share taken");
        let queued: i64 = redis.cmd(&["ZCARD", &format!("redlock:{{{name}}}:queue")]);
        assert_eq!(queued, 0, "{flags:?}: the nested run queued");
        both_ended_0(run, &dir, &tag, &format!("{flags:?}"));
    }
}

/// An `--once-id` run with one attempt and a long lease (`--` ends it).
const ONCE: [&str; 7] = [
    "--once-id",
    "v1",
    "--max-attempts",
    "1",
    "--ttl",
    "30s",
    "--",
];

/// A server (its start script loaded, as on a server in use) behind a proxy that holds
/// the first start record sent through it for `delay`, and the connection behind it.
fn start_record_held_for(delay: Duration) -> (Redis, Proxy) {
    let redis = Redis::start();
    let _: String = redis.cmd(&["SCRIPT", "LOAD", redlock::scripts::started::TEXT.as_str()]);
    let proxy = Proxy::start(redis.port);
    let sha = redlock::scripts::started::STARTED.sha();
    proxy.set(Mode::DelayMatching(sha, delay));
    (redis, proxy)
}

/// Review-6 #2: the reply to the start record comes after the node timeout (held 4 s
/// by the network): the run asks again and starts its command, counted once; with
/// `--max-attempts 1` the ID is then done, not closed by a start that never ran.
#[test]
fn a_late_start_record_still_starts_the_command_once() {
    let (redis, proxy) = start_record_held_for(Duration::from_secs(4));
    let s = Scratch::new();
    let ran = s.path("ran");
    let job = format!("echo ran >> '{}'", ran.display());
    let out = output_within(
        redlock_run()
            .args(["--key", "mig", "--redis", &proxy.url()])
            .args(ONCE)
            .args(["sh", "-c", &job]),
        Duration::from_secs(40),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let starts: Option<String> = redis.cmd(&["HGET", "redlock:{mig}:once:v1", "starts"]);
    assert_eq!(starts.as_deref(), Some("1"), "the start counted once");
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "mig"))
            .args(ONCE)
            .args(["sh", "-c", &job]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("already done"), "{}", stderr(&out));
    assert_eq!(read_trimmed(&ran), "ran", "the job ran once");
}

/// A run stopped by a signal while its start record is late gives the lock back and
/// takes the count back with it (the record did land): the next try of a
/// `--max-attempts 1` ID runs.
#[test]
fn a_start_given_back_is_not_counted() {
    let (redis, proxy) = start_record_held_for(Duration::from_secs(3));
    let s = Scratch::new();
    let ran = s.path("ran");
    let mut first = redlock_run()
        .args(["--key", "mig", "--redis", &proxy.url()])
        .args(ONCE)
        .args(["touch"])
        .arg(&ran)
        .spawn()
        .unwrap();
    assert!(
        eventually(READY, || redis.exists(&lock_key("mig"))),
        "never granted"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_child(&mut first, Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the first run was interrupted"
    );
    assert!(!ran.exists(), "the interrupted run ran its command");
    let out = output(
        redlock_run()
            .args(lock_args(&redis, "mig"))
            .args(ONCE)
            .arg("touch")
            .arg(&ran),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(ran.exists(), "the next try did not run: {}", stderr(&out));
}

/// Review-6 #6, issue 50 item 4: a set's later name lost is named in the line and the
/// event, and the other names' records say the run ended with it lost.
#[test]
fn a_lost_later_name_is_named_and_the_others_records_say_so() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let events = s.path("events");
    let mut args = lock_args(&redis, "a");
    args.extend(["--key", "b", "--ttl", "3s", "--events"].map(String::from));
    args.push(events.display().to_string());
    let run = start_run(&args, &hold_until_told(&dir, "job"));
    assert!(arrived(&dir, "job"), "the command never started");
    let _: i64 = redis.cmd(&["DEL", &lock_key("b")]);
    let (code, err) = finish(run, Duration::from_secs(30));
    assert_eq!(code, codes::LOST, "{err}");
    assert!(err.contains("lock b lost"), "{err}");
    assert!(!err.contains("lock a lost"), "{err}");
    let lost: Vec<String> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"event\":\"lost\""))
        .map(String::from)
        .collect();
    assert!(
        lost.len() == 1 && lost[0].contains("\"name\":\"b\""),
        "one lost event, b's: {lost:?}"
    );
    let a = history_json(&redis, "a");
    assert_eq!(a["runs"][0]["ended_by"], "b", "{a}");
    let b = history_json(&redis, "b");
    assert!(b["runs"][0].get("ended_by").is_none(), "{b}");
}

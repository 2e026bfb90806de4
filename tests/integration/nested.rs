//! Issue 56: a nested run is a run. A `redlock-run` inside a holder of its own names
//! goes through the one path of a run: its completion checks and record (`--once-id`,
//! `--once-per`, `--order-key`), its own environment (its names' tokens and fences),
//! and what it cannot have refused at once (64), never waited for.

use std::path::Path;
use std::time::Duration;

use crate::harness::*;

/// A nested `redlock-run` line: `args`, then `sh -c script`; its status is appended to
/// `<dir>/rc` as `<tag> <status>`.
fn nested(redis: &Redis, dir: &Path, tag: &str, args: &str, script: &str) -> String {
    format!(
        "'{RUN}' {args} --redis '{}' -- sh -c '{script}'; echo \"{tag} $?\" >> '{}/rc'",
        redis.url(),
        dir.display()
    )
}

/// The enclosing run: `args` (with `--redis`), its command `script`, to its end.
fn enclosing(redis: &Redis, args: &[&str], script: &str) -> (i32, String) {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(["--redis".into(), redis.url(), "--ttl".into(), "10s".into()]);
    finish(start_run(&all, script), Duration::from_secs(60))
}

/// Each nested line's status, by tag, in order.
fn statuses(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("rc"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Review-7 #1 / newcomer-7 #1: a deploy that holds `migrate` runs its migration with
/// `--once-id` three times; it runs once, is recorded (saying which run it ran inside),
/// and a later top-level run of the ID is answered by that record: 1 run, not 3.
#[test]
fn a_nested_once_id_runs_once_and_answers_a_later_top_level_run() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let ran = s.path("ran");
    let job = format!("echo x >> {}", ran.display());
    let line = nested(&redis, &dir, "in", "--key migrate --once-id v7", &job);
    let script = format!("{line}; {line}; {line}");
    let (status, err) = enclosing(&redis, &["--key", "migrate"], &script);
    assert_eq!(status, 0, "{err}");
    assert_eq!(
        lines(&ran),
        1,
        "the migration ran more than once inside the deploy"
    );
    assert_eq!(statuses(&dir), ["in 0", "in 0", "in 0"]);
    let out = output(redlock_run().args(lock_args(&redis, "migrate")).args([
        "--once-id",
        "v7",
        "--",
        "sh",
        "-c",
        &job,
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(lines(&ran), 1, "a top-level run of the ID ran it again");
    let history = history_json(&redis, "migrate");
    let inside: Vec<_> = history["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|r| r.get("inside").is_some())
        .collect();
    assert_eq!(inside.len(), 1, "one nested run recorded: {history}");
    assert_eq!(inside[0]["status"], 0, "{history}");
}

/// Review-7 #1: a nested `--once-per 1d` in a slot already done is skipped; one in a
/// slot not done runs and closes it for the runs after it.
#[test]
fn a_nested_once_per_run_skips_a_slot_already_done() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let ran = s.path("ran");
    let job = format!("echo x >> {}", ran.display());
    let line = nested(&redis, &dir, "in", "--key nightly --once-per 1d", &job);
    let script = format!("{line}; {line}");
    let (status, err) = enclosing(&redis, &["--key", "nightly"], &script);
    assert_eq!(status, 0, "{err}");
    assert_eq!(
        lines(&ran),
        1,
        "the nested --once-per ran twice in its slot"
    );
    // A skip exits with the busy status (75), as at the top level.
    assert_eq!(statuses(&dir), ["in 0", "in 75"]);
    let out = output(redlock_run().args(lock_args(&redis, "nightly")).args([
        "--once-per",
        "1d",
        "--",
        "sh",
        "-c",
        &job,
    ]));
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert_eq!(
        lines(&ran),
        1,
        "a top-level run ran in the slot the nested run closed"
    );
}

/// Review-7 #1: nested in a holder with `--order-key 20`, a run with `--order-key 3` is
/// outdated (73), as at the top level.
#[test]
fn a_nested_lower_order_key_is_outdated() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let ran = s.path("ran");
    let job = format!("echo x >> {}", ran.display());
    let newest = "--wait 5s --supersede waiting --order-key";
    let low = nested(&redis, &dir, "low", &format!("--key ship {newest} 3"), &job);
    let high = nested(
        &redis,
        &dir,
        "high",
        &format!("--key ship {newest} 30"),
        &job,
    );
    let script = format!("{low}; {high}");
    let args = [
        "--key",
        "ship",
        "--wait",
        "5s",
        "--supersede",
        "waiting",
        "--order-key",
        "20",
    ];
    let (status, err) = enclosing(&redis, &args, &script);
    assert_eq!(status, 0, "{err}");
    assert_eq!(statuses(&dir), ["low 73", "high 0"]);
    assert_eq!(lines(&ran), 1);
}

/// Review-7 #2: the command's environment is its own names': a nested `--key cache`
/// inside `--key deploy --key cache` gets cache's name, token and fence; a nested
/// `--key fa --key fb` inside a holder of `fa` gets fa's fence as `REDLOCK_FENCE` and
/// each name's as `REDLOCK_FENCE_<NAME>`; a nested pool run gets its slot.
#[test]
fn a_nested_run_gets_its_own_names_environment() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let d = dir.display();
    let show = |file: &str| {
        format!(
            "echo $REDLOCK_NAME $REDLOCK_TOKEN $REDLOCK_FENCE $REDLOCK_FENCE_FA .$REDLOCK_FENCE_FB $REDLOCK_SLOT > {d}/{file}"
        )
    };
    let inner = nested(&redis, &dir, "cache", "--key cache", &show("inner"));
    let script = format!("echo $REDLOCK_TOKEN_CACHE $REDLOCK_FENCE_CACHE > {d}/outer; {inner}");
    let (status, err) = enclosing(&redis, &["--key", "deploy", "--key", "cache"], &script);
    assert_eq!(status, 0, "{err}");
    let outer = read_trimmed(&dir.join("outer"));
    let (token, fence) = outer.split_once(' ').expect("token and fence");
    let inner: Vec<String> = read_trimmed(&dir.join("inner"))
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(inner[0], "cache", "REDLOCK_NAME");
    assert_eq!(inner[1], token, "REDLOCK_TOKEN is not cache's");
    assert_eq!(inner[2], fence, "REDLOCK_FENCE is not cache's");

    let inner = nested(&redis, &dir, "set", "--key fa --key fb", &show("set"));
    let script = format!("echo $REDLOCK_FENCE > {d}/fa; {inner}");
    let (status, err) = enclosing(&redis, &["--key", "fa"], &script);
    assert_eq!(status, 0, "{err}");
    let fa = read_trimmed(&dir.join("fa"));
    let set: Vec<String> = read_trimmed(&dir.join("set"))
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(set[0], "fa");
    assert_eq!(set[2], fa, "REDLOCK_FENCE is not fa's");
    assert_eq!(set[3], fa, "REDLOCK_FENCE_FA is not fa's");
    assert!(set[4].len() > 1, "no REDLOCK_FENCE_FB: {set:?}");

    let inner = nested(&redis, &dir, "pool", "--key pool --limit 2", &show("pool"));
    let script = format!("echo $REDLOCK_SLOT > {d}/slot; {inner}");
    let (status, err) = enclosing(&redis, &["--key", "pool", "--limit", "2"], &script);
    assert_eq!(status, 0, "{err}");
    let pool = read_trimmed(&dir.join("pool"));
    let slot = read_trimmed(&dir.join("slot"));
    assert!(
        pool.ends_with(&format!(" {slot}")),
        "REDLOCK_SLOT: {pool:?}, held {slot}"
    );
    assert_eq!(statuses(&dir), ["cache 0", "set 0", "pool 0"]);
}

/// Review-7 #6: an exclusive nested run inside a share of the same name is refused at
/// once (64), also with `--wait forever` and with `--once-id`; it never waits for itself.
#[test]
fn an_exclusive_nested_run_inside_a_share_is_refused_at_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let lines: Vec<String> = [
        ("plain", "--key s --wait forever"),
        ("once", "--key s --once-id i1"),
    ]
    .iter()
    .map(|(tag, args)| nested(&redis, &dir, tag, args, "true"))
    .collect();
    let (status, err) = enclosing(&redis, &["--key", "s", "--shared"], &lines.join("; "));
    assert_eq!(status, 0, "{err}");
    assert_eq!(statuses(&dir), ["plain 64", "once 64"]);
    let writers: i64 = redis.cmd(&["EXISTS", "redlock:{s}:writers"]);
    assert_eq!(writers, 0, "the nested run registered as a writer");
}

/// Review-7 #7: a plain run and another `--limit` inside a pool's holder are refused
/// whichever slot the holder got (slot 1's key is the plain key, so a plain run inside
/// slot 1 ran before while one inside slot 2 was refused).
#[test]
fn a_plain_run_inside_a_pool_is_refused_whatever_the_slot() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let d = dir.display();
    let plain = nested(&redis, &dir, "plain", "--key pool", "true");
    let other = nested(&redis, &dir, "other", "--key pool --limit 3", "true");
    // The first holder keeps slot 1 while the second runs its nested lines in slot 2.
    let first = start_run(
        &[
            lock_args(&redis, "pool"),
            vec!["--limit".into(), "2".into()],
        ]
        .concat(),
        &format!(
            "echo $REDLOCK_SLOT > {d}/first; {plain}; {other}; touch {d}/first-done; while [ ! -e {d}/go ]; do sleep 0.02; done"
        ),
    );
    assert!(
        wait_for_file(&dir.join("first-done"), "", READY),
        "the first holder never ran"
    );
    let (status, err) = enclosing(
        &redis,
        &["--key", "pool", "--limit", "2"],
        &format!("echo $REDLOCK_SLOT > {d}/second; {plain}; {other}"),
    );
    assert_eq!(status, 0, "{err}");
    std::fs::write(dir.join("go"), "").unwrap();
    let (status, err) = finish(first, Duration::from_secs(30));
    assert_eq!(status, 0, "{err}");
    let mut slots = [
        read_trimmed(&dir.join("first")),
        read_trimmed(&dir.join("second")),
    ];
    slots.sort();
    assert_eq!(slots, ["1", "2"]);
    assert_eq!(
        statuses(&dir),
        ["plain 64", "other 64", "plain 64", "other 64"]
    );
}

/// Review-7 #8: `a-b`, `a.b` and `A_B` have a variable each: a run holding `a-b` runs a
/// nested `--key a.b`, and a third level `--key a-b` still finds its ancestor holds
/// `a-b` and runs at once (it was busy against it: a deadlock with `--wait`).
#[test]
fn names_never_share_a_variable() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let third = nested(&redis, &dir, "third", "--key a-b --wait 5s", "true");
    let second = format!(
        "'{RUN}' --key a.b --wait 5s --redis '{}' -- sh -c \"{}\"; echo \"second $?\" >> '{}/rc'",
        redis.url(),
        third.replace('"', "\\\""),
        dir.display()
    );
    let (status, err) = enclosing(&redis, &["--key", "a-b"], &second);
    assert_eq!(status, 0, "{err}");
    assert_eq!(statuses(&dir), ["third 0", "second 0"]);
    let vars: Vec<String> = ["a-b", "a.b", "A_B", "a_b"]
        .iter()
        .map(|name| {
            let out = output(redlock_run().args(lock_args(&redis, name)).args([
                "--",
                "sh",
                "-c",
                "env | grep ^REDLOCK_FENCE_ | cut -d= -f1",
            ]));
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            stdout(&out).trim().to_string()
        })
        .collect();
    let mut distinct = vars.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{vars:?}");
    assert_eq!(
        vars[0], "REDLOCK_FENCE_A_B",
        "the documented spelling of a-b"
    );
}

/// A nested run's metrics are a run's: with a `--metrics` file of its own it writes it
/// (a nested run wrote nothing before, whatever its file); one that inherits the
/// enclosing run's file through `REDLOCK_METRICS` leaves it alone (`metrics.rs`).
#[test]
fn a_nested_run_writes_a_metrics_file_of_its_own() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let own = s.path("own.prom");
    let line = nested(
        &redis,
        &dir,
        "in",
        &format!("--key m --metrics {}", own.display()),
        "true",
    );
    let (status, err) = enclosing(&redis, &["--key", "m"], &line);
    assert_eq!(status, 0, "{err}");
    assert_eq!(statuses(&dir), ["in 0"]);
    let text = std::fs::read_to_string(&own).unwrap_or_default();
    assert!(text.contains("redlock_running{name=\"m\"} 0"), "{text}");
}

/// A nested run of the slot or ID its enclosing run is the run of is that run in
/// progress: skipped at once (75), never a second run in the slot and never a wait for
/// its own holder (`--once-id` waits by default).
#[test]
fn a_nested_run_inside_its_own_slots_or_ids_run_is_skipped_at_once() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("");
    let ran = s.path("ran");
    let job = format!("echo x >> {}", ran.display());
    for (tag, flags) in [("id", "--once-id i9"), ("slot", "--once-per 1d")] {
        let name = format!("own-{tag}");
        let line = nested(&redis, &dir, tag, &format!("--key {name} {flags}"), &job);
        let mut args = vec!["--key", name.as_str()];
        args.extend(flags.split(' '));
        let (status, err) = enclosing(&redis, &args, &format!("{job}; {line}"));
        assert_eq!(status, 0, "{err}");
    }
    assert_eq!(statuses(&dir), ["id 75", "slot 75"]);
    assert_eq!(lines(&ran), 2, "a second run in a slot or of an ID");
}

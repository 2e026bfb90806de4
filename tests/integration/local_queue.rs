//! Two-level waiting: runs of one host queue in the kernel (`flock` on a file of the
//! local directory) and only the host's head contends in Redis. Several "hosts" on one
//! machine are several `--local-dir`s.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::checker;
use crate::harness::*;

/// `redlock status NAME --local-dir DIR --json` on `redis`: (heads, queued) of that
/// host's local queue.
fn local_queue(
    redis: &Redis,
    name: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Vec<i64>, u64) {
    let out = output(
        redlock()
            .args([
                "status",
                name,
                "--json",
                "--redis",
                &redis.url(),
                "--local-dir",
            ])
            .arg(dir)
            .args(extra),
    );
    let json: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("status json");
    let local = &json["local"];
    let heads = local["heads"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_i64()).collect())
        .unwrap_or_default();
    (heads, local["queued"].as_u64().unwrap_or(0))
}

/// Clients connected to `redis` other than the one asking, and those blocked in BLPOP.
fn clients(redis: &Redis) -> (usize, usize) {
    let list: String = redis.cmd(&["CLIENT", "LIST"]);
    let others: Vec<&str> = list
        .lines()
        .filter(|l| !l.contains("cmd=client|list"))
        .collect();
    let popping = others.iter().filter(|l| l.contains("cmd=blpop")).count();
    (others.len(), popping)
}

/// A run on host `dir` writing its section to `log` (BEGIN/END lines the checker reads;
/// each section its own witness slot, so a section left open stays open to the checker).
fn section_run(
    redis: &Redis,
    name: &str,
    dir: &std::path::Path,
    log: &std::path::Path,
    extra: &[&str],
) -> Child {
    let script = format!(
        "echo \"BEGIN $$ $REDLOCK_TOKEN $REDLOCK_FENCE $$\" >> '{log}'; sleep 0.01; echo \"END $$ $REDLOCK_TOKEN\" >> '{log}'",
        log = log.display()
    );
    on_host(
        redis,
        name,
        dir,
        &[&["--wait", "300s"], extra].concat(),
        &script,
    )
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn redlock-run")
}

/// A run of `name` on host `dir` (its `--local-dir`) running `sh -c script`.
fn on_host(
    redis: &Redis,
    name: &str,
    dir: &std::path::Path,
    extra: &[&str],
    script: &str,
) -> std::process::Command {
    let mut cmd = redlock_run();
    cmd.args(lock_args(redis, name))
        .arg("--local-dir")
        .arg(dir)
        .args(extra)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null());
    cmd
}

#[test]
fn four_hosts_of_fifty_waiters_hold_the_lock_once_each_over_one_contender_per_host() {
    let redis = Redis::start_with(&["--maxclients", "2000"]);
    let s = Scratch::new();
    let log = s.path("log");
    let holder = Holding::start(&lock_args(&redis, "herd"));
    let hosts: Vec<_> = (0..4).map(|h| s.path(&format!("host{h}"))).collect();
    let mut runs = Vec::new();
    for _ in 0..50 {
        for dir in &hosts {
            runs.push(section_run(&redis, "herd", dir, &log, &[]));
        }
    }
    // Every host: one head in Redis, 49 runs in the kernel.
    for dir in &hosts {
        assert!(
            eventually(Duration::from_secs(60), || {
                let (heads, queued) = local_queue(&redis, "herd", dir, &[]);
                heads.len() == 1 && queued == 49
            }),
            "host {} never had 1 head and 49 queued: {:?}",
            dir.display(),
            local_queue(&redis, "herd", dir, &[])
        );
    }
    // Blocked in BLPOP: each host's head, and the holder, which listens on its own wake
    // list for a request to stop (issue 40) on its one connection.
    let mut seen = (0, 0);
    assert!(
        eventually(READY, || {
            seen = clients(&redis);
            seen.1 == 4 + 1
        }),
        "{seen:?}"
    );
    let (connected, popping) = seen;
    // Each head: its request connection and its blocking pop's; the holder: one.
    assert!(
        connected <= 4 * 2 + 1,
        "{connected} connections while 200 runs wait"
    );
    assert_eq!(popping, 4 + 1);
    let waiters: i64 = redis.cmd(&["SCARD", &format!("{}:waiters", lock_key("herd"))]);
    assert!(waiters <= 4, "{waiters} runs in the Redis waiters set");

    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    for run in runs {
        let (code, err) = finish(run, Duration::from_secs(300));
        assert_eq!(code, 0, "{err}");
    }
    let v = checker::check(&std::fs::read_to_string(&log).unwrap(), 1);
    assert_eq!(v.sections, 200, "{v:?}");
    assert_eq!(v.overlaps, 0, "{v:?}");
    assert_eq!(v.duplicate_tokens, 0, "{v:?}");
    assert_eq!(v.fences_not_increasing, 0, "{v:?}");
    assert!(
        redis
            .keys()
            .iter()
            .all(|k| k.ends_with(":fence") || k.ends_with(":history")),
        "{:?}",
        redis.keys()
    );
}

#[test]
fn a_head_killed_with_9_hands_its_hosts_queue_to_the_next() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let host = s.path("host");
    let holder = Holding::start(&lock_args(&redis, "k9"));
    let runs: Vec<Child> = (0..3)
        .map(|_| section_run(&redis, "k9", &host, &log, &[]))
        .collect();
    assert!(eventually(READY, || local_queue(&redis, "k9", &host, &[])
        .1
        == 2));
    let (heads, _) = local_queue(&redis, "k9", &host, &[]);
    let head = heads[0] as i32;
    kill(Pid::from_raw(head), Signal::SIGKILL).unwrap();
    assert!(
        eventually(READY, || {
            let (heads, queued) = local_queue(&redis, "k9", &host, &[]);
            heads.len() == 1 && heads[0] as i32 != head && queued == 1
        }),
        "no run of the host took over from the killed head: {:?}",
        local_queue(&redis, "k9", &host, &[])
    );
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    let mut ran = 0;
    for mut run in runs {
        if run.id() as i32 == head {
            let _ = run.wait();
            continue;
        }
        let (code, err) = finish(run, Duration::from_secs(60));
        assert_eq!(code, 0, "{err}");
        ran += 1;
    }
    assert_eq!(ran, 2);
    assert_eq!(
        checker::check(&std::fs::read_to_string(&log).unwrap(), 1).sections,
        2
    );
}

/// A stopped head (SIGSTOP) stalls nothing: the other host runs on, and the runs queued
/// behind it on its own host notice that it does not progress and contend in Redis
/// directly (review 4, #4: before, they waited behind it while the lock was free).
#[test]
fn a_stopped_head_stalls_no_host() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let (a, b) = (s.path("a"), s.path("b"));
    let mut args = lock_args(&redis, "stop");
    // A short ttl: a wake-up the stopped head's pop swallows costs the others one ttl.
    args.extend(["--ttl".into(), "2s".into()]);
    let holder = Holding::start(&args);
    let on_a: Vec<Child> = (0..3)
        .map(|_| section_run(&redis, "stop", &a, &log, &["--ttl", "2s"]))
        .collect();
    let on_b: Vec<Child> = (0..3)
        .map(|_| section_run(&redis, "stop", &b, &log, &["--ttl", "2s"]))
        .collect();
    for dir in [&a, &b] {
        assert!(eventually(READY, || {
            let (heads, queued) = local_queue(&redis, "stop", dir, &[]);
            heads.len() == 1 && queued == 2
        }));
    }
    let head_a = local_queue(&redis, "stop", &a, &[]).0[0] as i32;
    kill(Pid::from_raw(head_a), Signal::SIGSTOP).unwrap();
    let (code, err) = holder.finish();
    assert_eq!(code, 0, "{err}");
    // Every run but the stopped head ends, host a's two behind it included.
    let mut stopped = None;
    for run in on_a.into_iter().chain(on_b) {
        if run.id() as i32 == head_a {
            stopped = Some(run);
            continue;
        }
        let (code, err) = finish(run, Duration::from_secs(60));
        assert_eq!(code, 0, "a run stalled: {err}");
    }
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(checker::check(&log_text, 1).sections, 5, "{log_text}");
    kill(Pid::from_raw(head_a), Signal::SIGCONT).unwrap();
    let (code, err) = finish(stopped.expect("the stopped head"), Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    let v = checker::check(&std::fs::read_to_string(&log).unwrap(), 1);
    assert_eq!((v.sections, v.overlaps), (6, 0), "{v:?}");
}

#[test]
fn wait_is_one_budget_across_both_levels_and_a_run_that_gives_up_leaves_both_queues() {
    let redis = Redis::start();
    let s = Scratch::new();
    let host = s.path("host");
    let holder = Holding::start(&lock_args(&redis, "budget"));
    let started = Instant::now();
    let runs: Vec<Child> = (0..4)
        .map(|_| {
            redlock_run()
                .args(lock_args(&redis, "budget"))
                .args(["--wait", "3s", "--local-dir"])
                .arg(&host)
                .args(["--", "true"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(eventually(READY, || local_queue(
        &redis,
        "budget",
        &host,
        &[]
    )
    .1 == 3));
    for run in runs {
        let (code, err) = finish(run, Duration::from_secs(30));
        assert_eq!(code, 75, "{err}");
        assert!(
            err.contains("lock budget is still busy after waiting"),
            "{err}"
        );
        assert!(err.contains(": held by"), "{err}");
        assert!(
            err.contains(&format!("pid {}", holder.wrapper_pid())),
            "the busy line names the holder: {err}"
        );
    }
    // Each gave up at its own --wait, whichever level it was in: none waited twice.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3), "gave up early: {took:?}");
    assert!(
        took < Duration::from_secs(20),
        "waited past --wait: {took:?}"
    );
    assert_eq!(local_queue(&redis, "budget", &host, &[]), (vec![], 0));
    let waiters: i64 = redis.cmd(&["SCARD", &format!("{}:waiters", lock_key("budget"))]);
    assert_eq!(waiters, 0, "a run that gave up stayed in Redis's waiters");
    holder.stop();
}

#[test]
fn wait_zero_tries_redis_at_once_past_a_local_queue() {
    let redis = Redis::start();
    let s = Scratch::new();
    let host = s.path("host");
    let holder = Holding::start(&lock_args(&redis, "zero"));
    let log = s.path("log");
    let queued: Vec<Child> = (0..2)
        .map(|_| section_run(&redis, "zero", &host, &log, &[]))
        .collect();
    assert!(eventually(READY, || local_queue(
        &redis,
        "zero",
        &host,
        &[]
    )
    .1 == 1));
    let out = output_within(
        redlock_run()
            .args(lock_args(&redis, "zero"))
            .args(["--wait", "0", "--local-dir"])
            .arg(&host)
            .args(["--", "true"]),
        Duration::from_secs(10),
    );
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("pid {}", holder.wrapper_pid())),
        "{}",
        stderr(&out)
    );
    holder.finish();
    for run in queued {
        assert_eq!(finish(run, Duration::from_secs(30)).0, 0);
    }
}

#[test]
fn a_nested_run_of_the_holder_skips_the_local_queue() {
    let redis = Redis::start();
    let s = Scratch::new();
    let host = s.path("host");
    let go = s.path("go");
    let nested = s.path("nested");
    let log = s.path("log");
    let inner = format!(
        "while [ ! -e '{go}' ]; do sleep 0.02; done; '{RUN}' --key nest --redis '{url}' --wait 60s --local-dir '{dir}' -- touch '{nested}'",
        go = go.display(),
        url = redis.url(),
        dir = host.display(),
        nested = nested.display(),
    );
    let outer = redlock_run()
        .args(lock_args(&redis, "nest"))
        .args(["--local-dir"])
        .arg(&host)
        .args(["--", "sh", "-c", &inner])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(eventually(READY, || redis.exists(&lock_key("nest"))));
    // The host's next head waits in Redis for the outer run to end; the nested run must
    // not queue behind it.
    let behind = section_run(&redis, "nest", &host, &log, &[]);
    assert!(eventually(READY, || local_queue(
        &redis,
        "nest",
        &host,
        &[]
    )
    .0
    .len()
        == 1));
    std::fs::write(&go, "").unwrap();
    let (code, err) = finish(outer, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(nested.exists());
    assert_eq!(finish(behind, Duration::from_secs(30)).0, 0);
}

#[test]
fn a_semaphore_has_up_to_n_heads_per_host() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let hosts = [s.path("h1"), s.path("h2")];
    let limit = ["--limit", "3"];
    let mut hargs = lock_args(&redis, "sem");
    hargs.extend(["--limit".into(), "3".into()]);
    let holders: Vec<Holding> = (0..3).map(|_| Holding::start(&hargs)).collect();
    let mut runs = Vec::new();
    for _ in 0..10 {
        for dir in &hosts {
            runs.push(section_run(&redis, "sem", dir, &log, &limit));
        }
    }
    for dir in &hosts {
        assert!(
            eventually(Duration::from_secs(30), || {
                let (heads, queued) = local_queue(&redis, "sem", dir, &[]);
                heads.len() == 3 && queued == 7
            }),
            "{:?}",
            local_queue(&redis, "sem", dir, &[])
        );
    }
    for h in holders {
        assert_eq!(h.finish().0, 0);
    }
    for run in runs {
        let (code, err) = finish(run, Duration::from_secs(120));
        assert_eq!(code, 0, "{err}");
    }
    let v = checker::check(&std::fs::read_to_string(&log).unwrap(), 3);
    assert_eq!((v.sections, v.overlaps), (20, 0), "{v:?}");
}

#[test]
fn fair_runs_of_several_hosts_keep_their_global_order() {
    let redis = Redis::start();
    let s = Scratch::new();
    let log = s.path("log");
    let mut fair = lock_args(&redis, "fairq");
    fair.push("--fair".into());
    let holder = Holding::start(&fair);
    let queue = format!("{}:queue", lock_key("fairq"));
    let mut runs = Vec::new();
    for i in 0..9 {
        let dir = s.path(&format!("host{}", i % 3));
        let script = format!(
            "echo \"BEGIN {i} $REDLOCK_TOKEN $REDLOCK_FENCE {i}\" >> '{log}'; echo \"END {i} $REDLOCK_TOKEN\" >> '{log}'",
            log = log.display()
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&log)
            .unwrap();
        std::io::Write::write_all(&mut f, format!("ARRIVE {i}\n").as_bytes()).unwrap();
        runs.push(
            redlock_run()
                .args(&fair)
                .args(["--wait", "60s", "--local-dir"])
                .arg(&dir)
                .args(["--", "sh", "-c", &script])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // One at a time: the queue's order is the start order.
        assert!(eventually(READY, || redis.cmd::<i64>(&["ZCARD", &queue]) == i + 1));
    }
    holder.finish();
    for run in runs {
        assert_eq!(finish(run, Duration::from_secs(60)).0, 0);
    }
    let v = checker::check(&std::fs::read_to_string(&log).unwrap(), 1);
    assert_eq!((v.sections, v.overlaps, v.out_of_order), (9, 0, 0), "{v:?}");
}

#[test]
fn the_waiting_line_says_the_place_on_this_host_and_who_holds_the_lock() {
    let redis = Redis::start();
    let s = Scratch::new();
    let host = s.path("host");
    let log = s.path("log");
    let holder = Holding::start(&lock_args(&redis, "line"));
    let first = section_run(&redis, "line", &host, &log, &[]);
    assert!(eventually(READY, || local_queue(
        &redis,
        "line",
        &host,
        &[]
    )
    .0
    .len()
        == 1));
    // The head has told the host who holds the lock.
    assert!(eventually(READY, || std::fs::read_dir(&host).unwrap().any(
        |e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap_or_default()
                .contains("holder")
        }
    )));
    let second = section_run(&redis, "line", &host, &log, &[]);
    assert!(eventually(READY, || local_queue(
        &redis,
        "line",
        &host,
        &[]
    )
    .1 == 1));
    let status = output(
        redlock()
            .args(["status", "line", "--redis", &redis.url(), "--local-dir"])
            .arg(&host),
    );
    assert!(
        stdout(&status).contains("this host: 1 contending in Redis")
            && stdout(&status).contains("1 queued behind"),
        "{}",
        stdout(&status)
    );
    holder.finish();
    assert_eq!(finish(first, Duration::from_secs(30)).0, 0);
    let (code, err) = finish(second, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    let pid = "pid ";
    assert!(
        err.contains("waiting for line: #2 on this host (1 ahead here), held by")
            && err.contains(pid),
        "{err}"
    );
    assert!(err.contains("acquired line after"), "{err}");
}

#[test]
fn the_default_directory_is_private_to_the_user_or_not_used() {
    let redis = Redis::start();
    let s = Scratch::new();
    let runtime = s.path("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let run = |extra: &[&str]| {
        output_within(
            redlock_run()
                .env("XDG_RUNTIME_DIR", &runtime)
                .args(lock_args(&redis, "priv"))
                .args(["--wait", "5s", "--verbose"])
                .args(extra)
                .args(["--", "true"]),
            Duration::from_secs(20),
        )
    };
    let out = run(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = runtime.join("redlock");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // One queue file (beside it, what the host keeps of the server: its run ID).
    let queue_files = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "lock"))
            .collect()
    };
    assert_eq!(queue_files(&dir).len(), 1, "one queue file");
    // A directory others may write is not used: the run waits in Redis directly.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not queueing on this host")
            && stderr(&out).contains("open to other users"),
        "{}",
        stderr(&out)
    );
    // A queue file is readable to the users of a shared directory whatever the umask of
    // the run that made it (flock needs only a read-only descriptor).
    let shared = s.path("shared");
    let out = output_within(
        std::process::Command::new("sh")
            .args(["-c", "umask 077; exec \"$@\"", "sh", RUN])
            .args(lock_args(&redis, "priv"))
            .args(["--wait", "5s", "--local-dir"])
            .arg(&shared)
            .args(["--", "true"]),
        Duration::from_secs(20),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = queue_files(&shared).pop().expect("a queue file");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // An operator's directory that cannot be used is refused, before Redis is touched.
    let file = s.path("a-file");
    std::fs::write(&file, "").unwrap();
    let out = run(&["--local-dir", file.to_str().unwrap()]);
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--local-dir"), "{}", stderr(&out));
    assert!(
        redis
            .keys()
            .iter()
            .all(|k| !k.contains("{priv}") || k.ends_with(":fence") || k.ends_with(":history"))
    );
}

#[test]
fn a_signal_ends_a_local_wait_with_nothing_run() {
    let redis = Redis::start();
    let s = Scratch::new();
    let host = s.path("host");
    let log = s.path("log");
    let holder = Holding::start(&lock_args(&redis, "sig"));
    let head = section_run(&redis, "sig", &host, &log, &[]);
    assert!(eventually(READY, || local_queue(&redis, "sig", &host, &[])
        .0
        .len()
        == 1));
    let queued = section_run(&redis, "sig", &host, &log, &[]);
    assert!(eventually(READY, || local_queue(&redis, "sig", &host, &[])
        .1
        == 1));
    kill(Pid::from_raw(queued.id() as i32), Signal::SIGTERM).unwrap();
    let (code, err) = finish(queued, Duration::from_secs(20));
    assert_eq!(code, 143, "{err}");
    assert!(
        err.contains("interrupted by SIGTERM while waiting; nothing was run"),
        "{err}"
    );
    assert_eq!(local_queue(&redis, "sig", &host, &[]).1, 0);
    holder.finish();
    assert_eq!(finish(head, Duration::from_secs(20)).0, 0);
    assert_eq!(
        checker::check(&std::fs::read_to_string(&log).unwrap(), 1).sections,
        1
    );
}

/// (review 4, #8) A system-wide `REDLOCK_LOCAL_DIR` and `--no-local-queue` on the line
/// (or `REDLOCK_NO_LOCAL_QUEUE` and `--local-dir`) is no conflict: the job runs, and the
/// command line decides. Environment switches take 1/0, yes/no, on/off too.
#[test]
fn the_command_line_wins_over_the_environment_for_the_local_queue() {
    let redis = Redis::start();
    let s = Scratch::new();
    let env_dir = s.path("env-q");
    let flag_dir = s.path("flag-q");
    let run = |env: &[(&str, &std::path::Path)], extra: &[&str]| {
        let mut cmd = redlock_run();
        for (k, v) in env {
            cmd.env(k, v);
        }
        // --wait so that the run would use its local queue.
        let out = output(
            cmd.args(["--key", "env-flag", "--wait", "5s", "--redis", &redis.url()])
                .args(extra)
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), 0, "{env:?} {extra:?}: {}", stderr(&out));
    };
    run(&[("REDLOCK_LOCAL_DIR", &env_dir)], &["--no-local-queue"]);
    assert!(
        !env_dir.exists(),
        "--no-local-queue lost to the environment"
    );
    let on = std::path::Path::new("1");
    run(
        &[("REDLOCK_NO_LOCAL_QUEUE", on)],
        &["--local-dir", flag_dir.to_str().unwrap()],
    );
    assert!(flag_dir.exists(), "--local-dir lost to the environment");
    run(
        &[
            ("REDLOCK_LOCAL_DIR", &env_dir),
            ("REDLOCK_NO_LOCAL_QUEUE", on),
        ],
        &[],
    );
    assert!(!env_dir.exists(), "REDLOCK_NO_LOCAL_QUEUE=1 not honoured");
    run(&[("REDLOCK_LOCAL_DIR", &env_dir)], &[]);
    assert!(env_dir.exists(), "REDLOCK_LOCAL_DIR not honoured");
}

/// A run on host `dir` that marks `ran{i}` when its command starts, then waits for `go`.
fn parked_on_host(
    redis: &Redis,
    name: &str,
    dir: &std::path::Path,
    s: &Scratch,
    i: usize,
    extra: &[&str],
) -> Child {
    let script = format!(
        "touch '{ran}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done",
        ran = s.path(&format!("ran{i}")).display(),
        go = s.path("go").display()
    );
    on_host(redis, name, dir, extra, &script)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redlock-run")
}

/// (review 4, #4) The host's head is stopped (SIGSTOP: Ctrl-Z, a debugger, a paused
/// container): the run queued behind it on the same host notices and contends in
/// Redis directly, and takes the lock soon after the holder releases it, instead of
/// using up its --wait behind a head that cannot move (17.8 s of a free lock before).
#[test]
fn a_stopped_head_does_not_stall_its_host() {
    let pid = std::cell::Cell::new(0);
    behind_a_head_that_cannot_move(
        "stp",
        |head| {
            pid.set(head as i32);
            kill(Pid::from_raw(head as i32), Signal::SIGSTOP).unwrap();
        },
        || kill(Pid::from_raw(pid.get()), Signal::SIGCONT).unwrap(),
    );
}

/// The holder of `name` releases while the host's head is paused by `pause` (its pid):
/// the run queued behind the head takes the free lock long before its own 40 s --wait
/// runs out; `resume` lets the head go on, and both end 0.
fn behind_a_head_that_cannot_move(name: &str, pause: impl FnOnce(u32), resume: impl FnOnce()) {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("host");
    let holder = Holding::start(&{
        let mut a = lock_args(&redis, name);
        a.extend(["--ttl".into(), "60s".into()]);
        a
    });
    let mut head = parked_on_host(&redis, name, &dir, &s, 0, &["--wait", "2m", "--ttl", "60s"]);
    assert!(
        eventually(READY, || local_queue(&redis, name, &dir, &[]).0.len() == 1),
        "the head never took the host's queue"
    );
    let mut behind = parked_on_host(
        &redis,
        name,
        &dir,
        &s,
        1,
        &["--wait", "40s", "--ttl", "60s"],
    );
    assert!(
        eventually(READY, || local_queue(&redis, name, &dir, &[]).1 == 1),
        "the second run never queued behind the head"
    );
    pause(head.id());
    let (code_, err) = holder.finish();
    assert_eq!(code_, 0, "{err}");
    assert!(
        eventually(Duration::from_secs(15), || s.path("ran1").exists()),
        "the run behind a head that cannot move did not take the free lock"
    );
    assert!(!s.path("ran0").exists());
    resume();
    std::fs::write(s.path("go"), "").unwrap();
    assert_eq!(
        wait_child(&mut behind, Duration::from_secs(30)).code(),
        Some(0)
    );
    assert_eq!(
        wait_child(&mut head, Duration::from_secs(90)).code(),
        Some(0)
    );
}

/// (review 4, #9, #10, #13) One server spelled four ways is one queue on the host (one
/// file, one contender in Redis); the file a head publishes holds no token; a run that
/// waits in its host's queue gives its `waiting` event a token prefix, never "".
#[test]
fn one_server_however_spelled_is_one_queue_and_its_file_holds_no_token() {
    let redis = Redis::start();
    let s = Scratch::new();
    let dir = s.path("host");
    let holder = Holding::start(&{
        let mut a = lock_args(&redis, "sp");
        a.extend(["--ttl".into(), "60s".into()]);
        a
    });
    let port = redis.port;
    let spellings = [
        format!("redis://127.0.0.1:{port}"),
        format!("redis://localhost:{port}"),
        format!("redis://127.0.0.1:{port}/0"),
        format!("redis://127.0.0.1:{port}?x=1"),
    ];
    let events = s.path("events");
    let mut runs: Vec<Child> = spellings
        .iter()
        .map(|url| {
            redlock_run()
                .args([
                    "--key",
                    "sp",
                    "--redis",
                    url,
                    "--wait",
                    "60s",
                    "--local-dir",
                ])
                .arg(&dir)
                .arg("--events")
                .arg(&events)
                .args(["--", "true"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(
        eventually(READY, || local_queue(&redis, "sp", &dir, &[]).1 == 3),
        "four spellings did not queue as one: {:?}",
        std::fs::read_dir(&dir).map(|d| d.count())
    );
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    // One contender in Redis: the head in the waiters set (the holder's own pop, for a
    // request to stop, starts 250 ms into its command: a second BLPOP then).
    let waiters: usize = redis.cmd(&["SCARD", "redlock:{sp}:waiters"]);
    assert_eq!(waiters, 1, "one contender in Redis");
    let (_, popping) = clients(&redis);
    assert!(popping <= 2, "{popping} pops");
    // What the head published: the holder, without its token.
    let token = holder.token();
    assert!(
        eventually(READY, || std::fs::read_to_string(files[0].path())
            .unwrap_or_default()
            .contains("\"head_pid\"")),
        "the head never published"
    );
    let published = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(!published.contains(&token), "{published}");
    let (code_, err) = holder.finish();
    assert_eq!(code_, 0, "{err}");
    for run in &mut runs {
        assert_eq!(wait_child(run, Duration::from_secs(60)).code(), Some(0));
    }
    let text = std::fs::read_to_string(&events).unwrap();
    for line in text.lines().filter(|l| l.contains("\"waiting\"")) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        // A prefix of whoever held it then (this holder, or a run that took over), or
        // null when not known yet: never "" nor a whole token.
        let prefix = &event["holder_token"];
        assert!(
            prefix.is_null() || prefix.as_str().is_some_and(|p| (1..=8).contains(&p.len())),
            "{line}"
        );
    }
}

/// A freezer cgroup made for one test (cgroup v2's `cgroup.freeze`, else v1's
/// `freezer.state`); removed, its processes thawed and moved back, on drop.
struct Freezer {
    dir: std::path::PathBuf,
    v2: bool,
    pids: Vec<u32>,
}

impl Freezer {
    fn new() -> Option<Freezer> {
        let name = format!("redlock-test-{}", std::process::id());
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let dir = std::path::Path::new(root).join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                if dir.join("cgroup.freeze").exists() {
                    return Some(Freezer {
                        dir,
                        v2: true,
                        pids: Vec::new(),
                    });
                }
                let _ = std::fs::remove_dir(&dir);
            }
        }
        let dir = std::path::Path::new("/sys/fs/cgroup/freezer").join(&name);
        std::fs::create_dir(&dir).ok()?;
        Some(Freezer {
            dir,
            v2: false,
            pids: Vec::new(),
        })
    }

    fn freeze(&mut self, pid: u32) {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).unwrap();
        self.pids.push(pid);
        self.set(true);
    }

    fn set(&self, frozen: bool) {
        if self.v2 {
            std::fs::write(
                self.dir.join("cgroup.freeze"),
                if frozen { "1" } else { "0" },
            )
            .unwrap();
        } else {
            let state = if frozen { "FROZEN" } else { "THAWED" };
            std::fs::write(self.dir.join("freezer.state"), state).unwrap();
        }
    }
}

impl Drop for Freezer {
    fn drop(&mut self) {
        self.set(false);
        let root = self.dir.parent().unwrap().join("cgroup.procs");
        for pid in &self.pids {
            let _ = std::fs::write(&root, pid.to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// (review 4, #4) The host's head frozen by its cgroup (`docker pause`, a frozen VM
/// slice; such a task still shows as sleeping): the run behind it goes around it too.
#[test]
fn a_frozen_head_does_not_stall_its_host() {
    let Some(freezer) = Freezer::new() else {
        eprintln!("SKIPPED: no freezer cgroup can be made here (CI runs as root)");
        return;
    };
    let freezer = std::cell::RefCell::new(Some(freezer));
    behind_a_head_that_cannot_move(
        "frz",
        |head| freezer.borrow_mut().as_mut().unwrap().freeze(head),
        || drop(freezer.borrow_mut().take()),
    );
}

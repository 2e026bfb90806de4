//! `redlock status`, `list`, `release`, `acquire`, `extend`; configuration through the
//! environment and its precedence.

use std::process::Command;
use std::time::Duration;

use crate::harness::*;

fn verb(redis: &Redis, args: &[&str]) -> std::process::Output {
    output(redlock().args(args).args(["--redis", &redis.url()]))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(stdout(out).lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

/// Holds `name` on `redis` until the test stops the holder.
fn hold(redis: &Redis, name: &str) -> Holding {
    Holding::start(&["--key".into(), name.into(), "--redis".into(), redis.url()])
}

#[test]
fn status_free_held_foreign_expired() {
    let redis = Redis::start();

    let free = verb(&redis, &["status", "job"]);
    assert_eq!(code(&free), 1, "{}", stderr(&free));
    assert_eq!(stdout(&free), "job: free\n");
    assert_eq!(
        json(&verb(&redis, &["status", "job", "--json"]))["state"],
        "free"
    );

    let holder = hold(&redis, "job");
    let held = verb(&redis, &["status", "job"]);
    assert_eq!(code(&held), 0, "{}", stderr(&held));
    let text = stdout(&held);
    assert!(text.starts_with("job: held by "), "{text}");
    for needle in [
        format!("pid {}", holder.wrapper_pid()),
        "command: sh -c".to_string(),
        "since:".to_string(),
        "ttl:".to_string(),
        "token:".to_string(),
    ] {
        assert!(text.contains(&needle), "{needle:?} missing in {text}");
    }
    let j = json(&verb(&redis, &["status", "job", "--json"]));
    assert_eq!(j["state"], "held");
    assert_eq!(j["key"], "redlock:{job}");
    assert_eq!(j["holder"]["pid"], holder.wrapper_pid());
    assert!(j["ttl_left_ms"].as_u64().unwrap() > 0);
    assert_eq!(j["holder"]["token"].as_str().unwrap().len(), 36);

    // Several keys: exit 1 as soon as one is free.
    let mixed = verb(&redis, &["status", "job", "other"]);
    assert_eq!(code(&mixed), 1);
    assert_eq!(
        stdout(&mixed)
            .lines()
            .filter(|l| !l.starts_with(' '))
            .count(),
        2
    );
    holder.stop();

    redis.cmd::<String>(&["SET", "redlock:{foreign}", "tok", "PX", "60000"]);
    let foreign = verb(&redis, &["status", "foreign"]);
    assert_eq!(code(&foreign), 0);
    assert!(
        stdout(&foreign).contains("unknown holder"),
        "{}",
        stdout(&foreign)
    );

    redis.cmd::<String>(&["SET", "redlock:{brief}", "tok", "PX", "50"]);
    assert!(eventually(Duration::from_secs(5), || !redis.exists("redlock:{brief}")));
    assert_eq!(code(&verb(&redis, &["status", "brief"])), 1);
}

#[test]
fn list_with_patterns_and_glob_characters() {
    let redis = Redis::start();
    for name in ["deploy-a", "deploy-b", "a*b", "axb", "other"] {
        redis.cmd::<String>(&["SET", &format!("redlock:{{{name}}}"), "t", "PX", "60000"]);
    }
    // Keys that are not locks under the prefix, and keys outside it, are not listed.
    redis.cmd::<i64>(&["HSET", "redlock:{hash}", "f", "v"]);
    redis.cmd::<String>(&["SET", "unrelated", "x"]);
    redis.cmd::<String>(&["SET", "redlock-x:{deploy-c}", "t"]);

    let names = |args: &[&str]| -> Vec<String> {
        let out = verb(&redis, args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let mut names: Vec<String> = stdout(&out)
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&["list"]),
        ["a*b", "axb", "deploy-a", "deploy-b", "other"]
    );
    assert_eq!(names(&["list", "deploy-*"]), ["deploy-a", "deploy-b"]);
    // A literal * (escaped) matches only itself; unescaped it is a wildcard.
    assert_eq!(names(&["list", "a\\*b"]), ["a*b"]);
    assert_eq!(names(&["list", "a*b"]), ["a*b", "axb"]);
    // A prefix with glob characters is taken literally.
    redis.cmd::<String>(&["SET", "p*:{x}", "t", "PX", "60000"]);
    assert_eq!(names(&["list", "--prefix", "p*:"]), ["x"]);
    assert_eq!(names(&["list", "--prefix", "p?:"]), Vec::<String>::new());

    let out = verb(&redis, &["list", "deploy-a", "--json"]);
    let j = json(&out);
    assert_eq!(j["name"], "deploy-a");
    assert_eq!(j["state"], "held");
}

#[test]
fn release_by_token_force_and_refusals() {
    let redis = Redis::start();
    let acquired = verb(&redis, &["acquire", "job", "--ttl", "1m"]);
    assert_eq!(code(&acquired), 0, "{}", stderr(&acquired));
    let token = stdout(&acquired).trim().to_string();

    let refused = verb(&redis, &["release", "job"]);
    assert_eq!(code(&refused), codes::USAGE);
    assert!(stderr(&refused).contains("--force"));
    assert!(redis.exists("redlock:{job}"));

    let wrong = verb(&redis, &["release", "job", "--token", "not-the-token"]);
    assert_eq!(code(&wrong), codes::LOST, "{}", stderr(&wrong));
    assert!(redis.exists("redlock:{job}"));

    let right = verb(&redis, &["release", "job", "--token", &token]);
    assert_eq!(code(&right), 0, "{}", stderr(&right));
    assert!(redis.keys().is_empty(), "{:?}", redis.keys());

    let again = verb(&redis, &["release", "job", "--token", &token]);
    assert_eq!(code(&again), codes::LOST);

    let holder = hold(&redis, "stuck");
    let forced = verb(&redis, &["release", "stuck", "--force"]);
    assert_eq!(code(&forced), 0, "{}", stderr(&forced));
    let said = stdout(&forced);
    assert!(said.contains("removed stuck"), "{said}");
    assert!(
        said.contains(&format!("pid {}", holder.wrapper_pid())),
        "{said}"
    );
    assert!(said.contains("since"), "{said}");
    assert!(!redis.exists("redlock:{stuck}"));
    assert!(!redis.exists("redlock:{stuck}:meta"));
    // The holder finds out at its next renewal; stop it now.
    holder.stop();

    let free = verb(&redis, &["release", "stuck", "--force"]);
    assert_eq!(code(&free), 1);
    assert!(stdout(&free).contains("was free"));

    redis.cmd::<i64>(&["HSET", "redlock:{data}", "f", "v"]);
    let not_lock = verb(&redis, &["release", "data", "--force"]);
    assert_eq!(code(&not_lock), codes::REDIS);
    assert!(stderr(&not_lock).contains("not a lock"));
    assert!(
        redis.exists("redlock:{data}"),
        "user data must not be deleted"
    );
}

#[test]
fn acquire_extend_release_from_a_shell_script() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let script = scratch.script(
        "job.sh",
        r#"set -e
token=$(redlock acquire nightly --ttl 10s)
pttl_before=$(redis-cli -p "$PORT" pttl 'redlock:{nightly}')
redlock extend nightly --token "$token" --ttl 60s
pttl_after=$(redis-cli -p "$PORT" pttl 'redlock:{nightly}')
[ "$pttl_after" -gt 50000 ] && [ "$pttl_before" -le 10000 ]
if redlock acquire nightly; then echo "acquired twice"; exit 1; else busy=$?; fi
[ "$busy" -eq 75 ]
redlock release nightly --token "$token"
redlock status nightly || echo "free after release"
"#,
    );
    let bin_dir = std::path::Path::new(REDLOCK).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = output(
        Command::new(&script)
            .env("PATH", path)
            .env("PORT", redis.port.to_string())
            .env("REDLOCK_REDIS_URL", redis.url()),
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("free after release"),
        "{}",
        stdout(&out)
    );
    assert!(redis.keys().is_empty());

    let j = json(&verb(&redis, &["acquire", "j", "--json", "--ttl", "5s"]));
    assert_eq!(j["name"], "j");
    assert_eq!(j["ttl_ms"], 5000);
    let token = j["token"].as_str().unwrap().to_string();
    assert_eq!(redis.cmd::<String>(&["GET", "redlock:{j}"]), token);
    // Waiting acquire: takes over once the key expires.
    let waited = verb(&redis, &["acquire", "j", "--wait", "20s", "--ttl", "5s"]);
    assert_eq!(code(&waited), 0, "{}", stderr(&waited));
    assert_ne!(stdout(&waited).trim(), token);
    let busy = verb(&redis, &["acquire", "j", "--busy-exit-code", "3"]);
    assert_eq!(code(&busy), 3);
}

#[test]
fn configuration_from_the_environment_and_precedence() {
    let a = Redis::start();
    let b = Redis::start();
    let scratch = Scratch::new();
    let env_run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut cmd = redlock_run();
        cmd.args(["--key", "cfg"]).args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(["--", "sh", "-c", "echo $REDLOCK_KEY $REDLOCK_TTL_MS"]);
        output(&mut cmd)
    };
    // Env alone.
    let out = env_run(
        &[],
        &[
            ("REDLOCK_REDIS_URL", &a.url()),
            ("REDLOCK_PREFIX", "team:"),
            ("REDLOCK_TTL", "45s"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "team:{cfg} 45000\n");
    // Flags win over env.
    let out = env_run(
        &["--redis", &b.url(), "--prefix", "flag:", "--ttl", "20s"],
        &[
            ("REDLOCK_REDIS_URL", "redis://127.0.0.1:1"),
            ("REDLOCK_PREFIX", "team:"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "flag:{cfg} 20000\n");
    // URL from a file; the env var for the URL wins over the file.
    let file = scratch.path("url");
    std::fs::write(&file, format!("# the lock server\n{}\n", a.url())).unwrap();
    let file_s = file.display().to_string();
    let out = env_run(&["--redis-url-file", &file_s], &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env_run(&[], &[("REDLOCK_REDIS_URL_FILE", &file_s)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let missing = env_run(&["--redis-url-file", "/nonexistent/url"], &[]);
    assert_eq!(code(&missing), codes::USAGE);
    // Busy exit code from the environment; the flag wins.
    a.cmd::<String>(&["SET", "redlock:{cfg}", "x", "PX", "60000"]);
    let busy = env_run(
        &[],
        &[
            ("REDLOCK_REDIS_URL", &a.url()),
            ("REDLOCK_BUSY_EXIT_CODE", "0"),
        ],
    );
    assert_eq!(code(&busy), 0);
    let busy = env_run(
        &["-E", "9"],
        &[
            ("REDLOCK_REDIS_URL", &a.url()),
            ("REDLOCK_BUSY_EXIT_CODE", "0"),
        ],
    );
    assert_eq!(code(&busy), 9);
}

#[test]
fn verbs_refuse_bad_input_with_their_codes() {
    let redis = Redis::start();
    let cases: &[(&[&str], i32)] = &[
        (&["status"], codes::USAGE),
        (&["status", ""], codes::USAGE),
        (&["release", "", "--force"], codes::USAGE),
        (&["acquire", "x", "--ttl", "banana"], codes::USAGE),
        (&["acquire", "x", "--ttl", "30"], codes::USAGE),
        (&["extend", "x"], codes::USAGE),
        (&["list", "--prefix", "a{b"], codes::USAGE),
        (&["bogus-verb"], codes::USAGE),
    ];
    for (args, want) in cases {
        let out = verb(&redis, args);
        assert_eq!(code(&out), *want, "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().count(),
            1,
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let bad_url = output(redlock().args(["status", "x", "--redis", "http://:pw@h:1"]));
    assert_eq!(code(&bad_url), codes::USAGE);
    assert!(!stderr(&bad_url).contains("pw@"), "{}", stderr(&bad_url));
    let refused = output(redlock().args([
        "status",
        "x",
        "--redis",
        &format!("redis://127.0.0.1:{}", free_port()),
    ]));
    assert_eq!(code(&refused), codes::UNREACHABLE, "{}", stderr(&refused));
    assert!(redis.keys().is_empty());
}

/// `--json` carries the exact name: a newline is a newline, not a backslash and an n,
/// so a script that feeds `.name` back acts on the same lock. A name that is not UTF-8
/// also comes as `name_hex`, its exact bytes in hex.
#[test]
fn json_carries_the_exact_name() {
    use std::os::unix::ffi::OsStrExt;
    let redis = Redis::start();
    let holder = Holding::start(&["--key".into(), "a\nb".into(), "--redis".into(), redis.url()]);
    let j = json(&verb(&redis, &["status", "a\nb", "--json"]));
    assert_eq!(j["name"], "a\nb");
    assert_eq!(j["key"], "redlock:{a\nb}");
    assert!(j.get("name_hex").is_none(), "{j}");
    let listed = json(&verb(&redis, &["list", "--json"]));
    assert_eq!(listed["name"], "a\nb");
    // Fed back, the name reaches the same lock.
    let back = listed["name"].as_str().unwrap();
    assert_eq!(code(&verb(&redis, &["status", back])), 0);
    holder.stop();

    let raw = std::ffi::OsStr::from_bytes(b"x\xffy");
    let out = output(
        redlock()
            .args(["status", "--json", "--redis", &redis.url()])
            .arg(raw),
    );
    let j = json(&out);
    assert_eq!(j["name_hex"], "78ff79");
    assert_eq!(j["state"], "free");
}

/// `release --if-dead` removes a lock only when its holder ran on this machine and its
/// process is gone: it refuses a live holder (75, the key untouched), a holder on
/// another host or another boot, removes the lock of a holder killed with SIGKILL, and
/// takes a pid now used by another process (a reused pid) for gone.
#[test]
fn release_if_dead_checks_the_holder_process() {
    let redis = Redis::start();
    let host = nix::unistd::gethostname()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    let live = hold(&redis, "alive");
    let out = verb(&redis, &["release", "alive", "--if-dead"]);
    assert_eq!(code(&out), codes::BUSY, "{}", stderr(&out));
    assert!(stderr(&out).contains("which is alive"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(redis.exists("redlock:{alive}"));
    live.stop();

    let url = redis.url();
    let args: Vec<String> = ["--key", "killed", "--redis", &url, "--ttl", "60s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let killed = Holding::start(&args);
    let pid = killed.wrapper_pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = killed.wait();
    assert!(
        redis.exists("redlock:{killed}"),
        "the lock outlives a killed holder"
    );
    let out = verb(&redis, &["release", "killed", "--if-dead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("pid {pid}")),
        "{}",
        stdout(&out)
    );
    assert!(!redis.exists("redlock:{killed}") && !redis.exists("redlock:{killed}:meta"));

    // Forged holders with this test's own (live) pid: recorded on this boot and in this
    // namespace with another start, the pid was reused; recorded on another boot (a twin
    // machine, or before a reboot) or on another host, nothing can be checked.
    let me = std::process::id().to_string();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let pidns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let this_boot = format!("{}/1", boot.trim());
    for (name, holder_host, started, want, why) in [
        ("reused", host.as_str(), this_boot.as_str(), 0, ""),
        (
            "rebooted",
            host.as_str(),
            "another-boot/1",
            codes::BUSY,
            "another boot",
        ),
        (
            "elsewhere",
            "some-other-host",
            this_boot.as_str(),
            codes::BUSY,
            "another host",
        ),
    ] {
        let key = format!("redlock:{{{name}}}");
        let meta = format!("{key}:meta");
        let _: () = redis.cmd(&["SET", &key, "forged", "PX", "60000"]);
        let _: i64 = redis.cmd(&[
            "HSET",
            &meta,
            "token",
            "forged",
            "host",
            holder_host,
            "pid",
            &me,
            "started",
            started,
            "pidns",
            &pidns.to_string_lossy(),
        ]);
        let out = verb(&redis, &["release", name, "--if-dead"]);
        assert_eq!(code(&out), want, "{name}: {}", stderr(&out));
        assert_eq!(redis.exists(&key), want != 0, "{name}");
        if want != 0 {
            assert!(stderr(&out).contains(why), "{}", stderr(&out));
            let _: i64 = redis.cmd(&["DEL", &key, &meta]);
        }
    }
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// `redlock wait`: 0 at once for a free lock; 75 with one line when the lock is still
/// held at --timeout; woken by the release (well before the holder's 60 s ttl) without
/// taking the lock, and without stranding a run that waits to acquire it: the wake-up
/// it takes is handed on.
#[test]
fn wait_blocks_until_the_lock_is_free_without_taking_it() {
    let redis = Redis::start();
    let url = redis.url();
    let free = verb(&redis, &["wait", "job"]);
    assert_eq!(code(&free), 0, "{}", stderr(&free));

    let args: Vec<String> = ["--key", "job", "--redis", &url, "--ttl", "60s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let holder = Holding::start(&args);
    let timed_out = verb(&redis, &["wait", "job", "--timeout", "1s"]);
    assert_eq!(code(&timed_out), codes::BUSY, "{}", stderr(&timed_out));
    assert_eq!(stderr(&timed_out).lines().count(), 1);
    assert!(
        stderr(&timed_out).contains("still held"),
        "{}",
        stderr(&timed_out)
    );

    let mut watcher = redlock()
        .args(["wait", "job", "--timeout", "60s", "--redis", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let scratch = Scratch::new();
    let ran = scratch.path("ran");
    let mut wargs = args.clone();
    wargs.extend(["--wait".into(), "60s".into()]);
    let waiter = start_run(&wargs, &format!("touch '{}'", ran.display()));
    assert!(
        eventually(READY, || redis.waiting_blocked("job", 2)),
        "both never blocked"
    );
    let (code_, err) = holder.finish();
    assert_eq!(code_, 0, "{err}");
    let status = wait_child(&mut watcher, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));
    let (code_, err) = finish(waiter, Duration::from_secs(30));
    assert_eq!(code_, 0, "{err}");
    assert!(ran.exists(), "the waiting run did not get the lock");
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// (newcomer-5 P17) `status` of a plain lock said nothing of the runs waiting for it,
/// which `top` showed: it now says how many wait in Redis, and which of them are this
/// host's (the others' hosts are not recorded for a plain lock).
#[test]
fn status_of_a_plain_lock_says_how_many_runs_wait() {
    let redis = Redis::start();
    let url = redis.url();
    let scratch = Scratch::new();
    let here = scratch.path("here");
    let holder = hold(&redis, "deploy-production");
    let waiter = |local: &[&str]| {
        redlock_run()
            .args([
                "--redis",
                &url,
                "--key",
                "deploy-production",
                "--wait",
                "60s",
            ])
            .args(local)
            .args(["--", "true"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // Two from "other hosts" (no local queue), one from this host's local queue.
    let here_dir = here.to_str().unwrap();
    let mut waiting = vec![
        waiter(&["--no-local-queue"]),
        waiter(&["--no-local-queue"]),
        waiter(&["--local-dir", here_dir]),
    ];
    let waiters = lock_key("deploy-production") + ":waiters";
    assert!(eventually(READY, || redis.cmd::<i64>(&["SCARD", &waiters]) == 3));
    let out = verb(
        &redis,
        &["status", "deploy-production", "--local-dir", here_dir],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("\n  waiting: 3 runs wait in Redis; 1 of them from this host"),
        "{text}"
    );
    assert!(text.contains("\n  this host: 1 contending"), "{text}");
    let out = verb(&redis, &["status", "deploy-production", "--json"]);
    assert_eq!(json(&out)["waiting"], 3, "{}", stdout(&out));
    // Elsewhere (another local directory) none of them is this host's.
    let elsewhere = scratch.path("elsewhere");
    let elsewhere = elsewhere.to_str().unwrap();
    let out = verb(
        &redis,
        &["status", "deploy-production", "--local-dir", elsewhere],
    );
    assert!(
        stdout(&out).contains("waiting: 3 runs wait in Redis; their hosts are not recorded"),
        "{}",
        stdout(&out)
    );
    let (status, err) = holder.finish();
    assert_eq!(status, 0, "{err}");
    for w in &mut waiting {
        assert_eq!(wait_child(w, Duration::from_secs(30)).code(), Some(0));
    }
    // Nobody waits: no line.
    let out = verb(&redis, &["status", "deploy-production"]);
    assert!(!stdout(&out).contains("waiting:"), "{}", stdout(&out));
}

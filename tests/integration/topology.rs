//! Deployments other than one plain server: Redis Cluster, Sentinel, TLS (verified,
//! untrusted, mutual), ACL users, and nodes that are down or slow. Real servers only:
//! a 3-master cluster joined by `redis-cli --cluster create`, a master + replica +
//! sentinel, TLS servers with certificates made by `openssl`.

use std::time::Duration;

use crate::harness::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------- Cluster

#[test]
fn cluster_mutual_exclusion_status_and_list_across_masters() {
    let cluster = Cluster::start(3);
    let url = cluster.url();
    // Two names whose slots live on different masters.
    let mut names: Vec<String> = Vec::new();
    let mut owners = Vec::new();
    for i in 0.. {
        let name = format!("job{i}");
        let owner = cluster.owner(&format!("redlock:{{{name}}}"));
        if !owners.contains(&owner) {
            owners.push(owner);
            names.push(name);
        }
        if names.len() == 2 {
            break;
        }
    }
    let workers: Vec<_> = names
        .iter()
        .map(|name| {
            let a = args(&["--key", name, "--redis", &url, "--ttl", "10s"]);
            std::thread::spawn(move || contend(&a, 8, 25))
        })
        .collect();
    for (name, worker) in names.iter().zip(workers) {
        let c = worker.join().expect("contention thread");
        assert_eq!(c.sections, 200, "{name}: {c:?}");
        assert_eq!((c.overlaps, c.duplicate_tokens), (0, 0), "{name}: {c:?}");
        assert_eq!(c.fences_not_increasing, 0, "{name}: {c:?}");
        assert_eq!(c.counter, 200, "{name}");
        assert!(c.failures.is_empty(), "{name}: {c:?}");
        // The history sits in the lock's slot: the last 20 of the 200 runs.
        let out = output(redlock().args(["history", name, "--json", "--redis", &url]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(doc["runs"].as_array().map(Vec::len), Some(20), "{doc}");
    }
    assert!(cluster.keys().is_empty(), "left: {:?}", cluster.keys());
    // --once-per in a cluster: the second run of the slot is skipped.
    let once = args(&["--key", "once", "--redis", &url, "--once-per", "1h"]);
    assert_eq!(try_once(&once, "true").0, 0);
    assert_eq!(try_once(&once, "true").0, 75);
    // A semaphore in a cluster: its slots and mode key live in the lock's hash slot.
    let two = args(&["--key", "pool", "--redis", &url, "--limit", "2"]);
    let (a, b) = (Holding::start(&two), Holding::start(&two));
    assert_eq!(try_once(&two, "true").0, 75);
    assert_eq!((a.finish().0, b.finish().0), (0, 0));
    // A fair queue in a cluster: the release wakes the head on its own wake list.
    let fair = args(&["--key", "line", "--redis", &url, "--fair"]);
    let holder = Holding::start(&fair);
    let waiter = start_run(
        &[fair.clone(), args(&["--wait", "30s", "--verbose"])].concat(),
        "true",
    );
    let owner = &cluster.nodes[cluster.owner("redlock:{line}")];
    assert!(eventually(Duration::from_secs(20), || owner
        .exists("redlock:{line}:queue")));
    let (status, err) = holder.finish();
    assert_eq!(status, 0, "{err}");
    assert!(!err.contains("could not release"), "{err}");
    let (status, err) = finish(waiter, Duration::from_secs(30));
    assert_eq!(status, 0, "{err}");
    assert!(err.contains("woken by a release"), "{err}");
    assert!(cluster.keys().is_empty(), "left: {:?}", cluster.keys());

    // Locks held on every master: status and list see them all.
    let mut held: Vec<String> = Vec::new();
    let mut on: Vec<usize> = Vec::new();
    for i in 0.. {
        let name = format!("held{i}");
        let owner = cluster.owner(&format!("redlock:{{{name}}}"));
        if !on.contains(&owner) {
            on.push(owner);
            held.push(name);
        }
        if held.len() == 3 {
            break;
        }
    }
    for name in &held {
        let out = output(redlock().args(["acquire", name, "--ttl", "1m", "--redis", &url]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let owner = cluster.owner(&format!("redlock:{{{name}}}"));
        assert!(
            cluster.nodes[owner].exists(&format!("redlock:{{{name}}}")),
            "{name} not on its slot's master"
        );
        assert!(cluster.nodes[owner].exists(&format!("redlock:{{{name}}}:meta")));
    }
    let mut status = redlock();
    status.args(["status", "--redis", &url]).args(&held);
    let out = output(&mut status);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = output(redlock().args(["list", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let listed: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    let mut want: Vec<&str> = held.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(listed, want);
    for name in &held {
        let out = output(redlock().args(["release", name, "--force", "--redis", &url]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    assert!(cluster.keys().is_empty(), "left: {:?}", cluster.keys());
}

#[test]
fn cluster_refuses_empty_hash_tag_and_plain_url_says_use_cluster() {
    let cluster = Cluster::start(3);
    let out = output(redlock_run().args(["--key", "}x", "--redis", &cluster.url(), "--", "true"]));
    assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
    assert!(stderr(&out).contains("Cluster"), "{}", stderr(&out));
    // A cluster node given as a plain server: a name whose slot is elsewhere.
    let plain = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    let name = (0..)
        .map(|i| format!("n{i}"))
        .find(|n| cluster.owner(&format!("redlock:{{{n}}}")) != 0)
        .unwrap();
    let out = output(redlock_run().args(["--key", &name, "--redis", &plain, "--", "true"]));
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("redis+cluster://"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn cluster_waiter_is_woken_by_the_release_on_the_slot_owner() {
    let cluster = Cluster::start(3);
    let url = cluster.url();
    // The lock lives on a node other than the first seed: the waiter's blocking pop
    // must be routed to the slot's owner, where the release pushes the wake-up.
    let name = (0..)
        .map(|i| format!("w{i}"))
        .find(|n| cluster.owner(&format!("redlock:{{{n}}}")) != 0)
        .unwrap();
    let out = output(redlock().args(["acquire", &name, "--ttl", "1m", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let token = stdout(&out).trim().to_string();
    let scratch = Scratch::new();
    let ready = scratch.path("ran");
    let mut waiter = redlock_run()
        .args([
            "--key",
            &name,
            "--redis",
            &url,
            "--wait",
            "30s",
            "--verbose",
            "--",
        ])
        .args(["sh", "-c", &format!("touch '{}'", ready.display())])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let owner = &cluster.nodes[cluster.owner(&format!("redlock:{{{name}}}"))];
    let waiters = format!("redlock:{{{name}}}:waiters");
    assert!(
        eventually(Duration::from_secs(20), || owner
            .cmd::<i64>(&["SCARD", &waiters])
            >= 1),
        "the waiter never joined the waiters"
    );
    assert!(!ready.exists(), "ran while the lock was held");
    let out = output(redlock().args(["release", &name, "--token", &token, "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let status = wait_child(&mut waiter, Duration::from_secs(20));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut waiter.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(ready.exists());
    assert!(err.contains("woken by a release"), "{err}");
}

#[test]
fn cluster_renewals_follow_ask_and_moved_while_the_slot_moves() {
    let cluster = Cluster::start(3);
    let url = cluster.url();
    let key = "redlock:{moving}";
    let from = cluster.owner(key);
    let to = (from + 1) % 3;
    let scratch = Scratch::new();
    let started = scratch.path("started");
    let mut run = redlock_run()
        .args([
            "--key",
            "moving",
            "--redis",
            &url,
            "--ttl",
            "15s",
            "--renew-every",
            "1s",
            "--verbose",
            "--",
        ])
        .args([
            "sh",
            "-c",
            &format!("touch '{}'; sleep 6", started.display()),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for_file(&started, "", Duration::from_secs(10)));
    // Two renewals (every 1s) fall in the ASK window, then two more after the move.
    cluster.move_slot_of(key, to, || std::thread::sleep(Duration::from_millis(2200)));
    assert_eq!(cluster.owner(key), to);
    let status = wait_child(&mut run, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(cluster.keys().is_empty(), "left: {:?}", cluster.keys());
}

// ---------------------------------------------------------------- Sentinel

/// Issue 57: a renewal attempt through Sentinel makes three requests in turn (a
/// sentinel's answer, the renewal, a replica's `WAIT`), each within the node timeout;
/// the budget counts them, so that two attempts still fit before the SIGTERM point.
/// `--ttl 3s --node-timeout 200ms` fits one server (1 s + 2 × 200 ms) and not Sentinel
/// (1 s + 2 × 600 ms > 2.168 s): refused in one line before anything connects. The
/// default node timeout through Sentinel (ttl/20) fits.
#[test]
fn a_sentinel_budget_counts_three_requests_an_attempt() {
    let tight = ["--ttl", "3s", "--node-timeout", "200ms", "--key", "b"];
    let sentinel = output(redlock_run().args(tight).args([
        "--redis",
        "redis+sentinel://127.0.0.1:1/m",
        "--",
        "true",
    ]));
    assert_eq!(code(&sentinel), 64, "{}", stderr(&sentinel));
    assert!(
        stderr(&sentinel).contains("of 3 requests each"),
        "{}",
        stderr(&sentinel)
    );
    assert_eq!(
        stderr(&sentinel).lines().count(),
        1,
        "{}",
        stderr(&sentinel)
    );
    let plain =
        output(
            redlock_run()
                .args(tight)
                .args(["--redis", "redis://127.0.0.1:1", "--", "true"]),
        );
    assert_eq!(code(&plain), 69, "{}", stderr(&plain));
    let default = output(redlock_run().args(["--ttl", "3s", "--key", "b"]).args([
        "--redis",
        "redis+sentinel://127.0.0.1:1/m",
        "--",
        "true",
    ]));
    assert_eq!(code(&default), 69, "{}", stderr(&default));
    // On a Cluster two (the renewal, a replica's WAIT): 1 s + 2 × 2 × 300 ms > 2.168 s.
    let cluster = output(
        redlock_run()
            .args(["--ttl", "3s", "--node-timeout", "300ms", "--key", "b"])
            .args(["--redis", "redis+cluster://127.0.0.1:1", "--", "true"]),
    );
    assert_eq!(code(&cluster), 64, "{}", stderr(&cluster));
    assert!(
        stderr(&cluster).contains("of 2 requests each"),
        "{}",
        stderr(&cluster)
    );
}

/// Issue 59: through Sentinel, a host's first run asks every sentinel and checks the
/// master (`ROLE`, a connection of its own), then asks a sentinel again before its
/// release: 2 connections to the master, 2 to the sentinel (5 with 3 sentinels). It
/// keeps the master's address, and the host's next runs ask one sentinel and, when it
/// names the kept master, connect to the master once; the release's ask reuses that
/// sentinel connection: 1 and 1 (was 2 and 2). After a switchover the sentinel names
/// another master: the run looks it up in full, takes the lock there, and keeps the
/// new address.
#[test]
fn sentinel_a_host_that_knows_the_master_connects_to_it_once() {
    let m = Monitored::start();
    let s = Scratch::new();
    let local = s.path("local").display().to_string();
    let received = |stats: String| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    };
    let connections = |server: &Redis| received(server.cmd(&["INFO", "stats"]));
    let sentinel_connections = || received(m.sentinel.cmd(&["INFO", "stats"]));
    let run = |name: &str| {
        let out = output(
            redlock_run()
                .args(["--key", name, "--redis", &m.url(), "--local-dir", &local])
                .args(["--", "true"]),
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    let mut per_run = Vec::new();
    for name in ["first", "second", "third"] {
        let (master, sentinel) = (connections(&m.master), sentinel_connections());
        run(name);
        per_run.push((
            connections(&m.master) - master - 1,
            sentinel_connections() - sentinel - 1,
        ));
    }
    // (less the reading connection of each count above)
    assert_eq!(
        per_run,
        [(2, 2), (1, 1), (1, 1)],
        "(master, sentinel) connections per run"
    );
    m.fail_over();
    run("after");
    assert!(
        m.replica.exists("redlock:{after}:fence"),
        "not on the new master"
    );
    let before = connections(&m.replica);
    run("after-2");
    assert_eq!(
        connections(&m.replica) - before - 1,
        1,
        "the new master kept"
    );
}

#[test]
fn sentinel_finds_the_master_and_the_new_one_after_failover() {
    let m = Monitored::start();
    let (master, replica, url) = (&m.master, &m.replica, m.url());

    let out = output(redlock().args(["acquire", "before", "--ttl", "1m", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(master.exists("redlock:{before}"));
    // A semaphore through the sentinel: two holders at once, the third is busy.
    let two: Vec<String> = ["--key", "pool", "--redis", &url, "--limit", "2"]
        .map(String::from)
        .to_vec();
    let (a, b) = (Holding::start(&two), Holding::start(&two));
    assert!(master.exists("redlock:{pool}:slot:2"));
    assert_eq!(try_once(&two, "true").0, 75);
    assert_eq!((a.finish().0, b.finish().0), (0, 0));
    // Fencing numbers drawn through the sentinel, before the failover.
    let fence = || -> u64 {
        let out = output(
            redlock_run()
                .args(["--key", "fenced", "--redis", &url, "--"])
                .args(["sh", "-c", "echo \"$REDLOCK_FENCE\""]),
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out).trim().parse().expect("a fencing number")
    };
    let before = [fence(), fence()];
    assert!(before[0] < before[1], "{before:?}");

    m.fail_over();

    // New runs find the new master.
    let out = output(
        redlock_run()
            .args(["--key", "after", "--redis", &url, "--"])
            .args(["sh", "-c", "echo ran"]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ran\n");
    let out = output(redlock().args(["acquire", "after2", "--ttl", "1m", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(replica.exists("redlock:{after2}"), "not on the new master");
    // The new master lost the counter (as a replica that missed the last acquisitions
    // would have): the next number is still larger than every one before.
    let _: i64 = replica.cmd(&["DEL", "redlock:{fenced}:fence"]);
    let after = fence();
    assert!(after > before[1], "{after} after {before:?}");
}

#[test]
fn sentinel_errors_unknown_master_and_no_sentinel() {
    let master = Redis::start();
    let sentinel = Sentinel::start("m", master.port);
    let url = format!("redis+sentinel://127.0.0.1:{}/nosuch", sentinel.port);
    let out = output(redlock_run().args(["--key", "k", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), codes::REDIS, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no master named \"nosuch\""),
        "{}",
        stderr(&out)
    );

    let dead = free_port();
    let url = format!("redis+sentinel://127.0.0.1:{dead}/m");
    let out = output_within(
        redlock_run().args(["--key", "k", "--redis", &url, "--", "true"]),
        Duration::from_secs(10),
    );
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    // A dead first sentinel does not stop a live second one.
    let url = format!(
        "redis+sentinel://127.0.0.1:{dead},127.0.0.1:{}/m",
        sentinel.port
    );
    let out = output(redlock_run().args(["--key", "k", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

// ---------------------------------------------------------------- TLS

fn tls_run(url: &str, extra: &[String]) -> std::process::Output {
    output_within(
        redlock_run()
            .args(["--key", "t", "--redis", url])
            .args(extra)
            .args(["--", "sh", "-c", "echo held"]),
        Duration::from_secs(20),
    )
}

#[test]
fn tls_verified_untrusted_mismatched_and_insecure() {
    let certs = Certs::make();
    let server = Redis::start_tls(&certs, false);
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let ca = args(&["--tls-ca", &certs.arg("ca.crt")]);

    // Verified against the CA given.
    let out = tls_run(&url, &ca);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "held\n");
    // The same through the environment.
    let out = output_within(
        redlock_run()
            .env("REDLOCK_TLS_CA", certs.path("ca.crt"))
            .args(["--key", "t", "--redis", &url, "--", "true"]),
        Duration::from_secs(20),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    // Not trusted: system roots only, or another CA. One line, exit 69.
    for extra in [vec![], args(&["--tls-ca", &certs.arg("rogue-ca.crt")])] {
        let out = tls_run(&url, &extra);
        assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("not trusted") && err.contains("--tls-ca"),
            "{err}"
        );
    }
    // A name the certificate lists works; a server whose certificate names another
    // host is refused like an untrusted one.
    let by_name = format!("rediss://localhost:{}", server.port);
    let out = tls_run(&by_name, &ca);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let wrong = Redis::start_tls_as(&certs, "wrong-name", false);
    let out = tls_run(&format!("rediss://127.0.0.1:{}", wrong.port), &ca);
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("another host name"),
        "{}",
        stderr(&out)
    );
    // A key given as the CA is a usage error naming the flag.
    let out = tls_run(&url, &args(&["--tls-ca", &certs.arg("ca.key")]));
    assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
    assert!(stderr(&out).contains("--tls-ca"), "{}", stderr(&out));

    // Insecure: works, and says so loudly.
    let out = tls_run(&url, &args(&["--tls-insecure-skip-verify"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("WARNING: TLS certificate verification is OFF"));
    let out = tls_run(&format!("{url}#insecure"), &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("WARNING"));

    // redis:// to the TLS-only port fails fast with the hint.
    let plain = format!("redis://127.0.0.1:{}", server.port);
    let out = tls_run(&plain, &[]);
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert!(stderr(&out).contains("rediss://"), "{}", stderr(&out));
    // TLS options with a plain URL are a usage error.
    let out = tls_run(&plain, &ca);
    assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));

    // rediss:// to a plain-text port fails fast with the mirror hint.
    let cleartext = Redis::start();
    let out = tls_run(&format!("rediss://127.0.0.1:{}", cleartext.port), &ca);
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert!(stderr(&out).contains("TLS-enabled"), "{}", stderr(&out));
}

#[test]
fn tls_mutual_needs_the_client_certificate() {
    let certs = Certs::make();
    let server = Redis::start_tls(&certs, true);
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let ca = args(&["--tls-ca", &certs.arg("ca.crt")]);
    let out = tls_run(&url, &ca);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("--tls-cert"), "{}", stderr(&out));
    let mut mutual = ca.clone();
    mutual.extend(args(&[
        "--tls-cert",
        &certs.arg("client.crt"),
        "--tls-key",
        &certs.arg("client.key"),
    ]));
    let out = tls_run(&url, &mutual);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "held\n");
    // Half a pair is a usage error.
    let mut half = ca.clone();
    half.extend(args(&["--tls-cert", &certs.arg("client.crt")]));
    let out = tls_run(&url, &half);
    assert_eq!(code(&out), codes::USAGE, "{}", stderr(&out));
}

// ---------------------------------------------------------------- ACL

/// The least-privilege user as docs/operations/deployments.md and
/// docs/reference/configuration.md give it (single server; one line, the same in both),
/// with the password the tests use.
fn locker_acl() -> Vec<String> {
    let line = |doc: &str, password: &str| -> String {
        let text =
            std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("ACL SETUSER locker reset on >"))
            .unwrap_or_else(|| panic!("{doc} gives no least-privilege user"));
        line.replace(password, "Sekr1t-pw-XYZ")
    };
    let deployments = line("docs/operations/deployments.md", "LONG-RANDOM-PASSWORD");
    let configuration = line("docs/reference/configuration.md", "PASSWORD");
    assert_eq!(
        deployments, configuration,
        "the two documented users differ"
    );
    deployments.split(' ').map(String::from).collect()
}

/// Applies the documented least-privilege user on `server`.
fn add_locker(server: &Redis) {
    let acl = locker_acl();
    let args: Vec<&str> = acl.iter().map(String::as_str).collect();
    let _: () = server.cmd(&args);
}

#[test]
fn acl_least_privilege_user_runs_every_verb() {
    let redis = Redis::start();
    add_locker(&redis);
    let url = format!("redis://locker:Sekr1t-pw-XYZ@127.0.0.1:{}", redis.port);
    let check = |out: &std::process::Output, want: i32| {
        assert_eq!(code(out), want, "{}", stderr(out));
        assert!(!stderr(out).contains("Sekr1t"), "{}", stderr(out));
        assert!(!stdout(out).contains("Sekr1t"), "{}", stdout(out));
    };
    let out =
        output(redlock_run().args(["--key", "a", "--redis", &url, "--verbose", "--", "true"]));
    check(&out, 0);
    // An empty script cache: this user may not EVAL, so the scripts are loaded by
    // SCRIPT LOAD and run by EVALSHA again.
    let _: String = redis.cmd(&["SCRIPT", "FLUSH"]);
    let _: String = redis.cmd(&["CONFIG", "RESETSTAT"]);
    check(
        &output(redlock_run().args(["--key", "a", "--redis", &url, "--", "true"])),
        0,
    );
    let stats: String = redis.cmd(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_script|load:calls=2"), "{stats}");
    // The run history and --once-per.
    let once = [
        "--key",
        "o",
        "--redis",
        &url,
        "--once-per",
        "1h",
        "--",
        "true",
    ];
    check(&output(redlock_run().args(once)), 0);
    check(&output(redlock_run().args(once)), 75);
    let out = output(redlock().args(["history", "o", "--redis", &url]));
    check(&out, 0);
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
    let out = output(redlock().args(["acquire", "b", "--ttl", "1m", "--redis", &url]));
    check(&out, 0);
    let token = stdout(&out).trim().to_string();
    check(&output(redlock().args(["status", "b", "--redis", &url])), 0);
    let out = output(redlock().args(["list", "--redis", &url]));
    check(&out, 0);
    assert!(stdout(&out).starts_with("b\t"), "{}", stdout(&out));
    let extend = [
        "extend", "b", "--token", &token, "--ttl", "1m", "--redis", &url,
    ];
    check(&output(redlock().args(extend)), 0);
    // A waiter joins the waiters, blocks on the wake list and is woken by the release.
    let mut waiter = redlock_run()
        .args([
            "--key",
            "b",
            "--redis",
            &url,
            "--wait",
            "30s",
            "--verbose",
            "--",
            "true",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(20), || redis
            .cmd::<i64>(&["SCARD", "redlock:{b}:waiters"])
            >= 1),
        "the waiter never joined the waiters"
    );
    check(
        &output(redlock().args(["release", "b", "--token", &token, "--redis", &url])),
        0,
    );
    let status = wait_child(&mut waiter, Duration::from_secs(20));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut waiter.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("woken by a release"), "{err}");
    assert!(!err.contains("no release notifications"), "{err}");
    check(
        &output(redlock().args(["release", "a", "--force", "--redis", &url])),
        1,
    );
    assert!(redis.keys().is_empty(), "{:?}", redis.keys());

    // From a file, and from the environment: the password is not in argv.
    let scratch = Scratch::new();
    let file = scratch.path("url");
    std::fs::write(&file, format!("# lock server\n{url}\n")).unwrap();
    let out = output(redlock_run().arg("--redis-url-file").arg(&file).args([
        "--key",
        "f",
        "--verbose",
        "--",
        "true",
    ]));
    check(&out, 0);
    let out = output(redlock_run().env("REDLOCK_REDIS_URL", &url).args([
        "--key",
        "e",
        "--verbose",
        "--",
        "true",
    ]));
    check(&out, 0);
}

#[test]
fn acl_wrong_password_missing_password_and_missing_permission() {
    let redis = Redis::start();
    add_locker(&redis);
    let port = redis.port;
    for url in [
        format!("redis://locker:Wr0ng-Sekr1t@127.0.0.1:{port}"),
        format!("redis://nobody:Sekr1t-pw-XYZ@127.0.0.1:{port}"),
    ] {
        let out =
            output(redlock_run().args(["--key", "k", "--redis", &url, "--verbose", "--", "true"]));
        assert_eq!(code(&out), codes::AUTH, "{}", stderr(&out));
        assert!(!stderr(&out).contains("Sekr1t"), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    let protected = Redis::start_with(&["--requirepass", "Sekr1t-pw-XYZ"]);
    let out = output(redlock_run().args([
        "--key",
        "k",
        "--redis",
        &format!("redis://127.0.0.1:{}", protected.port),
        "--",
        "true",
    ]));
    assert_eq!(code(&out), codes::AUTH, "{}", stderr(&out));

    // A user without EVALSHA: the permission error names the command.
    let _: () = redis.cmd(&["ACL", "SETUSER", "locker", "-evalsha"]);
    let url = format!("redis://locker:Sekr1t-pw-XYZ@127.0.0.1:{port}");
    let out = output(redlock_run().args(["--key", "k", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), codes::AUTH, "{}", stderr(&out));
    assert!(
        stderr(&out).to_lowercase().contains("evalsha"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("Sekr1t"), "{}", stderr(&out));
    assert!(redis.keys().is_empty(), "{:?}", redis.keys());
}

// ---------------------------------------------------------------- Failing nodes

#[test]
fn cluster_with_a_frozen_master_fails_its_slots_in_bounded_time_and_serves_the_rest() {
    let cluster = Cluster::start(3);
    let url = cluster.url();
    let name_on = |node: usize| {
        (0..)
            .map(|i| format!("f{i}"))
            .find(|n| cluster.owner(&format!("redlock:{{{n}}}")) == node)
            .unwrap()
    };
    let (alive, frozen) = (name_on(0), name_on(2));
    cluster.nodes[2].pause();
    let run = |name: &str| {
        let started = std::time::Instant::now();
        let out = output_within(
            redlock_run().args(["--key", name, "--redis", &url, "--ttl", "3s", "--", "true"]),
            Duration::from_secs(30),
        );
        (out, started.elapsed())
    };
    let (out, took) = run(&alive);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    eprintln!("live slot took {took:?}");
    let (out, took) = run(&frozen);
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    eprintln!("frozen slot took {took:?}: {}", stderr(&out));
    assert!(took < Duration::from_secs(10), "{took:?}");
    cluster.nodes[2].resume();
}

#[test]
fn sentinel_frozen_sentinel_and_frozen_master_are_bounded() {
    let master = Redis::start();
    let first = Sentinel::start("m", master.port);
    let second = Sentinel::start("m", master.port);
    let url = format!(
        "redis+sentinel://127.0.0.1:{},127.0.0.1:{}/m",
        first.port, second.port
    );
    let pid = |s: &Sentinel| nix::unistd::Pid::from_raw(s.pid() as i32);
    nix::sys::signal::kill(pid(&first), nix::sys::signal::Signal::SIGSTOP).unwrap();
    let started = std::time::Instant::now();
    let out = output_within(
        redlock_run().args(["--key", "k", "--redis", &url, "--ttl", "3s", "--", "true"]),
        Duration::from_secs(30),
    );
    nix::sys::signal::kill(pid(&first), nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    master.pause();
    let started = std::time::Instant::now();
    let out = output_within(
        redlock_run().args(["--key", "k", "--redis", &url, "--ttl", "3s", "--", "true"]),
        Duration::from_secs(30),
    );
    master.resume();
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn acl_least_privilege_user_in_a_cluster_and_behind_sentinel() {
    let cluster = Cluster::start(3);
    for node in &cluster.nodes {
        add_locker(node);
        let _: () = node.cmd(&["ACL", "SETUSER", "locker", "+cluster|slots", "+wait"]);
    }
    let url = cluster
        .url()
        .replace("redis+cluster://", "redis+cluster://locker:Sekr1t-pw-XYZ@");
    let out = output(redlock_run().args(["--key", "c", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = output(redlock().args(["acquire", "c", "--ttl", "1m", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = output(redlock().args(["list", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("c\t"), "{}", stdout(&out));
    let out = output(redlock().args(["release", "c", "--force", "--redis", &url]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let master = Redis::start();
    add_locker(&master);
    let _: () = master.cmd(&["ACL", "SETUSER", "locker", "+role"]);
    let sentinel = Sentinel::start("m", master.port);
    let url = format!(
        "redis+sentinel://locker:Sekr1t-pw-XYZ@127.0.0.1:{}/m",
        sentinel.port
    );
    let out = output(redlock_run().args(["--key", "s", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("Sekr1t"));
}

#[test]
fn sentinel_failover_during_a_run_moves_renewals_to_the_new_master() {
    let m = Monitored::start();
    let (replica, url) = (&m.replica, m.url());
    let scratch = Scratch::new();
    let started = scratch.path("started");
    let failed_over = scratch.path("failed-over");
    // The command runs until the test says the failover is over, then 3 s more: at
    // least two renewals (every 1 s) must reach the new master. The long ttl keeps
    // the replicated key alive on the new master through the failover, during which
    // renewals still land on the old master and are not replicated.
    let mut run = redlock_run()
        .args([
            "--key",
            "fo",
            "--redis",
            &url,
            "--ttl",
            "15s",
            "--renew-every",
            "1s",
            "--verbose",
            "--",
        ])
        .args([
            "sh",
            "-c",
            &format!(
                "touch '{}'; while [ ! -e '{}' ]; do sleep 0.1; done; sleep 3",
                started.display(),
                failed_over.display()
            ),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for_file(&started, "", Duration::from_secs(10)));
    m.fail_over();
    std::fs::write(&failed_over, "").unwrap();
    let status = wait_child(&mut run, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
    // The key (with our token) was replicated before the failover, so the renewals
    // on the new master succeed and the command finishes under the lock.
    assert_eq!(status.code(), Some(0), "{err}");
    let last_renewal = err.rfind("lock renewed").expect("renewed");
    assert!(
        last_renewal > err.find("renewal failed").unwrap_or(0),
        "{err}"
    );
    assert!(
        !replica.exists("redlock:{fo}"),
        "not released on the new master"
    );
}

#[test]
fn tls_cluster_and_tls_list() {
    let certs = Certs::make();
    let cluster = Cluster::start_tls(3, &certs);
    let url = cluster
        .url()
        .replace("redis+cluster://", "rediss+cluster://");
    let ca = certs.arg("ca.crt");
    let a = args(&["--key", "tc", "--redis", &url, "--tls-ca", &ca]);
    let c = contend(&a, 4, 10);
    assert_eq!((c.sections, c.overlaps, c.counter), (40, 0, 40), "{c:?}");
    assert!(c.failures.is_empty(), "{c:?}");
    for name in ["x1", "x2", "x3", "x4"] {
        let out = output(redlock().args([
            "acquire", name, "--ttl", "1m", "--redis", &url, "--tls-ca", &ca,
        ]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = output(redlock().args(["list", "--redis", &url, "--tls-ca", &ca]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let listed: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(listed, ["x1", "x2", "x3", "x4"]);
    // Without the CA: refused, one line.
    let out = output(redlock().args(["list", "--redis", &url]));
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn tls_sentinel_and_master() {
    let certs = Certs::make();
    let master = Redis::start_tls(&certs, false);
    let sentinel = Sentinel::start_tls("m", master.port, &certs);
    let url = format!("rediss+sentinel://127.0.0.1:{}/m", sentinel.port);
    let ca = certs.arg("ca.crt");
    let out = output(
        redlock_run()
            .args(["--key", "ts", "--redis", &url, "--tls-ca", &ca, "--"])
            .args(["sh", "-c", "echo held"]),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "held\n");
    let out = output(redlock_run().args(["--key", "ts", "--redis", &url, "--", "true"]));
    assert_eq!(code(&out), codes::UNREACHABLE, "{}", stderr(&out));
    assert!(stderr(&out).contains("--tls-ca"), "{}", stderr(&out));
}

/// A command section for the switchover tests: it takes the witness file with
/// `flock -n` (held by another section: an overlap, written to the journal as such),
/// writes BEGIN, runs `body`, writes END.
fn witnessed(scratch: &Scratch, who: &str, body: &str) -> String {
    format!(
        "exec 9>>'{witness}'\nif flock -n 9; then\n  echo \"BEGIN {who}\" >> '{journal}'\n  \
         {body}\n  echo \"END {who}\" >> '{journal}'\nelse\n  echo \"OVERLAP {who}\" >> '{journal}'\nfi",
        witness = scratch.path("witness").display(),
        journal = scratch.path("journal").display(),
    )
}

/// The journal's lines.
fn journal(scratch: &Scratch) -> Vec<String> {
    read_trimmed(&scratch.path("journal"))
        .lines()
        .map(String::from)
        .collect()
}

/// The holder's section: ready, then on until the test says `go`, then `then` more (its
/// work, long enough that the lock must live through renewals on the new master).
fn holder_body(scratch: &Scratch, then: &str) -> String {
    format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; sleep {then}",
        scratch.path("started").display(),
        scratch.path("go").display()
    )
}

#[test]
fn sentinel_switchover_under_a_holder_and_a_waiting_newcomer_keeps_one_holder() {
    let m = Monitored::start();
    let url = m.url();
    let scratch = Scratch::new();
    // ttl 3 s (a renewal every 1 s): the replicated key expires on the new master 3 s
    // after the switch unless the holder renews it there.
    let args = args(&["--key", "sw", "--redis", &url, "--ttl", "3s"]);
    let mut holder_args = args.clone();
    holder_args.extend(["--events".to_string(), "-".to_string()]);
    let holder = start_run(
        &holder_args,
        &witnessed(&scratch, "holder", &holder_body(&scratch, "6")),
    );
    assert!(wait_for_file(
        &scratch.path("started"),
        "",
        Duration::from_secs(10)
    ));
    m.switch_over();
    // A run that connects after the switch goes to the new master.
    let ((held, held_err), (came, came_err)) =
        newcomer_on_the_new_master(&m, &scratch, &args, "sw", holder);
    let lines = journal(&scratch);
    assert!(
        !lines.iter().any(|l| l.starts_with("OVERLAP")),
        "{lines:?}\n{held_err}\n{came_err}"
    );
    assert_eq!(
        lines,
        [
            "BEGIN holder",
            "END holder",
            "BEGIN newcomer",
            "END newcomer"
        ],
        "{held_err}\n{came_err}"
    );
    assert_eq!(held, 0, "{held_err}");
    assert_eq!(came, 0, "{came_err}");
    eprintln!("the holder said:\n{held_err}");
    assert!(held_err.contains("followed"), "{held_err}");
    assert!(held_err.contains("\"event\":\"followed\""), "{held_err}");
    // Both runs' records live on the new master, also once the old one is resynced.
    m.wait_demoted();
    let history = history_json(&m.replica, "sw");
    let runs = history["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{history}");
}

/// The same with a set (issue 57, review-7 finding 4: "another run found its lock
/// 'expires in 1s' while the set's command had 6 s left"): a run of two names holds
/// both through a switchover (each name's renewal follows), a newcomer for one of them
/// waits on the new master and runs after the set's command ended; each name's history
/// on the new master has its runs.
#[test]
fn sentinel_switchover_under_a_set_keeps_both_names_and_one_holder() {
    let m = Monitored::start();
    let url = m.url();
    let scratch = Scratch::new();
    let set = args(&["--key", "sa", "--key", "sb", "--redis", &url, "--ttl", "3s"]);
    let holder = start_run(
        &set,
        &witnessed(&scratch, "holder", &holder_body(&scratch, "6")),
    );
    assert!(wait_for_file(
        &scratch.path("started"),
        "",
        Duration::from_secs(10)
    ));
    m.switch_over();
    let one = args(&["--key", "sb", "--redis", &url, "--ttl", "3s"]);
    let ((held, held_err), (came, came_err)) =
        newcomer_on_the_new_master(&m, &scratch, &one, "sb", holder);
    let lines = journal(&scratch);
    assert_eq!(
        lines,
        [
            "BEGIN holder",
            "END holder",
            "BEGIN newcomer",
            "END newcomer"
        ],
        "{held_err}\n{came_err}"
    );
    assert_eq!((held, came), (0, 0), "{held_err}\n{came_err}");
    assert!(held_err.contains("followed"), "{held_err}");
    m.wait_demoted();
    for (name, runs) in [("sa", 1), ("sb", 2)] {
        let history = history_json(&m.replica, name);
        let got = history["runs"].as_array().expect("runs").len();
        assert_eq!(got, runs, "{name}: {history}");
    }
}

#[test]
fn sentinel_crash_failover_under_a_holder_keeps_its_lock() {
    let mut m = Monitored::start();
    let url = m.url();
    let scratch = Scratch::new();
    // ttl 10 s: the crash failover (1 s to call the master down, then the promotion)
    // fits well before the holder's SIGTERM point.
    let args = args(&["--key", "crash", "--redis", &url, "--ttl", "10s"]);
    let holder = start_run(
        &args,
        &witnessed(&scratch, "holder", &holder_body(&scratch, "4")),
    );
    assert!(wait_for_file(
        &scratch.path("started"),
        "",
        Duration::from_secs(10)
    ));
    // The grant was acknowledged by the replica (WAIT on the master) before the
    // command started: a crash now cannot lose it.
    let commandstats: String = m.master.cmd(&["INFO", "commandstats"]);
    assert!(commandstats.contains("cmdstat_wait:"), "{commandstats}");
    m.master.crash();
    m.wait_promoted();
    let ((held, held_err), (came, came_err)) =
        newcomer_on_the_new_master(&m, &scratch, &args, "crash", holder);
    let lines = journal(&scratch);
    assert_eq!(
        lines,
        [
            "BEGIN holder",
            "END holder",
            "BEGIN newcomer",
            "END newcomer"
        ],
        "{held_err}\n{came_err}"
    );
    assert_eq!(held, 0, "{held_err}");
    assert_eq!(came, 0, "{came_err}");
    assert_eq!(lost_lines(&held_err), 0, "{held_err}");
}

#[test]
fn sentinel_switchover_under_an_elect_leader_keeps_one_leader() {
    let m = Monitored::start();
    let url = m.url();
    let scratch = Scratch::new();
    // A daemon that holds the witness while it leads, and says so in the journal.
    let daemon = witnessed(
        &scratch,
        "$1",
        "trap 'echo \"STOP $1\" >> \"$2\"; exit 0' TERM; while :; do sleep 0.05; done",
    );
    let daemon = scratch.script("daemon", &daemon);
    let journal_path = scratch.path("journal").display().to_string();
    let candidate = |host: &str| {
        let events = scratch.path(&format!("events-{host}"));
        let local = scratch.path(&format!("local-{host}"));
        let args = args(&[
            "--key",
            "svc",
            "--redis",
            &url,
            "--elect",
            "--ttl",
            "3s",
            "--local-dir",
            &local.display().to_string(),
            "--events",
            &events.display().to_string(),
            "--",
            &daemon.display().to_string(),
            host,
            &journal_path,
        ]);
        let child = redlock_run()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        (child, events)
    };
    let (a, a_events) = candidate("a");
    assert!(wait_for_file(
        &scratch.path("journal"),
        "BEGIN a",
        Duration::from_secs(10)
    ));
    let (b, _) = candidate("b");
    m.switch_over();
    // A candidate that connects after the switch goes to the new master.
    let (c, _) = candidate("c");
    // The leader renews on the new master for longer than a ttl (each renewal there
    // after it followed), while c waits there.
    let renewed_there = || {
        let events = std::fs::read_to_string(&a_events).unwrap_or_default();
        let followed = events.find("\"event\":\"followed\"");
        followed.is_some_and(|at| events[at..].matches("\"event\":\"renewed\"").count() >= 4)
    };
    let settled = eventually(Duration::from_secs(20), renewed_there);
    for child in [&a, &b, &c] {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let mut errs = String::new();
    for child in [a, b, c] {
        errs.push_str(&finish(child, Duration::from_secs(30)).1);
    }
    let lines = journal(&scratch);
    assert!(
        settled,
        "the leader did not renew on the new master: {lines:?}\n{errs}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("OVERLAP")),
        "{lines:?}\n{errs}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("BEGIN")).count(),
        1,
        "{lines:?}\n{errs}"
    );
}

#[test]
fn sentinel_grant_no_replica_acknowledged_is_a_warning_and_the_run_goes_on() {
    let m = Monitored::start();
    let url = m.url();
    // A frozen replica stays listed as connected, and acknowledges nothing.
    m.replica.pause();
    let out = output(redlock_run().args([
        "--key", "unacked", "--redis", &url, "--ttl", "3s", "--events", "-", "--", "true",
    ]));
    m.replica.resume();
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("not acknowledged by a replica"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("the grant")
            && warnings[0].contains("a crash failover now could lose the lock"),
        "{err}"
    );
    assert!(err.contains("\"event\":\"unacknowledged\""), "{err}");
    // A healthy replica acknowledges: nothing said (a longer ttl, so a loaded test
    // machine has the whole default node timeout for it).
    let out = output(redlock_run().args([
        "--key", "acked", "--redis", &url, "--ttl", "30s", "--", "true",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn sentinel_switchover_to_a_replica_without_the_lock_stops_the_holder() {
    let m = Monitored::start();
    let url = m.url();
    let scratch = Scratch::new();
    let args = args(&[
        "--key", "gone", "--redis", &url, "--ttl", "3s", "--events", "-",
    ]);
    let started = scratch.path("started");
    let holder = start_run(
        &args,
        &format!("touch '{}'; exec sleep 60", started.display()),
    );
    assert!(wait_for_file(&started, "", Duration::from_secs(10)));
    // The replica loses the lock (as one that never received the grant would not have
    // it): a writable replica's own DEL, which nothing replicates back.
    let _: () = m.replica.cmd(&["CONFIG", "SET", "replica-read-only", "no"]);
    let _: i64 = m.replica.cmd(&["DEL", "redlock:{gone}"]);
    m.switch_over();
    let (code, err) = finish(holder, Duration::from_secs(60));
    // The holder's next renewal follows the new master, finds no key there: lost, its
    // command stopped (not left running on the old master until its demotion).
    assert_eq!(code, codes::LOST, "{err}");
    assert!(
        err.contains("followed a switchover or failover") && err.contains("the lock is not there"),
        "{err}"
    );
    assert!(err.contains("\"holds\":false"), "{err}");
    let said = err.lines().filter(|l| !l.starts_with('{'));
    assert_eq!(said.filter(|l| l.contains(" lost")).count(), 1, "{err}");
}

/// A `--wait` newcomer started after the master changed: it must wait on the new master
/// (where `name`'s lock replicated); then the holder is told to end (`go`). Each one's
/// (status, stderr).
fn newcomer_on_the_new_master(
    m: &Monitored,
    scratch: &Scratch,
    args: &[String],
    name: &str,
    holder: std::process::Child,
) -> ((i32, String), (i32, String)) {
    let mut newcomer_args = args.to_vec();
    newcomer_args.extend(["--wait".to_string(), "60s".to_string()]);
    let newcomer = start_run(&newcomer_args, &witnessed(scratch, "newcomer", "true"));
    assert!(
        eventually(Duration::from_secs(10), || m
            .replica
            .waiting_blocked(name, 1)),
        "the newcomer does not wait on the new master"
    );
    std::fs::write(scratch.path("go"), "").unwrap();
    let held = finish(holder, Duration::from_secs(60));
    (held, finish(newcomer, Duration::from_secs(60)))
}

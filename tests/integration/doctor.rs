//! `redlock doctor`: each bad setup built on real servers, checked by its finding and
//! the exit status (0 nothing at warning or worse, 1 a warning, 2 an error; the usual
//! codes when a node cannot be checked at all).

use std::process::Output;

use crate::harness::*;

/// A server that keeps its locks over a restart (AOF on).
fn persistent(extra: &[&str]) -> Redis {
    let mut args = vec!["--appendonly", "yes"];
    args.extend_from_slice(extra);
    Redis::start_with(&args)
}

fn doctor(url: &str, extra: &[&str]) -> Output {
    let mut cmd = redlock();
    cmd.args(["doctor", "--redis", url]).args(extra);
    output(&mut cmd)
}

/// The finding lines of `check` at `severity` in the text report.
fn lines<'a>(out: &'a str, severity: &str, check: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| {
            let mut words = l.split_whitespace();
            words.next() == Some(severity) && words.next() == Some(check)
        })
        .collect()
}

#[test]
fn a_healthy_server_exits_0() {
    let redis = persistent(&["--appendfsync", "always"]);
    let out = doctor(&redis.url(), &["--ttl", "10s"]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    for check in [
        "version",
        "role",
        "eviction",
        "persistence",
        "acl",
        "clock",
        "latency",
        "names",
    ] {
        assert_eq!(lines(&text, "ok", check).len(), 1, "{check}: {text}");
    }
    assert!(text.contains("with --ttl 10s"), "{text}");
    assert!(text.contains("0 lock names under \"redlock:\""), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("summary: 1 node, 0 errors"),
        "{text}"
    );
    assert!(
        redis.keys().is_empty(),
        "doctor writes nothing: {:?}",
        redis.keys()
    );
}

/// Doctor counts the names that keep a fence counter and history between uses.
#[test]
fn doctor_counts_the_names_kept() {
    let redis = Redis::start();
    for name in ["a", "b", "c"] {
        assert_eq!(try_once(&lock_args(&redis, name), "true").0, 0);
    }
    let text = stdout(&doctor(&redis.url(), &[]));
    let found = lines(&text, "ok", "names");
    assert_eq!(found.len(), 1, "{text}");
    assert!(found[0].contains("3 lock names"), "{text}");
}

#[test]
fn allkeys_eviction_is_an_error() {
    let redis = persistent(&["--maxmemory-policy", "allkeys-lru"]);
    let out = doctor(&redis.url(), &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 2, "{text}{}", stderr(&out));
    let found = lines(&text, "error", "eviction");
    assert_eq!(found.len(), 1, "{text}");
    assert!(found[0].contains("allkeys-lru"), "{text}");
    assert!(found[0].contains("fix: CONFIG SET maxmemory-policy noeviction"));
}

#[test]
fn a_replica_is_an_error() {
    let master = persistent(&[]);
    let replica = persistent(&[]);
    let port = master.port.to_string();
    let _: () = replica.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    let out = doctor(&replica.url(), &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 2, "{text}{}", stderr(&out));
    let found = lines(&text, "error", "role");
    assert_eq!(found.len(), 1, "{text}");
    assert!(found[0].contains("READONLY"), "{text}");
    assert!(found[0].contains(&format!("127.0.0.1:{port}")), "{text}");
}

#[test]
fn an_acl_user_without_evalsha_is_an_error_and_the_password_stays_hidden() {
    let redis = persistent(&[]);
    let acl = [
        "ACL",
        "SETUSER",
        "locker",
        "on",
        ">Sekr1t-pw-XYZ",
        "~*",
        "+@all",
        "-evalsha",
    ];
    let _: () = redis.cmd(&acl);
    let url = format!("redis://locker:Sekr1t-pw-XYZ@127.0.0.1:{}", redis.port);
    for json in [false, true] {
        let out = doctor(&url, if json { &["--json"] } else { &[] });
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(code(&out), 2, "{text}{err}");
        assert!(
            !text.contains("Sekr1t") && !err.contains("Sekr1t"),
            "{text}{err}"
        );
        if json {
            continue;
        }
        let found = lines(&text, "error", "acl");
        assert_eq!(found.len(), 1, "{text}");
        assert!(found[0].contains("EVALSHA denied"), "{text}");
        assert!(
            found[0]
                .contains("breaks run, run --wait, acquire, extend, status, list, release, forget, run --limit, run --fair, run --supersede, preempt, run --once-per, wait"),
            "{text}"
        );
        assert!(found[0].contains("+evalsha"), "{text}");
        assert!(text.starts_with("redis://locker:***@127.0.0.1:"), "{text}");
    }
}

/// A least-privilege user (no ACL DRYRUN, INFO, CONFIG or TIME): the ACL is checked
/// with the user's own rights, and the checks it may not run are said, not fatal.
#[test]
fn a_least_privilege_user_is_checked_with_its_own_rights() {
    let redis = persistent(&[]);
    let mut acl = vec![
        "ACL",
        "SETUSER",
        "locker",
        "reset",
        "on",
        ">Sekr1t-pw-XYZ",
        "~redlock:*",
        "+evalsha",
        "+script|load",
    ];
    // Everything the scripts and verbs need but BLPOP (waiting, and a holder's wait for
    // a request to stop).
    acl.extend(
        "+type +set +get +del +exists +hset +hsetnx +hget +hgetall +hincrby +pexpire +pttl +incr +sadd +srem +scard +sismember +lpush +scan +time +lrange +lrem +lset +ltrim +zadd +zrem +zrange +zrangebyscore +zscore +zrank +zcard +hdel"
            .split(' '),
    );
    let _: () = redis.cmd(&acl);
    let url = format!("redis://locker:Sekr1t-pw-XYZ@127.0.0.1:{}", redis.port);
    let out = doctor(&url, &["--key", "job"]);
    let text = stdout(&out);
    assert_eq!(code(&out), 2, "{text}{}", stderr(&out));
    let found = lines(&text, "error", "acl");
    assert_eq!(found.len(), 1, "{text}");
    assert!(
        found[0].contains("BLPOP on redlock:{job}:wake:TOKEN, redlock:{job}:wake denied"),
        "{text}"
    );
    assert!(
        found[0].contains("breaks run, run --fair, run --supersede, run --wait, acquire, wait"),
        "{text}"
    );
    assert!(found[0].contains("redis.acl_check_cmd"), "{text}");
    let blind = lines(&text, "info", "server");
    assert_eq!(blind.len(), 1, "{text}");
    let why = "could not check version, role, eviction and persistence (no permission for INFO)";
    assert!(blind[0].contains(why), "{text}");
    assert!(!text.contains("Sekr1t"), "{text}");

    // With BLPOP granted, INFO is missing: the lock-delay's check after every grant (a
    // warning: runs go on, but a restart goes unseen).
    let _: () = redis.cmd(&["ACL", "SETUSER", "locker", "+blpop"]);
    let out = doctor(&url, &["--key", "job"]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    let found = lines(&text, "warning", "acl");
    assert_eq!(found.len(), 1, "{text}");
    assert!(
        found[0].contains("INFO denied, breaks run (the lock-delay's check)"),
        "{text}"
    );
    // With INFO granted too, nothing is wrong that doctor could see.
    let _: () = redis.cmd(&["ACL", "SETUSER", "locker", "+info"]);
    let out = doctor(&url, &["--key", "job"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn config_denied_is_reported_not_fatal() {
    let redis = Redis::start();
    let acl = [
        "ACL",
        "SETUSER",
        "ops",
        "on",
        ">Sekr1t-pw-XYZ",
        "~*",
        "+@all",
        "-config",
    ];
    let _: () = redis.cmd(&acl);
    let url = format!("redis://ops:Sekr1t-pw-XYZ@127.0.0.1:{}", redis.port);
    let out = doctor(&url, &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    let found = lines(&text, "info", "persistence");
    assert_eq!(found.len(), 1, "{text}");
    assert!(
        found[0].contains("could not check (no permission for CONFIG)"),
        "{text}"
    );
}

#[test]
fn no_persistence_is_a_warning() {
    let redis = Redis::start_with(&["--save", "", "--appendonly", "no"]);
    let out = doctor(&redis.url(), &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    let found = lines(&text, "warning", "persistence");
    assert_eq!(found.len(), 1, "{text}");
    assert!(found[0].contains("comes back empty"), "{text}");
    assert!(text.lines().last().unwrap().ends_with("exit 1"), "{text}");
}

#[test]
fn json_has_the_documented_fields() {
    let redis = Redis::start();
    let out = doctor(&redis.url(), &["--json"]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let report: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    let node = &report["nodes"][0];
    assert_eq!(node["node"], redis.url().as_str());
    assert_eq!(node["reached"], true);
    assert_eq!(node["role"], "master");
    assert!(node["rtt_p50_ms"].is_number() && node["rtt_p99_ms"].is_number());
    assert!(node["clock_offset_ms"].is_number());
    let findings = report["findings"].as_array().expect("findings");
    for f in findings {
        for field in ["check", "severity", "node", "message", "fix"] {
            assert!(f.get(field).is_some(), "{field} missing in {f}");
        }
    }
    let persistence = findings
        .iter()
        .find(|f| f["check"] == "persistence")
        .expect("persistence");
    assert_eq!(persistence["severity"], "warning");
    assert!(persistence["fix"].is_string());
    assert_eq!(report["worst"], "warning");
    assert_eq!(report["exit"], 1);
    assert_eq!(report["counts"]["warning"], 1);
}

#[test]
fn an_unreachable_node_keeps_its_exit_code() {
    let redis = persistent(&[]);
    let down = format!("redis://127.0.0.1:{}", free_port());
    let out = output(redlock().args(["doctor", "--redis", &down, "--redis", &redis.url()]));
    let text = stdout(&out);
    assert_eq!(code(&out), codes::UNREACHABLE, "{text}{}", stderr(&out));
    assert_eq!(lines(&text, "error", "connect").len(), 1, "{text}");
    // The node that answered is still checked.
    assert_eq!(lines(&text, "ok", "eviction").len(), 1, "{text}");
    assert_eq!(lines(&text, "info", "quorum").len(), 1, "{text}");
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn a_plain_server_given_as_a_cluster_is_a_topology_error() {
    let redis = persistent(&[]);
    let url = format!("redis+cluster://127.0.0.1:{}", redis.port);
    let out = doctor(&url, &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 2, "{text}{}", stderr(&out));
    assert_eq!(lines(&text, "error", "topology").len(), 1, "{text}");
}

/// A cluster through redis+cluster://: one report line per server for what each
/// server says, the lock's slot for --key; a cluster node given as a plain URL is a
/// topology error.
#[test]
fn a_cluster_reports_every_server_and_the_slot() {
    let cluster = Cluster::start(3);
    let out = doctor(&cluster.url(), &["--key", "deploy"]);
    let text = stdout(&out);
    // No persistence on the test servers: a warning per server.
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    assert_eq!(lines(&text, "warning", "persistence").len(), 3, "{text}");
    let slot = lines(&text, "ok", "slot");
    assert_eq!(slot.len(), 1, "{text}");
    assert!(slot[0].contains("\"deploy\""), "{text}");
    assert_eq!(lines(&text, "ok", "acl").len(), 1, "{text}");

    let plain = cluster.nodes[0].url();
    let out = doctor(&plain, &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 2, "{text}{}", stderr(&out));
    assert_eq!(lines(&text, "error", "topology").len(), 1, "{text}");
}

/// Through Sentinel the master is checked, and its replica is an info finding: a
/// failover to a replica that had not yet received a lock loses it.
#[test]
fn a_sentinel_master_with_a_replica_is_checked() {
    let master = persistent(&["--appendfsync", "always"]);
    let replica = persistent(&[]);
    let port = master.port.to_string();
    let _: () = replica.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    let synced = eventually(std::time::Duration::from_secs(20), || {
        master
            .cmd::<String>(&["INFO", "replication"])
            .contains("connected_slaves:1")
    });
    assert!(synced, "replica did not connect");
    let sentinel = Sentinel::start("m", master.port);
    let url = format!("redis+sentinel://127.0.0.1:{}/m", sentinel.port);
    let out = doctor(&url, &[]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    let role = lines(&text, "info", "role");
    assert_eq!(role.len(), 1, "{text}");
    assert!(role[0].contains("1 replica(s)"), "{text}");
    assert_eq!(lines(&text, "ok", "acl").len(), 1, "{text}");
}

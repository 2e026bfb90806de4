//! The unit tests of doctor's rules (`judge`).

use super::*;

fn info(pairs: &[(&str, &str)]) -> Probe<Info> {
    let text: String = pairs.iter().map(|(k, v)| format!("{k}:{v}\r\n")).collect();
    Probe::Got(Info::parse(&format!("# Server\r\n{text}")))
}

fn server(pairs: &[(&str, &str)], save: &str) -> Server {
    Server {
        info: info(pairs),
        save: Probe::Got(save.into()),
        appendfsync: Probe::Got("everysec".into()),
    }
}

#[test]
fn eviction_rules() {
    let sev = |pairs: &[(&str, &str)]| eviction(&info(pairs)).unwrap().severity;
    let p = |policy| {
        [
            ("maxmemory_policy", policy),
            ("maxmemory", "0"),
            ("used_memory", "1000"),
        ]
    };
    assert_eq!(sev(&p("allkeys-lru")), Severity::Error);
    assert_eq!(sev(&p("noeviction")), Severity::Ok);
    assert_eq!(sev(&p("volatile-ttl")), Severity::Warning);
    let near = [
        ("maxmemory_policy", "volatile-lru"),
        ("maxmemory", "1000"),
        ("used_memory", "950"),
    ];
    assert_eq!(sev(&near), Severity::Warning);
    let full = [
        ("maxmemory_policy", "noeviction"),
        ("maxmemory", "1000"),
        ("used_memory", "990"),
    ];
    assert_eq!(sev(&full), Severity::Warning);
    let denied = eviction(&Probe::NoPermission("INFO")).unwrap();
    assert_eq!(denied.severity, Severity::Info);
    assert!(denied.message.contains("no permission for INFO"));
}

#[test]
fn role_rules() {
    let replica = [
        ("role", "slave"),
        ("master_host", "10.0.0.1"),
        ("master_port", "6379"),
    ];
    let found = role(Given::Single, &info(&replica), false);
    assert_eq!(found[0].severity, Severity::Error);
    assert!(found[0].message.contains("READONLY"));
    assert!(found[0].message.contains("10.0.0.1:6379"));
    let cluster_node = [("role", "master"), ("cluster_enabled", "1")];
    let found = role(Given::Single, &info(&cluster_node), false);
    assert_eq!(found[0].check, "topology");
    assert_eq!(found[0].severity, Severity::Error);
    let plain = [("role", "master"), ("cluster_enabled", "0")];
    assert_eq!(
        role(Given::Cluster, &info(&plain), false)[0].check,
        "topology"
    );
    assert_eq!(
        role(Given::Single, &info(&plain), false),
        vec![Finding::new("role", Severity::Ok, "master")]
    );
    let with_replicas = [("role", "master"), ("connected_slaves", "2")];
    assert_eq!(
        role(Given::Sentinel, &info(&with_replicas), false)[0].severity,
        Severity::Info
    );
}

#[test]
fn persistence_rules() {
    let off = server(&[("aof_enabled", "0")], "");
    assert_eq!(persistence(&off).unwrap().severity, Severity::Warning);
    let rdb = server(&[("aof_enabled", "0")], "3600 1 300 100");
    assert_eq!(persistence(&rdb).unwrap().severity, Severity::Info);
    let aof = server(&[("aof_enabled", "1")], "");
    assert_eq!(persistence(&aof).unwrap().severity, Severity::Info);
    let denied = Server {
        save: Probe::NoPermission("CONFIG"),
        ..off
    };
    let f = persistence(&denied).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.message.contains("no permission for CONFIG"), "{f:?}");
}

#[test]
fn versions() {
    let sev = |v: &str| version(&info(&[("redis_version", v)])).unwrap().severity;
    assert_eq!(sev("7.0.15"), Severity::Ok);
    assert_eq!(sev("6.2.0"), Severity::Ok);
    assert_eq!(sev("5.0.7"), Severity::Error);
    assert_eq!(sev("4.0.0"), Severity::Error);
    assert_eq!(parse_version("7.2"), Some((7, 2, 0)));
    assert_eq!(parse_version("x"), None);
}

#[test]
fn clock_and_latency() {
    let c = |off| {
        clock(&Probe::Got(Clock {
            offset_ms: off,
            rtt: Duration::from_millis(1),
        }))
    };
    assert_eq!(c(20).severity, Severity::Ok);
    assert_eq!(c(-1500).severity, Severity::Warning);
    assert!(c(-1500).message.contains("1.5s ahead of"));
    let budget = Budget {
        ttl: Duration::from_secs(30),
        renew_every: Duration::from_secs(10),
        node_timeout: Duration::from_secs(2),
        kill_after: Duration::from_secs(5),
        requests: 1,
    };
    // ttl 30s − drift 302ms − kill_after 5s − margin 500ms − (10s + 2×2s).
    assert_eq!(slack(&budget), Duration::from_millis(10_198));
    let t = Timing {
        budget,
        ttl_given: true,
    };
    let fast = Probe::Got(vec![Duration::from_micros(200); 30]);
    let f = latency(&fast, &t);
    assert_eq!(f.severity, Severity::Ok);
    assert!(f.message.contains("with --ttl 30s"), "{}", f.message);
    assert!(f.message.contains("10.2s of slack"), "{}", f.message);
    let mut slow = vec![Duration::from_millis(1); 29];
    slow.push(Duration::from_millis(1500));
    assert_eq!(latency(&Probe::Got(slow), &t).severity, Severity::Warning);
    let dead = Probe::Got(vec![Duration::from_secs(3); 5]);
    assert_eq!(latency(&dead, &t).severity, Severity::Error);
}

#[test]
fn percentiles() {
    let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
    assert_eq!(percentile(&v, 50), Duration::from_millis(50));
    assert_eq!(percentile(&v, 99), Duration::from_millis(99));
    assert_eq!(percentile(&v[..1], 99), Duration::from_millis(1));
    assert_eq!(percentile(&[], 50), Duration::ZERO);
}

#[test]
fn slots_follow_the_hash_tag() {
    assert_eq!(crc16(b"123456789"), 0x31c3);
    assert_eq!(slot(b"redlock:{a}"), slot(b"redlock:{a}:fence"));
    assert_eq!(slot(b"foo"), 12182);
    // An empty tag hashes the whole key.
    assert_ne!(slot(b"redlock:{}x}"), slot(b"redlock:{}x}:meta"));
}

#[test]
fn acl_names_the_command_and_what_it_breaks() {
    let facts = Facts {
        node: "redis://u:***@h:1".into(),
        given: Given::Single,
        servers: Vec::new(),
        acl: Acl::Checked {
            how: "ACL DRYRUN",
            user: Some("u".into()),
            denied: vec![Denied {
                need: Need {
                    command: "evalsha",
                    key: None,
                },
                reason: None,
                key: None,
            }],
        },
        clock: Probe::Failed("x".into()),
        rtts: Probe::Failed("x".into()),
        slots: None,
        lock_name: "k".into(),
        names: Probe::Got(0),
        prefix: "redlock:".into(),
    };
    let f = acl(&facts);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("EVALSHA denied"), "{}", f.message);
    assert!(
        f.message.contains("run, run --wait, acquire"),
        "{}",
        f.message
    );
    assert!(f.fix.unwrap().contains("+evalsha"));
}

#[test]
fn quorums() {
    assert_eq!(quorum(1), None);
    assert_eq!(quorum(3).unwrap().severity, Severity::Ok);
    let two = quorum(2).unwrap();
    assert_eq!(two.severity, Severity::Info);
    assert!(two.fix.unwrap().contains("use 3 nodes (1 may be down)"));
}

#[test]
fn exit_statuses() {
    assert_eq!(exit_status(Severity::Info), 0);
    assert_eq!(exit_status(Severity::Warning), 1);
    assert_eq!(exit_status(Severity::Error), 2);
    assert_eq!(worst(&[]), Severity::Ok);
}

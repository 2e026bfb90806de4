//! Issue 59: scale out for real. On a Redis Cluster a run talks only to the master
//! that owns its name's slot: the slot map is read once and kept on the host, the
//! owner connected directly, MOVED and ASK followed; the masters that do not own the
//! name see no connection and no command from it. A map kept where others could write
//! it, or one that is corrupt, is read as no map.

use crate::harness::nemesis::summary;
use crate::harness::*;

/// A master's `INFO stats` counters: connections received, commands processed.
fn counters(node: &Redis) -> (i64, i64) {
    let info: String = node.cmd(&["INFO", "stats"]);
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    (
        field("total_connections_received"),
        field("total_commands_processed"),
    )
}

/// What `runs` cost each master: connections and commands, less what reading the
/// counters costs (measured with nothing between two reads).
fn cost_of(cluster: &Cluster, runs: impl FnOnce()) -> Vec<(i64, i64)> {
    let read = || cluster.nodes.iter().map(counters).collect::<Vec<_>>();
    let (a, b) = (read(), read());
    let idle: Vec<(i64, i64)> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (y.0 - x.0, y.1 - x.1))
        .collect();
    runs();
    let c = read();
    b.iter()
        .zip(&c)
        .zip(&idle)
        .map(|((x, y), i)| (y.0 - x.0 - i.0, y.1 - x.1 - i.1))
        .collect()
}

/// Five uncontended runs and five busy tries of a name, on a host whose local
/// directory keeps the slot map: every connection and command is on the name's owner,
/// none on the two other masters; the map was read once (the host's first run).
#[test]
fn a_run_on_a_cluster_talks_only_to_its_names_master() {
    let cluster = Cluster::start(3);
    let s = Scratch::new();
    let local = s.path("local");
    let owner = cluster.owner("redlock:{scaled}");
    let args = |extra: &[&str]| {
        let mut a = vec!["--key", "scaled", "--redis"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        a.push(cluster.url());
        a.extend(["--local-dir".to_string(), local.display().to_string()]);
        a.extend(extra.iter().map(|e| e.to_string()));
        a
    };
    // The host's first run reads the map and keeps it.
    let (status, err) = try_once(&args(&[]), "true");
    assert_eq!(status, 0, "{err}");
    let maps: Vec<_> = std::fs::read_dir(&local)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".map"))
        .collect();
    assert_eq!(maps.len(), 1, "no slot map kept");
    let cost = cost_of(&cluster, || {
        for _ in 0..5 {
            let (status, err) = try_once(&args(&[]), "true");
            assert_eq!(status, 0, "{err}");
        }
        let holder = start_run(&args(&[]), "sleep 30");
        assert!(eventually(READY, || cluster.nodes[owner].exists("redlock:{scaled}")));
        for _ in 0..5 {
            let (status, err) = try_once(&args(&[]), "true");
            assert_eq!(status, codes::BUSY, "{err}");
        }
        let mut holder = holder;
        let _ = holder.kill();
        let _ = holder.wait();
    });
    for (i, (connections, commands)) in cost.iter().enumerate() {
        if i == owner {
            assert!(*connections >= 11 && *commands > 0, "the owner: {cost:?}");
        } else {
            assert_eq!(
                (*connections, *commands),
                (0, 0),
                "master {i} is not the owner: {cost:?}"
            );
        }
    }
    summary(&format!(
        "scale out: 5 runs and 5 busy tries on a 3-master cluster: (connections, commands) per master {cost:?}, owner {owner}"
    ));
}

/// A kept map that is corrupt, or in a directory others can write, is read as no map:
/// the run reads the map from a seed and takes the lock as ever.
#[test]
fn a_corrupt_or_exposed_map_is_no_map() {
    use std::os::unix::fs::PermissionsExt;
    let cluster = Cluster::start(3);
    let s = Scratch::new();
    let local = s.path("local");
    let run = |dir: &std::path::Path| {
        let mut args = lock_args_cluster(&cluster.url(), "kept");
        args.extend(["--local-dir".to_string(), dir.display().to_string()]);
        try_once(&args, "true")
    };
    let (status, err) = run(&local);
    assert_eq!(status, 0, "{err}");
    let map = std::fs::read_dir(&local)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".map"))
        .expect("a kept map")
        .path();
    // A map naming a server that is not the cluster's: never used.
    let text = std::fs::read_to_string(&map).unwrap();
    std::fs::write(&map, text.replace("127.0.0.1:", "127.0.0.1:1")).unwrap();
    let (status, err) = run(&local);
    assert_eq!(status, 0, "a corrupt map was trusted: {err}");
    std::fs::write(&map, "garbage").unwrap();
    let (status, err) = run(&local);
    assert_eq!(status, 0, "{err}");
    // A directory others can write keeps no map.
    let open = s.path("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (status, err) = run(&open);
    assert_eq!(status, 0, "{err}");
    let kept = std::fs::read_dir(&open)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".map"));
    assert!(!kept, "a map kept where others can write");
}

fn lock_args_cluster(url: &str, name: &str) -> Vec<String> {
    vec!["--key".into(), name.into(), "--redis".into(), url.into()]
}

/// Review-7 finding 10: through a Cluster, `redlock preempt` waited for the holder's
/// next renewal (8.5 s at the default ttl; 10 s at `--ttl 30s`) where one server
/// answers within a second: a holder of one name now listens on a blocking connection
/// to its name's master, as on one server.
#[test]
fn a_preempt_through_a_cluster_reaches_a_holder_within_a_second() {
    let cluster = Cluster::start(3);
    let s = Scratch::new();
    let d = s.path("").display().to_string();
    let script = format!(
        "trap 'date +%s%N > {d}/got.tmp; mv {d}/got.tmp {d}/got; exit 0' TERM; touch {d}/ready; while :; do sleep 0.05; done"
    );
    let mut holder = redlock_run()
        .args(["--redis", &cluster.url(), "--key", "far", "--ttl", "30s"])
        .args(["--", "sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for_file(&s.path("ready"), "", READY),
        "the command never started"
    );
    let asked_at = wall_ms();
    let asked = output_within(
        redlock().args(["preempt", "far", "--redis", &cluster.url()]),
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code(&asked), 0, "{}", stderr(&asked));
    eventually(std::time::Duration::from_secs(15), || {
        s.path("got").exists()
    });
    let latency = std::fs::read_to_string(s.path("got"))
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .map_or(f64::INFINITY, |ns| ns / 1e6 - asked_at);
    let status = wait_child(&mut holder, std::time::Duration::from_secs(30));
    assert_eq!(status.code(), Some(codes::PREEMPTED));
    assert!(latency < 1000.0, "the signal came after {latency:.0} ms");
    summary(&format!(
        "preempt through a 3-master cluster at --ttl 30s: {latency:.0} ms"
    ));
}

/// A holder of `name` on a Cluster (`--ttl`, its host's local directory in the scratch):
/// its command journals `START-H`, runs until `go` exists (at most 30 s) and journals
/// `END-H` (on SIGTERM too).
struct ClusterHolder {
    args: Vec<String>,
    child: std::process::Child,
    journal: std::path::PathBuf,
    go: std::path::PathBuf,
}

impl ClusterHolder {
    /// Starts it and waits until its command runs.
    fn start(cluster: &Cluster, s: &Scratch, name: &str, ttl: &str) -> ClusterHolder {
        let (journal, go) = (s.path("journal"), s.path("go"));
        let mut args = lock_args_cluster(&cluster.url(), name);
        args.extend(["--ttl", ttl, "--local-dir"].map(String::from));
        args.push(s.path("local").display().to_string());
        let (j, g) = (journal.display(), go.display());
        let child = redlock_run()
            .args(&args)
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo START-H >> {j}; trap 'echo END-H >> {j}; exit 0' TERM; i=0; while [ ! -e {g} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo END-H >> {j}"
            ))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let holder = ClusterHolder {
            args,
            child,
            journal,
            go,
        };
        assert!(
            eventually(READY, || holder.journal().contains("START-H")),
            "the holder never ran"
        );
        holder
    }

    fn journal(&self) -> String {
        std::fs::read_to_string(&self.journal).unwrap_or_default()
    }

    /// A run of the name now, waiting up to 10 s (a holder whose release did not reach
    /// the new owner, or that lost its lease (79), leaves its replicated key to live
    /// out its ttl there): its command journals `START-N` and `END-N`.
    fn next_run(&self) -> (i32, String) {
        let j = self.journal.display();
        let script = format!("echo START-N >> {j}; echo END-N >> {j}");
        let out = output_within(
            redlock_run()
                .args(&self.args)
                .args(["--wait", "10s", "--", "sh", "-c", &script]),
            std::time::Duration::from_secs(30),
        );
        (code(&out), stderr(&out))
    }

    /// Lets the command end; the holder's exit status and what it said.
    fn stop(&mut self) -> (Option<i32>, String) {
        std::fs::write(&self.go, "").unwrap();
        let held = wait_child(&mut self.child, std::time::Duration::from_secs(30));
        let mut said = String::new();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut said).unwrap();
        (held.code(), said)
    }
}

/// Issue 59 (measured by): after a master's failover the run takes the lock on the new
/// owner, once. A holder on a 3-master Cluster with a replica each; its name's master
/// is failed over (`CLUSTER FAILOVER` on its replica: a planned one, the lock
/// replicated) while the holder runs. The holder's renewals find the old master a
/// replica (MOVED) and follow to the new one, where its lock is: it keeps it (exit 0,
/// no 79). A try meanwhile on the same host (its kept map names the old master) is told
/// MOVED, tries on the new owner and finds the name busy (75). The next run takes the
/// lock on the new owner and runs once.
#[test]
fn a_failover_under_a_holder_keeps_its_lock_and_the_next_run_takes_it_on_the_new_owner() {
    let cluster = Cluster::start_with(3, 1);
    let s = Scratch::new();
    let old = cluster.owner("redlock:{fo}");
    let mut holder = ClusterHolder::start(&cluster, &s, "fo", "3s");
    let new = cluster.replica_of(old);
    let _: () = cluster.nodes[new].cmd(&["CLUSTER", "FAILOVER"]);
    cluster.wait_role(new, "master");
    cluster.wait_role(old, "slave");
    // A renewal (every second) goes to the old master, now a replica, and follows.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (busy, err) = try_once(&holder.args, "true");
    assert_eq!(busy, codes::BUSY, "{err}");
    let (held, holder_said) = holder.stop();
    assert_eq!(held, Some(0), "{holder_said}");
    let (next, err) = holder.next_run();
    assert_eq!(next, 0, "{err}");
    assert_eq!(
        holder.journal().lines().collect::<Vec<_>>(),
        ["START-H", "END-H", "START-N", "END-N"]
    );
    assert_eq!(cluster.owner("redlock:{fo}"), new);
    assert!(
        cluster.nodes[new].exists("redlock:{fo}:fence"),
        "not on the new owner"
    );
}

/// The same through a crash: the name's master is killed (`kill -9`) under a holder
/// and its replica promoted by the cluster (`--cluster-node-timeout 2000`). The
/// holder's renewals fail on the dead node until the map names the new owner: it keeps
/// its lock, or exits 79 having stopped its command, never runs beside another; the
/// next run takes the lock on the new owner, once. Another host, whose kept map still
/// names the dead master (its last run was before the crash), runs on the new owner at
/// its first try: the refused connect reads the map again (it exited 69, and every run
/// of that host after it, until something else refreshed its map).
#[test]
fn a_crashed_owner_under_a_holder_leaves_one_holder_and_the_next_run_takes_it_once() {
    let mut cluster = Cluster::start_with(3, 1);
    let s = Scratch::new();
    let old = cluster.owner("redlock:{fc}");
    let new = cluster.replica_of(old);
    let mut holder = ClusterHolder::start(&cluster, &s, "fc", "6s");
    std::thread::sleep(std::time::Duration::from_millis(300)); // the grant replicated
    let other_host = s.path("other-host");
    std::fs::create_dir(&other_host).unwrap();
    for kept in std::fs::read_dir(s.path("local")).unwrap().flatten() {
        if kept.file_name().to_string_lossy().ends_with(".map") {
            std::fs::copy(kept.path(), other_host.join(kept.file_name())).unwrap();
        }
    }
    cluster.nodes[old].crash();
    cluster.wait_role(new, "master");
    let (held, holder_said) = holder.stop();
    assert!(
        matches!(held, Some(0 | codes::LOST)),
        "{held:?} {holder_said}"
    );
    let (next, err) = holder.next_run();
    assert_eq!(next, 0, "{err}");
    assert_eq!(
        holder.journal().lines().collect::<Vec<_>>(),
        ["START-H", "END-H", "START-N", "END-N"],
        "{holder_said}"
    );
    assert!(
        cluster.nodes[new].exists("redlock:{fc}:fence"),
        "not on the new owner"
    );
    let mut args = lock_args_cluster(&cluster.url(), "fc");
    args.extend(["--local-dir".to_string(), other_host.display().to_string()]);
    let (code, err) = try_once(&args, "true");
    assert_eq!(
        code, 0,
        "a host whose kept map names the dead master: {err}"
    );
    summary(&format!(
        "cluster crash failover under a holder (--ttl 6s): holder exit {held:?}, next run on the new owner once"
    ));
}

/// Issue 57 item 2 on a Cluster: where the name's master has a replica (the slot map
/// lists it), the grant and each renewal are followed by `WAIT 1` on the owner, so a
/// crash failover to that replica keeps the lock; no other master sees a `WAIT` (nor
/// any command), and a cluster without replicas is never waited on.
#[test]
fn a_cluster_with_replicas_acknowledges_the_grant_and_each_renewal_on_the_owner() {
    let waits = |node: &Redis| -> i64 {
        let stats: String = node.cmd(&["INFO", "commandstats"]);
        stats
            .lines()
            .find_map(|l| l.strip_prefix("cmdstat_wait:calls="))
            .and_then(|v| v.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let cluster = Cluster::start_with(3, 1);
    let s = Scratch::new();
    let owner = cluster.owner("redlock:{acked}");
    let mut args = lock_args_cluster(&cluster.url(), "acked");
    args.extend(["--ttl", "3s", "--local-dir"].map(String::from));
    args.push(s.path("local").display().to_string());
    // 2.5 s at --ttl 3s: the grant and two renewals.
    let (code, err) = try_once(&args, "sleep 2.5");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("acknowledged"), "{err}");
    let per_node: Vec<i64> = cluster.nodes.iter().map(waits).collect();
    let kept: Vec<String> = std::fs::read_dir(s.path("local"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".map"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(per_node[owner] >= 3, "{per_node:?} {kept:?}");
    let elsewhere: i64 = per_node.iter().sum::<i64>() - per_node[owner];
    assert_eq!(elsewhere, 0, "{per_node:?}");
    let plain = Cluster::start(3);
    let mut args = lock_args_cluster(&plain.url(), "acked");
    args.extend(["--ttl", "3s"].map(String::from));
    let (code, err) = try_once(&args, "sleep 1.2");
    assert_eq!(code, 0, "{err}");
    assert_eq!(plain.nodes.iter().map(waits).sum::<i64>(), 0);
}

//! A Redis Cluster of real cluster-enabled servers joined by `redis-cli --cluster
//! create` (plain or TLS-only), with slot look-ups and a slot move for MOVED/ASK.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::eventually;
use super::server::Redis;
use super::tls::Certs;

/// Runs `redis-cli` with arguments (killed after 60 s: `--cluster create` waits
/// without end for a bus that never joins); panics with its output when it fails.
pub fn redis_cli(args: &[&str]) -> String {
    let out = Command::new("timeout")
        .args(["60", "redis-cli"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "redis-cli {args:?} failed:\n{text}");
    text
}

/// A Redis Cluster of `masters` cluster-enabled servers, no replicas, all 16384 slots
/// assigned by `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Redis>,
}

impl Cluster {
    pub fn start(masters: usize) -> Cluster {
        Cluster::start_with(masters, 0)
    }

    /// `masters` masters, each with `replicas` replicas (synced), the first `masters`
    /// nodes the masters; a node fails over `--cluster-node-timeout` (2 s) after its
    /// master stops answering.
    pub fn start_with(masters: usize, replicas: usize) -> Cluster {
        let timeout = if replicas > 0 { "2000" } else { "5000" };
        let nodes: Vec<Redis> = (0..masters * (1 + replicas))
            .map(|_| {
                Redis::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-node-timeout",
                    timeout,
                ])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        let replicas_arg = replicas.to_string();
        args.extend(["--cluster-replicas", &replicas_arg, "--cluster-yes"]);
        redis_cli(&args);
        let cluster = Cluster { nodes };
        let known = masters * (1 + replicas);
        let ready = eventually(Duration::from_secs(30), || {
            cluster.nodes.iter().all(|n| {
                let info: String = n.cmd(&["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{known}"))
            })
        });
        assert!(ready, "cluster did not reach cluster_state:ok");
        // Every replica is one, synced, and every node's view (CLUSTER NODES, which
        // CLUSTER SLOTS follows) knows every replica.
        let want = masters * replicas;
        let synced = eventually(Duration::from_secs(30), || {
            let linked = cluster
                .nodes
                .iter()
                .filter(|n| {
                    let info: String = n.cmd(&["INFO", "replication"]);
                    info.contains("role:slave") && info.contains("master_link_status:up")
                })
                .count();
            let known = cluster.nodes.iter().all(|n| {
                let nodes: String = n.cmd(&["CLUSTER", "NODES"]);
                nodes
                    .lines()
                    .filter(|l| l.contains("slave") && !l.contains("fail"))
                    .count()
                    == want
            });
            linked == want && known
        });
        assert!(synced, "the replicas did not sync");
        if replicas > 0 {
            // CLUSTER SLOTS lists a replica only once its replication offset is not 0
            // (Redis 7): a write on each master (FLUSHALL of an empty one) moves it.
            for n in &cluster.nodes {
                if n.has_role("master") {
                    let _: () = n.cmd(&["FLUSHALL"]);
                }
            }
            let listed = eventually(Duration::from_secs(30), || {
                cluster.nodes.iter().all(|n| {
                    let slots: redis::Value = n.cmd(&["CLUSTER", "SLOTS"]);
                    let redis::Value::Array(ranges) = slots else {
                        return false;
                    };
                    ranges.iter().all(
                        |r| matches!(r, redis::Value::Array(items) if items.len() >= 3 + replicas),
                    )
                })
            });
            assert!(listed, "CLUSTER SLOTS never listed the replicas");
        }
        cluster
    }

    /// Index in `nodes` of a replica of node `master`.
    pub fn replica_of(&self, master: usize) -> usize {
        let id: String = self.nodes[master].cmd(&["CLUSTER", "MYID"]);
        self.nodes
            .iter()
            .position(|n| {
                let nodes: String = n.cmd(&["CLUSTER", "NODES"]);
                nodes
                    .lines()
                    .any(|l| l.contains("myself") && l.contains("slave") && l.contains(&id))
            })
            .expect("the master has a replica")
    }

    /// Waits until node `node` says `ROLE` `role` (read without panicking: a node that
    /// is down, or changes role, drops the connection).
    pub fn wait_role(&self, node: usize, role: &str) {
        let is = || self.nodes[node].has_role(role);
        assert!(
            eventually(Duration::from_secs(30), is),
            "node {node} never became a {role}"
        );
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Index in `nodes` of the master that owns `key`'s slot.
    pub fn owner(&self, key: &str) -> usize {
        let slot: i64 = self.nodes[0].cmd(&["CLUSTER", "KEYSLOT", key]);
        let ranges: redis::Value = self.nodes[0].cmd(&["CLUSTER", "SLOTS"]);
        let redis::Value::Array(ranges) = ranges else {
            panic!("CLUSTER SLOTS: {ranges:?}")
        };
        for range in ranges {
            let redis::Value::Array(items) = range else {
                continue;
            };
            let (redis::Value::Int(start), redis::Value::Int(end)) = (&items[0], &items[1]) else {
                continue;
            };
            let redis::Value::Array(master) = &items[2] else {
                continue;
            };
            let redis::Value::Int(port) = master[1] else {
                continue;
            };
            if (*start..=*end).contains(&slot) {
                return self
                    .nodes
                    .iter()
                    .position(|n| i64::from(n.port) == port)
                    .expect("owner is one of ours");
            }
        }
        panic!("no owner for slot {slot}");
    }

    /// Every key on every node.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.nodes.iter().flat_map(Redis::keys).collect();
        keys.sort();
        keys
    }

    /// Moves `key`'s slot from its owner to node `to` the way `redis-cli --cluster
    /// reshard` does: IMPORTING/MIGRATING, MIGRATE of the slot's keys, then SETSLOT NODE
    /// on every node. `between` runs after the keys moved and before the slot changed
    /// owner (the window in which the old owner answers ASK).
    pub fn move_slot_of(&self, key: &str, to: usize, between: impl FnOnce()) {
        let from = self.owner(key);
        assert_ne!(from, to);
        let slot: i64 = self.nodes[0].cmd(&["CLUSTER", "KEYSLOT", key]);
        let slot = slot.to_string();
        let from_id: String = self.nodes[from].cmd(&["CLUSTER", "MYID"]);
        let to_id: String = self.nodes[to].cmd(&["CLUSTER", "MYID"]);
        let _: () = self.nodes[to].cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        let _: () = self.nodes[from].cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        let keys: Vec<String> = self.nodes[from].cmd(&["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
        if !keys.is_empty() {
            let port = self.nodes[to].port.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            let _: () = self.nodes[from].cmd(&args);
        }
        between();
        for node in &self.nodes {
            let _: () = node.cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
    }

    /// A cluster of TLS-only nodes (`--tls-cluster yes`: the bus is TLS too), created
    /// with `redis-cli --tls`.
    pub fn start_tls(masters: usize, certs: &Certs) -> Cluster {
        let nodes: Vec<Redis> = (0..masters)
            .map(|_| {
                Redis::start_tls_with(
                    certs,
                    "server",
                    false,
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--tls-cluster",
                        "yes",
                        "--cluster-node-timeout",
                        "5000",
                    ],
                )
            })
            .collect();
        let ca = certs.arg("ca.crt");
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--tls", "--cacert", &ca, "--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        redis_cli(&args);
        let ready = eventually(Duration::from_secs(30), || {
            nodes.iter().all(|n| {
                let port = n.port.to_string();
                let info = redis_cli(&["--tls", "--cacert", &ca, "-p", &port, "CLUSTER", "INFO"]);
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{masters}"))
            })
        });
        assert!(ready, "TLS cluster did not reach cluster_state:ok");
        Cluster { nodes }
    }
}

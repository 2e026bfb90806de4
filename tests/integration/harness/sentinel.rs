//! A real redis-server in sentinel mode (plain or TLS-only) monitoring one master.

use std::process::{Child, Command};

use tempfile::TempDir;

use super::server::{launch, ping};
use super::tls::Certs;

/// A redis-server in sentinel mode monitoring one master as `name` (quorum 1, a
/// master is down after 1 s without answers).
pub struct Sentinel {
    pub port: u16,
    pub dir: TempDir,
    child: Child,
}

impl Sentinel {
    pub fn start(name: &str, master_port: u16) -> Sentinel {
        Sentinel::start_conf(name, master_port, None)
    }

    /// A TLS-only sentinel (`port 0`, `tls-port`) that also talks TLS to the master
    /// (`tls-replication yes`); the test's plain-text helpers do not work on it.
    pub fn start_tls(name: &str, master_port: u16, certs: &Certs) -> Sentinel {
        Sentinel::start_conf(name, master_port, Some(certs))
    }

    fn start_conf(name: &str, master_port: u16, tls: Option<&Certs>) -> Sentinel {
        let launched = launch(
            "sentinel",
            None,
            |dir, port, log| {
                let conf = dir.join("sentinel.conf");
                let listen = match tls {
                    None => format!("port {port}\n"),
                    Some(certs) => format!(
                        "port 0\ntls-port {port}\ntls-cert-file {}\ntls-key-file {}\n\
                         tls-ca-cert-file {}\ntls-auth-clients no\ntls-replication yes\n",
                        certs.arg("server.crt"),
                        certs.arg("server.key"),
                        certs.arg("ca.crt")
                    ),
                };
                std::fs::write(
                    &conf,
                    format!(
                        "{listen}bind 127.0.0.1\ndir {dir}\nlogfile {log}\n\
                         sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
                         sentinel down-after-milliseconds {name} 1000\n\
                         sentinel failover-timeout {name} 10000\n",
                        dir = dir.display(),
                        log = log.display()
                    ),
                )
                .unwrap();
                let mut cmd = Command::new("redis-server");
                cmd.arg(&conf).arg("--sentinel");
                cmd
            },
            |sentinel| match tls {
                Some(_) => sentinel.log().contains("+monitor"),
                None => ping(&format!("redis://127.0.0.1:{}", sentinel.port)),
            },
        );
        Sentinel {
            port: launched.port,
            dir: launched.dir,
            child: launched.child,
        }
    }

    /// Runs one command on the sentinel.
    pub fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Runs one command on the sentinel, returning its error.
    pub fn try_cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> redis::RedisResult<T> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port))?;
        let mut conn = client.get_connection()?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query(&mut conn)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- sentinel log (port {}) ---\n{}", self.port, self.log());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A master, its replica (synced) and a sentinel that has found the replica: a
/// deployment that can fail over, as `redis+sentinel://…/m` names it.
pub struct Monitored {
    pub master: super::server::Redis,
    pub replica: super::server::Redis,
    pub sentinel: Sentinel,
}

impl Monitored {
    pub fn start() -> Monitored {
        use super::eventually;
        use std::time::Duration;
        let master = super::server::Redis::start();
        let port = master.port.to_string();
        let replica = super::server::Redis::start_with(&["--replicaof", "127.0.0.1", &port]);
        assert!(
            eventually(Duration::from_secs(20), || replica
                .cmd::<String>(&["INFO", "replication"])
                .contains("master_link_status:up")),
            "replica did not sync"
        );
        let sentinel = Sentinel::start("m", master.port);
        assert!(
            eventually(Duration::from_secs(30), || !sentinel
                .cmd::<Vec<redis::Value>>(&["SENTINEL", "REPLICAS", "m"])
                .is_empty()),
            "sentinel did not find the replica"
        );
        Monitored {
            master,
            replica,
            sentinel,
        }
    }

    /// The URL runs are given.
    pub fn url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/m", self.sentinel.port)
    }

    /// `SENTINEL FAILOVER`, then waits until the sentinel names the replica and the
    /// old master has been demoted (until then the old master still takes writes).
    pub fn fail_over(&self) {
        self.switch_over();
        self.wait_demoted();
    }

    /// `SENTINEL FAILOVER` (a planned switchover), then waits only until the sentinel
    /// names the replica, a master now: the old master is still a master, and takes
    /// writes, until the sentinel reconfigures it (see [`Monitored::wait_demoted`]).
    pub fn switch_over(&self) {
        use super::eventually;
        use std::time::Duration;
        // The sentinel refuses (NOGOODSLAVE) until it has fresh INFO from the replica.
        assert!(
            eventually(Duration::from_secs(30), || self
                .sentinel
                .try_cmd::<()>(&["SENTINEL", "FAILOVER", "m"])
                .is_ok()),
            "sentinel never accepted the failover"
        );
        self.wait_promoted();
    }

    /// Waits until the sentinel names the replica as the master and it says so.
    pub fn wait_promoted(&self) {
        use super::eventually;
        use std::time::Duration;
        let replica_port = self.replica.port.to_string();
        assert!(
            eventually(Duration::from_secs(30), || {
                let addr: Vec<String> =
                    self.sentinel
                        .cmd(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m"]);
                addr.get(1) == Some(&replica_port) && is(&self.replica, "master")
            }),
            "the replica was not promoted"
        );
    }

    /// Waits until the old master has been reconfigured as the new one's replica.
    pub fn wait_demoted(&self) {
        use super::eventually;
        use std::time::Duration;
        assert!(
            eventually(Duration::from_secs(30), || is(&self.master, "slave")),
            "the old master was not demoted"
        );
    }
}

/// Whether `redis` says `ROLE` `role` (see [`super::server::Redis::has_role`]).
fn is(redis: &super::server::Redis, role: &str) -> bool {
    redis.has_role(role)
}

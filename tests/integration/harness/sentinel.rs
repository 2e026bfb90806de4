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

//! Test harness: throwaway `redis-server` processes and the built binaries.
//!
//! Each [`Redis`] runs in its own temp dir on its own loopback port, with no
//! persistence, is waited for until it answers PING, prints its log when the test
//! panics, and is killed on drop. [`redlock_run`] / [`redlock`] build commands for the
//! binaries under test with a clean `REDLOCK_*` environment.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

pub const RUN: &str = env!("CARGO_BIN_EXE_redlock-run");
pub const REDLOCK: &str = env!("CARGO_BIN_EXE_redlock");

/// A redis-server started for one test.
pub struct Redis {
    pub port: u16,
    pub dir: TempDir,
    child: Child,
    pub password: Option<String>,
}

impl Redis {
    /// A plain server.
    pub fn start() -> Redis {
        Redis::start_with(&[])
    }

    /// A server with extra `redis-server` arguments (e.g. `["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> Redis {
        let mut last_log = String::new();
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("temp dir");
            let port = free_port();
            let log = dir.path().join("redis.log");
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--enable-debug-command", "local"])
                .arg("--dir")
                .arg(dir.path())
                .arg("--logfile")
                .arg(&log)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd
                .spawn()
                .expect("redis-server must be installed (see .ci/run)");
            let password = extra
                .iter()
                .position(|a| *a == "--requirepass")
                .map(|i| extra[i + 1].to_string());
            let mut server = Redis {
                port,
                dir,
                child,
                password,
            };
            if server.wait_ready(Duration::from_secs(10)) {
                return server;
            }
            last_log = server.log();
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("redis-server did not start; last log:\n{last_log}");
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut conn) = self.client().get_connection()
                && redis::cmd("PING").query::<String>(&mut conn).is_ok()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The URL the binaries use (with the password, if any).
    pub fn url(&self) -> String {
        match &self.password {
            Some(pw) => format!("redis://:{pw}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("client")
    }

    /// A synchronous connection for the test's own checks.
    pub fn conn(&self) -> redis::Connection {
        let conn = self.client().get_connection().expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
        conn
    }

    /// Runs one command and returns its reply.
    pub fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query(&mut self.conn())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Whether a key exists.
    pub fn exists(&self, key: &str) -> bool {
        self.cmd::<i64>(&["EXISTS", key]) == 1
    }

    /// All keys (for leftover checks).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.cmd(&["KEYS", "*"]);
        keys.sort();
        keys
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// SIGSTOP: the server keeps its sockets but answers nothing (a blackhole).
    pub fn pause(&self) {
        kill(self.pid(), Signal::SIGSTOP).expect("SIGSTOP redis");
    }

    pub fn resume(&self) {
        kill(self.pid(), Signal::SIGCONT).expect("SIGCONT redis");
    }

    /// Kills the server for good (the port then refuses connections).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = kill(self.pid(), Signal::SIGCONT);
        if std::thread::panicking() {
            eprintln!(
                "--- redis-server log (port {}) ---\n{}",
                self.port,
                self.log()
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn clean(mut cmd: Command) -> Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("REDLOCK_") {
            cmd.env_remove(name);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// `redlock-run` with a clean environment.
pub fn redlock_run() -> Command {
    clean(Command::new(RUN))
}

/// `redlock` with a clean environment.
pub fn redlock() -> Command {
    clean(Command::new(REDLOCK))
}

/// Runs a command to completion within `limit`, killing it past that (then panics).
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            child.stdout.take().unwrap().read_to_end(&mut stdout).ok();
            child.stderr.take().unwrap().read_to_end(&mut stderr).ok();
            return Output {
                status,
                stdout,
                stderr,
            };
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs a command with a 60 s limit.
pub fn output(cmd: &mut Command) -> Output {
    output_within(cmd, Duration::from_secs(60))
}

/// The exit code of an output (panics when killed by a signal).
pub fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {out:?}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until `check` holds, polling, up to `limit`; returns whether it held.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    check()
}

/// Waits until a file exists and contains `needle` (a child's ready marker).
pub fn wait_for_file(path: &Path, needle: &str, limit: Duration) -> bool {
    eventually(limit, || {
        std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle))
    })
}

/// Whether a process exists (not yet reaped by anyone).
pub fn alive(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
}

/// Reads a pid written by a test child.
pub fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid")
}

/// A temp dir with a helper path builder.
pub struct Scratch {
    pub dir: TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// Writes an executable shell script and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

/// Exit statuses from the documented table (kept here so tests read like the README).
pub mod codes {
    pub const USAGE: i32 = 64;
    pub const UNREACHABLE: i32 = 69;
    pub const BUSY: i32 = 75;
    pub const REDIS: i32 = 76;
    pub const AUTH: i32 = 77;
    pub const LOST: i32 = 79;
    pub const CANNOT_EXECUTE: i32 = 126;
    pub const NOT_FOUND: i32 = 127;
}

/// Waits for a child process with a limit; returns its status.
pub fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("child still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The result of a contention run (see [`contend`]).
#[derive(Debug)]
pub struct Contention {
    /// Critical sections that wrote END.
    pub sections: usize,
    /// Pairs of sections that overlapped in the shared log.
    pub overlaps: usize,
    /// The counter's final value (must equal `sections`).
    pub counter: usize,
    /// Tokens seen more than once.
    pub duplicate_tokens: usize,
    /// Exit codes of the wrappers other than 0.
    pub failures: Vec<i32>,
}

/// The mutual-exclusion workload (Jepsen "lock-set" adapted to a wrapper): `procs`
/// processes each run `rounds` times `redlock-run --wait forever <args> -- child`, where
/// the child appends `BEGIN token` to a shared O_APPEND log, reads a counter file,
/// writes it back plus one, and appends `END token`. The log order is the real order
/// of those writes, so a second BEGIN before an END is an overlap; a lost update shows
/// in the counter even where the log missed it.
pub fn contend(args: &[String], procs: usize, rounds: usize) -> Contention {
    let scratch = Scratch::new();
    let log = scratch.path("log");
    let counter = scratch.path("counter");
    std::fs::write(&counter, "0").unwrap();
    let child = scratch.script(
        "section",
        &format!(
            "echo \"BEGIN $REDLOCK_TOKEN\" >> '{log}'\n\
             n=$(cat '{counter}')\n\
             echo $((n + 1)) > '{counter}'\n\
             echo \"END $REDLOCK_TOKEN\" >> '{log}'",
            log = log.display(),
            counter = counter.display()
        ),
    );
    let workers: Vec<_> = (0..procs)
        .map(|_| {
            let args = args.to_vec();
            let child = child.clone();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for _ in 0..rounds {
                    let out = output_within(
                        redlock_run()
                            .args(&args)
                            .args(["--wait", "forever", "--"])
                            .arg(&child),
                        Duration::from_secs(120),
                    );
                    let code = out.status.code().unwrap_or(-1);
                    if code != 0 {
                        eprintln!("wrapper exit {code}: {}", stderr(&out));
                        failures.push(code);
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<i32> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut open: Option<&str> = None;
    let mut overlaps = 0;
    let mut sections = 0;
    let mut seen = std::collections::HashSet::new();
    let mut duplicate_tokens = 0;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("BEGIN", token)) => {
                if open.is_some() {
                    overlaps += 1;
                }
                if !seen.insert(token.to_string()) {
                    duplicate_tokens += 1;
                }
                open = Some(token);
            }
            Some(("END", token)) => {
                if open != Some(token) {
                    overlaps += 1;
                }
                open = None;
                sections += 1;
            }
            _ => panic!("garbled log line {line:?}"),
        }
    }
    let counter = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Contention {
        sections,
        overlaps,
        counter,
        duplicate_tokens,
        failures,
    }
}

// ============================================================================
// Topologies (tests/integration/topology.rs): Redis Cluster, Sentinel, TLS.
// ============================================================================

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
        let nodes: Vec<Redis> = (0..masters)
            .map(|_| {
                Redis::start_with(&["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        redis_cli(&args);
        let cluster = Cluster { nodes };
        let ready = eventually(Duration::from_secs(30), || {
            cluster.nodes.iter().all(|n| {
                let info: String = n.cmd(&["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{masters}"))
            })
        });
        assert!(ready, "cluster did not reach cluster_state:ok");
        cluster
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
}

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
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("temp dir");
            let port = free_port();
            let conf = dir.path().join("sentinel.conf");
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
                    "{listen}bind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                     sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
                     sentinel down-after-milliseconds {name} 1000\n\
                     sentinel failover-timeout {name} 10000\n",
                    dir = dir.path().display()
                ),
            )
            .unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server");
            let mut sentinel = Sentinel { port, dir, child };
            let up = eventually(Duration::from_secs(10), || {
                matches!(sentinel.child.try_wait(), Ok(None))
                    && if tls.is_some() {
                        sentinel.log().contains("+monitor")
                    } else {
                        sentinel.ping()
                    }
            });
            if up {
                return sentinel;
            }
            eprintln!("sentinel did not start:\n{}", sentinel.log());
            let _ = sentinel.child.kill();
            let _ = sentinel.child.wait();
        }
        panic!("sentinel did not start");
    }

    fn ping(&self) -> bool {
        redis::Client::open(format!("redis://127.0.0.1:{}", self.port))
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
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

/// Test certificates made with the `openssl` CLI: a CA, a server certificate for
/// 127.0.0.1/localhost and a client certificate signed by it, and a second CA that
/// signed nothing we use (an untrusted root).
pub struct Certs {
    pub dir: TempDir,
}

impl Certs {
    pub fn make() -> Certs {
        let dir = tempfile::tempdir().expect("temp dir");
        let certs = Certs { dir };
        let ssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(certs.dir.path())
                .stdin(Stdio::null())
                .output()
                .expect("openssl must be installed");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        for ca in ["ca", "rogue-ca"] {
            let (key, crt, subj) = (
                format!("{ca}.key"),
                format!("{ca}.crt"),
                format!("/CN={ca}"),
            );
            let mut args = vec!["req", "-x509", "-nodes", "-days", "2"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &crt, "-subj", &subj]);
            ssl(&args);
        }
        std::fs::write(
            certs.path("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        std::fs::write(certs.path("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        std::fs::write(
            certs.path("wrong-name.ext"),
            "subjectAltName=DNS:elsewhere.invalid\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        for who in ["server", "client", "wrong-name"] {
            let key = format!("{who}.key");
            let csr = format!("{who}.csr");
            let crt = format!("{who}.crt");
            let ext = format!("{who}.ext");
            let subj = format!("/CN={who}");
            let mut args = vec!["req", "-nodes"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            ssl(&args);
            ssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ]);
        }
        certs
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The path as a string, for arguments.
    pub fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

impl Redis {
    /// A TLS-only server (`--port 0 --tls-port P`) with the certificates from `certs`;
    /// `auth_clients` asks for a client certificate (mutual TLS). The test's own
    /// plain-text helpers (`cmd`, `keys`) do not work on it.
    pub fn start_tls(certs: &Certs, auth_clients: bool) -> Redis {
        Redis::start_tls_as(certs, "server", auth_clients)
    }

    /// [`Redis::start_tls`] with the certificate `<name>.crt` (e.g. `wrong-name`).
    pub fn start_tls_as(certs: &Certs, name: &str, auth_clients: bool) -> Redis {
        Redis::start_tls_with(certs, name, auth_clients, &[])
    }

    /// [`Redis::start_tls_as`] with extra `redis-server` arguments.
    pub fn start_tls_with(certs: &Certs, name: &str, auth_clients: bool, extra: &[&str]) -> Redis {
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("temp dir");
            let port = free_port();
            let log = dir.path().join("redis.log");
            let child = Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--tls-cert-file", &certs.arg(&format!("{name}.crt"))])
                .args(["--tls-key-file", &certs.arg(&format!("{name}.key"))])
                .args(["--tls-ca-cert-file", &certs.arg("ca.crt")])
                .args([
                    "--tls-auth-clients",
                    if auth_clients { "yes" } else { "no" },
                ])
                .arg("--dir")
                .arg(dir.path())
                .arg("--logfile")
                .arg(&log)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server");
            let mut server = Redis {
                port,
                dir,
                child,
                password: None,
            };
            let ready = eventually(Duration::from_secs(10), || {
                matches!(server.child.try_wait(), Ok(None))
                    && server.log().contains("Ready to accept connections")
            });
            if ready {
                return server;
            }
            eprintln!("TLS redis-server did not start:\n{}", server.log());
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("TLS redis-server did not start");
    }
}

impl Cluster {
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
}

impl Cluster {
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

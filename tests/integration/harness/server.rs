//! A throwaway `redis-server`: its own temp dir and loopback port, no persistence,
//! waited for until it answers, its log printed when the test panics, killed on drop.
//! Plain, password-protected or TLS-only; [`launch`] is the one start-and-retry loop
//! every server process of the harness (sentinels too) starts through.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

use super::eventually;
use super::tls::Certs;

/// A redis-server started for one test.
pub struct Redis {
    pub port: u16,
    pub dir: TempDir,
    child: Child,
    pub password: Option<String>,
    /// The extra `redis-server` arguments, kept for [`Redis::restart`].
    extra: Vec<String>,
}

impl Redis {
    /// A plain server.
    pub fn start() -> Redis {
        Redis::start_with(&[])
    }

    /// A server with extra `redis-server` arguments (e.g. `["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> Redis {
        Redis::start_at(None, extra)
    }

    /// A plain server whose wall clock (its `TIME`) reads `unix_ms` now and runs on
    /// from there (`clock::wall_clock_shim`).
    pub fn start_at_time(unix_ms: u64) -> Redis {
        let shim = super::clock::wall_clock_shim();
        let launched = launch(
            "redis",
            None,
            |dir, port, log| {
                let now = super::wall_ms() as i64;
                let mut cmd = plain_server(dir, port, log, &[]);
                cmd.env("LD_PRELOAD", &shim)
                    .env("WALL_CLOCK_OFFSET_MS", (unix_ms as i64 - now).to_string());
                cmd
            },
            |server| ping(&format!("redis://127.0.0.1:{}", server.port)),
        );
        Redis::from(launched, None)
    }

    /// A plain server on `port` (e.g. one a run was already told to use).
    pub fn start_on(port: u16) -> Redis {
        Redis::start_at(Some(port), &[])
    }

    fn start_at(port: Option<u16>, extra: &[&str]) -> Redis {
        let launched = launch(
            "redis",
            port,
            |dir, port, log| plain_server(dir, port, log, extra),
            |server| {
                ping(&format!(
                    "redis://{}127.0.0.1:{}",
                    password_part(extra),
                    server.port
                ))
            },
        );
        let mut redis = Redis::from(launched, password_of(extra));
        redis.extra = extra.iter().map(|a| a.to_string()).collect();
        redis
    }

    /// `kill -9`, then the same server again on the same port and dir at once: with
    /// `--appendonly yes` it comes back with its data, otherwise empty. (A port taken
    /// in between by someone else fails the restart; nothing else binds these.)
    pub fn restart(&mut self) {
        self.crash();
        self.start_again();
    }

    /// `kill -9` without a restart: the port refuses connections until
    /// [`Redis::start_again`].
    pub fn crash(&mut self) {
        let _ = kill(self.pid(), Signal::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the crashed server again, on its port and dir, and waits until it answers.
    pub fn start_again(&mut self) {
        let log = self.dir.path().join("redis.log");
        let extra = self.extra.clone();
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        for _ in 0..10 {
            self.child = plain_server(self.dir.path(), self.port, &log, &extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server");
            let mut exited = false;
            let up = eventually(Duration::from_secs(10), || {
                exited = !matches!(self.child.try_wait(), Ok(None));
                exited || ping(&self.url())
            });
            if up && !exited {
                return;
            }
            // The port may linger for a moment after the kill; try again.
            let _ = self.child.kill();
            let _ = self.child.wait();
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis on port {} did not restart:\n{}",
            self.port,
            self.log()
        );
    }

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
        let launched = launch(
            "redis",
            None,
            |dir, port, log| {
                let mut cmd = redis_server(dir, log);
                cmd.args(["--port", "0", "--tls-port", &port.to_string()])
                    .args(["--tls-cert-file", &certs.arg(&format!("{name}.crt"))])
                    .args(["--tls-key-file", &certs.arg(&format!("{name}.key"))])
                    .args(["--tls-ca-cert-file", &certs.arg("ca.crt")])
                    .args([
                        "--tls-auth-clients",
                        if auth_clients { "yes" } else { "no" },
                    ])
                    .args(extra);
                cmd
            },
            |server| server.log().contains("Ready to accept connections"),
        );
        Redis::from(launched, None)
    }

    fn from(launched: Launched, password: Option<String>) -> Redis {
        Redis {
            port: launched.port,
            dir: launched.dir,
            child: launched.child,
            password,
            extra: Vec::new(),
        }
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

    /// The value of a string key.
    pub fn get(&self, key: &str) -> Option<String> {
        self.cmd(&["GET", key])
    }

    /// A key's time to live in milliseconds (-2: no key, -1: no expiry).
    pub fn pttl(&self, key: &str) -> i64 {
        self.cmd(&["PTTL", key])
    }

    /// Whether the server says `ROLE` `role`; read without panicking (a demotion drops
    /// the old master's clients, a crashed one refuses).
    pub fn has_role(&self, role: &str) -> bool {
        let reply: Option<Vec<redis::Value>> = self
            .client()
            .get_connection()
            .and_then(|mut c| redis::cmd("ROLE").query(&mut c))
            .ok();
        reply.and_then(|r| r.into_iter().next())
            == Some(redis::Value::BulkString(role.as_bytes().to_vec()))
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

    /// A numeric field of an `INFO` section (`used_memory` of `memory`).
    /// The server's clock (`TIME`), ms: the clock `--once-per` slots are cut on.
    pub fn now_ms(&self) -> u64 {
        let (s, us): (u64, u64) = self.cmd(&["TIME"]);
        s * 1000 + us / 1000
    }

    /// Sleeps until the server's clock reads `at_ms` (the test's clock runs with it).
    pub fn sleep_until(&self, at_ms: u64) {
        let now = self.now_ms();
        if at_ms > now {
            std::thread::sleep(std::time::Duration::from_millis(at_ms - now));
        }
    }

    /// Whether `n` runs (waiters, `redlock wait`) are in the waiters set of the lock
    /// `name` and blocked in `BLPOP` (a holder blocks on its own wake list too,
    /// listening for a request to stop: it is not in the waiters set).
    pub fn waiting_blocked(&self, name: &str, n: usize) -> bool {
        let waiters: usize = self.cmd(&["SCARD", &format!("redlock:{{{name}}}:waiters")]);
        let clients: String = self.cmd(&["CLIENT", "LIST"]);
        waiters == n && clients.matches("cmd=blpop").count() >= n
    }

    pub fn info_number(&self, section: &str, field: &str) -> u64 {
        let info: String = self.cmd(&["INFO", section]);
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO {section} has no number {field}"))
    }

    /// Whether a key exists.
    pub fn exists(&self, key: &str) -> bool {
        self.cmd::<i64>(&["EXISTS", key]) == 1
    }

    /// All keys a run may not leave behind (for leftover checks): every key but the
    /// fence counters (`…:fence`), run histories (`…:history`) and the largest order
    /// key started (`…:order`), which outlive every lock by design, for `--retain` (the
    /// fencing number must keep growing; the history answers "did it run?" after the
    /// lock is gone; an older `--order-key` must stay outdated), and the server's data
    /// epoch (the lock-delay's, 30 days).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.cmd(&["KEYS", "*"]);
        keys.retain(|k| {
            !k.ends_with(":fence")
                && !k.ends_with(":history")
                && !k.ends_with(":order")
                && !is_data_epoch(k.as_bytes())
        });
        keys.sort();
        keys
    }

    /// Deletes every name's keys (each has a `{…}` hash tag), as if no run had used
    /// them: a fresh slate that is not a flush (the server's data epoch stays, so no
    /// later run waits out a lock-delay).
    pub fn forget_names(&self) {
        let _: i64 = self.cmd(&[
            "EVAL",
            "local n = 0 for _, k in ipairs(redis.call('KEYS', '*{*')) do n = n + redis.call('DEL', k) end return n",
            "0",
        ]);
    }

    /// Every key, with its PTTL (-1: no expiry), but the server's data epoch (one per
    /// server, 30 days: see [`is_data_epoch`]).
    pub fn all_keys(&self) -> Vec<(String, i64)> {
        let mut keys: Vec<String> = self.cmd(&["KEYS", "*"]);
        keys.retain(|k| !is_data_epoch(k.as_bytes()));
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let pttl = self.pttl(&k);
                (k, pttl)
            })
            .collect()
    }

    /// Every key's type, value (DUMP) and whether it expires: what a refusal must leave
    /// exactly as it was.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>, bool)> {
        let mut keys: Vec<String> = self.cmd(&["KEYS", "*"]);
        keys.sort();
        let mut conn = self.conn();
        keys.into_iter()
            .map(|k| {
                let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
                let expires = self.pttl(&k) >= 0;
                (k, dump, expires)
            })
            .collect()
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
///
/// Never one handed out before in this process: a host keeps the run ID it last saw at
/// each server's address (the lock-delay's evidence), so a later test's server on a
/// port an earlier one had would be a restarted server to the runs.
pub fn free_port() -> u16 {
    fresh_listener().local_addr().expect("free port").port()
}

/// A loopback listener on a port never handed out before in this process (see
/// [`free_port`]; a proxy's address is a server's to the runs, too).
pub fn fresh_listener() -> TcpListener {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("free port");
        let port = listener.local_addr().expect("free port").port();
        if !given.contains(&port) {
            given.push(port);
            return listener;
        }
    }
}

/// A server process that started and answered.
pub struct Launched {
    pub port: u16,
    pub dir: TempDir,
    pub child: Child,
    log: PathBuf,
}

impl Launched {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Starts a server process up to five times, each with a fresh temp dir and port (a
/// port taken between choosing and binding fails a start; `port` fixes it), until
/// `ready` holds within 10 s; panics with the last log. `command` gets the dir, the
/// port and the log path (`<what>.log` in the dir).
pub fn launch(
    what: &str,
    port: Option<u16>,
    mut command: impl FnMut(&Path, u16, &Path) -> Command,
    ready: impl Fn(&Launched) -> bool,
) -> Launched {
    let mut last_log = String::new();
    for _ in 0..5 {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = port.unwrap_or_else(free_port);
        let log = dir.path().join(format!("{what}.log"));
        let child = command(dir.path(), port, &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (see .ci/run)");
        let mut launched = Launched {
            port,
            dir,
            child,
            log,
        };
        let up = eventually(Duration::from_secs(10), || {
            matches!(launched.child.try_wait(), Ok(None)) && ready(&launched)
        });
        if up {
            return launched;
        }
        last_log = launched.log();
        let _ = launched.child.kill();
        let _ = launched.child.wait();
    }
    panic!("{what} did not start; last log:\n{last_log}");
}

/// A plain (not TLS) server on `port` with DEBUG allowed and `extra` arguments last.
fn plain_server(dir: &Path, port: u16, log: &Path, extra: &[&str]) -> Command {
    let mut cmd = redis_server(dir, log);
    cmd.args(["--port", &port.to_string()])
        .args(["--enable-debug-command", "local"])
        .args(extra);
    cmd
}

/// `redis-server` on loopback, without persistence, in `dir`, logging to `log`.
fn redis_server(dir: &Path, log: &Path) -> Command {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(log);
    cmd
}

/// Whether a server at `url` answers PING.
pub fn ping(url: &str) -> bool {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
        .is_ok()
}

/// The `--requirepass` among a server's arguments.
fn password_of(extra: &[&str]) -> Option<String> {
    extra
        .iter()
        .position(|a| *a == "--requirepass")
        .map(|i| extra[i + 1].to_string())
}

/// `:password@` for a URL, or nothing.
fn password_part(extra: &[&str]) -> String {
    password_of(extra).map_or(String::new(), |pw| format!(":{pw}@"))
}

/// Whether `key` is a server's data epoch (`<prefix>epoch`: the server's, not a name's;
/// the lock-delay's, kept 30 days), which no leftover check counts.
pub fn is_data_epoch(key: &[u8]) -> bool {
    key.ends_with(b"epoch") && !key.contains(&b'{')
}

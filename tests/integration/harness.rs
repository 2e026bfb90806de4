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

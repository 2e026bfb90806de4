//! Test harness: real servers and the built binaries, by fixture:
//!
//! - `server`: a throwaway `redis-server` (plain, password, TLS) and the one
//!   start-and-retry loop every server process goes through;
//! - `cluster`: a Redis Cluster joined by `redis-cli --cluster create`;
//! - `sentinel`: a redis-server in sentinel mode;
//! - `tls`: certificates made with `openssl`;
//! - `workload`: the mutual-exclusion workload (K contenders, a shared log);
//! - `checker`: the lock-set checker that judges the workload's log by log order;
//! - `sets`: runs of several names in the workload, and the partial-hold sampler;
//! - `proxy`: a switchable TCP proxy (blackhole, replies dropped, reset, latency);
//! - `nemesis`: faults injected while a workload runs, and their schedule;
//! - `clock`: hosts whose wall clocks are off (libfaketime);
//! - `holding`: a run holding a lock, its command parked until the test lets it go;
//! - here: the binaries under test with a clean `REDLOCK_*` environment, running them,
//!   waiting without fixed sleeps, scratch dirs, the exit codes and the key layout.

pub mod checker;
mod clock;
mod cluster;
mod holding;
pub mod nemesis;
pub mod proxy;
mod sentinel;
mod server;
pub mod sets;
mod terminal;
mod tls;
mod workload;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::kill;
use nix::unistd::Pid;
use tempfile::TempDir;

pub use clock::with_clock_offset;
pub use cluster::Cluster;
pub use holding::Holding;
pub use sentinel::{Monitored, Sentinel};
pub use server::{Redis, free_port};
pub use terminal::*;
pub use tls::Certs;
pub use workload::{Report, Underway, Workload, contend};

pub const RUN: &str = env!("CARGO_BIN_EXE_redlock-run");
pub const REDLOCK: &str = env!("CARGO_BIN_EXE_redlock");

/// A page of the documentation by its path from the project's root (`README.md`,
/// `docs/design/model.md`): its examples and tables are held to the code by tests.
pub fn doc(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every page of the documentation: `README.md` and `docs/**/*.md`, as paths from the
/// project's root, sorted.
pub fn doc_pages() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, pages: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("docs/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, pages);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(root).unwrap();
                pages.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec!["README.md".to_string()];
    walk(root, &root.join("docs"), &mut pages);
    pages.sort();
    pages
}

/// A fenced code block of a page.
pub struct Fence {
    /// The page, as in [`doc_pages`].
    pub page: String,
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// Its info string: the language, then words such as `test=ID` or `excerpt`.
    pub info: String,
    /// Its text, the fence's own indentation taken off each line.
    pub text: String,
}

impl Fence {
    /// The language of the block (the first word of its info string; "" when none).
    pub fn language(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }

    /// The `ID` of a `test=ID` word of its info string.
    pub fn test_id(&self) -> Option<&str> {
        self.info
            .split_whitespace()
            .find_map(|word| word.strip_prefix("test="))
    }
}

/// The fenced code blocks of a page (backtick fences, as the pages use; a closing fence
/// is at least as long as its opening one).
pub fn fences(page: &str) -> Vec<Fence> {
    let mut found = Vec::new();
    let mut open: Option<(usize, usize, usize, String, Vec<&str>)> = None;
    let text = doc(page);
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                open = Some((n + 1, indent, ticks, trimmed[ticks..].trim().into(), vec![]))
            }
            None => {}
            Some((start, indent, opened, info, body)) => {
                if ticks >= *opened && trimmed[ticks..].trim().is_empty() {
                    found.push(Fence {
                        page: page.to_string(),
                        line: *start,
                        info: std::mem::take(info),
                        text: body.iter().map(|l| format!("{l}\n")).collect(),
                    });
                    open = None;
                } else {
                    let cut = line.len() - line.trim_start().len();
                    body.push(&line[cut.min(*indent)..]);
                }
            }
        }
    }
    assert!(open.is_none(), "{page}: a fence is never closed");
    found
}

/// The text of the example tagged `test=ID` (a fence's info string such as
/// "sh test=ID"), in whichever page of the documentation holds it: the test that runs
/// an example finds it by its ID, wherever it moves.
pub fn example(id: &str) -> String {
    let mut tagged: Vec<Fence> = doc_pages()
        .iter()
        .flat_map(|page| fences(page))
        .filter(|fence| fence.test_id() == Some(id))
        .collect();
    assert_eq!(
        tagged.len(),
        1,
        "one fence must be tagged test={id} in README.md and docs/"
    );
    tagged.pop().unwrap().text
}

/// The `redlock-run` lines of the example tagged `test=ID`, as written, each to run
/// under `sh -c` with the binary this build made.
pub fn example_runs(id: &str) -> Vec<String> {
    example(id)
        .lines()
        .filter(|l| l.starts_with("redlock-run"))
        .map(|l| l.replacen("redlock-run", RUN, 1))
        .collect()
}

/// The lock key of `name` under the default prefix.
pub fn lock_key(name: &str) -> String {
    format!("redlock:{{{name}}}")
}

/// The metadata key of `name` under the default prefix.
pub fn meta_key(name: &str) -> String {
    format!("redlock:{{{name}}}:meta")
}

/// The value of a string key on `redis`.
pub fn get(redis: &Redis, key: &str) -> Option<String> {
    redis.get(key)
}

/// A key's time to live on `redis`, in milliseconds.
pub fn pttl(redis: &Redis, key: &str) -> i64 {
    redis.pttl(key)
}

fn clean(mut cmd: Command) -> Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("REDLOCK_") {
            cmd.env_remove(name);
        }
    }
    cmd.stdin(Stdio::null());
    cmd.env("XDG_RUNTIME_DIR", runtime_dir());
    cmd
}

/// The default local directory's parent for this test process's runs (`redlock` in it
/// is made by the first run): the host's queues and what it keeps of servers (run IDs,
/// slot maps) start empty each time the tests run, as on a fresh machine, and servers
/// of an earlier test run on the same ports are not restarted ones to them.
fn runtime_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("runtime-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .expect("the tests' runtime directory");
        dir
    })
}

/// `redlock-run` with a clean environment.
pub fn redlock_run() -> Command {
    clean(Command::new(RUN))
}

/// Whether `unshare --uts` works here.
pub fn hosts_can_be_namespaces() -> bool {
    Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// `redlock-run ARGS` as host `host`: in a UTS namespace whose host name is `host`.
pub fn on_host(host: &str, args: &[String], namespaces: bool) -> Command {
    if !namespaces {
        let mut cmd = redlock_run();
        cmd.args(args);
        return cmd;
    }
    let mut cmd = in_uts_namespace(host, RUN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd
}

/// `redlock ARGS` as host `host`: in a UTS namespace whose host name is `host`, or with
/// `REDLOCK_HOST=host` where namespaces cannot be made.
pub fn redlock_on_host(host: &str, namespaces: bool) -> Command {
    if !namespaces {
        let mut cmd = redlock();
        cmd.env("REDLOCK_HOST", host);
        return cmd;
    }
    in_uts_namespace(host, REDLOCK)
}

/// `program` in a new UTS namespace whose host name is `host`.
fn in_uts_namespace(host: &str, program: &str) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--uts",
        "sh",
        "-c",
        "hostname \"$0\" && exec \"$@\"",
        host,
        program,
    ]);
    cmd
}

/// The `ExecStart` of the shipped unit `contrib/systemd/UNIT` as `redlock-run`'s
/// arguments, each made local by `local` (a path of the target machine → this test's),
/// and the unit's text.
pub fn shipped_unit(unit: &str, local: impl Fn(&str) -> Option<String>) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("contrib/systemd")
            .join(unit),
    )
    .unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let mut args: Vec<String> = line.split_whitespace().map(String::from).collect();
    assert_eq!(args.remove(0), "/usr/bin/redlock-run");
    for a in &mut args {
        if let Some(here) = local(a) {
            *a = here;
        }
    }
    (text, args)
}

/// `ci` rounds, or `full` with `REDLOCK_FULL_FIGURES` set.
pub fn rounds(ci: usize, full: usize) -> usize {
    if std::env::var_os("REDLOCK_FULL_FIGURES").is_some() {
        full
    } else {
        ci
    }
}

/// The wall clock in ms (jobs write `date +%s%N`; tests compare with it).
pub fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
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
    // Drained while the command runs: a command that writes more than a pipe holds
    // (64 KiB) would block on a full pipe and never exit.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).ok();
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Output {
                status,
                stdout: stdout.join().unwrap_or_default(),
                stderr: stderr.join().unwrap_or_default(),
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

/// Exit statuses from the documented table, as the tests compare them.
pub mod codes {
    use redlock::exit::Code;

    pub const USAGE: i32 = Code::Usage.value() as i32;
    pub const UNREACHABLE: i32 = Code::Unreachable.value() as i32;
    pub const BUSY: i32 = Code::Busy.value() as i32;
    pub const REDIS: i32 = Code::Redis.value() as i32;
    pub const AUTH: i32 = Code::Auth.value() as i32;
    pub const LOST: i32 = Code::Lost.value() as i32;
    pub const MAX_HOLD: i32 = Code::MaxHold.value() as i32;
    pub const SUPERSEDED: i32 = Code::Superseded.value() as i32;
    pub const PREEMPTED: i32 = Code::Preempted.value() as i32;
    pub const CANNOT_EXECUTE: i32 = Code::CannotExecute.value() as i32;
    pub const NOT_FOUND: i32 = Code::NotFound.value() as i32;
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

/// The wrapper of the first job that logs `BEGIN <wrapper pid> …` to `log` after its
/// first `skip` lines (a job's `$PPID` is its wrapper), within 3 s; SIGKILLed `after`
/// later, while its job runs. Returns the wrapper's pid.
pub fn kill_first_begun(log: &Path, skip: usize, after: Duration) -> i32 {
    let start = std::time::Instant::now();
    let wrapper = loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(l) = text.lines().skip(skip).find(|l| l.starts_with("BEGIN")) {
            break l.split(' ').nth(1).unwrap().parse::<i32>().unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(3), "no run began");
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(after);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(wrapper),
        nix::sys::signal::Signal::SIGKILL,
    );
    wrapper
}

/// `redlock history NAME --json --limit 100` on `redis`, as a value.
pub fn history_json(redis: &Redis, name: &str) -> serde_json::Value {
    let out = output(redlock().args([
        "history",
        name,
        "--redis",
        &redis.url(),
        "--json",
        "--limit",
        "100",
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("history JSON")
}

/// `--key NAME --redis URL` for `redis`.
pub fn lock_args(redis: &Redis, name: &str) -> Vec<String> {
    vec!["--key".into(), name.into(), "--redis".into(), redis.url()]
}

/// Starts `redlock-run <args> -- sh -c <script>` in the background, stderr captured.
pub fn start_run(args: &[String], script: &str) -> Child {
    redlock_run()
        .args(args)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redlock-run")
}

/// Waits for a background run and returns (exit code, stderr).
pub fn finish(mut child: Child, limit: Duration) -> (i32, String) {
    let status = wait_child(&mut child, limit);
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut err)
        .ok();
    let code = status
        .code()
        .unwrap_or_else(|| panic!("wrapper killed by a signal: {status:?}; stderr: {err}"));
    (code, err)
}

/// `redlock-run <args> --wait 0 -- sh -c <script>` to completion: (code, stderr).
pub fn try_once(args: &[String], script: &str) -> (i32, String) {
    let out = output_within(
        redlock_run()
            .args(args)
            .args(["--wait", "0", "--", "sh", "-c", script]),
        Duration::from_secs(30),
    );
    (code(&out), stderr(&out))
}

pub fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

/// Lines of a wrapper's stderr that report a lost lock.
pub fn lost_lines(err: &str) -> usize {
    err.lines().filter(|l| l.contains("lost")).count()
}

/// How long a background run may take to get ready before the test calls it a hang.
pub const READY: Duration = Duration::from_secs(20);

/// Waits until a renewal lands after now. The test shortens the key's ttl to half of
/// what is left; only a renewal can raise it again. (Comparing with an earlier PTTL
/// reading is not enough: one taken in the millisecond of a renewal is never exceeded.)
pub fn renewed_after_now(redis: &Redis, key: &str) -> bool {
    let low = (pttl(redis, key) / 2).max(1);
    let set: i64 = redis.cmd(&["PEXPIRE", key, &low.to_string()]);
    assert_eq!(set, 1, "key {key} vanished");
    eventually(Duration::from_secs(10), || pttl(redis, key) > low + 50)
}

/// A later run that waits up to 10 s gets the lock (it was freed or expired), and
/// nothing is left in Redis after it.
pub fn acquires_later_and_leaves_nothing(redis: &Redis, name: &str) {
    let out = output_within(
        redlock_run()
            .args(lock_args(redis, name))
            .args(["--wait", "10s", "--", "true"]),
        Duration::from_secs(30),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(redis.keys().is_empty(), "left behind: {:?}", redis.keys());
}

/// The child of `wrapper` (by `/proc/<pid>/stat`'s parent field) that is `redlock-run`
/// itself: the run's group guard, which its wrapper forks.
pub fn guard_of(wrapper: i32) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|&p| {
            p != wrapper
                && std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|st| {
                    st.rsplit(')')
                        .next()
                        .unwrap_or_default()
                        .split_whitespace()
                        .nth(1)
                        == Some(wrapper.to_string().as_str())
                })
                && std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.starts_with(RUN))
        })
}

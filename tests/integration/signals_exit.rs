//! Signals, exit statuses and user errors of `redlock-run`, against real redis-server
//! processes, through a pipe and on a real pseudo-terminal.
//!
//! - forwarded signals: each of INT TERM HUP QUIT USR1 USR2 WINCH sent to the wrapper
//!   reaches the command exactly once (stdin from /dev/null, and on a pty);
//! - Ctrl-C typed at a pty reaches the command exactly once, many times in a row; an
//!   interactive command reads the terminal and the shell gets it back afterwards;
//! - exit statuses: all 256 codes pass through, death by signal N gives 128+N;
//! - the command starts with the same blocked and ignored signals as one started
//!   directly;
//! - every error a user can cause gives one stderr line, its documented code and no
//!   key left behind; odd key names round-trip.
//!
//! Children print a ready marker before the test signals them; nothing sleeps a fixed
//! time. Time limits only bound "does not hang".

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::unistd::Pid;

use crate::harness::*;

/// How long anything may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

/// The signals the wrapper forwards, with the names `trap` knows them by.
const FORWARDED: [(Signal, &str); 7] = [
    (Signal::SIGINT, "INT"),
    (Signal::SIGTERM, "TERM"),
    (Signal::SIGHUP, "HUP"),
    (Signal::SIGQUIT, "QUIT"),
    (Signal::SIGUSR1, "USR1"),
    (Signal::SIGUSR2, "USR2"),
    (Signal::SIGWINCH, "WINCH"),
];

// ---------------------------------------------------------------------------------
// Helpers: a wrapper started in the background, and a pseudo-terminal.

/// A process the test started and will wait for.
struct Running {
    child: Child,
    /// Everything the terminal showed (pty runs) — for failure messages.
    screen: Option<Screen>,
    /// Where stderr went (pipe runs) — for failure messages.
    stderr_file: Option<std::path::PathBuf>,
}

impl Running {
    fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// What the process printed so far (pty screen or stderr file).
    fn said(&self) -> String {
        match (&self.screen, &self.stderr_file) {
            (Some(screen), _) => screen.text(),
            (None, Some(path)) => std::fs::read_to_string(path).unwrap_or_default(),
            _ => String::new(),
        }
    }

    fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if start.elapsed() > HANG {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running after {HANG:?}; it said:\n{}", self.said());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits and returns the exit code (panics on death by signal).
    fn code(&mut self) -> i32 {
        let status = self.wait();
        status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {status:?}; said:\n{}", self.said()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `cmd` with stdin from /dev/null and stdout/stderr into files of `scratch`.
fn start_piped(mut cmd: Command, scratch: &Scratch, tag: &str) -> Running {
    let stderr_file = scratch.path(&format!("{tag}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(File::create(scratch.path(&format!("{tag}.stdout"))).unwrap())
        .stderr(File::create(&stderr_file).unwrap());
    Running {
        child: cmd.spawn().expect("spawn"),
        screen: None,
        stderr_file: Some(stderr_file),
    }
}

/// The output side of a pty master, drained by a thread so the terminal never blocks.
#[derive(Clone)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Screen {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

fn cloexec(fd: &OwnedFd) {
    fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("FD_CLOEXEC");
}

/// Starts `cmd` as a session leader whose controlling terminal is a fresh pty (stdin,
/// stderr and, unless `stdout` is given, stdout on the slave), like a login shell.
/// Returns the process and the master, to type on.
fn start_on_pty(mut cmd: Command, stdout: Option<File>) -> (Running, File) {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    // openpty does not set close-on-exec; other tests fork concurrently, and a stray
    // copy of the slave would keep the terminal alive.
    cloexec(&pty.master);
    cloexec(&pty.slave);
    cmd.stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave.try_clone().unwrap()));
    match stdout {
        Some(file) => cmd.stdout(file),
        None => cmd.stdout(Stdio::from(pty.slave.try_clone().unwrap())),
    };
    // SAFETY: setsid and ioctl are async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            // fd 0 is the pty slave: std sets up stdio before running this closure.
            if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn on pty");
    // The Command holds copies of the slave; only the child may keep it open.
    drop(cmd);
    drop(pty.slave);
    let master = File::from(pty.master);
    let screen = Screen(Arc::new(Mutex::new(Vec::new())));
    let mut reader = master.try_clone().expect("dup master");
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once every slave descriptor is closed.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.0.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    (
        Running {
            child,
            screen: Some(screen),
            stderr_file: None,
        },
        master,
    )
}

/// How a test starts the wrapper.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// stdin /dev/null, output to files (cron, CI).
    Pipe,
    /// a session leader on a pty (an interactive login).
    Pty,
}

fn start(cmd: Command, via: Via, scratch: &Scratch, tag: &str) -> (Running, Option<File>) {
    match via {
        Via::Pipe => (start_piped(cmd, scratch, tag), None),
        Via::Pty => {
            let (running, master) = start_on_pty(cmd, None);
            (running, Some(master))
        }
    }
}

/// `redlock-run --key NAME --redis URL -- <command>`.
fn run_cmd(redis: &Redis, key: &str, command: &[&OsStr]) -> Command {
    let mut cmd = redlock_run();
    cmd.args(["--key", key, "--redis", &redis.url(), "--"])
        .args(command);
    cmd
}

fn wait_file(path: &Path, needle: &str, running: &Running) {
    assert!(
        wait_for_file(path, needle, HANG),
        "{} never contained {needle:?}; the run said:\n{}",
        path.display(),
        running.said()
    );
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every key in the server, binary-safe.
fn raw_keys(redis: &Redis) -> Vec<Vec<u8>> {
    redis::cmd("KEYS")
        .arg("*")
        .query(&mut redis.conn())
        .expect("KEYS")
}

fn assert_no_keys(redis: &Redis, ctx: &str) {
    let keys = raw_keys(redis);
    assert!(
        keys.is_empty(),
        "{ctx}: keys left behind: {:?}",
        keys.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------
// The counting child.
//
// A shell `trap` cannot count deliveries: dash's handler only sets a flag, so a second
// signal that arrives before the trap action ran is merged into the first, and a
// doubled signal goes unseen. The counting child is this test binary run again as
// `helper_signal_counter`: its handler appends one line per delivery with write(2).
// (The kernel still merges a second signal sent before the first was delivered; any
// that arrives once the handler has started is counted.)

/// The directory of the counting child (`log`, `ready`, `stop`); also its switch.
const COUNTER_DIR: &str = "SIGNALS_EXIT_COUNTER_DIR";
/// The counting child's exit code.
const COUNTER_EXIT: &str = "SIGNALS_EXIT_COUNTER_EXIT";

static COUNTER_LOG: AtomicI32 = AtomicI32::new(-1);

extern "C" fn count_signal(sig: nix::libc::c_int) {
    let line: &[u8] = match Signal::try_from(sig) {
        Ok(Signal::SIGINT) => b"INT\n",
        Ok(Signal::SIGTERM) => b"TERM\n",
        Ok(Signal::SIGHUP) => b"HUP\n",
        Ok(Signal::SIGQUIT) => b"QUIT\n",
        Ok(Signal::SIGUSR1) => b"USR1\n",
        Ok(Signal::SIGUSR2) => b"USR2\n",
        Ok(Signal::SIGWINCH) => b"WINCH\n",
        _ => b"OTHER\n",
    };
    // SAFETY: write(2) is async-signal-safe; the fd stays open for the process's life.
    unsafe {
        nix::libc::write(
            COUNTER_LOG.load(Ordering::Relaxed),
            line.as_ptr().cast(),
            line.len(),
        )
    };
}

/// Not a test: the counting child, run by the signal tests through `redlock-run`
/// (ignored, and a no-op without its environment).
#[test]
#[ignore = "helper: the counting child of the signal tests"]
fn helper_signal_counter() {
    let Some(dir) = std::env::var_os(COUNTER_DIR).map(PathBuf::from) else {
        return;
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("log"))
        .expect("log");
    COUNTER_LOG.store(log.into_raw_fd(), Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::Handler(count_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for (sig, _) in FORWARDED {
        // SAFETY: the handler only calls write(2).
        unsafe { sigaction(sig, &action) }.expect("sigaction");
    }
    std::fs::write(dir.join("ready"), "ready\n").unwrap();
    while !dir.join("stop").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let code = std::env::var(COUNTER_EXIT)
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    std::process::exit(code);
}

/// `redlock-run --key KEY --redis URL -- <counting child>`, logging into `dir`, which
/// exits with `exit_code` once `dir/stop` exists.
fn counter_run(redis: &Redis, key: &str, dir: &Path, exit_code: i32) -> Command {
    std::fs::create_dir_all(dir).unwrap();
    let me = std::env::current_exe().expect("test binary");
    let mut cmd = run_cmd(
        redis,
        key,
        &[
            me.as_os_str(),
            OsStr::new("--ignored"),
            OsStr::new("--exact"),
            OsStr::new("signals_exit::helper_signal_counter"),
            OsStr::new("--nocapture"),
            OsStr::new("--test-threads=1"),
            OsStr::new("-q"),
        ],
    );
    cmd.env(COUNTER_DIR, dir)
        .env(COUNTER_EXIT, exit_code.to_string());
    cmd
}

// ---------------------------------------------------------------------------------
// 1. Signals sent to the wrapper reach the command once.

/// For each forwarded signal: a fresh run of the counting child; the test sends the
/// signal to the wrapper, waits for it in the log, and again a few times, then lets the
/// command exit with a code of its own. The log must hold one line per signal sent.
fn forwarded_signals_reach_the_command_once(via: Via) {
    const ROUNDS: usize = 5;
    let redis = Redis::start();
    let scratch = Scratch::new();
    for (i, (sig, name)) in FORWARDED.iter().enumerate() {
        let dir = scratch.path(name);
        let exit_code = 40 + i as i32;
        let key = format!("fwd-{name}");
        let cmd = counter_run(&redis, &key, &dir, exit_code);
        let (mut running, _master) = start(cmd, via, &scratch, name);
        wait_file(&dir.join("ready"), "ready", &running);
        assert!(
            redis.exists(&format!("redlock:{{{key}}}")),
            "{name}: lock not held while the command runs"
        );
        for round in 1..=ROUNDS {
            kill(running.pid(), *sig).expect("signal the wrapper");
            let arrived = eventually(HANG, || lines(&dir.join("log")).len() >= round);
            assert!(
                arrived,
                "{via:?} {name} #{round} never reached the command; said:\n{}",
                running.said()
            );
            assert_eq!(
                lines(&dir.join("log")).len(),
                round,
                "{via:?} {name} #{round} reached the command more than once"
            );
        }
        File::create(dir.join("stop")).unwrap();
        let code = running.code();
        assert_eq!(
            code,
            exit_code,
            "{via:?} {name}: exit code must follow the command; said:\n{}",
            running.said()
        );
        assert_eq!(
            lines(&dir.join("log")),
            vec![name.to_string(); ROUNDS],
            "{via:?} {name}: the command must see each signal exactly once"
        );
        assert_no_keys(&redis, &format!("{via:?} {name}"));
    }
}

#[test]
fn forwarded_signals_reach_the_command_once_through_a_pipe() {
    forwarded_signals_reach_the_command_once(Via::Pipe);
}

#[test]
fn forwarded_signals_reach_the_command_once_on_a_pty() {
    forwarded_signals_reach_the_command_once(Via::Pty);
}

// ---------------------------------------------------------------------------------
// 2. The terminal: Ctrl-C once, interactive reads, the terminal handed back.

/// The wrapper is a session leader on a pty and hands the terminal to the command:
/// Ctrl-C typed at the terminal must reach the command once, never also through the
/// wrapper. Pressed many times, each waited for, so that a late second copy shows.
#[test]
fn ctrl_c_on_a_pty_interrupts_the_command_exactly_once() {
    const PRESSES: usize = 25;
    let redis = Redis::start();
    let scratch = Scratch::new();
    let dir = scratch.path("counter");
    let log = dir.join("log");
    let (mut running, mut master) = start_on_pty(counter_run(&redis, "ctrl-c", &dir, 0), None);
    wait_file(&dir.join("ready"), "ready", &running);
    for press in 1..=PRESSES {
        master.write_all(b"\x03").unwrap();
        let arrived = eventually(HANG, || lines(&log).len() >= press);
        assert!(
            arrived,
            "Ctrl-C #{press} never reached the command; screen:\n{}",
            running.said()
        );
        assert_eq!(
            lines(&log).len(),
            press,
            "Ctrl-C #{press} reached the command more than once: {:?}",
            lines(&log)
        );
        assert!(
            running.child.try_wait().unwrap().is_none(),
            "the wrapper ended on Ctrl-C #{press}: {}",
            running.said()
        );
    }
    File::create(dir.join("stop")).unwrap();
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_eq!(
        lines(&log),
        vec!["INT".to_string(); PRESSES],
        "{PRESSES} Ctrl-C must give {PRESSES} SIGINTs"
    );
    assert_no_keys(&redis, "ctrl-c");
}

/// While the wrapper waits for a busy lock it is in the terminal's foreground: Ctrl-C
/// (on a pty) or SIGTERM (through a pipe) ends the wait with 128+N, the command never
/// runs and the holder's key is left as it was.
fn a_signal_ends_the_wait_for_a_busy_lock(via: Via) {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let _: String = redis.cmd(&["SET", "redlock:{busy}", "someone-else", "PX", "60000"]);
    let ran = scratch.path("ran");
    let mut cmd = redlock_run();
    cmd.args([
        "--key",
        "busy",
        "--redis",
        &redis.url(),
        "--wait",
        "forever",
    ])
    .args(["--verbose", "--", "touch"])
    .arg(&ran);
    let (mut running, master) = start(cmd, via, &scratch, "waiter");
    assert!(
        eventually(HANG, || running.said().contains("waiting for")),
        "no progress line; said:\n{}",
        running.said()
    );
    let expected = match (via, master) {
        (Via::Pty, Some(mut master)) => {
            master.write_all(b"\x03").unwrap();
            128 + Signal::SIGINT as i32
        }
        _ => {
            kill(running.pid(), Signal::SIGTERM).unwrap();
            128 + Signal::SIGTERM as i32
        }
    };
    assert_eq!(running.code(), expected, "{via:?}: {}", running.said());
    assert!(!ran.exists(), "{via:?}: the command ran without the lock");
    assert_eq!(
        redis.cmd::<String>(&["GET", "redlock:{busy}"]),
        "someone-else",
        "{via:?}: the holder's lock was touched"
    );
    assert_eq!(redis.keys(), ["redlock:{busy}"], "{via:?}: leftovers");
}

#[test]
fn ctrl_c_ends_the_wait_for_a_busy_lock_on_a_pty() {
    a_signal_ends_the_wait_for_a_busy_lock(Via::Pty);
}

#[test]
fn sigterm_ends_the_wait_for_a_busy_lock_through_a_pipe() {
    a_signal_ends_the_wait_for_a_busy_lock(Via::Pipe);
}

/// A login shell on a pty runs the wrapper, whose command reads a line from the
/// terminal; afterwards the shell reads the next line, which only works if the wrapper
/// gave the terminal's foreground back (else the shell's read fails with EIO).
#[test]
fn an_interactive_command_reads_the_terminal_and_the_shell_gets_it_back() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let p = |name: &str| scratch.path(name).display().to_string();
    let inner = format!(
        "echo ready > '{ready}'; read line; echo \"got:$line\" > '{got}'",
        ready = p("ready"),
        got = p("got")
    );
    let outer = scratch.script(
        "login",
        &format!(
            "'{run}' --key interactive --redis '{url}' -- sh -c '{inner_escaped}'\n\
             echo \"wrapper:$?\" > '{after}'\n\
             read line2\n\
             echo \"got2:$line2\" > '{got2}'",
            run = RUN,
            url = redis.url(),
            inner_escaped = inner.replace('\'', "'\\''"),
            after = p("after"),
            got2 = p("got2"),
        ),
    );
    let (mut running, mut master) = start_on_pty(Command::new(&outer), None);
    wait_file(&scratch.path("ready"), "ready", &running);
    master.write_all(b"typed at the terminal\n").unwrap();
    wait_file(&scratch.path("got"), "got:typed at the terminal", &running);
    wait_file(&scratch.path("after"), "wrapper:0", &running);
    master.write_all(b"back in the shell\n").unwrap();
    wait_file(&scratch.path("got2"), "got2:back in the shell", &running);
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_no_keys(&redis, "interactive");
}

// ---------------------------------------------------------------------------------
// 3. Exit statuses.

#[test]
fn every_exit_code_passes_through() {
    let redis = Redis::start();
    let url = redis.url();
    let threads = 3;
    let failures: Vec<String> = (0..threads)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for n in (0..=255).filter(|n| n % threads == t) {
                    let out = output_within(
                        redlock_run()
                            .args(["--key", &format!("code-{n}"), "--redis", &url, "--"])
                            .args(["sh", "-c", &format!("exit {n}")]),
                        HANG,
                    );
                    if out.status.code() != Some(n) || !out.stderr.is_empty() {
                        failures.push(format!("{n}: {:?} {}", out.status, stderr(&out)));
                    }
                }
                failures
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().expect("worker"))
        .collect();
    assert!(
        failures.is_empty(),
        "codes not passed through: {failures:#?}"
    );
    assert_no_keys(&redis, "exit codes");
}

/// Signals 1..=31 whose default action terminates the process (not CHLD, CONT, STOP,
/// TSTP, TTIN, TTOU, URG, WINCH).
fn terminating_signals() -> Vec<Signal> {
    (1..=31)
        .filter_map(|n| Signal::try_from(n).ok())
        .filter(|s| {
            !matches!(
                s,
                Signal::SIGCHLD
                    | Signal::SIGCONT
                    | Signal::SIGSTOP
                    | Signal::SIGTSTP
                    | Signal::SIGTTIN
                    | Signal::SIGTTOU
                    | Signal::SIGURG
                    | Signal::SIGWINCH
            )
        })
        .collect()
}

/// The command (a `sleep` with default dispositions) is killed by each terminating
/// signal, sent to it directly; the wrapper exits 128+N and releases.
#[test]
fn a_command_killed_by_signal_n_gives_128_plus_n() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let child = scratch.script(
        "victim",
        "ulimit -c 0\necho $$ > \"$1.tmp\"\nmv \"$1.tmp\" \"$1\"\nexec sleep 600",
    );
    let signals = terminating_signals();
    assert_eq!(signals.len(), 23, "{signals:?}");
    for sig in signals {
        let n = sig as i32;
        let pid_file = scratch.path(&format!("pid-{n}"));
        let cmd = run_cmd(
            &redis,
            &format!("sig-{n}"),
            &[child.as_os_str(), pid_file.as_os_str()],
        );
        let mut running = start_piped(cmd, &scratch, &format!("sig-{n}"));
        wait_file(&pid_file, "\n", &running);
        let pid = read_pid(&pid_file);
        // Signal the program itself, not the shell that is about to exec it.
        assert!(
            eventually(HANG, || std::fs::read_to_string(format!(
                "/proc/{pid}/comm"
            ))
            .is_ok_and(|c| c.trim() == "sleep")),
            "{sig}: the command never became sleep"
        );
        kill(Pid::from_raw(pid), sig).expect("signal the command");
        let code = running.code();
        assert_eq!(code, 128 + n, "{sig}: said {}", running.said());
        assert_eq!(running.said(), "", "{sig}: nothing to say on stderr");
        assert_no_keys(&redis, &format!("{sig}"));
    }
}

// ---------------------------------------------------------------------------------
// 4. The command's signal state.

/// The SigBlk and SigIgn lines of a `/proc/self/status` dump.
fn signal_state(status: &str) -> Vec<String> {
    let state: Vec<String> = status
        .lines()
        .filter(|l| l.starts_with("SigBlk:") || l.starts_with("SigIgn:"))
        .map(str::to_string)
        .collect();
    assert_eq!(state.len(), 2, "no signal state in {status:?}");
    state
}

fn cat_status_via(via: Via, redis: Option<&Redis>, scratch: &Scratch, tag: &str) -> String {
    let mut cmd = match redis {
        Some(redis) => run_cmd(
            redis,
            tag,
            &[OsStr::new("cat"), OsStr::new("/proc/self/status")],
        ),
        None => {
            let mut cmd = Command::new("cat");
            cmd.arg("/proc/self/status");
            cmd
        }
    };
    let out_path = scratch.path(&format!("{tag}.status"));
    let out = File::create(&out_path).unwrap();
    let mut running = match via {
        Via::Pipe => {
            cmd.stdout(out);
            start_piped_keep_stdout(cmd, scratch, tag)
        }
        Via::Pty => start_on_pty(cmd, Some(out)).0,
    };
    assert_eq!(running.code(), 0, "{tag}: {}", running.said());
    std::fs::read_to_string(out_path).unwrap()
}

fn start_piped_keep_stdout(mut cmd: Command, scratch: &Scratch, tag: &str) -> Running {
    let stderr_file = scratch.path(&format!("{tag}.stderr"));
    cmd.stdin(Stdio::null())
        .stderr(File::create(&stderr_file).unwrap());
    Running {
        child: cmd.spawn().expect("spawn"),
        screen: None,
        stderr_file: Some(stderr_file),
    }
}

fn command_signal_state_is_clean(via: Via) {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let direct = cat_status_via(via, None, &scratch, "direct");
    let wrapped = cat_status_via(via, Some(&redis), &scratch, "wrapped");
    assert_eq!(
        signal_state(&wrapped),
        signal_state(&direct),
        "{via:?}: the command must start with the blocked/ignored signals of a directly started one"
    );
    assert_no_keys(&redis, "signal state");
}

#[test]
fn the_command_starts_with_a_clean_signal_state_through_a_pipe() {
    command_signal_state_is_clean(Via::Pipe);
}

#[test]
fn the_command_starts_with_a_clean_signal_state_on_a_pty() {
    command_signal_state_is_clean(Via::Pty);
}

// ---------------------------------------------------------------------------------
// 5. Errors a user can cause.

/// Checks the SPEC's bar for a user error: exactly one stderr line, the documented
/// code, no panic text; returns the line.
fn one_error_line(out: &Output, expected: i32, ctx: &str) -> String {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(expected),
        "{ctx}: wrong status; stderr: {err}"
    );
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "{ctx}: exactly one stderr line wanted, got {err:?}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{ctx}: {err}"
    );
    err
}

fn run_with(args: &[&str]) -> Output {
    output_within(redlock_run().args(args), HANG)
}

#[test]
fn a_refused_port_is_unreachable_quickly() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let start = Instant::now();
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::UNREACHABLE, "refused");
    assert!(err.contains("refused"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a refused connection must fail fast, took {:?}",
        start.elapsed()
    );
}

#[test]
fn a_server_that_never_answers_is_unreachable_within_a_bound() {
    let redis = Redis::start();
    redis.pause();
    let start = Instant::now();
    let out = run_with(&["--key", "k", "--redis", &redis.url(), "--", "true"]);
    let took = start.elapsed();
    redis.resume();
    one_error_line(&out, codes::UNREACHABLE, "stopped server");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // Whatever the wrapper wrote before it gave up is processed now; no lock may come
    // of it.
    let _: String = redis.cmd(&["PING"]);
    assert_no_keys(&redis, "stopped server");
}

#[test]
fn a_wrong_password_is_an_auth_error_and_never_printed() {
    let redis = Redis::start_with(&["--requirepass", "pw"]);
    let secret = "hunter2-not-the-password";
    for (user, verbose) in [("", false), ("", true), ("default", false)] {
        let url = format!("redis://{user}:{secret}@127.0.0.1:{}", redis.port);
        let mut args = vec!["--key", "k", "--redis", &url];
        if verbose {
            args.push("--verbose");
        }
        args.extend(["--", "true"]);
        let out = run_with(&args);
        let ctx = format!("wrong password (user {user:?}, verbose {verbose})");
        let err = one_error_line(&out, codes::AUTH, &ctx);
        assert!(!err.contains(secret), "{ctx}: password printed: {err}");
        assert!(!stdout(&out).contains(secret), "{ctx}: password printed");
        assert_no_keys(&redis, &ctx);
    }
}

#[test]
fn no_password_for_a_server_that_requires_one_is_an_auth_error() {
    let redis = Redis::start_with(&["--requirepass", "pw"]);
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
    let err = one_error_line(&out, codes::AUTH, "no password");
    assert!(err.to_lowercase().contains("password"), "{err}");
    assert_no_keys(&redis, "no password");
}

#[test]
fn a_read_only_replica_is_a_redis_error() {
    let master = Redis::start();
    let port = master.port.to_string();
    let replica = Redis::start_with(&["--replicaof", "127.0.0.1", &port]);
    assert!(
        eventually(HANG, || replica
            .cmd::<String>(&["INFO", "replication"])
            .contains("master_link_status:up")),
        "the replica never linked up"
    );
    let out = run_with(&["--key", "k", "--redis", &replica.url(), "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "replica");
    assert!(err.contains("read-only"), "{err}");
    assert_no_keys(&master, "replica (master)");
    assert_no_keys(&replica, "replica");
}

#[test]
fn out_of_memory_is_a_redis_error_and_leaves_no_key() {
    let redis = Redis::start();
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let out = run_with(&["--key", "k", "--redis", &redis.url(), "--", "true"]);
    let err = one_error_line(&out, codes::REDIS, "OOM");
    assert!(err.contains("memory"), "{err}");
    let _: String = redis.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_no_keys(&redis, "OOM");
}

#[test]
fn usage_and_command_errors_give_one_line_and_their_code() {
    let redis = Redis::start();
    let url = redis.url();
    let scratch = Scratch::new();
    let no_exec = scratch.path("no-exec");
    std::fs::write(&no_exec, "#!/bin/sh\ntrue\n").unwrap();
    let no_exec = no_exec.display().to_string();
    let dir = scratch.dir.path().display().to_string();
    let r = ["--redis", url.as_str()];
    let with =
        |extra: &[&str]| -> Vec<String> { r.iter().chain(extra).map(|s| s.to_string()).collect() };
    // (arguments, expected status, text the line must contain)
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (with(&["--key", "k", "--"]), codes::USAGE, "command"),
        (with(&["--key", "k"]), codes::USAGE, "command"),
        (with(&["--key", "k", "true"]), codes::USAGE, "true"),
        (
            with(&["--key", "k", "--", "no-such-command-redlock"]),
            codes::NOT_FOUND,
            "no-such-command-redlock",
        ),
        (
            with(&["--key", "k", "--", &no_exec]),
            codes::CANNOT_EXECUTE,
            "no-exec",
        ),
        (
            with(&["--key", "k", "--", &dir]),
            codes::CANNOT_EXECUTE,
            "director",
        ),
        (with(&["--key", "", "--", "true"]), codes::USAGE, "empty"),
        (
            with(&["--key", "k", "--no-such-flag", "--", "true"]),
            codes::USAGE,
            "--no-such-flag",
        ),
        (
            with(&["--key", "k", "--ttl", "0", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--ttl", "banana", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--ttl", "30", "--", "true"]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "3s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--renew-every",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "10s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--renew-every",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--kill-after",
                "5s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&[
                "--key",
                "k",
                "--ttl",
                "3s",
                "--renew-every",
                "2900ms",
                "--kill-after",
                "1s",
                "--",
                "true",
            ]),
            codes::USAGE,
            "--ttl",
        ),
        (
            with(&["--key", "k", "--wait", "banana", "--", "true"]),
            codes::USAGE,
            "--wait",
        ),
        (
            with(&["--key", "k", "--kill-after", "soon", "--", "true"]),
            codes::USAGE,
            "--kill-after",
        ),
        (
            with(&["--key", "k", "--hold-min", "x", "--", "true"]),
            codes::USAGE,
            "--hold-min",
        ),
        (
            with(&["--key", "k", "--busy-exit-code", "300", "--", "true"]),
            codes::USAGE,
            "--busy-exit-code",
        ),
    ];
    for (args, expected, needle) in cases {
        let out = output_within(redlock_run().args(&args), HANG);
        let ctx = format!("{args:?}");
        let err = one_error_line(&out, expected, &ctx);
        assert!(
            err.contains(needle),
            "{ctx}: {err:?} should mention {needle:?}"
        );
        assert_no_keys(&redis, &ctx);
    }
}

#[test]
fn bad_urls_are_usage_errors_with_the_password_redacted() {
    let secret = "hunter2-url-secret";
    let urls = [
        "http://x".to_string(),
        format!("http://:{secret}@x:6379"),
        format!("redis://:{secret}@h:0"),
        format!("redis://user:{secret}@h:65536"),
        format!("redis://:{secret}@"),
        "garbage".to_string(),
        "redis:/x".to_string(),
    ];
    for url in urls {
        let out = run_with(&["--key", "k", "--redis", &url, "--", "true"]);
        let ctx = format!("URL {url:?}");
        let err = one_error_line(&out, codes::USAGE, &ctx);
        assert!(!err.contains(secret), "{ctx}: password printed: {err}");
    }
}

// ---------------------------------------------------------------------------------
// 6. Odd key names.

/// Names with bytes that are not UTF-8, a newline, glob characters and braces: the lock
/// is held under exactly `redlock:{NAME}` while the command runs, the command sees that
/// key in REDLOCK_KEY, and nothing is left afterwards.
#[test]
fn odd_key_names_round_trip() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let child = scratch.script(
        "holder",
        "printf %s \"$REDLOCK_KEY\" > \"$1/key\"\n\
         echo ready > \"$1/ready\"\n\
         while [ ! -e \"$1/stop\" ]; do sleep 0.02; done",
    );
    let names: [&[u8]; 9] = [
        b"\xff\xfe",
        b"caf\xc3\xa9 \xe2\x98\x83",
        b"line\nbreak",
        b"tab\tand space",
        b"*?[a-z]\\",
        b"{}",
        b"}{",
        b"{inner}x",
        b"a:b:{c}",
    ];
    for (i, name) in names.iter().enumerate() {
        let dir = scratch.path(&format!("n{i}"));
        std::fs::create_dir(&dir).unwrap();
        let mut cmd = redlock_run();
        cmd.arg("--key")
            .arg(OsStr::from_bytes(name))
            .args(["--redis", &redis.url(), "--"])
            .arg(&child)
            .arg(&dir);
        let mut running = start_piped(cmd, &scratch, &format!("n{i}"));
        let ctx = format!("name {:?}", String::from_utf8_lossy(name));
        wait_file(&dir.join("ready"), "ready", &running);
        let expected = [b"redlock:{".as_slice(), name, b"}"].concat();
        assert_eq!(
            std::fs::read(dir.join("key")).unwrap(),
            expected,
            "{ctx}: REDLOCK_KEY"
        );
        let held: Vec<u8> = redis::cmd("GET")
            .arg(&expected)
            .query::<Option<Vec<u8>>>(&mut redis.conn())
            .expect("GET")
            .unwrap_or_else(|| panic!("{ctx}: lock key not in Redis: {:?}", raw_keys(&redis)));
        assert_eq!(held.len(), 36, "{ctx}: the value is the token");
        File::create(dir.join("stop")).unwrap();
        assert_eq!(running.code(), 0, "{ctx}: {}", running.said());
        assert_no_keys(&redis, &ctx);
    }
}

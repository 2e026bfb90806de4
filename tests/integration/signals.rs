//! Signals of `redlock-run`, against real redis-server processes, through a pipe and
//! on a real pseudo-terminal:
//!
//! - forwarded signals: each of INT TERM HUP QUIT USR1 USR2 WINCH sent to the wrapper
//!   reaches the command exactly once (stdin from /dev/null, and on a pty);
//! - Ctrl-C typed at a pty reaches the command exactly once, many times in a row; an
//!   interactive command reads the terminal and the shell gets it back afterwards;
//! - the command starts with the same blocked and ignored signals as one started
//!   directly.
//!
//! Children print a ready marker before the test signals them; nothing sleeps a fixed
//! time. Time limits only bound "does not hang".

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::IntoRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};

use crate::harness::*;

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
// The counting child.
//
// A shell `trap` cannot count deliveries: dash's handler only sets a flag, so a second
// signal that arrives before the trap action ran is merged into the first, and a
// doubled signal goes unseen. The counting child is this test binary run again as
// `helper_signal_counter`: its handler appends one line per delivery with write(2).
// (The kernel still merges a second signal sent before the first was delivered; any
// that arrives once the handler has started is counted.)

/// The directory of the counting child (`log`, `ready`, `stop`); also its switch.
const COUNTER_DIR: &str = "SIGNALS_COUNTER_DIR";
/// The counting child's exit code.
const COUNTER_EXIT: &str = "SIGNALS_COUNTER_EXIT";

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
            OsStr::new("signals::helper_signal_counter"),
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
// Signals sent to the wrapper reach the command once.

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

/// A stop of the README's systemd unit: with `KillMode=mixed` systemd sends SIGTERM to
/// the main process (the wrapper) only, which forwards it once; the rest of the cgroup
/// gets SIGKILL only after TimeoutStopSec. The command must see SIGTERM exactly once.
/// (With the default `KillMode=control-group`, systemd would signal the command too,
/// and the forwarded copy would make two: the README unit says why it is `mixed`.)
#[test]
fn the_readme_systemd_unit_stops_the_command_with_one_sigterm() {
    let unit = example("systemd-unit");
    assert!(
        unit.lines().any(|l| l.trim() == "KillMode=mixed"),
        "the unit must use KillMode=mixed:\n{unit}"
    );
    let redis = Redis::start();
    let scratch = Scratch::new();
    let dir = scratch.path("systemd");
    let (mut running, _) = start(
        counter_run(&redis, "unit", &dir, 0),
        Via::Pipe,
        &scratch,
        "unit",
    );
    wait_file(&dir.join("ready"), "ready", &running);
    // systemctl stop: SIGTERM to the main PID (and SIGCONT, as systemd does).
    kill(running.pid(), Signal::SIGTERM).expect("SIGTERM the wrapper");
    kill(running.pid(), Signal::SIGCONT).expect("SIGCONT the wrapper");
    assert!(eventually(HANG, || !lines(&dir.join("log")).is_empty()));
    File::create(dir.join("stop")).unwrap();
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_eq!(lines(&dir.join("log")), vec!["TERM".to_string()]);
    assert_no_keys(&redis, "systemd stop");
}

// ---------------------------------------------------------------------------------
// The terminal: Ctrl-C once, interactive reads, the terminal handed back.

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
            running.is_running(),
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

/// The commands of the Ctrl-Z tests loop without forking (`:`, not `sleep`): a Ctrl-Z
/// that lands while dash is between its vfork and the child's exec stops the child but
/// not dash, which waits in the kernel for the child, unstoppable, so the group never
/// stops and no shell (bash, or the wrapper) sees the job stopped (`ps`: the shell `D+`
/// in `kernel_clone`, its child `T+`). The Ctrl-Z tests hung 3 times in 40 runs so.
///
/// A `bash` script with job control (`set -m`) on a pty runs the wrapper; Ctrl-Z stops
/// the command. Like any job, the shell must get control back (the script goes on),
/// and `fg` must resume the command, which then finishes with the lock still held.
#[test]
fn ctrl_z_stops_the_job_and_fg_resumes_it() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let p = |name: &str| scratch.path(name).display().to_string();
    let inner = format!(
        "echo ready > '{ready}'; while [ ! -e '{go}' ]; do :; done; echo \"$REDLOCK_TOKEN\" > '{done}'",
        ready = p("ready"),
        go = p("go"),
        done = p("done")
    );
    let outer = scratch.script(
        "job",
        &format!(
            "set -m\n\
             '{run}' --key tstp --redis '{url}' -- sh -c '{inner_escaped}'\n\
             echo \"stopped:$?\" > '{after}'\n\
             fg\n\
             echo \"fg:$?\" > '{fg}'",
            run = RUN,
            url = redis.url(),
            inner_escaped = inner.replace('\'', "'\\''"),
            after = p("after"),
            fg = p("fg"),
        ),
    );
    let mut bash = Command::new("bash");
    bash.arg(&outer);
    let (mut running, mut master) = start_on_pty(bash, None);
    wait_file(&scratch.path("ready"), "ready", &running);
    master.write_all(b"\x1a").unwrap();
    // The shell has control again: the wrapper reported itself stopped (128+SIGTSTP).
    wait_file(&scratch.path("after"), "stopped:148", &running);
    let token = get(&redis, &lock_key("tstp")).expect("still locked while stopped");
    std::fs::write(scratch.path("go"), "").unwrap();
    wait_file(&scratch.path("fg"), "fg:0", &running);
    assert_eq!(
        std::fs::read_to_string(scratch.path("done"))
            .unwrap()
            .trim(),
        token
    );
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_no_keys(&redis, "tstp");
}

/// A command that stops itself as it starts (in the first milliseconds, while the
/// wrapper sets up its supervision) is a stopped job all the same: the shell gets
/// control back and `fg` resumes it.
#[test]
fn a_command_stopped_as_it_starts_is_a_stopped_job() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let p = |name: &str| scratch.path(name).display().to_string();
    let inner = format!("kill -TSTP $$; echo resumed > '{done}'", done = p("done"));
    let outer = scratch.script(
        "job",
        &format!(
            "set -m\n\
             '{run}' --key tstp-early --redis '{url}' -- sh -c '{inner_escaped}'\n\
             echo \"stopped:$?\" > '{after}'\n\
             fg\n\
             echo \"fg:$?\" > '{fg}'",
            run = RUN,
            url = redis.url(),
            inner_escaped = inner.replace('\'', "'\\''"),
            after = p("after"),
            fg = p("fg"),
        ),
    );
    let mut bash = Command::new("bash");
    bash.arg(&outer);
    let (mut running, _master) = start_on_pty(bash, None);
    wait_file(&scratch.path("after"), "stopped:148", &running);
    wait_file(&scratch.path("fg"), "fg:0", &running);
    assert_eq!(read_trimmed(&scratch.path("done")), "resumed");
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_no_keys(&redis, "tstp-early");
}

/// Stopped for longer than the ttl: the lease ran out, so on `fg` the command is
/// stopped instead of resumed, with the lost-lock code and a line that says why.
#[test]
fn ctrl_z_past_the_ttl_loses_the_lock_on_fg() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let p = |name: &str| scratch.path(name).display().to_string();
    let inner = format!(
        "echo ready > '{ready}'; while :; do :; done",
        ready = p("ready"),
    );
    let outer = scratch.script(
        "job",
        &format!(
            "set -m\n\
             '{run}' --key tstp-long --ttl 1s --redis '{url}' -- sh -c '{inner_escaped}' 2> '{err}'\n\
             echo \"stopped:$?\" > '{after}'\n\
             while [ ! -e '{go}' ]; do sleep 0.05; done\n\
             fg\n\
             echo \"fg:$?\" > '{fg}'",
            run = RUN,
            url = redis.url(),
            inner_escaped = inner.replace('\'', "'\\''"),
            err = p("err"),
            after = p("after"),
            go = p("go"),
            fg = p("fg"),
        ),
    );
    let mut bash = Command::new("bash");
    bash.arg(&outer);
    let (mut running, mut master) = start_on_pty(bash, None);
    wait_file(&scratch.path("ready"), "ready", &running);
    master.write_all(b"\x1a").unwrap();
    wait_file(&scratch.path("after"), "stopped:148", &running);
    // Past the ttl, seen from the server: the key is gone.
    let key = lock_key("tstp-long");
    assert!(eventually(Duration::from_secs(20), || !redis.exists(&key)));
    std::fs::write(scratch.path("go"), "").unwrap();
    wait_file(
        &scratch.path("fg"),
        &format!("fg:{}", codes::LOST),
        &running,
    );
    let err = std::fs::read_to_string(scratch.path("err")).unwrap();
    assert!(err.contains("lost"), "{err}");
    assert_eq!(running.code(), 0, "{}", running.said());
    assert_no_keys(&redis, "tstp-long");
}

// ---------------------------------------------------------------------------------
// The command's signal state.

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
            start_keeping_stdout(cmd, scratch, tag)
        }
        Via::Pty => start_on_pty(cmd, Some(out)).0,
    };
    assert_eq!(running.code(), 0, "{tag}: {}", running.said());
    std::fs::read_to_string(out_path).unwrap()
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

/// The `SigIgn` and `SigBlk` masks of `/proc/self/status` as read by a command started
/// by `sh -c 'trap "" <ignored>; exec <inner> grep …'`.
fn masks_under(ignored: &str, inner: &str) -> (u64, u64) {
    let out = output(Command::new("sh").args([
        "-c",
        &format!("trap '' {ignored}; exec {inner} grep -E '^Sig(Ign|Blk)' /proc/self/status"),
    ]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let mask = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.rsplit('\t').next().unwrap().trim(), 16).unwrap()
    };
    (mask("SigIgn"), mask("SigBlk"))
}

/// The bit of `sig` in a `/proc` signal mask.
fn bit(sig: Signal) -> u64 {
    1 << (sig as i32 - 1)
}

/// Signals ignored when redlock-run starts (a script's `cmd &` ignores INT and QUIT, a
/// CI agent INT, `trap '' SIG`) are taken over, and the command starts with them at
/// their default (newcomer-5 P12); SIGHUP ignored at entry (`nohup`) stays ignored for
/// the command, as under `nohup` without the wrapper; nothing is blocked.
#[test]
fn signals_ignored_at_start_are_reset_for_the_command_but_nohup() {
    let redis = Redis::start();
    let ignored = "HUP INT QUIT TERM USR1 USR2 WINCH";
    let (direct, _) = masks_under(ignored, "");
    let each = [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGWINCH,
    ];
    assert!(each.iter().all(|s| direct & bit(*s) != 0), "{direct:x}");
    let inner = format!(
        "{RUN} --key ign --redis {} --preempt-signal USR1 --",
        redis.url()
    );
    let (wrapped, blocked) = masks_under(ignored, &inner);
    let reset: u64 = each[1..].iter().map(|s| bit(*s)).sum();
    assert_eq!(
        wrapped,
        direct & !reset,
        "ignored {wrapped:x}, expected {:x}: only HUP stays ignored",
        direct & !reset
    );
    assert_eq!(blocked, 0, "blocked {blocked:x}");
    assert_no_keys(&redis, "ignored signals");
}

/// A wrapper started with SIGINT ignored (`trap '' INT; exec redlock-run`, as a CI
/// agent or a script's `cmd &` does): `--preempt-signal INT` from `redlock preempt`,
/// and a SIGINT sent to the wrapper, reach the command, whose own `trap … INT` works
/// (newcomer-5 P12: the deploy ran on 16 s past the request).
#[test]
fn sigint_reaches_the_command_of_a_wrapper_started_with_it_ignored() {
    let redis = Redis::start();
    let s = Scratch::new();
    for (name, how) in [("int-preempt", "preempt"), ("int-forward", "forward")] {
        let (ready, got) = (
            s.path(&format!("{name}.ready")),
            s.path(&format!("{name}.got")),
        );
        let script = format!(
            "trap 'echo INT > {got}; exit 0' INT; touch {ready}; while :; do sleep 0.05; done",
            got = got.display(),
            ready = ready.display()
        );
        let wrapper = Command::new("sh")
            .args(["-c", "trap '' INT; exec \"$@\"", "sh", RUN])
            .args(lock_args(&redis, name))
            .args([
                "--ttl",
                "3s",
                "--preempt-signal",
                "INT",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        assert!(wait_for_file(&ready, "", READY), "{name}: never ready");
        if how == "preempt" {
            let out = output(redlock().args(["preempt", name, "--redis", &redis.url()]));
            assert_eq!(code(&out), 0, "{}", stderr(&out));
        } else {
            kill(
                nix::unistd::Pid::from_raw(wrapper.id() as i32),
                Signal::SIGINT,
            )
            .unwrap();
        }
        let (status, err) = finish(wrapper, Duration::from_secs(20));
        assert!(
            wait_for_file(&got, "INT", Duration::from_secs(1)),
            "{name}: the command never saw SIGINT (exit {status}): {err}"
        );
    }
    assert_no_keys(&redis, "sigint");
}

/// (issue 60, item 1) Ctrl-C at the terminal reaches the command's group, never the
/// wrapper; a command that dies of it was stopped from the terminal all the same, as
/// by a `kill -INT` of the wrapper: "stopped on request" in the history, `"stopped":
/// true` in the `exited` event, `outcome="stopped"` in the metrics. It was "exit 130",
/// no `stopped`, `outcome="ran"`.
#[test]
fn ctrl_c_at_the_terminal_is_a_stop_in_every_view() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let (ready, events, metrics) = (
        scratch.path("ready"),
        scratch.path("events"),
        scratch.path("m.prom"),
    );
    let script = format!("echo ready > '{}'; exec sleep 60", ready.display());
    let mut cmd = redlock_run();
    cmd.args([
        "--key",
        "ctrlc",
        "--redis",
        &redis.url(),
        "--once-per",
        "1h",
    ])
    .arg("--events")
    .arg(&events)
    .arg("--metrics")
    .arg(&metrics)
    .args(["--", "sh", "-c", &script]);
    let (mut running, mut master) = start_on_pty(cmd, None);
    wait_file(&ready, "ready", &running);
    master.write_all(b"\x03").unwrap();
    assert_eq!(running.code(), 130, "{}", running.said());
    let history = redlock()
        .args(["history", "ctrlc", "--redis", &redis.url()])
        .output()
        .unwrap();
    let history = String::from_utf8_lossy(&history.stdout).to_string();
    assert!(history.contains("stopped on request"), "history: {history}");
    let events = std::fs::read_to_string(&events).unwrap();
    let exited = events
        .lines()
        .find(|l| l.contains("\"exited\""))
        .unwrap_or_else(|| panic!("no exited event: {events}"));
    assert!(exited.contains("\"stopped\":true"), "{exited}");
    let metrics = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        metrics.contains("redlock_last_outcome{name=\"ctrlc\",outcome=\"stopped\"} 1"),
        "{metrics}"
    );
}

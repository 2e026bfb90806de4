//! Building and starting the command: the PATH look-up before any lock is taken
//! (127 not found, 126 not executable), the child's process group, terminal hand-over,
//! parent-death signal and environment, and the exit status it ends with.
//!
//! The child is spawned from the main thread, which lives as long as the wrapper: the
//! parent-death signal fires when the *thread* that forked exits, so spawning from a
//! short-lived thread would kill the child early.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, Signal, killpg, signal};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, setpgid, tcgetpgrp, tcsetpgrp};
use tokio::process::{Child, Command};

use crate::error::{Error, Kind, Result};
use crate::exit::{self, Code};
use crate::report::printable;

/// Environment variables given to the command.
pub mod env {
    /// The Redis key of the lock.
    pub const KEY: &str = "REDLOCK_KEY";
    /// The lock name as given to --key.
    pub const NAME: &str = "REDLOCK_NAME";
    /// This holder's token (the lock key's value).
    pub const TOKEN: &str = "REDLOCK_TOKEN";
    /// The ttl in milliseconds.
    pub const TTL_MS: &str = "REDLOCK_TTL_MS";
    /// The fencing number of this acquisition (grows with every acquisition).
    pub const FENCE: &str = "REDLOCK_FENCE";
    /// The semaphore slot held (`--limit`).
    pub const SLOT: &str = "REDLOCK_SLOT";
    /// `--once-per`: the start of this run's slot (Unix ms, the server's clock).
    pub const SLOT_START: &str = "REDLOCK_SLOT_START";
    /// `--once-per`, `--once-id`: this run's attempt in its slot or for its ID (1 for the
    /// first start).
    pub const ATTEMPT: &str = "REDLOCK_ATTEMPT";

    /// The variable that holds `name`'s token (`REDLOCK_TOKEN_<NAME>`), fencing number
    /// (`REDLOCK_FENCE_<NAME>`) or pool slot (`REDLOCK_SLOT_<NAME>`): `base`, `_`, and
    /// the name in upper case with every character other than A-Z and 0-9 as `_` (the
    /// name `deploy-slots` gives `FENCE` the suffix `_DEPLOY_SLOTS`). That is one to
    /// one only for names of lower-case letters, digits and `-`; any other name (`a.b`,
    /// `A_B`, `a_b`) gets `_x` and 12 hex digits of its bytes' FNV-1a hash after it
    /// (`FENCE` then gets `_A_B_x…`), which no name of the first sort can end with (they
    /// give upper case only): two names never share a variable.
    pub fn of_name(base: &str, name: &[u8]) -> String {
        let upper: String = name
            .iter()
            .map(|b| match b.to_ascii_uppercase() {
                c @ (b'A'..=b'Z' | b'0'..=b'9') => c as char,
                _ => '_',
            })
            .collect();
        let plain = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
        if plain {
            return format!("{base}_{upper}");
        }
        format!(
            "{base}_{upper}_x{:012x}",
            crate::hash::fnv1a(name) & 0xffff_ffff_ffff
        )
    }
}

/// Finds the program before any lock is taken, like the shell: a name with a slash is a
/// path, anything else is looked up on PATH.
pub fn resolve(program: &OsStr) -> Result<PathBuf> {
    let shown = printable(program.as_bytes());
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => not_found(&shown),
            _ => cannot_execute(&shown, &e.to_string()),
        })?;
        if meta.is_dir() {
            return Err(cannot_execute(&shown, "is a directory"));
        }
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(cannot_execute(&shown, "permission denied (not executable)"));
        }
        return Ok(path);
    }
    which::which(program).map_err(|_| {
        // `which` skips non-executable matches; say so when one exists.
        let found = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        });
        match found {
            Some(p) => cannot_execute(
                &p.display().to_string(),
                "permission denied (not executable)",
            ),
            None => not_found(&shown),
        }
    })
}

fn not_found(name: &str) -> Error {
    Error::new(
        Kind::NotFound,
        format!("command not found: {name}; check the name and PATH"),
    )
}

fn cannot_execute(name: &str, why: &str) -> Error {
    Error::new(Kind::CannotExecute, format!("cannot execute {name}: {why}"))
}

/// The terminal the command is handed, when stdin is a terminal whose foreground group
/// is ours (an interactive run; not a background job, cron or CI).
pub fn foreground_terminal() -> Option<BorrowedFd<'static>> {
    // SAFETY: fd 0 is never closed by the wrapper, so it outlives every use here.
    let fd: BorrowedFd<'static> = unsafe { BorrowedFd::borrow_raw(0) };
    match tcgetpgrp(fd) {
        Ok(pgrp) if pgrp == getpgrp() => Some(fd),
        _ => None,
    }
}

/// A started command.
pub struct Started {
    pub child: Child,
    pub group: ProcessGroup,
    terminal: Option<BorrowedFd<'static>>,
}

/// The command's process group, whose id is the command's pid.
///
/// A process group id cannot be reused while any process is in the group, whether or
/// not its leader has been reaped. So signalling the group stays safe after the leader
/// exits as long as the group is not empty — which is what [`ProcessGroup::stop_stragglers`]
/// relies on: it looks (signal 0) before each signal and stops at the first ESRCH. The
/// window left is a group that empties between the look and the signal *and* whose id
/// a new process takes for a group of its own in that instant; the wrapper is the
/// members' subreaper, so their pids are not released until it reaps them, which
/// narrows it further. (process-wrap stops signalling at the reap instead; we must not,
/// or a job's background processes would run on after the lock is released.)
#[derive(Debug, Clone, Copy)]
pub struct ProcessGroup {
    pgid: Pid,
    leader_reaped: bool,
}

impl ProcessGroup {
    pub fn id(&self) -> Pid {
        self.pgid
    }

    /// Signals every process of the group (errors ignored: the group may be gone).
    pub fn signal(&self, sig: Signal) {
        let _ = killpg(self.pgid, sig);
    }

    /// SIGTERM, then SIGCONT so a stopped process can act on it.
    pub fn terminate(&self) {
        self.stop_with(Signal::SIGTERM);
    }

    /// `sig` (a preempted run's `--preempt-signal`), then SIGCONT so a stopped process
    /// can act on it.
    pub fn stop_with(&self, sig: Signal) {
        self.signal(sig);
        self.signal(Signal::SIGCONT);
    }

    /// Notes that the leader (the command itself) was reaped.
    pub fn leader_exited(&mut self) {
        self.leader_reaped = true;
    }

    fn is_empty(&self) -> bool {
        killpg(self.pgid, None) == Err(Errno::ESRCH)
    }

    /// After the command exits, anything it left in its process group is stopped
    /// (SIGTERM now, SIGKILL at `kill_at`) before the lock is released, so no part of the
    /// job outlives the lock. The caller bounds `kill_at` by the lease. Orphans are
    /// reaped when the wrapper is their subreaper.
    pub async fn stop_stragglers(&self, kill_at: Duration) {
        debug_assert!(self.leader_reaped, "only after the command itself exited");
        if self.is_empty() {
            return;
        }
        self.terminate();
        let mut killed = false;
        loop {
            self.reap();
            if self.is_empty() {
                return;
            }
            let now = crate::clock::now();
            if !killed && now >= kill_at {
                self.signal(Signal::SIGKILL);
                killed = true;
            } else if killed && now >= kill_at + Duration::from_secs(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Reaps the members that exited (the wrapper is their subreaper).
    fn reap(&self) {
        let group = Pid::from_raw(-self.pgid.as_raw());
        while let Ok(status) = waitpid(group, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
    }
}

/// Starts `argv` in its own process group with the lock's environment, the signals
/// `defaults` at their default disposition and no signal blocked.
pub fn spawn(
    program: &Path,
    argv: &[OsString],
    envs: &[(&str, &OsStr)],
    terminal: Option<BorrowedFd<'static>>,
    defaults: &[Signal],
) -> Result<Started> {
    let mut cmd = Command::new(program);
    cmd.arg0(&argv[0]).args(&argv[1..]);
    for (name, value) in envs {
        cmd.env(name, value);
    }
    if terminal.is_some() {
        // The wrapper becomes a background process once the command owns the terminal;
        // taking the terminal back must not stop it.
        // SAFETY: setting a signal disposition to SIG_IGN.
        unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) }.ok();
    }
    in_the_child(&mut cmd, terminal, defaults.to_vec());
    cmd.kill_on_drop(false);
    let child = cmd.spawn().map_err(|e| {
        let name = printable(argv[0].as_bytes());
        match e.kind() {
            std::io::ErrorKind::NotFound => not_found(&name),
            _ => cannot_execute(&name, &e.to_string()),
        }
    })?;
    let pgid = Pid::from_raw(child.id().map(|id| id as i32).unwrap_or(0));
    // Both sides set the group and the terminal, so neither order of scheduling races.
    let _ = setpgid(pgid, pgid);
    if let Some(fd) = terminal {
        let _ = tcsetpgrp(fd, pgid);
    }
    Ok(Started {
        child,
        group: ProcessGroup {
            pgid,
            leader_reaped: false,
        },
        terminal,
    })
}

impl Started {
    /// Takes the terminal back for the wrapper's group (after the command ended).
    pub fn restore_terminal(&self) {
        if let Some(fd) = self.terminal {
            let _ = tcsetpgrp(fd.as_fd(), getpgrp());
        }
    }

    /// Whether the command runs as an interactive job (it was handed the terminal).
    pub fn is_job(&self) -> bool {
        self.terminal.is_some()
    }

    /// The stop signal, when the command was stopped by job control (Ctrl-Z: SIGTSTP;
    /// SIGTTIN/SIGTTOU). Looks with `waitid(WSTOPPED | WNOHANG)`, which never reaps an
    /// exit (that stays for the child's own wait).
    pub fn stopped_by(&self) -> Option<Signal> {
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG;
        match waitid(Id::Pid(self.group.pgid), flags) {
            Ok(WaitStatus::Stopped(_, sig)) => Some(sig),
            _ => None,
        }
    }

    /// Stops the wrapper the way the command was stopped, so that the shell that runs
    /// it as a job sees the job stopped and takes its terminal back; returns when the
    /// job is continued (`fg`, `bg`). The lease is not renewed meanwhile: the caller
    /// checks it before [`Started::resume`].
    pub fn stop_as_job(&self, sig: Signal) {
        self.restore_terminal();
        // SIGTTOU is ignored by the wrapper while it has handed the terminal over.
        let own = if sig == Signal::SIGTSTP {
            Signal::SIGTSTP
        } else {
            Signal::SIGSTOP
        };
        let _ = nix::sys::signal::raise(own);
    }

    /// Hands the terminal back to the command (when the wrapper has it) and continues
    /// it.
    pub fn resume(&self) {
        if let Some(fd) = self.terminal
            && tcgetpgrp(fd.as_fd()) == Ok(getpgrp())
        {
            let _ = tcsetpgrp(fd.as_fd(), self.group.pgid);
        }
        self.group.signal(Signal::SIGCONT);
    }
}

/// What the child does between fork and exec: a process group of its own, the
/// terminal's foreground (when handed one), the default disposition for `defaults` and
/// an empty signal mask (whatever the wrapper inherited: see `signals.rs`), and the
/// parent-death signal, re-checking the parent afterwards in case the wrapper died
/// before it was armed.
fn in_the_child(cmd: &mut Command, terminal: Option<BorrowedFd<'static>>, defaults: Vec<Signal>) {
    let parent = getpid();
    let unblocked = nix::sys::signal::SigSet::empty();
    let tty_raw = terminal.map(|fd| std::os::fd::AsRawFd::as_raw_fd(&fd));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
            if let Some(raw) = tty_raw {
                let fd = BorrowedFd::borrow_raw(raw);
                let _ = tcsetpgrp(fd, getpid());
                signal(Signal::SIGTTOU, SigHandler::SigDfl)?;
            }
            for sig in &defaults {
                signal(*sig, SigHandler::SigDfl)?;
            }
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_SETMASK,
                Some(&unblocked),
                None,
            )?;
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                if nix::unistd::getppid() != parent {
                    // The wrapper died before the parent-death signal was armed.
                    nix::libc::_exit(exit::from_signal(Signal::SIGKILL as i32) as i32);
                }
            }
            Ok(())
        });
    }
}

/// The exit status the wrapper reports for the command's status: its code, or 128+N
/// when a signal killed it.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(sig)) => exit::from_signal(sig),
        _ => Code::Internal.value(),
    }
}

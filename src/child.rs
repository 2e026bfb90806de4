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

use nix::sys::signal::{SigHandler, Signal, signal};
use nix::unistd::{Pid, getpgrp, getpid, setpgid, tcgetpgrp, tcsetpgrp};
use tokio::process::{Child, Command};

use crate::error::{Error, Result};
use crate::exit::{self, Code};

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
}

/// Finds the program before any lock is taken, like the shell: a name with a slash is a
/// path, anything else is looked up on PATH.
pub fn resolve(program: &OsStr) -> Result<PathBuf> {
    let shown = crate::keys::display_bytes(program.as_bytes());
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
        Code::NotFound,
        format!("command not found: {name}; check the name and PATH"),
    )
}

fn cannot_execute(name: &str, why: &str) -> Error {
    Error::new(Code::CannotExecute, format!("cannot execute {name}: {why}"))
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
    /// The command's process group (its pid).
    pub pgid: Pid,
    terminal: Option<BorrowedFd<'static>>,
}

/// Starts `argv` in its own process group with the lock's environment.
pub fn spawn(
    program: &Path,
    argv: &[OsString],
    envs: &[(&str, &OsStr)],
    terminal: Option<BorrowedFd<'static>>,
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
    let parent = getpid();
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
    cmd.kill_on_drop(false);
    let child = cmd.spawn().map_err(|e| {
        let name = crate::keys::display_bytes(argv[0].as_bytes());
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
        pgid,
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

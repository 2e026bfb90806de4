//! Which signals the wrapper takes over and how they reach the command.
//!
//! THE RULE. The command runs in a process group of its own. When the wrapper's stdin is
//! the terminal and the wrapper is in the terminal's foreground, that group is made the
//! terminal's foreground group for the command's lifetime (and the wrapper's group is
//! given the terminal back afterwards). Therefore:
//!
//! - keys typed at the terminal (Ctrl-C, Ctrl-\, window size changes) reach the command's
//!   group directly from the kernel and never reach the wrapper, so the wrapper forwards
//!   nothing for them: the command sees Ctrl-C exactly once;
//! - INT, TERM, HUP, QUIT, USR1, USR2 and WINCH that reach the wrapper were sent by a
//!   process (`kill`, systemd, a CI runner) and are forwarded once, to the command's
//!   whole process group;
//! - before the command starts (while waiting for the lock), INT, TERM, HUP and QUIT end
//!   the wait: nothing is left locked and the exit status is 128+N.
//!
//! Synchronous fault signals (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) are never forwarded,
//! nor SIGCHLD.
//!
//! JOB CONTROL. On a terminal the command is a job of the user's shell: Ctrl-Z stops the
//! command's group (the kernel sends SIGTSTP to the foreground group), and the wrapper,
//! seeing its command stopped, takes the terminal back and stops itself with the same
//! signal, so the shell sees the job stopped and gives the prompt back. `fg` (or `bg`)
//! continues the wrapper, which hands the terminal back and continues the command —
//! unless the lease ran out while the job was stopped (nothing renews a stopped job):
//! then the lock is lost, the command is stopped for good and the status is 79. Off a
//! terminal (cron, CI, systemd) a stopped command stays stopped while the wrapper keeps
//! renewing, as before: there is no shell to hand the job to.

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// The signals forwarded to the command.
pub const FORWARDED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// Whether a signal received while waiting for the lock ends the wait.
pub fn ends_wait(sig: Signal) -> bool {
    matches!(
        sig,
        Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT
    )
}

/// Whether `sig` was ignored when the wrapper started (`nohup`, a script's `cmd &`): such
/// a signal stays ignored, by the wrapper and by its command (an ignored disposition
/// survives exec), as a shell leaves a signal ignored on entry.
fn ignored_at_entry(sig: Signal) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into `old`.
    let mut old: nix::libc::sigaction = unsafe { std::mem::zeroed() };
    let read = unsafe { nix::libc::sigaction(sig as i32, std::ptr::null(), &mut old) };
    read == 0 && old.sa_sigaction == nix::libc::SIG_IGN
}

/// Takes over the forwarded signals and delivers each arrival on the returned channel;
/// a signal ignored on entry is left ignored ([`ignored_at_entry`]). Called once, early,
/// so that a signal during the wait cannot kill the wrapper with a lock held. Must run
/// inside the tokio runtime.
pub fn listen() -> std::io::Result<mpsc::UnboundedReceiver<Signal>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for sig in FORWARDED.into_iter().filter(|s| !ignored_at_entry(*s)) {
        let mut stream = signal(SignalKind::from_raw(sig as i32))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(sig).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}

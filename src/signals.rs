//! Which signals the wrapper takes over and how they reach the command.
//!
//! THE RULE. The command runs in a process group of its own. When the wrapper's stdin is
//! the terminal and the wrapper is in the terminal's foreground, that group is made the
//! terminal's foreground group for the command's lifetime (and the wrapper's group is
//! given the terminal back afterwards). Therefore:
//!
//! - keys typed at the terminal (Ctrl-C, Ctrl-\, window size changes) reach the command's
//!   group directly from the kernel and never reach the wrapper, so the wrapper forwards
//!   nothing for them: the command sees Ctrl-C exactly once; a command that dies of
//!   the terminal's Ctrl-C or `Ctrl-\` was stopped on request all the same, as by a
//!   signal to the wrapper (`stopped` in the history, the events and the metrics);
//! - INT, TERM, HUP, QUIT, USR1, USR2 and WINCH that reach the wrapper were sent by a
//!   process (`kill`, systemd, a CI runner) and are forwarded once, to the command's
//!   whole process group;
//! - before the command starts (while waiting for the lock), INT, TERM, HUP and QUIT end
//!   the wait: nothing is left locked and the exit status is 128+N.
//!
//! Synchronous fault signals (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) are never forwarded,
//! nor SIGCHLD.
//!
//! INHERITED DISPOSITIONS. A signal ignored when the wrapper starts is taken over all
//! the same (a non-interactive shell starts `cmd &` with INT and QUIT ignored, some CI
//! agents start jobs with INT ignored, and the wrapper relies on sending and forwarding
//! them), and the command starts with the default disposition for every signal the
//! wrapper forwards or sends (`--preempt-signal` too) and with no signal blocked,
//! whatever the wrapper inherited: a command whose INT were ignored could not even
//! `trap` it. The one exception is SIGHUP ignored at entry (`nohup`): the wrapper leaves
//! it ignored, does not forward it, and the command inherits it ignored, as under
//! `nohup` without the wrapper.
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

/// Whether `sig` is ignored now: read before [`listen`] takes the signals over, it is
/// what the wrapper inherited.
fn ignored_at_entry(sig: Signal) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into `old`.
    let mut old: nix::libc::sigaction = unsafe { std::mem::zeroed() };
    let read = unsafe { nix::libc::sigaction(sig as i32, std::ptr::null(), &mut old) };
    read == 0 && old.sa_sigaction == nix::libc::SIG_IGN
}

/// Whether the wrapper takes `sig` over: every forwarded signal but a SIGHUP ignored at
/// entry (`nohup`). Stable across [`listen`]: a signal it takes over is handled, not
/// ignored, afterwards.
fn taken_over(sig: Signal) -> bool {
    !(sig == Signal::SIGHUP && ignored_at_entry(sig))
}

/// The signals the command starts with at their default disposition: those the wrapper
/// forwards ([`taken_over`]) and the one it stops the command with when preempted
/// (`stop`; a lost lock's SIGTERM is forwarded anyway).
pub fn for_the_command(stop: Signal) -> Vec<Signal> {
    let mut reset: Vec<Signal> = FORWARDED.into_iter().filter(|s| taken_over(*s)).collect();
    if !reset.contains(&stop) && stop != Signal::SIGKILL && stop != Signal::SIGSTOP {
        reset.push(stop);
    }
    reset
}

/// Takes over the forwarded signals and delivers each arrival on the returned channel;
/// a SIGHUP ignored on entry is left ignored ([`taken_over`]). Called once, early, so
/// that a signal during the wait cannot kill the wrapper with a lock held. Must run
/// inside the tokio runtime.
pub fn listen() -> std::io::Result<mpsc::UnboundedReceiver<Signal>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for sig in FORWARDED.into_iter().filter(|s| taken_over(*s)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_gets_the_stop_signal_at_its_default_once() {
        let forwarded: Vec<Signal> = FORWARDED.into_iter().filter(|s| taken_over(*s)).collect();
        assert_eq!(for_the_command(Signal::SIGTERM), forwarded);
        assert_eq!(for_the_command(Signal::SIGINT), forwarded);
        // SIGKILL and SIGSTOP cannot be caught or ignored: nothing to reset.
        assert_eq!(for_the_command(Signal::SIGKILL), forwarded);
        let mut with_alarm = forwarded.clone();
        with_alarm.push(Signal::SIGALRM);
        assert_eq!(for_the_command(Signal::SIGALRM), with_alarm);
    }
}

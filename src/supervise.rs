//! The one supervisor loop: it owns the running command, the lease, the signals and the
//! timers, and returns how the run ended. Renewal, the lost-lock deadline, the
//! SIGTERM/SIGKILL schedule and signal forwarding are branches of one `select!`, not
//! threads sharing state.
//!
//! Deadlines come from [`crate::timing::Budget`] on the suspend-aware clock; the loop
//! never sleeps longer than [`crate::clock::MAX_SLEEP`], so after a suspend or a pause
//! of the wrapper it re-reads the clock and acts at once (kills first, asks later).
//! [`GroupGuard`] covers the one case the loop cannot: the wrapper itself killed.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::child::Started;
use crate::cli::OnLost;
use crate::clock;
use crate::lease::{Lease, Renew};
use crate::report::Reporter;
use crate::timing::{Budget, Point};

/// A lease the supervisor keeps alive.
pub struct Held<'a> {
    pub lease: &'a Lease,
    pub budget: Budget,
    pub on_lost: OnLost,
    /// When the last successful acquire/renew request was sent.
    pub t_sent: Point,
}

/// How the run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    /// Why the lock was lost, if it was.
    pub lost: Option<String>,
}

type RenewFuture = Pin<Box<dyn Future<Output = Renew>>>;

/// Supervises `started` until it exits; with `held`, keeps the lease alive or stops the
/// command's process group before the lease can end.
pub async fn supervise(
    mut started: Started,
    mut held: Option<Held<'_>>,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Outcome {
    let pgid = started.pgid;
    let mut renewing: Option<RenewFuture> = None;
    let mut last_attempt: Option<Point> = None;
    let mut last_error = String::new();
    let mut lost: Option<String> = None;
    // When termination started: (SIGKILL deadline, SIGKILL sent).
    let mut killing: Option<(Point, bool)> = None;

    let status = loop {
        let now = clock::now();
        let mut wake = now + clock::MAX_SLEEP;
        if let Some(h) = held.as_ref().filter(|_| lost.is_none()) {
            let end = h.budget.lease_end(h.t_sent);
            if now >= h.budget.term_at(end) {
                let why = format!(
                    "renewals failed until the lease was about to end ({})",
                    if last_error.is_empty() {
                        "no answer"
                    } else {
                        &last_error
                    }
                );
                lost = Some(why);
                renewing = None;
                killing = on_lost(h, pgid, now, end, lost.as_deref().unwrap_or(""), report);
            } else {
                let next = h.budget.next_renew(h.t_sent, last_attempt);
                if renewing.is_none() && now >= next {
                    last_attempt = Some(now);
                    let lease = h.lease.clone();
                    renewing = Some(Box::pin(async move { lease.renew().await }));
                } else if renewing.is_none() {
                    wake = wake.min(next);
                }
                wake = wake.min(h.budget.term_at(end));
            }
        }
        if let Some((kill_at, sent)) = killing.as_mut() {
            if !*sent && now >= *kill_at {
                let _ = killpg(pgid, Signal::SIGKILL);
                *sent = true;
            } else if !*sent {
                wake = wake.min(*kill_at);
            }
        }
        let nap = clock::sleep_for(wake);
        tokio::select! {
            status = started.child.wait() => {
                break status;
            }
            Some(sig) = signals.recv() => {
                report.verbose(|| format!("forwarding {sig} to the command"));
                let _ = killpg(pgid, sig);
            }
            result = async { renewing.as_mut().expect("guarded").await }, if renewing.is_some() => {
                renewing = None;
                let Some(h) = held.as_mut() else { continue };
                match result {
                    Renew::Renewed { t_sent } => {
                        h.t_sent = t_sent;
                        last_error.clear();
                        report.verbose(|| "lock renewed".to_string());
                    }
                    Renew::Unknown(why) => {
                        report.verbose(|| format!("renewal failed: {why}"));
                        last_error = why.message;
                    }
                    Renew::Lost(why) => {
                        if lost.is_none() {
                            let now = clock::now();
                            let end = h.budget.lease_end(h.t_sent);
                            lost = Some(why.clone());
                            killing = on_lost(h, pgid, now, end, &why, report);
                        }
                    }
                }
            }
            _ = tokio::time::sleep(nap) => {}
        }
    };
    started.restore_terminal();
    if status.is_ok() {
        let kill_after = held
            .as_ref()
            .map_or(Duration::from_secs(5), |h| h.budget.kill_after);
        stop_stragglers(pgid, kill_after).await;
    }
    let status = status.unwrap_or_else(|_| {
        std::os::unix::process::ExitStatusExt::from_raw(crate::exit::Code::Internal.value() as i32)
    });
    Outcome { status, lost }
}

/// Applies the `--on-lost` policy; returns the SIGKILL deadline when terminating.
fn on_lost(
    h: &Held<'_>,
    pgid: Pid,
    now: Point,
    lease_end: Point,
    why: &str,
    report: &Reporter,
) -> Option<(Point, bool)> {
    let name = h.lease.keys.display_name();
    match h.on_lost {
        OnLost::Kill => {
            report.error(&format!(
                "lock {name} lost: {why}; stopping the command (SIGTERM, SIGKILL after {})",
                crate::holder::human(h.budget.kill_after)
            ));
            let _ = killpg(pgid, Signal::SIGTERM);
            let _ = killpg(pgid, Signal::SIGCONT);
            let kill_at = (now + h.budget.kill_after).min(h.budget.kill_at(lease_end).max(now));
            Some((kill_at, false))
        }
        OnLost::Keep => {
            report.error(&format!(
                "lock {name} lost: {why}; the command keeps running WITHOUT the lock (--on-lost keep)"
            ));
            None
        }
    }
}

/// After the command exits, anything it left in its process group is stopped
/// (SIGTERM, then SIGKILL after `kill_after`) before the lock is released, so no part of
/// the job outlives the lock. Orphans are reaped when the wrapper is their subreaper.
async fn stop_stragglers(pgid: Pid, kill_after: Duration) {
    if killpg(pgid, None) == Err(Errno::ESRCH) {
        return;
    }
    let _ = killpg(pgid, Signal::SIGTERM);
    let _ = killpg(pgid, Signal::SIGCONT);
    let deadline = clock::now() + kill_after;
    let mut killed = false;
    loop {
        while let Ok(status) = waitpid(Pid::from_raw(-pgid.as_raw()), Some(WaitPidFlag::WNOHANG)) {
            if status == nix::sys::wait::WaitStatus::StillAlive {
                break;
            }
        }
        if killpg(pgid, None) == Err(Errno::ESRCH) {
            return;
        }
        if !killed && clock::now() >= deadline {
            let _ = killpg(pgid, Signal::SIGKILL);
            killed = true;
        } else if killed && clock::now() >= deadline + Duration::from_secs(1) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Stops the command's whole process group if the wrapper dies without doing so
/// itself (`kill -9`, OOM killer).
///
/// The parent-death signal set in [`crate::child::spawn`] reaches only the command's
/// first process; what it started in its group (`job &`, a pipeline under a shell)
/// would run on unlocked once the key expires. The guard is a forked copy of the
/// wrapper, in a process group of its own and deaf to the forwarded and job-control
/// signals, blocked on a pipe whose write end only the wrapper holds. The wrapper
/// sends the command's process group id after the spawn; when the pipe then reaches
/// end-of-file without the "done" byte, the wrapper is gone and the guard SIGKILLs the
/// group. Dropping the guard (every normal return) sends "done" and reaps it, so a
/// later reuse of the group id is never signalled.
pub struct GroupGuard {
    pid: Pid,
    pipe: Option<std::os::fd::OwnedFd>,
    told: bool,
}

impl GroupGuard {
    /// Forks the guard; `None` when the system refuses (the run goes on without it).
    pub fn fork() -> Option<GroupGuard> {
        use std::os::fd::AsRawFd;
        let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
        // SAFETY: the child runs only async-signal-safe libc calls and then `_exit`s,
        // which is sound even though other threads (tokio's blocking pool) may exist.
        match unsafe { nix::unistd::fork() }.ok()? {
            nix::unistd::ForkResult::Child => guard_main(read_end.as_raw_fd()),
            nix::unistd::ForkResult::Parent { child } => {
                drop(read_end);
                Some(GroupGuard {
                    pid: child,
                    pipe: Some(write_end),
                    told: false,
                })
            }
        }
    }

    /// Tells the guard which process group to stop should the wrapper die.
    pub fn watch(&mut self, pgid: Pid) {
        if let Some(pipe) = &self.pipe {
            self.told = nix::unistd::write(pipe, &pgid.as_raw().to_ne_bytes()) == Ok(4);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pipe) = self.pipe.take() {
            if self.told {
                let _ = nix::unistd::write(&pipe, b"d");
            }
            drop(pipe);
        }
        let _ = waitpid(self.pid, None);
    }
}

/// The guard process: never returns.
fn guard_main(read_fd: std::os::fd::RawFd) -> ! {
    use nix::libc;
    // SAFETY: async-signal-safe calls only (setpgid, sigaction via signal, close,
    // read, kill, _exit) on memory owned by this frame.
    unsafe {
        libc::setpgid(0, 0);
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGWINCH,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Hold no copy of the wrapper's sockets, pipes or terminal: whoever waits for
        // them to close (a Redis server, a shell reading the wrapper's output) must not
        // wait for the guard.
        for fd in 0..1024 {
            if fd != read_fd {
                libc::close(fd);
            }
        }
        let read_some = |buf: &mut [u8]| -> isize {
            loop {
                let n = libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len());
                if n >= 0 || nix::errno::Errno::last_raw() != libc::EINTR {
                    return n;
                }
            }
        };
        let mut pgid = [0u8; 4];
        let mut have = 0;
        while have < 4 {
            let n = read_some(&mut pgid[have..]);
            if n <= 0 {
                // No command was started (or we were never told): nothing to stop.
                libc::_exit(0);
            }
            have += n as usize;
        }
        let mut done = [0u8; 1];
        if read_some(&mut done) == 0 {
            let pgid = i32::from_ne_bytes(pgid);
            if pgid > 1 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        libc::_exit(0)
    }
}

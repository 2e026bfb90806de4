//! The group guard: a forked watcher that SIGKILLs the command's process group if the
//! wrapper dies without stopping it itself (`kill -9`, the OOM killer). It is the one
//! case the supervisor loop cannot cover, because the loop dies with the wrapper.

use nix::sys::signal::Signal;
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::signals::FORWARDED;

/// Job-control signals and SIGPIPE, which must not stop or kill the guard either.
const JOB_CONTROL: [Signal; 4] = [
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGPIPE,
];

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
        // Told "done", the guard exits without signalling anything; the wrapper is about
        // to exit, so it does not wait for that (init or the subreaper reaps the guard).
        let _ = waitpid(self.pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
    }
}

/// Closes every descriptor but `keep`: two `close_range` calls (Linux 5.9+) instead of
/// a thousand `close`s; the loop only where the kernel lacks it.
///
/// # Safety
/// Only in the forked guard: async-signal-safe calls, and no descriptor is used after.
unsafe fn close_all_but(keep: std::os::fd::RawFd) {
    use nix::libc;
    let keep = keep as libc::c_uint;
    // SAFETY: raw syscalls with integer arguments; the caller owns every descriptor.
    let closed = unsafe {
        (keep == 0 || libc::syscall(libc::SYS_close_range, 0, keep - 1, 0) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0) == 0
    };
    if !closed {
        for fd in 0..1024 {
            if fd != keep as libc::c_int {
                // SAFETY: closing a descriptor number; see the function's contract.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// The guard process: never returns.
fn guard_main(read_fd: std::os::fd::RawFd) -> ! {
    use nix::libc;
    // SAFETY: async-signal-safe calls only (setpgid, sigaction via signal, close,
    // read, kill, _exit) on memory owned by this frame.
    unsafe {
        libc::setpgid(0, 0);
        // Deaf to what the wrapper forwards (a stop of the job reaches the guard's
        // group too under systemd) and to job control: only the pipe decides.
        for sig in FORWARDED.iter().chain(&JOB_CONTROL) {
            libc::signal(*sig as libc::c_int, libc::SIG_IGN);
        }
        // Hold no copy of the wrapper's sockets, pipes or terminal: whoever waits for
        // them to close (a Redis server, a shell reading the wrapper's output) must not
        // wait for the guard.
        close_all_but(read_fd);
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

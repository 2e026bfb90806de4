//! The group guard: a forked watcher that stops the command's process group when the
//! wrapper can no longer be trusted to: when the wrapper dies (`kill -9`, the OOM
//! killer), and when the lease's end comes near without news from the wrapper (the
//! wrapper stopped by SIGSTOP, hung, or starved of CPU). The supervisor loop covers
//! neither: it dies or stalls with the wrapper.
//!
//! The wrapper talks to the guard over a pipe whose write end only it holds, in
//! fixed-size records ([`Message`]): the command's process group once it is started,
//! the lease's SIGTERM and SIGKILL points after each renewal (points on
//! `CLOCK_BOOTTIME`, which both processes share), and "done". The guard acts on the
//! pipe's end-of-file (the wrapper died: SIGKILL now) and on its own clock (the SIGTERM
//! point passed without a newer lease: the stop signal, SIGKILL at the SIGKILL point).
//! Once it has sent SIGKILL it signals nothing more: the group is dead, and its id may
//! be reused once the wrapper reaps it.
//!
//! When the wrapper dies with a command started, the guard also tidies what the
//! wrapper can no longer ([`Obituary`]): it removes the `--ready-file` and settles the
//! `--metrics` file (`redlock_running` and `redlock_leader` 0; see `obituary.rs`), so a
//! dead leader never reads as leading.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::signals::FORWARDED;
use crate::timing::Point;

/// Job-control signals and SIGPIPE, which must not stop or kill the guard either.
const JOB_CONTROL: [Signal; 4] = [
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
    Signal::SIGPIPE,
];

/// The longest the guard sleeps before it re-reads the clock: `poll(2)` sleeps on
/// `CLOCK_MONOTONIC`, which stops during a suspend, while deadlines are on
/// `CLOCK_BOOTTIME`.
const MAX_NAP_MS: i32 = 250;

/// One record on the pipe: a tag and three numbers, written whole (far below
/// `PIPE_BUF`, so a record is never split or interleaved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    /// The command's process group (`c`), once it is started.
    Group,
    /// The lease: the stop signal (`c`) at `a`, SIGKILL at `b` (nanoseconds on
    /// `CLOCK_BOOTTIME`) unless a newer lease comes first.
    Lease,
    /// The wrapper is stopping the group itself: no stop signal from the guard, only
    /// SIGKILL at `b` should the wrapper stop running before it is done.
    Stopping,
    /// The wrapper stopped the command itself: exit without signalling.
    Done,
}

const RECORD: usize = 21;

impl Message {
    fn tag(self) -> u8 {
        match self {
            Message::Group => b'g',
            Message::Lease => b'l',
            Message::Stopping => b's',
            Message::Done => b'd',
        }
    }

    fn encode(self, a: u64, b: u64, c: i32) -> [u8; RECORD] {
        let mut out = [0u8; RECORD];
        out[0] = self.tag();
        out[1..9].copy_from_slice(&a.to_ne_bytes());
        out[9..17].copy_from_slice(&b.to_ne_bytes());
        out[17..21].copy_from_slice(&c.to_ne_bytes());
        out
    }
}

/// A record as the guard reads it: (tag, a, b, c).
fn decode(record: &[u8; RECORD]) -> (u8, u64, u64, i32) {
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    let mut c = [0u8; 4];
    a.copy_from_slice(&record[1..9]);
    b.copy_from_slice(&record[9..17]);
    c.copy_from_slice(&record[17..21]);
    (
        record[0],
        u64::from_ne_bytes(a),
        u64::from_ne_bytes(b),
        i32::from_ne_bytes(c),
    )
}

/// What the guard tidies when the wrapper dies with a command started.
#[derive(Debug, Default, Clone)]
pub struct Obituary {
    /// `--ready-file`: removed.
    pub ready_file: Option<PathBuf>,
    /// `--metrics`: the file itself (a link's target) and the sample prefixes to
    /// settle (see `obituary::prefixes`).
    pub metrics: Option<(PathBuf, Vec<Vec<u8>>)>,
}

/// The largest metrics file the guard settles (it cannot allocate after the fork).
const METRICS_MAX: usize = 256 * 1024;

/// An [`Obituary`] made ready before the fork: C strings and buffers, so that the guard
/// only makes async-signal-safe calls.
struct Prepared {
    ready: Option<CString>,
    metrics: Option<PreparedMetrics>,
}

struct PreparedMetrics {
    dir: CString,
    target: CString,
    tmp: CString,
    prefixes: Vec<Vec<u8>>,
    text: Vec<u8>,
    out: Vec<u8>,
}

fn c_path(path: &std::path::Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

impl Obituary {
    fn prepare(&self) -> Prepared {
        let metrics = self.metrics.as_ref().and_then(|(target, prefixes)| {
            let dir = target
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), PathBuf::from);
            let base = target.file_name()?.to_string_lossy().into_owned();
            let tmp = dir.join(format!(".{base}.{:016x}.guard.tmp", fastrand::u64(..)));
            Some(PreparedMetrics {
                dir: c_path(&dir)?,
                target: c_path(target)?,
                tmp: c_path(&tmp)?,
                prefixes: prefixes.clone(),
                text: vec![0u8; METRICS_MAX],
                out: vec![0u8; METRICS_MAX],
            })
        });
        Prepared {
            ready: self.ready_file.as_deref().and_then(c_path),
            metrics,
        }
    }
}

/// Stops the command's whole process group if the wrapper cannot: it died without
/// doing so (`kill -9`, OOM killer), or it let the lease's SIGTERM point pass without
/// a renewal (stopped, hung, starved).
///
/// The parent-death signal set in [`crate::child::spawn`] reaches only the command's
/// first process; what it started in its group (`job &`, a pipeline under a shell)
/// would run on unlocked once the key expires. The guard is a forked copy of the
/// wrapper, in a process group of its own and deaf to the forwarded and job-control
/// signals, blocked on a pipe whose write end only the wrapper holds. Dropping the
/// guard (every normal return) sends "done" and reaps it, so a later reuse of the
/// group id is never signalled.
pub struct GroupGuard {
    pid: Pid,
    pipe: Option<std::os::fd::OwnedFd>,
    told: bool,
}

impl GroupGuard {
    /// Forks the guard, which tidies `obituary` if the wrapper dies with a command
    /// started; `None` when the system refuses (the run goes on without it).
    pub fn fork(obituary: &Obituary) -> Option<GroupGuard> {
        use std::os::fd::AsRawFd;
        let mut prepared = obituary.prepare();
        let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
        // The wrapper never blocks on a guard that does not read (stopped by hand): a
        // record that does not fit is dropped, and the guard acts on the last it read.
        let _ = nix::fcntl::fcntl(
            &write_end,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
        // SAFETY: the child runs only async-signal-safe libc calls and then `_exit`s,
        // which is sound even though other threads (tokio's blocking pool) may exist.
        match unsafe { nix::unistd::fork() }.ok()? {
            nix::unistd::ForkResult::Child => guard_main(read_end.as_raw_fd(), &mut prepared),
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

    fn send(&self, record: [u8; RECORD]) -> bool {
        match &self.pipe {
            Some(pipe) => nix::unistd::write(pipe, &record) == Ok(RECORD),
            None => false,
        }
    }

    /// Tells the guard which process group to stop should the wrapper die.
    pub fn watch(&mut self, pgid: Pid) {
        self.told = self.send(Message::Group.encode(0, 0, pgid.as_raw()));
    }

    /// Tells the guard that the wrapper is stopping the group itself (a lost lock, a
    /// preemption, `--max-hold`): it sends no stop signal of its own, only SIGKILL at
    /// `kill_at` should the wrapper stop running before the group is gone.
    pub fn stopping(&self, kill_at: Point) {
        if self.told {
            let ns = u64::try_from(kill_at.as_nanos()).unwrap_or(u64::MAX);
            self.send(Message::Stopping.encode(0, ns, 0));
        }
    }

    /// Tells the guard the lease as it now stands: unless a newer one comes first, it
    /// sends `stop` to the group at `stop_at` (and SIGCONT), SIGKILL at `kill_at`.
    pub fn hold_until(&self, stop_at: Point, kill_at: Point, stop: Signal) {
        if self.told {
            let ns = |p: Point| u64::try_from(p.as_nanos()).unwrap_or(u64::MAX);
            self.send(Message::Lease.encode(ns(stop_at), ns(kill_at), stop as i32));
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pipe) = self.pipe.take() {
            if self.told {
                let _ = nix::unistd::write(&pipe, &Message::Done.encode(0, 0, 0));
            }
            drop(pipe);
        }
        reap(self.pid);
    }
}

/// Guards that had not exited yet when they were dropped: reaped at a later drop, so
/// that a wrapper that runs term after term (`--elect`) keeps no zombie.
static UNREAPED: std::sync::Mutex<Vec<Pid>> = std::sync::Mutex::new(Vec::new());

/// How long a guard told "done" (or whose pipe closed) is given to exit before it is
/// left for a later drop; it exits within a fraction of a millisecond.
const REAP_WITHIN: Duration = Duration::from_millis(50);

/// Reaps `pid` (given [`REAP_WITHIN`] to exit, then left for a later drop), and any
/// guard left by an earlier drop.
fn reap(pid: Pid) {
    let mut left = UNREAPED.lock().unwrap_or_else(|p| p.into_inner());
    left.retain(|earlier| !exited(*earlier));
    if !exits_within(pid, REAP_WITHIN) {
        left.push(pid);
    }
}

/// Whether `pid` exits, and is reaped, within `limit`. The release waits for this, so
/// the wait ends the moment the guard exits: its pidfd (Linux 5.3+) becomes readable
/// then. Without one, it is checked every millisecond (which cost every run about a
/// millisecond before the release, and Redis the CPU of a colder wake-up).
fn exits_within(pid: Pid, limit: Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    let pidfd = pidfd_open(pid);
    loop {
        if exited(pid) {
            return true;
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        match &pidfd {
            // SAFETY: a descriptor owned on this frame; woken early by a signal, the
            // loop checks again.
            Some(fd) => unsafe {
                readable(fd.as_raw_fd(), left.as_millis().clamp(1, 1_000) as i32);
            },
            None => std::thread::sleep(left.min(Duration::from_millis(1))),
        }
    }
}

/// A descriptor that becomes readable when `pid` exits (`pidfd_open(2)`); `None` where
/// the kernel lacks it.
fn pidfd_open(pid: Pid) -> Option<std::os::fd::OwnedFd> {
    use nix::libc;
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open(2) takes two integers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = std::os::fd::RawFd::try_from(fd)
        .ok()
        .filter(|fd| *fd >= 0)?;
    // SAFETY: the descriptor was just opened, and nothing else owns it.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Whether `pid` has exited and is reaped now (or is not our child at all).
fn exited(pid: Pid) -> bool {
    !matches!(
        waitpid(pid, Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::StillAlive)
    )
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

/// Now on `CLOCK_BOOTTIME` in nanoseconds (async-signal-safe: `clock_gettime`).
fn boottime_ns() -> u64 {
    use nix::libc;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let id = libc::CLOCK_BOOTTIME;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let id = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec owned by this frame.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What the guard knows and has done.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Watch {
    /// The command's process group, once told.
    pgid: i32,
    /// The lease's stop point, SIGKILL point and stop signal, while armed.
    lease: Option<(u64, u64, i32)>,
    /// The stop signal was sent for the current lease.
    stopped: bool,
    /// SIGKILL was sent: nothing is signalled any more.
    spent: bool,
}

/// A signal the guard sends to the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// The stop signal, then SIGCONT so a stopped process can act on it.
    Stop(i32),
    Kill,
}

impl Watch {
    /// Takes in one record; whether the guard goes on.
    fn read(&mut self, record: &[u8; RECORD]) -> bool {
        let (tag, a, b, c) = decode(record);
        match tag {
            b'g' => self.pgid = c,
            b'l' => {
                self.lease = Some((a, b, c));
                self.stopped = false;
            }
            b's' => {
                self.lease = Some((0, b, 0));
                self.stopped = true;
            }
            _ => return false,
        }
        true
    }

    /// What is due at `now`, and when to look again (`None`: only the pipe matters).
    fn due(&mut self, now: u64) -> (Option<Act>, Option<u64>) {
        let Some((stop_at, kill_at, sig)) = self.lease.filter(|_| self.pgid > 1 && !self.spent)
        else {
            return (None, None);
        };
        if now >= kill_at {
            self.spent = true;
            return (Some(Act::Kill), None);
        }
        if !self.stopped && now >= stop_at {
            self.stopped = true;
            return (Some(Act::Stop(sig)), Some(kill_at));
        }
        (None, Some(if self.stopped { kill_at } else { stop_at }))
    }

    /// The wrapper is gone (the pipe closed without "done"): SIGKILL, unless sent.
    fn orphaned(&mut self) -> Option<Act> {
        if self.pgid > 1 && !self.spent {
            self.spent = true;
            return Some(Act::Kill);
        }
        None
    }
}

/// Removes the ready file and settles the metrics file of a wrapper that died, or whose
/// lease ended while it was stopped (the guard killed the command).
///
/// # Safety
/// Only in the forked guard: async-signal-safe calls on memory prepared before the
/// fork.
unsafe fn tidy(prepared: &mut Prepared) {
    use nix::libc;
    // SAFETY: unlink, open, flock, read, write, rename and close on C strings and
    // buffers owned by `prepared`.
    unsafe {
        if let Some(ready) = &prepared.ready {
            libc::unlink(ready.as_ptr());
        }
        let Some(m) = &mut prepared.metrics else {
            return;
        };
        // The same lock of the directory that the runs writing there take.
        let dir = libc::open(m.dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        if dir >= 0 {
            libc::flock(dir, libc::LOCK_EX);
        }
        let file = libc::open(m.target.as_ptr(), libc::O_RDONLY);
        let mut len = 0usize;
        if file >= 0 {
            loop {
                let n = libc::read(file, m.text[len..].as_mut_ptr().cast(), METRICS_MAX - len);
                if n <= 0 {
                    break;
                }
                len += n as usize;
                if len == METRICS_MAX {
                    break;
                }
            }
            libc::close(file);
        }
        let mut refs: [&[u8]; 2] = [&[], &[]];
        for (r, p) in refs.iter_mut().zip(&m.prefixes) {
            *r = p;
        }
        let settled = crate::obituary::settle(&m.text[..len], &refs, &mut m.out);
        if let (true, Some((n, true))) = (len < METRICS_MAX, settled) {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            let tmp = libc::open(m.tmp.as_ptr(), flags, 0o666);
            if tmp >= 0 {
                let written = libc::write(tmp, m.out.as_ptr().cast(), n);
                libc::close(tmp);
                if written == n as isize {
                    libc::rename(m.tmp.as_ptr(), m.target.as_ptr());
                } else {
                    libc::unlink(m.tmp.as_ptr());
                }
            }
        }
        if dir >= 0 {
            libc::close(dir);
        }
    }
}

/// The guard process: never returns. Async-signal-safe calls only (setpgid, signal,
/// close, poll, read, clock_gettime, kill, rename, _exit) on memory owned by this
/// frame: it is a fork of a threaded process.
fn guard_main(read_fd: std::os::fd::RawFd, prepared: &mut Prepared) -> ! {
    // SAFETY: see above; every step below keeps to those calls.
    unsafe {
        detach(read_fd);
        let mut watch = Watch::default();
        let mut record = [0u8; RECORD];
        let mut have = 0usize;
        loop {
            let (due, next) = watch.due(boottime_ns());
            // A record already in the pipe is read before anything due is done: the
            // wrapper may have renewed in the same instant.
            let wait = if due.is_some() { 0 } else { nap_ms(next) };
            if readable(read_fd, wait) {
                if let Some(act_now) = due {
                    undo(&mut watch, act_now);
                }
                read_pipe(read_fd, (&mut record, &mut have), &mut watch, prepared);
                continue;
            }
            if let Some(due) = due {
                act(&watch, due);
                // The lease's end passed without news: the command is dead, so its
                // ready file and `running` sample must not say otherwise while the
                // wrapper is stopped (it rewrites them when it runs again).
                if matches!(due, Act::Kill) && watch.pgid > 1 {
                    tidy(prepared);
                }
            }
        }
    }
}

/// The guard's own process group, deaf to what the wrapper forwards (a stop of the job
/// reaches the guard's group too under systemd) and to job control: only the pipe and
/// the clock decide. It holds no copy of the wrapper's sockets, pipes or terminal:
/// whoever waits for them to close (a Redis server, a shell reading the wrapper's
/// output) must not wait for the guard.
unsafe fn detach(read_fd: std::os::fd::RawFd) {
    use nix::libc;
    // SAFETY: async-signal-safe calls on no shared memory.
    unsafe {
        libc::setpgid(0, 0);
        for sig in FORWARDED.iter().chain(&JOB_CONTROL) {
            libc::signal(*sig as libc::c_int, libc::SIG_IGN);
        }
        close_all_but(read_fd);
    }
}

/// How long to poll until `next` (ms; -1: no point ahead), never more than
/// [`MAX_NAP_MS`] (`poll` sleeps on CLOCK_MONOTONIC, which stops in a suspend).
fn nap_ms(next: Option<u64>) -> i32 {
    match next {
        Some(at) => {
            let ms = at.saturating_sub(boottime_ns()).div_ceil(1_000_000);
            (ms.min(MAX_NAP_MS as u64)) as i32
        }
        None => -1,
    }
}

/// Whether the pipe has something to read (a record or its end) within `wait` ms.
unsafe fn readable(read_fd: std::os::fd::RawFd, wait: i32) -> bool {
    use nix::libc;
    let mut pfd = libc::pollfd {
        fd: read_fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on this frame.
    unsafe { libc::poll(&mut pfd, 1, wait) > 0 }
}

/// Undoes the step `due` took on `watch`: the pipe is read first, then due again.
fn undo(watch: &mut Watch, due: Act) {
    match due {
        Act::Kill => watch.spent = false,
        Act::Stop(_) => watch.stopped = false,
    }
}

/// Signals the command's group as `act` says.
unsafe fn act(watch: &Watch, act: Act) {
    use nix::libc;
    let group = -watch.pgid;
    // SAFETY: kill(2) is async-signal-safe.
    unsafe {
        match act {
            Act::Stop(sig) => {
                libc::kill(group, sig);
                libc::kill(group, libc::SIGCONT);
            }
            Act::Kill => {
                libc::kill(group, libc::SIGKILL);
            }
        }
    }
}

/// Reads what the pipe has into the record being assembled (`have` bytes of it so
/// far); a whole record goes to `watch`. The pipe's end (the wrapper died) kills what
/// is due and tidies the run's files; "done" (the wrapper stopped the command itself)
/// or an error ends the guard.
unsafe fn read_pipe(
    read_fd: std::os::fd::RawFd,
    (record, have): (&mut [u8; RECORD], &mut usize),
    watch: &mut Watch,
    prepared: &mut Prepared,
) {
    use nix::libc;
    // SAFETY: read(2) into this frame's record; kill, tidy's rename and _exit.
    unsafe {
        let n = libc::read(read_fd, record[*have..].as_mut_ptr().cast(), RECORD - *have);
        if n == 0 {
            if let Some(kill) = watch.orphaned() {
                act(watch, kill);
            }
            if watch.pgid > 1 {
                tidy(prepared);
            }
            libc::_exit(0);
        }
        if n < 0 {
            let e = nix::errno::Errno::last_raw();
            if e != libc::EINTR && e != libc::EAGAIN {
                libc::_exit(0);
            }
            return;
        }
        *have += n as usize;
        if *have == RECORD {
            *have = 0;
            if !watch.read(record) {
                // Done: the wrapper stopped the command itself.
                libc::_exit(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(stop_at: u64, kill_at: u64) -> [u8; RECORD] {
        Message::Lease.encode(stop_at, kill_at, 15)
    }

    #[test]
    fn a_child_that_exits_is_reaped_and_one_that_does_not_is_left() {
        let spawn = |secs: &str| {
            let child = std::process::Command::new("sleep").arg(secs).spawn();
            Pid::from_raw(child.expect("sleep starts").id() as i32)
        };
        let quick = spawn("0.05");
        assert!(exits_within(quick, Duration::from_secs(10)));
        // Reaped: no zombie is left behind.
        assert!(waitpid(quick, Some(WaitPidFlag::WNOHANG)).is_err());
        let slow = spawn("30");
        assert!(!exits_within(slow, Duration::from_millis(20)));
        nix::sys::signal::kill(slow, Signal::SIGKILL).expect("kill");
        assert!(exits_within(slow, Duration::from_secs(10)));
    }

    #[test]
    fn records_round_trip() {
        let r = Message::Lease.encode(u64::MAX - 1, 7, -3);
        assert_eq!(decode(&r), (b'l', u64::MAX - 1, 7, -3));
    }

    #[test]
    fn stops_then_kills_at_the_lease_points_and_then_signals_nothing() {
        let mut w = Watch::default();
        assert!(w.read(&Message::Group.encode(0, 0, 4242)));
        // No lease yet: only the pipe matters.
        assert_eq!(w.due(10), (None, None));
        assert!(w.read(&lease(100, 150)));
        assert_eq!(w.due(50), (None, Some(100)));
        assert_eq!(w.due(100), (Some(Act::Stop(15)), Some(150)));
        assert_eq!(w.due(120), (None, Some(150)));
        assert_eq!(w.due(150), (Some(Act::Kill), None));
        assert_eq!(w.due(500), (None, None));
        // Spent: neither a newer lease nor the wrapper's death signals again.
        assert!(w.read(&lease(1000, 1500)));
        assert_eq!(w.due(2000), (None, None));
        assert_eq!(w.orphaned(), None);
    }

    #[test]
    fn a_renewal_moves_the_points() {
        let mut w = Watch::default();
        w.read(&Message::Group.encode(0, 0, 4242));
        w.read(&lease(100, 150));
        assert!(w.read(&lease(200, 250)));
        assert_eq!(w.due(120), (None, Some(200)));
        // Woken far past both points (a suspend): SIGKILL at once.
        assert_eq!(w.due(900), (Some(Act::Kill), None));
        // Without a lease (a re-entrant run, `--on-lost keep`) only the pipe decides.
        let mut w = Watch::default();
        w.read(&Message::Group.encode(0, 0, 4242));
        assert_eq!(w.due(900), (None, None));
        assert_eq!(w.orphaned(), Some(Act::Kill));
    }

    #[test]
    fn a_wrapper_that_stops_the_group_itself_leaves_the_guard_only_the_sigkill() {
        let mut w = Watch::default();
        w.read(&Message::Group.encode(0, 0, 4242));
        w.read(&lease(100, 150));
        assert!(w.read(&Message::Stopping.encode(0, 150, 0)));
        assert_eq!(w.due(120), (None, Some(150)));
        assert_eq!(w.due(150), (Some(Act::Kill), None));
    }

    #[test]
    fn done_ends_the_guard_and_no_group_means_nothing_to_signal() {
        let mut w = Watch::default();
        assert!(!w.read(&Message::Done.encode(0, 0, 0)));
        let mut w = Watch::default();
        w.read(&lease(1, 2));
        assert_eq!(w.due(5), (None, None), "never told the group");
        assert_eq!(w.orphaned(), None);
    }
}

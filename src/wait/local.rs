//! The host-local queue in front of Redis: a run that may wait first takes a `flock(2)`
//! on a file named after the lock (and the Redis servers it lives on) in a private
//! directory; only the process holding it — the host's head — connects to Redis and
//! contends there. The others wait in the kernel: no connection, no Redis command, no
//! guard. The head lets the file go as soon as it holds the Redis lock (or gives up), so
//! the next local waiter becomes the host's contender while the command runs; every run
//! still takes the Redis lock itself, with its own token and fence. A head killed with
//! -9 frees the file with its last descriptor.
//!
//! `--limit N` has N files: up to N heads per host. `--fair` does not use the local
//! level (every fair waiter stays in the global queue, whose order is its arrivals).
//!
//! The head writes what it sees in Redis (the holder) into the file, so local waiters
//! can say who holds the lock; how many wait here and in which order comes from
//! `/proc/locks`. Both are for display only: nothing decides on them.
//!
//! The files are empty but for that line and are never removed (unlinking a lock file
//! others may have open races with their `flock`); they live in a runtime directory,
//! which the system clears at logout or boot.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use super::Patience;
use super::progress::{Place, Progress};
use crate::config::LocalDir;
use crate::error::{Error, Result};
use crate::holder::Holder;
use crate::keys::LockKeys;
use crate::redis::RedisUrl;
use crate::report::Reporter;

/// How often a local waiter re-reads what its head published (for the waiting line).
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// How often a local waiter checks that its head still makes progress (a read of
/// `/proc`, no Redis command): a head stopped with SIGSTOP or Ctrl-Z, under a debugger
/// or in a frozen cgroup keeps the host's flock while the lock may be free in Redis;
/// the waiters behind it then contend in Redis directly.
const CHECK_HEAD_EVERY: Duration = Duration::from_millis(500);

/// The directory this run's local queue uses (see [`LocalDir`]): created (mode 0700)
/// when missing; `Ok(None)` when off, or when the default one cannot be used safely
/// (then the run waits in Redis directly).
pub fn resolve_dir(local: &LocalDir, report: &Reporter) -> Result<Option<PathBuf>> {
    match local {
        LocalDir::Off => Ok(None),
        LocalDir::Given(dir) => {
            ensure_dir(dir).map_err(|why| {
                Error::usage(format!(
                    "--local-dir {}: {why}; give a directory this user can write, or --no-local-queue",
                    dir.display()
                ))
            })?;
            Ok(Some(dir.clone()))
        }
        LocalDir::Default => {
            let dir = default_dir();
            match ensure_dir(&dir).and_then(|()| private(&dir)) {
                Ok(()) => Ok(Some(dir)),
                Err(why) => {
                    report
                        .verbose(|| format!("not queueing on this host: {}: {why}", dir.display()));
                    Ok(None)
                }
            }
        }
    }
}

/// `$XDG_RUNTIME_DIR/redlock` (a per-user directory the system makes private), else
/// `/tmp/redlock-<uid>`.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| Path::new(d).is_absolute()) {
        Some(runtime) => Path::new(&runtime).join("redlock"),
        None => PathBuf::from(format!("/tmp/redlock-{}", nix::unistd::getuid())),
    }
}

/// Creates `dir` (0700) when missing; it must be a directory.
fn ensure_dir(dir: &Path) -> std::result::Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match dir.metadata() {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err("not a directory".into()),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The default directory must be this user's and closed to others: in `/tmp` another
/// user could have made it first, to watch or block our queue.
fn private(dir: &Path) -> std::result::Result<(), String> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !m.is_dir() {
        return Err("not a directory".into());
    }
    if m.uid() != nix::unistd::getuid().as_raw() {
        return Err(format!("owned by uid {}, not this user", m.uid()));
    }
    if m.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "mode {:o}, open to other users",
            m.permissions().mode() & 0o777
        ));
    }
    Ok(())
}

/// The files of one lock's local queue: one, or one per slot of a semaphore.
#[derive(Debug, Clone)]
pub struct LocalQueue {
    files: Vec<PathBuf>,
}

impl LocalQueue {
    /// The queue of the lock `keys` (`slots` heads at once) on the servers `urls`, in
    /// `dir`: the one place a queue's files are named, for the runs and for `status`.
    pub fn new(dir: &Path, keys: &LockKeys, urls: &[RedisUrl], slots: u32) -> LocalQueue {
        // Each server as itself however its URL is spelled (no password, no query), in
        // one order: one server is one queue on this host.
        let mut servers: Vec<String> = urls.iter().map(RedisUrl::server_identity).collect();
        servers.sort();
        servers.dedup();
        let base = file_base(&keys.lock, &servers.join(","));
        let files = match slots {
            0 | 1 => vec![dir.join(format!("{base}.lock"))],
            n => (1..=n)
                .map(|i| dir.join(format!("{base}.{i}.lock")))
                .collect(),
        };
        LocalQueue { files }
    }

    /// The local queue's files.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Takes a place at the head of this host's queue, waiting in the kernel as
    /// `patience` allows and showing it through `progress`.
    pub async fn enter(
        &self,
        patience: &Patience,
        progress: &mut Progress<'_>,
        signals: &mut UnboundedReceiver<Signal>,
    ) -> Result<Entered> {
        let mut opened = Vec::with_capacity(self.files.len());
        for path in &self.files {
            match open(path) {
                Ok(file) => opened.push((file, path)),
                Err(e) => return Ok(unavailable(path, e)),
            }
        }
        // Any free file makes this run a head at once; start at a place of its own so
        // that runs spread over a semaphore's files.
        let start = std::process::id() as usize % opened.len();
        opened.rotate_left(start);
        let mut rest = Vec::new();
        for (file, path) in opened {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(Entered::Head(Head::new(lock))),
                Err((file, nix::errno::Errno::EWOULDBLOCK)) => rest.push((file, path)),
                Err((_, e)) => return Ok(unavailable(path, e.into())),
            }
        }
        let (file, path) = rest.swap_remove(0);
        let watch = Watch::new(&file, path.clone());
        wait_in_kernel(file, watch, patience, progress, signals).await
    }
}

/// How entering the local queue ended.
pub enum Entered {
    /// This run is the host's head: it contends in Redis.
    Head(Head),
    /// The queue's file cannot be used (another user's, unreadable to us; a file
    /// system without `flock`): the run waits in Redis directly, as without the local
    /// queue; why.
    Unavailable(String),
    /// `--wait` ran out in the local queue: the run makes one Redis try before it
    /// says busy (what the head published may be stale by now).
    TimedOut,
    /// The host's head does not progress (stopped, traced, frozen): the run contends
    /// in Redis directly, as without the local queue; why.
    HeadStalled(String),
    Interrupted(Signal),
}

/// The host's head: holds the local lock until dropped.
pub struct Head {
    lock: Flock<File>,
    /// Whether this run waited in the local queue first.
    pub waited: bool,
    /// The holder last published, so an unchanged one is not written again.
    published: std::cell::RefCell<String>,
}

impl Head {
    fn new(lock: Flock<File>) -> Head {
        Head {
            lock,
            waited: false,
            published: Default::default(),
        }
    }

    /// Tells the local waiters who holds the lock in Redis (best effort: a file of
    /// another user may be read-only for us): what their waiting line shows, and a
    /// token prefix to tell holders apart, never the token itself (it is what
    /// `release --token`, `extend` and a nested run's bypass take, and a shared
    /// `--local-dir` is readable by its other users).
    pub fn publish(&self, holder: &Holder) {
        let shown = Holder {
            token: holder.token.chars().take(8).collect(),
            started: None,
            pidns: None,
            ..holder.clone()
        };
        let seen = Seen {
            head_pid: std::process::id(),
            holder: shown,
            ttl_left_ms: holder.ttl_left.map(|t| t.as_millis() as u64),
        };
        let Ok(mut line) = serde_json::to_string(&seen) else {
            return;
        };
        if *self.published.borrow() == line {
            return;
        }
        line.push('\n');
        let file: &File = &self.lock;
        // One write at offset 0 after cutting the file: a reader sees the old line, the
        // new one or nothing, and ignores what does not parse.
        use std::os::unix::fs::FileExt;
        if file.set_len(0).is_ok() && file.write_all_at(line.as_bytes(), 0).is_ok() {
            line.pop();
            *self.published.borrow_mut() = line;
        }
    }
}

/// What a head publishes in its file.
#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(default)]
struct Seen {
    head_pid: u32,
    holder: Holder,
    ttl_left_ms: Option<u64>,
}

/// Opens (creating) a queue file: read-write so a head can publish, read-only when the
/// file is another user's in a shared directory (`flock` works on either). A file this
/// user owns is made readable to all, whatever the umask, so that the other users of a
/// shared directory can queue on it (in a private directory nobody else can reach it).
/// Never follows a symbolic link.
fn open(path: &Path) -> std::io::Result<File> {
    let options = |write: bool| {
        let mut o = OpenOptions::new();
        o.read(true)
            .write(write)
            .create(write)
            .truncate(false)
            .mode(0o644)
            .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW);
        o
    };
    let file = match options(true).open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return options(false).open(path);
        }
        other => other?,
    };
    let m = file.metadata()?;
    if m.uid() == nix::unistd::getuid().as_raw() && m.permissions().mode() & 0o044 != 0o044 {
        file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(file)
}

fn unavailable(path: &Path, e: std::io::Error) -> Entered {
    Entered::Unavailable(format!("{}: {e}", path.display()))
}

/// What the `flock` thread answers: the lock, or why it could not be taken.
type Locked = std::result::Result<Flock<File>, (File, nix::errno::Errno)>;

/// Starts a thread that blocks in `flock` on `file` (retried on EINTR) and sends the
/// lock when it has it.
fn lock_on_a_thread(file: File) -> std::io::Result<tokio::sync::oneshot::Receiver<Locked>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("local-queue".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut file = file;
            let locked = loop {
                match Flock::lock(file, FlockArg::LockExclusive) {
                    Err((again, nix::errno::Errno::EINTR)) => file = again,
                    other => break other,
                }
            };
            let _ = tx.send(locked);
        })?;
    Ok(rx)
}

/// Blocks in `flock` on a thread of its own (a blocked `flock` cannot be cancelled; the
/// thread is left behind when the wait ends otherwise, and the process exits soon after,
/// closing the file), while this thread shows the wait and listens for signals.
async fn wait_in_kernel(
    file: File,
    mut watch: Watch,
    patience: &Patience,
    progress: &mut Progress<'_>,
    signals: &mut UnboundedReceiver<Signal>,
) -> Result<Entered> {
    let rx = match lock_on_a_thread(file) {
        Ok(rx) => rx,
        Err(e) => return Ok(unavailable(&watch.path, e)),
    };
    tokio::pin!(rx);
    watch.look(patience, progress, true);
    let mut looked = crate::clock::now();
    loop {
        let Some(left) = patience.left() else {
            return Ok(Entered::TimedOut);
        };
        if let Some(why) = watch.head_stalled() {
            return Ok(Entered::HeadStalled(why));
        }
        let nap = left.min(progress.next_due()).min(CHECK_HEAD_EVERY);
        tokio::select! {
            locked = &mut rx => {
                return match locked {
                    Ok(Ok(lock)) => {
                        let mut head = Head::new(lock);
                        head.waited = true;
                        Ok(Entered::Head(head))
                    }
                    Ok(Err((_, e))) => Ok(unavailable(&watch.path, e.into())),
                    Err(_) => Ok(unavailable(&watch.path, std::io::Error::other("its thread ended"))),
                };
            }
            _ = tokio::time::sleep(nap) => {
                if crate::clock::now().saturating_sub(looked) >= LOOK_EVERY
                    || progress.next_due().is_zero()
                {
                    watch.look(patience, progress, false);
                    looked = crate::clock::now();
                }
            }
            Some(sig) = signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Ok(Entered::Interrupted(sig));
                }
            }
        }
    }
}

/// A local waiter's view of its queue.
struct Watch {
    path: PathBuf,
    /// The file's device and inode, as `/proc/locks` names it.
    id: Option<String>,
    seen: Seen,
}

impl Watch {
    fn new(file: &File, path: PathBuf) -> Watch {
        let id = file.metadata().ok().map(|m| lock_id(m.dev(), m.ino()));
        Watch {
            path,
            id,
            seen: Seen::default(),
        }
    }

    /// Reads what the head published, and shows the wait when it changed or is due.
    fn look(&mut self, patience: &Patience, progress: &mut Progress<'_>, first: bool) {
        if let Some(seen) = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str::<Seen>(text.trim()).ok())
        {
            self.seen = seen;
            self.seen.holder.ttl_left = self.seen.ttl_left_ms.map(Duration::from_millis);
        }
        let changed = progress.would_change(&self.seen.holder);
        if first || changed || progress.next_due().is_zero() {
            let place = self.place();
            progress.busy(&self.seen.holder, place, patience);
            progress.tick(patience);
        }
    }

    /// Why the process holding this queue's file (the host's head, as `/proc/locks`
    /// names it) does not progress, if it does not: stopped or traced (`T`, `t`), or in a
    /// frozen cgroup. `None` while it may progress, or cannot be read.
    fn head_stalled(&self) -> Option<String> {
        let id = self.id.as_ref()?;
        let text = std::fs::read_to_string("/proc/locks").ok()?;
        let head = holder_of(&text, id)?;
        let why = stalled(head)?;
        Some(format!("the host's head, pid {head}, is {why}"))
    }

    /// This run's place on this host, from `/proc/locks`.
    fn place(&self) -> Option<Place> {
        let id = self.id.as_ref()?;
        let text = std::fs::read_to_string("/proc/locks").ok()?;
        let (waiting, ahead) = count_waiters(&text, id, std::process::id());
        Some(Place::Host {
            ahead,
            waiting,
            head_pid: (self.seen.head_pid != 0).then_some(self.seen.head_pid),
        })
    }
}

/// The pid holding the flock of file `id` in a `/proc/locks` text.
fn holder_of(text: &str, id: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&id))
            .then(|| f.get(4)?.parse::<u32>().ok())
            .flatten()
    })
}

/// Whether process `pid` cannot progress: stopped or traced (its state in
/// `/proc/PID/stat` is `T` or `t`), or frozen by its cgroup, where such a task still
/// shows as sleeping: `frozen 1` in cgroup v2's `cgroup.events` (mounted at
/// `/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid system), or v1's
/// `freezer.state` saying `FROZEN` or `FREEZING` (`docker pause` on such hosts).
fn stalled(pid: u32) -> Option<&'static str> {
    let (state, _) = crate::holder::state_and_start(pid)?;
    match state.as_str() {
        "T" => return Some("stopped"),
        "t" => return Some("stopped by a debugger"),
        _ => {}
    }
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    frozen(&cgroups).then_some("in a frozen cgroup")
}

/// Whether the cgroups of a `/proc/PID/cgroup` text are frozen (see [`stalled`]).
fn frozen(cgroups: &str) -> bool {
    let read = |path: String| std::fs::read_to_string(path).unwrap_or_default();
    cgroups.lines().any(|line| {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let path = path.trim();
        if controllers.is_empty() {
            ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .iter()
                .any(|root| {
                    read(format!("{root}{path}/cgroup.events"))
                        .lines()
                        .any(|l| l.trim() == "frozen 1")
                })
        } else if controllers.split(',').any(|c| c == "freezer") {
            let state = read(format!("/sys/fs/cgroup/freezer{path}/freezer.state"));
            matches!(state.trim(), "FROZEN" | "FREEZING")
        } else {
            false
        }
    })
}

/// `MAJOR:MINOR:INODE` as `/proc/locks` prints a file (major and minor in hex).
fn lock_id(dev: u64, ino: u64) -> String {
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    format!("{major:02x}:{minor:02x}:{ino}")
}

/// The processes blocked on the flock of file `id` in a `/proc/locks` text, and how
/// many of them are listed before `pid` (the kernel lists a lock's waiters in the order
/// they blocked).
pub fn count_waiters(text: &str, id: &str, pid: u32) -> (u64, u64) {
    let mut waiting = 0;
    let mut ahead = None;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: -> FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`
        if fields.get(1) != Some(&"->") || fields.get(2) != Some(&"FLOCK") {
            continue;
        }
        if fields.get(6) != Some(&id) {
            continue;
        }
        if fields.get(5).and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            ahead.get_or_insert(waiting);
        }
        waiting += 1;
    }
    (waiting, ahead.unwrap_or(waiting))
}

/// How many runs wait in the local queue of `queue` on this host, and the pids holding
/// its files (the heads): what `redlock status` shows.
pub fn local_waiters(queue: &LocalQueue) -> (u64, Vec<u32>) {
    let Ok(text) = std::fs::read_to_string("/proc/locks") else {
        return (0, Vec::new());
    };
    let mut waiting = 0;
    let mut heads = Vec::new();
    for path in queue.files() {
        let Ok(m) = std::fs::metadata(path) else {
            continue;
        };
        let id = lock_id(m.dev(), m.ino());
        waiting += count_waiters(&text, &id, 0).0;
        heads.extend(text.lines().filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&id.as_str()))
                .then(|| f.get(4)?.parse::<u32>().ok())
                .flatten()
        }));
    }
    (waiting, heads)
}

/// The file name of a lock's queue: the lock key, readable where it is safe, and a
/// hash of the key and the servers (two deployments' locks of one name are not one
/// lock; names too long for a file name stay apart).
fn file_base(lock_key: &[u8], servers: &str) -> String {
    let mut readable = String::new();
    for &b in lock_key.iter().take(120) {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b':' | b'{' | b'}' => {
                readable.push(b as char)
            }
            _ => readable.push('_'),
        }
    }
    let hash = crate::hash::fnv1a(&[lock_key, b"\n", servers.as_bytes()].concat());
    format!("{readable}.{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_are_counted_per_file_in_the_kernels_order() {
        let text = "\
1: FLOCK  ADVISORY  WRITE 100 fd:01:42 0 EOF
1: -> FLOCK  ADVISORY  WRITE 101 fd:01:42 0 EOF
1: -> FLOCK  ADVISORY  WRITE 102 fd:01:42 0 EOF
1: -> FLOCK  ADVISORY  WRITE 103 fd:01:420 0 EOF
2: POSIX  ADVISORY  WRITE 104 fd:01:42 0 EOF
2: -> POSIX  ADVISORY  WRITE 105 fd:01:42 0 EOF
3: -> FLOCK  ADVISORY  WRITE 106 fd:01:42 0 EOF
";
        assert_eq!(count_waiters(text, "fd:01:42", 102), (3, 1));
        assert_eq!(count_waiters(text, "fd:01:42", 101), (3, 0));
        assert_eq!(count_waiters(text, "fd:01:42", 999), (3, 3));
        assert_eq!(count_waiters(text, "fd:01:420", 103), (1, 0));
    }

    #[test]
    fn file_names_are_safe_and_tell_deployments_apart() {
        let a = file_base(b"redlock:{deploy}", "redis://a:6379");
        let b = file_base(b"redlock:{deploy}", "redis://b:6379");
        assert!(a.starts_with("redlock:{deploy}."));
        assert_ne!(a, b);
        let odd = file_base(b"redlock:{../x/\n\xff}", "s");
        assert!(
            !odd.contains('/') && !odd.contains('\n') && !odd.contains(".."),
            "{odd}"
        );
        let long = file_base(&vec![b'x'; 5000], "s");
        assert!(long.len() < 200);
        assert_ne!(long, file_base(&vec![b'x'; 5001], "s"));
    }
}

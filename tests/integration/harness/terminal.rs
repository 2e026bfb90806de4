//! A wrapper started in the background, the way people and machines start it: through
//! pipes and files (cron, CI) or as a session leader on a fresh pseudo-terminal (an
//! interactive login); with what it said kept for failure messages.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::unistd::Pid;

use super::{Redis, Scratch, redlock_run, wait_for_file};

/// How long anything may take before the test calls it a hang.
pub const HANG: Duration = Duration::from_secs(30);

/// A process the test started and will wait for.
pub struct Running {
    child: Child,
    /// Everything the terminal showed (pty runs) — for failure messages.
    screen: Option<Screen>,
    /// Where stderr went (pipe runs) — for failure messages.
    stderr_file: Option<std::path::PathBuf>,
    /// [`Running::wait`] has seen the process exit.
    exited: std::sync::atomic::AtomicBool,
}

impl Running {
    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// What the process printed so far (pty screen or stderr file).
    pub fn said(&self) -> String {
        match (&self.screen, &self.stderr_file) {
            (Some(screen), _) => {
                // Once the process has exited, its last output may still be on its
                // way through the pty: read to the end first.
                if self.child_exited() {
                    screen.drained();
                }
                screen.text()
            }
            (None, Some(path)) => std::fs::read_to_string(path).unwrap_or_default(),
            _ => String::new(),
        }
    }

    fn child_exited(&self) -> bool {
        self.exited.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                self.exited.store(true, std::sync::atomic::Ordering::SeqCst);
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
    pub fn code(&mut self) -> i32 {
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
pub fn start_piped(mut cmd: Command, scratch: &Scratch, tag: &str) -> Running {
    cmd.stdout(File::create(scratch.path(&format!("{tag}.stdout"))).unwrap());
    start_keeping_stdout(cmd, scratch, tag)
}

/// [`start_piped`] for a `cmd` whose stdout the caller chose.
pub fn start_keeping_stdout(mut cmd: Command, scratch: &Scratch, tag: &str) -> Running {
    let stderr_file = scratch.path(&format!("{tag}.stderr"));
    cmd.stdin(Stdio::null())
        .stderr(File::create(&stderr_file).unwrap());
    Running {
        child: cmd.spawn().expect("spawn"),
        screen: None,
        stderr_file: Some(stderr_file),
        exited: Default::default(),
    }
}

/// The output side of a pty master, drained by a thread so the terminal never blocks.
/// What the pty showed, and whether its reader has reached the end (every slave
/// descriptor closed).
#[derive(Clone)]
pub struct Screen(Arc<Mutex<Vec<u8>>>, Arc<std::sync::atomic::AtomicBool>);

impl Screen {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Waits (at most 5 s: a process left holding the terminal) until the reader has
    /// read everything written before the slave closed.
    fn drained(&self) {
        let start = Instant::now();
        while !self.1.load(std::sync::atomic::Ordering::SeqCst)
            && start.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

pub fn cloexec(fd: &OwnedFd) {
    fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("FD_CLOEXEC");
}

/// Starts `cmd` as a session leader whose controlling terminal is a fresh pty (stdin,
/// stderr and, unless `stdout` is given, stdout on the slave), like a login shell.
/// Returns the process and the master, to type on.
pub fn start_on_pty(mut cmd: Command, stdout: Option<File>) -> (Running, File) {
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
    let screen = Screen(Arc::new(Mutex::new(Vec::new())), Arc::default());
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
        sink.1.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    (
        Running {
            child,
            screen: Some(screen),
            stderr_file: None,
            exited: Default::default(),
        },
        master,
    )
}

/// How a test starts the wrapper.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    /// stdin /dev/null, output to files (cron, CI).
    Pipe,
    /// a session leader on a pty (an interactive login).
    Pty,
}

pub fn start(cmd: Command, via: Via, scratch: &Scratch, tag: &str) -> (Running, Option<File>) {
    match via {
        Via::Pipe => (start_piped(cmd, scratch, tag), None),
        Via::Pty => {
            let (running, master) = start_on_pty(cmd, None);
            (running, Some(master))
        }
    }
}

/// `redlock-run --key NAME --redis URL -- <command>`.
pub fn run_cmd(redis: &Redis, key: &str, command: &[&OsStr]) -> Command {
    let mut cmd = redlock_run();
    cmd.args(["--key", key, "--redis", &redis.url(), "--"])
        .args(command);
    cmd
}

pub fn wait_file(path: &Path, needle: &str, running: &Running) {
    assert!(
        wait_for_file(path, needle, HANG),
        "{} never contained {needle:?}; the run said:\n{}",
        path.display(),
        running.said()
    );
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every key in the server, binary-safe, but fence counters and histories (see
/// `Redis::keys`).
pub fn raw_keys(redis: &Redis) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut redis.conn())
        .expect("KEYS");
    keys.retain(|k| {
        !k.ends_with(b":fence") && !k.ends_with(b":history") && !super::server::is_data_epoch(k)
    });
    keys
}

pub fn assert_no_keys(redis: &Redis, ctx: &str) {
    let keys = raw_keys(redis);
    assert!(
        keys.is_empty(),
        "{ctx}: keys left behind: {:?}",
        keys.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    );
}

//! A run holding a lock, its command parked until the test lets it go: the one helper
//! for "someone holds this lock while the test looks".

use std::io::Read;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{Scratch, read_pid, redlock_run, wait_child};

/// How long a holder may take to start its command before the test calls it a hang.
const READY: Duration = Duration::from_secs(30);

/// `redlock-run <args> -- sh -c <parked command>`: the command records its pid and
/// token, then waits for the go-ahead and exits with a code the test chose.
pub struct Holding {
    run: Child,
    scratch: Scratch,
}

impl Holding {
    /// Starts a holder whose command exits 0; returns once the command runs.
    pub fn start(args: &[String]) -> Holding {
        Holding::start_exiting(args, 0)
    }

    /// Starts a holder whose command exits with `exit`; returns once the command runs
    /// (panics, with the wrapper's stderr, if the wrapper ends before).
    pub fn start_exiting(args: &[String], exit: i32) -> Holding {
        let scratch = Scratch::new();
        let script = format!(
            "echo $$ > '{pid}'\n\
                 echo \"$REDLOCK_TOKEN\" > '{token}.tmp' && mv '{token}.tmp' '{token}'\n\
                 while [ ! -e '{go}' ]; do sleep 0.02; done\n\
                 exit {exit}",
            pid = scratch.path("pid").display(),
            token = scratch.path("token").display(),
            go = scratch.path("go").display(),
        );
        let run = redlock_run()
            .args(args)
            .args(["--", "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn redlock-run");
        let mut holding = Holding { run, scratch };
        holding.wait_ready();
        holding
    }

    fn wait_ready(&mut self) {
        let token = self.scratch.path("token");
        let start = Instant::now();
        while !token.exists() {
            if let Some(status) = self.run.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut stderr) = self.run.stderr.take() {
                    stderr.read_to_string(&mut err).ok();
                }
                panic!("wrapper ended before its command ran: {status}; stderr: {err}");
            }
            assert!(start.elapsed() < READY, "holder never got ready");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The holder's token, as its command saw it.
    pub fn token(&self) -> String {
        std::fs::read_to_string(self.scratch.path("token"))
            .expect("token file")
            .trim()
            .to_string()
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        read_pid(&self.scratch.path("pid"))
    }

    /// The wrapper's pid (the pid recorded in the lock's metadata).
    pub fn wrapper_pid(&self) -> u32 {
        self.run.id()
    }

    /// Lets the command end.
    pub fn let_go(&self) {
        std::fs::write(self.scratch.path("go"), "").unwrap();
    }

    /// Waits for the wrapper to exit (without letting the command go); returns its
    /// status and stderr.
    pub fn wait(mut self) -> Output {
        let status = wait_child(&mut self.run, Duration::from_secs(60));
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.run.stderr.take() {
            pipe.read_to_end(&mut stderr).ok();
        }
        Output {
            status,
            stdout: Vec::new(),
            stderr,
        }
    }

    /// Lets the command end; returns the run's (exit code, stderr).
    pub fn finish(self) -> (i32, String) {
        self.let_go();
        let out = self.wait();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = out
            .status
            .code()
            .unwrap_or_else(|| panic!("wrapper killed by a signal: {}; stderr: {err}", out.status));
        (code, err)
    }

    /// Stops the run from outside (SIGTERM to the wrapper, forwarded to the command)
    /// and waits for it.
    pub fn stop(mut self) {
        let _ = kill(Pid::from_raw(self.run.id() as i32), Signal::SIGTERM);
        wait_child(&mut self.run, Duration::from_secs(20));
    }
}

//! Exit statuses of `redlock-run`: all 256 codes pass through, death by signal N gives
//! 128+N, and the lock is released either way.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::*;

// ---------------------------------------------------------------------------------
// Exit statuses.

#[test]
fn every_exit_code_passes_through() {
    let redis = Redis::start();
    let url = redis.url();
    let threads = 3;
    let failures: Vec<String> = (0..threads)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for n in (0..=255).filter(|n| n % threads == t) {
                    let out = output_within(
                        redlock_run()
                            .args(["--key", &format!("code-{n}"), "--redis", &url, "--"])
                            .args(["sh", "-c", &format!("exit {n}")]),
                        HANG,
                    );
                    if out.status.code() != Some(n) || !out.stderr.is_empty() {
                        failures.push(format!("{n}: {:?} {}", out.status, stderr(&out)));
                    }
                }
                failures
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().expect("worker"))
        .collect();
    assert!(
        failures.is_empty(),
        "codes not passed through: {failures:#?}"
    );
    assert_no_keys(&redis, "exit codes");
}

/// Signals 1..=31 whose default action terminates the process (not CHLD, CONT, STOP,
/// TSTP, TTIN, TTOU, URG, WINCH).
fn terminating_signals() -> Vec<Signal> {
    (1..=31)
        .filter_map(|n| Signal::try_from(n).ok())
        .filter(|s| {
            !matches!(
                s,
                Signal::SIGCHLD
                    | Signal::SIGCONT
                    | Signal::SIGSTOP
                    | Signal::SIGTSTP
                    | Signal::SIGTTIN
                    | Signal::SIGTTOU
                    | Signal::SIGURG
                    | Signal::SIGWINCH
            )
        })
        .collect()
}

/// The command (a `sleep` with default dispositions) is killed by each terminating
/// signal, sent to it directly; the wrapper exits 128+N and releases.
#[test]
fn a_command_killed_by_signal_n_gives_128_plus_n() {
    let redis = Redis::start();
    let scratch = Scratch::new();
    let child = scratch.script(
        "victim",
        "ulimit -c 0\necho $$ > \"$1.tmp\"\nmv \"$1.tmp\" \"$1\"\nexec sleep 600",
    );
    let signals = terminating_signals();
    assert_eq!(signals.len(), 23, "{signals:?}");
    for sig in signals {
        let n = sig as i32;
        let pid_file = scratch.path(&format!("pid-{n}"));
        let cmd = run_cmd(
            &redis,
            &format!("sig-{n}"),
            &[child.as_os_str(), pid_file.as_os_str()],
        );
        let mut running = start_piped(cmd, &scratch, &format!("sig-{n}"));
        wait_file(&pid_file, "\n", &running);
        let pid = read_pid(&pid_file);
        // Signal the program itself, not the shell that is about to exec it.
        assert!(
            eventually(HANG, || std::fs::read_to_string(format!(
                "/proc/{pid}/comm"
            ))
            .is_ok_and(|c| c.trim() == "sleep")),
            "{sig}: the command never became sleep"
        );
        kill(Pid::from_raw(pid), sig).expect("signal the command");
        let code = running.code();
        assert_eq!(code, 128 + n, "{sig}: said {}", running.said());
        assert_eq!(running.said(), "", "{sig}: nothing to say on stderr");
        assert_no_keys(&redis, &format!("{sig}"));
    }
}

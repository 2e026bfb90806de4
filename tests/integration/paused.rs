//! A wrapper stopped (SIGSTOP) at a random moment while it holds the lock: its group
//! guard, told the lease's end after each renewal, stops the command before the lease
//! can end, so the command never overlaps the next holder's — for a plain run, an
//! `--elect` leader and a `--once-per --if-vanished rerun` run. The resumed wrapper says
//! it was stopped (not that renewals failed) and ends as a lost run (79), or stands by.
//!
//! Each trial judges from outside: the paused command's process group holds a FIFO
//! open (its last writer gone = the group dead), the key's expiry is read with PTTL
//! just after the SIGSTOP (a lower bound), and every command journals its start and a
//! beat every 20 ms with its own clock (`date +%s%N`). Trials run a few at once, each
//! on its own key; CI runs 5 of each kind, `REDLOCK_FULL_FIGURES=1` the issue's 50.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::*;

/// The command: journals its start, then a beat every 20 ms. The paused one (given a
/// FIFO) holds the FIFO in its whole group and ignores SIGTERM, so that the SIGKILL at
/// the margin is what ends it.
const COMMAND: &str = r#"j="$1"; who="$2"; fifo="$3"
if [ -n "$fifo" ]; then exec 3>"$fifo"; trap '' TERM; fi
echo "START $who $(date +%s%N)" >> "$j"
while :; do echo "BEAT $who $(date +%s%N)" >> "$j"; sleep 0.02; done"#;

/// How the runs of a trial are started.
#[derive(Clone, Copy)]
enum Kind {
    Plain,
    Elect,
    Rerun,
}

impl Kind {
    fn flags(self) -> Vec<String> {
        let flags: &[&str] = match self {
            Kind::Plain => &["--wait", "20s"],
            Kind::Elect => &["--elect"],
            Kind::Rerun => &[
                "--once-per",
                "1h",
                "--if-vanished",
                "rerun",
                "--wait",
                "20s",
            ],
        };
        flags.iter().map(|s| s.to_string()).collect()
    }
}

/// What one trial measured (wall ms).
#[derive(Debug)]
struct Trial {
    /// The key's expiry as PTTL read it after the SIGSTOP (a lower bound).
    expiry: f64,
    /// The paused command's group gone (its FIFO's last writer).
    dead: f64,
    /// The paused command's last beat, and the second holder's first line.
    last_beat: f64,
    second_start: f64,
    /// A's exit status and what it said.
    code: i32,
    said: String,
}

/// A wrapper that is SIGKILLed if the trial fails while it runs (its guard then kills
/// its command), so a failing trial leaves nothing running.
struct Run(Option<Child>);

impl Run {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("not taken")
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(self.0.as_ref().expect("not taken").id() as i32)
    }

    /// The child, no longer killed on drop.
    fn take(mut self) -> Child {
        self.0.take().expect("not taken")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// (who, ms) of each START or BEAT line of `journal`.
fn lines(journal: &Path) -> Vec<(String, String, f64)> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                [what, who, ns] => Some((
                    what.to_string(),
                    who.to_string(),
                    ns.parse::<f64>().ok()? / 1e6,
                )),
                _ => None,
            }
        })
        .collect()
}

fn start(kind: Kind, redis: &Redis, name: &str, s: &Scratch, who: &str, fifo: &str) -> Run {
    let script = s.script(&format!("cmd-{name}"), COMMAND);
    let journal = s.path(&format!("journal-{name}"));
    redlock_run()
        .args(lock_args(redis, name))
        .args(["--ttl", "1s"])
        .args(kind.flags())
        .arg("--")
        .arg(&script)
        .arg(&journal)
        .arg(who)
        .arg(fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map(|child| Run(Some(child)))
        .expect("spawn redlock-run")
}

/// One trial on key `name`: A holds, is SIGSTOPped at a random moment, B takes over;
/// A is continued and ends (or, `--elect`, stands by).
fn trial(kind: Kind, redis: &Redis, name: &str) -> Trial {
    let s = Scratch::new();
    let journal = s.path(&format!("journal-{name}"));
    let fifo = s.path("group");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let watched = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::open(&watched).expect("open fifo");
        let mut sink = Vec::new();
        f.read_to_end(&mut sink).ok();
        wall_ms()
    });
    let mut a = start(kind, redis, name, &s, "A", &fifo.to_string_lossy());
    assert!(
        eventually(READY, || lines(&journal).iter().any(|l| l.0 == "START")),
        "A never started"
    );
    // A random moment of the lease's life: 0 to 1.5 renewal periods in.
    std::thread::sleep(Duration::from_millis(fastrand::u64(0..500)));
    kill(a.pid(), Signal::SIGSTOP).unwrap();
    let t0 = wall_ms();
    let p = pttl(redis, &lock_key(name));
    assert!(p > 0, "pttl {p}: A's key is gone before the pause");
    let expiry = t0 + p as f64;
    let mut b = start(kind, redis, name, &s, "B", "");
    // The group must die within the lease; past 5 s it is called alive (and the trial
    // fails below, after A is continued and cleans up).
    let dead = if eventually(Duration::from_secs(5), || reader.is_finished()) {
        reader.join().expect("fifo reader")
    } else {
        f64::INFINITY
    };
    assert!(
        eventually(Duration::from_secs(20), || lines(&journal)
            .iter()
            .any(|l| l.1 == "B")),
        "B never started"
    );
    let journal_lines = lines(&journal);
    let last_beat = journal_lines
        .iter()
        .filter(|l| l.1 == "A")
        .map(|l| l.2)
        .fold(0.0, f64::max);
    let second_start = journal_lines
        .iter()
        .filter(|l| l.1 == "B")
        .map(|l| l.2)
        .fold(f64::MAX, f64::min);
    kill(a.pid(), Signal::SIGCONT).unwrap();
    if let Kind::Elect = kind {
        // A stands by (a lost term does not end an `--elect` run): told to stop.
        std::thread::sleep(Duration::from_millis(100));
        assert!(a.child().try_wait().unwrap().is_none(), "A stands by");
        let _ = kill(a.pid(), Signal::SIGTERM);
    }
    let (code, said) = finish(a.take(), Duration::from_secs(20));
    let _ = kill(b.pid(), Signal::SIGTERM);
    wait_child(b.child(), Duration::from_secs(20));
    Trial {
        expiry,
        dead,
        last_beat,
        second_start,
        code,
        said,
    }
}

/// `rounds(5, 50)` trials of `kind`, five at a time: in every one the paused command's
/// group is dead before its lease's end and its last beat precedes the next holder's
/// start.
fn trials(kind: Kind, label: &str) {
    let redis = Redis::start();
    let total = rounds(5, 50);
    let mut all = Vec::new();
    for batch in 0..total.div_ceil(5) {
        let runs: Vec<Trial> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..5.min(total - batch * 5))
                .map(|i| {
                    let redis = &redis;
                    let name = format!("{label}-{batch}-{i}");
                    scope.spawn(move || trial(kind, redis, &name))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        all.extend(runs);
    }
    let least_slack = all
        .iter()
        .map(|t| t.expiry - t.dead)
        .fold(f64::MAX, f64::min);
    let least_gap = all
        .iter()
        .map(|t| t.second_start - t.last_beat)
        .fold(f64::MAX, f64::min);
    eprintln!(
        "paused {label}: {} trials; group dead before the key's expiry by at least {least_slack:.0} ms; next holder started at least {least_gap:.0} ms after the paused command's last beat",
        all.len()
    );
    for t in &all {
        assert!(t.dead < t.expiry, "the command outlived its lease: {t:?}");
        assert!(
            t.last_beat < t.second_start,
            "two commands overlapped: {t:?}"
        );
        // A resumed wrapper says it was stopped; a plain or --once-per run ends lost.
        assert!(t.said.contains("the wrapper was stopped for"), "{t:?}");
        assert!(!t.said.contains("renewals failed"), "{t:?}");
        if !matches!(kind, Kind::Elect) {
            assert_eq!(t.code, codes::LOST, "{t:?}");
        }
    }
}

#[test]
fn a_paused_plain_run_never_outlives_its_lease() {
    trials(Kind::Plain, "plain");
}

#[test]
fn a_paused_leader_never_outlives_its_term() {
    trials(Kind::Elect, "elect");
}

#[test]
fn a_paused_once_per_run_never_overlaps_its_rerun() {
    trials(Kind::Rerun, "rerun");
}

//! The nemesis: faults injected into real servers and proxies while a workload runs,
//! each a blocking "inject, hold, heal" step (a fault's hold is the fault's duration,
//! not a wait for an event); the Jepsen-style schedule that fires them at random
//! while the contenders run; [`GroupWatch`], which times a process group's life from
//! outside; and the one-line summaries the rows print.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::proxy::{Mode, Proxy};
use super::server::Redis;
use super::workload::{Report, Underway};
use super::{Scratch, eventually};

/// The lease parameters of the nemesis rows: the test budget of the research notes
/// (§6: ttl 2 s, renew 0.5 s, node timeout 0.2 s, kill-after 0.3 s).
pub fn budget_args(ttl_ms: u64) -> Vec<String> {
    let (renew, timeout, kill_after) = (ttl_ms / 4, ttl_ms / 10, ttl_ms * 3 / 20);
    [
        "--ttl".to_string(),
        format!("{ttl_ms}ms"),
        "--renew-every".into(),
        format!("{renew}ms"),
        "--node-timeout".into(),
        format!("{timeout}ms"),
        "--kill-after".into(),
        format!("{kill_after}ms"),
    ]
    .to_vec()
}

/// How long after a loss became observable the command must be dead (docs/design/lease.md, "How the
/// lease stays safe"): the next renewal is due within `renew_every`, it takes at most a
/// node timeout to answer "not ours", then SIGTERM, SIGKILL after `kill_after`, and the
/// margin the budget keeps for signal delivery and reaping (min(ttl/10, 500 ms)).
pub fn detection_bound(ttl_ms: u64) -> Duration {
    let margin = (ttl_ms / 10).min(500);
    Duration::from_millis(ttl_ms / 4 + ttl_ms / 10 + ttl_ms * 3 / 20 + margin)
}

// Faults on a server ----------------------------------------------------------------

/// SIGSTOP for `hold`, then SIGCONT (F4, and a hanging node under Redlock).
pub fn sigstop(redis: &Redis, hold: Duration) {
    redis.pause();
    std::thread::sleep(hold);
    redis.resume();
}

/// `DEBUG SLEEP` for `hold` on a connection of its own (F5).
pub fn debug_sleep(redis: &Redis, hold: Duration) {
    debug_sleep_in_background(redis, hold)
        .join()
        .expect("DEBUG SLEEP");
}

/// `CLIENT PAUSE <hold> WRITE` (F6): writes (and EVALSHA) wait, keys do not expire.
pub fn client_pause_write(redis: &Redis, hold: Duration) {
    let ms = hold.as_millis().to_string();
    let _: String = redis.cmd(&["CLIENT", "PAUSE", &ms, "WRITE"]);
    std::thread::sleep(hold);
    let _: String = redis.cmd(&["CLIENT", "UNPAUSE"]);
}

/// `CLIENT KILL` of every normal and pub/sub connection but the test's own (F9, F32).
pub fn client_kill(redis: &Redis) {
    let _: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    let _: i64 = redis.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]);
}

/// `SCRIPT FLUSH` (F10): the next EVALSHA gets NOSCRIPT.
pub fn script_flush(redis: &Redis) {
    let _: String = redis.cmd(&["SCRIPT", "FLUSH"]);
}

/// `kill -9`, the port closed for `down`, then the same server again (F11 with
/// persistence and `down` zero; F12 without, `down` past the ttl).
pub fn crash_restart(redis: &mut Redis, down: Duration) {
    redis.crash();
    std::thread::sleep(down);
    redis.start_again();
}

/// `REPLICAOF` another (empty) server for `hold` (F27): writes get READONLY, the
/// dataset is replaced by the master's; then `REPLICAOF NO ONE`.
pub fn read_only(redis: &Redis, master: &Redis, hold: Duration) {
    let port = master.port.to_string();
    let _: String = redis.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    std::thread::sleep(hold);
    let _: String = redis.cmd(&["REPLICAOF", "NO", "ONE"]);
}

/// `maxmemory` just above what is used, `noeviction`, filled until OOM, for `hold`
/// (F28): new writes that need memory fail; PEXPIRE and DEL still work.
pub fn memory_full(redis: &Redis, hold: Duration) {
    let mut conn = redis.conn();
    let used = redis.info_number("memory", "used_memory");
    let limit = (used + 512 * 1024).to_string();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", "noeviction", "maxmemory", &limit][..])
        .query(&mut conn)
        .unwrap();
    let filler = "x".repeat(64 * 1024);
    let mut n = 0;
    while redis::cmd("SET")
        .arg(format!("nemesis:filler:{n}"))
        .arg(&filler)
        .query::<()>(&mut conn)
        .is_ok()
    {
        n += 1;
        assert!(n < 1000, "maxmemory never refused a write");
    }
    std::thread::sleep(hold);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"][..])
        .query(&mut conn)
        .unwrap();
    for i in 0..=n {
        let _: () = redis::cmd("DEL")
            .arg(format!("nemesis:filler:{i}"))
            .query(&mut conn)
            .unwrap();
    }
}

/// A script that loops for `hold` (F29): everybody else gets BUSY, then `SCRIPT KILL`.
pub fn busy_script(redis: &Redis, hold: Duration) {
    let busy = BusyScript::start(redis);
    std::thread::sleep(hold);
    busy.kill();
}

/// A script looping on a connection of its own until [`BusyScript::kill`]; with
/// `busy-reply-threshold` 100 ms every other client gets BUSY meanwhile.
pub struct BusyScript {
    killer: redis::Connection,
    looper: std::thread::JoinHandle<bool>,
}

impl BusyScript {
    pub fn start(redis: &Redis) -> BusyScript {
        let mut killer = redis.conn();
        let _: () = redis::cmd("CONFIG")
            .arg(&["SET", "busy-reply-threshold", "100"][..])
            .query(&mut killer)
            .unwrap();
        let mut conn = redis.conn();
        let looper = std::thread::spawn(move || {
            redis::cmd("EVAL")
                .arg(&["while true do end", "0"][..])
                .query::<()>(&mut conn)
                .is_err()
        });
        BusyScript { killer, looper }
    }

    /// `SCRIPT KILL` (NOTBUSY until the script has started) and waits for its end.
    pub fn kill(mut self) {
        let killer = &mut self.killer;
        let looper = &self.looper;
        assert!(
            eventually(Duration::from_secs(10), || {
                redis::cmd("SCRIPT").arg("KILL").query::<()>(killer).is_ok() || looper.is_finished()
            }),
            "SCRIPT KILL never landed"
        );
        assert!(
            self.looper.join().unwrap(),
            "the busy script ended without an error"
        );
    }
}

/// `DEBUG SLEEP` for `hold` on a thread of its own; join it to heal.
pub fn debug_sleep_in_background(redis: &Redis, hold: Duration) -> std::thread::JoinHandle<()> {
    let mut conn = redis.conn();
    let secs = format!("{:.3}", hold.as_secs_f64());
    std::thread::spawn(move || {
        let _: () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(secs)
            .query(&mut conn)
            .expect("DEBUG SLEEP");
    })
}

/// `maxclients` at the connections open now, for `hold` (F31): new connections get
/// "max number of clients reached"; open ones go on.
pub fn max_clients(redis: &Redis, hold: Duration) {
    // Counted on the connection kept open below, so that it is among those counted.
    let mut conn = redis.conn();
    let info: String = redis::cmd("INFO").arg("clients").query(&mut conn).unwrap();
    let connected: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("connected_clients");
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxclients", &connected.to_string()][..])
        .query(&mut conn)
        .unwrap();
    std::thread::sleep(hold);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxclients", "10000"][..])
        .query(&mut conn)
        .unwrap();
}

// Faults on a proxy -----------------------------------------------------------------

/// `mode` on `proxies` for `hold`, then healed (F7 blackhole, F8 replies dropped,
/// latency).
pub fn network(proxies: &[&Proxy], mode: Mode, hold: Duration) {
    for p in proxies {
        p.set(mode);
    }
    std::thread::sleep(hold);
    for p in proxies {
        p.pass();
    }
}

// The schedule ----------------------------------------------------------------------

/// One fault of a row: a name for the log and a blocking inject-hold-heal step.
pub struct Fault<'a> {
    pub name: &'static str,
    pub step: Box<dyn FnMut(&Underway) + 'a>,
}

impl<'a> Fault<'a> {
    pub fn new(name: &'static str, step: impl FnMut(&Underway) + 'a) -> Fault<'a> {
        Fault {
            name,
            step: Box::new(step),
        }
    }
}

/// What a schedule did.
pub struct Schedule {
    pub injections: usize,
}

/// Jepsen-style: while the workload runs, waits a random 1–3 s (`quiet` scales it),
/// fires one of `faults` at random, notes it in the log, and repeats until the
/// workload has `sections` completed runs and `min_injections` faults were fired; gives
/// up at `limit` (the row then fails on its figures, not here).
pub fn schedule(
    running: &Underway,
    faults: &mut [Fault],
    sections: usize,
    min_injections: usize,
    quiet: Duration,
    limit: Duration,
) -> Schedule {
    let start = Instant::now();
    let mut injections = 0;
    while (running.completed() < sections || injections < min_injections) && start.elapsed() < limit
    {
        std::thread::sleep(quiet.mul_f64(1.0 + 2.0 * fastrand::f64()));
        if faults.is_empty() {
            continue;
        }
        let i = fastrand::usize(..faults.len());
        let fault = &mut faults[i];
        running.note(&format!("inject {}", fault.name));
        (fault.step)(running);
        running.note(&format!("healed {}", fault.name));
        injections += 1;
    }
    Schedule { injections }
}

// Watching a process group from outside ---------------------------------------------

/// Times a process group's life without polling: the command opens a FIFO for writing
/// (`exec 3>FIFO`, inherited by everything it starts); a reader thread notes when the
/// first writer opened it and when the last one is gone (EOF).
pub struct GroupWatch {
    pub fifo: PathBuf,
    reader: std::thread::JoinHandle<(Instant, Instant)>,
}

impl GroupWatch {
    pub fn new(scratch: &Scratch, name: &str) -> GroupWatch {
        let fifo = scratch.path(name);
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let path = fifo.clone();
        let reader = std::thread::spawn(move || {
            let mut f = std::fs::File::open(&path).expect("open fifo");
            let opened = Instant::now();
            let mut sink = Vec::new();
            f.read_to_end(&mut sink).ok();
            (opened, Instant::now())
        });
        GroupWatch { fifo, reader }
    }

    /// The shell line that makes the group a writer.
    pub fn hold_line(&self) -> String {
        format!("exec 3>'{}'", self.fifo.display())
    }

    /// Whether the group is gone (EOF seen).
    pub fn is_gone(&self) -> bool {
        self.reader.is_finished()
    }

    /// Waits for the group to be gone: (began, gone).
    pub fn gone(self) -> (Instant, Instant) {
        self.reader.join().expect("fifo reader")
    }
}

/// Unblocks a [`GroupWatch`] whose command never started (so its reader can end).
pub fn release_watch(fifo: &Path) {
    let _ = std::fs::OpenOptions::new().write(true).open(fifo);
}

// Summaries -------------------------------------------------------------------------

/// Prints one line past the test harness's capture (straight to fd 2), so that every
/// row's figures show in the test output whether it passes or fails.
pub fn summary(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "nemesis {line}");
}

/// The summary of a workload row.
pub fn row_summary(row: &str, fault: &str, r: &Report, injections: usize) {
    let statuses: Vec<String> = r.statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
    summary(&format!(
        "{row} {fault}: {} runs, {} sections, {} overlaps, {} lost updates, {} injections, {} killed \
         mid-section, max holders {}, {} out of arrival order, exits [{}], {} unexpected, {:.1} s",
        r.runs,
        r.verdict.sections,
        r.verdict.overlaps,
        r.lost_updates,
        injections,
        r.verdict.unfinished,
        r.verdict.max_holders,
        r.verdict.out_of_order,
        statuses.join(" "),
        r.unexpected.len(),
        r.elapsed.as_secs_f64()
    ));
}

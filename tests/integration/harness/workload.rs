//! The mutual-exclusion workload (Jepsen's lock-set adapted to a wrapper): K
//! contenders loop `redlock-run <args> -- section`, where `section` (a shell script)
//! takes a witness slot with `flock -n`, appends `BEGIN` to one shared O_APPEND log,
//! reads a counter file, pauses a random 0..max, writes the counter plus one (by a
//! rename, so a section killed half-way leaves the old value, not an empty file) and
//! appends `END` (log format and judgement: `checker`). Each run's exit status is
//! held to the documented table and to what the row allows. The nemesis (the test's
//! own thread) injects faults while it runs; [`contend`] is the plain fault-free form.
//! With [`Workload::sets`] each run holds several names and its section and judgement
//! are those of `sets`, per name.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::checker::{self, Verdict};
use super::sets::{self, NameVerdict, Sets};
use super::{RUN, Scratch, redlock_run};

/// The wrapper's arguments for contender `i` (its `--key`, `--redis`, timing, ...).
pub type ArgsFor = Arc<dyn Fn(usize) -> Vec<String> + Send + Sync>;

/// What the contenders run (see the module header).
#[derive(Clone)]
pub struct Workload {
    pub args: ArgsFor,
    pub contenders: usize,
    /// At most this many sections at once (1 for a plain lock; N for `--limit N`).
    pub limit: usize,
    /// The section's pause between reading and writing the counter: random, 0..this.
    pub max_pause: Duration,
    /// The share of sections (0..1) that pause a random 0..`long_pause` instead, so
    /// that stalling faults catch holders mid-section.
    pub long_share: f64,
    pub long_pause: Duration,
    /// The section traps SIGTERM, so only SIGKILL stops it.
    pub ignore_term: bool,
    /// `--wait` of each run.
    pub wait: String,
    /// Each contender's number of runs; `None`: until [`Underway::finish`].
    pub rounds: Option<usize>,
    /// Tool statuses a run may end with besides 0 (e.g. 79 where the nemesis makes
    /// renewals fail); anything else, a status outside the documented table included,
    /// is reported as unexpected.
    pub allowed: Vec<i32>,
    /// Write `ARRIVE <run>` before each run starts (for FIFO checks of `--fair`).
    pub arrivals: bool,
    /// The first this many contenders run with `--shared` (the others are the name's
    /// exclusive side): their sections take the witness file shared (`flock -s`) and
    /// touch no counter; an exclusive section takes it exclusively too. With `sets`,
    /// they hold the pool's read-shared name `--shared NAME`.
    pub readers: usize,
    /// Each run holds several names drawn from these (`sets`), given after `args`
    /// (which then carry no `--key`); `None`: the one name of `args`.
    pub sets: Option<Arc<Sets>>,
}

impl Workload {
    /// `contenders` runs of the same arguments, one section at a time, short pauses.
    pub fn new(args: Vec<String>, contenders: usize) -> Workload {
        Workload {
            args: Arc::new(move |_| args.clone()),
            contenders,
            limit: 1,
            max_pause: Duration::from_millis(20),
            long_share: 0.0,
            long_pause: Duration::ZERO,
            ignore_term: false,
            wait: "forever".into(),
            rounds: None,
            allowed: Vec::new(),
            arrivals: false,
            readers: 0,
            sets: None,
        }
    }

    /// Each contender with arguments of its own (its own proxies, say).
    pub fn per_contender(args: ArgsFor, contenders: usize) -> Workload {
        Workload {
            args,
            ..Workload::new(Vec::new(), contenders)
        }
    }

    /// Starts the contenders; they run until their rounds are done or [`Underway::finish`].
    pub fn start(&self) -> Underway {
        let scratch = Scratch::new();
        let log = scratch.path("log");
        let counter = scratch.path("counter");
        std::fs::write(&counter, "0").unwrap();
        std::fs::write(&log, "").unwrap();
        let body = match &self.sets {
            Some(sets) => {
                sets.prepare(&scratch);
                sets.section_script(&scratch, self.ignore_term)
            }
            None => section_script(self, &scratch),
        };
        let section = scratch.script("section", &body);
        let shared = Arc::new(Shared::default());
        let workers = (0..self.contenders)
            .map(|i| {
                let (shared, section, log) = (shared.clone(), section.clone(), log.clone());
                let w = self.clone();
                std::thread::spawn(move || contender(&w, i, &section, &log, &shared))
            })
            .collect();
        Underway {
            limit: self.limit,
            sets: self.sets.clone(),
            rounds: self.rounds,
            allowed: self.allowed.clone(),
            scratch,
            log,
            counter,
            shared,
            workers,
            started: Instant::now(),
        }
    }
}

/// The section (see the module header). `$RUN` and `$PAUSE` come from the contender;
/// `$SHARE` is 1 for a `--shared` contender (see [`shared_witness`]).
fn section_script(w: &Workload, scratch: &Scratch) -> String {
    let (share, exclusive) = shared_witness(w, scratch);
    format!(
        "{trap}{share}slot=-; i=0\n\
         while [ $i -lt {limit} ]; do\n\
           exec 9>>'{slots}'$i\n\
           if flock -n 9; then slot=$i; break; fi\n\
           exec 9>&-; i=$((i + 1))\n\
         done\n\
         {exclusive}echo \"BEGIN $RUN $REDLOCK_TOKEN ${{REDLOCK_FENCE:--}} $slot\" >> '{log}'\n\
         read n < '{counter}'\n\
         [ \"$PAUSE\" = 0 ] || sleep \"$PAUSE\"\n\
         echo $((n + 1)) > '{counter}'.$$ && mv '{counter}'.$$ '{counter}'\n\
         echo \"END $RUN $REDLOCK_TOKEN\" >> '{log}'",
        trap = if w.ignore_term { "trap '' TERM\n" } else { "" },
        limit = w.limit,
        slots = scratch.path("slot").display(),
        log = scratch.path("log").display(),
        counter = scratch.path("counter").display(),
    )
}

/// With readers: a shared section takes the witness file with `flock -n -s` (slot `S`,
/// or `-` when an exclusive section that is alive holds it), logs BEGIN, pauses and
/// logs END, touching no counter; an exclusive section also takes the witness with
/// `flock -n -x` (its slot `-` when any section that is alive holds it). The kernel
/// releases a dead section's lock, so the witness judges killed sections too.
fn shared_witness(w: &Workload, scratch: &Scratch) -> (String, String) {
    if w.readers == 0 {
        return (String::new(), String::new());
    }
    let witness = scratch.path("witness");
    let log = scratch.path("log");
    let reader = format!(
        "if [ \"$SHARE\" = 1 ]; then\n\
           exec 8>>'{w}'; if flock -n -s 8; then slot=S; else slot=-; fi\n\
           echo \"BEGIN $RUN $REDLOCK_TOKEN ${{REDLOCK_FENCE:--}} $slot\" >> '{l}'\n\
           [ \"$PAUSE\" = 0 ] || sleep \"$PAUSE\"\n\
           echo \"END $RUN $REDLOCK_TOKEN\" >> '{l}'\n\
           exit 0\n\
         fi\n",
        w = witness.display(),
        l = log.display()
    );
    let writer = format!("exec 8>>'{}'; flock -n -x 8 || slot=-\n", witness.display());
    (reader, writer)
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Runs that exited 0.
    ok: AtomicUsize,
    /// Run id -> wrapper pid, while the wrapper runs.
    live: Mutex<HashMap<String, i32>>,
    /// Runs the nemesis signalled, and with what.
    signalled: Mutex<HashMap<String, Signal>>,
}

struct Outcome {
    run: String,
    status: ExitStatus,
    stderr: String,
}

fn contender(
    w: &Workload,
    i: usize,
    section: &std::path::Path,
    log: &std::path::Path,
    shared: &Shared,
) -> Vec<Outcome> {
    let mut args = (w.args)(i);
    let share = i < w.readers;
    if share && w.sets.is_none() {
        args.push("--shared".into());
    }
    let mut outcomes = Vec::new();
    let mut round = 0;
    while !shared.stop.load(Ordering::SeqCst) && w.rounds.is_none_or(|r| round < r) {
        let run = format!("c{i}r{round}");
        round += 1;
        let max = if fastrand::f64() < w.long_share {
            w.long_pause
        } else {
            w.max_pause
        };
        let pause_ms = fastrand::u64(0..=max.as_millis() as u64);
        let pause = format!("{}.{:03}", pause_ms / 1000, pause_ms % 1000);
        // A contender's first run arrives with all the others at once, in no order
        // anyone could promise; from then on one arrives when its run ended, while
        // the others wait in line.
        if w.arrivals && round > 1 {
            append(log, &format!("ARRIVE {run}\n"));
        }
        let picked = w.sets.as_ref().map(|s| s.pick(share));
        let nested = picked
            .iter()
            .flat_map(|p| &p.nested)
            .map(|names| [args.clone(), names.clone()].concat().join(" "));
        let mut child = redlock_run()
            .args(&args)
            .args(picked.iter().flat_map(|p| &p.args))
            .envs(picked.iter().flat_map(|p| p.env.clone()))
            .envs(nested.map(|n| ("NESTED".to_string(), n)))
            .env("RUN_BIN", RUN)
            .args(["--wait", &w.wait, "--"])
            .arg(section)
            .env("RUN", &run)
            .env("PAUSE", if pause_ms == 0 { "0" } else { &pause })
            .env("SHARE", if share { "1" } else { "0" })
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn redlock-run");
        shared
            .live
            .lock()
            .unwrap()
            .insert(run.clone(), child.id() as i32);
        let mut pipe = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut err = String::new();
            pipe.read_to_string(&mut err).ok();
            err
        });
        let status = child.wait().expect("wait for redlock-run");
        shared.live.lock().unwrap().remove(&run);
        let code = status.code().map_or("sig".to_string(), |c| c.to_string());
        append(log, &format!("EXIT {run} {code}\n"));
        let stderr = reader.join().unwrap_or_default();
        if status.success() {
            shared.ok.fetch_add(1, Ordering::SeqCst);
        }
        outcomes.push(Outcome {
            run,
            status,
            stderr,
        });
    }
    outcomes
}

/// One `write(2)` with O_APPEND: a whole line lands at the end of the log.
fn append(path: &std::path::Path, line: &str) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .expect("append to the log");
}

/// A workload under way.
pub struct Underway {
    limit: usize,
    sets: Option<Arc<Sets>>,
    rounds: Option<usize>,
    allowed: Vec<i32>,
    scratch: Scratch,
    log: PathBuf,
    counter: PathBuf,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<Vec<Outcome>>>,
    started: Instant,
}

impl Underway {
    /// Runs that exited 0 so far.
    pub fn completed(&self) -> usize {
        self.shared.ok.load(Ordering::SeqCst)
    }

    /// Writes `# <text>` into the log, between the sections it falls between.
    pub fn note(&self, text: &str) {
        append(&self.log, &format!("# {text}\n"));
    }

    /// Sends `signal` to the wrapper of the section open last in the log, if its wrapper
    /// still runs; returns whether it did.
    pub fn signal_holder(&self, signal: Signal) -> bool {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let Some(run) = log.lines().rev().find_map(|l| {
            let mut w = l.split(' ');
            (w.next() == Some("BEGIN")).then(|| w.next().unwrap_or("").to_string())
        }) else {
            return false;
        };
        let live = self.shared.live.lock().unwrap();
        let Some(&pid) = live.get(&run) else {
            return false;
        };
        // Recorded first: the contender may see the exit the moment the signal lands.
        self.shared
            .signalled
            .lock()
            .unwrap()
            .insert(run.clone(), signal);
        self.note(&format!("{signal:?} to the wrapper of {run}"));
        kill(Pid::from_raw(pid), signal).is_ok()
    }

    /// Sends `signal` to the wrapper of a run that is waiting (started, no section
    /// open), if one is; returns its pid.
    pub fn signal_waiter(&self, signal: Signal) -> Option<i32> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let live = self.shared.live.lock().unwrap();
        let begun: std::collections::HashSet<&str> = log
            .lines()
            .filter_map(|l| l.strip_prefix("BEGIN ")?.split(' ').next())
            .collect();
        let (run, &pid) = live.iter().find(|(run, _)| !begun.contains(run.as_str()))?;
        self.note(&format!("{signal:?} to the waiting wrapper of {run}"));
        kill(Pid::from_raw(pid), signal).ok()?;
        Some(pid)
    }

    /// Stops the contenders after their current run (or, with rounds, after their last
    /// round), waits for them and judges the log.
    pub fn finish(self) -> Report {
        if self.rounds.is_none() {
            self.shared.stop.store(true, Ordering::SeqCst);
        }
        let outcomes: Vec<Outcome> = self
            .workers
            .into_iter()
            .flat_map(|w| w.join().expect("contender thread"))
            .collect();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let names = match &self.sets {
            Some(sets) => sets.judge(&log, &self.scratch),
            None => Vec::new(),
        };
        let verdict = match &self.sets {
            Some(sets) => sets::merged(&names, |n| sets.is_mutex(n)),
            None => checker::check(&log, self.limit),
        };
        let counter: u64 = std::fs::read_to_string(&self.counter)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0);
        let signalled = self.shared.signalled.lock().unwrap();
        let mut statuses = BTreeMap::new();
        let mut unexpected = Vec::new();
        for o in &outcomes {
            let code = o.status.code();
            let by_signal = std::os::unix::process::ExitStatusExt::signal(&o.status);
            let name = match (code, by_signal) {
                (Some(c), _) => c.to_string(),
                (None, Some(s)) => format!("sig{s}"),
                _ => "?".into(),
            };
            *statuses.entry(name.clone()).or_insert(0usize) += 1;
            let sent = signalled.get(&o.run).map(|s| *s as i32);
            let fine = match (code, by_signal) {
                (Some(0), _) => true,
                (Some(c), _) if self.allowed.contains(&c) && documented(c) => true,
                (Some(c), _) => sent.is_some_and(|s| c == 128 + s),
                (None, Some(s)) => sent == Some(s),
                _ => false,
            };
            if !fine {
                unexpected.push(format!("{} exited {name}: {}", o.run, o.stderr.trim()));
            }
        }
        let lost_updates = match &self.sets {
            Some(_) => names.iter().map(|n| n.lost_updates).sum(),
            None if self.limit == 1 => checker::lost_updates(&verdict, counter),
            None => 0,
        };
        let phantom_updates = match &self.sets {
            Some(_) => names.iter().map(|n| n.phantom_updates).sum(),
            None if self.limit == 1 => checker::phantom_updates(&verdict, counter),
            None => 0,
        };
        let report = Report {
            runs: outcomes.len(),
            verdict,
            counter,
            lost_updates,
            phantom_updates,
            statuses,
            unexpected,
            elapsed: self.started.elapsed(),
            log: LogText(log.clone()),
            names,
        };
        if report.verdict.overlaps > 0 || report.lost_updates > 0 {
            // Kept for a post-mortem: the test panics and the temp dir would go.
            let kept = self.scratch.dir.keep();
            eprintln!("log kept in {}", kept.display());
        }
        report
    }
}

/// Whether `code` is a tool status of the documented table (src/exit.rs).
fn documented(code: i32) -> bool {
    redlock::exit::Code::ALL
        .iter()
        .any(|c| c.value() as i32 == code)
}

/// What a workload did, judged.
#[derive(Debug)]
pub struct Report {
    pub runs: usize,
    pub verdict: Verdict,
    pub counter: u64,
    pub lost_updates: u64,
    pub phantom_updates: u64,
    /// Exit statuses (`79`, `sig9`) and how many runs ended with each.
    pub statuses: BTreeMap<String, usize>,
    /// Runs whose status was neither 0 nor allowed, with their stderr.
    pub unexpected: Vec<String>,
    pub elapsed: Duration,
    /// The whole log (for checks of their own: `--once-per` slots).
    pub log: LogText,
    /// With sets of names: each name's verdict (`verdict` is their sum, see
    /// [`sets::merged`]).
    pub names: Vec<NameVerdict>,
}

/// A log kept whole, shown by its length (a report's Debug stays readable).
pub struct LogText(pub String);

impl std::fmt::Debug for LogText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} lines>", self.0.lines().count())
    }
}

impl Report {
    /// Panics unless the log, the counter and every status say the lock held.
    pub fn assert_safe(&self) {
        let v = &self.verdict;
        assert_eq!(v.overlaps, 0, "overlaps: {self:#?}");
        assert_eq!(self.lost_updates, 0, "lost updates: {self:#?}");
        assert_eq!(self.phantom_updates, 0, "phantom updates: {self:#?}");
        assert_eq!(v.duplicate_tokens, 0, "duplicate tokens: {self:#?}");
        assert_eq!(v.stray_ends, 0, "stray ENDs: {self:#?}");
        assert!(self.unexpected.is_empty(), "unexpected statuses: {self:#?}");
    }
}

/// The result of a fault-free contention run (see [`contend`]).
#[derive(Debug)]
pub struct Contention {
    /// Critical sections that wrote END.
    pub sections: usize,
    /// Sections that overlapped in the shared log.
    pub overlaps: usize,
    /// The counter's final value (must equal `sections`).
    pub counter: usize,
    /// Tokens seen more than once.
    pub duplicate_tokens: usize,
    /// Sections whose fencing number was not larger than the previous section's.
    pub fences_not_increasing: usize,
    /// Exit codes of the wrappers other than 0.
    pub failures: Vec<i32>,
}

/// `procs` processes each run `rounds` times `redlock-run --wait forever <args> -- section`
/// without faults and without pauses.
pub fn contend(args: &[String], procs: usize, rounds: usize) -> Contention {
    let mut w = Workload::new(args.to_vec(), procs);
    w.rounds = Some(rounds);
    w.max_pause = Duration::ZERO;
    let r = w.start().finish();
    for line in &r.unexpected {
        eprintln!("{line}");
    }
    let failures = r
        .statuses
        .iter()
        .filter(|(s, _)| s.as_str() != "0")
        .flat_map(|(s, n)| std::iter::repeat_n(s.parse().unwrap_or(-1), *n))
        .collect();
    Contention {
        sections: r.verdict.sections,
        overlaps: r.verdict.overlaps,
        counter: r.counter as usize,
        duplicate_tokens: r.verdict.duplicate_tokens,
        fences_not_increasing: r.verdict.fences_not_increasing,
        failures,
    }
}

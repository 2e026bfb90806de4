//! `--metrics FILE`: the run's outcome in the Prometheus text format, for
//! node_exporter's textfile collector (a `*.prom` file read at every scrape). Written
//! when the lock is taken (so a hung job shows: `redlock_running 1` and its start) and
//! when the run ends, each time whole: a temporary file in the same directory, then
//! `rename(2)`, so a scrape never reads half a file.
//!
//! The file keeps two stories apart, so that the README's alerts work where the same
//! cron line runs every minute on every host:
//! - the last run **on this host that held the lock** (`redlock_running`, its start,
//!   wait, fence, end, duration and exit status): written only by a run that held it; a
//!   try that did not (busy, skipped, superseded) keeps them as they were, so the next
//!   try beside a hung job never hides it;
//! - the last **try** (`redlock_last_outcome`, `redlock_last_try_timestamp_seconds`):
//!   every run's, a try that did not get the lock reporting `busy` or `skipped`, never a
//!   failure;
//! - and, kept across runs, the last success and the first try this file recorded
//!   (`redlock_first_try_timestamp_seconds`: a job that never succeeded anywhere is
//!   alerted on from it).
//!
//! Runs of one host writing one file read and write it under a `flock(2)` of its
//! directory, so no write is lost between another's read and write.
//!
//! The run's story comes from its lifecycle events (see `events.rs`): `acquired`,
//! `lost`, `skipped`, `exited`, `released`, `preempted`; the end from the exit status.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use crate::events::Event;
use crate::outcome::Outcome;

/// What a run did, gathered from its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    /// The wrapper's start, Unix seconds.
    pub start_s: f64,
    /// When the lock was taken.
    pub acquired_s: Option<f64>,
    pub waited_s: f64,
    pub fence: Option<u64>,
    pub slot: Option<u32>,
    pub lost: bool,
    pub max_hold: bool,
    pub skipped: bool,
    /// Skipped because the slot's attempts are spent.
    pub exhausted: bool,
    /// `--supersede`: superseded, or outdated (`--order-key`), before it ran.
    pub superseded: Option<Outcome>,
    /// Stopped for a newer run.
    pub preempted: bool,
    /// Asked to end: a signal to the wrapper ended the command.
    pub stopped: bool,
    /// The command's own exit status.
    pub command_status: Option<u8>,
    /// `--elect`: whether this host leads now (`None`: not an `--elect` run).
    pub leader: Option<bool>,
    /// `--elect`: the terms this host has led, kept across runs.
    pub terms: u64,
    /// A run of several names: the names it held with the file's name.
    pub with: Vec<String>,
    /// This run told a vanished run: the vanished runs this host has told, this one
    /// included (`None`: it told none; the file's count is kept).
    pub vanished_told: Option<u64>,
    /// The fence of a run of this name this try found dead (it told it vanished, or
    /// was skipped for its slot by it): when the file's last held run is that one (its
    /// fence), the file no longer says it runs.
    pub dead_fence: Option<u64>,
}

impl RunFacts {
    /// The lock is taken, as the `acquired` event says.
    fn acquired(&mut self, fields: &Value) {
        self.acquired_s = Some(now_s());
        self.with = serde_json::from_value(fields["with"].clone()).unwrap_or_default();
        self.fence = fields["fence"].as_u64();
        self.slot = fields["slot"].as_u64().map(|s| s as u32);
        self.waited_s = fields["waited_ms"].as_u64().unwrap_or(0) as f64 / 1e3;
    }

    /// The try was skipped, as the `skipped` event says why.
    fn skipped(&mut self, fields: &Value) {
        self.skipped = true;
        if fields["last_run"]["vanished"] == true {
            self.dead_fence = fields["last_run"]["fence"].as_u64();
        }
        self.exhausted = fields["reason"] == "attempts_exhausted";
        self.superseded = match fields["reason"].as_str() {
            Some("superseded") => Some(Outcome::Superseded),
            Some("outdated") => Some(Outcome::Outdated),
            _ => None,
        };
    }
}

/// The end of a run: its exit status, and whether it ended in an error.
#[derive(Debug, Clone, Copy)]
pub struct Ending {
    pub end_s: f64,
    pub status: u8,
    pub error: bool,
}

impl RunFacts {
    /// How the run ended.
    pub fn outcome(&self, end: &Ending) -> Outcome {
        match (self.acquired_s.is_some(), self.skipped) {
            (true, _) if self.max_hold => Outcome::MaxHold,
            (true, _) if self.preempted => Outcome::Preempted,
            (true, _) if self.lost => Outcome::Lost,
            (true, _) if self.stopped => Outcome::Stopped,
            (true, _) => match self.command_status {
                None => Outcome::Error,
                Some(0) => Outcome::Ran,
                Some(_) => Outcome::Failed,
            },
            (false, true) => match (self.superseded, self.exhausted) {
                (Some(why), _) => why,
                (None, true) => Outcome::Exhausted,
                (None, false) => Outcome::Skipped,
            },
            (false, false) if end.error || (129..=159).contains(&end.status) => Outcome::Error,
            (false, false) => Outcome::Busy,
        }
    }
}

/// The metrics file of one run.
pub struct Metrics {
    path: PathBuf,
    name: String,
    facts: Mutex<RunFacts>,
    /// A run nested in a holder of its lock that shares the enclosing run's file
    /// (through `REDLOCK_METRICS`) writes nothing: the file is the enclosing run's.
    nested: std::sync::atomic::AtomicBool,
}

impl Metrics {
    pub fn new(path: PathBuf, name: String) -> Metrics {
        Metrics {
            path,
            name,
            facts: Mutex::new(RunFacts {
                start_s: now_s(),
                ..RunFacts::default()
            }),
            nested: Default::default(),
        }
    }

    /// Whether this file is the one a nested run's enclosing run writes: the path our
    /// environment's `REDLOCK_METRICS` names, which the enclosing run passed on.
    pub fn is_inherited(&self) -> bool {
        std::env::var_os("REDLOCK_METRICS").is_some_and(|p| p == self.path.as_os_str())
    }

    /// This run runs inside a holder of its lock and shares its file: it leaves the
    /// file alone.
    pub fn nested(&self) {
        self.nested
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_nested(&self) -> bool {
        self.nested.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes in a lifecycle event; the `acquired` one writes the file (the run is on).
    pub fn observe(&self, event: Event, fields: &Value) -> std::io::Result<()> {
        if self.is_nested() {
            return Ok(());
        }
        let mut facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            // A run of several names takes each: the file is its first name's, the
            // first `acquired`; the others are said as the names it holds with.
            Event::Acquired if !fields["with"].is_null() && facts.acquired_s.is_some() => {
                return Ok(());
            }
            Event::Acquired => {
                facts.acquired(fields);
                return self.write(&facts, None);
            }
            Event::Lost => {
                facts.lost = true;
                facts.max_hold = fields["max_hold"].as_bool().unwrap_or(false);
            }
            Event::Skipped => facts.skipped(fields),
            Event::Preempted => facts.preempted = true,
            Event::Vanished => {
                let previous = Previous::read(&self.path, &self.name);
                facts.vanished_told = Some(previous.value(VANISHED.0).unwrap_or(0.0) as u64 + 1);
                facts.dead_fence = fields["run"]["fence"].as_u64();
            }
            // The release found the key no longer ours: the lock was lost (exit 79),
            // also for a run too short for a renewal to find it first.
            Event::Released if fields["result"] == "not_ours" => facts.lost = true,
            Event::Exited => {
                facts.command_status = fields["command_status"].as_u64().map(|c| c as u8);
                facts.stopped = fields["stopped"] == true;
            }
            Event::Elected => {
                let previous = Previous::read(&self.path, &self.name);
                facts.terms = previous.value(TERMS.0).unwrap_or(0.0) as u64 + 1;
                facts.leader = Some(true);
                return self.write(&facts, None);
            }
            // A term's end is a run's end; the wrapper stays, as a standby.
            Event::Deposed => {
                facts.leader = Some(false);
                let end = Ending {
                    end_s: now_s(),
                    status: fields["status"].as_u64().unwrap_or(0) as u8,
                    error: false,
                };
                let written = self.write(&facts, Some(&end));
                *facts = RunFacts {
                    start_s: facts.start_s,
                    leader: Some(false),
                    terms: facts.terms,
                    ..RunFacts::default()
                };
                return written;
            }
            _ => {}
        }
        Ok(())
    }

    /// Writes the run's end: exit `status`, `error` when the run ended in an error.
    pub fn finish(&self, status: u8, error: bool) -> std::io::Result<()> {
        if self.is_nested() {
            return Ok(());
        }
        let facts = self.facts.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // A standby (`--elect`) that stops after a term: that term's `deposed` wrote
        // the file as it stands.
        if facts.leader == Some(false) {
            return Ok(());
        }
        let end = Ending {
            end_s: now_s(),
            status,
            error,
        };
        self.write(&facts, Some(&end))
    }

    /// Reads what the file says, renders this run's state over it and writes it whole,
    /// under a lock of the directory that the runs of this host writing there share.
    fn write(&self, facts: &RunFacts, end: Option<&Ending>) -> std::io::Result<()> {
        let _guard = lock_dir(&self.path);
        let previous = Previous::read(&self.path, &self.name);
        let text = render(&self.name, facts, end, &previous);
        write_atomically(&self.path, &text)
    }

    /// What the group guard settles in this file if the wrapper dies with its command
    /// started: the file (a link's target) and the samples of this name that must not
    /// stay 1 (`obituary.rs`); nothing for a nested run.
    pub fn obituary(&self) -> Option<(PathBuf, Vec<Vec<u8>>)> {
        (!self.is_nested()).then(|| {
            (
                link_target(&self.path),
                crate::obituary::prefixes(&escape(&self.name)),
            )
        })
    }

    /// `--elect`, as a copy starts standing by: a file whose samples of this name still
    /// say running or leading (a leader killed with its guard, as systemd's final
    /// SIGKILL does) is settled, so that this host never reads as leading while it
    /// stands by.
    pub fn settle(&self) -> std::io::Result<()> {
        if self.is_nested() {
            return Ok(());
        }
        let _guard = lock_dir(&self.path);
        let Ok(text) = std::fs::read(link_target(&self.path)) else {
            return Ok(());
        };
        let prefixes = crate::obituary::prefixes(&escape(&self.name));
        let refs: Vec<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        let mut out = vec![0u8; text.len()];
        match crate::obituary::settle(&text, &refs, &mut out) {
            Some((n, true)) => write_atomically(&self.path, &String::from_utf8_lossy(&out[..n])),
            _ => Ok(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn now_s() -> f64 {
    crate::clock::wall_ms() as f64 / 1e3
}

/// The text format being written: gauges under one set of labels.
struct Text {
    out: String,
    labels: String,
}

impl Text {
    /// A gauge with its HELP and TYPE lines and one row per (labels, value).
    fn gauge(&mut self, metric: &str, help: &str, rows: &[(String, String)]) {
        self.out
            .push_str(&format!("# HELP {metric} {help}\n# TYPE {metric} gauge\n"));
        for (labels, value) in rows {
            self.out
                .push_str(&format!("{metric}{{{labels}}} {value}\n"));
        }
    }

    /// A counter with one row, under `labels`.
    fn counter(&mut self, metric: &str, help: &str, labels: &str, value: u64) {
        self.out.push_str(&format!(
            "# HELP {metric} {help}\n# TYPE {metric} counter\n{metric}{{{labels}}} {value}\n"
        ));
    }

    /// A gauge with one row, under the run's labels.
    fn one(&mut self, metric: &str, help: &str, value: String) {
        let rows = [(self.labels.clone(), value)];
        self.gauge(metric, help, &rows);
    }
}

/// What the file said before this write, for this name: the series a run keeps when it
/// has nothing newer.
#[derive(Debug, Default)]
pub struct Previous {
    text: String,
    name: String,
}

impl Previous {
    fn read(path: &Path, name: &str) -> Previous {
        Previous {
            text: std::fs::read_to_string(link_target(path)).unwrap_or_default(),
            name: escape(name),
        }
    }

    /// The sample lines of `metric` for this name, as written.
    fn samples(&self, metric: &str) -> Vec<&str> {
        let head = format!("{metric}{{name=\"{}\"", self.name);
        self.text
            .lines()
            .filter(|l| {
                l.strip_prefix(&head)
                    .is_some_and(|rest| rest.starts_with('}') || rest.starts_with(','))
            })
            .collect()
    }

    /// The value of `metric` for this name (its first sample).
    fn value(&self, metric: &str) -> Option<f64> {
        self.samples(metric)
            .first()
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    /// The HELP and TYPE of `metric` and its samples as they were (nothing when it had
    /// none).
    fn keep(&self, text: &mut Text, metric: &str, help: &str) {
        let samples = self.samples(metric);
        if samples.is_empty() {
            return;
        }
        text.out
            .push_str(&format!("# HELP {metric} {help}\n# TYPE {metric} gauge\n"));
        for sample in samples {
            text.out.push_str(sample);
            text.out.push('\n');
        }
    }
}

/// The series of the last run on this host that held the lock, with their help.
/// A run of several names: one row per name it held with this one.
const HELD_WITH: (&str, &str) = (
    "redlock_last_run_held_with",
    "1 for each other name the last run of this host that held the lock held with it (several --key names).",
);

const HELD: [(&str, &str); 7] = [
    (
        "redlock_running",
        "1 while a run of this host holds the lock and its command runs, 0 after.",
    ),
    (
        "redlock_last_run_start_timestamp_seconds",
        "When the last run of this host that held the lock took it (Unix seconds).",
    ),
    (
        "redlock_last_run_waited_seconds",
        "How long that run waited for the lock.",
    ),
    (
        "redlock_fence",
        "The fencing number of that run's acquisition.",
    ),
    (
        "redlock_last_run_end_timestamp_seconds",
        "When that run ended (Unix seconds).",
    ),
    (
        "redlock_last_run_duration_seconds",
        "How long that run held the lock.",
    ),
    (
        "redlock_last_run_exit_status",
        "That run's exit status (the command's, or redlock-run's own code).",
    ),
];

/// The series of the last try (every run's), with their help.
const TRIED: [(&str, &str); 2] = [
    (
        "redlock_last_outcome",
        "How the last try ended (a run that did not get the lock included): 1 for its outcome, 0 for the others.",
    ),
    (
        "redlock_last_try_timestamp_seconds",
        "When the last try ended (Unix seconds).",
    ),
];

const LEADER: (&str, &str) = (
    "redlock_leader",
    "--elect: 1 while this host leads (holds the lock and runs the command), 0 while it stands by.",
);
const TERMS: (&str, &str) = (
    "redlock_leader_terms",
    "--elect: how many terms this host has led (kept across runs).",
);

const SUCCESS: (&str, &str) = (
    "redlock_last_success_timestamp_seconds",
    "When a run last ended with its command exiting 0 (kept across runs that did not).",
);
const VANISHED: (&str, &str) = (
    "redlock_vanished_runs_total",
    "Runs of this name that vanished (started, never ended, their lease gone) that a try of this host told, once in the fleet (kept across runs).",
);
const FIRST_TRY: (&str, &str) = (
    "redlock_first_try_timestamp_seconds",
    "When this file recorded its first try (kept): a job tried since then that never succeeded is missed.",
);

/// The file's text: at the start (`end` None) or the end of a run, over what the file
/// said before (`previous`).
pub fn render(name: &str, facts: &RunFacts, end: Option<&Ending>, previous: &Previous) -> String {
    let mut labels = format!("name=\"{}\"", escape(name));
    if let Some(slot) = facts.slot {
        labels.push_str(&format!(",slot=\"{slot}\""));
    }
    let mut text = Text {
        out: String::new(),
        labels,
    };
    match facts.acquired_s {
        Some(acquired_s) => render_held(&mut text, facts, acquired_s, end),
        None => keep_held(&mut text, facts, previous),
    }
    let success = match end {
        Some(end) => render_try(&mut text, facts, end),
        None => {
            TRIED
                .iter()
                .for_each(|(metric, help)| previous.keep(&mut text, metric, help));
            None
        }
    };
    if let Some(success) = success.or_else(|| previous.value(SUCCESS.0)) {
        text.one(SUCCESS.0, SUCCESS.1, seconds(success));
    }
    match facts.leader {
        Some(leader) => {
            text.one(LEADER.0, LEADER.1, u8::from(leader).to_string());
            text.one(TERMS.0, TERMS.1, facts.terms.to_string());
        }
        // Not (yet) elected: an `--elect` wrapper's `acquired` write comes before its
        // `elected` one, which counts the terms on from what the file kept.
        None => [LEADER, TERMS]
            .iter()
            .for_each(|(metric, help)| previous.keep(&mut text, metric, help)),
    }
    let vanished = facts
        .vanished_told
        .or_else(|| previous.value(VANISHED.0).map(|v| v as u64));
    // Under the name only: a count of the name's, whichever slot a run held.
    let name_only = format!("name=\"{}\"", escape(name));
    text.counter(VANISHED.0, VANISHED.1, &name_only, vanished.unwrap_or(0));
    let first = previous.value(FIRST_TRY.0).unwrap_or(facts.start_s);
    text.one(FIRST_TRY.0, FIRST_TRY.1, seconds(first));
    text.out
}

/// The series of the last run on this host that held the lock, as the file had them,
/// for a try that did not hold it; but when this try found that run dead (a host that
/// died with its wrapper and guard: nothing settled the file), `redlock_running` says 0,
/// so that a run already told vanished never reads as running on (newcomer-7 #10).
fn keep_held(text: &mut Text, facts: &RunFacts, previous: &Previous) {
    let fence = HELD[3].0;
    let dead = facts
        .dead_fence
        .is_some_and(|f| previous.value(fence) == Some(f as f64));
    for (metric, help) in HELD.iter().chain([&HELD_WITH]) {
        let from = text.out.len();
        previous.keep(text, metric, help);
        if dead && *metric == HELD[0].0 {
            let settled = text.out[from..].replace(" 1\n", " 0\n");
            text.out.truncate(from);
            text.out.push_str(&settled);
        }
    }
}

/// The series of a run that held the lock: at its start, or with its end.
fn render_held(text: &mut Text, facts: &RunFacts, acquired_s: f64, end: Option<&Ending>) {
    let [running, start, waited, fence, ended, duration, status] = HELD;
    text.one(running.0, running.1, u8::from(end.is_none()).to_string());
    text.one(start.0, start.1, seconds(acquired_s));
    text.one(waited.0, waited.1, seconds(facts.waited_s));
    if let Some(f) = facts.fence {
        text.one(fence.0, fence.1, f.to_string());
    }
    if !facts.with.is_empty() {
        let rows: Vec<(String, String)> = facts
            .with
            .iter()
            .map(|n| {
                (
                    format!("{},with=\"{}\"", text.labels, escape(n)),
                    "1".into(),
                )
            })
            .collect();
        text.gauge(HELD_WITH.0, HELD_WITH.1, &rows);
    }
    if let Some(end) = end {
        text.one(ended.0, ended.1, seconds(end.end_s));
        let held = (end.end_s - acquired_s).max(0.0);
        text.one(duration.0, duration.1, seconds(held));
        text.one(status.0, status.1, end.status.to_string());
    }
}

/// The series of the try that just ended; when it was a success (its command exited 0,
/// stopped on request or not), its time.
fn render_try(text: &mut Text, facts: &RunFacts, end: &Ending) -> Option<f64> {
    let outcome = facts.outcome(end);
    let [(outcomes, help), (tried, tried_help)] = TRIED;
    let rows: Vec<(String, String)> = crate::outcome::metric_labels()
        .into_iter()
        .map(|label| {
            (
                format!("{},outcome=\"{label}\"", text.labels),
                u8::from(outcome.metric() == Some(label)).to_string(),
            )
        })
        .collect();
    text.gauge(outcomes, help, &rows);
    text.one(tried, tried_help, seconds(end.end_s));
    // A stop whose command exited 0 closes its `--once-per` slot as a run does (the
    // acquire script reads the status), so it is the slot's success here too.
    let success = matches!(outcome, Outcome::Ran | Outcome::Stopped) && end.status == 0;
    success.then_some(end.end_s)
}

/// Holds an exclusive `flock(2)` of the directory of `path` while it lives (nothing
/// when the directory cannot be opened: the write goes on unlocked, as before).
fn lock_dir(path: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let target = link_target(path);
    let dir = dir_of(&target);
    let file = std::fs::File::open(dir).ok()?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).ok()
}

/// Seconds with millisecond precision.
fn seconds(s: f64) -> String {
    format!("{s:.3}")
}

/// A label value as the text format wants it: `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes `text` to a temporary file beside the file `path` names (not ending in
/// `.prom`, which the collector would read), then renames it over that file. A symbolic
/// link is followed to its target, which is replaced, so the link stays a link (a
/// collector directory often links to files kept elsewhere). The temporary file has a
/// random name and is created with `O_EXCL | O_NOFOLLOW`: in a directory other users can
/// write, a file or link planted there is never written through (the run tries another
/// name), and never removed.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let target = link_target(path);
    let dir = dir_of(&target);
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tries = 0;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(".{base}.{:016x}.tmp", fastrand::u64(..)));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    };
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The directory `target` is in (`.` for a bare file name).
fn dir_of(target: &Path) -> PathBuf {
    target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The file `path` names: itself, or the target of the symbolic link(s) it is.
fn link_target(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let Ok(next) = std::fs::read_link(&current) else {
            break;
        };
        current = match current.parent() {
            Some(parent) if next.is_relative() => parent.join(next),
            _ => next,
        };
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> RunFacts {
        RunFacts {
            start_s: 100.0,
            acquired_s: Some(101.0),
            waited_s: 1.0,
            fence: Some(7),
            command_status: Some(0),
            ..RunFacts::default()
        }
    }

    fn end(status: u8) -> Ending {
        Ending {
            end_s: 110.0,
            status,
            error: false,
        }
    }

    #[test]
    fn outcomes_from_what_the_run_did() {
        let ran = facts();
        assert_eq!(ran.outcome(&end(0)), Outcome::Ran);
        assert_eq!(ran.outcome(&end(3)), Outcome::Ran);
        let lost = RunFacts {
            lost: true,
            ..facts()
        };
        assert_eq!(lost.outcome(&end(79)), Outcome::Lost);
        let timeout = RunFacts {
            lost: true,
            max_hold: true,
            ..facts()
        };
        assert_eq!(timeout.outcome(&end(124)), Outcome::MaxHold);
        let waited = RunFacts {
            acquired_s: None,
            command_status: None,
            ..facts()
        };
        assert_eq!(waited.outcome(&end(75)), Outcome::Busy);
        assert_eq!(waited.outcome(&end(0)), Outcome::Busy, "--busy-exit-code 0");
        let error = Ending {
            error: true,
            ..end(69)
        };
        assert_eq!(waited.outcome(&error), Outcome::Error);
        assert_eq!(waited.outcome(&end(130)), Outcome::Error, "a signal");
        let skipped = RunFacts {
            skipped: true,
            ..waited.clone()
        };
        assert_eq!(skipped.outcome(&end(75)), Outcome::Skipped);
    }

    #[test]
    fn a_run_that_did_not_succeed_keeps_the_last_success() {
        let busy = RunFacts {
            acquired_s: None,
            command_status: None,
            fence: None,
            ..facts()
        };
        let before = |success: f64| Previous {
            text: format!("redlock_last_success_timestamp_seconds{{name=\"job\"}} {success}\n"),
            name: "job".into(),
        };
        let text = render("job", &busy, Some(&end(75)), &before(50.0));
        assert!(text.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 50.000\n"));
        assert!(text.contains("redlock_last_outcome{name=\"job\",outcome=\"busy\"} 1\n"));
        assert!(text.contains("redlock_last_outcome{name=\"job\",outcome=\"ran\"} 0\n"));
        let ok = render("job", &facts(), Some(&end(0)), &before(50.0));
        assert!(ok.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 110.000\n"));
        let failed = render("job", &facts(), Some(&end(1)), &before(50.0));
        assert!(failed.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 50.000\n"));
    }

    /// (issue 58, item 4) A stopped run whose command exited 0 closes its `--once-per`
    /// slot (the acquire script reads exit 0 as the slot's success), so it is the
    /// slot's success here too: it was no success, and `RedlockJobMissed` fired for a
    /// nightly job that `systemctl stop` ended cleanly. A stop that exits non-zero
    /// leaves the slot open and is no success.
    #[test]
    fn a_stop_whose_command_exits_0_is_a_success() {
        let before = Previous {
            text: "redlock_last_success_timestamp_seconds{name=\"job\"} 50\n".into(),
            name: "job".into(),
        };
        let stopped = |status: u8| RunFacts {
            stopped: true,
            command_status: Some(status),
            ..facts()
        };
        let clean = render("job", &stopped(0), Some(&end(0)), &before);
        assert!(clean.contains("redlock_last_outcome{name=\"job\",outcome=\"stopped\"} 1\n"));
        assert!(clean.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 110.000\n"));
        let killed = render("job", &stopped(143), Some(&end(143)), &before);
        assert!(killed.contains("redlock_last_outcome{name=\"job\",outcome=\"stopped\"} 1\n"));
        assert!(killed.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 50.000\n"));
    }

    #[test]
    fn the_vanished_runs_told_are_counted_across_runs_once_each() {
        let before = |n: u64| Previous {
            text: format!("redlock_vanished_runs_total{{name=\"job\"}} {n}\n"),
            name: "job".into(),
        };
        let line = |n: u64| format!("redlock_vanished_runs_total{{name=\"job\"}} {n}\n");
        let first = render("job", &facts(), None, &Previous::default());
        assert!(
            first.contains(&line(0)),
            "written from the first try: {first}"
        );
        assert!(first.contains("# TYPE redlock_vanished_runs_total counter\n"));
        // The run that told one: the count it found plus one, at its start and its end
        // alike (the end reads the file the start wrote: never counted twice).
        let told = RunFacts {
            vanished_told: Some(3),
            slot: Some(2),
            ..facts()
        };
        assert!(render("job", &told, None, &before(2)).contains(&line(3)));
        assert!(render("job", &told, Some(&end(0)), &before(3)).contains(&line(3)));
        // A run that told none keeps the count.
        assert!(render("job", &facts(), Some(&end(75)), &before(3)).contains(&line(3)));
    }

    #[test]
    fn a_try_that_did_not_hold_keeps_the_held_runs_series() {
        let held = render("job", &facts(), None, &Previous::default());
        assert!(held.contains("redlock_running{name=\"job\"} 1\n"), "{held}");
        assert!(held.contains("redlock_last_run_start_timestamp_seconds{name=\"job\"} 101.000\n"));
        let busy = RunFacts {
            start_s: 500.0,
            acquired_s: None,
            command_status: None,
            fence: None,
            ..facts()
        };
        let previous = Previous {
            text: held,
            name: "job".into(),
        };
        let text = render("job", &busy, Some(&end(75)), &previous);
        assert!(text.contains("redlock_running{name=\"job\"} 1\n"), "{text}");
        assert!(text.contains("redlock_last_run_start_timestamp_seconds{name=\"job\"} 101.000\n"));
        assert!(text.contains("redlock_last_outcome{name=\"job\",outcome=\"busy\"} 1\n"));
        assert!(text.contains("redlock_first_try_timestamp_seconds{name=\"job\"} 100.000\n"));
        // Another name's series in the same text are not this name's.
        let other = Previous {
            text: "redlock_running{name=\"jobs\"} 1\n".into(),
            name: "job".into(),
        };
        assert!(!render("job", &busy, Some(&end(75)), &other).contains("redlock_running"));
    }

    #[test]
    fn a_try_that_found_the_held_run_dead_no_longer_says_it_runs() {
        let held = Previous {
            text: render("job", &facts(), None, &Previous::default()),
            name: "job".into(),
        };
        let skipped = |dead_fence| RunFacts {
            acquired_s: None,
            fence: None,
            skipped: true,
            dead_fence,
            ..facts()
        };
        let fence = facts().fence;
        let settled = render("job", &skipped(fence), Some(&end(75)), &held);
        assert!(
            settled.contains("redlock_running{name=\"job\"} 0\n"),
            "{settled}"
        );
        assert!(
            settled.contains("redlock_last_run_start_timestamp_seconds{name=\"job\"} 101.000\n")
        );
        // Another run's death (another fence) leaves this file's run as it was.
        let other = render("job", &skipped(fence.map(|f| f + 1)), Some(&end(75)), &held);
        assert!(
            other.contains("redlock_running{name=\"job\"} 1\n"),
            "{other}"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render("a\"b\\c\nd", &facts(), None, &Previous::default());
        assert!(text.contains("{name=\"a\\\"b\\\\c\\nd\"}"), "{text}");
    }
}

//! `--metrics FILE`: the run's outcome in the Prometheus text format, for
//! node_exporter's textfile collector (a `*.prom` file read at every scrape). Written
//! when the lock is taken (so a hung job shows: `redlock_running 1` and its start) and
//! when the run ends, each time whole: a temporary file in the same directory, then
//! `rename(2)`, so a scrape never reads half a file.
//!
//! The run's story comes from its lifecycle events (see `events.rs`): `acquired`,
//! `lost`, `skipped`, `exited`; the end from the exit status. A run that did not get
//! the lock reports `busy` or `skipped`, never a failure: with N hosts on one cron
//! line only the winner ran the job, and the alert is on the newest success over
//! hosts (`redlock_last_success_timestamp_seconds`, kept from the previous file by a
//! run that was not a success).

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
    /// The command's own exit status.
    pub command_status: Option<u8>,
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
    /// A run nested in a holder of its lock writes nothing: the file is the enclosing
    /// run's (which it may share through `REDLOCK_METRICS`).
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

    /// This run runs inside a holder of its lock: it leaves the file alone.
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
            Event::Acquired => {
                facts.acquired_s = Some(now_s());
                facts.fence = fields["fence"].as_u64();
                facts.slot = fields["slot"].as_u64().map(|s| s as u32);
                facts.waited_s = fields["waited_ms"].as_u64().unwrap_or(0) as f64 / 1e3;
                let text = render(&self.name, &facts, None, self.last_success());
                return write_atomically(&self.path, &text);
            }
            Event::Lost => {
                facts.lost = true;
                facts.max_hold = fields["max_hold"].as_bool().unwrap_or(false);
            }
            Event::Skipped => {
                facts.skipped = true;
                facts.exhausted = fields["reason"] == "attempts_exhausted";
                facts.superseded = match fields["reason"].as_str() {
                    Some("superseded") => Some(Outcome::Superseded),
                    Some("outdated") => Some(Outcome::Outdated),
                    _ => None,
                };
            }
            Event::Preempted => facts.preempted = true,
            // The release found the key no longer ours: the lock was lost (exit 79),
            // also for a run too short for a renewal to find it first.
            Event::Released if fields["result"] == "not_ours" => facts.lost = true,
            Event::Exited => {
                facts.command_status = fields["command_status"].as_u64().map(|c| c as u8)
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
        let end = Ending {
            end_s: now_s(),
            status,
            error,
        };
        let text = render(&self.name, &facts, Some(&end), self.last_success());
        write_atomically(&self.path, &text)
    }

    /// The newest success the file records for this name, if any.
    fn last_success(&self) -> Option<f64> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let series = format!(
            "redlock_last_success_timestamp_seconds{{name=\"{}\"",
            escape(&self.name)
        );
        text.lines()
            .find(|l| l.starts_with(&series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
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

    /// A gauge with one row, under the run's labels.
    fn one(&mut self, metric: &str, help: &str, value: String) {
        let rows = [(self.labels.clone(), value)];
        self.gauge(metric, help, &rows);
    }
}

/// The file's text: at the start (`end` None) or the end of a run. `previous_success`:
/// what the file said before; a success now replaces it.
pub fn render(
    name: &str,
    facts: &RunFacts,
    end: Option<&Ending>,
    previous_success: Option<f64>,
) -> String {
    let mut labels = format!("name=\"{}\"", escape(name));
    if let Some(slot) = facts.slot {
        labels.push_str(&format!(",slot=\"{slot}\""));
    }
    let mut text = Text {
        out: String::new(),
        labels,
    };
    text.one(
        "redlock_running",
        "1 while the run holds the lock and its command runs, 0 after.",
        if end.is_some() { "0" } else { "1" }.into(),
    );
    text.one(
        "redlock_last_run_start_timestamp_seconds",
        "When the last run started (Unix seconds).",
        seconds(facts.start_s),
    );
    text.one(
        "redlock_last_run_waited_seconds",
        "How long the last run waited for the lock.",
        seconds(facts.waited_s),
    );
    if let Some(fence) = facts.fence {
        text.one(
            "redlock_fence",
            "The fencing number of the last run's acquisition.",
            fence.to_string(),
        );
    }
    let mut success = previous_success;
    if let Some(end) = end {
        success = render_end(&mut text, facts, end).or(success);
    }
    if let Some(success) = success {
        text.one(
            "redlock_last_success_timestamp_seconds",
            "When a run last ended with its command exiting 0 (kept across runs that did not).",
            seconds(success),
        );
    }
    text.out
}

/// The gauges of a run's end; when it was a success, its time.
fn render_end(text: &mut Text, facts: &RunFacts, end: &Ending) -> Option<f64> {
    let outcome = facts.outcome(end);
    let held = facts.acquired_s.map_or(0.0, |a| (end.end_s - a).max(0.0));
    text.one(
        "redlock_last_run_end_timestamp_seconds",
        "When the last run ended (Unix seconds).",
        seconds(end.end_s),
    );
    text.one(
        "redlock_last_run_duration_seconds",
        "How long the last run held the lock (0 when it did not get it).",
        seconds(held),
    );
    text.one(
        "redlock_last_run_exit_status",
        "The last run's exit status (the command's, or redlock-run's own code).",
        end.status.to_string(),
    );
    let rows: Vec<(String, String)> = crate::outcome::metric_labels()
        .into_iter()
        .map(|label| {
            (
                format!("{},outcome=\"{label}\"", text.labels),
                u8::from(outcome.metric() == Some(label)).to_string(),
            )
        })
        .collect();
    text.gauge(
        "redlock_last_outcome",
        "How the last run ended: 1 for its outcome, 0 for the others.",
        &rows,
    );
    (outcome == Outcome::Ran && end.status == 0).then_some(end.end_s)
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
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
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
        let text = render("job", &busy, Some(&end(75)), Some(50.0));
        assert!(text.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 50.000\n"));
        assert!(text.contains("redlock_last_outcome{name=\"job\",outcome=\"busy\"} 1\n"));
        assert!(text.contains("redlock_last_outcome{name=\"job\",outcome=\"ran\"} 0\n"));
        let ok = render("job", &facts(), Some(&end(0)), Some(50.0));
        assert!(ok.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 110.000\n"));
        let failed = render("job", &facts(), Some(&end(1)), Some(50.0));
        assert!(failed.contains("redlock_last_success_timestamp_seconds{name=\"job\"} 50.000\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render("a\"b\\c\nd", &facts(), None, None);
        assert!(text.contains("{name=\"a\\\"b\\\\c\\nd\"}"), "{text}");
    }
}

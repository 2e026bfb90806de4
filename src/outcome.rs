//! THE outcome table: one row per way a run can end, and how each reader says it — the
//! exit status, the lifecycle event (`--events`), the metric label
//! (`redlock_last_outcome{outcome=…}`), the words of `history` and `status`, and the
//! timeline's mark. A new outcome is one row here; the readers follow it.

use std::fmt::Write as _;

use crate::events::Event;
use crate::exit::Code;

/// How a run ended (or, for a record without its end, that it is running).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It held the lock and its command exited 0.
    Ran,
    /// It held the lock and its command exited non-zero (or was killed).
    Failed,
    /// The lock was busy until `--wait` ran out.
    Busy,
    /// `--once-per`: the slot had already run, or its run is in progress.
    Skipped,
    /// `--once-per`: `--max-attempts` runs started in the slot and none succeeded.
    Exhausted,
    /// The lock was lost while the command ran.
    Lost,
    /// Given up at `--max-hold`.
    MaxHold,
    /// `--supersede`: a newer run superseded it while it waited; it did not run.
    Superseded,
    /// `--order-key`: older than a run that already started; it did not run.
    Outdated,
    /// Asked to stop for a newer run (`--supersede running`, `redlock preempt`).
    Preempted,
    /// Asked to end: a signal to the wrapper (INT, TERM, HUP, QUIT: `systemctl stop`,
    /// a CI cancel) reached the command, which ended, or the command died of the
    /// terminal's Ctrl-C or `Ctrl-\`. A success when its command exited 0 (as for
    /// `Ran`: the status closes a `--once-per` slot, and the metrics follow it).
    Stopped,
    /// The run failed before its command could run (Redis unreachable, a usage error,
    /// a signal while waiting).
    Error,
    /// A run in progress: granted or started, holding its lease now.
    Running,
    /// Started, never ended, and its lease gone: its end was never recorded (its host
    /// died, its release never reached Redis); it may have done its work.
    Vanished,
}

/// The exit status of an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The command's own status.
    Command,
    /// One of the tool's codes.
    Code(Code),
    /// The status of the error that ended the run (see the exit-status table).
    OfError,
    /// The busy status for a closed `--once-per` slot, 0 for a done `--once-id`.
    Skip,
    /// Not ended yet.
    None,
}

/// A timeline mark: how bad it is (the worst mark of a column shows), its colour on a
/// terminal, its letter in a pipe and its words in the legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub rank: u8,
    pub color: &'static str,
    pub letter: &'static str,
    pub legend: &'static str,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub outcome: Outcome,
    /// What it means, for the table of docs/reference/exit-status.md.
    pub name: &'static str,
    pub status: Status,
    /// The lifecycle event that tells it (`--events`), if any.
    pub event: Option<Event>,
    /// `redlock_last_outcome{outcome=…}`; `None`: not an end (`redlock_running 1`).
    pub metric: Option<&'static str>,
    /// How `history` says it, `{status}` standing for the exit status; `None`: the
    /// history holds no record of it.
    pub words: Option<&'static str>,
    /// The timeline's mark (runs in the history only).
    pub mark: Option<Mark>,
}

/// Every outcome, in the order the metric labels are written.
pub const ROWS: &[Row] = &[
    Row {
        outcome: Outcome::Ran,
        name: "ran: the command exited 0",
        status: Status::Command,
        event: Some(Event::Exited),
        metric: Some("ran"),
        words: Some("exit {status}"),
        mark: Some(Mark {
            rank: 2,
            color: "\x1b[32m█\x1b[0m",
            letter: "#",
            legend: "exit 0",
        }),
    },
    Row {
        outcome: Outcome::Failed,
        name: "failed: the command exited non-zero",
        status: Status::Command,
        event: Some(Event::Exited),
        metric: Some("ran"),
        words: Some("exit {status}"),
        mark: Some(Mark {
            rank: 5,
            color: "\x1b[31m█\x1b[0m",
            letter: "x",
            legend: "exit non-zero",
        }),
    },
    Row {
        outcome: Outcome::Busy,
        name: "busy: the lock was held for all of `--wait`",
        status: Status::Code(Code::Busy),
        event: None,
        metric: Some("busy"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::Skipped,
        name: "skipped: the `--once-per` slot had run, or its run is in progress; the `--once-id` is done",
        status: Status::Skip,
        event: Some(Event::Skipped),
        metric: Some("skipped"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::Exhausted,
        name: "attempts exhausted: `--max-attempts` runs started in the slot or for the ID and ended or vanished, none succeeded, none in progress",
        status: Status::Code(Code::Busy),
        event: Some(Event::Skipped),
        metric: Some("attempts_exhausted"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::Lost,
        name: "lost: the lock was lost while the command ran",
        status: Status::Code(Code::Lost),
        event: Some(Event::Lost),
        metric: Some("lost"),
        words: Some("lost the lock, exit {status}"),
        mark: Some(Mark {
            rank: 7,
            color: "\x1b[35m█\x1b[0m",
            letter: "L",
            legend: "lost the lock",
        }),
    },
    Row {
        outcome: Outcome::Error,
        name: "error: the run failed before its command ran",
        status: Status::OfError,
        event: None,
        metric: Some("error"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::MaxHold,
        name: "max-hold: given up at `--max-hold`",
        status: Status::Code(Code::MaxHold),
        event: Some(Event::Lost),
        metric: Some("timeout"),
        words: Some("stopped at --max-hold, exit {status}"),
        mark: Some(Mark {
            rank: 6,
            color: "\x1b[33m█\x1b[0m",
            letter: "M",
            legend: "stopped at --max-hold",
        }),
    },
    Row {
        outcome: Outcome::Superseded,
        name: "superseded: a newer run (`--supersede`) came while it waited; it did not run",
        status: Status::Code(Code::Superseded),
        event: Some(Event::Skipped),
        metric: Some("superseded"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::Outdated,
        name: "outdated: its `--order-key` is lower than one already started; it did not run",
        status: Status::Code(Code::Superseded),
        event: Some(Event::Skipped),
        metric: Some("outdated"),
        words: None,
        mark: None,
    },
    Row {
        outcome: Outcome::Preempted,
        name: "preempted: asked to stop for a newer run (`--supersede running`, `redlock preempt`), stopped, released",
        status: Status::Code(Code::Preempted),
        event: Some(Event::Preempted),
        metric: Some("preempted"),
        words: Some("preempted by a newer run (the command exited {command}), exit {status}"),
        mark: Some(Mark {
            rank: 4,
            color: "\x1b[34m█\x1b[0m",
            letter: "P",
            legend: "preempted by a newer run",
        }),
    },
    Row {
        outcome: Outcome::Stopped,
        name: "stopped: the wrapper was asked to end (a signal: INT, TERM, HUP, QUIT), passed it on, and the command ended; or the command died of the terminal's Ctrl-C or `Ctrl-\\`. Its command exiting 0 is a success: it closes the `--once-per` slot or `--once-id` and is the metrics' last success; non-zero is none and leaves them open",
        status: Status::Command,
        event: Some(Event::Exited),
        metric: Some("stopped"),
        words: Some("stopped on request (a signal to the wrapper), exit {status}"),
        mark: Some(Mark {
            rank: 3,
            color: "\x1b[37m█\x1b[0m",
            letter: "S",
            legend: "stopped on request",
        }),
    },
    Row {
        outcome: Outcome::Running,
        name: "running: in progress, holding its lease",
        status: Status::None,
        event: Some(Event::Acquired),
        metric: None,
        words: Some("running"),
        mark: Some(Mark {
            rank: 1,
            color: "\x1b[36m▒\x1b[0m",
            letter: ":",
            legend: "running",
        }),
    },
    Row {
        outcome: Outcome::Vanished,
        name: "vanished: started, never ended, its lease gone (its host died or its release was lost; it may have done its work)",
        status: Status::None,
        event: Some(Event::Vanished),
        metric: None,
        words: Some("vanished: started, its end never recorded, its lease gone"),
        mark: Some(Mark {
            rank: 8,
            color: "\x1b[90m▓\x1b[0m",
            letter: "?",
            legend: "vanished (end never recorded)",
        }),
    },
];

/// The order of the timeline's legend.
pub const LEGEND: [Outcome; 8] = [
    Outcome::Ran,
    Outcome::Failed,
    Outcome::Lost,
    Outcome::MaxHold,
    Outcome::Preempted,
    Outcome::Stopped,
    Outcome::Running,
    Outcome::Vanished,
];

impl Outcome {
    /// This outcome's row.
    pub fn row(self) -> &'static Row {
        ROWS.iter()
            .find(|r| r.outcome == self)
            .expect("every outcome has a row")
    }

    /// The outcome of a record in the history, as the judge (`crate::lifecycle`) found
    /// its life: in progress, vanished, or ended: lost (at `--max-hold` or not),
    /// stopped on request (`stopped`: a signal to the wrapper ended it), or its
    /// command's status.
    pub fn of_record(
        life: crate::lifecycle::Life,
        lost: bool,
        stopped: bool,
        status: i64,
    ) -> Outcome {
        use crate::lifecycle::Life;
        if life.in_progress() {
            Outcome::Running
        } else if matches!(life, Life::Vanished | Life::Abandoned) {
            Outcome::Vanished
        } else if lost && status == i64::from(Code::MaxHold.value()) {
            Outcome::MaxHold
        } else if lost && status == i64::from(Code::Preempted.value()) {
            Outcome::Preempted
        } else if lost {
            Outcome::Lost
        } else if stopped {
            Outcome::Stopped
        } else if status == 0 {
            Outcome::Ran
        } else {
            Outcome::Failed
        }
    }

    /// How `history` says it, with `status` and the command's own status in place.
    pub fn words(self, status: i64, command: Option<i64>) -> String {
        self.row()
            .words
            .unwrap_or("")
            .replace("{status}", &status.to_string())
            .replace(
                "{command}",
                &command.map_or("?".to_string(), |c| c.to_string()),
            )
    }

    /// The metric label (`None`: not an end).
    pub fn metric(self) -> Option<&'static str> {
        self.row().metric
    }
}

/// The metric labels in the order they are written, each once.
pub fn metric_labels() -> Vec<&'static str> {
    let mut labels: Vec<&'static str> = Vec::new();
    for label in ROWS.iter().filter_map(|r| r.metric) {
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    labels
}

/// The table as docs/reference/exit-status.md carries it.
pub fn markdown() -> String {
    let mut out = String::from(
        "| outcome | exit status | event | `outcome` label | history says | timeline | top, status |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let code = |c: Option<&str>| c.map_or("–".to_string(), |c| format!("`{c}`"));
    for row in ROWS {
        let status = match row.status {
            Status::Command => "the command's".to_string(),
            Status::Code(Code::Busy) => format!("{} (`--busy-exit-code`)", Code::Busy.value()),
            Status::Code(c) => c.value().to_string(),
            Status::OfError => "the error's".to_string(),
            Status::Skip => format!(
                "{} (`--busy-exit-code`); 0 for a done `--once-id`",
                Code::Busy.value()
            ),
            Status::None => "–".to_string(),
        };
        let words = row
            .words
            .map(|w| w.replace("{status}", "N").replace("{command}", "C"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            status,
            code(row.event.map(Event::name)),
            code(row.metric),
            words.as_deref().unwrap_or("–"),
            row.mark
                .map_or("–".to_string(), |m| format!("`{}`", m.letter)),
            seen_by_top_and_status(row.outcome, words.as_deref()),
        );
    }
    out
}

/// What `top` and `status` show of an outcome: the holder while it runs, then the last
/// run in the history's words (only what the history records).
fn seen_by_top_and_status(outcome: Outcome, words: Option<&str>) -> String {
    match (outcome, words) {
        (Outcome::Running, _) => "held: the holder, its host, pid and since".to_string(),
        // `top` says it in one word, dated by its start, so that when shows at 80 columns.
        (Outcome::Vanished, Some(words)) => {
            format!("last run: {words} (`top`: vanished, dated by its start)")
        }
        (_, Some(words)) => format!("last run: {words}"),
        (_, None) => "–".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::Life;

    #[test]
    fn every_outcome_has_one_row() {
        for outcome in [
            Outcome::Ran,
            Outcome::Failed,
            Outcome::Busy,
            Outcome::Skipped,
            Outcome::Exhausted,
            Outcome::Lost,
            Outcome::MaxHold,
            Outcome::Error,
            Outcome::Superseded,
            Outcome::Outdated,
            Outcome::Preempted,
            Outcome::Stopped,
            Outcome::Running,
            Outcome::Vanished,
        ] {
            assert_eq!(ROWS.iter().filter(|r| r.outcome == outcome).count(), 1);
        }
    }

    #[test]
    fn todays_labels_words_and_ranks() {
        assert_eq!(
            metric_labels(),
            [
                "ran",
                "busy",
                "skipped",
                "attempts_exhausted",
                "lost",
                "error",
                "timeout",
                "superseded",
                "outdated",
                "preempted",
                "stopped"
            ]
        );
        assert_eq!(
            Outcome::of_record(Life::Ended, false, true, 143).words(143, Some(143)),
            "stopped on request (a signal to the wrapper), exit 143"
        );
        assert_eq!(
            Outcome::of_record(Life::Ended, true, false, 124).words(124, None),
            "stopped at --max-hold, exit 124"
        );
        assert_eq!(
            Outcome::of_record(Life::Ended, true, false, 79).words(79, None),
            "lost the lock, exit 79"
        );
        assert_eq!(
            Outcome::of_record(Life::Ended, false, false, 3).words(3, Some(3)),
            "exit 3"
        );
        let mut ranks: Vec<u8> = ROWS.iter().filter_map(|r| r.mark).map(|m| m.rank).collect();
        ranks.sort();
        ranks.dedup();
        assert_eq!(ranks.len(), 8, "distinct ranks");
        assert_eq!(
            Outcome::of_record(Life::Vanished, false, false, 0),
            Outcome::Vanished,
            "a vanished run is never a success"
        );
    }
}

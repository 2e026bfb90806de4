//! The run history: every run's outcome, recorded beside the lock (`<prefix>{N}:history`,
//! a list of JSON records, newest first, trimmed to `--history`), and `--once-per` slots.
//!
//! The wrapper knows who it is, what it ran, for how long and how the command ended;
//! the release script (see `scripts::release`) knows whether the lock was still ours
//! and what time it is on the server. So the wrapper sends the record's JSON without its
//! closing brace ([`Ending::head`]) and the script completes it with `status`, `lost`,
//! `start_ms` and `end_ms` in the same script as the delete: the next holder, a
//! `--once-per` run among them, sees it. Over several nodes each node keeps its own
//! list; a reader merges them by token ([`merge`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exit::Code;
use crate::holder::{Meta, Who};
use crate::lifecycle::{self, Life};
use crate::outcome::Outcome;
use crate::report::{human, rfc3339};
use crate::scripts::release::Record;

/// How many runs a lock's history keeps unless `--history` says otherwise.
pub const DEFAULT_SIZE: u32 = 20;

/// The most `--history` accepts: the history is read whole by a `--once-per` try.
pub const MAX_SIZE: u32 = 1000;

/// One run as recorded (an element of the history list; `redlock history --json`).
/// Fields a reader does not find are empty: a record written by hand or by another
/// version still reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRecord {
    /// The run's lock token.
    pub token: String,
    /// Who ran it (the command line as recorded in the holder metadata).
    #[serde(flatten)]
    pub who: Who,
    pub fence: Option<u64>,
    /// The `--once-per` period of the run, ms (None: not a once-per run, or a calendar
    /// period).
    pub once_per_ms: Option<u64>,
    /// A calendar period's unit (`day`, `week`, `month`) and zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub once_per: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// How long the lock was held, by the wrapper's clock (`None`: a run in progress or
    /// vanished, which has no end to measure to; `null` in JSON, never 0).
    pub duration_ms: Option<u64>,
    /// How the command ended (its exit status, or 128+N for a signal).
    pub command_status: Option<i64>,
    /// The wrapper's exit status: the command's, or 79 (lost), 124 (--max-hold). None
    /// for a run that has not ended: in progress, or vanished (never 0: a script that
    /// counts successes must not count a run whose end nobody knows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// Whether the lock was lost (or given up at --max-hold) before the command ended.
    pub lost: bool,
    /// Whether the run was asked to end: a signal to the wrapper (INT, TERM, HUP, QUIT)
    /// reached the command (a stop, not a failure).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// When the lock was taken and given back, Unix ms in the server's `TIME`; a run
    /// in progress or vanished has no end: 0 here, `null` in JSON.
    pub start_ms: u64,
    #[serde(serialize_with = "zero_as_null", deserialize_with = "null_as_zero")]
    pub end_ms: u64,
    /// A run in progress (a start mark whose token holds the lock, or the holder's run):
    /// granted or started, not ended (see `crate::lifecycle`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    /// A run that started and never ended, its lease gone (see `crate::lifecycle`): set
    /// by the judge when it reads a start mark whose token no longer holds the lock.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub vanished: bool,
    /// A start mark's lease time (ms), as its run said when it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// A start mark's: whether its command started (`false`: only granted so far; a
    /// grant that never started does not close its slot). `None` on other records and
    /// on marks written before the field existed (those count as started).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// A `--once-per` run's attempt in its slot (1 for the first start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The vanished run of the same slot this one reruns (its token's first 8
    /// characters; `--if-vanished rerun`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
    /// The other names a run of several names held with this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    /// A run of several names that ended because another of its names was lost or
    /// preempted: that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// A nested run's: the first 8 characters of the token its enclosing run holds
    /// the name with (the run it ran inside; its own `token` is one of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<String>,
}

/// An end time of 0 (no end: a run in progress or vanished) as `null`.
fn zero_as_null<S: serde::Serializer>(ms: &u64, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        0 => s.serialize_none(),
        ms => s.serialize_some(ms),
    }
}

/// An end time, `null` read as 0 (none).
fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(0))
}

impl RunRecord {
    /// Parses one list element; `None` for something that is not a record.
    pub fn parse(raw: &[u8]) -> Option<RunRecord> {
        serde_json::from_slice(raw).ok()
    }

    /// How it ended, in a few words: `exit 0`, `exit 3`, `lost the lock, exit 79`.
    pub fn outcome(&self) -> String {
        self.ended()
            .words(self.status.unwrap_or_default(), self.command_status)
    }

    /// Which row of the outcome table the record is.
    pub fn ended(&self) -> Outcome {
        Outcome::of_record(
            self.life(),
            self.lost,
            self.stopped,
            self.status.unwrap_or_default(),
        )
    }

    /// Where the run is in its life, once judged (see [`RunRecord::judged`]).
    pub fn life(&self) -> Life {
        if self.vanished {
            return Life::Vanished;
        }
        lifecycle::judge(self.running, self.started, self.running)
    }

    /// The record as the judge finds it, its token holding the lock now or not
    /// (`holds_lease`): a start mark whose run no longer holds its lease is vanished
    /// (no status), or no run at all when its command never started (`None`).
    pub fn judged(mut self, holds_lease: bool) -> Option<RunRecord> {
        // A start mark writes `"rerun_of":""` for a first attempt: not a rerun.
        self.rerun_of = self.rerun_of.filter(|of| !of.is_empty());
        match lifecycle::judge(self.running, self.started, holds_lease) {
            Life::Abandoned => None,
            Life::Vanished => {
                self.running = false;
                self.vanished = true;
                self.status = None;
                Some(self)
            }
            _ => Some(self),
        }
    }

    /// The run's `--once-per` period as its record says it (`None`: not a once-per
    /// run; a zone this host does not know reads as UTC).
    pub fn period(&self) -> Option<crate::period::Period> {
        use crate::period::{Period, Zone};
        if let Some(unit) = self.once_per.as_deref() {
            let zone = self.tz.as_deref().and_then(Zone::named);
            return Period::calendar(unit, zone.unwrap_or_else(Zone::utc));
        }
        self.once_per_ms
            .filter(|ms| *ms > 0)
            .map(|ms| Period::Every(Duration::from_millis(ms)))
    }

    /// The slot the run was for, as people read it: `day from
    /// 2026-11-28T00:00:00+01:00 (Europe/Berlin)`, `1h slot from 2026-11-28T06:00:00Z`.
    pub fn slot_words(&self) -> Option<String> {
        let period = self.period()?;
        let start = period.slot_at(self.start_ms).start_ms;
        Some(match period.calendar_words() {
            Some((unit, zone)) => format!("{unit} from {} ({zone})", period.show(start)),
            None => format!("{} slot from {}", period.words(), period.show(start)),
        })
    }

    /// One line: `2026-11-22T06:00:01Z  exit 0  took 12s  ci-7 pid 4242 user deploy
    /// fence 42  ./close_orders.sh`.
    pub fn describe(&self) -> String {
        let took = match self.life() {
            // Still going: how long so far (the record has no end to measure).
            Life::Granted | Life::Started => format!(
                "  for {}",
                human(Duration::from_millis(
                    crate::clock::wall_ms().saturating_sub(self.start_ms)
                ))
            ),
            // Nobody knows when it ended: no duration that grows for ever.
            Life::Vanished | Life::Abandoned => String::new(),
            Life::Ended => format!(
                "  took {}",
                human(Duration::from_millis(self.duration_ms.unwrap_or_default()))
            ),
        };
        let mut out = format!(
            "{}  {}{took}  {}",
            rfc3339(self.start_ms),
            self.outcome(),
            self.who.host_pid_user(),
        );
        if let Some(fence) = self.fence {
            out.push_str(&format!("  fence {fence}"));
        }
        if let Some(attempt) = self.attempt.filter(|n| *n > 1) {
            out.push_str(&format!("  attempt {attempt}"));
        }
        if let Some(of) = self.rerun_of.as_deref().filter(|of| !of.is_empty()) {
            out.push_str(&format!("  rerun of {}", crate::report::shown(of)));
        }
        if let Some(by) = &self.ended_by {
            out.push_str(&format!("  (with {} lost)", crate::report::shown(by)));
        }
        if self.who.cmd.is_some() {
            out.push_str(&format!("  {}", self.who.cmd_text()));
        }
        out
    }
}

/// The runs as the judge finds them (see `crate::lifecycle`), the lock's holder of now
/// among them, newest first by start: a start mark whose token holds the lock is the run
/// in progress (it gets who it is from the holder's metadata when the mark does not say);
/// one whose token does not is vanished, or dropped when its command never started; a
/// run in progress whose record is only written at its end (any run without a start
/// mark) is put in from the holder's metadata (newcomer-4 P9). A holder without redlock
/// metadata (another client) is left out.
pub fn judged(runs: Vec<RunRecord>, holder: Option<&crate::holder::Holder>) -> Vec<RunRecord> {
    let holding = holder.map_or("", |h| h.token.as_str());
    let mut runs: Vec<RunRecord> = runs
        .into_iter()
        .filter_map(|r| {
            let holds = !holding.is_empty() && r.token == holding;
            r.judged(holds)
        })
        .collect();
    if let Some(holder) = holder.filter(|h| h.is_known()) {
        match runs.iter_mut().find(|r| r.token == holder.token) {
            Some(mark) if mark.running && !mark.who.is_known() => {
                mark.who = holder.who.clone();
                mark.fence = mark.fence.or(holder.fence);
            }
            Some(_) => {}
            None => runs.push(RunRecord {
                token: holder.token.clone(),
                who: holder.who.clone(),
                fence: holder.fence,
                start_ms: holder.since_ms.unwrap_or_else(crate::clock::wall_ms),
                running: true,
                ..RunRecord::default()
            }),
        }
    }
    runs.sort_by_key(|r| std::cmp::Reverse(r.start_ms));
    runs
}

/// The last run that is over (ended or vanished) among judged runs (see [`judged`]):
/// what `status` and `top` call the last run, never the run in progress.
pub fn last_over(runs: &[RunRecord]) -> Option<&RunRecord> {
    runs.iter().find(|r| !r.life().in_progress())
}

/// The nodes' histories as one, newest first, at most `limit` runs. A run is on every
/// node its release reached: one record per token, the one that did not find the lock
/// lost when the nodes disagree (the release counts as done when any node deleted the
/// key, see `Lease::release_all`).
pub fn merge(per_node: Vec<Vec<RunRecord>>, limit: usize) -> Vec<RunRecord> {
    let mut runs: Vec<RunRecord> = Vec::new();
    for record in per_node.into_iter().flatten() {
        match runs.iter_mut().find(|r| r.token == record.token) {
            Some(seen) if seen.lost && !record.lost => *seen = record,
            Some(_) => {}
            None => runs.push(record),
        }
    }
    runs.sort_by_key(|r| std::cmp::Reverse((r.start_ms, r.end_ms)));
    runs.truncate(limit);
    runs
}

/// What the wrapper knows at the end of a run, for the release to record.
#[derive(Debug, Clone)]
pub struct Ending {
    /// The history's size (`--history`); 0 records nothing.
    pub size: u32,
    /// The record's JSON up to the fields the script adds, without the closing brace.
    pub head: String,
    pub held_ms: u64,
    /// The server's time at the acquire (0: unknown, the release then asks `TIME`).
    pub start_ms: u64,
    /// The wrapper's exit status if the release finds the lock still ours.
    pub status: u8,
    /// The status if it does not (or `lost`).
    pub status_if_lost: u8,
    /// The run already knows it lost the lock (a failed renewal, --max-hold).
    pub lost: bool,
}

/// The fields of an [`Ending`]'s head, in the record's order.
#[derive(Serialize)]
struct Head<'a> {
    token: &'a str,
    #[serde(flatten)]
    who: Who,
    fence: u64,
    once_per_ms: Option<u64>,
    /// A calendar period's unit and zone (`--once-per day --tz Europe/Berlin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    once_per: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tz: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerun_of: Option<&'a str>,
    duration_ms: u64,
    command_status: u8,
    /// Asked to end by a signal to the wrapper.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stopped: bool,
    /// The other names of a run that held several.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    with: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inside: Option<&'a str>,
}

/// Who ran what, for an [`Ending`].
pub struct Run<'a> {
    pub meta: &'a Meta,
    pub fence: u64,
    pub once_per: Option<&'a crate::period::Period>,
    pub size: u32,
    pub start_ms: u64,
    /// `--once-per`: the run's attempt in its slot, and the vanished run it reruns ('').
    pub attempt: Option<(u32, &'a str)>,
    /// Another name of the run's whose loss (or preempt) ended it.
    pub ended_by: Option<&'a str>,
    /// A signal to the wrapper ended the command: the run was asked to end.
    pub stopped: bool,
    /// A nested run (see `run/nested.rs`): the meta's token is its enclosing run's, so
    /// its record gets a token of its own and says which run it ran inside.
    pub inside: bool,
}

impl Ending {
    /// The ending of a run whose command ended with `command_status` after holding the
    /// lock `held` (`lost`: the run knows it lost the lock, and exits `status`).
    pub fn of(run: &Run, held: Duration, command_status: u8, status: u8, lost: bool) -> Self {
        let held_ms = held.as_millis() as u64;
        let own = run.inside.then(|| uuid::Uuid::new_v4().to_string());
        let head = Head {
            token: own.as_deref().unwrap_or(&run.meta.token),
            who: run.meta.who(),
            fence: run.fence,
            once_per_ms: run.once_per.and_then(|p| p.fixed_ms()),
            once_per: run.once_per.and_then(|p| p.calendar_words()).map(|c| c.0),
            tz: run.once_per.and_then(|p| p.calendar_words()).map(|c| c.1),
            attempt: run.attempt.map(|(n, _)| n),
            rerun_of: run.attempt.map(|(_, of)| of).filter(|of| !of.is_empty()),
            duration_ms: held_ms,
            command_status,
            stopped: run.stopped,
            with: &run.meta.with,
            ended_by: run.ended_by,
            inside: own
                .as_ref()
                .map(|_| run.meta.token.get(..8).unwrap_or_default()),
        };
        let mut head = serde_json::to_string(&head).unwrap_or_else(|_| "{".to_string());
        head.pop();
        Ending {
            size: run.size,
            head,
            held_ms,
            start_ms: run.start_ms,
            status,
            status_if_lost: if lost { status } else { Code::Lost.value() },
            lost,
        }
    }

    /// The record as the release script takes it (see `scripts::release`).
    pub fn record(&self) -> Record<'_> {
        Record {
            size: self.size,
            head: &self.head,
            held_ms: self.held_ms,
            start_ms: self.start_ms,
            status: self.status,
            status_if_lost: self.status_if_lost,
            lost: self.lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(token: &str, end_ms: u64, lost: bool) -> RunRecord {
        RunRecord {
            token: token.into(),
            end_ms,
            start_ms: end_ms - 10,
            lost,
            status: Some(if lost { 79 } else { 0 }),
            ..RunRecord::default()
        }
    }

    #[test]
    fn merged_histories_have_one_record_per_run_newest_first() {
        let a = vec![record("t3", 300, false), record("t1", 100, false)];
        let b = vec![
            record("t3", 301, true),
            record("t2", 200, false),
            record("t1", 100, false),
        ];
        let merged = merge(vec![b, a], 10);
        let tokens: Vec<_> = merged.iter().map(|r| r.token.as_str()).collect();
        assert_eq!(tokens, ["t3", "t2", "t1"]);
        assert!(!merged[0].lost, "a node that deleted the key decides");
        assert_eq!(merge(vec![merged], 2).len(), 2);
    }

    #[test]
    fn the_head_is_a_json_object_missing_what_the_script_adds() {
        let meta = Meta {
            token: "tok".into(),
            host: "h\"ost".into(),
            pid: 7,
            user: "u".into(),
            cmd: "./job.sh 'a b'".into(),
            since_ms: 0,
            ttl_ms: 30_000,
            started: None,
            pidns: None,
            pid_from: crate::holder::PidFrom::Own,
            uninterruptible: false,
            elect: false,
            order_key: None,
            machine: None,
            announce: None,
            with: Vec::new(),
        };
        let run = Run {
            meta: &meta,
            fence: 42,
            once_per: Some(&crate::period::Period::Every(Duration::from_secs(3600))),
            size: 20,
            start_ms: 0,
            attempt: None,
            ended_by: None,
            stopped: false,
            inside: false,
        };
        let ending = Ending::of(&run, Duration::from_millis(1500), 3, 3, false);
        // What the release script appends.
        let full = format!(
            "{},\"status\":3,\"lost\":false,\"start_ms\":1,\"end_ms\":1501}}",
            ending.head
        );
        let parsed = RunRecord::parse(full.as_bytes()).expect("a record");
        assert_eq!(parsed.who.host.as_deref(), Some("h\"ost"));
        assert_eq!(parsed.once_per_ms, Some(3_600_000));
        assert_eq!((parsed.command_status, parsed.status), (Some(3), Some(3)));
        assert_eq!(parsed.duration_ms, Some(1500));
        assert!(!ending.record().lost);
        assert_eq!(ending.status_if_lost, 79);
        assert_eq!(parsed.outcome(), "exit 3");
    }

    #[test]
    fn records_written_by_others_still_read() {
        assert_eq!(RunRecord::parse(b"not json"), None);
        let bare = RunRecord::parse(br#"{"status":0,"start_ms":5}"#).unwrap();
        assert_eq!((bare.status, bare.lost), (Some(0), false));
        assert_eq!(
            bare.describe(),
            "1970-01-01T00:00:00Z  exit 0  took 0ms  ? pid ? user ?"
        );
    }
}

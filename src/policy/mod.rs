//! What a run asks for, decided once from its flags: the name's mode (who may hold it at
//! once, in which order its waiters are served: [`mode`]) and what a run leaves when it
//! ends ([`Completion`]). Pure: no I/O. Every refused combination is a row of one table
//! ([`refused`]).

pub mod mode;
pub mod refused;

use std::time::Duration;

use crate::error::{Error, Result};
pub use mode::Mode;
use refused::Given;

/// What a `--once-per` slot does with a run that vanished (started, then its wrapper
/// died or its release was lost, so its end was never recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Vanished {
    /// It may have succeeded: the slot stays closed (at most once).
    #[default]
    Skip,
    /// The slot is open again: the next try on any host runs it (at least once, up to
    /// `--max-attempts` starts).
    Rerun,
}

/// The default `--max-attempts` with `--if-vanished rerun`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// What a run leaves behind when it ends, and what it finds of earlier runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// `--hold-min`: the lock is kept (not deleted) until this long after the acquire.
    pub hold_min: Option<Duration>,
    /// `--once-per`: the period whose slots run once (a start mark and a success record
    /// in the history close the slot).
    pub once_per: Option<crate::period::Period>,
    /// `--if-vanished`.
    pub vanished: Vanished,
    /// `--max-attempts`: starts in a slot that close it (`None`: no limit, or
    /// [`DEFAULT_MAX_ATTEMPTS`] with `--if-vanished rerun`).
    pub max_attempts: Option<u32>,
    /// The run may wait (`--wait`): it waits for its slot's run in progress (to skip
    /// the slot if that run succeeds, to run it if it fails, or vanishes with
    /// `--if-vanished rerun`); a run that may not wait skips that slot.
    pub may_wait: bool,
    /// `--once-id`: the run-once ID (a record per name and ID says it ran).
    pub once_id: Option<String>,
    /// `--splay`: a `--once-per` try waits an offset below this, drawn from host, name
    /// and slot, into its slot before it tries (for that slot only).
    pub splay: Option<Duration>,
}

impl Completion {
    /// The `--once-per` period as the scripts take it ('0': none; see
    /// `Period::script_arg`), the slot of `now_ms` for a calendar period.
    pub fn period_arg(&self, now_ms: u64) -> String {
        self.once_per
            .as_ref()
            .map_or("0".to_string(), |p| p.script_arg(now_ms))
    }

    /// The starts in a slot that close it (0: no limit): `--max-attempts`, else
    /// [`DEFAULT_MAX_ATTEMPTS`] when vanished runs are rerun (a job that kills its host
    /// must not crash-loop the fleet).
    pub fn attempts(&self) -> u32 {
        match (self.max_attempts, self.vanished) {
            (Some(n), _) => n,
            (None, Vanished::Rerun) => DEFAULT_MAX_ATTEMPTS,
            (None, Vanished::Skip) if self.once_id.is_some() => DEFAULT_MAX_ATTEMPTS,
            (None, Vanished::Skip) => 0,
        }
    }

    /// What the acquire scripts are told (one number, two bits): 1, a vanished run
    /// opens its slot again (else it closes it); 2, a run that waits for its slot's or
    /// ID's run in progress (else it is skipped): a `--once-id` run that may wait, or a
    /// `--once-per` run that found the run in progress and now waits for it, its slot
    /// pinned (`waits_for_run`).
    pub fn rerun_arg(&self, waits_for_run: bool) -> u8 {
        let waits = match self.once_id {
            Some(_) => self.may_wait,
            None => waits_for_run,
        };
        u8::from(self.vanished == Vanished::Rerun) + 2 * u8::from(waits)
    }

    /// Whether a try that finds its `--once-per` slot's run in progress waits for it:
    /// with `--wait`, or with `--if-vanished rerun` (at least once: until the end of
    /// the slot, when no `--wait` says otherwise).
    pub fn waits_for_run_in_progress(&self) -> bool {
        self.may_wait || self.vanished == Vanished::Rerun
    }

    /// How long the lock is still kept after a run that held it for `held_for` (`None`:
    /// released at once).
    pub fn keep_after(&self, held_for: Duration) -> Option<Duration> {
        self.hold_min
            .and_then(|h| crate::timing::hold_remaining(h, held_for))
    }
}

/// `--supersede`: what a newer run does to older ones on the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Supersede {
    /// Every older waiting run exits without running (superseded); the holder runs on.
    Waiting,
    /// Also, the holder is asked to stop (preempted): its command gets
    /// `--preempt-signal`, then SIGKILL after `--kill-after`, and the lock is released.
    Running,
}

/// A newest-wins run (`--supersede`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Newest {
    pub supersede: Supersede,
    /// `--order-key`: what "newest" means (the largest), instead of the arrival.
    pub order_key: Option<u64>,
}

impl Newest {
    /// Whether a newcomer asks the holder to stop.
    pub fn preempts(self) -> bool {
        self.supersede == Supersede::Running
    }
}

/// How a holder may be stopped for a newer run (`--supersede running`, `redlock
/// preempt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// `--uninterruptible`: a preempt request against this holder is refused.
    pub uninterruptible: bool,
    /// `--preempt-signal`: what the command gets when preempted (a request may name
    /// another).
    pub signal: nix::sys::signal::Signal,
}

impl Default for Stop {
    fn default() -> Self {
        Stop {
            uninterruptible: false,
            signal: nix::sys::signal::Signal::SIGTERM,
        }
    }
}

/// `--on-exit`: what a leader (`--elect`) does when its command exits by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnExit {
    /// Release the lock, back off a little (so that a flapping host yields to a
    /// standby) and contend again.
    #[default]
    Resign,
    /// Run the command again, keeping the lock, after a back-off that grows from 1s to
    /// 60s while it keeps exiting.
    Restart,
    /// Release the lock and exit with the command's status.
    Exit,
}

/// `--elect`: the supervisor loops over terms (a hot standby).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Elect {
    pub on_exit: OnExit,
    /// `--elect-max-terms`: the wrapper exits after this many terms.
    pub max_terms: Option<u32>,
}

/// What a run asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub mode: Mode,
    pub completion: Completion,
    /// `--supersede`, `--order-key`.
    pub newest: Option<Newest>,
    /// `--uninterruptible`, `--preempt-signal`.
    pub stop: Stop,
    /// `--elect`, `--on-exit`, `--elect-max-terms`: the run is a loop of terms.
    pub elect: Option<Elect>,
}

impl Policy {
    /// The same policy, as a loop of terms (`--elect`).
    pub fn electing(self, elect: Option<Elect>) -> Policy {
        Policy { elect, ..self }
    }

    /// The policy of a run's checked flags, or the one line of the first refused
    /// combination (usage error).
    pub fn from_flags(
        given: Given,
        completion: Completion,
        newest: Option<Newest>,
        stop: Stop,
    ) -> Result<Policy> {
        if let Some(line) = refused::refusal(&given) {
            return Err(Error::usage(line));
        }
        let mode = match newest {
            Some(newest) => Mode::Newest {
                keyed: newest.order_key.is_some(),
            },
            None if given.fair => Mode::Fair,
            None if given.shared => Mode::Shared,
            None => Mode::limit(given.limit),
        };
        Ok(Policy {
            mode,
            completion,
            newest,
            stop,
            elect: None,
        })
    }
}

//! What a run asks for, decided once from its flags: the name's mode (who may hold it at
//! once, in which order its waiters are served: [`mode`]) and what a run leaves when it
//! ends ([`Completion`]). Pure: no I/O. Every refused combination is a row of one table
//! ([`refused`]).

pub mod mode;
pub mod refused;

use std::time::Duration;

use crate::error::{Error, Result};
pub use mode::{Holders, Mode, Order};
use refused::Given;

/// What a run leaves behind when it ends, and what it finds of earlier runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completion {
    /// `--hold-min`: the lock is kept (not deleted) until this long after the acquire.
    pub hold_min: Option<Duration>,
    /// `--once-per`: the period whose slots run once (a start mark and a success record
    /// in the history close the slot).
    pub once_per: Option<Duration>,
}

impl Completion {
    /// The `--once-per` period in ms (0: none), as the scripts take it.
    pub fn once_per_ms(&self) -> u64 {
        self.once_per.map_or(0, |p| p.as_millis().max(1) as u64)
    }

    /// How long the lock is still kept after a run that held it for `held_for` (`None`:
    /// released at once).
    pub fn keep_after(&self, held_for: Duration) -> Option<Duration> {
        self.hold_min
            .and_then(|h| crate::timing::hold_remaining(h, held_for))
    }
}

/// What a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    pub mode: Mode,
    pub completion: Completion,
}

impl Policy {
    /// The policy of a run's checked flags, or the one line of the first refused
    /// combination (usage error).
    pub fn from_flags(given: Given, completion: Completion) -> Result<Policy> {
        if let Some(line) = refused::refusal(&given) {
            return Err(Error::usage(line));
        }
        let mode = if given.fair {
            Mode::FAIR
        } else {
            Mode::limit(given.limit)
        };
        Ok(Policy { mode, completion })
    }
}

//! How long a run may wait (`--wait`), measured once from its start, so that
//! connecting and acquiring share it.

use std::time::Duration;

use crate::config::Wait;
use crate::error::Error;
use crate::report::human;
use crate::timing::Point;

/// How long the run may wait, measured from its start.
#[derive(Debug, Clone, Copy)]
pub struct Patience {
    started: Point,
    /// `None`: wait forever.
    deadline: Option<Point>,
}

impl Patience {
    pub fn new(wait: Wait) -> Self {
        let started = crate::clock::now();
        let deadline = match wait {
            Wait::For(d) => Some(started + d),
            Wait::Forever => None,
        };
        Patience { started, deadline }
    }

    /// The same wait, which now lasts `left` more from now (a `--once-per` run that
    /// waits for its slot's run in progress until the end of the slot).
    pub fn until(self, left: Duration) -> Self {
        Patience {
            deadline: Some(crate::clock::now() + left),
            ..self
        }
    }

    /// Whether the run may wait at all (`--wait 0` tries once).
    pub fn allows_waiting(&self) -> bool {
        self.deadline != Some(self.started)
    }

    /// Time left; `None` when it is over.
    pub fn left(&self) -> Option<Duration> {
        match self.deadline {
            Some(d) => d.checked_sub(crate::clock::now()).filter(|l| !l.is_zero()),
            None => Some(Duration::MAX),
        }
    }

    /// How long the run has waited so far.
    pub fn waited(&self) -> Duration {
        crate::clock::now().saturating_sub(self.started)
    }

    /// An unreachable-Redis error at the end of the wait, saying how long it tried.
    pub fn gave_up(&self, err: Error) -> Error {
        if !self.allows_waiting() {
            return err;
        }
        err.context(format!(
            "Redis unreachable for all of --wait (tried for {})",
            human(self.waited())
        ))
    }
}

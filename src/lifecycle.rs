//! A run's life, one model, and THE judge of where a recorded run is in it.
//!
//! - *granted*: the lock taken, nothing started (a `--once-per` start mark says
//!   `"started":false`); not an attempt;
//! - *started*: its start recorded (`scripts::started`: host, pid, user, command,
//!   attempt, fence), its command running under the lease;
//! - *ended*: its release replaced the mark with one row of the outcome table
//!   (`crate::outcome`);
//! - *vanished*: started, never ended, and no longer holding its lease (its wrapper
//!   died, or its release never reached Redis): it may have done its work.
//!
//! A grant that no longer holds the lease and never started is *abandoned*: no run at
//! all. The acquire scripts judge by the same rule in Lua (`scripts::completion`): a
//! mark whose token holds the lock is in progress; one that does not is vanished when its
//! command started, abandoned when it did not. Every reader — history, its JSON and
//! timeline, `status` and `top`, the `--once-per` and `--once-id` decisions — asks this
//! judge (or the scripts' twin), never the raw marks.

/// Where a recorded run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    Granted,
    Started,
    Ended,
    Vanished,
    Abandoned,
}

impl Life {
    /// Whether the run holds its lease now (granted or started): in progress.
    pub fn in_progress(self) -> bool {
        matches!(self, Life::Granted | Life::Started)
    }
}

/// THE judge: a record that is a start mark (`running`), whose command started or not
/// (`started`: `None` for a mark that does not say, which counts as started), and whose
/// token holds the lock now or not (`holds_lease`).
pub fn judge(running: bool, started: Option<bool>, holds_lease: bool) -> Life {
    match (running, holds_lease, started) {
        (false, _, _) => Life::Ended,
        (true, true, Some(false)) => Life::Granted,
        (true, true, _) => Life::Started,
        (true, false, Some(false)) => Life::Abandoned,
        (true, false, _) => Life::Vanished,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_has_one_life() {
        let rows = [
            // running, started, holds the lease -> life
            (false, None, false, Life::Ended),
            (false, Some(true), true, Life::Ended),
            (true, Some(false), true, Life::Granted),
            (true, Some(true), true, Life::Started),
            (true, None, true, Life::Started),
            (true, Some(false), false, Life::Abandoned),
            (true, Some(true), false, Life::Vanished),
            (true, None, false, Life::Vanished),
        ];
        for (running, started, holds, life) in rows {
            assert_eq!(
                judge(running, started, holds),
                life,
                "{running} {started:?} {holds}"
            );
        }
        assert!(Life::Granted.in_progress() && Life::Started.in_progress());
        assert!(!Life::Vanished.in_progress() && !Life::Ended.in_progress());
    }
}

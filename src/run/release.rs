//! The release after a term: compare-and-delete with the run's record, retried while
//! it can heal; the status it makes the run's (a key found no longer ours is a lost
//! lock, 79); the `released` event.

use crate::config::RunConfig;
use crate::error::Result;
use crate::events::Event;
use crate::exit::Code;
use crate::history::{self, Ending};
use crate::holder::Meta;
use crate::lease::{Lease, Lost, Release};
use crate::policy::Completion;
use crate::report::{Reporter, human};
use crate::timing::{self, Point};

/// How the command's run ended, for its release: whether the lock was lost and why,
/// when the lease ends if it is still held, and whether a signal to the wrapper ended
/// the command (`stopped`: the run was asked to end).
#[derive(Clone)]
pub(super) struct Ended {
    pub lost: Option<Lost>,
    pub lease_end: Option<Point>,
    pub stopped: bool,
}

impl Ended {
    pub fn of(outcome: &crate::supervise::Outcome) -> Ended {
        Ended {
            lost: outcome.lost.clone(),
            lease_end: outcome.lease_end,
            stopped: outcome.signalled.is_some(),
        }
    }
}

/// The release after the command ended, and the status it makes the run's.
/// `ended_by`: another name of the run whose loss ended it (its record says so).
pub(super) async fn release_after(
    config: &RunConfig,
    (lease, ended_by): (&Lease, Option<&str>),
    meta: &Meta,
    Ended {
        lost,
        lease_end,
        stopped,
    }: Ended,
    code: u8,
    acquired_at: Point,
    report: &Reporter,
) -> u8 {
    let run = history::Run {
        meta,
        fence: lease.fence(),
        once_per: config.policy.completion.once_per.as_ref(),
        size: config.history,
        start_ms: lease.acquired_ms(),
        attempt: lease.attempt(),
        ended_by,
        stopped,
        inside: lease.is_inside(),
    };
    let held = crate::clock::now().saturating_sub(acquired_at);
    let Some(lost) = lost else {
        let ending = Ending::of(&run, held, code, code, false);
        let until = lease_end.unwrap_or_else(crate::clock::now);
        let released = release(
            lease,
            &config.policy.completion,
            acquired_at,
            Some(&ending),
            until,
            report,
        );
        return match released.await {
            Released::NotOurs => Code::Lost.value(),
            Released::Done => code,
        };
    };
    let status = match lost {
        Lost::MaxHold { .. } => Code::MaxHold.value(),
        Lost::Preempted(_) => Code::Preempted.value(),
        _ => Code::Lost.value(),
    };
    // The key may still hold our token (a renewal that reached a paused server, or a
    // lock given up at --max-hold): take it back so it does not linger.
    let ending = Ending::of(&run, held, code, status, true);
    let result = lease.release_all(0, Some(&ending)).await;
    released_event(lease, &result, 0, report);
    report.verbose(|| format!("command ended with status {code} after giving up the lock"));
    status
}

/// Gives the lock back when the command never started (a signal before the start, a
/// `--once-per` start that could not be recorded): no record, no `--hold-min` keep.
pub(super) async fn give_back(lease: &Lease, acquired_at: Point, report: &Reporter) {
    let nothing = Completion::default();
    let _ = release(lease, &nothing, acquired_at, None, acquired_at, report).await;
}

/// The `released` event: one for every acquisition that started its command, whatever
/// the release found (a lost run's last attempt to give the key back included).
/// Said after what the release's follow said (a master followed: see
/// `supervise::tell_notes`).
fn released_event(lease: &Lease, result: &Result<Release>, keep_ms: u64, report: &Reporter) {
    let holds = match result {
        Ok(Release::Deleted | Release::Kept) => Some(true),
        Ok(Release::NotHeld) => Some(false),
        Err(_) => None,
    };
    crate::supervise::tell_notes(report, lease, holds);
    let said = match result {
        Ok(Release::Deleted) => "deleted",
        Ok(Release::Kept) => "kept",
        Ok(Release::NotHeld) => "not_ours",
        Err(_) => "failed",
    };
    report.event(
        Event::Released,
        &lease.keys().display_name(),
        serde_json::json!({ "result": said, "kept_ms": keep_ms }),
    );
}

/// What the release found.
enum Released {
    /// Released, kept for `--hold-min`, or left to expire after an error.
    Done,
    /// The key was no longer ours: the lock was lost while the command ran.
    NotOurs,
}

/// Releases after the command ended; with `--hold-min`, keeps the key for what remains.
/// A key found no longer ours means the lock was lost while the command ran (deleted,
/// expired or taken over before the next renewal could notice): exclusion may have
/// been broken, and the run says so.
///
/// A release that fails for a reason that can heal (a dropped connection, a timeout, a
/// link that holds its bytes) is tried again, with a backoff, until `until` (the
/// lease's end): the release writes the run's record, and without it a `--once-per`
/// slot would look open. A connection the server dropped while the command ran fails
/// the first request and reconnects only then, so one more try is always made. The
/// release is compare-and-delete, and a retry finds its own record, so no try removes
/// anyone else's lock or records the run twice.
async fn release(
    lease: &Lease,
    completion: &Completion,
    acquired_at: Point,
    ending: Option<&Ending>,
    until: Point,
    report: &Reporter,
) -> Released {
    let held_for = crate::clock::now().saturating_sub(acquired_at);
    let keep = completion.keep_after(held_for);
    let keep_ms = keep.map_or(0, |k| k.as_millis().max(1) as u64);
    let mut result = lease.release_all(keep_ms, ending).await;
    let mut attempt = 0;
    while let Err(e) = &result
        && e.is_transient()
        && (attempt == 0 || crate::clock::now() < until)
    {
        report.verbose(|| format!("release failed, retrying: {e}"));
        if attempt > 0 {
            let left = until.saturating_sub(crate::clock::now());
            tokio::time::sleep(timing::poll_delay(attempt, None, fastrand::f64()).min(left)).await;
        }
        attempt += 1;
        result = lease.release_all(keep_ms, ending).await;
    }
    let name = lease.keys().display_name();
    released_event(lease, &result, keep_ms, report);
    match result {
        Ok(Release::Deleted) => report.verbose(|| "released".to_string()),
        Ok(Release::Kept) => report.verbose(|| {
            format!(
                "kept for {} more (--hold-min)",
                human(keep.unwrap_or_default())
            )
        }),
        // A give-back (no record): the command never ran, so nothing ran unlocked.
        Ok(Release::NotHeld) if ending.is_none() => {
            report.verbose(|| format!("{name} was no longer ours when given back"));
        }
        Ok(Release::NotHeld) => {
            report.error(&format!(
                "lock {name} lost: it was no longer ours at the release (expired, deleted or taken over); the command may have run without it"
            ));
            return Released::NotOurs;
        }
        Err(e) if lease.is_once_per() => report.error(&format!(
            "could not release {name} ({e}): the run's --once-per record was not written, so this slot may run again on another host; the lock expires by itself within {}",
            human(lease.ttl())
        )),
        Err(e) => report.note(&format!(
            "could not release {name} ({e}); it expires by itself within {}",
            human(lease.ttl())
        )),
    }
    Released::Done
}

//! A vanished run is told once: the try that finds a run started, never ended and its
//! lease gone, which no try has told yet, says so in one line on stderr, a `vanished`
//! event (and `redlock_vanished_runs_total` in its `--metrics`). The acquire script
//! that found it marked it told in the same script (see `scripts::completion`'s
//! `tell`), so in a fleet exactly one try tells it and cron mails it once.
//!
//! Who tells: a try of the run's own slot that comes after its lease ended (its slot
//! closed by it: `unfinished_run`, said in `term::say_skipped`), else the try that takes
//! a later slot (in a fleet that fires together, every try of the run's slot came
//! while its lease was there); for `--once-id`, the next try of the ID that takes it.

use super::Run;
use crate::events::Event;
use crate::history::RunRecord;
use crate::lease::Lease;
use crate::report::{human, rfc3339, shown};

/// After the acquire rounds: the vanished run one of them found untold (and marked
/// told), said, whatever the rounds gave (most often the lock: the try that takes the
/// next slot, or the ID's next attempt).
pub(super) fn tell_found(run: &Run<'_>, lease: &Lease) {
    let Some(run_record) = lease
        .take_told()
        .and_then(|t| RunRecord::parse(&t))
        .and_then(|r| r.judged(false))
    else {
        return;
    };
    let name = lease.keys().display_name();
    let completion = &run.config.policy.completion;
    let described = run_record.describe();
    let line = match (&completion.once_id, completion.once_per) {
        (Some(id), _) => format!(
            "{name}: the last run of --once-id {} vanished: {described}; {}",
            shown(id),
            lease
                .attempt()
                .map_or("the next run of the ID runs it again".into(), |(n, _)| {
                    format!("running it again (attempt {n})")
                })
        ),
        (None, period) => {
            let period = period.unwrap_or_default();
            format!(
                "{name}: the run of the --once-per {} slot from {} vanished and no try of that slot said so: {described}; check whether it did its work",
                human(period),
                rfc3339(slot_of(run_record.start_ms, period.as_millis() as u64))
            )
        }
    };
    run.report.note(&line);
    told(run, lease, &run_record);
}

/// The `vanished` event of a run this try tells (its record, as the judge found it).
pub(super) fn told(run: &Run<'_>, lease: &Lease, record: &RunRecord) {
    let completion = &run.config.policy.completion;
    let period = completion.once_per.map(|p| p.as_millis() as u64);
    run.report.event(
        Event::Vanished,
        &lease.keys().display_name(),
        serde_json::json!({
            "slot_start_ms": period.map(|p| slot_of(record.start_ms, p)),
            "once_id": completion.once_id,
            "run": record,
        }),
    );
}

/// The start of the slot of `period` ms that `at_ms` is in.
fn slot_of(at_ms: u64, period: u64) -> u64 {
    at_ms - at_ms % period.max(1)
}

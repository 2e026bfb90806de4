//! A vanished run is told once: the try that finds a run started, never ended and its
//! lease gone, which no try has told yet, says so in one line on stderr, a `vanished`
//! event (and `redlock_vanished_runs_total` in its `--metrics`); the line is printed
//! whatever `--quiet` says (`Reporter::tell`): the try that says it marks it said for
//! the whole fleet. The acquire script
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
use crate::report::shown;

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
    let line = match (&completion.once_id, completion.once_per.as_ref()) {
        (Some(id), _) => format!(
            "{name}: the last run of --once-id {} vanished: {described}; {}",
            shown(id),
            lease
                .attempt()
                .map_or("the next run of the ID runs it again".into(), |(n, _)| {
                    format!("running it again (attempt {n})")
                })
        ),
        (None, period) => format!(
            "{name}: the run of the --once-per {} slot from {} vanished and no try of that slot said so: {described}; check whether it did its work",
            period.map_or(String::new(), |p| p.words()),
            period.map_or(String::new(), |p| p
                .show(p.slot_at(run_record.start_ms).start_ms))
        ),
    };
    run.report.tell(&line);
    told(run, lease, &run_record);
}

/// The `vanished` event of a run this try tells (its record, as the judge found it).
pub(super) fn told(run: &Run<'_>, lease: &Lease, record: &RunRecord) {
    let completion = &run.config.policy.completion;
    let slot = completion
        .once_per
        .as_ref()
        .map(|p| p.slot_at(record.start_ms));
    run.report.event(
        Event::Vanished,
        &lease.keys().display_name(),
        serde_json::json!({
            "slot_start_ms": slot.map(|s| s.start_ms),
            "once_id": completion.once_id,
            "run": record,
        }),
    );
}

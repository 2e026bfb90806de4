//! One term: take the lock (waiting as configured), say so, start the command under
//! the supervisor, release and report. What `--elect` repeats; a run is one term.
//!
//! One term for one name or several (`--key A --key B`): the run holds a set of leases,
//! one name being a set of one, and every per-name step (announce, the signal check,
//! the start record, the ready file, the renewal and preempt, the release, the record)
//! is applied to every lease. Only how the names are taken differs: one name waits as
//! its kind waits (`take`); several are taken all or nothing (`set::take_all`).

use super::release::{self, give_back};
use super::{End, Run, Step, command, lock_delay, set};
use crate::child;
use crate::error::{Error, Kind};
use crate::events::Event;
use crate::exit;
use crate::guard::GroupGuard;
use crate::history::RunRecord;
use crate::holder::{self, Meta};
use crate::lease::{Closed, Lease, Skip};
use crate::period::Period;
use crate::report::{human, rfc3339};
use crate::supervise::{self, Held};
use crate::timing::Point;
use crate::wait::{self, Head, WaitAs, Waited};
use serde::Deserialize;

/// The term, stage by stage; its exit status.
pub(super) async fn term(run: &mut Run<'_>, leases: &mut [Lease], head: Option<Head>) -> Step<u8> {
    let mut taken = begin(run, leases, head).await?;
    let guard = taken.guard.take();
    let outcome = command(run, leases, &taken, taken.renewed, guard).await?;
    Ok(finish(run, leases, &taken.metas, outcome, taken.acquired_at).await)
}

/// A term whose names are held and whose command may start.
pub(super) struct Taken {
    /// Each name's holder metadata, in the leases' order.
    pub metas: Vec<Meta>,
    /// When the acquisition was sent (the lease's clock starts there; of several names,
    /// the earliest).
    pub t_sent: Point,
    /// When the lease was last renewed before the command starts: `t_sent`, or later
    /// after a lock-delay (see `lock_delay.rs`).
    pub renewed: Point,
    pub acquired_at: Point,
    /// The command's group guard when one was forked while waiting.
    pub guard: Option<GroupGuard>,
}

/// Takes every name and says so; ends the run when a signal came first or a start
/// cannot be recorded.
pub(super) async fn begin(
    run: &mut Run<'_>,
    leases: &mut [Lease],
    head: Option<Head>,
) -> Step<Taken> {
    let metas = metas(run, leases);
    let (t_sent, guard, holder_ttl) = match leases {
        [lease] => take(run, lease, &metas[0], head).await?,
        _ => set::take_all(run, leases, &metas).await?,
    };
    let acquired_at = crate::clock::now();
    for (lease, meta) in leases.iter().zip(&metas) {
        announce(run, lease, &meta.with);
    }
    let renewed = lock_delay::wait_out(run, leases, holder_ttl, (t_sent, acquired_at)).await?;
    interrupted_before_start(run, leases, acquired_at).await?;
    if leases.iter().any(Lease::records_start) {
        record_start(run, leases, &metas, (renewed, acquired_at)).await?;
        interrupted_before_start(run, leases, acquired_at).await?;
    }
    Ok(Taken {
        metas,
        t_sent,
        renewed,
        acquired_at,
        guard,
    })
}

/// Each name's holder metadata: who runs what, and the other names it holds with.
fn metas(run: &Run<'_>, leases: &[Lease]) -> Vec<Meta> {
    let names: Vec<String> = leases.iter().map(|l| l.keys().display_name()).collect();
    leases
        .iter()
        .enumerate()
        .map(|(i, lease)| {
            let others = names
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, n)| n.clone())
                .collect();
            holder_meta(run, lease).holding_with(others)
        })
        .collect()
}

/// Runs the command under the supervisor, the lease (and the other names of a run that
/// holds several) renewed from `t_sent` (the last request that kept it); a command that
/// cannot start gives the lock back.
pub(super) async fn command(
    run: &mut Run<'_>,
    leases: &[Lease],
    taken: &Taken,
    t_sent: Point,
    guard: Option<GroupGuard>,
) -> Step<supervise::Outcome> {
    let (lease, also) = leases.split_first().expect("a term holds a name");
    let ready_file = run.config.ready_file.clone();
    if let Some(path) = &ready_file {
        let mut line = serde_json::json!({
            "name": lease.keys().display_name(),
            "fence": lease.fence(),
            "pid": std::process::id(),
            "since_ms": crate::clock::wall_ms(),
        });
        if !also.is_empty() {
            let fences: serde_json::Map<_, _> = std::iter::once(lease)
                .chain(also)
                .map(|l| (l.keys().display_name(), l.fence().into()))
                .collect();
            line["fences"] = fences.into();
        }
        if let Err(e) = crate::ready::create(path, &line.to_string()) {
            run.report
                .note(&format!("--ready-file {}: {e}", path.display()));
        }
    }
    let held = Held {
        lease,
        also,
        budget: run.config.budget,
        on_lost: run.config.on_lost,
        t_sent,
        give_up_at: run.config.max_hold.map(|d| taken.t_sent + d),
        stop: run.config.policy.stop,
        ready_file: ready_file.as_deref(),
    };
    match command::run_command(run, Some(held), guard).await {
        Ok(outcome) => Ok(outcome),
        Err(e) => {
            if let Some(path) = &ready_file {
                crate::ready::remove(path);
            }
            for lease in leases {
                give_back(lease, taken.acquired_at, run.report).await;
            }
            Err(e.into())
        }
    }
}

/// The holder metadata this run records: who runs what.
pub(super) fn holder_meta(run: &Run<'_>, lease: &Lease) -> Meta {
    let config = &run.config;
    let argv: Vec<String> = config
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cmdline = match &config.label {
        Some(label) => crate::error::one_line(label).chars().take(256).collect(),
        None => holder::recorded_command(&argv, config.hide_args),
    };
    let order_key = config.policy.newest.and_then(|n| n.order_key);
    Meta::local(lease.token(), &cmdline, config.budget.ttl)
        .stopping(config.policy.stop.uninterruptible, order_key)
        .electing(config.policy.elect.is_some())
        .announcing(config.announce.clone())
}

/// Takes the lock, waiting as configured: when it was sent for (the lease's clock
/// starts there), the command's group guard when one was forked while waiting (so
/// that a hand-over only has to start the command) and the ttl of the holder it waited
/// behind last, if any. The host's local queue is left
/// (`head` dropped) as soon as the lock is held or given up: the next run of this host
/// contends in Redis from then on.
async fn take(
    run: &mut Run<'_>,
    lease: &Lease,
    meta: &Meta,
    head: Option<Head>,
) -> Step<(Point, Option<GroupGuard>, Option<std::time::Duration>)> {
    let how = WaitAs {
        chatty: run.chatty(),
        head: head.as_ref(),
        found_busy: None,
    };
    let obituary = command::obituary(run);
    let report = run.report;
    let mut guard = None;
    let waited = wait::acquire(
        lease,
        meta,
        &run.patience,
        how,
        &mut run.signals,
        report,
        || guard = GroupGuard::fork(&obituary),
    );
    let waited = waited.await;
    drop(head);
    super::vanished::tell_found(run, lease);
    match waited? {
        Waited::Acquired { t_sent, holder_ttl } => Ok((t_sent, guard, holder_ttl)),
        Waited::Busy(_) if waited_out_the_slot(run, lease) => {
            let slot_ms = lease.pinned_slot().unwrap_or_default();
            let skip = Skip {
                slot_ms,
                why: Closed::InProgress,
                record: Vec::new(),
                now_ms: 0,
                told: false,
            };
            Err(End::Status(skipped(run, lease, &skip)))
        }
        Waited::Busy(holder) => Err(run.busy(lease, &holder)),
        Waited::Interrupted(sig) => Err(run.interrupted_while_waiting(sig)),
        Waited::Skipped(skip) => Err(End::Status(skipped(run, lease, &skip))),
    }
}

/// `--once-per --if-vanished rerun` without `--wait`: the run waited for its slot's
/// run in progress until the end of the slot, and that run still holds the lock. It is
/// skipped like any try that finds its slot's run in progress, not busy.
fn waited_out_the_slot(run: &Run<'_>, lease: &Lease) -> bool {
    lease.waits_for_run() && !run.config.policy.completion.may_wait
}

/// Says the lock is taken: the `acquired` event (with the other names of a run that
/// holds several, `with`), and a line with `--verbose`.
pub(super) fn announce(run: &Run<'_>, lease: &Lease, with: &[String]) {
    let (ttl, report) = (run.config.budget.ttl, run.report);
    let name = lease.keys().display_name();
    let mut fields = serde_json::json!({
        "token": &lease.token()[..8],
        "fence": lease.fence(),
        "slot": lease.is_semaphore().then(|| lease.slot()),
        "waited_ms": run.patience.waited().as_millis() as u64,
        "ttl_ms": ttl.as_millis() as u64,
    });
    if !with.is_empty() {
        fields["with"] = with.into();
    }
    report.event(Event::Acquired, &name, fields);
    // A grant no replica acknowledged (Sentinel): a warning, and the run goes on.
    crate::supervise::tell_notes(report, lease, None);
    report.verbose(|| {
        format!(
            "holding {name} (token {}, ttl {})",
            &lease.token()[..8],
            human(ttl)
        )
    });
}

/// `--once-per`, `--once-id`: this try's slot or ID is closed; nothing runs. Returns the
/// run's status: the busy status (`--busy-exit-code`), as for a busy lock, but 0 for a
/// done `--once-id`.
///
/// A slot that ran, or whose run is in progress, is said with `--verbose` only (a cron
/// line every minute for a daily job would say it 1439 times a day), and as a `skipped`
/// event. A slot closed by a run whose end was never recorded (it started, then its
/// wrapper died or its release was lost: it may have succeeded) is said as a note too,
/// once in the fleet (by the try that marked it told; its `vanished` event too), with
/// the reason `unfinished_run`: a slot that may have lost its run must not be skipped
/// silently; so is a slot whose attempts are spent (`attempts_exhausted`).
fn skipped(run: &Run<'_>, lease: &Lease, skip: &Skip) -> u8 {
    if skip.why.is_newer() {
        return superseded(run, lease, skip);
    }
    // The script said whether the record's run holds the lock: in progress, or not.
    let in_progress = skip.why == Closed::InProgress;
    // An exhausted ID's record is its last start's mark, which does not say how the
    // run ended: the line names where and when it ran (see [`last_attempt`]).
    let last = RunRecord::parse(&skip.record)
        .filter(|_| !matches!(skip.why, Closed::Exhausted { .. }))
        .and_then(|r| r.judged(in_progress));
    let (reason, status) = say_skipped(run, lease, skip, last.as_ref());
    if let Some(last) = last.as_ref().filter(|l| skip.told && l.vanished) {
        super::vanished::told(run, lease, last);
    }
    let completion = &run.config.policy.completion;
    let starts = match skip.why {
        Closed::Exhausted { starts } => Some(starts),
        _ => None,
    };
    run.report.event(
        Event::Skipped,
        &lease.keys().display_name(),
        serde_json::json!({
            "reason": reason,
            "slot_start_ms": completion.once_per.as_ref().map(|_| skip.slot_ms),
            "once_per_ms": completion.once_per.as_ref().and_then(|p| p.fixed_ms()),
            "once_per": completion.once_per.as_ref().and_then(|p| p.calendar_words()).map(|c| c.0),
            "tz": completion.once_per.as_ref().and_then(|p| p.zone()).map(|z| z.name.as_str()),
            "once_id": completion.once_id,
            "last_run": last,
            "starts": starts,
        }),
    );
    status
}

/// What closed the try: `--once-id ID`, or `this --once-per 1h slot (from …)`.
fn closed_what(run: &Run<'_>, skip: &Skip) -> String {
    let completion = &run.config.policy.completion;
    match &completion.once_id {
        Some(id) => format!("--once-id {}", crate::report::shown(id)),
        None => match completion.once_per.as_ref() {
            Some(period @ Period::Calendar(..)) => {
                let (unit, zone) = period.calendar_words().unwrap_or_default();
                let from = period.show(skip.slot_ms);
                format!("this --once-per {unit} slot (from {from}, {zone})")
            }
            period => format!(
                "this --once-per {} slot (from {})",
                period.map_or(String::new(), |p| p.words()),
                rfc3339(skip.slot_ms)
            ),
        },
    }
}

/// Says why the try does not run (a line, or only with `--verbose`; see [`skipped`]):
/// the `skipped` event's reason and the run's status.
fn say_skipped(
    run: &Run<'_>,
    lease: &Lease,
    skip: &Skip,
    last: Option<&RunRecord>,
) -> (&'static str, u8) {
    let (report, busy) = (run.report, run.config.busy_code);
    let name = lease.keys().display_name();
    let slot = closed_what(run, skip);
    let described = last.map(RunRecord::describe).unwrap_or_default();
    match (skip.why, last) {
        // Said once for the fleet: by the try that marked the slot or ID told.
        (Closed::Exhausted { starts }, _) => {
            let line = format!(
                "{name}: {starts} runs started for {slot} and none succeeded (--max-attempts {}){}; not running",
                run.config.policy.completion.attempts(),
                last_attempt(skip, &name),
            );
            once_for_the_fleet(run, skip.told, line);
            ("attempts_exhausted", busy)
        }
        // A run-once ID that is done: every other run of it exits 0, saying who ran it.
        (Closed::Ran, _) if run.config.policy.completion.once_id.is_some() => {
            report.note(&format!(
                "{name}: {slot} already done: {described}; not running"
            ));
            ("already_done", 0)
        }
        (Closed::InProgress, _) => {
            report.verbose(|| {
                format!("{name}'s run of {slot} is in progress: {described}; not running")
            });
            ("in_progress", busy)
        }
        // Said once: by the try that marked the run told (see `vanished.rs`).
        (Closed::Ran, Some(last)) if last.vanished => {
            let line = format!(
                "{name} already ran in {slot}: {described}; not running; that run started at {} and its end was never recorded (its host may have died): check whether it did its work, or give --if-vanished rerun",
                rfc3339(last.start_ms)
            );
            once_for_the_fleet(run, skip.told, line);
            ("unfinished_run", busy)
        }
        (Closed::Ran, _) => {
            report.verbose(|| format!("{name} already ran in {slot}: {described}; not running"));
            ("already_ran", busy)
        }
        (Closed::SlotOver, _) => {
            report.verbose(|| format!("{slot} is over; not running"));
            ("slot_over", busy)
        }
        (Closed::Superseded | Closed::Outdated { .. }, _) => unreachable!("said by superseded"),
    }
}

/// A line the fleet says once (a vanished run, spent attempts): printed, whatever `-q`
/// says, by the try whose script marked it told (the fleet's one chance to say it);
/// every other try says it only with `--verbose`.
fn once_for_the_fleet(run: &Run<'_>, told: bool, line: String) {
    if told {
        run.report.tell(&line);
    } else {
        run.report.verbose(|| line);
    }
}

/// `--once-id`: where and when the ID's last attempt ran, from its start mark (`; the
/// last started 2026-11-22T06:00:01Z on ci-7 pid 4242 user deploy, see redlock history
/// NAME`); '' without one.
fn last_attempt(skip: &Skip, name: &str) -> String {
    match RunRecord::parse(&skip.record).filter(|r| r.start_ms > 0) {
        Some(r) => format!(
            "; the last started {} on {}, see redlock history {name}",
            rfc3339(r.start_ms),
            r.who.host_pid_user()
        ),
        None => String::new(),
    }
}

/// `--supersede`: a newer run made this one moot before it ran: it superseded this
/// waiting run, or (`--order-key`) a run with a larger key already started. One line,
/// the `skipped` event (reason `superseded` or `outdated`), exit 73.
fn superseded(run: &Run<'_>, lease: &Lease, skip: &Skip) -> u8 {
    let name = lease.keys().display_name();
    let own_key = run.config.policy.newest.and_then(|n| n.order_key);
    let fields = match skip.why {
        Closed::Outdated { high } => {
            run.report.note(&format!(
                "{name}: --order-key {} is older than {high}, which has already started (--supersede); not running (outdated); if this name's keys started again lower (another CI system or project, a reset counter), start the count again with: redlock forget {name}",
                own_key.unwrap_or_default()
            ));
            serde_json::json!({ "reason": "outdated", "order_key": own_key, "started_key": high })
        }
        _ => {
            let by: serde_json::Value = serde_json::from_slice(&skip.record).unwrap_or_default();
            let who = crate::holder::Who::deserialize(&by).unwrap_or_default();
            run.report.note(&format!(
                "{name}: superseded by a newer run ({}; --supersede); not running",
                who.host_pid_user()
            ));
            serde_json::json!({ "reason": "superseded", "by": by, "order_key": own_key })
        }
    };
    run.report.event(Event::Skipped, &name, fields);
    exit::Code::Superseded.value()
}

/// A signal that arrived while connecting or during the last acquire round ends the
/// run before the command starts, as it would have ended the wait.
pub(super) async fn interrupted_before_start(
    run: &mut Run<'_>,
    leases: &[Lease],
    acquired_at: Point,
) -> Step<()> {
    while let Ok(sig) = run.signals.try_recv() {
        if crate::signals::ends_wait(sig) {
            // The command never ran: whatever the release finds, nothing ran unlocked.
            for lease in leases {
                give_back(lease, acquired_at, run.report).await;
            }
            run.report.note(&format!(
                "interrupted by {sig} before the command started; nothing was run"
            ));
            return Err(End::Status(exit::from_signal(sig as i32)));
        }
    }
    Ok(())
}

/// `--once-per`, `--once-id`: records that the command starts, so that from now on the
/// run is an attempt (its slot closed by it even if it dies; one of its ID's starts),
/// with who runs it. A reply that does not come within the node timeout is asked for
/// again (the call counts a start once, however often it is made) as long as the lease
/// allows: a start Redis recorded late is still started. A lock found gone, a start
/// that cannot be recorded in time, or a signal meanwhile ends the run before the
/// command starts: released, nothing run, and the count taken back by the release
/// where the start was recorded after all (a signal is looked for between the tries
/// and once more after the start is recorded).
async fn record_start(
    run: &mut Run<'_>,
    leases: &[Lease],
    metas: &[Meta],
    (t_sent, acquired_at): (Point, Point),
) -> Step<()> {
    let recording = leases.iter().zip(metas).filter(|(l, _)| l.records_start());
    for (lease, meta) in recording {
        let failed = match mark_started(run, leases, (lease, meta), (t_sent, acquired_at)).await? {
            Ok(true) => continue,
            Ok(false) => Error::new(
                Kind::Lost,
                format!(
                    "lock {} lost before the command started; nothing was run",
                    lease.keys().display_name()
                ),
            ),
            Err(e) => e.context("recording the start; nothing was run"),
        };
        for lease in leases {
            give_back(lease, acquired_at, run.report).await;
        }
        return Err(failed.into());
    }
    Ok(())
}

/// `lease`'s start record, asked for again after a transient failure until the last
/// moment its lease allows (a signal meanwhile gives every name back and ends the run).
async fn mark_started(
    run: &mut Run<'_>,
    leases: &[Lease],
    (lease, meta): (&Lease, &Meta),
    (t_sent, acquired_at): (Point, Point),
) -> Step<crate::error::Result<bool>> {
    let budget = run.config.budget;
    let last_try = budget
        .term_at(budget.lease_end(t_sent))
        .saturating_sub(budget.node_timeout);
    let who = meta.started_json(
        lease.fence(),
        run.config.policy.completion.once_per.as_ref(),
    );
    let mut result = lease.mark_started(&who).await;
    while let Err(e) = &result
        && e.is_transient()
        && crate::clock::now() < last_try
    {
        run.report
            .verbose(|| format!("recording the start failed, asking again: {e}"));
        interrupted_before_start(run, leases, acquired_at).await?;
        result = lease.mark_started(&who).await;
    }
    Ok(result)
}

/// After the command: releases every name (each with its own record; the last key
/// first, see [`set::last_first`]), says so in the `exited` event and returns the
/// run's exit status: the command's, or the lost-lock (79) or `--max-hold` (124) code
/// when a name was lost (or given up) while it ran or found lost at the release. The
/// other names' records say which name ended the run.
pub(super) async fn finish(
    run: &Run<'_>,
    leases: &[Lease],
    metas: &[Meta],
    outcome: supervise::Outcome,
    acquired_at: Point,
) -> u8 {
    let code = child::exit_code(outcome.status);
    let ended = release::Ended::of(&outcome);
    let stopped = ended.stopped;
    let mut status = code;
    let all: Vec<usize> = (0..leases.len()).collect();
    for i in set::last_first(leases, &all) {
        let ended_by = set::ended_by(&leases[i], leases, outcome.lost_name.as_deref());
        let released = release::release_after(
            &run.config,
            (&leases[i], ended_by),
            &metas[i],
            ended.clone(),
            code,
            acquired_at,
            run.report,
        );
        let said = released.await;
        if status == code {
            status = said;
        }
    }
    let with = &metas[0].with;
    exited(run, &leases[0], (code, status, stopped), acquired_at, with);
    status
}

/// Says the run ended: the `exited` event, with the command's status and the run's
/// (`code`, `status`), whether a signal to the wrapper ended it (`stopped`), and the
/// other names of a run that held several (`with`).
pub(super) fn exited(
    run: &Run<'_>,
    lease: &Lease,
    (code, status, stopped): (u8, u8, bool),
    acquired_at: Point,
    with: &[String],
) {
    let mut fields = serde_json::json!({
        "command_status": code,
        "status": status,
        "held_ms": crate::clock::now().saturating_sub(acquired_at).as_millis() as u64,
        "fence": lease.fence(),
    });
    if stopped {
        fields["stopped"] = true.into();
    }
    if !with.is_empty() {
        fields["with"] = with.into();
    }
    run.report
        .event(Event::Exited, &lease.keys().display_name(), fields);
}

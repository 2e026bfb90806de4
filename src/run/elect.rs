//! `--elect`: a hot standby. The run is a loop of terms: wait for the lock for as long
//! as it takes (wake-one, this host's queue as for any run), run the command while it
//! is held, and when the term ends go back to waiting. A term ends when the lock is
//! lost (the supervisor stopped the command before the lease could end elsewhere, as
//! for any lost lock), when the command exits by itself (`--on-exit`), or when the
//! wrapper is told to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT: the command is stopped,
//! the lock released, the next standby woken, and the wrapper exits). Each term is a
//! new acquisition: a new token, a new fencing number, its own history record.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::term;
use super::{End, Run, Step};
use crate::clock;
use crate::events::Event;
use crate::exit;
use crate::lease::{Lease, Lost, Renew};
use crate::policy::{Elect, OnExit};
use crate::report::human;
use crate::supervise::Outcome;
use crate::timing::{self, Point};
use crate::wait::{Head, Patience};

/// How a term ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deposed {
    /// The lock was lost, given up (`--max-hold`) or asked for (`redlock preempt`).
    Lost,
    /// The command exited by itself while it led.
    Exited,
    /// The wrapper was told to stop.
    Signalled(Signal),
}

impl Deposed {
    fn reason(self) -> &'static str {
        match self {
            Deposed::Lost => "lost",
            Deposed::Exited => "exited",
            Deposed::Signalled(_) => "signal",
        }
    }
}

/// What the wrapper does after a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Contends again.
    StandBy,
    /// Exits, because of this flag (empty: a signal).
    Exit(&'static str),
}

/// The loop of terms; the exit status of the last.
pub(super) async fn elect(run: &mut Run<'_>, first: Lease, head: Option<Head>) -> Step<u8> {
    let elect = run.config.policy.elect.clone().unwrap_or_default();
    // A copy starts standing by: a file a killed leader left saying it leads is settled.
    if let Some(metrics) = &run.report.metrics
        && let Err(e) = metrics.settle()
    {
        run.report.metrics_failed(metrics, &e);
    }
    let mut lease = first;
    let mut head = head;
    let (mut terms, mut failures) = (0u32, 0u32);
    loop {
        match one_term(run, &mut lease, head.take(), elect.on_exit).await {
            Ok((status, deposed)) => {
                terms += 1;
                failures = 0;
                // What comes next is decided before the line that says it: the last
                // term does not say "standing by" (review-5 §8).
                let next = after_term(&elect, deposed, terms);
                said_deposed(run, &lease, status, deposed, next);
                if next != Next::StandBy {
                    return Ok(status);
                }
                if deposed == Deposed::Exited {
                    let pause = timing::resign_backoff(run.config.budget.renew_every);
                    run.report.verbose(|| {
                        format!(
                            "the command exited {status}; resigned, contending again in {}",
                            human(pause)
                        )
                    });
                    stand_aside(run, pause).await?;
                }
            }
            // A standby outlives what may heal (a read-only replica or a full server
            // during a failover, an answer it cannot read): it says so and tries again.
            Err(End::Failed(e)) if e.heals_with_time() => {
                let pause = timing::restart_backoff(failures);
                failures += 1;
                run.report.note(&format!(
                    "{}: {e}; standing by, contending again in {}",
                    lease.keys().display_name(),
                    human(pause)
                ));
                stand_aside(run, pause).await?;
            }
            Err(end) => return Err(end),
        }
        lease = lease.next_term();
        run.patience = Patience::new(run.config.wait);
        run.started = clock::now();
        head = run.queue_locally().await?;
    }
}

/// What follows a term that ended as `deposed`, the `terms`-th: exit (on a stop
/// signal, `--on-exit exit` after the command exited, `--elect-max-terms`) or stand by.
fn after_term(elect: &Elect, deposed: Deposed, terms: u32) -> Next {
    if matches!(deposed, Deposed::Signalled(_)) {
        Next::Exit("")
    } else if deposed == Deposed::Exited && elect.on_exit == OnExit::Exit {
        Next::Exit("--on-exit exit")
    } else if elect.max_terms == Some(terms) {
        Next::Exit("--elect-max-terms")
    } else {
        Next::StandBy
    }
}

/// One term: take the lock, run the command (again, with `--on-exit restart`), release;
/// its status and how it ended.
async fn one_term(
    run: &mut Run<'_>,
    lease: &mut Lease,
    head: Option<Head>,
    on_exit: OnExit,
) -> Step<(u8, Deposed)> {
    let leases = std::slice::from_mut(lease);
    let mut taken = term::begin(run, leases, head).await?;
    let lease = &leases[0];
    said_elected(run, lease);
    let mut t_sent = taken.renewed;
    let mut guard = taken.guard.take();
    let mut restarts = 0u32;
    let (outcome, deposed) = loop {
        let started = clock::now();
        let outcome = term::command(
            run,
            std::slice::from_ref(lease),
            &taken,
            t_sent,
            guard.take(),
        )
        .await?;
        let deposed = Deposed::of(&outcome);
        let (Deposed::Exited, OnExit::Restart, Some(renewed_at)) =
            (deposed, on_exit, outcome.renewed_at)
        else {
            break (outcome, deposed);
        };
        let pause = restart_pause(&mut restarts, started);
        match restart(run, lease, outcome, renewed_at, pause).await {
            Restart::Again(renewed) => t_sent = renewed,
            Restart::Ended(outcome, deposed) => break (outcome, deposed),
        }
    };
    let between_runs = outcome.signalled.is_none();
    let leases = std::slice::from_ref(lease);
    let status = term::finish(run, leases, &taken.metas, outcome, taken.acquired_at).await;
    Ok(term_end(status, deposed, between_runs))
}

impl Deposed {
    /// How the command's run ended the term, before `--on-exit` is applied.
    fn of(outcome: &Outcome) -> Deposed {
        match (&outcome.lost, outcome.signalled) {
            (Some(_), _) => Deposed::Lost,
            (None, Some(sig)) => Deposed::Signalled(sig),
            (None, None) => Deposed::Exited,
        }
    }
}

/// The pause before the next restart: backing off while the command keeps failing
/// fast, from the start again once a run lasted [`timing::RESTART_SETTLED`].
fn restart_pause(restarts: &mut u32, started: Point) -> Duration {
    if clock::now().saturating_sub(started) >= timing::RESTART_SETTLED {
        *restarts = 0;
    }
    let pause = timing::restart_backoff(*restarts);
    *restarts += 1;
    pause
}

/// What a restart's pause came to.
enum Restart {
    /// The lock is still held (renewed then): run the command again.
    Again(Point),
    /// The pause ended the term: lost, or a signal.
    Ended(Outcome, Deposed),
}

/// `--on-exit restart`: says so and keeps the lock through `pause`.
async fn restart(
    run: &mut Run<'_>,
    lease: &Lease,
    outcome: Outcome,
    renewed_at: Point,
    pause: Duration,
) -> Restart {
    say_restart(run, lease, &outcome, pause);
    match keep_through(run, lease, renewed_at, pause).await {
        Kept::Held(renewed) => Restart::Again(renewed),
        Kept::Lost(why) => {
            run.report.error(&format!(
                "lock {} lost while the command waited to restart: {why}",
                lease.keys().display_name()
            ));
            let lost = Outcome {
                lost: Some(why),
                lease_end: None,
                renewed_at: None,
                ..outcome
            };
            Restart::Ended(lost, Deposed::Lost)
        }
        Kept::Signalled(sig) => Restart::Ended(outcome, Deposed::Signalled(sig)),
    }
}

/// The term's status and how it ended, once released: a release that found the key no
/// longer ours means the term was lost; a signal between two runs of the command ends
/// the wrapper as it ends a wait (128+N).
fn term_end(status: u8, deposed: Deposed, between_runs: bool) -> (u8, Deposed) {
    match deposed {
        Deposed::Exited if status == exit::Code::Lost.value() => (status, Deposed::Lost),
        Deposed::Signalled(sig) if between_runs => (exit::from_signal(sig as i32), deposed),
        other => (status, other),
    }
}

/// What holding the lock through a restart's pause came to.
enum Kept {
    /// Still held: the last renewal was sent then.
    Held(Point),
    Lost(Lost),
    Signalled(Signal),
}

/// Keeps the lease for `pause` while no command runs (`--on-exit restart`), renewing it
/// on the supervisor's schedule; a signal that ends the run ends the pause.
async fn keep_through(run: &mut Run<'_>, lease: &Lease, t_sent: Point, pause: Duration) -> Kept {
    let budget = run.config.budget;
    let until = clock::now() + pause;
    let (mut t_sent, mut last_attempt) = (t_sent, None);
    loop {
        let now = clock::now();
        let end = budget.lease_end(t_sent);
        if now >= budget.term_at(end) {
            return Kept::Lost(Lost::Expiring { last_error: None });
        }
        let next = budget.next_renew(t_sent, last_attempt);
        if now >= next {
            last_attempt = Some(now);
            match lease.renew().await {
                Renew::Renewed { t_sent: sent } => t_sent = sent,
                Renew::Preempt { request, .. } => return Kept::Lost(Lost::Preempted(request)),
                Renew::Lost(why) => return Kept::Lost(why),
                Renew::Unknown(_) => {}
            }
            continue;
        }
        if now >= until {
            return Kept::Held(t_sent);
        }
        let wake = next.min(until).min(budget.term_at(end));
        tokio::select! {
            Some(sig) = run.signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Kept::Signalled(sig);
                }
            }
            _ = tokio::time::sleep(clock::sleep_for(wake)) => {}
        }
    }
}

/// `--on-exit resign`: waits `pause` before contending again, so that a standby takes
/// the lock; a signal ends the run here (nothing runs).
async fn stand_aside(run: &mut Run<'_>, pause: Duration) -> Step<()> {
    let until = clock::now() + pause;
    while clock::now() < until {
        tokio::select! {
            Some(sig) = run.signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    run.report.note(&format!("interrupted by {sig} while standing aside; nothing is running"));
                    return Err(End::Status(exit::from_signal(sig as i32)));
                }
            }
            _ = tokio::time::sleep(clock::sleep_for(until)) => {}
        }
    }
    Ok(())
}

/// One line per restart (a crash loop must show in the journal), and the restart's
/// `exited` facts in the events.
fn say_restart(run: &Run<'_>, lease: &Lease, outcome: &Outcome, pause: Duration) {
    let code = crate::child::exit_code(outcome.status);
    run.report.note(&format!(
        "{}: the command exited {code}; restarting it in {} (--on-exit restart), keeping the lock",
        lease.keys().display_name(),
        human(pause)
    ));
}

/// The `elected` event, and a line (a standby's journal says each term, not each
/// minute it waited).
fn said_elected(run: &Run<'_>, lease: &Lease) {
    let name = lease.keys().display_name();
    run.report.event(
        Event::Elected,
        &name,
        serde_json::json!({ "term": lease.fence(), "token": &lease.token()[..8] }),
    );
    run.report
        .note(&format!("{name}: leading (term {})", lease.fence()));
}

/// The `deposed` event, and a line unless the wrapper was told to stop: what comes
/// next, standing by or exiting (and why).
fn said_deposed(run: &Run<'_>, lease: &Lease, status: u8, deposed: Deposed, next: Next) {
    let name = lease.keys().display_name();
    run.report.event(
        Event::Deposed,
        &name,
        serde_json::json!({ "term": lease.fence(), "reason": deposed.reason(), "status": status }),
    );
    let then = match next {
        Next::StandBy => "standing by".to_string(),
        Next::Exit("") => return,
        Next::Exit(flag) => format!("exiting ({flag})"),
    };
    run.report.note(&format!(
        "{name}: term {} ended ({}, status {status}); {then}",
        lease.fence(),
        deposed.reason()
    ));
}

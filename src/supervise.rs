//! The one supervisor loop: it owns the running command, the lease, the signals and the
//! timers, and returns how the run ended. Renewal, the lost-lock deadline, the
//! SIGTERM/SIGKILL schedule and signal forwarding are branches of one `select!`, not
//! threads sharing state; what the loop knows of the lease is one [`LeaseState`].
//!
//! Each turn first acts on the clock ([`Supervisor::tick`]: give the lease up when the
//! SIGTERM point has come, send SIGKILL when its time has come, start a renewal when one
//! is due) and learns when it must next wake; then it waits for the first of: the
//! command's exit, a signal, the renewal's answer, that wake-up.
//!
//! Deadlines come from [`crate::timing::Budget`] on the suspend-aware clock; the loop
//! never sleeps longer than [`crate::clock::MAX_SLEEP`], so after a suspend or a pause
//! of the wrapper it re-reads the clock and acts at once (kills first, asks later).
//! The group guard (`guard.rs`) covers the cases the loop cannot: the wrapper itself
//! killed, stopped, hung or starved. The loop tells it the lease's SIGTERM and SIGKILL
//! points when the command starts and after each renewal; past them without news, the
//! guard stops the group itself. A wrapper that runs again after such a pause finds the
//! SIGTERM point behind it and says it was stopped ([`crate::timing::paused_past`]).

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::child::{ProcessGroup, Started};
use crate::cli::OnLost;
use crate::clock;
use crate::error::Error;
use crate::events::Event;
use crate::guard::GroupGuard;
use crate::lease::{Lease, Lost, Preempt, Renew};
use crate::policy::Stop;
use crate::redis::Note;
use crate::report::{Reporter, human};
use crate::timing::{Budget, Point};

/// A lease the supervisor keeps alive.
pub struct Held<'a> {
    pub lease: &'a Lease,
    /// The other names of a run that holds several: renewed with `lease`, each its own
    /// lease; losing any one is losing the lock.
    pub also: &'a [Lease],
    pub budget: Budget,
    pub on_lost: OnLost,
    /// When the last successful acquire/renew request was sent.
    pub t_sent: Point,
    /// `--max-hold`: when the lock must be given up, whatever the renewals.
    pub give_up_at: Option<Point>,
    /// How the run stops when asked to for a newer run (`--uninterruptible`,
    /// `--preempt-signal`). Every name whose kind can be asked (see
    /// [`Lease::can_be_asked`]) is listened on between renewals ([`Lease::listen`]),
    /// rather than its request found at its next renewal only.
    pub stop: Stop,
    /// `--ready-file`: removed before the command is stopped.
    pub ready_file: Option<&'a std::path::Path>,
}

/// How the run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    /// Why the lock was lost, if it was.
    pub lost: Option<Lost>,
    /// The name it was lost (preempted, given up) by: one name of a run that holds
    /// several, or all of them (`A, B`) for `--max-hold` or a stopped wrapper.
    pub lost_name: Option<String>,
    /// When the lease ends if it is still held (no renewal runs after the command).
    pub lease_end: Option<Point>,
    /// When the last successful request for the lease was sent, if it is still held.
    pub renewed_at: Option<Point>,
    /// The signal to the wrapper that ended the command (INT, TERM, HUP, QUIT), if one
    /// was forwarded.
    pub signalled: Option<Signal>,
}

/// The terminal's stop key that ended a command handed the terminal: Ctrl-C (INT) and
/// `Ctrl-\` (QUIT) reach the command's group from the kernel and never the wrapper (the
/// rule in `signals.rs`), so a job that died of one of them was stopped at the
/// terminal, as a `kill -INT` of the wrapper would have stopped it (issue 60). Only a
/// death by the signal counts: a command that caught it and chose its own status
/// (`trap 'exit 0' INT`) ended as it chose.
fn stopped_at_the_terminal(started: &Started, status: ExitStatus) -> Option<Signal> {
    use std::os::unix::process::ExitStatusExt;
    let sig = Signal::try_from(status.signal()?).ok()?;
    (started.is_job() && matches!(sig, Signal::SIGINT | Signal::SIGQUIT)).then_some(sig)
}

/// A renewal round of every held name: its answer, and the name it is about (the one
/// lost or failed, else the first).
type RenewFuture<'a> = Pin<Box<dyn Future<Output = (Renew, String)> + 'a>>;
/// A wait for a request to stop on every name that listens: the request and the name
/// it came for.
type RequestFuture<'a> = Pin<Box<dyn Future<Output = Option<(Preempt, String)>> + 'a>>;

/// The lease as the loop sees it.
enum LeaseState<'a> {
    /// No lease to keep (a re-entrant run: the enclosing run keeps it).
    Unleased,
    /// Held, renewed on schedule.
    Held {
        /// When the last successful request was sent (the lease end follows from it).
        t_sent: Point,
        last_attempt: Option<Point>,
        /// Why the last renewal failed, until one succeeds.
        last_failure: Option<Error>,
        renewing: Option<RenewFuture<'a>>,
    },
    /// Lost: the command got SIGTERM and gets SIGKILL at `kill_at`.
    Stopping {
        why: Lost,
        kill_at: Point,
        killed: bool,
    },
    /// Lost, and the command runs on without the lock (`--on-lost keep`).
    Lost { why: Lost },
}

/// The loop's state besides the child and the signals.
struct Supervisor<'a> {
    lease: Option<(&'a Lease, Budget, OnLost)>,
    /// The other names of a run that holds several.
    also: &'a [Lease],
    /// `--max-hold`: when to give the lock up, and the limit (for the message).
    give_up: Option<(Point, Duration)>,
    state: LeaseState<'a>,
    group: ProcessGroup,
    report: &'a Reporter,
    stop: Stop,
    /// Whether the run waits for a request to stop between renewals on the names whose
    /// kind can be asked (the loop keeps the wait in flight: one per renewal period,
    /// see [`Supervisor::listen`]); not `--uninterruptible`.
    listens: bool,
    /// Not before this point ([`crate::timing::LISTEN_AFTER`] after the start).
    listen_from: Point,
    /// `--ready-file`, until it is removed.
    ready: Option<&'a std::path::Path>,
    /// The last ending signal forwarded to the command.
    signalled: Option<Signal>,
    /// The group guard, told the lease after each renewal.
    guard: Option<&'a GroupGuard>,
    /// When the loop last acted on the clock: a longer gap than it ever sleeps means
    /// the wrapper was stopped or starved meanwhile.
    last_turn: Point,
    /// The name whose renewal failed last, until a round renews every name: the one a
    /// lease that runs out is lost by.
    failing: Option<String>,
    /// The name the lock was lost, preempted or given up by (a run of several names:
    /// the others' records say they ended with it).
    lost_name: Option<String>,
}

/// Supervises `started` until it exits; with `held`, keeps the lease alive or stops the
/// command's process group before the lease can end.
pub async fn supervise(
    mut started: Started,
    held: Option<Held<'_>>,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
    guard: Option<&GroupGuard>,
) -> Outcome {
    let mut sup = Supervisor::new(held, started.group, report, guard);
    let mut listening: Option<RequestFuture<'_>> = None;
    let mut children = job_control_signals(&mut sup, &started);
    let status = loop {
        let nap = clock::sleep_for(sup.tick(clock::now()));
        if listening.is_none() {
            listening = sup.listen(clock::now());
        }
        tokio::select! {
            status = started.child.wait() => break status,
            Some(sig) = signals.recv() => sup.forward(sig),
            renew = sup.renewal(), if sup.is_renewing() => sup.renewed(renew),
            request = next_request(&mut listening), if listening.is_some() => {
                listening = None;
                if let Some((request, name)) = request {
                    sup.asked_to_stop(request, name);
                }
            }
            Some(()) = next(&mut children) => sup.job_control(&started),
            _ = tokio::time::sleep(nap) => {}
        }
    };
    started.group.leader_exited();
    // The release goes through the node's own connection, not behind a pending pop.
    drop(listening);
    if let Some((lease, _, _)) = sup.lease {
        lease.unhold();
        sup.also.iter().for_each(|l| l.unhold());
    }
    sup.overdue(clock::now());
    sup.unready();
    started.restore_terminal();
    if status.is_ok() {
        let kill_at = sup.stragglers_kill_at(clock::now());
        started.group.stop_stragglers(kill_at).await;
    }
    let status = status.unwrap_or_else(|_| {
        std::os::unix::process::ExitStatusExt::from_raw(crate::exit::Code::Internal.value() as i32)
    });
    Outcome {
        status,
        lease_end: sup.lease_end(),
        renewed_at: sup.renewed_at(),
        signalled: sup
            .signalled
            .or_else(|| stopped_at_the_terminal(&started, status)),
        lost_name: sup.lost_name.clone(),
        lost: sup.into_lost(),
    }
}

/// Tells what the lease's nodes did on their own since the last call (see
/// `redis::Note`): a master followed (a Sentinel switchover or failover: one line, and
/// the `followed` event), a grant or renewal no replica acknowledged (a warning, once
/// per master, and the `unacknowledged` event). `holds`: what the call after the
/// follow found, when known (a renewal or release there: the lock held, or not).
pub fn tell_notes(report: &Reporter, lease: &Lease, holds: Option<bool>) {
    let name = lease.keys().display_name();
    for (url, note) in lease.take_notes() {
        match note {
            Note::Followed { from, to } => {
                let there = match holds {
                    Some(true) => "; the lock holds there",
                    Some(false) => "; the lock is not there",
                    None => "",
                };
                report.note(&format!(
                    "lock {name}: followed a switchover or failover of {url}: the master moved from {from} to {to}{there}"
                ));
                let fields = serde_json::json!({ "from": from, "to": to, "holds": holds });
                report.event(Event::Followed, &name, fields);
            }
            Note::Unacknowledged { grant, within, why } => {
                let what = if grant { "grant" } else { "renewal" };
                let why = why
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default();
                report.warn(&format!(
                    "lock {name}: the {what} was not acknowledged by a replica of {url} within {}{why}; a crash failover now could lose the lock",
                    human(within)
                ));
                let fields = serde_json::json!({
                    "what": what,
                    "within_ms": within.as_millis() as u64,
                });
                report.event(Event::Unacknowledged, &name, fields);
            }
        }
    }
}

/// One renewal round of `lease` and of the other names held with it, sent together:
/// the first name lost decides, then a request to stop, then a failure (the lock may
/// still be ours until the lease end); when all renewed, the earliest send (the set's
/// lease ends with its earliest member's). The answer names the name it is about.
async fn renew_all(lease: &Lease, also: &[Lease]) -> (Renew, String) {
    let name = |l: &Lease| l.keys().display_name();
    if also.is_empty() {
        return (lease.renew().await, name(lease));
    }
    let all = std::iter::once(lease).chain(also);
    let answers = futures_util::future::join_all(all.map(|l| async move { (l.renew().await, l) }));
    let mut answers = answers.await;
    let rank = |r: &Renew| match r {
        Renew::Lost(_) => 0,
        Renew::Preempt { .. } => 1,
        Renew::Unknown(_) => 2,
        Renew::Renewed { .. } => 3,
    };
    let earliest = answers
        .iter()
        .filter_map(|answer| match &answer.0 {
            Renew::Renewed { t_sent } => Some(*t_sent),
            _ => None,
        })
        .min();
    answers.sort_by_key(|(r, _)| rank(r));
    let (first, l) = answers.swap_remove(0);
    match first {
        Renew::Renewed { .. } => (
            Renew::Renewed {
                t_sent: earliest.unwrap_or_else(clock::now),
            },
            name(lease),
        ),
        other => (other, name(l)),
    }
}

/// The one name of `names`, if there is only one (what ended a run of several names).
fn one_of(names: &[String]) -> Option<String> {
    match names {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The wait for a request to stop in flight: the request, `None` when it ended without
/// one; never without a wait.
async fn next_request(listening: &mut Option<RequestFuture<'_>>) -> Option<(Preempt, String)> {
    match listening {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// Job control: SIGCHLD tells that the command may have been stopped (Ctrl-Z); `None`
/// when the command is not a job on a terminal. A command stopped before the stream
/// listened (in its first milliseconds: its SIGCHLD came before) is looked for once now.
fn job_control_signals(
    sup: &mut Supervisor<'_>,
    started: &Started,
) -> Option<tokio::signal::unix::Signal> {
    if !started.is_job() {
        return None;
    }
    let children = signal(SignalKind::child()).ok()?;
    sup.job_control(started);
    Some(children)
}

/// The next SIGCHLD, or never without a stream.
async fn next(children: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match children {
        Some(stream) => stream.recv().await,
        None => std::future::pending().await,
    }
}

impl<'a> Supervisor<'a> {
    fn new(
        held: Option<Held<'a>>,
        group: ProcessGroup,
        report: &'a Reporter,
        guard: Option<&'a GroupGuard>,
    ) -> Self {
        let state = match &held {
            Some(h) => LeaseState::Held {
                t_sent: h.t_sent,
                last_attempt: None,
                last_failure: None,
                renewing: None,
            },
            None => LeaseState::Unleased,
        };
        let give_up = held
            .as_ref()
            .and_then(|h| h.give_up_at.map(|at| (at, at.saturating_sub(h.t_sent))));
        let stop = held.as_ref().map(|h| h.stop).unwrap_or_default();
        let listens = held.as_ref().is_some_and(|h| !h.stop.uninterruptible);
        let ready = held.as_ref().and_then(|h| h.ready_file);
        // `--on-lost keep` runs on without the lock by choice: no deadline for the guard.
        let guard = guard.filter(|_| held.as_ref().is_some_and(|h| h.on_lost == OnLost::Kill));
        let also = held.as_ref().map_or(&[][..], |h| h.also);
        let sup = Supervisor {
            also,
            ready,
            signalled: None,
            guard,
            last_turn: clock::now(),
            failing: None,
            lost_name: None,
            give_up,
            lease: held.map(|h| (h.lease, h.budget, h.on_lost)),
            state,
            group,
            report,
            stop,
            listens,
            listen_from: clock::now() + crate::timing::LISTEN_AFTER,
        };
        sup.tell_guard();
        sup
    }

    /// A wait for a request to stop, while the lease is held and no renewal is in
    /// flight: until shortly before the next renewal is due, so the renewal never
    /// queues behind it ([`crate::timing::listen_until`]). The wait is only an extra
    /// branch of the loop: the renewals, the SIGTERM and SIGKILL points are the
    /// clock's, whatever the wait does (a hung pop delays none of them).
    fn listen(&self, now: Point) -> Option<RequestFuture<'a>> {
        let (lease, budget, _) = self
            .lease
            .filter(|_| self.listens && now >= self.listen_from)?;
        let LeaseState::Held {
            t_sent,
            last_attempt,
            renewing: None,
            ..
        } = &self.state
        else {
            return None;
        };
        let until = crate::timing::listen_until(now, budget.next_renew(*t_sent, *last_attempt))?;
        let asked: Vec<&Lease> = std::iter::once(lease)
            .chain(self.also)
            .filter(|l| l.can_be_asked())
            .collect();
        let (first, others) = asked.split_first()?;
        let (first, others) = (*first, others.to_vec());
        // One wait over every name that can be asked: the first request on any of them.
        Some(Box::pin(async move {
            let (which, request) = first.listen(until, &others).await?;
            let name = if which == 0 { first } else { others[which - 1] };
            Some((request, name.keys().display_name()))
        }))
    }

    /// Tells the guard the lease's SIGTERM and SIGKILL points as they now stand.
    fn tell_guard(&self) {
        if let (Some(guard), Some((_, budget, _)), LeaseState::Held { t_sent, .. }) =
            (self.guard, self.lease, &self.state)
        {
            let end = budget.lease_end(*t_sent);
            let stop_at = crate::timing::guard_term_at(budget.term_at(end), budget.kill_after);
            guard.hold_until(stop_at, budget.kill_at(end), Signal::SIGTERM);
        }
    }

    /// Why the lease ran out unrenewed: the wrapper itself stopped (or starved) past
    /// the SIGTERM point, when the gap since the loop last ran says so; else renewals
    /// that failed.
    fn why_expiring(&self, now: Point, term_at: Point, last_error: Option<Error>) -> Lost {
        match crate::timing::paused_past(self.last_turn, now, term_at) {
            Some(for_) => Lost::Paused { for_ },
            None => Lost::Expiring { last_error },
        }
    }

    /// After the command exited: a lease whose SIGTERM point passed meanwhile (the
    /// wrapper stopped while its guard stopped the command) is lost, said once; the
    /// group is not signalled again (its leader is reaped).
    fn overdue(&mut self, now: Point) {
        let Some((_, budget, _)) = self.lease else {
            return;
        };
        let LeaseState::Held {
            t_sent,
            last_failure,
            ..
        } = &mut self.state
        else {
            return;
        };
        let term_at = budget.term_at(budget.lease_end(*t_sent));
        if now < term_at {
            return;
        }
        let last_error = last_failure.take();
        let why = self.why_expiring(now, term_at, last_error);
        let names = self.expiring_names();
        self.lost_name = one_of(&names);
        for name in &names {
            let fields = serde_json::json!({ "reason": why.to_string(), "on_lost": "kill", "max_hold": false });
            self.report.event(Event::Lost, name, fields);
        }
        let name = names.join(", ");
        self.report
            .error(&format!("lock {name} lost: {why}; the command has ended"));
        self.state = LeaseState::Stopping {
            why,
            kill_at: now,
            killed: true,
        };
    }

    /// Acts on the clock at `now`; returns when the loop must wake next.
    fn tick(&mut self, now: Point) -> Point {
        let wake = now + clock::MAX_SLEEP;
        let Some((lease, budget, _)) = self.lease else {
            return wake;
        };
        // Past --max-hold, or past the SIGTERM point without a successful renewal: the
        // lease is given up (and the SIGKILL below may be due at once).
        if let LeaseState::Held {
            t_sent,
            last_failure,
            ..
        } = &mut self.state
        {
            let end = budget.lease_end(*t_sent);
            if let Some((_, limit)) = self.give_up.filter(|(at, _)| now >= *at) {
                self.lose(Lost::MaxHold { limit }, now, end, self.every_name());
            } else if now >= budget.term_at(end) {
                let last_error = last_failure.take();
                let why = self.why_expiring(now, budget.term_at(end), last_error);
                self.lose(why, now, end, self.expiring_names());
            }
        }
        self.last_turn = now;
        match &mut self.state {
            LeaseState::Held {
                t_sent,
                last_attempt,
                renewing,
                ..
            } => {
                let next = budget.next_renew(*t_sent, *last_attempt);
                if renewing.is_none() && now >= next {
                    *last_attempt = Some(now);
                    *renewing = Some(Box::pin(renew_all(lease, self.also)));
                }
                let wake = wake.min(budget.term_at(budget.lease_end(*t_sent)));
                let wake = self.give_up.map_or(wake, |(at, _)| wake.min(at));
                if renewing.is_none() {
                    wake.min(next)
                } else {
                    wake
                }
            }
            LeaseState::Stopping {
                kill_at, killed, ..
            } if !*killed => {
                if now >= *kill_at {
                    self.group.signal(Signal::SIGKILL);
                    *killed = true;
                    wake
                } else {
                    wake.min(*kill_at)
                }
            }
            _ => wake,
        }
    }

    /// When whatever the command left in its group gets SIGKILL, once the command
    /// itself has exited: `--kill-after` from now, but never later than the lease's own
    /// SIGKILL point (nothing renews the lease meanwhile) or the SIGKILL already planned
    /// for a lost lock — a leader that handles SIGTERM and exits late must not buy its
    /// group a new countdown past the lease's end.
    fn stragglers_kill_at(&self, now: Point) -> Point {
        let Some((_, budget, _)) = self.lease else {
            // A re-entrant run: the enclosing run keeps the lease.
            return now + Duration::from_secs(5);
        };
        match &self.state {
            LeaseState::Held { t_sent, .. } => {
                let lease_kill = budget.kill_at(budget.lease_end(*t_sent));
                (now + budget.kill_after).min(lease_kill.max(now))
            }
            LeaseState::Stopping {
                kill_at, killed, ..
            } => {
                if *killed {
                    now
                } else {
                    (*kill_at).max(now)
                }
            }
            LeaseState::Lost { .. } | LeaseState::Unleased => now + budget.kill_after,
        }
    }

    /// The command was stopped by job control (Ctrl-Z): the wrapper stops too, so the
    /// shell gets its prompt back; on `fg` the command is continued, unless the lease
    /// ran out meanwhile (nothing renews it while the job is stopped): then the lock is
    /// lost and the command is stopped for good.
    fn job_control(&mut self, started: &Started) {
        let Some(sig) = started.stopped_by() else {
            return;
        };
        self.report
            .verbose(|| format!("the command was stopped ({sig}); stopping the job"));
        let stopped_at = clock::now();
        started.stop_as_job(sig);
        let now = clock::now();
        if let (Some((_, budget, _)), LeaseState::Held { t_sent, .. }) = (self.lease, &self.state) {
            let end = budget.lease_end(*t_sent);
            if now >= budget.term_at(end) {
                let why = Lost::Stopped {
                    for_: now.saturating_sub(stopped_at),
                };
                self.lose(why, now, end, self.every_name());
                if matches!(self.state, LeaseState::Stopping { .. }) {
                    return;
                }
            }
        }
        started.resume();
    }

    /// A signal sent to the wrapper goes to the command's whole group, once; one that
    /// ends the command (INT, TERM, HUP, QUIT) is remembered, and the ready file goes
    /// first.
    fn forward(&mut self, sig: Signal) {
        self.report
            .verbose(|| format!("forwarding {sig} to the command"));
        if crate::signals::ends_wait(sig) {
            self.signalled = Some(sig);
            self.unready();
        }
        self.group.signal(sig);
    }

    /// Removes the `--ready-file`, once.
    fn unready(&mut self) {
        if let Some(path) = self.ready.take() {
            crate::ready::remove(path);
        }
    }

    fn is_renewing(&self) -> bool {
        matches!(
            self.state,
            LeaseState::Held {
                renewing: Some(_),
                ..
            }
        )
    }

    /// The renewal in flight (guarded by [`Self::is_renewing`]).
    async fn renewal(&mut self) -> (Renew, String) {
        match &mut self.state {
            LeaseState::Held {
                renewing: Some(renewing),
                ..
            } => renewing.await,
            _ => std::future::pending().await,
        }
    }

    /// A request to stop for a newer run: the command is stopped as for a lost lock,
    /// with the request's signal or `--preempt-signal`, and the run ends preempted (an
    /// `--uninterruptible` run notes it and runs on: the scripts refuse such requests,
    /// so one can only come from outside).
    fn asked_to_stop(&mut self, request: Preempt, name: String) {
        if self.stop.uninterruptible {
            self.report.verbose(|| {
                format!(
                    "ignoring a request to stop from {} (--uninterruptible)",
                    request.by
                )
            });
            return;
        }
        if let LeaseState::Held { t_sent, .. } = &self.state
            && let Some((_, budget, _)) = self.lease
        {
            let end = budget.lease_end(*t_sent);
            self.lose(Lost::Preempted(request), clock::now(), end, vec![name]);
        }
    }

    /// What the nodes did during a renewal round (see [`tell_notes`]), before its
    /// answer is applied (a followed master, then the renewal there).
    fn tell_notes(&self, renew: &Renew) {
        let Some((lease, _, _)) = self.lease else {
            return;
        };
        let holds = match renew {
            Renew::Renewed { .. } | Renew::Preempt { .. } => Some(true),
            Renew::Lost(_) => Some(false),
            Renew::Unknown(_) => None,
        };
        for held in std::iter::once(lease).chain(self.also) {
            tell_notes(self.report, held, holds);
        }
    }

    /// Applies a renewal's answer about the name `about`.
    fn renewed(&mut self, (renew, about): (Renew, String)) {
        self.tell_notes(&renew);
        let LeaseState::Held {
            t_sent,
            last_failure,
            renewing,
            ..
        } = &mut self.state
        else {
            return;
        };
        *renewing = None;
        // A renewal answered past the SIGTERM point comes too late: the guard may have
        // stopped the command already, and the loop gives the lease up at its next turn.
        if let Some((_, budget, _)) = self.lease
            && matches!(renew, Renew::Renewed { .. } | Renew::Preempt { .. })
            && clock::now() >= budget.term_at(budget.lease_end(*t_sent))
        {
            return;
        }
        match renew {
            Renew::Renewed { t_sent: sent } => {
                *t_sent = sent;
                *last_failure = None;
                self.failing = None;
                self.tell_guard();
                self.report.verbose(|| "lock renewed".to_string());
                if let Some((lease, _, _)) = self.lease {
                    let name = lease.keys().display_name();
                    self.report
                        .event(Event::Renewed, &name, serde_json::json!({}));
                }
            }
            Renew::Preempt {
                t_sent: sent,
                request,
            } => {
                *t_sent = sent;
                *last_failure = None;
                self.tell_guard();
                self.asked_to_stop(request, about);
            }
            Renew::Unknown(why) => {
                self.report.verbose(|| format!("renewal failed: {why}"));
                let error = serde_json::json!({ "error": why.to_string() });
                self.report.event(Event::RenewFailed, &about, error);
                *last_failure = Some(why);
                self.failing = Some(about);
            }
            Renew::Lost(why) => {
                let Some((_, budget, _)) = self.lease else {
                    return;
                };
                let end = budget.lease_end(*t_sent);
                self.lose(why, clock::now(), end, vec![about]);
            }
        }
    }

    /// Every name held: what `--max-hold` gives up.
    fn every_name(&self) -> Vec<String> {
        let Some((lease, _, _)) = self.lease else {
            return Vec::new();
        };
        std::iter::once(lease)
            .chain(self.also)
            .map(|l| l.keys().display_name())
            .collect()
    }

    /// The names a lease that runs out unrenewed is lost by: the one whose renewal
    /// failed last, else (no renewal failed: the wrapper was stopped) every name.
    fn expiring_names(&self) -> Vec<String> {
        match &self.failing {
            Some(name) => vec![name.clone()],
            None => self.every_name(),
        }
    }

    /// The lock is lost by `names` (one of the names held, or all): applies the
    /// `--on-lost` policy; the event is each name's, the line names them all.
    fn lose(&mut self, why: Lost, now: Point, lease_end: Point, names: Vec<String>) {
        let Some((_, budget, on_lost)) = self.lease else {
            return;
        };
        self.unready();
        self.lost_name = one_of(&names);
        let name = names.join(", ");
        // Preempted: stopped whatever --on-lost says (it is asked to stop, not lost).
        let (on_lost, sig) = match &why {
            Lost::Preempted(request) => (OnLost::Kill, self.signal_for(request)),
            _ => (on_lost, Signal::SIGTERM),
        };
        let policy = match on_lost {
            OnLost::Kill => "kill",
            OnLost::Keep => "keep",
        };
        self.lost_events(&names, &why, (policy, sig));
        // Given up on purpose is not "lost", but it is stopped the same way.
        let lead = match why {
            Lost::MaxHold { .. } | Lost::Preempted(_) => format!("lock {name}"),
            _ => format!("lock {name} lost"),
        };
        self.state = match on_lost {
            OnLost::Kill => {
                self.report.error(&format!(
                    "{lead}: {why}; stopping the command ({}, SIGKILL after {})",
                    sig.as_str(),
                    human(budget.kill_after)
                ));
                if let Some(guard) = self.guard {
                    // Signalled once: the guard keeps only the lease's SIGKILL.
                    guard.stopping(budget.kill_at(lease_end));
                }
                self.group.stop_with(sig);
                let kill_at = (now + budget.kill_after).min(budget.kill_at(lease_end).max(now));
                LeaseState::Stopping {
                    why,
                    kill_at,
                    killed: false,
                }
            }
            OnLost::Keep => {
                self.report.error(&format!(
                    "{lead}: {why}; the command keeps running WITHOUT the lock (--on-lost keep)"
                ));
                LeaseState::Lost { why }
            }
        };
    }

    /// Each name's `lost` (or `preempted`) event.
    fn lost_events(&self, names: &[String], why: &Lost, (policy, sig): (&str, Signal)) {
        for name in names {
            match why {
                Lost::Preempted(request) => self.report.event(
                    Event::Preempted,
                    name,
                    serde_json::json!({ "by": request.by, "signal": sig.as_str() }),
                ),
                _ => self.report.event(
                    Event::Lost,
                    name,
                    serde_json::json!({ "reason": why.to_string(), "on_lost": policy,
                        "max_hold": matches!(why, Lost::MaxHold { .. }) }),
                ),
            }
        }
    }

    /// The signal a preempted command gets: the request's, else `--preempt-signal`.
    fn signal_for(&self, request: &Preempt) -> Signal {
        request
            .signal
            .as_deref()
            .and_then(|raw| crate::config::signal("--signal", raw).ok())
            .unwrap_or(self.stop.signal)
    }

    fn lease_end(&self) -> Option<Point> {
        match (&self.lease, &self.state) {
            (Some((_, budget, _)), LeaseState::Held { t_sent, .. }) => {
                Some(budget.lease_end(*t_sent))
            }
            _ => None,
        }
    }

    fn renewed_at(&self) -> Option<Point> {
        match &self.state {
            LeaseState::Held { t_sent, .. } => Some(*t_sent),
            _ => None,
        }
    }

    fn into_lost(self) -> Option<Lost> {
        match self.state {
            LeaseState::Stopping { why, .. } | LeaseState::Lost { why } => Some(why),
            LeaseState::Held { .. } | LeaseState::Unleased => None,
        }
    }
}

//! `redlock-run` / `redlock run` from a checked configuration to an exit status:
//! find the command, connect, take the lock (waiting if asked), run the command under
//! the supervisor, release, and report. A run that does not start its command leaves no
//! lock behind.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::child::{self, env};
use crate::config::RunConfig;
use crate::error::{Error, Kind, Result};
use crate::exit::{self, Code};
use crate::guard::GroupGuard;
use crate::history::{self, Ending, RunRecord};
use crate::holder::{self, Meta};
use crate::lease::{Lease, Lost, Release, new_token};
use crate::policy::Completion;
use crate::report::{Reporter, human, rfc3339};
use crate::supervise::{self, Held};
use crate::timing::{self, Point};
use crate::wait::{self, Entered, Head, LocalQueue, Patience, Progress, WaitAs, Waited};

type Signals = UnboundedReceiver<Signal>;

/// Runs the wrapper; returns the exit status.
pub async fn run(config: RunConfig, report: &Reporter) -> Result<u8> {
    let program = child::resolve(&config.command[0])?;
    let mut signals = listen()?;
    let mut patience = Patience::new(config.wait);
    let head = match queue_locally(&config, &patience, &mut signals, report).await? {
        Ok(Local::Head(head)) => Some(head),
        Ok(Local::Direct) => None,
        Ok(Local::LastTry) => {
            patience = Patience::new(crate::config::Wait::For(std::time::Duration::ZERO));
            None
        }
        Err(code) => return Ok(code),
    };
    let lease = match connect(&config, &patience, &mut signals, report).await? {
        Ok(lease) => lease,
        Err(code) => return Ok(code),
    };
    if let Some(code) = reentrant(&config, &lease, &program, &mut signals, report).await? {
        return Ok(code);
    }
    let meta = holder_meta(&config, &lease);
    // A run that waits forks its command's guard while it waits, so that a hand-over
    // only has to start the command.
    let mut guard = None;
    let took = take(
        &config,
        &lease,
        &meta,
        &patience,
        (&mut signals, head.as_ref()),
        report,
        || guard = GroupGuard::fork(),
    );
    let took = took.await;
    // Held or given up: the next run of this host contends in Redis from now on.
    drop(head);
    let t_sent = match took? {
        Ok(t_sent) => t_sent,
        Err(code) => return Ok(code),
    };
    let acquired_at = crate::clock::now();
    announce(&config, &lease, &patience, report);
    if let Some(code) = interrupted_before_start(&lease, &mut signals, acquired_at, report).await {
        return Ok(code);
    }
    if config.policy.completion.once_per.is_some() {
        start_in_slot(&lease, acquired_at, report).await?;
    }
    let held = Held {
        lease: &lease,
        budget: config.budget,
        on_lost: config.on_lost,
        t_sent,
        give_up_at: config.max_hold.map(|d| t_sent + d),
    };
    let outcome = match run_command(
        &program,
        &config.command,
        Some(held),
        guard,
        &mut signals,
        report,
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(e) => {
            release(
                &lease,
                Completion::default(),
                acquired_at,
                None,
                acquired_at,
                report,
            )
            .await;
            return Err(e);
        }
    };
    Ok(finish(&config, &lease, &meta, outcome, acquired_at, report).await)
}

/// How a run goes on to Redis after the host-local queue.
enum Local {
    /// As the host's head (it tells the local waiters what it sees).
    Head(Head),
    /// Directly: no local queue (`--wait 0`, `--fair`, nested, `--no-local-queue`, no
    /// usable directory), or a head that does not progress.
    Direct,
    /// `--wait` ran out in the local queue: one try, then busy.
    LastTry,
}

/// Waits in this host's local queue until this run is the host's head (the one that
/// contends in Redis), see [`Local`]; `Err(code)` when a signal ended the wait there.
async fn queue_locally(
    config: &RunConfig,
    patience: &Patience,
    signals: &mut Signals,
    report: &Reporter,
) -> Result<std::result::Result<Local, u8>> {
    if !patience.allows_waiting() || !config.policy.mode.order.uses_local_queue() || nested(config)
    {
        return Ok(Ok(Local::Direct));
    }
    let Some(dir) = wait::resolve_dir(&config.local, report)? else {
        return Ok(Ok(Local::Direct));
    };
    let slots = config.policy.mode.slots();
    let queue = LocalQueue::new(&dir, &config.keys, &config.conn.urls, slots);
    let name = config.keys.display_name();
    let mut progress = Progress::new(report, name.clone(), chatty(config, report));
    let entered = queue.enter(patience, &mut progress, signals).await?;
    progress.ended();
    Ok(match entered {
        Entered::Head(head) => {
            if head.waited {
                report.verbose(|| format!("first of this host for {name}; trying Redis"));
            }
            Ok(Local::Head(head))
        }
        Entered::Unavailable(why) => {
            report.verbose(|| format!("not queueing on this host: {why}"));
            Ok(Local::Direct)
        }
        // One Redis try decides, and its busy line names the holder as it is now.
        Entered::TimedOut => Ok(Local::LastTry),
        Entered::HeadStalled(why) => {
            report.verbose(|| format!("{why}; waiting in Redis directly"));
            Ok(Local::Direct)
        }
        Entered::Interrupted(sig) => Err(interrupted_while_waiting(sig, report)),
    })
}

/// Whether this run is nested in a holder of this lock (its key in our environment):
/// it must not queue behind the host's next head, which waits for the enclosing run.
/// Redis still checks the token (see [`reentrant`]); a forged key only skips the
/// local queue.
fn nested(config: &RunConfig) -> bool {
    let Some(key) = std::env::var_os(env::KEY) else {
        return false;
    };
    (1..=config.policy.mode.slots()).any(|slot| config.keys.for_slot(slot).lock == key.as_bytes())
}

/// Whether waiting may be reported off a terminal (see `wait/progress.rs`).
fn chatty(config: &RunConfig, report: &Reporter) -> bool {
    config.busy_code != 0 || report.verbose
}

/// Connects to the nodes (retried within `--wait`) and builds the lease over them;
/// `Err(code)` when a signal ended the wait for Redis.
async fn connect(
    config: &RunConfig,
    patience: &Patience,
    signals: &mut Signals,
    report: &Reporter,
) -> Result<std::result::Result<Lease, u8>> {
    let timeout = config.budget.node_timeout;
    Ok(
        match wait::connect(&config.conn.urls, timeout, patience, signals, report).await? {
            Ok(nodes) => Ok(
                Lease::new(nodes, config.keys.clone(), config.budget.ttl, new_token())
                    .completion(config.policy.completion)
                    .retain(config.retain)
                    .mode(config.policy.mode),
            ),
            Err(sig) => Err(interrupted_while_waiting(sig, report)),
        },
    )
}

/// Says the lock is taken: the `acquired` event, and a line with `--verbose`.
fn announce(config: &RunConfig, lease: &Lease, patience: &Patience, report: &Reporter) {
    let name = lease.keys().display_name();
    report.event(
        "acquired",
        &name,
        serde_json::json!({
            "token": &lease.token()[..8],
            "fence": lease.fence(),
            "slot": lease.is_semaphore().then(|| lease.slot()),
            "waited_ms": patience.waited().as_millis() as u64,
            "ttl_ms": config.budget.ttl.as_millis() as u64,
        }),
    );
    report.verbose(|| {
        format!(
            "acquired {name} (token {}, ttl {})",
            &lease.token()[..8],
            human(config.budget.ttl)
        )
    });
}

/// After the command: releases (with the run's record), says so in the `exited` event
/// and returns the run's exit status: the command's, or the lost-lock (79) or
/// `--max-hold` (124) code when the lock was lost while it ran or found lost at the
/// release.
async fn finish(
    config: &RunConfig,
    lease: &Lease,
    meta: &Meta,
    outcome: supervise::Outcome,
    acquired_at: Point,
    report: &Reporter,
) -> u8 {
    let code = child::exit_code(outcome.status);
    let ended = (outcome.lost, outcome.lease_end);
    let status = release_after(config, lease, meta, ended, code, acquired_at, report);
    let status = status.await;
    report.event(
        "exited",
        &lease.keys().display_name(),
        serde_json::json!({
            "command_status": code,
            "status": status,
            "held_ms": crate::clock::now().saturating_sub(acquired_at).as_millis() as u64,
            "fence": lease.fence(),
        }),
    );
    status
}

/// The release after the command ended, and the status it makes the run's.
async fn release_after(
    config: &RunConfig,
    lease: &Lease,
    meta: &Meta,
    (lost, lease_end): (Option<Lost>, Option<Point>),
    code: u8,
    acquired_at: Point,
    report: &Reporter,
) -> u8 {
    let run = history::Run {
        meta,
        fence: lease.fence(),
        once_per: config.policy.completion.once_per,
        size: config.history,
        start_ms: lease.acquired_ms(),
    };
    let held = crate::clock::now().saturating_sub(acquired_at);
    let Some(lost) = lost else {
        let ending = Ending::of(&run, held, code, code, false);
        let until = lease_end.unwrap_or_else(crate::clock::now);
        let released = release(
            lease,
            config.policy.completion,
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

/// Takes over the forwarded signals, and makes the wrapper the subreaper of what the
/// command leaves behind.
fn listen() -> Result<Signals> {
    let signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = nix::sys::prctl::set_child_subreaper(true);
    Ok(signals)
}

/// Takes the lock, waiting as configured: `Ok(t_sent)` when held, `Err(code)` for the
/// exit status of a run that ends here (busy, interrupted), nothing having run.
async fn take(
    config: &RunConfig,
    lease: &Lease,
    meta: &Meta,
    patience: &Patience,
    (signals, head): (&mut Signals, Option<&Head>),
    report: &Reporter,
    before_waiting: impl FnOnce(),
) -> Result<std::result::Result<Point, u8>> {
    let how = WaitAs {
        chatty: chatty(config, report),
        head,
    };
    Ok(
        match wait::acquire(lease, meta, patience, how, signals, report, before_waiting).await? {
            Waited::Acquired { t_sent } => Ok(t_sent),
            Waited::Busy(holder) => {
                let name = lease.keys().display_name();
                wait::busy_note(&name, lease.limit(), &holder, config.busy_code, report);
                Err(config.busy_code)
            }
            Waited::Interrupted(sig) => Err(interrupted_while_waiting(sig, report)),
            Waited::AlreadyRan { slot_ms, record } => {
                already_ran(config, lease, slot_ms, &record, report);
                Err(config.busy_code)
            }
        },
    )
}

/// The holder metadata this run records: who runs what.
fn holder_meta(config: &RunConfig, lease: &Lease) -> Meta {
    let argv: Vec<String> = config
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cmdline = match &config.label {
        Some(label) => crate::error::one_line(label).chars().take(256).collect(),
        None => holder::recorded_command(&argv, config.hide_args),
    };
    Meta::local(lease.token(), &cmdline, config.budget.ttl)
}

/// `--once-per`: this slot already had a successful run; nothing runs. Said with
/// `--verbose` only (a cron line every minute for a daily job would say it 1439 times a
/// day), and as a `skipped` event. A slot closed by a run whose end was never recorded
/// (it started, then its wrapper died or its release was lost: it may have succeeded)
/// is said as a note too, with the reason `unfinished_run`: a slot that may have lost
/// its run must not be skipped silently.
fn already_ran(config: &RunConfig, lease: &Lease, slot_ms: u64, record: &[u8], report: &Reporter) {
    let run = RunRecord::parse(record).unwrap_or_default();
    let name = lease.keys().display_name();
    let period = config.policy.completion.once_per.unwrap_or_default();
    let line = || {
        format!(
            "{name} already ran in this --once-per {} slot (from {}): {}; not running",
            human(period),
            rfc3339(slot_ms),
            run.describe()
        )
    };
    let reason = if run.running {
        report.note(&format!(
            "{}; that run started at {} and its end was never recorded (its host may have died): check whether it did its work",
            line(),
            rfc3339(run.start_ms)
        ));
        "unfinished_run"
    } else {
        report.verbose(line);
        "already_ran"
    };
    report.event(
        "skipped",
        &name,
        serde_json::json!({
            "reason": reason,
            "slot_start_ms": slot_ms,
            "once_per_ms": period.as_millis() as u64,
            "last_run": run,
        }),
    );
}

/// A signal ended the wait: nothing was run; the status is 128+N.
fn interrupted_while_waiting(sig: Signal, report: &Reporter) -> u8 {
    report.note(&format!(
        "interrupted by {sig} while waiting; nothing was run"
    ));
    exit::from_signal(sig as i32)
}

/// A signal that arrived while connecting or during the last acquire round ends the
/// run before the command starts, as it would have ended the wait; returns its status.
async fn interrupted_before_start(
    lease: &Lease,
    signals: &mut Signals,
    acquired_at: Point,
    report: &Reporter,
) -> Option<u8> {
    while let Ok(sig) = signals.try_recv() {
        if crate::signals::ends_wait(sig) {
            // The command never ran: whatever the release finds, nothing ran unlocked.
            let _ = release(
                lease,
                Completion::default(),
                acquired_at,
                None,
                acquired_at,
                report,
            )
            .await;
            report.note(&format!(
                "interrupted by {sig} before the command started; nothing was run"
            ));
            return Some(exit::from_signal(sig as i32));
        }
    }
    None
}

/// `--once-per`: records that the command starts, so that the slot is closed by this
/// run even if it dies; a lock found gone, or a start that cannot be recorded, ends the
/// run before the command starts (released, nothing run).
async fn start_in_slot(lease: &Lease, acquired_at: Point, report: &Reporter) -> Result<()> {
    let failed = match lease.mark_started().await {
        Ok(true) => return Ok(()),
        Ok(false) => Error::new(
            Kind::Lost,
            format!(
                "lock {} lost before the command started; nothing was run",
                lease.keys().display_name()
            ),
        ),
        Err(e) => e.context("recording the --once-per start; nothing was run"),
    };
    let _ = release(
        lease,
        Completion::default(),
        acquired_at,
        None,
        acquired_at,
        report,
    )
    .await;
    Err(failed)
}

/// Starts the command with the lock's environment (when `held`) and a [`GroupGuard`]
/// watching its process group (`guard`, or one forked now), and supervises it to the
/// end. The guard is forked before the spawn, so the window in which a `kill -9` of the
/// wrapper could leave the group unguarded is one write(2), not a fork.
async fn run_command(
    program: &Path,
    argv: &[OsString],
    held: Option<Held<'_>>,
    guard: Option<GroupGuard>,
    signals: &mut Signals,
    report: &Reporter,
) -> Result<supervise::Outcome> {
    let numbers = held.as_ref().map(|h| {
        (
            h.budget.ttl.as_millis().to_string(),
            h.lease.fence().to_string(),
            h.lease.slot().to_string(),
        )
    });
    let envs: Vec<(&str, &OsStr)> = match (&held, &numbers) {
        (Some(h), Some((ttl_ms, fence, slot))) => {
            let mut envs = vec![
                (env::KEY, OsStr::from_bytes(&h.lease.keys().lock)),
                (env::NAME, OsStr::from_bytes(&h.lease.keys().name)),
                (env::TOKEN, OsStr::new(h.lease.token())),
                (env::TTL_MS, OsStr::new(ttl_ms)),
                (env::FENCE, OsStr::new(fence)),
            ];
            if h.lease.is_semaphore() {
                envs.push((env::SLOT, OsStr::new(slot)));
            }
            envs
        }
        _ => Vec::new(),
    };
    let mut guard = guard.or_else(GroupGuard::fork);
    let started = child::spawn(program, argv, &envs, child::foreground_terminal())?;
    if let Some(guard) = guard.as_mut() {
        guard.watch(started.group.id());
    }
    let outcome = supervise::supervise(started, held, signals, report).await;
    // The group is stopped by now: stand the guard down before the release.
    drop(guard);
    Ok(outcome)
}

/// Runs the command at once when this process already holds the lock (a nested
/// `redlock-run` inside the command): the key and token in our environment must match
/// and the token must still be the lock's value. The outer run keeps renewing and
/// releasing; a stale or forged token gets no bypass.
async fn reentrant(
    config: &RunConfig,
    lease: &Lease,
    program: &Path,
    signals: &mut Signals,
    report: &Reporter,
) -> Result<Option<u8>> {
    let (Some(key), Some(token)) = (std::env::var_os(env::KEY), std::env::var(env::TOKEN).ok())
    else {
        return Ok(None);
    };
    // A semaphore's holder holds one slot: the one in its environment.
    let slot = std::env::var(env::SLOT)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|_| lease.is_semaphore())
        .unwrap_or(1);
    let held = lease.keys().for_slot(slot).lock;
    if key.as_bytes() != held.as_slice() {
        return Ok(None);
    }
    if !lease.held_by(&held, &token).await? {
        report.verbose(|| "inherited token does not hold the lock; acquiring".to_string());
        return Ok(None);
    }
    report.verbose(|| "already held by the enclosing run; running at once".to_string());
    if let Some(metrics) = &report.metrics {
        metrics.nested();
    }
    let outcome = run_command(program, &config.command, None, None, signals, report).await?;
    Ok(Some(child::exit_code(outcome.status)))
}

/// The `released` event: one for every acquisition that started its command, whatever
/// the release found (a lost run's last attempt to give the key back included).
fn released_event(lease: &Lease, result: &Result<Release>, keep_ms: u64, report: &Reporter) {
    let said = match result {
        Ok(Release::Deleted) => "deleted",
        Ok(Release::Kept) => "kept",
        Ok(Release::NotHeld) => "not_ours",
        Err(_) => "failed",
    };
    report.event(
        "released",
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
    completion: Completion,
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
        Ok(Release::NotHeld) => {
            report.error(&format!(
                "lock {name} lost: it was no longer ours at the release (expired, deleted or taken over); the command may have run without it"
            ));
            return Released::NotOurs;
        }
        Err(e) if lease.once_per_ms() > 0 => report.error(&format!(
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

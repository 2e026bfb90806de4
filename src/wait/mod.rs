//! Taking a lock, waiting while it is busy — or while Redis cannot be reached.
//!
//! One [`Patience`] measures `--wait` from the start of the run, so connecting and
//! acquiring share it. While it lasts, a Redis that cannot be reached (down, restarting,
//! not ready, a dropped connection) is tried again with a jittered backoff, at connect
//! and at every acquire attempt; other errors (auth, a key of another type) cannot heal
//! by waiting and end the run at once. When it runs out, the error says how long it
//! tried.
//!
//! One try first (the common, uncontended case costs one round trip and leaves
//! nothing). When the lock is busy and `--wait` allows, each further try joins the
//! lock's waiters (a set, kept alive by the waiters' heartbeats), and the waiter then
//! blocks in `BLPOP` on the lock's wake list. A release pushes ONE element there when
//! the set is not empty, so one waiter wakes per release, whatever their number; the
//! list keeps the element until a waiter pops it, so a release between a try and the
//! pop is not missed. The safety net, for a holder that died or a client that wakes
//! nobody, is the pop's timeout: the holder's time to live plus jitter, when its key
//! can have expired. A waiter costs Redis one blocked connection and one try per
//! holder's ttl. Unreachable-class errors during the wait (a dropped connection, a
//! timeout) are retried like a busy lock until the wait ends, with a backoff.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

mod local;
mod patience;
mod progress;

pub use local::{Entered, Head, LocalQueue, default_dir, local_waiters, resolve_dir};
pub use patience::Patience;
use progress::Place;
pub use progress::Progress;

use crate::clock::wall_ms;
use crate::error::{Error, Result};
use crate::holder::{Holder, Meta};
use crate::lease::{Acquire, Lease, Skip};
use crate::quorum::Nodes;
use crate::report::{Reporter, human};
use crate::timing::{self, Point};

/// How waiting ended.
#[derive(Debug)]
pub enum Waited {
    Acquired {
        t_sent: Point,
        /// The ttl the last holder this run saw renewed to (its metadata's), if it saw
        /// one: the longest a lease from before a server restart can last (see
        /// `run/lock_delay.rs`).
        holder_ttl: Option<Duration>,
    },
    Busy(Holder),
    Interrupted(Signal),
    /// `--once-per`: the slot is closed for this run (see [`Acquire::Skipped`]);
    /// waiting longer would not change that.
    Skipped(Skip),
}

/// How connecting ended, short of an error.
pub enum Connected {
    Up(Nodes),
    /// A signal ended the wait for Redis.
    Interrupted(Signal),
}

/// Connects to the nodes of `urls`; while `patience` lasts, an unreachable Redis is tried
/// again with backoff.
pub async fn connect(
    urls: &[crate::redis::RedisUrl],
    timeout: Duration,
    patience: &Patience,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Result<Connected> {
    let mut attempt: u32 = 0;
    loop {
        let err = match Nodes::connect(urls, timeout).await {
            Ok(nodes) => return Ok(Connected::Up(nodes)),
            Err(e) if e.is_transient() && patience.allows_waiting() => e,
            Err(e) => return Err(e),
        };
        let Some(left) = patience.left() else {
            return Err(patience.gave_up(err));
        };
        report.verbose(|| format!("connect failed, retrying: {err}"));
        let nap = timing::poll_delay(attempt, None, fastrand::f64()).min(left);
        attempt = attempt.saturating_add(1);
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            Some(sig) = signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Ok(Connected::Interrupted(sig));
                }
            }
        }
    }
}

/// Acquires `lease`, waiting while it is busy (or Redis unreachable) as `patience`
/// allows. `chatty`: whether waiting may be reported off a terminal (see
/// `progress.rs`); `before_waiting` runs once, when the first try found the lock busy
/// and the run is going to wait (the wrapper prepares its command's start there, off
/// the hand-over's path).
pub async fn acquire(
    lease: &Lease,
    meta: &Meta,
    patience: &Patience,
    how: WaitAs<'_>,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
    before_waiting: impl FnOnce(),
) -> Result<Waited> {
    let mut waiter = Waiter::new(lease, meta, patience, how, report);
    // The first try, as no waiter yet: the common, uncontended case costs one round
    // trip and leaves nothing behind. In a fair queue a run that may wait takes its
    // place in line at once: its arrival is its place; so does a run that waited in its
    // host's local queue (the host's last head has just taken the lock: it is busy).
    let waited_locally = how.head.is_some_and(|h| h.waited);
    let queue_now =
        (lease.kind().queues_at_arrival() || waited_locally || how.found_busy.is_some())
            && patience.allows_waiting();
    let (failure, joined) = match waiter.try_once(queue_now).await? {
        Tried::Acquired(t_sent) => {
            waiter.progress.acquired(patience);
            return Ok(waiter.acquired(t_sent));
        }
        Tried::Done(ran) => return Ok(ran),
        // A busy first try that joined the waiters blocks at once: a release after it
        // pushes a wake-up that waits in the list.
        Tried::Busy => (None, queue_now),
        Tried::Again => (None, false),
        Tried::Failed(e) => (Some(e), false),
    };
    if !waiter.patience.allows_waiting() {
        return match failure {
            Some(e) => Err(e),
            None => Ok(Waited::Busy(waiter.last)),
        };
    }
    before_waiting();
    let waited = waiter.wait(signals, joined).await;
    waiter.progress.ended();
    after_waiting(lease, &waited).await;
    waited
}

/// What a wait leaves behind once it ended: the blocking connection of a run that took
/// the lock is closed, a wake-up of no use to this run is handed on, and a run that
/// gave up leaves the waiters.
async fn after_waiting(lease: &Lease, waited: &Result<Waited>) {
    match waited {
        Ok(Waited::Acquired { .. }) => lease.nodes().iter().for_each(|n| n.close_blocking()),
        // Superseded or outdated: the newer run's acquire has already taken it out of
        // the queue (or it never joined), and no wake-up of the lock's came for it.
        Ok(Waited::Skipped(skip)) if skip.why.is_newer() => {}
        // The wake-up that brought it here is of use to the next waiter (a --once-per
        // run finds the slot done, and so will the others; a plain run takes the lock).
        Ok(Waited::Skipped(_)) => lease.hand_on().await,
        _ => {
            if lease.kind().keeps_place_on_late_grant() {
                // A late grant kept for the next try (see `Lease::acquire`) is given
                // back: compare-and-delete, nothing when the lock is not ours.
                let _ = lease.release_all(0, None).await;
            }
            lease.leave().await
        }
    }
}

/// How a run waits: whether it may say so off a terminal (see `progress.rs`), and
/// whether it is its host's head in the local queue (it tells the local waiters what
/// it sees).
#[derive(Clone, Copy, Default)]
pub struct WaitAs<'a> {
    pub chatty: bool,
    pub head: Option<&'a Head>,
    /// The caller's own try found the lock busy just now, held by this holder (a run
    /// of several names): the first try joins the waiters, as a try after a busy one
    /// does, and does not read the holder's metadata again.
    pub found_busy: Option<&'a Holder>,
}

impl WaitAs<'_> {
    /// A run that waits on its own (no local queue behind it, no try of its own
    /// before), saying so off a terminal when `chatty`.
    pub fn saying(chatty: bool) -> Self {
        WaitAs {
            chatty,
            ..WaitAs::default()
        }
    }
}

/// A waiter between tries.
struct Waiter<'a> {
    lease: &'a Lease,
    meta: &'a Meta,
    report: &'a Reporter,
    patience: Patience,
    progress: Progress<'a>,
    head: Option<&'a Head>,
    /// The holder seen last.
    last: Holder,
    /// Tries that failed in a row (the backoff grows with it).
    attempt: u32,
    /// The heartbeat of the last try that joined the waiters.
    registered: Duration,
    /// Over several nodes, the last try found the lock free on the primary node but
    /// held by a quorum: a release may have reached the primary before this waiter
    /// joined there, waking nobody. It tries again after a short, growing backoff
    /// instead of waiting for a wake-up.
    soon: bool,
}

/// What one try gave.
enum Tried {
    Acquired(Point),
    /// The `--once-per` slot is closed ([`Waited::Skipped`]).
    Done(Waited),
    Busy,
    /// The slot's run is in progress: this run now waits for it (its slot pinned) and
    /// tries again at once, as a waiter.
    Again,
    /// A transient failure (dropped connection, timeout): busy for all we know.
    Failed(Error),
}

impl<'a> Waiter<'a> {
    fn new(
        lease: &'a Lease,
        meta: &'a Meta,
        patience: &Patience,
        how: WaitAs<'a>,
        report: &'a Reporter,
    ) -> Waiter<'a> {
        let mut progress = Progress::new(report, lease.keys().display_name(), how.chatty);
        if how.head.is_some_and(|h| h.waited) {
            progress = progress.continuing();
        }
        Waiter {
            lease,
            meta,
            report,
            patience: *patience,
            progress,
            head: how.head,
            last: how.found_busy.cloned().unwrap_or_default(),
            attempt: 0,
            registered: Duration::MAX,
            soon: false,
        }
    }

    /// Tries, then blocks until a release wakes this waiter (one waiter per release),
    /// the holder's key can have expired (the safety net for a holder that died or a
    /// client that does not wake anyone), the wait ends or a signal ends it. Each try
    /// joins the waiters first, so a release after it pushes a wake-up, and the wake
    /// list keeps it until the pop: none is missed. `joined`: the try before joined the
    /// waiters and found the lock busy, so this starts by blocking.
    async fn wait(
        &mut self,
        signals: &mut UnboundedReceiver<Signal>,
        mut joined: bool,
    ) -> Result<Waited> {
        loop {
            let tried = if std::mem::take(&mut joined) {
                Tried::Busy
            } else {
                self.try_once(true).await?
            };
            let failure = match tried {
                Tried::Acquired(t_sent) => {
                    self.progress.acquired(&self.patience);
                    return Ok(self.acquired(t_sent));
                }
                Tried::Done(ran) => return Ok(ran),
                Tried::Again => continue,
                Tried::Busy => None,
                Tried::Failed(e) => Some(e),
            };
            let Some(left) = self.patience.left() else {
                // Whether the lock is busy is unknown when the last try failed: say why.
                return match failure {
                    Some(e) => Err(self.patience.gave_up(e)),
                    None => Ok(Waited::Busy(self.last.clone())),
                };
            };
            let mut nap = self
                .safety_net(failure.is_some() || self.soon)
                .min(left)
                .min(self.registered_nap());
            if let Some(cap) = self.lease.kind().nap_cap() {
                // A queued waiter comes back within its heartbeat, or loses its place.
                nap = nap.min(cap);
            }
            if let Some(sig) = self.block(nap, signals).await {
                return Ok(Waited::Interrupted(sig));
            }
        }
    }

    /// The lock is taken (the try sent at `t_sent`), after the holder seen last.
    fn acquired(&self, t_sent: Point) -> Waited {
        Waited::Acquired {
            t_sent,
            holder_ttl: self.last.ttl_ms.map(Duration::from_millis),
        }
    }

    /// How long to block before trying again without a wake-up: until the holder's key
    /// can expire (its time to live, plus jitter so that waiters do not all come back at
    /// once); a growing backoff when Redis failed or the key never expires.
    fn safety_net(&mut self, failed: bool) -> Duration {
        match self.last.ttl_left.filter(|_| !failed) {
            Some(ttl) => timing::until_expiry(ttl, fastrand::f64()),
            None => {
                let delay = timing::poll_delay(self.attempt, None, fastrand::f64());
                self.attempt = self.attempt.saturating_add(1);
                delay
            }
        }
    }

    /// One acquire attempt; as a waiter (`waiting`), joining the waiters when busy. A
    /// dropped connection (CLIENT KILL, a restart, a proxy reset) fails the next request
    /// at once and only then reconnects; an overloaded or briefly unreachable server is
    /// the same kind of trouble. While the wait lasts these are retried like a busy
    /// lock; other errors (auth, a key of another type) cannot heal by waiting and end
    /// the wait.
    async fn try_once(&mut self, waiting: bool) -> Result<Tried> {
        let registration = waiting.then(|| crate::lease::Waiter {
            heartbeat: self.heartbeat(),
            known_holder: self.last.token.clone(),
        });
        if let Some(r) = &registration {
            self.registered = r.heartbeat;
        }
        let holder = match self.lease.acquire(self.meta, registration.as_ref()).await {
            Ok(Acquire::Acquired { t_sent }) => {
                if waiting && self.lease.nodes().given() > 1 {
                    // Over several nodes the primary may have said busy while a quorum
                    // said yes: leave its waiters (on one node, the script did).
                    self.lease.leave().await;
                }
                return Ok(Tried::Acquired(t_sent));
            }
            Ok(Acquire::Busy(holder)) => {
                if let Some(r) = &registration {
                    self.soon = self.lease.join_primary(r.heartbeat).await;
                }
                holder
            }
            Ok(Acquire::Skipped(skip)) if self.waits_for(&skip) => {
                self.wait_for_run_in_progress(&skip);
                return Ok(Tried::Again);
            }
            Ok(Acquire::Skipped(skip)) => {
                return Ok(Tried::Done(Waited::Skipped(skip)));
            }
            Err(e) if e.is_transient() => {
                self.report
                    .verbose(|| format!("acquire failed, retrying: {e}"));
                return Ok(Tried::Failed(e));
            }
            Err(e) => return Err(e),
        };
        if !self.soon {
            self.attempt = 0;
        }
        self.saw_busy(holder);
        Ok(Tried::Busy)
    }

    /// A try found the lock held by `holder`: it is the holder seen last, told to the
    /// host's local waiters and shown as the wait's progress.
    fn saw_busy(&mut self, holder: Holder) {
        let holder = if holder.token == self.last.token && !holder.is_known() {
            // The same holder: its metadata was not read again, only its ttl.
            Holder {
                ttl_left: holder.ttl_left,
                ..self.last.clone()
            }
        } else {
            holder
        };
        if let Some(head) = self.head {
            head.publish(&holder);
        }
        if self.patience.allows_waiting() {
            self.progress.busy(
                &holder,
                self.lease
                    .place()
                    .map(|(place, of)| Place::Queue { place, of }),
                &self.patience,
            );
        }
        self.last = holder;
    }

    /// Whether this run waits for the `--once-per` slot's run in progress that `skip`
    /// found (see `Completion::waits_for_run_in_progress`), once: a pinned try that
    /// still finds it so was not told to wait, and is skipped.
    fn waits_for(&self, skip: &Skip) -> bool {
        let completion = self.lease.completion_policy();
        skip.why == crate::lease::Closed::InProgress
            && completion.once_per.is_some()
            && completion.waits_for_run_in_progress()
            && !self.lease.waits_for_run()
            && !self.lease.is_inside()
    }

    /// From now on, the slot's run in progress is waited for: the try is for its slot
    /// only (pinned), and with `--if-vanished rerun` but no `--wait` the wait lasts
    /// until the end of the slot (at least once, on any period).
    fn wait_for_run_in_progress(&mut self, skip: &Skip) {
        self.lease.wait_for_run(skip.slot_ms);
        let completion = self.lease.completion_policy();
        if let Some(period) = completion
            .once_per
            .as_ref()
            .filter(|_| !completion.may_wait)
        {
            let end = period.slot_at(skip.slot_ms).end_ms;
            let left = end.saturating_sub(skip.now_ms);
            self.patience = self.patience.until(Duration::from_millis(left));
        }
        self.report.verbose(|| {
            format!(
                "the slot's run is in progress: waiting for it ({})",
                self.lease.keys().display_name()
            )
        });
    }

    /// How long this waiter promises to come back: the longest it blocks, plus the time
    /// a try may take.
    fn heartbeat(&self) -> Duration {
        let order = self.lease.kind();
        let longest = order.nap_cap().unwrap_or_else(|| {
            self.last
                .ttl_left
                .map_or(Duration::ZERO, |ttl| timing::until_expiry(ttl, 1.0))
                .max(Duration::from_secs(2))
        });
        let beat = longest + self.lease.node_timeout() * 2 + Duration::from_secs(1);
        order.beat_cap().map_or(beat, |cap| beat.min(cap))
    }

    /// The longest this waiter may block after a try and still find its entry in the
    /// waiters set: the heartbeat it registered with, less the time a try may take. The
    /// heartbeat is sized from the holder seen *before* the try; a holder with a longer
    /// ttl found by it must not make the waiter sleep past its entry (a release would
    /// then find nobody waiting and wake nobody).
    fn registered_nap(&self) -> Duration {
        self.registered
            .saturating_sub(self.lease.node_timeout() * 2 + Duration::from_secs(1))
            .max(Duration::from_millis(100))
    }

    /// Blocks on the wake list of every node for at most `nap`, showing the progress
    /// when it is due; returns a signal that ends the wait.
    async fn block(
        &mut self,
        nap: Duration,
        signals: &mut UnboundedReceiver<Signal>,
    ) -> Option<Signal> {
        let woken = woken_or_slept(self.lease, nap);
        tokio::pin!(woken);
        loop {
            tokio::select! {
                woke = &mut woken => {
                    match woke {
                        Woke::Take => self.report.verbose(|| "woken by a release".to_string()),
                        Woke::Backup => {
                            self.report.verbose(|| "woken as a release's backup: trying after the grace period".to_string());
                            return self.grace(signals).await;
                        }
                        Woke::Slept => {}
                    }
                    return None;
                }
                _ = tokio::time::sleep(self.progress.next_due()) => {
                    self.progress.tick(&self.patience);
                }
                Some(sig) = signals.recv() => {
                    if crate::signals::ends_wait(sig) {
                        return Some(sig);
                    }
                }
            }
        }
    }
}

/// How long a release's backup waiter lets the woken one take the lock before it tries
/// itself: a woken waiter that is stopped (SIGSTOP, Ctrl-Z, a frozen cgroup, a paused
/// container) has popped the wake-up and will not take the lock; the backup's one try
/// finds the lock free then. Long enough for a try on a loaded host, short enough that
/// a free lock waits no more than about a second.
const BACKUP_GRACE: Duration = Duration::from_millis(700);

/// What ended a blocking wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Woke {
    /// A release's wake-up for the waiter that takes the lock.
    Take,
    /// A release's backup wake-up: try once after [`BACKUP_GRACE`].
    Backup,
    /// The nap ran out (or the pop failed and the nap was slept out).
    Slept,
}

impl Woke {
    /// What the release's element says (`2`: backup; anything else: take).
    fn of(element: &[u8]) -> Self {
        if element == b"2" {
            Woke::Backup
        } else {
            Woke::Take
        }
    }
}

impl Waiter<'_> {
    /// A backup waiter's grace period before its one try; a signal that ends the wait
    /// ends it.
    async fn grace(&mut self, signals: &mut UnboundedReceiver<Signal>) -> Option<Signal> {
        let sleep = tokio::time::sleep(BACKUP_GRACE);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => return None,
                Some(sig) = signals.recv() => {
                    if crate::signals::ends_wait(sig) {
                        return Some(sig);
                    }
                }
            }
        }
    }
}

/// Whether a release woke us (a `BLPOP` on the primary node's wake list popped) within
/// `nap`, and how; when the pop fails (the node down, a user without BLPOP) or there is
/// no primary, sleeps out the nap instead, so a failing node is never polled in a tight
/// loop.
async fn woken_or_slept(lease: &Lease, nap: Duration) -> Woke {
    let until = crate::clock::now() + nap;
    if let Some(primary) = lease.nodes().primary()
        && let Ok(Some(element)) = pop_until(primary, &lease.wake_key(), until).await
    {
        return Woke::of(&element);
    }
    if let Some(rest) = until.checked_sub(crate::clock::now()) {
        tokio::time::sleep(rest).await;
    }
    Woke::Slept
}

/// A blocking pop on one node until `until`: the element popped, `None` when the wait
/// ran out; a pop whose connection the server dropped (CLIENT KILL, a restart) is tried
/// once more, at once, on a fresh one.
pub async fn pop_until(
    node: &crate::redis::Node,
    wake: &[u8],
    until: Point,
) -> Result<Option<Vec<u8>>> {
    let left = || until.saturating_sub(crate::clock::now());
    match node.blocking_pop(wake, left()).await {
        Err(e) if e.is_transient() && !left().is_zero() => node.blocking_pop(wake, left()).await,
        other => other,
    }
}

/// Says that the lock `name` (`limit` slots) is busy and who holds it; a run told that
/// busy is fine (`--busy-exit-code 0`) says it only with `--verbose`, like `flock -n`,
/// so that cron mails nothing. A holder not known (a run that gave up in the local
/// queue before its head saw one) is said as such.
pub fn busy_note(
    name: &str,
    limit: u32,
    holder: &Holder,
    (busy_code, waited): (u8, Option<Duration>),
    report: &Reporter,
) {
    let line = || {
        let who = if holder.token.is_empty() {
            "a run this host's queue waited behind".to_string()
        } else {
            holder.describe(wall_ms())
        };
        // A wait that ran out says so (newcomer-4 P15): "busy" alone reads as a try.
        let busy = match waited {
            Some(waited) => format!("still busy after waiting {}", human(waited)),
            None => "busy".to_string(),
        };
        format!(
            "lock {name} is {busy}{}: held by {who}{}",
            match limit {
                1 => String::new(),
                n => format!(" (all {n} slots held; the first to come free)"),
            },
            holder.lease_note()
        )
    };
    if busy_code == 0 {
        report.verbose(line);
    } else {
        report.note(&line());
    }
}

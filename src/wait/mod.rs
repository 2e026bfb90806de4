//! Taking a lock, waiting while it is busy — or while Redis cannot be reached.
//!
//! One [`Patience`] measures `--wait` from the start of the run, so connecting and
//! acquiring share it. While it lasts, a Redis that cannot be reached (down, restarting,
//! not ready, a dropped connection) is tried again with a jittered backoff, at connect
//! and at every acquire attempt; other errors (auth, a key of another type) cannot heal
//! by waiting and end the run at once. When it runs out, the error says how long it
//! tried.
//!
//! One try first (the common, uncontended case costs one round trip). When the lock is
//! busy and `--wait` allows, the waiter SUBSCRIBEs to the lock's release channel first
//! and only then tries again, so a release between the two cannot be missed; after that
//! it sleeps until a release message arrives, a signal ends the wait, or a jittered,
//! growing poll delay (never past the holder's remaining ttl, since a crashed holder's key
//! expires without a message) runs out. A waiter costs Redis one idle subscription.
//! Unreachable-class errors during the wait (a dropped connection, a timeout) are
//! retried like a busy lock until the wait ends; a lost subscription leaves the polling.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

mod patience;
mod progress;

pub use patience::Patience;
use progress::Progress;

use crate::error::{Error, Result};
use crate::holder::{Holder, Meta, wall_ms};
use crate::lease::{Acquire, Lease};
use crate::quorum::Nodes;
use crate::report::{Reporter, human};
use crate::timing::{self, Point};

/// How waiting ended.
#[derive(Debug)]
pub enum Waited {
    Acquired { t_sent: Point },
    Busy(Holder),
    Interrupted(Signal),
}

/// Connects to the nodes of `urls`; while `patience` lasts, an unreachable Redis is tried
/// again with backoff. `Ok(Err(signal))` when a signal ended the wait.
pub async fn connect(
    urls: &[crate::redis::RedisUrl],
    timeout: Duration,
    patience: &Patience,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Result<std::result::Result<Nodes, Signal>> {
    let mut attempt: u32 = 0;
    loop {
        let err = match Nodes::connect(urls, timeout).await {
            Ok(nodes) => return Ok(Ok(nodes)),
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
                    return Ok(Err(sig));
                }
            }
        }
    }
}

/// Acquires `lease`, waiting while it is busy (or Redis unreachable) as `patience`
/// allows. `chatty`: whether waiting may be reported off a terminal (see
/// `progress.rs`).
pub async fn acquire(
    lease: &Lease,
    meta: &Meta,
    patience: &Patience,
    chatty: bool,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Result<Waited> {
    let mut waiter = Waiter {
        releases: stream::pending().boxed(),
        lease,
        meta,
        report,
        patience: *patience,
        progress: Progress::new(report, lease.keys().display_name(), chatty),
        resubscribe: false,
        last: Holder::default(),
        attempt: 0,
    };
    // The first try: the common, uncontended case costs one round trip.
    let failure = match waiter.try_once().await? {
        Tried::Acquired(t_sent) => return Ok(Waited::Acquired { t_sent }),
        Tried::Busy => None,
        Tried::Failed(e) => Some(e),
    };
    if !patience.allows_waiting() {
        return match failure {
            Some(e) => Err(e),
            None => Ok(Waited::Busy(waiter.last)),
        };
    }
    // Subscribe first, then try again: a release between the two cannot be missed.
    waiter.releases = subscribe(lease, report).await;
    let waited = waiter.wait(signals).await;
    waiter.progress.ended();
    waited
}

/// A waiter between tries.
struct Waiter<'a> {
    lease: &'a Lease,
    meta: &'a Meta,
    report: &'a Reporter,
    patience: Patience,
    progress: Progress<'a>,
    /// Release messages (see [`subscribe`]).
    releases: BoxStream<'static, bool>,
    /// A subscription ended: subscribe again before the next try.
    resubscribe: bool,
    /// The holder seen last.
    last: Holder,
    /// Tries since the last release message (the poll delay grows with it).
    attempt: u32,
}

/// What one try gave.
enum Tried {
    Acquired(Point),
    Busy,
    /// A transient failure (dropped connection, timeout): busy for all we know.
    Failed(Error),
}

impl Waiter<'_> {
    async fn wait(&mut self, signals: &mut UnboundedReceiver<Signal>) -> Result<Waited> {
        loop {
            if self.resubscribe {
                // A subscription connection closed (server restart, CLIENT KILL):
                // subscribe again before the next try, so a release after it is not
                // missed either.
                self.report
                    .verbose(|| "release subscription lost; subscribing again".to_string());
                self.releases = subscribe(self.lease, self.report).await;
                self.resubscribe = false;
            }
            let failure = match self.try_once().await? {
                Tried::Acquired(t_sent) => {
                    self.progress.acquired(&self.patience);
                    return Ok(Waited::Acquired { t_sent });
                }
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
            if let Some(sig) = self.nap(left, signals).await {
                return Ok(Waited::Interrupted(sig));
            }
        }
    }

    /// One acquire attempt. A dropped connection (CLIENT KILL, a restart, a proxy reset)
    /// fails the next request at once and only then reconnects; an overloaded or
    /// briefly unreachable server is the same kind of trouble. While the wait lasts these
    /// are retried like a busy lock; other errors (auth, a key of another type) cannot
    /// heal by waiting and end the wait.
    async fn try_once(&mut self) -> Result<Tried> {
        let holder = match self.lease.acquire(self.meta).await {
            Ok(Acquire::Acquired { t_sent }) => return Ok(Tried::Acquired(t_sent)),
            Ok(Acquire::Busy(holder)) => holder,
            Err(e) if e.is_transient() => {
                self.report
                    .verbose(|| format!("acquire failed, retrying: {e}"));
                return Ok(Tried::Failed(e));
            }
            Err(e) => return Err(e),
        };
        if self.patience.allows_waiting() {
            self.progress.busy(&holder, &self.patience);
        }
        self.last = holder;
        Ok(Tried::Busy)
    }

    /// Sleeps until a release message, the poll delay or the end of the wait, showing
    /// the progress when it is due; returns a signal that ends the wait.
    async fn nap(
        &mut self,
        left: Duration,
        signals: &mut UnboundedReceiver<Signal>,
    ) -> Option<Signal> {
        let nap = timing::poll_delay(self.attempt, self.last.ttl_left, fastrand::f64()).min(left);
        self.attempt = self.attempt.saturating_add(1);
        let until = crate::clock::now() + nap;
        loop {
            let rest = until
                .checked_sub(crate::clock::now())
                .filter(|r| !r.is_zero())?;
            tokio::select! {
                _ = tokio::time::sleep(rest.min(self.progress.next_due())) => {
                    self.progress.tick(&self.patience);
                }
                Some(message) = self.releases.next() => {
                    if message {
                        self.report.verbose(|| "release message received".to_string());
                        self.attempt = 0;
                    } else {
                        self.resubscribe = true;
                    }
                    return None;
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

/// Release messages (`true`) from every node that accepted the subscription, and
/// `false` when one of those subscriptions ends; with none, a stream that never yields
/// (polling alone then finds the release).
async fn subscribe(lease: &Lease, report: &Reporter) -> BoxStream<'static, bool> {
    let channel = &lease.keys().channel;
    let subs = lease.nodes().each(|node| node.subscribe(channel)).await;
    let mut streams = Vec::new();
    for sub in subs {
        match sub {
            Ok(pubsub) => streams.push(
                pubsub
                    .into_on_message()
                    .map(|_| true)
                    .chain(stream::once(async { false }))
                    .boxed(),
            ),
            Err(e) => report.verbose(|| format!("no release notifications: {e}")),
        }
    }
    if streams.is_empty() {
        return stream::pending().boxed();
    }
    stream::select_all(streams).boxed()
}

/// Says that the lock is busy and who holds it; a run told that busy is fine
/// (`--busy-exit-code 0`) says it only with `--verbose`, like `flock -n`, so that cron
/// mails nothing.
pub fn busy_note(lease: &Lease, holder: &Holder, busy_code: u8, report: &Reporter) {
    let line = || {
        format!(
            "lock {} is busy: held by {}{}",
            lease.keys().display_name(),
            holder.describe(wall_ms()),
            holder
                .ttl_left
                .map(|t| format!(", expires in {}", human(t)))
                .unwrap_or_default()
        )
    };
    if busy_code == 0 {
        report.verbose(line);
    } else {
        report.note(&line());
    }
}

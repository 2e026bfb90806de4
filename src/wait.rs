//! Taking a lock, waiting while it is busy.
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

use crate::config::Wait;
use crate::error::{Error, Result};
use crate::holder::{Holder, Meta, wall_ms};
use crate::lease::{Acquire, Lease};
use crate::report::{Reporter, human};
use crate::timing::{self, Point};

/// How waiting ended.
#[derive(Debug)]
pub enum Waited {
    Acquired { t_sent: Point },
    Busy(Holder),
    Interrupted(Signal),
}

/// Acquires `lease`, waiting up to `wait` while it is busy.
pub async fn acquire(
    lease: &Lease,
    meta: &Meta,
    wait: Wait,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Result<Waited> {
    let started = crate::clock::now();
    let deadline = match wait {
        Wait::For(d) => Some(started + d),
        Wait::Forever => None,
    };
    let holder = match lease.acquire(meta).await? {
        Acquire::Acquired { t_sent } => return Ok(Waited::Acquired { t_sent }),
        Acquire::Busy(holder) => holder,
    };
    if deadline == Some(started) {
        return Ok(Waited::Busy(holder));
    }
    report.progress(&format!(
        "waiting for {}: held by {}",
        lease.keys().display_name(),
        holder.describe(wall_ms())
    ));
    let waiter = Waiter {
        releases: subscribe(lease, report).await,
        lease,
        meta,
        report,
        started,
        deadline,
        resubscribe: false,
        last: holder,
        attempt: 0,
    };
    waiter.wait(signals).await
}

/// A waiter between tries.
struct Waiter<'a> {
    lease: &'a Lease,
    meta: &'a Meta,
    report: &'a Reporter,
    started: Point,
    /// `None`: wait forever.
    deadline: Option<Point>,
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
    async fn wait(mut self, signals: &mut UnboundedReceiver<Signal>) -> Result<Waited> {
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
                Tried::Acquired(t_sent) => return Ok(Waited::Acquired { t_sent }),
                Tried::Busy => None,
                Tried::Failed(e) => Some(e),
            };
            let Some(left) = self.time_left() else {
                // Whether the lock is busy is unknown when the last try failed: say why.
                return match failure {
                    Some(e) => Err(e),
                    None => Ok(Waited::Busy(self.last)),
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
            Ok(Acquire::Acquired { t_sent }) => {
                self.report.verbose(|| {
                    format!(
                        "acquired after waiting {}",
                        human(crate::clock::now().saturating_sub(self.started))
                    )
                });
                return Ok(Tried::Acquired(t_sent));
            }
            Ok(Acquire::Busy(holder)) => holder,
            Err(e) if e.is_transient() => {
                self.report
                    .verbose(|| format!("acquire failed, retrying: {e}"));
                return Ok(Tried::Failed(e));
            }
            Err(e) => return Err(e),
        };
        if holder.token != self.last.token {
            self.report.progress(&format!(
                "still waiting for {}: now held by {}",
                self.lease.keys().display_name(),
                holder.describe(wall_ms())
            ));
        }
        self.last = holder;
        Ok(Tried::Busy)
    }

    /// Time left of the wait; `None` when it is over.
    fn time_left(&self) -> Option<Duration> {
        match self.deadline {
            Some(d) => d.checked_sub(crate::clock::now()).filter(|l| !l.is_zero()),
            None => Some(Duration::MAX),
        }
    }

    /// Sleeps until a release message, the poll delay or the end of the wait; returns a
    /// signal that ends the wait.
    async fn nap(
        &mut self,
        left: Duration,
        signals: &mut UnboundedReceiver<Signal>,
    ) -> Option<Signal> {
        let nap = timing::poll_delay(self.attempt, self.last.ttl_left, fastrand::f64()).min(left);
        self.attempt = self.attempt.saturating_add(1);
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            Some(message) = self.releases.next() => {
                if message {
                    self.report.verbose(|| "release message received".to_string());
                    self.attempt = 0;
                } else {
                    self.resubscribe = true;
                }
            }
            Some(sig) = signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Some(sig);
                }
            }
        }
        None
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

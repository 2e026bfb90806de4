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
use crate::exit::Code;
use crate::holder::{Holder, wall_ms};
use crate::lease::{Acquire, Lease};
use crate::report::Reporter;
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
    meta: &[(&'static str, String)],
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
        lease.keys.display_name(),
        holder.describe(wall_ms())
    ));
    let mut releases = subscribe(lease, report).await;
    let mut resubscribe = false;
    let mut last = holder;
    let mut attempt: u32 = 0;
    loop {
        if resubscribe {
            // A subscription connection closed (server restart, CLIENT KILL): subscribe
            // again before the next try, so a release after it is not missed either.
            report.verbose(|| "release subscription lost; subscribing again".to_string());
            releases = subscribe(lease, report).await;
            resubscribe = false;
        }
        let mut transient: Option<Error> = None;
        let attempt_result = match lease.acquire(meta).await {
            Ok(result) => result,
            // A dropped connection (CLIENT KILL, a restart, a proxy reset) fails the
            // next request at once and only then reconnects; an overloaded or briefly
            // unreachable server is the same kind of trouble. While the wait lasts these
            // are retried like a busy lock; other errors (auth, a key of another type)
            // cannot heal by waiting and end the wait.
            Err(e) if e.code == Code::Unreachable => {
                report.verbose(|| format!("acquire failed, retrying: {e}"));
                transient = Some(e);
                Acquire::Busy(last.clone())
            }
            Err(e) => return Err(e),
        };
        match attempt_result {
            Acquire::Acquired { t_sent } => {
                report.verbose(|| {
                    format!(
                        "acquired after waiting {}",
                        crate::holder::human(crate::clock::now().saturating_sub(started))
                    )
                });
                return Ok(Waited::Acquired { t_sent });
            }
            Acquire::Busy(holder) => {
                if holder.token != last.token {
                    report.progress(&format!(
                        "still waiting for {}: now held by {}",
                        lease.keys.display_name(),
                        holder.describe(wall_ms())
                    ));
                }
                last = holder;
            }
        }
        let now = crate::clock::now();
        let left = match deadline {
            Some(d) if now >= d => {
                // Whether the lock is busy is unknown when the last try failed: say why.
                return match transient {
                    Some(e) => Err(e),
                    None => Ok(Waited::Busy(last)),
                };
            }
            Some(d) => d - now,
            None => Duration::MAX,
        };
        let nap = timing::poll_delay(attempt, last.ttl_left, fastrand::f64()).min(left);
        attempt = attempt.saturating_add(1);
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            Some(message) = releases.next() => {
                if message {
                    report.verbose(|| "release message received".to_string());
                    attempt = 0;
                } else {
                    resubscribe = true;
                }
            }
            Some(sig) = signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Ok(Waited::Interrupted(sig));
                }
            }
        }
    }
}

/// Release messages (`true`) from every node that accepted the subscription, and
/// `false` when one of those subscriptions ends; with none, a stream that never yields
/// (polling alone then finds the release).
async fn subscribe(lease: &Lease, report: &Reporter) -> BoxStream<'static, bool> {
    let subs = futures_util::future::join_all(
        lease
            .nodes
            .iter()
            .map(|node| node.subscribe(&lease.keys.channel)),
    )
    .await;
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

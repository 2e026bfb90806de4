//! The lock-delay: a run that took its names on a server that may have restarted empty
//! since it or its host last talked to it does not start its command until every lease
//! the old server could have held on those names has ended (Chubby's and Consul's
//! lock-delay, applied only when there is evidence of a restart). A server restarted
//! without persistence has forgotten the lock: the old holder runs on until its next
//! renewal finds the key gone (up to ttl/3 and its stop), while the restarted server
//! grants the name again at once (review-7 finding 5: two `--elect` leaders for up to a
//! second).
//!
//! - **Asked.** After the grant and before the command, each server (not a Cluster)
//!   is asked its run ID and uptime (`INFO server`, one request, 3 µs of Redis CPU:
//!   never on a try the glance answered, which stays a few cheap reads). A plain first
//!   try whose glance found the lock free sends it with the acquire, in the same round
//!   trip (`Lease::vote_reading_life`); read so, it stands for the grant's server
//!   unless a connection failed since. A host without a local directory asks only
//!   when the run saw a connection fail.
//! - **Evidence, in the run.** A connection to the server failed (dropped, refused,
//!   timed out) after it had answered this run or accepted its connection, or a
//!   renewal found the lease gone (`Node::take_failure`, `Node::suspect`): the standby
//!   whose wait ended on a dropped connection, a waiter, a leader that lost its term
//!   and takes the next. Restarted if the uptime is shorter than the time since that
//!   last answer (a new process); otherwise it is the server that answered, and the
//!   lock's state is intact.
//! - **Evidence, on the host.** The host keeps the run ID and the data epoch it last
//!   saw at each server's address (`redis::life`, in the local directory): another run
//!   ID now means the server restarted (or was replaced) since this host's last run
//!   there, a cron run started after a restart it never saw included; the same run ID
//!   and another epoch (or none: this run writes it anew) means the data was flushed
//!   (`FLUSHALL`, `FLUSHDB`), at most the new epoch's age ago. A host that never saw the
//!   server (a demo on a fresh server) has nothing to compare and is not delayed.
//! - **The bound.** A lease granted or renewed before the restart expires at most its
//!   ttl after it. The ttl is the larger of the run's own and the holder's this run saw
//!   last (its metadata records the ttl it renews to): the holder seen last need not be
//!   the last before the restart, and the runs of one name are usually started alike
//!   (one cron line, one unit), so the run's own ttl stands for a holder it never saw.
//!   The delay is what remains of that bound (plus the clock drift allowance) after the
//!   server's uptime (after a flush, the new epoch's age). A server that cannot be
//!   asked after its connection failed (INFO refused by an ACL, gone again) gets the
//!   whole bound.
//! - **Meanwhile** the names are held and renewed as usual, so nothing else takes them;
//!   a signal that ends a wait gives them back (nothing ran), a name lost or asked to
//!   stop gives them all back and ends the run as a lost lock (an `--elect` standby
//!   stands by again). One line says why the run waits, and a `lock_delay` event.
//!   `--wait` does not bound it: the run holds the lock, it is not waiting for it
//!   (giving it back as busy would say a free lock was held).
//!
//! A server restarted with persistence delays the same: its uptime says it restarted,
//! not what it kept (`appendfsync everysec` loses up to a second of writes).
//! A Redis Cluster is not asked (INFO has no key to route it by); nor a host that first
//! meets a server after it restarted or was flushed: there the old holder's next
//! renewal is the only detection, as before. A flush whose epoch another host wrote
//! again delays this host only for what remains after the epoch's age.

use std::time::Duration;

use super::release::give_back;
use super::{End, Run, Step};
use crate::clock;
use crate::error::{Error, Kind};
use crate::events::Event;
use crate::lease::{Lease, Renew};
use crate::redis::{Node, life};
use crate::report::human;
use crate::timing::{self, Point};

/// What the evidence came to: what happened to the server's data and how long ago,
/// and the run waits `delay`.
struct Restarted {
    what: Lost,
    delay: Duration,
}

/// How the server may have lost the lock's state.
enum Lost {
    /// It restarted this long ago (its uptime).
    Restarted(Duration),
    /// Its data was flushed, at most this long ago (its new epoch's age).
    Flushed(Duration),
    /// Its connection failed and it cannot be asked when it started.
    Unknown,
}

/// After the names of `leases` are taken (the earliest sent at `t_sent`): waits out the
/// lock-delay when a server restarted since it last answered, the names held and
/// renewed meanwhile. `holder_ttl`: the ttl of the holder this run saw last, if any.
/// Returns when the lease was last renewed (`t_sent` when there was nothing to wait).
pub(super) async fn wait_out(
    run: &mut Run<'_>,
    leases: &[Lease],
    holder_ttl: Option<Duration>,
    (t_sent, acquired_at): (Point, Point),
) -> Step<Point> {
    if leases.iter().all(Lease::is_inside) {
        // A nested run: the enclosing run took these names and asked.
        return Ok(t_sent);
    }
    let own = run.config.budget.ttl;
    let bound = holder_ttl.map_or(own, |ttl| ttl.max(own));
    let Some(restarted) = restarted(leases, bound).await else {
        return Ok(t_sent);
    };
    say(run, leases, &restarted, bound);
    let until = clock::now() + restarted.delay;
    hold(run, leases, (t_sent, acquired_at), until).await
}

/// Asks each node (not a Cluster) how long it has been up and what its run ID is, at
/// once; the longest delay the answers call for, `None` when none does. One server that
/// cannot be asked after its connection failed is waited for a whole ttl; over several
/// `--redis` nodes (Redlock) a node that cannot be asked now is not (a partitioned node
/// is the common case there, and the grant came from a majority that answered): waiting
/// a whole ttl for it held runs in partial partitions until their lease ran out
/// (nemesis F24, 79).
async fn restarted(leases: &[Lease], bound: Duration) -> Option<Restarted> {
    let several = leases[0].nodes().given() > 1;
    let epoch = &leases[0].keys().epoch;
    let nodes = leases[0].nodes().iter().filter(|n| !n.routes_by_slot());
    let verdicts = futures_util::future::join_all(nodes.map(|n| verdict(n, epoch, bound, several)));
    let verdicts = verdicts.await;
    verdicts.into_iter().flatten().max_by_key(|r| r.delay)
}

/// One node's evidence, asked for: its connection failed after it answered this run
/// (a restart since that answer?), or this host last saw another run ID at its address
/// (a restart since this host's last run there), or the same run ID and another data
/// epoch (a flush since). A host that keeps nothing (no local directory) and saw no
/// failure asks nothing. What was seen is kept for the host's next runs.
async fn verdict(node: &Node, epoch: &[u8], bound: Duration, several: bool) -> Option<Restarted> {
    let failed_after = node.take_failure();
    // Read beside the acquire (same connection, same server process), good unless a
    // connection failed since: then the grant may have come from another process.
    let read = node.take_life_read().filter(|_| failed_after.is_none());
    if failed_after.is_none() && !crate::redis::kept::enabled() {
        return None;
    }
    let identity = format!(
        "{} {}",
        node.url().server_identity(),
        String::from_utf8_lossy(epoch)
    );
    let before = life::last_seen(&identity);
    let asked = match read {
        Some(life) => Ok(life),
        None => node.server_life(epoch).await,
    };
    let mut life = match asked {
        Ok(life) => life,
        Err(_) if failed_after.is_some() && !several => {
            return Some(Restarted {
                what: Lost::Unknown,
                delay: bound + timing::drift(bound),
            });
        }
        Err(_) => return None,
    };
    if life.epoch_missing {
        life.epoch = node.write_epoch(epoch).await;
    }
    let now_ms = clock::wall_ms();
    life::saw(&identity, &life, now_ms, before.as_ref());
    let restarted = |delay| Restarted {
        what: Lost::Restarted(life.uptime),
        delay,
    };
    let in_run = failed_after.and_then(|answered_at| {
        let since = clock::now().saturating_sub(answered_at);
        timing::lock_delay(life.uptime, Some(since), bound).map(restarted)
    });
    let seen = before.as_ref();
    let on_host = seen
        .filter(|seen| seen.run_id != life.run_id)
        .and_then(|_| timing::lock_delay(life.uptime, None, bound).map(restarted));
    let flushed = seen
        .filter(|seen| seen.flushed_by(&life, now_ms))
        .and_then(|_| {
            let age = life.epoch.as_ref()?.age;
            timing::lock_delay(age, None, bound).map(|delay| Restarted {
                what: Lost::Flushed(age),
                delay,
            })
        });
    [in_run, on_host, flushed]
        .into_iter()
        .flatten()
        .max_by_key(|r| r.delay)
}

/// The one line (hidden by `--quiet`) and the `lock_delay` event, once per take.
fn say(run: &Run<'_>, leases: &[Lease], restarted: &Restarted, bound: Duration) {
    let name = leases[0].keys().display_name();
    let why = match restarted.what {
        Lost::Restarted(ago) => format!("the server restarted {} ago", human(ago)),
        Lost::Flushed(ago) => format!(
            "the server's data was flushed (its keys gone, the same process) at most {} ago",
            human(ago)
        ),
        Lost::Unknown => {
            "a connection to the server failed and it cannot be asked when it started".to_string()
        }
    };
    let (uptime, flushed) = match restarted.what {
        Lost::Restarted(ago) => (Some(ago), None),
        Lost::Flushed(ago) => (None, Some(ago)),
        Lost::Unknown => (None, None),
    };
    run.report.note(&format!(
        "{name}: {why}; waiting {} for any lease from before it to end (lock-delay, ttl {})",
        human(restarted.delay),
        human(bound)
    ));
    run.report.event(
        Event::LockDelay,
        &name,
        serde_json::json!({
            "uptime_ms": uptime.map(|a| a.as_millis() as u64),
            "flushed_ms": flushed.map(|a| a.as_millis() as u64),
            "delay_ms": restarted.delay.as_millis() as u64,
            "ttl_ms": bound.as_millis() as u64,
        }),
    );
}

/// Holds every name until `until`, renewing them on the supervisor's schedule; returns
/// when the last renewal was sent (of several names, the earliest).
async fn hold(
    run: &mut Run<'_>,
    leases: &[Lease],
    (t_sent, acquired_at): (Point, Point),
    until: Point,
) -> Step<Point> {
    let budget = run.config.budget;
    let mut sent = vec![t_sent; leases.len()];
    let mut last_attempt = None;
    loop {
        let now = clock::now();
        let earliest = sent.iter().copied().min().unwrap_or(t_sent);
        let end = budget.lease_end(earliest);
        if now >= budget.term_at(end) {
            return Err(gone(run, leases, acquired_at, "it could not be renewed").await);
        }
        let next = budget.next_renew(earliest, last_attempt);
        if now >= next {
            last_attempt = Some(now);
            for (i, lease) in leases.iter().enumerate() {
                match lease.renew().await {
                    Renew::Renewed { t_sent } => sent[i] = t_sent,
                    Renew::Preempt { .. } => {
                        return Err(gone(run, leases, acquired_at, "asked to stop").await);
                    }
                    Renew::Lost(why) => {
                        return Err(gone(run, leases, acquired_at, &why.to_string()).await);
                    }
                    Renew::Unknown(_) => {}
                }
            }
            continue;
        }
        if now >= until {
            return Ok(earliest);
        }
        let wake = next.min(until).min(budget.term_at(end));
        tokio::select! {
            Some(sig) = run.signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    for lease in leases {
                        give_back(lease, acquired_at, run.report).await;
                    }
                    run.report.note(&format!(
                        "interrupted by {sig} during the lock-delay; nothing was run"
                    ));
                    return Err(End::Status(crate::exit::from_signal(sig as i32)));
                }
            }
            _ = tokio::time::sleep(clock::sleep_for(wake)) => {}
        }
    }
}

/// A name lost (or asked to stop) during the lock-delay: every name is given back and
/// the run ends as a lost lock before its command started.
async fn gone(run: &Run<'_>, leases: &[Lease], acquired_at: Point, why: &str) -> End {
    for lease in leases {
        give_back(lease, acquired_at, run.report).await;
    }
    Error::new(
        Kind::Lost,
        format!(
            "lock {} lost during the lock-delay ({why}); nothing was run",
            leases[0].keys().display_name()
        ),
    )
    .into()
}

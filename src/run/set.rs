//! A run of several names (`--key A --key B …`): the command runs only while the run
//! holds every name, each with its own kind, token, lease, renewal and fence.
//!
//! All or nothing, and never a name held while waiting: a try takes the names in one
//! order (their keys, sorted), and when one is busy it gives back at once the names it
//! took and waits for that one alone, as a run of that name would (woken by its
//! release, one waiter per release). Once it holds that name, it tries the others; a
//! busy one is given back the same way. No run waits while it holds a name, so two
//! runs never wait for each other, whatever order their command lines give, and a run
//! that needs one of the names is never kept out by a run that is still waiting.
//!
//! Renewed together, the names keep one lease: it ends with the earliest. Losing any
//! one stops the command as a lost lock (79); the others are released as soon as the
//! command has stopped (not before: it may still be writing under them). Everything
//! after the take is the one term's (`term.rs`), for one name or several.

use std::time::Duration;

use super::{End, Run, Step};
use crate::error::Error;
use crate::guard::GroupGuard;
use crate::holder::Meta;
use crate::lease::{Acquire, Lease};
use crate::timing::Point;
use crate::wait::{self, WaitAs, Waited};

/// The leases of every name, the first name's first, each with its own token, over
/// the first name's nodes: a run of several names talks to each node over one
/// connection (and, while it holds, one pop over every name's request list).
pub(super) fn leases(run: &Run<'_>, first: Lease) -> Vec<Lease> {
    let nodes = first.nodes().clone();
    let others = run
        .config
        .also
        .iter()
        .map(|member| run.lease_over(nodes.clone(), member.keys.clone(), member.mode));
    std::iter::once(first)
        .chain(others.collect::<Vec<_>>())
        .collect()
}

/// What one pass over the names found.
enum Pass {
    /// Every name is held; the earliest of the sends that took them.
    All(Point),
    /// This name (its index) is busy: the names the pass took are given back.
    Busy(usize, Box<crate::holder::Holder>),
}

/// Takes every name, waiting as configured: when the earliest of the names was sent
/// for (the set's lease ends with it), the command's group guard when one was forked
/// while waiting, and the longest ttl of the holders it waited behind (see
/// `lock_delay.rs`).
pub(super) async fn take_all(
    run: &mut Run<'_>,
    leases: &mut [Lease],
    metas: &[Meta],
) -> Step<(Point, Option<GroupGuard>, Option<Duration>)> {
    let mut order: Vec<usize> = (0..leases.len()).collect();
    order.sort_by(|&a, &b| leases[a].keys().lock.cmp(&leases[b].keys().lock));
    let obituary = super::command::obituary(run);
    let mut guard = None;
    let mut held: Option<(usize, Point)> = None;
    let mut holder_ttl: Option<Duration> = None;
    loop {
        let (i, holder) = match pass(run, leases, metas, &order, held.take()).await? {
            Pass::All(t_sent) => return Ok((t_sent, guard, holder_ttl)),
            Pass::Busy(i, holder) => (i, *holder),
        };
        if !run.patience.allows_waiting() || run.patience.left().is_none() {
            return Err(run.busy(&leases[i], &holder));
        }
        let how = WaitAs {
            chatty: run.chatty(),
            head: None,
            found_busy: Some(&holder),
        };
        let waited = wait::acquire(
            &leases[i],
            &metas[i],
            &run.patience,
            how,
            &mut run.signals,
            run.report,
            || {
                if guard.is_none() {
                    guard = GroupGuard::fork(&obituary);
                }
            },
        );
        match waited.await? {
            Waited::Acquired {
                t_sent,
                holder_ttl: ttl,
            } => {
                holder_ttl = holder_ttl.max(ttl);
                held = Some((i, t_sent));
            }
            Waited::Busy(holder) => return Err(run.busy(&leases[i], &holder)),
            Waited::Interrupted(sig) => return Err(run.interrupted_while_waiting(sig)),
            Waited::Skipped(_) => {
                return Err(Error::internal("a name of a set was skipped").into());
            }
        }
    }
}

/// One pass: tries each name in `order` without waiting (`held`: a name already taken,
/// and when); at the first busy one, gives back what it took (the name waited for
/// included) and says which. An error gives back what it took too.
async fn pass(
    run: &Run<'_>,
    leases: &mut [Lease],
    metas: &[Meta],
    order: &[usize],
    held: Option<(usize, Point)>,
) -> Step<Pass> {
    let mut taken: Vec<usize> = held.iter().map(|(i, _)| *i).collect();
    let mut earliest = held.map(|(_, at)| at);
    for &i in order.iter().filter(|i| held.is_none_or(|(h, _)| h != **i)) {
        let tried = leases[i].acquire(&metas[i], None).await;
        let tried = match tried {
            Ok(Acquire::Acquired { t_sent }) => {
                taken.push(i);
                earliest = Some(earliest.map_or(t_sent, |e: Point| e.min(t_sent)));
                continue;
            }
            Ok(Acquire::Busy(holder)) => Ok(Pass::Busy(i, Box::new(holder))),
            Ok(Acquire::Skipped(_)) => Err(Error::internal("a name of a set was skipped")),
            Err(e) => Err(e),
        };
        give_back_quietly(leases, &taken).await;
        if let Err(e) = &tried
            && e.is_transient()
            && run.patience.allows_waiting()
        {
            // Busy for all we know: the wait on this name retries it with a backoff.
            run.report
                .verbose(|| format!("acquire failed, retrying: {e}"));
            return Ok(Pass::Busy(i, Box::default()));
        }
        return tried.map_err(End::from);
    }
    Ok(Pass::All(earliest.unwrap_or_else(crate::clock::now)))
}

/// Gives back the names a pass took: compare-and-delete, no record, no event (the
/// command never started under them); a release wakes that name's next waiter. Last
/// key first (see [`last_first`]). Each lease forgets its grant: taken again, its
/// fence and slot are the new grant's.
async fn give_back_quietly(leases: &mut [Lease], taken: &[usize]) {
    for i in last_first(leases, taken) {
        let _ = leases[i].release_all(0, None).await;
        leases[i].given_back();
    }
}

/// `names` in the order a run of several names releases them: their keys from the
/// last to the first, one after the other. A waiter waits for the first of its names
/// that was busy and, woken, takes the names from the first on: by then every later
/// name of the releasing run is free, so it is not bounced by a release still on its
/// way.
pub(super) fn last_first(leases: &[Lease], names: &[usize]) -> Vec<usize> {
    let mut order = names.to_vec();
    order.sort_by(|&a, &b| leases[b].keys().lock.cmp(&leases[a].keys().lock));
    order
}

/// The other name of the set whose loss (or preempt) ended the run, for `lease`'s
/// record: `None` on the lost name's own record, and when no one name ended it (a
/// `--max-hold`, a wrapper stopped past its lease: every name is given up).
pub(super) fn ended_by<'a>(
    lease: &Lease,
    leases: &[Lease],
    lost: Option<&'a str>,
) -> Option<&'a str> {
    let lost = lost?;
    let one_of_ours = leases.iter().any(|l| l.keys().display_name() == lost);
    (one_of_ours && lease.keys().display_name() != lost).then_some(lost)
}

//! A run inside a holder of its own names (a nested `redlock-run` in the command): it
//! is a run like any other, through the one term (`term.rs`), and differs only in
//! that a name its enclosing run holds is already taken. Its lease of that name has
//! the enclosing run's token ([`Inside`]): the take asks the kind's acquire script,
//! which finds the lock already that token's and answers the run's own completion
//! checks (`--once-id`, `--once-per`, `--max-attempts`, `--if-vanished`, `--order-key`)
//! and marks its start, as for any run; the command's environment is the run's own
//! names' (their tokens and fences); the release records the run (a token of its own,
//! `"inside"` naming the enclosing run's) and leaves the name to the enclosing run. A
//! name it does not hold is taken as any run takes it.
//!
//! Each name is looked up on its own: the enclosing run gives every name's token as
//! `REDLOCK_TOKEN_<NAME>`, its fence as `REDLOCK_FENCE_<NAME>` and a pool's slot as
//! `REDLOCK_SLOT_<NAME>` (see `child::env::of_name`: two names never share a
//! variable). Whether the token still holds the name is the name's kind's question
//! (`LockKind::holding`), asked of Redis: a stale or forged token acquires like any run.
//!
//! What a nested run cannot have is refused at once (64), never waited for: an
//! exclusive run inside a share of the name, a run of another kind inside a pool's
//! slot (a plain run, another `--limit`), `--elect`, and a record of its own
//! (`--once-id`, `--once-per`, newest wins) on a pool's slot or a share, whose holding
//! no acquire script can find again.

use std::time::Duration;

use super::{End, Run, Step};
use crate::child::env;
use crate::config::{Member, RunConfig};
use crate::error::Error;
use crate::keys::LockKeys;
use crate::kinds::LockKind;
use crate::lease::{Inside, Lease};

/// What the environment says an enclosing run holds of a name.
struct Inherited {
    token: String,
    /// The pool slot it holds (`None`: not a pool's).
    slot: Option<u32>,
    fence: u64,
    /// The enclosing run's ttl: the nested lease renews with it, never shorter.
    ttl: Option<Duration>,
}

/// Whether this run is nested in a holder of one of its names (a token for it in our
/// environment): it must not queue behind the host's next head, which waits for the
/// enclosing run. Redis still checks the token (see [`leases`]); a forged one only
/// skips the local queue.
pub(super) fn is_nested(config: &RunConfig) -> bool {
    names(config).iter().any(|m| inherited(&m.keys).is_some())
}

/// What our environment gives for the name `keys`.
fn inherited(keys: &LockKeys) -> Option<Inherited> {
    let var = |base: &str| std::env::var(env::of_name(base, &keys.name)).ok();
    let first = || {
        let key = std::env::var_os(env::KEY)?;
        (std::os::unix::ffi::OsStrExt::as_bytes(key.as_os_str()) == keys.lock.as_slice())
            .then(|| std::env::var(env::TOKEN).ok())
            .flatten()
    };
    let token = var(env::TOKEN).or_else(first)?;
    let fence = var(env::FENCE).or_else(|| std::env::var(env::FENCE).ok());
    Some(Inherited {
        token,
        slot: var(env::SLOT)
            .and_then(|s| s.parse().ok())
            .filter(|s| *s > 0),
        fence: fence.and_then(|f| f.parse().ok()).unwrap_or(0),
        ttl: std::env::var(env::TTL_MS)
            .ok()
            .and_then(|t| t.parse().ok())
            .filter(|t| *t > 0)
            .map(Duration::from_millis),
    })
}

/// Every name's lease, the first name's first (`first`, as connected): a name whose
/// inherited token holds it is a lease with that token, taken as already held; the
/// others are taken as any run's. Ends the run with a usage error for what a nested
/// run cannot have.
pub(super) async fn leases(run: &mut Run<'_>, first: Lease) -> Step<Vec<Lease>> {
    let leases = super::set::leases(run, first);
    let names = names(&run.config);
    if !names.iter().any(|m| inherited(&m.keys).is_some()) {
        return Ok(leases);
    }
    let mut out = Vec::with_capacity(leases.len());
    for (lease, member) in leases.into_iter().zip(&names) {
        match inherited(&member.keys) {
            Some(inherited) if holds(run, &lease, member, &inherited).await? => {
                out.push(inside(run, lease, member, inherited)?);
            }
            _ => out.push(lease),
        }
    }
    if out.iter().any(Lease::is_inside) {
        refuse_elect(run)?;
        if let Some(metrics) = run.report.metrics.as_ref().filter(|m| m.is_inherited()) {
            metrics.nested();
        }
    }
    Ok(out)
}

/// The lease of a name the enclosing run holds: its token, its ttl (a renewal never
/// shortens the enclosing run's lease), its slot and fence.
fn inside(run: &Run<'_>, lease: Lease, member: &Member, inherited: Inherited) -> Step<Lease> {
    let name = member.keys.display_name();
    run.report
        .verbose(|| format!("{name} is held by the enclosing run; taken as held"));
    let ttl = inherited.ttl.unwrap_or(run.config.budget.ttl);
    let nodes = lease.nodes().clone();
    let at = Inside {
        slot: inherited.slot.unwrap_or(1),
        fence: inherited.fence,
    };
    let lease = run
        .lease_as(
            nodes,
            member.keys.clone(),
            member.mode,
            inherited.token,
            ttl,
        )
        .inside(at);
    refuse_record_of_a_share_or_slot(run, &lease, member)?;
    Ok(lease)
}

/// Whether the inherited token holds the name as the kind this run asks for. The
/// name's kind decides first, as at the top level: a name in use as another kind (a
/// share, a pool, another `--limit`, a fair or newest queue), or a plain lock the token
/// holds while this run asks for a kind, is refused at once, whichever slot or share
/// the enclosing run got; a token that no longer holds a name of the same kind gets no
/// bypass (the name is taken as any run's).
async fn holds(run: &Run<'_>, lease: &Lease, member: &Member, inherited: &Inherited) -> Step<bool> {
    let kind = LockKind::of(member.mode);
    let keys = &member.keys;
    let (name, token) = (keys.display_name(), &inherited.token);
    let want = kind.rules().key_text();
    let mode = name_mode(lease, keys).await?;
    if mode.is_some() && mode != want {
        let what = match LockKind::parse(mode.as_deref().unwrap_or_default()) {
            Some(other) => other.rules().flags(),
            None => format!("a lock of another kind ({mode:?})"),
        };
        return Err(other_kind(&name, &what, &kind.rules().asked()));
    }
    let slot = inherited.slot.unwrap_or(1);
    let holding = kind.holding(keys, slot, token);
    let holds = lease.holds(&holding, token).await?;
    if holds && mode.is_none() && want.is_some() {
        let what = LockKind::Plain.rules().flags();
        return Err(other_kind(&name, &what, &kind.rules().asked()));
    }
    if !holds {
        run.report
            .verbose(|| format!("the inherited token does not hold {name}; acquiring"));
    }
    Ok(holds)
}

/// The name's mode key (`limit 3`, `shared`, `fair`; `None`: a plain lock, or none),
/// as the primary node has it.
async fn name_mode(lease: &Lease, keys: &LockKeys) -> Step<Option<String>> {
    let Some(node) = lease.nodes().primary() else {
        return Ok(None);
    };
    let get = crate::redis::command::get(&keys.mode);
    Ok(node.query::<Option<String>>(&get).await?)
}

/// The usage error of a nested run that asked for `asked` on `name`, which its
/// enclosing run holds as `holds`.
fn other_kind(name: &str, holds: &str, asked: &str) -> End {
    End::Failed(Error::usage(format!(
        "lock {name}: the enclosing run holds it as {holds}, and this nested run asked for {asked}; a nested run asks for the kind its enclosing run holds (or runs outside it)"
    )))
}

/// `--elect` inside a holder of its name: a standby of a name its own enclosing run
/// leads cannot take over.
fn refuse_elect(run: &Run<'_>) -> Step<()> {
    if run.config.policy.elect.is_none() {
        return Ok(());
    }
    Err(End::Failed(Error::usage(
        "--elect inside a run that holds its name: the enclosing run already leads; run the standby outside it",
    )))
}

/// A nested run of a pool's slot or a share records nothing of its own: no acquire
/// script can find that holding again, so `--once-id`, `--once-per` and newest wins,
/// which need one, are refused.
fn refuse_record_of_a_share_or_slot(run: &Run<'_>, lease: &Lease, member: &Member) -> Step<()> {
    let policy = &run.config.policy;
    let completion = &policy.completion;
    let records =
        completion.once_id.is_some() || completion.once_per.is_some() || policy.newest.is_some();
    let scripted =
        lease.kind().slots() == 1 && lease.kind().holders() == crate::kinds::Holders::Key;
    if !records || scripted {
        return Ok(());
    }
    Err(End::Failed(Error::usage(format!(
        "lock {}: a nested run of a pool's slot or a share cannot use --once-id, --once-per or --supersede/--order-key; give them to the enclosing run",
        member.keys.display_name()
    ))))
}

/// Every name of the run, the first one first, with the kind it asks for.
fn names(config: &RunConfig) -> Vec<Member> {
    let first = Member {
        keys: config.keys.clone(),
        mode: config.policy.mode,
    };
    std::iter::once(first).chain(config.also.clone()).collect()
}

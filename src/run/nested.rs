//! A run inside a holder of its own names (a nested `redlock-run` in the command): the
//! names an enclosing run holds are not taken again. A run whose names are all held
//! runs its command at once instead of waiting for the enclosing run, which keeps
//! renewing and releasing; one that needs held names and others takes only the others
//! (all or nothing over those). A nested run is never a waiter, a writer or a second
//! share of a name it holds.
//!
//! Each name is looked up on its own: the enclosing run gives every name's token as
//! `REDLOCK_TOKEN_<NAME>` (a pool's slot as `REDLOCK_SLOT_<NAME>`), and the first
//! name's as `REDLOCK_KEY` and `REDLOCK_TOKEN`. Whether the token still holds the name
//! is the name's kind's question (`LockKind::holding`: a lock key's value, a pool's
//! slot, an entry among the shares), asked of Redis: a stale or forged token acquires
//! like any run.

use std::os::unix::ffi::OsStrExt;

use super::{End, Run, Step, command};
use crate::child::{self, env};
use crate::config::{Member, RunConfig};
use crate::keys::LockKeys;
use crate::kinds::LockKind;
use crate::lease::Lease;

/// Whether this run is nested in a holder of its name (a token for it in our
/// environment): it must not queue behind the host's next head, which waits for the
/// enclosing run. Redis still checks the token (see [`run_if_nested`]); a forged one
/// only skips the local queue.
pub(super) fn is_nested(config: &RunConfig) -> bool {
    inherited(&config.keys, config.kind()).is_some()
}

/// The token our environment gives for the name `keys` of kind `kind`, and the pool
/// slot it holds (1 for any other kind).
fn inherited(keys: &LockKeys, kind: LockKind) -> Option<(String, u32)> {
    let slots = kind.rules().slots();
    let slot_in = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|s| slots > 1 && (1..=slots).contains(s))
            .unwrap_or(1)
    };
    if let Ok(token) = std::env::var(env::of_name(env::TOKEN, &keys.name)) {
        return Some((token, slot_in(&env::of_name(env::SLOT, &keys.name))));
    }
    let key = std::env::var_os(env::KEY)?;
    let token = std::env::var(env::TOKEN).ok()?;
    (1..=slots)
        .any(|slot| keys.for_slot(slot).lock == key.as_bytes())
        .then(|| (token, slot_in(env::SLOT)))
}

/// Leaves out the names an enclosing run holds: runs the command at once when it holds
/// every name (ends the run with the command's status, `Err(End::Status)`); else goes
/// on with the names it does not hold (the lease of the first of them).
pub(super) async fn run_if_nested(run: &mut Run<'_>, lease: Lease) -> Step<Lease> {
    let names = names(&run.config);
    let held = held(run, &lease, &names).await?;
    if !held.contains(&true) {
        return Ok(lease);
    }
    let report = run.report;
    if let Some(metrics) = &report.metrics {
        metrics.nested();
    }
    if !held.contains(&false) {
        report.verbose(|| "already held by the enclosing run; running at once".to_string());
        let outcome = command::run_command(run, None, None).await?;
        return Err(End::Status(child::exit_code(outcome.status)));
    }
    let (kept, left): (Vec<_>, Vec<_>) = names.into_iter().zip(held).partition(|(_, h)| *h);
    report.verbose(|| {
        let kept: Vec<String> = kept.iter().map(|(m, _)| m.keys.display_name()).collect();
        format!(
            "{} held by the enclosing run; taking the others",
            kept.join(", ")
        )
    });
    let mut left = left.into_iter().map(|(m, _)| m);
    let first = left.next().expect("a name is not held");
    run.config.also = left.collect();
    if first.keys.lock == lease.keys().lock {
        return Ok(lease);
    }
    run.config.keys = first.keys;
    run.config.policy.mode = first.mode;
    run.connect().await
}

/// Every name of the run, the first one first, with the kind it asks for.
fn names(config: &RunConfig) -> Vec<Member> {
    let first = Member {
        keys: config.keys.clone(),
        mode: config.policy.mode,
    };
    std::iter::once(first).chain(config.also.clone()).collect()
}

/// For each name, whether our environment's token for it holds it now (asked through
/// `lease`'s nodes, which every name of the run shares).
async fn held(run: &Run<'_>, lease: &Lease, names: &[Member]) -> Step<Vec<bool>> {
    let mut held = Vec::with_capacity(names.len());
    for member in names {
        let kind = LockKind::of(member.mode);
        let Some((token, slot)) = inherited(&member.keys, kind) else {
            held.push(false);
            continue;
        };
        let holding = kind.holding(&member.keys, slot, &token);
        let holds = lease.holds(&holding, &token).await?;
        if !holds {
            let name = member.keys.display_name();
            run.report
                .verbose(|| format!("the inherited token does not hold {name}; acquiring"));
        }
        held.push(holds);
    }
    Ok(held)
}

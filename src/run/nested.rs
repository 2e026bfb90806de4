//! A run inside a holder of its own lock (a nested `redlock-run` in the command): it
//! runs its command at once instead of waiting for the enclosing run, which keeps
//! renewing and releasing. Only a token that still holds the lock gets this; a stale
//! or forged one acquires like any run.

use std::os::unix::ffi::OsStrExt;

use super::{End, Run, Step, command};
use crate::child::{self, env};
use crate::config::RunConfig;
use crate::lease::Lease;

/// Whether this run is nested in a holder of this lock (its key in our environment):
/// it must not queue behind the host's next head, which waits for the enclosing run.
/// Redis still checks the token (see [`run_if_nested`]); a forged key only skips the
/// local queue.
pub(super) fn is_nested(config: &RunConfig) -> bool {
    let Some(key) = std::env::var_os(env::KEY) else {
        return false;
    };
    (1..=config.kind().rules().slots())
        .any(|slot| config.keys.for_slot(slot).lock == key.as_bytes())
}

/// Runs the command at once when this process already holds the lock: the key and
/// token in our environment must match and the token must still be the lock's value.
/// Ends the run with the command's status then (`Err(End::Status)`); `Ok(())`: not
/// nested, go on.
pub(super) async fn run_if_nested(run: &mut Run<'_>, lease: &Lease) -> Step<()> {
    let (Some(key), Some(token)) = (std::env::var_os(env::KEY), std::env::var(env::TOKEN).ok())
    else {
        return Ok(());
    };
    // A semaphore's holder holds one slot: the one in its environment.
    let slot = std::env::var(env::SLOT)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|_| lease.is_semaphore())
        .unwrap_or(1);
    let held = lease.keys().for_slot(slot).lock;
    if key.as_bytes() != held.as_slice() {
        return Ok(());
    }
    let report = run.report;
    if !lease.held_by(&held, &token).await? {
        report.verbose(|| "inherited token does not hold the lock; acquiring".to_string());
        return Ok(());
    }
    report.verbose(|| "already held by the enclosing run; running at once".to_string());
    if let Some(metrics) = &report.metrics {
        metrics.nested();
    }
    let outcome = command::run_command(run, None, None).await?;
    Err(End::Status(child::exit_code(outcome.status)))
}

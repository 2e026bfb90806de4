//! The command: started with the lock's environment, its process group watched by a
//! guard, and supervised to its end.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::Run;
use crate::child::{self, env};
use crate::error::Result;
use crate::guard::GroupGuard;
use crate::supervise::{self, Held};

/// Starts the command with the lock's environment (when `held`) and a [`GroupGuard`]
/// watching its process group (`guard`, or one forked now), and supervises it to the
/// end. The guard is forked before the spawn, so the window in which a `kill -9` of the
/// wrapper could leave the group unguarded is one write(2), not a fork.
pub(super) async fn run_command(
    run: &mut Run<'_>,
    held: Option<Held<'_>>,
    guard: Option<GroupGuard>,
) -> Result<supervise::Outcome> {
    let numbers = held.as_ref().map(|h| {
        (
            h.budget.ttl.as_millis().to_string(),
            h.lease.fence().to_string(),
            h.lease.slot().to_string(),
        )
    });
    let attempt = held.as_ref().and_then(|h| h.lease.attempt());
    let attempt = attempt.map(|(n, _)| n.to_string());
    let slot_start = held.as_ref().and_then(|h| h.lease.slot_start_ms());
    let slot_start = slot_start.map(|ms| ms.to_string());
    let mut envs: Vec<(&str, &OsStr)> = match (&held, &numbers) {
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
    if let Some(slot_start) = &slot_start {
        envs.push((env::SLOT_START, OsStr::new(slot_start)));
    }
    if let Some(attempt) = &attempt {
        envs.push((env::ATTEMPT, OsStr::new(attempt)));
    }
    let mut guard = guard.or_else(GroupGuard::fork);
    let argv = &run.config.command;
    let started = child::spawn(&run.program, argv, &envs, child::foreground_terminal())?;
    if let Some(guard) = guard.as_mut() {
        guard.watch(started.group.id());
    }
    let outcome = supervise::supervise(started, held, &mut run.signals, run.report).await;
    // The group is stopped by now: stand the guard down before the release.
    drop(guard);
    Ok(outcome)
}

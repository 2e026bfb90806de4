//! The command: started with the lock's environment, its process group watched by a
//! guard, and supervised to its end.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use super::Run;
use crate::child::{self, env};
use crate::error::Result;
use crate::guard::{GroupGuard, Obituary};
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
    let envs = held.as_ref().map(lock_env).unwrap_or_default();
    let envs: Vec<(&str, &OsStr)> = envs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_os_str()))
        .collect();
    let mut guard = guard.or_else(|| GroupGuard::fork(&obituary(run)));
    let argv = &run.config.command;
    let defaults = crate::signals::for_the_command(run.config.policy.stop.signal);
    let terminal = child::foreground_terminal();
    let started = child::spawn(&run.program, argv, &envs, terminal, &defaults)?;
    if let Some(guard) = guard.as_mut() {
        guard.watch(started.group.id());
    }
    let outcome =
        supervise::supervise(started, held, &mut run.signals, run.report, guard.as_ref()).await;
    // The group is stopped by now: stand the guard down before the release.
    drop(guard);
    Ok(outcome)
}

/// What the group guard tidies if the wrapper dies with the command started: the
/// `--ready-file`, and the `--metrics` file's running and leader samples.
pub(super) fn obituary(run: &Run<'_>) -> Obituary {
    Obituary {
        ready_file: run.config.ready_file.clone(),
        metrics: run.report.metrics.as_ref().and_then(|m| m.obituary()),
    }
}

/// The lock's environment for the command: key, name, token, ttl and fencing number;
/// the slot of a semaphore; the slot's start of a `--once-per` run; the attempt of a
/// `--once-per` or `--once-id` run. A run of several names gives the first name's as
/// these. Every run gives each name's token as `REDLOCK_TOKEN_<NAME>`, its fencing
/// number as `REDLOCK_FENCE_<NAME>` and a pool's slot as `REDLOCK_SLOT_<NAME>` (see
/// [`env::of_name`]): a nested run finds every name it holds by them.
fn lock_env(held: &Held<'_>) -> Vec<(String, OsString)> {
    let lease = held.lease;
    let mut envs: Vec<(String, OsString)> = vec![
        (
            env::KEY.into(),
            OsStr::from_bytes(&lease.keys().lock).to_owned(),
        ),
        (
            env::NAME.into(),
            OsStr::from_bytes(&lease.keys().name).to_owned(),
        ),
        (env::TOKEN.into(), lease.token().into()),
        (
            env::TTL_MS.into(),
            held.budget.ttl.as_millis().to_string().into(),
        ),
        (env::FENCE.into(), lease.fence().to_string().into()),
    ];
    if lease.is_semaphore() {
        envs.push((env::SLOT.into(), lease.slot().to_string().into()));
    }
    if let Some(start) = lease.slot_start_ms() {
        envs.push((env::SLOT_START.into(), start.to_string().into()));
    }
    if let Some((attempt, _)) = lease.attempt() {
        envs.push((env::ATTEMPT.into(), attempt.to_string().into()));
    }
    for member in std::iter::once(lease).chain(held.also) {
        let name = &member.keys().name;
        envs.push((env::of_name(env::TOKEN, name), member.token().into()));
        let fence = member.fence().to_string().into();
        envs.push((env::of_name(env::FENCE, name), fence));
        if member.is_semaphore() {
            let slot = member.slot().to_string().into();
            envs.push((env::of_name(env::SLOT, name), slot));
        }
    }
    envs
}

//! `redlock-run` / `redlock run` from a checked configuration to an exit status:
//! find the command, connect, take the lock (waiting if asked), run the command under
//! the supervisor, release, and report. A run that does not start its command leaves no
//! lock behind.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use futures_util::future::join_all;
use nix::sys::signal::Signal;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::child::{self, env};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::exit::{self, Code};
use crate::holder::{self, wall_ms};
use crate::lease::{Lease, Release};
use crate::node::Node;
use crate::report::Reporter;
use crate::supervise::{self, GroupGuard, Held};
use crate::timing;
use crate::wait::{self, Waited};

/// Runs the wrapper; returns the exit status.
pub async fn run(config: RunConfig, report: &Reporter) -> u8 {
    match run_inner(config, report).await {
        Ok(code) => code,
        Err(e) => {
            report.error(&e.message);
            e.code.value()
        }
    }
}

async fn run_inner(config: RunConfig, report: &Reporter) -> Result<u8> {
    let program = child::resolve(&config.command[0])?;
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = nix::sys::prctl::set_child_subreaper(true);

    let nodes = connect_all(&config.conn.urls, config.budget.node_timeout).await?;
    let lease =
        Lease::new(nodes, config.keys.clone(), config.budget.ttl).over(config.conn.urls.len());

    if let Some(code) = reentrant(&config, &lease, &program, &mut signals, report).await? {
        return Ok(code);
    }

    let argv: Vec<String> = config
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cmdline = holder::recorded_command(&argv, config.hide_args);
    let meta = holder::local_fields(&lease.token, &cmdline, config.budget.ttl);
    let waited = wait::acquire(&lease, &meta, config.wait, &mut signals, report).await?;
    let t_sent = match waited {
        Waited::Acquired { t_sent } => t_sent,
        Waited::Busy(holder) => {
            report.note(&format!(
                "lock {} is busy: held by {}{}",
                lease.keys.display_name(),
                holder.describe(wall_ms()),
                holder
                    .ttl_left
                    .map(|t| format!(", expires in {}", holder::human(t)))
                    .unwrap_or_default()
            ));
            return Ok(config.busy_code);
        }
        Waited::Interrupted(sig) => {
            report.note(&format!(
                "interrupted by {sig} while waiting; nothing was run"
            ));
            return Ok(exit::from_signal(sig as i32));
        }
    };
    let acquired_at = crate::clock::now();
    // A signal that arrived while connecting or during the last acquire round ends the
    // run before the command starts, as it would have ended the wait.
    while let Ok(sig) = signals.try_recv() {
        if crate::signals::ends_wait(sig) {
            release(&lease, None, acquired_at, report).await;
            report.note(&format!(
                "interrupted by {sig} before the command started; nothing was run"
            ));
            return Ok(exit::from_signal(sig as i32));
        }
    }
    report.verbose(|| {
        format!(
            "acquired {} (token {}, ttl {})",
            lease.keys.display_name(),
            &lease.token[..8],
            holder::human(config.budget.ttl)
        )
    });

    let ttl_ms = config.budget.ttl.as_millis().to_string();
    let envs: Vec<(&str, &OsStr)> = vec![
        (env::KEY, OsStr::from_bytes(&lease.keys.lock)),
        (env::NAME, OsStr::from_bytes(&lease.keys.name)),
        (env::TOKEN, OsStr::new(&lease.token)),
        (env::TTL_MS, OsStr::new(&ttl_ms)),
    ];
    let (started, guard) = match start(&program, &config.command, &envs) {
        Ok(started) => started,
        Err(e) => {
            release(&lease, None, acquired_at, report).await;
            return Err(e);
        }
    };
    let held = Held {
        lease: &lease,
        budget: config.budget,
        on_lost: config.on_lost,
        t_sent,
    };
    let outcome = supervise::supervise(started, Some(held), &mut signals, report).await;
    // The group is stopped by now: stand the guard down before the release.
    drop(guard);
    let code = child::exit_code(outcome.status);
    if outcome.lost.is_some() {
        // The key may still hold our token (a renewal that reached a paused server):
        // take it back so it does not linger for another ttl.
        let _ = lease.release_all(0).await;
        report.verbose(|| format!("command ended with status {code} after losing the lock"));
        return Ok(Code::Lost.value());
    }
    release(&lease, config.hold_min, acquired_at, report).await;
    Ok(code)
}

/// Starts the command with a [`GroupGuard`] watching its process group. The guard is
/// forked before the spawn, so the window in which a `kill -9` of the wrapper could
/// leave the group unguarded is one write(2), not a fork.
fn start(
    program: &std::path::Path,
    argv: &[std::ffi::OsString],
    envs: &[(&str, &OsStr)],
) -> Result<(child::Started, Option<GroupGuard>)> {
    let mut guard = GroupGuard::fork();
    let started = child::spawn(program, argv, envs, child::foreground_terminal())?;
    if let Some(guard) = guard.as_mut() {
        guard.watch(started.pgid);
    }
    Ok((started, guard))
}

/// Connects to every node in parallel. With one node its error is the run's error; with
/// several, the run goes on while a quorum is reachable. The nodes left out still count
/// in the quorum: build the lease with [`Lease::over`]`(urls.len())`.
pub async fn connect_all(
    urls: &[crate::url::RedisUrl],
    timeout: std::time::Duration,
) -> Result<Vec<Node>> {
    let results = join_all(urls.iter().map(|u| Node::connect(u, timeout))).await;
    let quorum = urls.len() / 2 + 1;
    let mut nodes = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(node) => nodes.push(node),
            Err(e) => errors.push(e),
        }
    }
    if nodes.len() >= quorum {
        return Ok(nodes);
    }
    let mut err = errors.remove(0);
    if urls.len() > 1 {
        err.message = format!(
            "only {} of {} Redis nodes reachable, {quorum} needed; {}",
            nodes.len(),
            urls.len(),
            err.message
        );
    }
    Err(err)
}

/// Runs the command at once when this process already holds the lock (a nested
/// `redlock-run` inside the command): the key and token in our environment must match
/// and the token must still be the lock's value. The outer run keeps renewing and
/// releasing; a stale or forged token gets no bypass.
async fn reentrant(
    config: &RunConfig,
    lease: &Lease,
    program: &std::path::Path,
    signals: &mut UnboundedReceiver<Signal>,
    report: &Reporter,
) -> Result<Option<u8>> {
    let (Some(key), Some(token)) = (std::env::var_os(env::KEY), std::env::var(env::TOKEN).ok())
    else {
        return Ok(None);
    };
    if key.as_bytes() != lease.keys.lock.as_slice() {
        return Ok(None);
    }
    if !lease.held_by(&token).await? {
        report.verbose(|| "inherited token does not hold the lock; acquiring".to_string());
        return Ok(None);
    }
    report.verbose(|| "already held by the enclosing run; running at once".to_string());
    let (started, guard) = start(program, &config.command, &[])?;
    let outcome = supervise::supervise(started, None, signals, report).await;
    drop(guard);
    Ok(Some(child::exit_code(outcome.status)))
}

/// Releases after the command ended; with `--hold-min`, keeps the key for what remains.
async fn release(
    lease: &Lease,
    hold_min: Option<std::time::Duration>,
    acquired_at: timing::Point,
    report: &Reporter,
) {
    let held_for = crate::clock::now().saturating_sub(acquired_at);
    let keep = hold_min.and_then(|h| timing::hold_remaining(h, held_for));
    let keep_ms = keep.map_or(0, |k| k.as_millis().max(1) as u64);
    // A connection the server dropped while the command ran (CLIENT KILL, an idle
    // timeout, a proxy reset) fails the first request and reconnects only then: try
    // once more rather than leave the key to expire and waiters to poll for it. The
    // release is compare-and-delete, so a second try cannot remove anyone else's lock.
    let mut result = lease.release_all(keep_ms).await;
    if let Err(e) = &result
        && e.code == Code::Unreachable
    {
        report.verbose(|| format!("release failed, retrying: {e}"));
        result = lease.release_all(keep_ms).await;
    }
    match result {
        Ok(Release::Deleted) => report.verbose(|| "released".to_string()),
        Ok(Release::Kept) => report.verbose(|| {
            format!(
                "kept for {} more (--hold-min)",
                holder::human(keep.unwrap_or_default())
            )
        }),
        Ok(Release::NotHeld) => report.note(&format!(
            "lock {} was no longer ours at release (expired or removed)",
            lease.keys.display_name()
        )),
        Err(e) => report.note(&format!(
            "could not release {} ({}); it expires by itself within {}",
            lease.keys.display_name(),
            e.message,
            holder::human(lease.ttl)
        )),
    }
}

//! `--splay D`: a `--once-per` try first fixes its slot from the Redis server's `TIME`,
//! then waits its offset into the slot (`timing::splay_offset`: drawn from this host,
//! the name and the slot, so the same for a host that fires twice in one slot, another
//! in the next: the slot's winner rotates; spread over hosts), then tries for that
//! slot only (the lease's
//! slot pin, see `scripts::completion`): a fleet's tries spread over the first D of the
//! slot, and none runs on behalf of the next slot (past its end the try is skipped,
//! silently). A host that fires late in the slot tries at once, for that slot. The
//! time is read on a connection of its own, closed before the wait: a waiting host
//! holds no connection to Redis (a fleet of 800 would otherwise hold 800 at once).

use std::io::{Read, Seek, Write};

use nix::fcntl::{Flock, FlockArg};

use super::{End, Run, Step};
use crate::events::Event;
use crate::holder::Meta;
use crate::wait::{self, Connected, LocalQueue};

/// Whether this host already has a try of the name waiting its offset into the slot.
enum Here {
    /// No: this try waits, holding the host's splay file (`None`: no usable local
    /// directory, so no check).
    Alone(Option<Flock<std::fs::File>>),
    /// Yes, for this same slot.
    Already,
}

/// A host's splayed try holds a `flock(2)` on a file beside the name's local queue
/// (its slot written in it) while it waits its offset: a cron line that fires again
/// during the wait (`--splay 5m` on a minute line) finds it held for the same slot
/// and ends at once, instead of adding one more sleeping process per tick. A try for
/// another slot does not wait for it. A directory that cannot be used is no check.
fn waiting_here(run: &Run<'_>, slot: u64) -> Step<Here> {
    let config = &run.config;
    let Some(dir) = wait::resolve_dir(&config.local, run.report)? else {
        return Ok(Here::Alone(None));
    };
    let queue = LocalQueue::new(&dir, &config.keys, &config.conn.urls, 1);
    let path = queue.files()[0].with_extension("splay");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path);
    let Ok(file) = file else {
        return Ok(Here::Alone(None));
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(mut held) => {
            let _ = held.set_len(0);
            let _ = held.rewind();
            let _ = held.write_all(slot.to_string().as_bytes());
            Ok(Here::Alone(Some(held)))
        }
        Err((mut file, _)) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            Ok(match text.trim().parse::<u64>() {
                Ok(held) if held == slot => Here::Already,
                _ => Here::Alone(None),
            })
        }
    }
}

/// This host's earlier try waits for the same slot: this one ends at once, silent but
/// counted (a `skipped` event, reason `splay_waiting`, so the metrics say skipped).
fn already_waiting(run: &Run<'_>, slot: u64) -> u8 {
    let name = run.config.keys.display_name();
    run.report.verbose(|| {
        format!("--splay: a try of {name} on this host already waits for this slot; not trying")
    });
    run.report.event(
        Event::Skipped,
        &name,
        serde_json::json!({ "reason": "splay_waiting", "slot_start_ms": slot }),
    );
    run.config.busy_code
}

/// Fixes this try's slot and waits its offset into it: the slot's start (server ms),
/// `None` without `--splay`. A signal that ends a wait ends the run (nothing was taken).
pub(super) async fn splay(run: &mut Run<'_>) -> Step<Option<u64>> {
    let completion = &run.config.policy.completion;
    let (Some(splay), Some(period)) = (completion.splay, completion.once_per.clone()) else {
        return Ok(None);
    };
    let now_ms = server_ms(run).await?;
    let slot = period.slot_at(now_ms).start_ms;
    let host = Meta::local("", "", run.config.budget.ttl).host;
    let offset = crate::timing::splay_offset(host.as_bytes(), &run.config.keys.lock, slot, splay);
    let at = slot + offset.as_millis() as u64;
    let Some(nap) = at.checked_sub(now_ms).filter(|n| *n > 0) else {
        return Ok(Some(slot));
    };
    let _waiting = match waiting_here(run, slot)? {
        Here::Alone(file) => file,
        Here::Already => return Err(End::Status(already_waiting(run, slot))),
    };
    run.report
        .verbose(|| format!("--splay: trying {nap} ms from now, into the slot's window"));
    let sleep = tokio::time::sleep(std::time::Duration::from_millis(nap));
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return Ok(Some(slot)),
            Some(sig) = run.signals.recv() => {
                if crate::signals::ends_wait(sig) {
                    return Err(run.interrupted_while_waiting(sig));
                }
            }
        }
    }
}

/// The server's time (ms) on the primary node, over a connection closed right after.
async fn server_ms(run: &mut Run<'_>) -> Step<u64> {
    let config = &run.config;
    let connected = wait::connect(
        &config.conn.urls,
        config.budget.node_timeout,
        &run.patience,
        &mut run.signals,
        run.report,
    );
    let nodes = match connected.await? {
        Connected::Up(nodes) => nodes,
        Connected::Interrupted(sig) => return Err(run.interrupted_while_waiting(sig)),
    };
    let Some(node) = nodes.primary() else {
        return Ok(crate::clock::wall_ms());
    };
    let (secs, micros) = node
        .query::<(u64, u64)>(&crate::redis::command::time())
        .await
        .map_err(|e| End::from(e.context("reading the server's time for --splay")))?;
    Ok(secs * 1000 + micros / 1000)
}

//! `redlock status NAME…`: whether each lock is held, and by whom. Exit 0 when every
//! named lock is held, 1 when one is free.

use super::history;
use super::state::{LocalWaiters, read, waiters};
use super::{open, print_json, print_line};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, LocalDir, StatusConfig};
use crate::error::Result;
use crate::exit;
use crate::keys::LockKeys;
use crate::wait::{self, LocalQueue};

pub async fn run(config: StatusConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let now = wall_ms();
    let mut all_held = true;
    for keys in &config.keys {
        let mut state = read(&nodes, keys).await?;
        // The lock's state is the answer; a history that cannot be read only shortens it.
        state.last_run = history::last_run(&nodes, keys, state.holder.as_ref()).await;
        state.local = local_waiters(&config, keys, state.limit.unwrap_or(1));
        // What `top` shows as WAITERS; a queue (`--fair`, `--supersede`) lists its own.
        if state.queue.is_none() {
            state.waiting = Some(waiters(&nodes, keys).await).filter(|n| *n > 0);
        }
        all_held &= state.holder.is_some();
        if config.json {
            print_json(&state)?;
        } else {
            print_line(&state.describe(now));
        }
    }
    Ok(if all_held { 0 } else { exit::STATUS_FREE })
}

/// The runs of this host in the lock's local queue, as `redlock-run` with the same
/// URLs, prefix and local directory would queue them; `None` when there are none.
fn local_waiters(config: &StatusConfig, keys: &LockKeys, slots: u32) -> Option<LocalWaiters> {
    let dir = match &config.local {
        LocalDir::Given(dir) => dir.clone(),
        _ => wait::default_dir(),
    };
    let queue = LocalQueue::new(&dir, keys, &config.conn.urls, slots);
    let (queued, heads) = wait::local_waiters(&queue);
    (queued > 0 || !heads.is_empty()).then(|| LocalWaiters {
        dir: dir.display().to_string(),
        heads,
        queued,
    })
}

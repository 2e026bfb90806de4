//! `redlock status NAME…`: whether each lock is held, and by whom. Exit 0 when every
//! named lock is held, 1 when one is free.

use super::history;
use super::state::read;
use super::{open, print_json, print_line};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, StatusConfig};
use crate::error::Result;
use crate::exit;

pub async fn run(config: StatusConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let now = wall_ms();
    let mut all_held = true;
    for keys in &config.keys {
        let mut state = read(&nodes, keys).await?;
        // The lock's state is the answer; a history that cannot be read only shortens it.
        state.last_run = history::read(&nodes, keys, 1)
            .await
            .ok()
            .and_then(|runs| runs.into_iter().next());
        all_held &= state.holder.is_some();
        if config.json {
            print_json(&state)?;
        } else {
            print_line(&state.describe(now));
        }
    }
    Ok(if all_held { 0 } else { exit::STATUS_FREE })
}

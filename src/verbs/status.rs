//! `redlock status NAME…`: whether each lock is held, and by whom. Exit 0 when every
//! named lock is held, 1 when one is free.

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
        let state = read(&nodes, keys).await?;
        all_held &= state.holder.is_some();
        if config.json {
            print_json(&state)?;
        } else {
            print_line(&state.describe(now));
        }
    }
    Ok(if all_held { 0 } else { exit::STATUS_FREE })
}

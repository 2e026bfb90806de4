//! The operator and scripting verbs: `status`, `list`, `release`, `acquire`, `extend`,
//! one file each, each taking its checked configuration from [`crate::config`]. They use
//! the same key layout, scripts and nodes as the wrapper; with several `--redis` nodes
//! they say on how many nodes a lock is present. Their text and JSON shapes are typed
//! structs beside them (`state.rs` for the shape `status` and `list` share).
//!
//! Exit statuses beyond the wrapper's table: `status` 0 when every named lock is held,
//! 1 when one is free; `release --force` 0 removed, 1 it was free; `release --token` and
//! `extend` 79 when the token no longer holds the lock.

mod acquire;
mod extend;
mod list;
mod release;
mod state;
mod status;

use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::config::{AcquireConfig, Conn, ExtendConfig, ListConfig, ReleaseConfig, StatusConfig};
use crate::error::{Error, Result};
use crate::quorum::Nodes;
use crate::report::Reporter;

/// One verb with its checked configuration.
pub enum Verb {
    Status(StatusConfig),
    List(ListConfig),
    Release(ReleaseConfig),
    Acquire(AcquireConfig),
    Extend(ExtendConfig),
}

impl Verb {
    /// Where the verb's locks live.
    pub fn conn(&self) -> &Conn {
        match self {
            Verb::Status(c) => &c.conn,
            Verb::List(c) => &c.conn,
            Verb::Release(c) => &c.conn,
            Verb::Acquire(c) => &c.conn,
            Verb::Extend(c) => &c.conn,
        }
    }
}

/// Runs a verb; returns its exit status.
pub async fn run(verb: Verb, report: &Reporter) -> Result<u8> {
    match verb {
        Verb::Status(config) => status::run(config).await,
        Verb::List(config) => list::run(config).await,
        Verb::Release(config) => release::run(config).await,
        Verb::Acquire(config) => acquire::run(config, report).await,
        Verb::Extend(config) => extend::run(config).await,
    }
}

/// The nodes of `conn`, with the node timeout of a lease of `ttl`.
async fn open(conn: &Conn, ttl: Duration) -> Result<Nodes> {
    Nodes::connect(&conn.urls, conn.timeout_for(ttl)).await
}

/// One JSON object on one line of stdout.
fn print_json(value: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(value).map_err(|e| Error::internal(e.to_string()))?;
    print_line(&line);
    Ok(())
}

/// One line on stdout; a reader that went away (`| head`) is not an error of ours.
fn print_line(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

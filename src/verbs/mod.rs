//! The operator and scripting verbs: `status`, `list`, `release`, `acquire`, `extend`,
//! `wait`, `history`, `forget`, `doctor`, `top`, `preempt`, `leader`, one file each (`doctor/` holds doctor's pure rules and
//! command table), each taking its checked configuration from [`crate::config`]. They
//! use the same key layout, scripts and nodes as the wrapper; with several `--redis` nodes
//! they say on how many nodes a lock is present. Their text and JSON shapes are typed
//! structs beside them (`state.rs` for the shape `status` and `list` share).
//!
//! Exit statuses beyond the wrapper's table: `status` 0 when every named lock is held,
//! 1 when one is free; `release --force` 0 removed, 1 it was free; `release --token` and
//! `extend` 79 when the token no longer holds the lock; `leader --is-me` 0 when this
//! host leads, 1 when not; `doctor` 0 nothing at warning
//! or worse, 1 a warning, 2 an error; `forget` 75 when a name is in use.

mod acquire;
mod doctor;
mod extend;
mod forget;
mod history;
mod leader;
mod list;
mod preempt;
mod release;
mod state;
mod status;
mod timeline;
mod top;
mod wait;

use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::config::{
    AcquireConfig, Conn, DoctorConfig, ExtendConfig, ForgetConfig, HistoryConfig, LeaderConfig,
    ListConfig, PreemptConfig, ReleaseConfig, StatusConfig, TopConfig, WaitConfig,
};
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
    Wait(WaitConfig),
    History(HistoryConfig),
    Forget(ForgetConfig),
    Doctor(DoctorConfig),
    Top(TopConfig),
    Preempt(PreemptConfig),
    Leader(LeaderConfig),
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
            Verb::Wait(c) => &c.conn,
            Verb::History(c) => &c.conn,
            Verb::Forget(c) => &c.conn,
            Verb::Doctor(c) => &c.conn,
            Verb::Top(c) => &c.conn,
            Verb::Preempt(c) => &c.conn,
            Verb::Leader(c) => &c.conn,
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
        Verb::Wait(config) => wait::run(config, report).await,
        Verb::History(config) => history::run(config).await,
        Verb::Forget(config) => forget::run(config).await,
        Verb::Doctor(config) => doctor::run(config).await,
        Verb::Top(config) => top::run(config).await,
        Verb::Preempt(config) => preempt::run(config).await,
        Verb::Leader(config) => leader::run(config, report).await,
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

/// A lock's name or key as JSON carries it: the exact text when it is UTF-8 (a newline
/// is a newline), so a script can feed it back; otherwise a readable form with `\xNN`
/// escapes, and the exact bytes in hex beside it (`name_hex`, `key_hex`).
#[derive(Debug, Clone, Serialize)]
struct JsonName {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_hex: Option<String>,
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_hex: Option<String>,
}

impl JsonName {
    fn of(keys: &crate::keys::LockKeys) -> Self {
        let (name, name_hex) = exact(&keys.name);
        let (key, key_hex) = exact(&keys.lock);
        JsonName {
            name,
            name_hex,
            key,
            key_hex,
        }
    }
}

/// The text of `bytes`, and their hex when they are not UTF-8.
fn exact(bytes: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), None),
        Err(_) => {
            let hex = bytes.iter().map(|b| format!("{b:02x}")).collect();
            (crate::report::printable(bytes), Some(hex))
        }
    }
}

/// A lock held with a token (the JSON of `acquire` and `extend`).
#[derive(Debug, Serialize)]
struct HeldJson<'a> {
    #[serde(flatten)]
    names: JsonName,
    token: &'a str,
    ttl_ms: u64,
    /// The fencing number (`acquire`; 0 from `extend`, which does not acquire).
    fence: u64,
}

impl<'a> HeldJson<'a> {
    fn of(lease: &'a crate::lease::Lease) -> Self {
        HeldJson {
            names: JsonName::of(lease.keys()),
            token: lease.token(),
            ttl_ms: lease.ttl().as_millis() as u64,
            fence: lease.fence(),
        }
    }
}

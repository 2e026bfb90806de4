//! `redlock preempt NAME`: ask the lock's holder, wherever it runs, to stop gracefully
//! (its wrapper gives the command `--preempt-signal` or `--signal`, SIGKILL after its
//! `--kill-after`, releases, and exits 80). Unlike `release --force`, never an overlap:
//! the lock stays the holder's until its command has stopped. The request names the
//! holder's token, so it can only ever stop that holder (a cancelled waiter has no
//! token of the holder's to give). An `--uninterruptible` holder, or one without
//! redlock's metadata (another client), is refused: 75.

use std::time::Duration;

use serde::Serialize;

use super::{JsonName, open, print_json, print_line, state};
use crate::config::{DEFAULT_TTL, PreemptConfig};
use crate::error::{Error, Kind, Result};
use crate::holder::{Holder, Meta};
use crate::quorum::Nodes;
use crate::scripts::newest::{self, Asked};

/// How often `--wait` looks whether the holder has released.
const POLL: Duration = Duration::from_millis(100);

pub async fn run(config: PreemptConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let holder = state::holder(&nodes, &config.keys).await?;
    let request = request(&config);
    let token = ask(&nodes, &config, &request, holder.as_ref()).await?;
    let Some(token) = token else {
        return say(&config, "free", holder.as_ref(), None);
    };
    // The holder waits for the request on its own wake list: tell it now (its next
    // renewal finds the request too, should this push be lost).
    if let Some(primary) = nodes.primary() {
        let _ = primary
            .run::<i64>(&newest::notify(&config.keys, &token, &request))
            .await;
    }
    let Some(wait) = config.wait else {
        return say(&config, "asked", holder.as_ref(), None);
    };
    let started = crate::clock::now();
    while crate::clock::now().saturating_sub(started) < wait {
        if !still_held_by(&nodes, &config, &token).await? {
            let took = crate::clock::now().saturating_sub(started);
            return say(&config, "released", holder.as_ref(), Some(took));
        }
        tokio::time::sleep(POLL).await;
    }
    Err(Error::new(
        Kind::HeldByLive,
        format!(
            "{}: asked its holder to stop, and it still holds the lock after --wait {}",
            config.keys.display_name(),
            crate::report::pasteable(wait)
        ),
    ))
}

/// The request: who asks (this process), and the signal if one was given.
fn request(config: &PreemptConfig) -> String {
    let meta = Meta::local("", "redlock preempt", DEFAULT_TTL);
    serde_json::json!({ "by": meta.who(), "signal": config.signal.map(|s| s.as_str()) }).to_string()
}

/// Asks on every node; the holder's token when it was asked, `None` when the lock is
/// free; a refusal as an error.
async fn ask(
    nodes: &Nodes,
    config: &PreemptConfig,
    request: &str,
    holder: Option<&Holder>,
) -> Result<Option<String>> {
    let call = newest::preempt(&config.keys, request);
    let results = nodes.each(|n| n.run::<redis::Value>(&call)).await;
    let name = config.keys.display_name();
    let who = || {
        holder.map_or("its holder".to_string(), |h| {
            h.describe(crate::clock::wall_ms())
        })
    };
    let mut asked = None;
    for result in results {
        match newest::decode_preempt(result?) {
            Some(Asked::Asked(token)) => asked = Some(token),
            Some(Asked::Free) | None => {}
            Some(Asked::Uninterruptible(_)) => {
                // A holder read as uninterruptible says so in its description
                // (`, --uninterruptible (not preempted)`): once (review-5 §8).
                let mut by = who();
                if !holder.is_some_and(|h| h.stopping.uninterruptible) {
                    by.push_str(", --uninterruptible (not preempted)");
                }
                return Err(Error::new(
                    Kind::HeldByLive,
                    format!("{name} is held by {by}; wait for it to end"),
                ));
            }
            Some(Asked::Foreign(held)) if held == crate::keys::SHARED => {
                return Err(Error::usage(format!(
                    "{name} is held by shared runs (--shared): there is no one holder to preempt; a run without --shared waits for them, and new shared runs wait behind it"
                )));
            }
            Some(Asked::Foreign(_)) => {
                return Err(Error::new(
                    Kind::HeldByLive,
                    format!(
                        "{name} is held by another client (no redlock metadata): it cannot be asked to stop; wait for it, or remove it with redlock release --force (its command may still be running)"
                    ),
                ));
            }
            Some(Asked::Semaphore(mode)) => {
                return Err(Error::usage(format!(
                    "{name} is a semaphore ({mode}): there is no one holder to preempt"
                )));
            }
        }
    }
    Ok(asked)
}

/// Whether `token` still holds the lock on any node.
async fn still_held_by(nodes: &Nodes, config: &PreemptConfig, token: &str) -> Result<bool> {
    let cmd = crate::redis::command::get(&config.keys.lock);
    let results = nodes.each(|n| n.query::<Option<String>>(&cmd)).await;
    let mut held = false;
    for result in results {
        held |= result?.as_deref() == Some(token);
    }
    Ok(held)
}

/// What `preempt` did, as JSON.
#[derive(Debug, Serialize)]
struct PreemptJson<'a> {
    #[serde(flatten)]
    names: JsonName,
    /// `asked`, `released` (with `--wait`), or `free` (nothing to stop).
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    holder: Option<&'a Holder>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waited_ms: Option<u64>,
}

/// Says what was done; exit 0.
fn say(
    config: &PreemptConfig,
    result: &'static str,
    holder: Option<&Holder>,
    took: Option<Duration>,
) -> Result<u8> {
    if config.json {
        print_json(&PreemptJson {
            names: JsonName::of(&config.keys),
            result,
            holder,
            waited_ms: took.map(|t| t.as_millis() as u64),
        })?;
        return Ok(0);
    }
    let name = config.keys.display_name();
    let who = holder.map_or("its holder".to_string(), |h| {
        h.describe(crate::clock::wall_ms())
    });
    let signal = config
        .signal
        .map_or("its --preempt-signal".to_string(), |s| {
            s.as_str().to_string()
        });
    print_line(&match (result, took) {
        ("free", _) => format!("{name} is not held: nothing to stop"),
        (_, Some(took)) => format!(
            "{name}: {who} stopped and released after {}",
            crate::report::human(took)
        ),
        _ => format!("{name}: asked {who} to stop ({signal}, then SIGKILL after its --kill-after)"),
    });
    Ok(0)
}

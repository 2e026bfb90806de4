//! `redlock release NAME`: with `--token T`, that holder's lock only (79 when the token
//! no longer holds it); with `--force`, whoever holds it, saying whose lock it removed
//! (0 removed, 1 it was free). A key of another type is never deleted.

use redis::Value;
use serde::Serialize;

use super::state::of_nodes;
use super::{JsonName, open, print_json, print_line};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, ReleaseConfig, Whose};
use crate::error::{Error, Kind, Result};
use crate::exit;
use crate::holder::Holder;
use crate::keys::LockKeys;
use crate::lease::{Lease, Release, wake_head};
use crate::quorum::Nodes;
use crate::report::printable;
use crate::report::rfc3339;
use crate::scripts::force::{self, ForceReleased};

/// What a release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    /// The token's own lock was released.
    Released,
    /// A holder's lock was removed by force.
    Removed,
    /// Nothing was there.
    Free,
}

/// Over several nodes: where the lock was removed.
#[derive(Debug, Clone, Copy, Serialize)]
struct Spread {
    nodes_removed: usize,
    nodes: usize,
    nodes_unreachable: usize,
}

/// The result of a release (its JSON shape).
#[derive(Debug, Serialize)]
struct Released {
    #[serde(flatten)]
    names: Option<JsonName>,
    /// The name for people.
    #[serde(skip)]
    name: String,
    /// The semaphore slot released (`--slot`).
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<u32>,
    result: Outcome,
    holder: Option<Holder>,
    #[serde(flatten)]
    spread: Option<Spread>,
}

pub async fn run(config: ReleaseConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let name = match config.slot {
        Some(slot) => format!("{} slot {slot}", config.keys.display_name()),
        None => config.keys.display_name(),
    };
    let keys = config.keys.clone();
    let (released, code) = match config.whose {
        Whose::Token(token) => by_token(nodes, config.keys, token).await?,
        Whose::Anyone => by_force(&nodes, &config.keys).await?,
        Whose::Dead => if_dead(nodes, config.keys).await?,
    };
    let released = Released {
        names: Some(JsonName::of(&keys)),
        name,
        slot: config.slot,
        ..released
    };
    if config.json {
        print_json(&released)?;
    } else {
        print_line(&released.describe());
    }
    Ok(code)
}

/// Compare-and-delete with the token given.
async fn by_token(nodes: Nodes, keys: LockKeys, token: String) -> Result<(Released, u8)> {
    let lease = Lease::new(nodes, keys, DEFAULT_TTL, token);
    match lease.release_all(0, None).await? {
        Release::Deleted | Release::Kept => Ok((Released::new(Outcome::Released), 0)),
        Release::NotHeld => Err(Error::new(
            Kind::Lost,
            format!(
                "{} is not held by that token (expired, released or taken by another holder); nothing released",
                lease.keys().display_name()
            ),
        )),
    }
}

/// Removes the lock (by its holder's token, so a new holder in between is never
/// touched) when the holder ran on this host and its process is gone: no process with
/// that pid, or one that started at another time or boot (the pid was reused).
async fn if_dead(nodes: Nodes, keys: LockKeys) -> Result<(Released, u8)> {
    let state = super::state::read(&nodes, &keys).await?;
    let Some(holder) = state.holder else {
        return Ok((Released::new(Outcome::Free), exit::STATUS_FREE));
    };
    if let Some(why) = alive(&holder) {
        return Err(Error::new(
            Kind::HeldByLive,
            format!(
                "{} is held by {}, {why}; nothing released (--force removes it anyway)",
                keys.display_name(),
                holder.describe(wall_ms())
            ),
        ));
    }
    let lease = Lease::new(nodes, keys, DEFAULT_TTL, holder.token.clone());
    match lease.release_all(0, None).await? {
        Release::Deleted | Release::Kept => Ok((
            Released {
                holder: Some(holder),
                ..Released::new(Outcome::Removed)
            },
            0,
        )),
        Release::NotHeld => Ok((Released::new(Outcome::Free), exit::STATUS_FREE)),
    }
}

/// Why `holder` may still be alive (`None`: its process is gone).
fn alive(holder: &Holder) -> Option<String> {
    let here = nix::unistd::gethostname()
        .ok()
        .map(|h| h.to_string_lossy().into_owned());
    let (Some(host), Some(pid)) = (&holder.who.host, holder.who.pid) else {
        return Some("a holder without redlock metadata, whose process cannot be checked".into());
    };
    if here.as_ref() != Some(host) {
        return Some(format!(
            "on another host; --if-dead checks processes on this host ({}) only",
            here.unwrap_or_default()
        ));
    }
    match (crate::holder::process_start(pid), &holder.started) {
        (None, _) => None,
        (Some(now), Some(then)) if &now != then => None,
        (Some(_), Some(_)) => Some("which is alive".into()),
        (Some(_), None) => Some(format!(
            "and a process {pid} runs (the metadata does not say when the holder started, so it may be the holder)"
        )),
    }
}

/// Deletes the lock and its metadata on every node whoever holds it; names the holder
/// whose token was removed from the most nodes.
async fn by_force(nodes: &Nodes, keys: &LockKeys) -> Result<(Released, u8)> {
    let (waking, quiet) = (force::call(keys, true), force::call(keys, false));
    let results = nodes
        .each(|n| n.run::<Value>(if nodes.is_primary(n) { &waking } else { &quiet }))
        .await;
    let mut removed: Vec<Holder> = Vec::new();
    let mut first_error = None;
    let mut unreachable = nodes.missing();
    let mut head = None;
    for result in results {
        match result.map(force::decode) {
            Ok(Some(ForceReleased::Removed { held, head: wake })) => {
                removed.push(Holder::from_held(&held));
                head = head.or(wake);
            }
            Ok(Some(ForceReleased::NotALock(kind))) => {
                return Err(Error::new(
                    Kind::NotALock,
                    format!(
                        "key {} holds a {kind}, not a lock; refusing to delete it",
                        printable(&keys.lock)
                    ),
                ));
            }
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert(e);
                unreachable += 1;
            }
        }
    }
    wake_head(nodes, keys, head.as_deref()).await;
    let spread = (nodes.given() > 1).then_some(Spread {
        nodes_removed: removed.len(),
        nodes: nodes.given(),
        nodes_unreachable: unreachable,
    });
    force_released(&removed, spread, first_error)
}

/// What a forced release did over the nodes: the holder whose token was removed from
/// the most nodes, or the first error when nothing was removed, or free.
fn force_released(
    removed: &[Holder],
    spread: Option<Spread>,
    first_error: Option<Error>,
) -> Result<(Released, u8)> {
    let count = |t: &str| removed.iter().filter(|h| h.token == t).count();
    let holder = removed.iter().max_by_key(|h| count(&h.token)).cloned();
    match (holder, first_error) {
        (Some(holder), _) => Ok((
            Released {
                holder: Some(holder),
                spread,
                ..Released::new(Outcome::Removed)
            },
            0,
        )),
        (None, Some(e)) => Err(e),
        (None, None) => Ok((
            Released {
                spread,
                ..Released::new(Outcome::Free)
            },
            exit::STATUS_FREE,
        )),
    }
}

impl Released {
    fn new(result: Outcome) -> Self {
        Released {
            names: None,
            name: String::new(),
            slot: None,
            result,
            holder: None,
            spread: None,
        }
    }

    /// The line for people.
    fn describe(&self) -> String {
        let name = &self.name;
        let from = self
            .spread
            .map(|s| {
                format!(
                    " from {}",
                    of_nodes(s.nodes_removed, s.nodes, s.nodes_unreachable)
                )
            })
            .unwrap_or_default();
        match (self.result, &self.holder) {
            (Outcome::Removed, Some(h)) => {
                let since = h
                    .since_ms
                    .map(|s| format!(", since {}", rfc3339(s)))
                    .unwrap_or_default();
                format!(
                    "removed {name}{from}: it was held by {}{since} (token {}…)",
                    h.describe(wall_ms()),
                    h.token_prefix()
                )
            }
            (Outcome::Free, _) => format!(
                "{name} was free{}; nothing removed",
                self.spread
                    .filter(|s| s.nodes_unreachable > 0)
                    .map(|s| format!(
                        " on the reachable nodes ({} of {} unreachable)",
                        s.nodes_unreachable, s.nodes
                    ))
                    .unwrap_or_default()
            ),
            _ => format!("released {name}"),
        }
    }
}

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
use crate::gone::{Here, Verdict};
use crate::holder::Holder;
use crate::keys::LockKeys;
use crate::kinds::LockKind;
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
    let mode = super::state::kind_of_token(&nodes, &config.keys).await;
    let target = Target {
        keys: &config.keys,
        kind: mode,
        slot: config.slot,
    };
    let done = match config.whose {
        Whose::Token(token) => vec![by_token(nodes, &target, token).await?],
        Whose::Anyone => {
            let (released, code) = by_force(&nodes, &target.one_slot()?).await?;
            let slot = config.slot;
            vec![(Released { slot, ..released }, code)]
        }
        Whose::Dead => if_dead(nodes, &target).await?,
    };
    let code = done.iter().map(|(_, code)| *code).min().unwrap_or(0);
    for (released, _) in done {
        let released = Released {
            names: Some(JsonName::of(&config.keys)),
            ..released
        };
        if config.json {
            print_json(&released)?;
        } else {
            print_line(&released.describe(&config.keys.display_name()));
        }
    }
    Ok(code)
}

/// What a release is aimed at: the name, its kind, and a semaphore's slot if given.
struct Target<'a> {
    keys: &'a LockKeys,
    kind: LockKind,
    slot: Option<u32>,
}

impl Target<'_> {
    /// A semaphore's slot count (`None`: one holder).
    fn several(&self) -> Option<u32> {
        Some(self.kind.rules().slots()).filter(|n| *n > 1)
    }

    /// The slots to look at: the one given, every slot of a semaphore, or the lock.
    fn slots(&self) -> Vec<u32> {
        match (self.slot, self.several()) {
            (Some(slot), _) => vec![slot],
            (None, Some(limit)) => (1..=limit).collect(),
            (None, None) => vec![1],
        }
    }

    /// The keys of one slot, or a usage error when a semaphore's slot must be named.
    fn one_slot(&self) -> Result<LockKeys> {
        match (self.slot, self.several()) {
            (Some(slot), _) => Ok(self.keys.for_slot(slot)),
            (None, Some(limit)) => Err(Error::usage(format!(
                "{} is a semaphore of {limit} slots; --force removes one holder: say which with --slot N (redlock status {} lists them)",
                self.keys.display_name(),
                self.keys.display_name()
            ))),
            (None, None) => Ok(self.keys.clone()),
        }
    }

    /// A lease on one slot for `token`, of the name's kind (so that a fair queue's head
    /// is woken).
    fn lease(&self, nodes: Nodes, slot: u32, token: String) -> Lease {
        Lease::new(nodes, self.keys.for_slot(slot), DEFAULT_TTL, token).of_kind(self.kind)
    }
}

/// Compare-and-delete with the token given (on a semaphore, in the slot it holds).
async fn by_token(nodes: Nodes, target: &Target<'_>, token: String) -> Result<(Released, u8)> {
    let mut slot = target.slot.unwrap_or(1);
    if target.slot.is_none() && target.slots().len() > 1 {
        for candidate in target.slots() {
            let keys = target.keys.for_slot(candidate);
            if let Some(holder) = super::state::holder(&nodes, &keys).await?
                && holder.token == token
            {
                slot = candidate;
                break;
            }
        }
    }
    let lease = target.lease(nodes, slot, token);
    match lease.release_all(0, None).await? {
        Release::Deleted | Release::Kept => Ok((
            Released {
                slot: (target.slots().len() > 1 || target.slot.is_some()).then_some(slot),
                ..Released::new(Outcome::Released)
            },
            0,
        )),
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
/// touched) only on positive proof that its holder is gone ([`crate::gone`]: this
/// machine, this boot, this PID namespace, the recorded process gone or its pid
/// reused); anything it cannot prove is a refusal (75) saying what. On a semaphore
/// without `--slot`, every slot whose holder is proved gone; on a shared name, every
/// share whose holder is; the others stay.
async fn if_dead(nodes: Nodes, target: &Target<'_>) -> Result<Vec<(Released, u8)>> {
    let many = target.slots().len() > 1 || target.slot.is_some();
    let mut removed = Vec::new();
    let mut live = None;
    for (slot, holder) in held(&nodes, target).await? {
        if let Some(why) = alive(&holder) {
            live.get_or_insert((slot, holder, why));
            continue;
        }
        let lease = target.lease(nodes.clone(), slot, holder.token.clone());
        if matches!(
            lease.release_all(0, None).await?,
            Release::Deleted | Release::Kept
        ) {
            removed.push((
                Released {
                    holder: Some(holder),
                    slot: many.then_some(slot),
                    ..Released::new(Outcome::Removed)
                },
                0,
            ));
        }
    }
    match (removed.is_empty(), live) {
        (false, _) => Ok(removed),
        (true, Some((slot, holder, why))) => {
            Err(refused(target, many.then_some(slot), &holder, &why))
        }
        (true, None) => Ok(vec![(Released::new(Outcome::Free), exit::STATUS_FREE)]),
    }
}

/// Who holds the name: each slot's holder (one for a name with one holder), or on a
/// shared name each share's.
async fn held(nodes: &Nodes, target: &Target<'_>) -> Result<Vec<(u32, Holder)>> {
    if let Some(set) = target.kind.rules().holders_set(target.keys) {
        let shares = super::state::shares(nodes, target.keys, &set).await;
        return Ok(shares.into_iter().map(|h| (1, h)).collect());
    }
    let mut held = Vec::new();
    for slot in target.slots() {
        let keys = target.keys.for_slot(slot);
        if let Some(holder) = super::state::holder(nodes, &keys).await? {
            held.push((slot, holder));
        }
    }
    Ok(held)
}

/// The refusal of `--if-dead` for the holder it could not prove gone (of slot `slot`
/// when the name has several): who, why, and what to do. A live holder renews its
/// lock: its ttl is no wait worth advising (newcomer-5 P14); one that could not be
/// checked expires by itself if it is dead.
fn refused(target: &Target<'_>, slot: Option<u32>, holder: &Holder, why: &Alive) -> Error {
    let name = target.keys.display_name();
    let then = match why {
        // A shared name or a semaphore has no one holder that `preempt` could ask.
        Alive::Runs(_) if !target.kind.rules().can_be_asked() => {
            "it renews the lock while it runs: stop its command".to_string()
        }
        Alive::Runs(_) => format!(
            "it renews the lock while it runs: stop its command, or ask it to with redlock preempt {name}"
        ),
        Alive::Unproved(_) => format!(
            "if its holder is dead, the lock expires by itself within its ttl{}",
            holder
                .ttl_left
                .map(|t| format!(" ({} left)", crate::report::human(t)))
                .unwrap_or_default()
        ),
    };
    Error::new(
        Kind::HeldByLive,
        format!(
            "{name}{} is held by {}, {}; nothing released ({then}; release it with --token, or --force removes it anyway)",
            slot.map(|s| format!(" slot {s}")).unwrap_or_default(),
            holder.describe(wall_ms()),
            why.text(),
        ),
    )
}

/// Why a holder is not removed.
enum Alive {
    /// Its process runs here.
    Runs(String),
    /// That it is gone cannot be proved.
    Unproved(String),
}

impl Alive {
    fn text(&self) -> &str {
        match self {
            Alive::Runs(why) | Alive::Unproved(why) => why,
        }
    }
}

/// Why `holder` may still be alive (`None`: proved gone, see [`crate::gone`]).
fn alive(holder: &Holder) -> Option<Alive> {
    match crate::gone::judge(holder, &Here::now(), crate::gone::probe, wall_ms()) {
        Verdict::Gone(_) => None,
        Verdict::Alive(why) => Some(Alive::Runs(why)),
        Verdict::Refused(why) => Some(Alive::Unproved(why)),
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
            slot: None,
            result,
            holder: None,
            spread: None,
        }
    }

    /// The line for people.
    fn describe(&self, name: &str) -> String {
        let name = match self.slot {
            Some(slot) => format!("{name} slot {slot}"),
            None => name.to_string(),
        };
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
                // The shared marker is no token: its holders each have their own.
                let token = match h.token.as_str() {
                    crate::keys::SHARED => String::new(),
                    _ => format!(" (token {}…)", h.token_prefix()),
                };
                format!(
                    "removed {name}{from}: it was held by {}{since}{token}",
                    h.describe(wall_ms()),
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

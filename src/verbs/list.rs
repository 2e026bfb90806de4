//! `redlock list [PATTERN]`: the held locks under the prefix, found with SCAN (never
//! KEYS) on every node, one line each (tab-separated) or one JSON object each.

use super::state::{LockState, read};
use std::io::IsTerminal;

use super::{open, print_json, print_line};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, ListConfig};
use crate::error::{Kind, Result};
use crate::keys::LockKeys;
use crate::quorum::Nodes;
use crate::report::human;

pub async fn run(config: ListConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    let names = names(&nodes, &config.conn.prefix, &config.matcher).await?;
    let now = wall_ms();
    let read = each_lock(&names, &config.conn.prefix, |keys| {
        let nodes = &nodes;
        async move { read(nodes, &keys).await }
    })
    .await?;
    let mut shown = 0;
    for result in read {
        let state = match result {
            Ok(state) if state.holder.is_some() => state,
            Ok(_) => continue, // expired between SCAN and read
            Err(e) if e.kind() == Kind::NotALock => continue, // not one of our locks
            Err(e) => return Err(e),
        };
        shown += 1;
        if config.json {
            print_json(&state)?;
        } else {
            print_line(&line(&state, now));
        }
    }
    // On a terminal an empty answer says so (a script reading the list gets nothing).
    if shown == 0 && !config.json && std::io::stdout().is_terminal() {
        print_line(&format!("no locks held under {}", config.conn.prefix));
    }
    Ok(0)
}

/// How many locks are read at once: their requests go out back to back on each node's
/// one connection (the client pipelines what is in flight), so a page costs Redis a
/// few round trips, not one per lock, and the number in flight stays bounded.
const READ_AT_ONCE: usize = 1000;

/// Runs `read` for the lock of every name in `names`, [`READ_AT_ONCE`] at a time, in
/// the names' order.
pub(super) async fn each_lock<T, F, Fut>(names: &[Vec<u8>], prefix: &str, read: F) -> Result<Vec<T>>
where
    F: Fn(LockKeys) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut out = Vec::with_capacity(names.len());
    // The first alone: on a server whose script cache is empty it loads the scripts
    // (one NOSCRIPT, one EVAL), so the others go by EVALSHA, not a thousand EVALs with
    // the script's text.
    let Some((first, rest)) = names.split_first() else {
        return Ok(out);
    };
    out.push(read(LockKeys::new(prefix, first)?).await);
    for page in rest.chunks(READ_AT_ONCE) {
        let mut reads = Vec::with_capacity(page.len());
        for name in page {
            reads.push(read(LockKeys::new(prefix, name)?));
        }
        out.extend(futures_util::future::join_all(reads).await);
    }
    Ok(out)
}

/// The names of the lock keys matching the pattern, on any node, sorted, once each; a
/// semaphore whose first slot is free is found by its mode key.
pub(super) async fn names(nodes: &Nodes, prefix: &str, matcher: &[u8]) -> Result<Vec<Vec<u8>>> {
    names_by(nodes, prefix, matcher, &[b"", b":mode"]).await
}

/// The names whose lock key (`matcher`) followed by one of `suffixes` (`b""`: the lock
/// key itself, `b":mode"`, `b":history"` …) is a key on any node, sorted, once each.
pub(super) async fn names_by(
    nodes: &Nodes,
    prefix: &str,
    matcher: &[u8],
    suffixes: &[&[u8]],
) -> Result<Vec<Vec<u8>>> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    for node in nodes.iter() {
        for suffix in suffixes {
            for key in node.scan(&[matcher, suffix].concat()).await? {
                let lock = key.strip_suffix(*suffix).unwrap_or(&key);
                if let Some(name) = LockKeys::name_from_lock_key(prefix, lock) {
                    names.push(name);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// `name<TAB>holder<TAB>ttl …[<TAB>on N of M nodes]`.
fn line(state: &LockState, now_ms: u64) -> String {
    let (Some(h), Some(holders)) = (&state.holder, state.holders_text(now_ms)) else {
        return format!("{}\tfree", state.name);
    };
    let mut line = format!(
        "{}\t{}\tttl {}",
        state.name,
        holders,
        h.ttl_left.map_or("none".into(), human)
    );
    if state.nodes > 1 {
        line.push_str("\ton ");
        line.push_str(&state.spread());
    }
    line
}

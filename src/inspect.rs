//! The operator and scripting verbs: `status`, `list`, `release`, `acquire`, `extend`.
//! They use the same key layout, scripts and nodes as the wrapper; with several
//! `--redis` nodes they say on how many nodes a lock is present.
//!
//! Exit statuses beyond the wrapper's table: `status` 0 when every named lock is held,
//! 1 when one is free; `release --force` 0 removed, 1 it was free; `release --token` and
//! `extend` 79 when the token no longer holds the lock.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, UNIX_EPOCH};

use futures_util::future::join_all;
use redis::Value;
use serde::Serialize;

use crate::cli::{AcquireArgs, Command, ExtendArgs, ListArgs, ReleaseArgs, StatusArgs};
use crate::config::{self, Conn, Wait};
use crate::error::{Error, Result};
use crate::exit::{self, Code};
use crate::holder::{self, Holder, wall_ms};
use crate::keys::{self, LockKeys};
use crate::lease::{self, Lease, Release};
use crate::node::{Node, invocation};
use crate::report::Reporter;
use crate::run::connect_all;
use crate::scripts;
use crate::wait::{self, Waited};

/// Runs one of the inspection verbs; returns the exit status.
pub async fn dispatch(command: Command, report: &Reporter) -> u8 {
    let result = match command {
        Command::Status(args) => status(args).await,
        Command::List(args) => list(args).await,
        Command::Release(args) => release(args).await,
        Command::Acquire(args) => acquire(args, report).await,
        Command::Extend(args) => extend(args).await,
        Command::Run(_) | Command::Generate(_) => Err(Error::internal("not an inspection verb")),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            report.error(&e.message);
            e.code.value()
        }
    }
}

/// What one lock looks like across the nodes.
#[derive(Debug, Serialize)]
pub struct LockState {
    pub name: String,
    pub key: String,
    /// "held" or "free".
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<Holder>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_left_ms: Option<u64>,
    /// Nodes on which the holder's token is the lock's value.
    pub nodes_present: usize,
    /// Those nodes' URLs (passwords redacted).
    pub present_on: Vec<String>,
    /// Nodes given (`--redis` × N), reachable or not.
    pub nodes: usize,
    /// Nodes given that did not answer (down at connect time or on this read).
    pub nodes_unreachable: usize,
}

/// The reachable nodes (at least a quorum of those given) and how many were given.
async fn open(conn: &Conn, ttl: Duration) -> Result<(Vec<Node>, usize)> {
    let nodes = connect_all(&conn.urls, conn.timeout_for(ttl)).await?;
    Ok((nodes, conn.urls.len()))
}

/// "2 of 3 nodes (1 unreachable)".
fn of_nodes(present: usize, given: usize, unreachable: usize) -> String {
    let mut out = format!("{present} of {given} nodes");
    if unreachable > 0 {
        out.push_str(&format!(" ({unreachable} unreachable)"));
    }
    out
}

/// Reads one lock on every node; `given` nodes were named, `nodes` are those reached.
async fn read(nodes: &[Node], given: usize, keys: &LockKeys) -> Result<LockState> {
    let call = invocation(&scripts::INSPECT, &[&keys.lock, &keys.meta]);
    let results = join_all(nodes.iter().map(|n| n.run::<Value>(&call))).await;
    // (node URL, holder there), for the nodes where the key is a lock.
    let mut holders: Vec<(String, Holder)> = Vec::new();
    let mut errors = Vec::new();
    for (node, result) in nodes.iter().zip(results) {
        let items = match result {
            Ok(Value::Array(items)) => items,
            Ok(_) => return Err(Error::redis("unexpected reply from the inspect script")),
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut it = items.into_iter();
        let kind = lease::string(it.next());
        match kind.as_str() {
            "none" => {}
            "string" => {
                let token = lease::bytes(it.next());
                let pttl = match it.next() {
                    Some(Value::Int(n)) => n,
                    _ => -1,
                };
                let holder = Holder::from_parts(token, pttl, &lease::pairs(it.next()));
                holders.push((node.url.to_string(), holder));
            }
            other => {
                return Err(Error::redis(format!(
                    "key {} holds a {other}, not a lock",
                    keys::display_bytes(&keys.lock)
                )));
            }
        }
    }
    let unreachable = given - nodes.len() + errors.len();
    if given - unreachable < given / 2 + 1 {
        // Too few answers to tell a held lock from a free one.
        return Err(errors.remove(0));
    }
    // The holder is the token present on the most nodes.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, h) in &holders {
        *counts.entry(h.token.as_str()).or_default() += 1;
    }
    let best = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(t, _)| t.to_string());
    let present_on: Vec<String> = holders
        .iter()
        .filter(|(_, h)| Some(&h.token) == best.as_ref())
        .map(|(url, _)| url.clone())
        .collect();
    let present = present_on.len();
    let holder = holders
        .into_iter()
        .map(|(_, h)| h)
        .find(|h| Some(&h.token) == best.as_ref());
    Ok(LockState {
        name: keys.display_name(),
        key: keys::display_bytes(&keys.lock),
        state: if holder.is_some() { "held" } else { "free" },
        ttl_left_ms: holder
            .as_ref()
            .and_then(|h| h.ttl_left)
            .map(|t| t.as_millis() as u64),
        holder,
        nodes_present: present,
        present_on,
        nodes: given,
        nodes_unreachable: unreachable,
    })
}

/// Human lines for one lock.
pub fn describe(state: &LockState, now_ms: u64) -> String {
    let Some(h) = &state.holder else {
        return format!("{}: free", state.name);
    };
    let mut out = if h.is_known() {
        format!(
            "{}: held by {} pid {} user {}\n  command: {}",
            state.name,
            h.host.as_deref().unwrap_or("?"),
            h.pid.map_or("?".into(), |p| p.to_string()),
            h.user.as_deref().unwrap_or("?"),
            h.cmd.as_deref().unwrap_or("?"),
        )
    } else {
        format!(
            "{}: held by an unknown holder (no redlock metadata)",
            state.name
        )
    };
    if let (Some(since), Some(held)) = (h.since_ms, h.held_for(now_ms)) {
        let at = UNIX_EPOCH + Duration::from_millis(since);
        out.push_str(&format!(
            "\n  since:   {} (for {})",
            humantime::format_rfc3339_seconds(at),
            holder::human(held)
        ));
    }
    out.push_str(&format!(
        "\n  ttl:     {}\n  token:   {}…",
        h.ttl_left
            .map_or("none (never expires)".into(), holder::human),
        h.token_prefix()
    ));
    if state.nodes > 1 {
        out.push_str(&format!(
            "\n  nodes:   present on {}: {}",
            of_nodes(state.nodes_present, state.nodes, state.nodes_unreachable),
            state.present_on.join(", ")
        ));
    }
    out
}

fn print_json(value: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(value).map_err(|e| Error::internal(e.to_string()))?;
    println!("{line}");
    Ok(())
}

async fn status(args: StatusArgs) -> Result<u8> {
    let conn = Conn::from_args(&args.conn)?;
    let all_keys = args
        .keys
        .iter()
        .map(|k| conn.keys(k))
        .collect::<Result<Vec<_>>>()?;
    let (nodes, given) = open(&conn, config::DEFAULT_TTL).await?;
    let now = wall_ms();
    let mut all_held = true;
    for keys in &all_keys {
        let state = read(&nodes, given, keys).await?;
        all_held &= state.holder.is_some();
        if args.json {
            print_json(&state)?;
        } else {
            println!("{}", describe(&state, now));
        }
    }
    Ok(if all_held { 0 } else { exit::STATUS_FREE })
}

async fn list(args: ListArgs) -> Result<u8> {
    let conn = Conn::from_args(&args.conn)?;
    let (nodes, given) = open(&conn, config::DEFAULT_TTL).await?;
    let pattern = args.pattern.unwrap_or_else(|| OsString::from("*"));
    let mut matcher = keys::glob_escape(conn.prefix.as_bytes());
    matcher.push(b'{');
    matcher.extend_from_slice(pattern.as_bytes());
    matcher.push(b'}');
    let mut names: Vec<Vec<u8>> = Vec::new();
    for node in &nodes {
        for key in node.scan(&matcher).await? {
            if let Some(name) = LockKeys::name_from_lock_key(&conn.prefix, &key) {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    let now = wall_ms();
    let mut out = std::io::stdout().lock();
    for name in names {
        let keys = LockKeys::new(&conn.prefix, &name)?;
        let state = match read(&nodes, given, &keys).await {
            Ok(state) if state.holder.is_some() => state,
            Ok(_) => continue, // expired between SCAN and read
            Err(e) if e.code == Code::Redis => continue, // a key of another type
            Err(e) => return Err(e),
        };
        let line = if args.json {
            serde_json::to_string(&state).map_err(|e| Error::internal(e.to_string()))?
        } else {
            let h = state.holder.as_ref().expect("held");
            let mut line = format!(
                "{}\t{}\tttl {}",
                state.name,
                h.describe(now),
                h.ttl_left.map_or("none".into(), holder::human)
            );
            if state.nodes > 1 {
                line.push_str("\ton ");
                line.push_str(&of_nodes(
                    state.nodes_present,
                    state.nodes,
                    state.nodes_unreachable,
                ));
            }
            line
        };
        let _ = writeln!(out, "{line}");
    }
    Ok(0)
}

async fn release(args: ReleaseArgs) -> Result<u8> {
    let conn = Conn::from_args(&args.conn)?;
    let keys = conn.keys(&args.key)?;
    if args.token.is_none() && !args.force {
        return Err(Error::usage(format!(
            "refusing to release {} without --token TOKEN (that holder only) or --force (whoever holds it)",
            keys.display_name()
        )));
    }
    let (nodes, given) = open(&conn, config::DEFAULT_TTL).await?;
    let name = keys.display_name();
    if let Some(token) = args.token {
        let lease = Lease::with_token(nodes, keys, config::DEFAULT_TTL, token).over(given);
        return match lease.release_all(0).await? {
            Release::Deleted | Release::Kept => {
                say(args.json, &name, "released", None, None);
                Ok(0)
            }
            Release::NotHeld => Err(Error::new(
                Code::Lost,
                format!(
                    "{name} is not held by that token (expired, released or taken by another holder); nothing released"
                ),
            )),
        };
    }
    let mut call = invocation(&scripts::FORCE_RELEASE, &[&keys.lock, &keys.meta]);
    call.arg(&keys.channel);
    let results = join_all(nodes.iter().map(|n| n.run::<Value>(&call))).await;
    let mut removed: Vec<Holder> = Vec::new();
    let mut first_error = None;
    let mut unreachable = given - nodes.len();
    for result in results {
        let items = match result {
            Ok(Value::Array(items)) => items,
            Ok(_) => continue,
            Err(e) => {
                first_error.get_or_insert(e);
                unreachable += 1;
                continue;
            }
        };
        let mut it = items.into_iter();
        match it.next() {
            Some(Value::Int(1)) => {
                let token = lease::bytes(it.next());
                removed.push(Holder::from_parts(token, -1, &lease::pairs(it.next())));
            }
            Some(Value::Int(-1)) => {
                return Err(Error::redis(format!(
                    "key {} holds a {}, not a lock; refusing to delete it",
                    keys::display_bytes(&keys.lock),
                    lease::string(it.next())
                )));
            }
            _ => {}
        }
    }
    // Name the holder whose token was removed from the most nodes.
    let count = |t: &str| removed.iter().filter(|h| h.token == t).count();
    let holder = removed.iter().max_by_key(|h| count(&h.token));
    let spread = (given > 1).then_some((removed.len(), given, unreachable));
    match (holder, first_error) {
        (Some(holder), _) => {
            say(args.json, &name, "removed", Some(holder), spread);
            Ok(0)
        }
        (None, Some(e)) => Err(e),
        (None, None) => {
            say(args.json, &name, "free", None, spread);
            Ok(exit::STATUS_FREE)
        }
    }
}

/// Prints the result of a release; `spread` is (nodes removed from, nodes given,
/// nodes unreachable) when several nodes were given.
fn say(
    json: bool,
    name: &str,
    result: &str,
    holder: Option<&Holder>,
    spread: Option<(usize, usize, usize)>,
) {
    if json {
        let mut value = serde_json::json!({ "name": name, "result": result, "holder": holder });
        if let Some((removed, given, unreachable)) = spread {
            value["nodes_removed"] = removed.into();
            value["nodes"] = given.into();
            value["nodes_unreachable"] = unreachable.into();
        }
        println!("{value}");
        return;
    }
    let from = spread
        .map(|(removed, given, unreachable)| {
            format!(" from {}", of_nodes(removed, given, unreachable))
        })
        .unwrap_or_default();
    match (result, holder) {
        ("removed", Some(h)) => {
            let since = h
                .since_ms
                .map(|s| {
                    format!(
                        ", since {}",
                        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(s))
                    )
                })
                .unwrap_or_default();
            println!(
                "removed {name}{from}: it was held by {}{since} (token {}…)",
                h.describe(wall_ms()),
                h.token_prefix()
            );
        }
        ("free", _) => println!(
            "{name} was free{}; nothing removed",
            spread
                .filter(|(_, _, unreachable)| *unreachable > 0)
                .map(|(_, given, unreachable)| format!(
                    " on the reachable nodes ({unreachable} of {given} unreachable)"
                ))
                .unwrap_or_default()
        ),
        _ => println!("{result} {name}"),
    }
}

async fn acquire(args: AcquireArgs, report: &Reporter) -> Result<u8> {
    let conn = Conn::from_args(&args.conn)?;
    let keys = conn.keys(&args.key)?;
    let ttl = config::ttl(args.ttl.as_deref())?;
    let wait_for: Wait = config::wait(&args.wait)?;
    let busy_code = config::busy_code(args.busy_exit_code.as_deref())?;
    let (nodes, given) = open(&conn, ttl).await?;
    let lease = Lease::new(nodes, keys, ttl).over(given);
    let mut fields = holder::local_fields(&lease.token, "redlock acquire", ttl);
    // The lock belongs to the script that called us, not to this short-lived process.
    let parent = nix::unistd::getppid().as_raw().to_string();
    for (field, value) in fields.iter_mut() {
        if *field == "pid" {
            *value = parent.clone();
        }
    }
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    let report = Reporter {
        quiet: args.quiet,
        ..report.clone()
    };
    match wait::acquire(&lease, &fields, wait_for, &mut signals, &report).await? {
        Waited::Acquired { .. } => {
            if args.json {
                print_json(&serde_json::json!({
                    "name": lease.keys.display_name(),
                    "key": keys::display_bytes(&lease.keys.lock),
                    "token": lease.token,
                    "ttl_ms": ttl.as_millis() as u64,
                }))?;
            } else {
                println!("{}", lease.token);
            }
            Ok(0)
        }
        Waited::Busy(holder) => {
            report.note(&format!(
                "lock {} is busy: held by {}",
                lease.keys.display_name(),
                holder.describe(wall_ms())
            ));
            Ok(busy_code)
        }
        Waited::Interrupted(sig) => Ok(exit::from_signal(sig as i32)),
    }
}

async fn extend(args: ExtendArgs) -> Result<u8> {
    let conn = Conn::from_args(&args.conn)?;
    let keys = conn.keys(&args.key)?;
    let ttl = config::ttl(args.ttl.as_deref())?;
    let (nodes, given) = open(&conn, ttl).await?;
    let lease = Lease::with_token(nodes, keys, ttl, args.token).over(given);
    match lease.renew().await {
        lease::Renew::Renewed { .. } => Ok(0),
        lease::Renew::Lost(_) => Err(Error::new(
            Code::Lost,
            format!(
                "{} is not held by that token (expired, released or taken by another holder)",
                lease.keys.display_name()
            ),
        )),
        lease::Renew::Unknown(err) => Err(err),
    }
}

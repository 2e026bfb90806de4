//! `redlock leader NAME`: who leads an `--elect` name (the holder of its lock): host,
//! pid, term (the fencing number of its acquisition), since when, and its `--announce`
//! value. `--watch` prints a line at every change (a read every 250ms: a change shows
//! within that, plus a round trip); `--is-me` answers with the exit status, 0 when this
//! host leads and 1 when not, for a readiness probe.

use std::time::Duration;

use serde::Serialize;

use super::{JsonName, open, print_json, print_line, state};
use crate::config::{DEFAULT_TTL, LeaderConfig};
use crate::error::Result;
use crate::holder::{Holder, Meta};
use crate::quorum::Nodes;
use crate::report::{Reporter, human, rfc3339};

/// How often `--watch` reads the leader.
const WATCH_EVERY: Duration = Duration::from_millis(250);

pub async fn run(config: LeaderConfig, report: &Reporter) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    if config.watch {
        return watch(&nodes, &config, report).await;
    }
    let leader = state::holder(&nodes, &config.keys).await?;
    say(&config, leader.as_ref())?;
    if config.is_me {
        return Ok(u8::from(!leader.as_ref().is_some_and(is_this_host)));
    }
    Ok(0)
}

/// Prints the leader now and at every change (another token, or none), until a signal
/// ends the process. A read that fails is said once, and the watch goes on.
async fn watch(nodes: &Nodes, config: &LeaderConfig, report: &Reporter) -> Result<u8> {
    let mut last: Option<Option<String>> = None;
    let mut failing = false;
    loop {
        match state::holder(nodes, &config.keys).await {
            Ok(leader) => {
                failing = false;
                let token = leader.as_ref().map(|h| h.token.clone());
                if last.as_ref() != Some(&token) {
                    say(config, leader.as_ref())?;
                    last = Some(token);
                }
            }
            Err(e) if !failing => {
                failing = true;
                report.note(&format!(
                    "{}: cannot read the leader: {e}; still watching",
                    config.keys.display_name()
                ));
            }
            Err(_) => {}
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}

/// Whether `leader` runs on this host: the same host name as this process would record
/// (`REDLOCK_HOST`, else the machine's) and the same machine.
fn is_this_host(leader: &Holder) -> bool {
    let me = Meta::local("", "", DEFAULT_TTL);
    let machine = |host: &str, machine: &Option<String>| machine.clone().unwrap_or(host.into());
    leader.who.host.as_deref() == Some(me.host.as_str())
        && machine(
            leader.who.host.as_deref().unwrap_or_default(),
            &leader.stopping.machine,
        ) == machine(&me.host, &me.machine)
}

/// The leader as JSON.
#[derive(Debug, Serialize)]
struct LeaderJson<'a> {
    #[serde(flatten)]
    names: JsonName,
    /// When this was read (Unix ms).
    at_ms: u64,
    /// The holder, with `fence` as its term; null when none leads.
    leader: Option<&'a Holder>,
    /// Whether the leader runs on this host.
    is_me: bool,
}

/// One line (or JSON line) about `leader`.
fn say(config: &LeaderConfig, leader: Option<&Holder>) -> Result<()> {
    let now_ms = crate::clock::wall_ms();
    if config.json {
        return print_json(&LeaderJson {
            names: JsonName::of(&config.keys),
            at_ms: now_ms,
            leader,
            is_me: leader.is_some_and(is_this_host),
        });
    }
    let name = config.keys.display_name();
    let line = match leader {
        None => format!("{name}: no leader"),
        Some(h) if !h.is_known() => format!("{name}: held by {}", h.describe(now_ms)),
        Some(h) => {
            let mut line = format!("{name}: led by {}", h.who.host_pid_user());
            if let Some(fence) = h.fence {
                line.push_str(&format!(", term {fence}"));
            }
            if let Some(since) = h.since_ms {
                let held = Duration::from_millis(now_ms.saturating_sub(since));
                line.push_str(&format!(", since {} ({})", rfc3339(since), human(held)));
            }
            if let Some(value) = &h.stopping.announce {
                line.push_str(&format!(", announces {}", crate::report::shown(value)));
            }
            line
        }
    };
    let line = if config.watch {
        format!("{} {line}", rfc3339(now_ms))
    } else {
        line
    };
    print_line(&line);
    Ok(())
}

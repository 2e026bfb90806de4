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
    let me = Me::now();
    if config.watch {
        return watch(&nodes, &config, &me, report).await;
    }
    let leader = state::holder(&nodes, &config.keys).await?;
    say(&config, &me, leader.as_ref())?;
    if config.is_me {
        return Ok(u8::from(!leader.as_ref().is_some_and(|l| me.leads(l))));
    }
    Ok(0)
}

/// Prints the leader now and at every change (another token, or none), until a signal
/// ends the process. A read that fails is said once, and the watch goes on.
async fn watch(nodes: &Nodes, config: &LeaderConfig, me: &Me, report: &Reporter) -> Result<u8> {
    let mut last: Option<Option<String>> = None;
    let mut failing = false;
    loop {
        match state::holder(nodes, &config.keys).await {
            Ok(leader) => {
                failing = false;
                let token = leader.as_ref().map(|h| h.token.clone());
                if last.as_ref() != Some(&token) {
                    say(config, me, leader.as_ref())?;
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

/// This host as a run would record it: the host shown (`REDLOCK_HOST`, else the
/// machine's name) and the machine's own name; read once per call.
struct Me {
    host: String,
    machine: String,
}

impl Me {
    fn now() -> Me {
        let meta = Meta::local("", "", DEFAULT_TTL);
        Me {
            machine: meta.machine().to_string(),
            host: meta.host,
        }
    }

    /// Whether `leader` runs here: the same host shown and the same machine.
    fn leads(&self, leader: &Holder) -> bool {
        leader.who.host.as_deref() == Some(self.host.as_str())
            && leader.machine() == Some(self.machine.as_str())
    }
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
fn say(config: &LeaderConfig, me: &Me, leader: Option<&Holder>) -> Result<()> {
    let now_ms = crate::clock::wall_ms();
    if config.json {
        return print_json(&LeaderJson {
            names: JsonName::of(&config.keys),
            at_ms: now_ms,
            leader,
            is_me: leader.is_some_and(|l| me.leads(l)),
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

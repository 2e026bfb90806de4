//! `redlock leader NAME`: who leads an `--elect` name (the holder of its lock): host,
//! pid, term (the fencing number of its acquisition), since when, and its `--announce`
//! value. `--watch` prints a line at every change (a read every 250ms: a change shows
//! within that, plus a round trip); `--is-me` answers with the exit status, 0 when this
//! host leads and 1 when not, for a readiness probe. A name that a run without `--elect`
//! holds (a cron lock, a semaphore's slot, another client's key) has no leader: that is
//! said, with what holds it, and the status is 1 (newcomer-5 P14).

use std::time::Duration;

use serde::Serialize;

use super::{JsonName, open, print_json, print_line, state};
use crate::config::{DEFAULT_TTL, LeaderConfig};
use crate::error::Result;
use crate::exit::STATUS_FREE;
use crate::holder::{Holder, Meta};
use crate::kinds::LockKind;
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
    let held = state::holder(&nodes, &config.keys).await?;
    let mode = state::mode_of(&nodes, &config.keys).await;
    let read = Read::of(held, &mode);
    say(&config, &me, &read)?;
    if config.is_me {
        return Ok(u8::from(!read.leader().is_some_and(|l| me.leads(l))));
    }
    Ok(match read {
        Read::NotElect { .. } => STATUS_FREE,
        _ => 0,
    })
}

/// What a read of the name found.
enum Read {
    /// Nobody holds it.
    Free,
    /// A term of `--elect` holds it.
    Led(Holder),
    /// A run without `--elect` (or another client) holds it, or it is a semaphore
    /// (whose first slot may be free while others are held).
    NotElect {
        holder: Option<Holder>,
        kind: NotElect,
    },
}

/// What a name no `--elect` run holds is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum NotElect {
    /// A plain lock (a cron job's, a deploy's).
    Plain,
    /// A semaphore (`--limit`): slots, no leader.
    Semaphore,
    /// Another client's key (no redlock metadata).
    Foreign,
    /// Shared runs hold it (`--shared`): many holders, no leader.
    Shared,
}

impl Read {
    /// The name's holder, judged as a leader or not: only a holder whose metadata says
    /// `--elect` leads (a run of a version before the mark reads as not one).
    fn of(held: Option<Holder>, mode: &LockKind) -> Read {
        let kind = match &held {
            _ if mode.rules().slots() > 1 => NotElect::Semaphore,
            None => return Read::Free,
            Some(h) if h.token == crate::keys::SHARED => NotElect::Shared,
            Some(h) if !h.is_known() => NotElect::Foreign,
            Some(h) if h.stopping.elect => return Read::Led(h.clone()),
            Some(_) => NotElect::Plain,
        };
        Read::NotElect { holder: held, kind }
    }

    fn leader(&self) -> Option<&Holder> {
        match self {
            Read::Led(h) => Some(h),
            _ => None,
        }
    }

    /// The holder's token, whoever it is (what `--watch` tells changes by).
    fn token(&self) -> Option<&str> {
        match self {
            Read::Free => None,
            Read::Led(h) => Some(&h.token),
            Read::NotElect { holder, .. } => holder.as_ref().map(|h| h.token.as_str()),
        }
    }
}

/// Prints the leader now and at every change (another token, or none), until a signal
/// ends the process. A read that fails is said once, and the watch goes on.
async fn watch(nodes: &Nodes, config: &LeaderConfig, me: &Me, report: &Reporter) -> Result<u8> {
    let mut last: Option<Option<String>> = None;
    let mut failing = false;
    loop {
        match state::holder(nodes, &config.keys).await {
            Ok(held) => {
                failing = false;
                let read = Read::of(held, &state::mode_of(nodes, &config.keys).await);
                let token = read.token().map(str::to_string);
                if last.as_ref() != Some(&token) {
                    say(config, me, &read)?;
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
    /// A name no `--elect` run holds: what it is (`plain`, `semaphore`, `foreign`;
    /// absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    not_elect: Option<NotElect>,
    /// And what holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    held_by: Option<&'a Holder>,
}

/// One line (or JSON line) about what `read` found.
fn say(config: &LeaderConfig, me: &Me, read: &Read) -> Result<()> {
    let now_ms = crate::clock::wall_ms();
    if config.json {
        let (not_elect, held_by) = match read {
            Read::NotElect { holder, kind } => (Some(*kind), holder.as_ref()),
            _ => (None, None),
        };
        return print_json(&LeaderJson {
            names: JsonName::of(&config.keys),
            at_ms: now_ms,
            leader: read.leader(),
            is_me: read.leader().is_some_and(|l| me.leads(l)),
            not_elect,
            held_by,
        });
    }
    let name = config.keys.display_name();
    let line = match read {
        Read::Free => format!("{name}: no leader"),
        Read::NotElect { holder, kind } => {
            let by = |h: &Holder| h.describe(now_ms);
            let held = match (kind, holder) {
                (NotElect::Semaphore, Some(h)) => format!("a semaphore (slot 1: {})", by(h)),
                (NotElect::Semaphore, None) => "a semaphore (slot 1 free)".to_string(),
                (NotElect::Foreign, _) => "another client holds it (no redlock metadata)".into(),
                (NotElect::Shared, _) => "shared runs hold it (--shared)".into(),
                (NotElect::Plain, h) => format!(
                    "a run without --elect holds it ({})",
                    h.as_ref().map_or(String::new(), by)
                ),
            };
            format!("{name}: not an --elect name, no leader: {held}")
        }
        Read::Led(h) => {
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

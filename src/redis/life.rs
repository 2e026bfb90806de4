//! A server's life as `INFO server` tells it: its run ID (a random ID each start of
//! `redis-server`, so a new one means a new process: a restart, or another server behind
//! the address) and how long it has been up. A run that took its names reads it before
//! it starts its command (see `run/lock_delay.rs`), and the host keeps the run ID it
//! last saw at each server's address ([`last_seen`], [`saw`]): a later run that finds
//! another has seen a restart this host's earlier runs could not.

use std::time::Duration;

/// The server's run ID and uptime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLife {
    pub run_id: String,
    /// `uptime_in_seconds`: whole seconds, rounded down, so the server started at most
    /// this long ago (and less than a second more).
    pub uptime: Duration,
}

impl ServerLife {
    /// From `INFO server`'s text (`field:value` lines); `None` without a run ID or an
    /// uptime (not a Redis server, or one that hides them).
    pub fn parse(info: &str) -> Option<ServerLife> {
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':'))
        };
        let run_id = field("run_id").filter(|id| !id.is_empty())?.to_string();
        let uptime = field("uptime_in_seconds")?.parse().ok()?;
        Some(ServerLife {
            run_id,
            uptime: Duration::from_secs(uptime),
        })
    }
}

/// The first line of a kept run ID.
const HEADER: &str = "redlock server life 1";

/// The run ID this host last saw at the server `identity` names (its URL without the
/// password), `None` when it never saw one there (or keeps nothing: no local
/// directory).
pub fn last_seen(identity: &str) -> Option<String> {
    let lines = super::kept::load("server", "life", HEADER, identity)?;
    let run_id = lines.first()?;
    let plain = !run_id.is_empty() && run_id.bytes().all(|b| b.is_ascii_alphanumeric());
    plain.then(|| run_id.to_string())
}

/// Keeps `run_id` as the one this host saw last at `identity`, when it is not the one
/// kept already (`kept`: what [`last_seen`] read).
pub fn saw(identity: &str, run_id: &str, kept: Option<&str>) {
    if kept == Some(run_id) {
        return;
    }
    super::kept::store("server", "life", HEADER, identity, &format!("{run_id}\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_run_id_and_uptime() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:5f1c0a\r\ntcp_port:6379\r\nuptime_in_seconds:12\r\nuptime_in_days:0\r\n";
        assert_eq!(
            ServerLife::parse(info),
            Some(ServerLife {
                run_id: "5f1c0a".into(),
                uptime: Duration::from_secs(12)
            })
        );
    }

    #[test]
    fn without_either_field_nothing_is_known() {
        assert_eq!(
            ServerLife::parse("# Server\r\nuptime_in_seconds:3\r\n"),
            None
        );
        assert_eq!(ServerLife::parse("run_id:ab\r\n"), None);
        assert_eq!(
            ServerLife::parse("run_id:ab\r\nuptime_in_seconds:x\r\n"),
            None
        );
    }
}

//! A server's life as `INFO server` tells it: its run ID (a random ID each start of
//! `redis-server`, so a new one means a new process: a restart, or another server behind
//! the address) and how long it has been up; and its data's epoch, a key a run writes
//! when it is missing (`<prefix>epoch`, see `keys.rs`), which goes with the server's data:
//! gone, or another under the same run ID, means the data was flushed (`FLUSHALL`,
//! `FLUSHDB`) while the process lived on. A run that took its names reads both before
//! it starts its command (see `run/lock_delay.rs`), and the host keeps what it last saw
//! at each server's address ([`last_seen`], [`saw`]): a later run that finds another
//! has seen a restart or a flush this host's earlier runs could not.

use std::time::Duration;

use redis::Value;

/// How long a data epoch lives after it was written (never renewed: its age says when
/// it was written). The host keeps when the one it saw expires, so that one gone by
/// itself is not taken for a flush.
pub const EPOCH_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// The server's run ID and uptime, and its data epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLife {
    pub run_id: String,
    /// `uptime_in_seconds`: whole seconds, rounded down, so the server started at most
    /// this long ago (and less than a second more).
    pub uptime: Duration,
    /// `None` when it is missing or could not be read (an ACL without the key).
    pub epoch: Option<Epoch>,
    /// Whether it is missing (not written since the server started empty or was
    /// flushed, or expired): the run writes it once it holds its names (never before:
    /// a refused try leaves every key as it was).
    pub epoch_missing: bool,
}

/// A data epoch as read: its value and how long ago it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Epoch {
    pub value: String,
    pub age: Duration,
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
            epoch: None,
            epoch_missing: false,
        })
    }

    /// From the replies to `command::life`: `INFO server`'s text, then the epoch's
    /// value and its PTTL (ms).
    pub fn from_replies(replies: &[Value]) -> Option<ServerLife> {
        let text = match replies.first()? {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::VerbatimString { text, .. } => text.clone(),
            _ => return None,
        };
        let mut life = ServerLife::parse(&text)?;
        life.epoch = Epoch::from_replies(&replies[1..]);
        life.epoch_missing = matches!(replies.get(1..3), Some([Value::Nil, Value::Int(-2)]));
        Some(life)
    }
}

impl Epoch {
    /// From the replies to the epoch's `GET` and `PTTL` (ms); `None` when it is missing
    /// or either was refused.
    pub fn from_replies(replies: &[Value]) -> Option<Epoch> {
        match replies {
            [Value::BulkString(v), Value::Int(ms), ..] if *ms >= 0 => Some(Epoch {
                value: String::from_utf8_lossy(v).into_owned(),
                age: EPOCH_TTL.saturating_sub(Duration::from_millis(*ms as u64)),
            }),
            _ => None,
        }
    }
}

/// What this host saw last at a server: its run ID and, when read, its data epoch with
/// when that expires (ms since the Unix epoch, this host's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub run_id: String,
    pub epoch: Option<(String, u64)>,
}

impl Seen {
    /// Whether `now` (the server's life as read at `now_ms`) says the data was flushed
    /// since this was seen: the same process (run ID), and the epoch this host saw is
    /// gone (or another) before it could have expired by itself.
    pub fn flushed_by(&self, now: &ServerLife, now_ms: u64) -> bool {
        let (Some((seen, expires_ms)), Some(epoch)) = (&self.epoch, &now.epoch) else {
            return false;
        };
        self.run_id == now.run_id && *seen != epoch.value && now_ms < *expires_ms
    }
}

/// The first line of a kept server life.
const HEADER: &str = "redlock server life 2";

/// What this host last saw at the server `identity` names (its URL without the
/// password) under a prefix, `None` when it never saw it there (or keeps nothing: no
/// local directory).
pub fn last_seen(identity: &str) -> Option<Seen> {
    let lines = super::kept::load("server", "life", HEADER, identity)?;
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
    let run_id = lines.first().filter(|id| plain(id))?.to_string();
    let epoch = lines.get(1).and_then(|line| {
        let (value, expires) = line.split_once(' ')?;
        let expires = expires.parse().ok()?;
        plain(value).then(|| (value.to_string(), expires))
    });
    Some(Seen { run_id, epoch })
}

/// Keeps `life` (read at `now_ms`) as what this host saw last at `identity`, when it
/// differs from what was kept (`kept`: what [`last_seen`] read).
pub fn saw(identity: &str, life: &ServerLife, now_ms: u64, kept: Option<&Seen>) {
    let epoch = life.epoch.as_ref().map(|e| {
        let left = EPOCH_TTL.saturating_sub(e.age).as_millis() as u64;
        (e.value.clone(), now_ms + left)
    });
    let same = kept.is_some_and(|k| {
        k.run_id == life.run_id && k.epoch.as_ref().map(|e| &e.0) == epoch.as_ref().map(|e| &e.0)
    });
    if same {
        return;
    }
    let mut body = format!("{}\n", life.run_id);
    if let Some((value, expires)) = epoch {
        body.push_str(&format!("{value} {expires}\n"));
    }
    super::kept::store("server", "life", HEADER, identity, &body);
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
                uptime: Duration::from_secs(12),
                epoch: None,
                epoch_missing: false,
            })
        );
    }

    #[test]
    fn reads_the_epoch_and_its_age_beside_the_run_id() {
        let info = Value::BulkString(b"run_id:ab\r\nuptime_in_seconds:3\r\n".to_vec());
        let left = EPOCH_TTL.as_millis() as i64 - 1500;
        let replies = [
            info.clone(),
            Value::BulkString(b"e1".to_vec()),
            Value::Int(left),
        ];
        let life = ServerLife::from_replies(&replies).unwrap();
        assert_eq!(
            (life.epoch, life.epoch_missing),
            (
                Some(Epoch {
                    value: "e1".into(),
                    age: Duration::from_millis(1500)
                }),
                false
            )
        );
        // Missing: to be written once the run holds its names.
        let missing = [info.clone(), Value::Nil, Value::Int(-2)];
        let life = ServerLife::from_replies(&missing).unwrap();
        assert_eq!((life.epoch, life.epoch_missing), (None, true));
        // Anything else (an ACL that refused the key): no epoch, nothing to write.
        let refused = [info, Value::Okay, Value::Okay];
        let life = ServerLife::from_replies(&refused).unwrap();
        assert_eq!((life.epoch, life.epoch_missing), (None, false));
    }

    #[test]
    fn a_flush_is_another_epoch_under_the_same_run_id_before_the_seen_one_expires() {
        let life = |run_id: &str, epoch: &str| ServerLife {
            run_id: run_id.into(),
            uptime: Duration::from_secs(100),
            epoch: Some(Epoch {
                value: epoch.into(),
                age: Duration::ZERO,
            }),
            epoch_missing: false,
        };
        let seen = Seen {
            run_id: "r1".into(),
            epoch: Some(("e1".into(), 10_000)),
        };
        assert!(seen.flushed_by(&life("r1", "e2"), 9_999));
        assert!(!seen.flushed_by(&life("r1", "e1"), 9_999), "the same epoch");
        assert!(
            !seen.flushed_by(&life("r1", "e2"), 10_000),
            "expired by itself"
        );
        assert!(
            !seen.flushed_by(&life("r2", "e2"), 9_999),
            "a restart, told by the run ID"
        );
        let unread = Seen {
            run_id: "r1".into(),
            epoch: None,
        };
        assert!(
            !unread.flushed_by(&life("r1", "e2"), 9_999),
            "never read: no evidence"
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

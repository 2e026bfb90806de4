//! Key layout: where a lock named N lives in Redis, and its companion keys.
//!
//! - lock key: `<prefix>{N}` — a plain string whose value is the holder's token, so that
//!   redis-py `Lock`, redsync or a hand-written `SET key token NX PX` on the same key
//!   name exclude, and are excluded by, redlock;
//! - metadata: `<prefix>{N}:meta` — a hash (token, host, pid, user, cmd, since_ms,
//!   ttl_ms) with the same ttl as the lock key;
//! - waiters: `<prefix>{N}:waiters` — a set of the tokens of the runs waiting for the
//!   lock, expiring shortly after the last one's heartbeat (so a dead waiter leaves it);
//! - wake list: `<prefix>{N}:wake` — a release pushes one element when the set is not
//!   empty, and exactly one waiter blocked in `BLPOP` on it is woken;
//! - fence counter: `<prefix>{N}:fence` — incremented by every acquisition, never
//!   expiring: the fencing number handed to the command (`REDLOCK_FENCE`);
//! - run history: `<prefix>{N}:history` — a list of the last runs' outcomes (JSON, newest
//!   first, trimmed to `--history`), written by the release, never expiring: it answers
//!   "did last night's job run?" after the lock is long gone, and `--once-per` reads it;
//! - mode: `<prefix>{N}:mode` — what kind of lock the name is while it is in use: `limit
//!   L` (a semaphore, `--limit L`) or `fair` (a queue, `--fair`); absent for a plain lock.
//!   It lives at least as long as its holders and waiters, so a run of another kind is
//!   refused rather than let in beside them;
//! - semaphore slots: slot 1 is the lock key itself, slot i > 1 is `<prefix>{N}:slot:i`,
//!   each an ordinary lock with its own metadata (`…:meta`);
//! - fair queue: `<prefix>{N}:queue` (a sorted set of waiting tokens by ticket),
//!   `<prefix>{N}:beats` (their heartbeat deadlines), `<prefix>{N}:queue:info` (who each
//!   waiter is), and one wake list per waiter, `<prefix>{N}:wake:<token>`;
//! - newest wins (`--supersede`): the same queue keys, and `<prefix>{N}:verdicts` (a
//!   hash: the token of each run superseded lately → who superseded it, kept two
//!   minutes after the last), `<prefix>{N}:order` (the largest `--order-key` that
//!   started, kept `--retain`); a holder's own wake list is where a preempt request
//!   wakes it;
//! - the server's data epoch: `<prefix>epoch`, one per server (no name): a random value
//!   that a run which took a name writes when it is missing, expiring 30 days after it
//!   was written (never renewed): gone or another with the same run ID means the data
//!   was flushed since (`redis::life`, the lock-delay);
//! - shared (`--shared`): while readers hold, the lock key holds the marker `shared`
//!   (`scripts::shared::MARKER`) with a PTTL reaching the latest share's deadline, so a
//!   foreign `SET key token NX PX` still fails, and the mode key says `shared`;
//!   `<prefix>{N}:shares` (a sorted set: each reader's token → its lease deadline,
//!   server ms), `<prefix>{N}:writers` (a sorted set: each waiting exclusive run's
//!   token → its heartbeat deadline; new readers wait while it is not empty), and one
//!   metadata hash per reader, `<prefix>{N}:meta:<token>` (the fields of `…:meta`, with
//!   its share's ttl). Each expires with the latest deadline it holds.
//!
//! Every companion key is the lock key plus a suffix. The lock key ends in `}`, so the
//! first `{…}` hash tag of each key is the same and all keys of a lock share one Redis
//! Cluster slot — for any name, as long as the tag is not empty (a name starting with
//! `}`), which only Cluster mode has to reject. Prefixes may not contain braces.
//! Names are bytes: anything non-empty is accepted.

use crate::error::{Error, Result};
use crate::report::printable;

/// A shared name's lock key holds this while shares are held (`--shared`; no token is
/// ever this word: tokens are UUIDs).
pub const SHARED: &str = "shared";

/// The holder a shared try is told of when it waits behind a waiting writer.
pub const WRITER_WAITS: &str = "(a waiting writer)";

/// The default namespace prefix.
pub const DEFAULT_PREFIX: &str = "redlock:";

/// The keys of one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockKeys {
    pub name: Vec<u8>,
    pub lock: Vec<u8>,
    pub meta: Vec<u8>,
    pub waiters: Vec<u8>,
    pub wake: Vec<u8>,
    pub fence: Vec<u8>,
    pub history: Vec<u8>,
    pub mode: Vec<u8>,
    pub queue: Vec<u8>,
    pub beats: Vec<u8>,
    pub queue_info: Vec<u8>,
    pub verdicts: Vec<u8>,
    pub order: Vec<u8>,
    pub shares: Vec<u8>,
    pub writers: Vec<u8>,
    /// How many wake-ups shares refused behind a writer handed on lately (see
    /// `scripts::shared::SHARE`).
    pub handed: Vec<u8>,
    /// The server's data epoch under this prefix, one key per server, not per name
    /// (`redis::life`: a run that took a name writes it when it is missing).
    pub epoch: Vec<u8>,
}

/// The mode key's suffix after the name's lock key.
const MODE_SUFFIX: &[u8] = b":mode";

/// Checks a prefix (usage error naming `--prefix` when it is unusable).
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.contains(['{', '}']) {
        return Err(Error::usage(format!(
            "--prefix {prefix:?} contains a brace; braces are reserved for the hash tag around the lock name"
        )));
    }
    Ok(())
}

impl LockKeys {
    /// The keys of the lock `name` under `prefix` (checked with [`check_prefix`]).
    pub fn new(prefix: &str, name: &[u8]) -> Result<Self> {
        check_prefix(prefix)?;
        if name.is_empty() {
            return Err(Error::usage(
                "the lock name is empty; give --key a non-empty name",
            ));
        }
        let mut lock = Vec::with_capacity(prefix.len() + name.len() + 2);
        lock.extend_from_slice(prefix.as_bytes());
        lock.push(b'{');
        lock.extend_from_slice(name);
        lock.push(b'}');
        let with = |suffix: &[u8]| [lock.as_slice(), suffix].concat();
        Ok(LockKeys {
            name: name.to_vec(),
            meta: with(b":meta"),
            waiters: with(b":waiters"),
            wake: with(b":wake"),
            fence: with(b":fence"),
            history: with(b":history"),
            mode: with(MODE_SUFFIX),
            queue: with(b":queue"),
            beats: with(b":beats"),
            queue_info: with(b":queue:info"),
            verdicts: with(b":verdicts"),
            order: with(b":order"),
            shares: with(b":shares"),
            writers: with(b":writers"),
            handed: with(b":handed"),
            epoch: [prefix.as_bytes(), b"epoch"].concat(),
            lock,
        })
    }

    /// The keys of semaphore slot `slot` (1-based): slot 1 is the lock key itself, the
    /// others `…:slot:i`; every other key is the name's.
    /// From any slot's keys as well as from the name's: the slot's keys are made from
    /// the name's lock key (the mode key without its suffix), never from this slot's.
    pub fn for_slot(&self, slot: u32) -> LockKeys {
        let mut keys = self.clone();
        let name_lock = &self.mode[..self.mode.len() - MODE_SUFFIX.len()];
        keys.lock = if slot > 1 {
            [name_lock, format!(":slot:{slot}").as_bytes()].concat()
        } else {
            name_lock.to_vec()
        };
        keys.meta = [keys.lock.as_slice(), b":meta"].concat();
        keys
    }

    /// The run-once record of `--once-id ID` (`P{N}:once:ID`, a hash: `starts`, and
    /// `done`, the record of the run that succeeded).
    pub fn once(&self, id: &str) -> Vec<u8> {
        [self.lock.as_slice(), b":once:", id.as_bytes()].concat()
    }

    /// The wake list of one waiter of a queue (and where a preempt request wakes a
    /// holder).
    pub fn own_wake(&self, token: &str) -> Vec<u8> {
        [self.wake.as_slice(), b":", token.as_bytes()].concat()
    }

    /// A shared holder's own metadata (`P{N}:meta:<token>`, a hash with the fields of
    /// the plain holder's `…:meta`, kept as long as its share).
    pub fn share_meta(&self, token: &str) -> Vec<u8> {
        [self.lock.as_slice(), b":meta:", token.as_bytes()].concat()
    }

    /// Whether the hash tag is empty (name starts with `}`): the keys would then hash to
    /// different Cluster slots.
    pub fn has_empty_hash_tag(&self) -> bool {
        self.name.first() == Some(&b'}')
    }

    /// The lock name for messages: UTF-8 shown as is, other bytes escaped, one line.
    pub fn display_name(&self) -> String {
        printable(&self.name)
    }

    /// The lock name from a lock key under `prefix`, if the key is one of ours.
    pub fn name_from_lock_key(prefix: &str, key: &[u8]) -> Option<Vec<u8>> {
        let rest = key.strip_prefix(prefix.as_bytes())?;
        let inner = rest.strip_prefix(b"{")?.strip_suffix(b"}")?;
        (!inner.is_empty()).then(|| inner.to_vec())
    }
}

/// Escapes glob metacharacters so that a literal string can be used in a SCAN pattern.
pub fn glob_escape(literal: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(literal.len());
    for &b in literal {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Redis Cluster hash slot of a key, as the server computes it (for the test only).
    fn slot(key: &[u8]) -> u16 {
        let tagged = key
            .iter()
            .position(|&b| b == b'{')
            .and_then(|open| {
                let close = key[open + 1..].iter().position(|&b| b == b'}')?;
                (close > 0).then(|| &key[open + 1..open + 1 + close])
            })
            .unwrap_or(key);
        crc16::State::<crc16::XMODEM>::calculate(tagged) % 16384
    }

    #[test]
    fn layout() {
        let k = LockKeys::new("redlock:", b"close-order").unwrap();
        assert_eq!(k.lock, b"redlock:{close-order}");
        assert_eq!(k.meta, b"redlock:{close-order}:meta");
        assert_eq!(k.waiters, b"redlock:{close-order}:waiters");
        assert_eq!(k.wake, b"redlock:{close-order}:wake");
        assert_eq!(k.for_slot(1), k);
        assert_eq!(k.for_slot(3).lock, b"redlock:{close-order}:slot:3");
        assert_eq!(k.for_slot(3).meta, b"redlock:{close-order}:slot:3:meta");
        // A slot's keys give every other slot's, never a slot of a slot.
        assert_eq!(k.for_slot(3).for_slot(1), k);
        assert_eq!(
            k.for_slot(3).for_slot(2).lock,
            b"redlock:{close-order}:slot:2"
        );
        assert_eq!(k.own_wake("t1"), b"redlock:{close-order}:wake:t1");
        assert_eq!(k.shares, b"redlock:{close-order}:shares");
        assert_eq!(k.writers, b"redlock:{close-order}:writers");
        assert_eq!(k.share_meta("t1"), b"redlock:{close-order}:meta:t1");
    }

    #[test]
    fn companion_keys_share_the_slot_for_awkward_names() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut names: Vec<Vec<u8>> = [
            "a", "{", "}{", "{}", "a}b", "a{b}c", "*", "[x]", "\\", "a b\tc\n", ":",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        for _ in 0..1_000 {
            let len = rng.usize(1..64);
            let alphabet = b"ab{}*?[]\\:\n\xff";
            names.push(
                (0..len)
                    .map(|_| alphabet[rng.usize(..alphabet.len())])
                    .collect(),
            );
        }
        for name in names {
            let k = LockKeys::new("p:", &name).unwrap();
            if k.has_empty_hash_tag() {
                continue;
            }
            let seventh = k.for_slot(7);
            let companions = [
                &k.meta,
                &k.waiters,
                &k.wake,
                &k.fence,
                &k.history,
                &k.mode,
                &k.queue,
                &k.beats,
                &k.queue_info,
                &k.verdicts,
                &k.order,
                &seventh.lock,
                &seventh.meta,
                &k.own_wake("t"),
                &k.shares,
                &k.writers,
                &k.handed,
                &k.share_meta("t"),
            ];
            for companion in companions {
                assert_eq!(slot(&k.lock), slot(companion), "{}", printable(&name));
            }
            assert_eq!(
                LockKeys::name_from_lock_key("p:", &k.lock).as_deref(),
                Some(name.as_slice())
            );
        }
    }

    #[test]
    fn bad_inputs() {
        assert!(LockKeys::new("redlock:", b"").is_err());
        assert!(LockKeys::new("a{b", b"x").is_err());
        assert!(LockKeys::new("a}b", b"x").is_err());
        assert!(LockKeys::new("", b"x").is_ok());
    }

    #[test]
    fn glob_escapes() {
        assert_eq!(glob_escape(b"a*b?[c]\\"), b"a\\*b\\?\\[c\\]\\\\");
    }
}

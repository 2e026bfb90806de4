//! The waiters: join without acquiring (`redlock wait`: [`WATCH`]; a Redlock waiter on
//! the primary node: [`JOIN`]), leave ([`LEAVE`]),
//! leave handing a wake-up on ([`HAND_ON`]), leave a fair queue ([`FAIR_LEAVE`]).
//! Waiters join when an acquire finds the lock busy (see `acquire`), through the
//! functions of [`FRAGMENT`], which every acquire script defines.

use redis::Value;

use crate::redis::{Call, Lua};

use super::{Key, Need, WAKE_TTL_MS, invocation, on};
use crate::keys::LockKeys;
use crate::redis::reply::{array, int, string};

/// The waiters' functions every acquire script defines (spliced by `acquire::text`):
/// - `join(waiters, token, heartbeat)`: joins the waiters set, keeping it a heartbeat;
/// - `leave(waiters, wake, token)`: leaves it, emptying the wake list after the last;
/// - `leave_taken(waiters, wake, token)`: leaves it having taken a plain lock.
///
/// Their commands are in every acquire script's CALLS (`acquire::taking_calls`).
pub(super) const FRAGMENT: &str = r#"
local function join(waiters, token, heartbeat)
  if type(redis.pcall('SADD', waiters, token)) ~= 'number' then
    return foreign('waiters', waiters)
  end
  if redis.call('PTTL', waiters) < heartbeat then
    redis.call('PEXPIRE', waiters, heartbeat)
  end
  return nil
end
-- A wake list is emptied with LTRIM (an empty list is removed), never DEL: a key of
-- another type there is someone else's, and LTRIM on it fails (pcall) and leaves it.
local function leave(waiters, wake, token)
  if redis.pcall('SREM', waiters, token) == 1 and redis.call('EXISTS', waiters) == 0 then
    redis.pcall('LTRIM', wake, 1, 0)
  end
end
-- A plain lock has one holder: once it is taken, a wake-up in the list is of use to
-- nobody (whoever pops it finds the lock held), so the taker clears the list whether
-- or not others wait: one DEL, where `leave` spends EXISTS and DEL.
local function leave_taken(waiters, wake, token)
  if redis.pcall('SREM', waiters, token) == 1 then
    redis.pcall('LTRIM', wake, 1, 0)
  end
end
"#;

/// Join the waiters without trying to acquire. KEYS: lock, waiters. ARGV: token,
/// heartbeat ms. Returns `{0, others}` free (nothing joined; `others`: the runs other
/// than this token in the waiters set), `{-1, type}` not a lock, `{1, pttl}` held (and
/// joined: a release will push a wake-up).
pub const WATCH_TEXT: &str = r#"
local holder = redis.pcall('GET', KEYS[1])
if not holder then
  local others = redis.pcall('SCARD', KEYS[2])
  if type(others) ~= 'number' then return {0, 0} end
  return {0, others - redis.call('SISMEMBER', KEYS[2], ARGV[1])}
end
if type(holder) ~= 'string' then
  return {-1, redis.call('TYPE', KEYS[1])['ok']}
end
redis.call('SADD', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {1, redis.call('PTTL', KEYS[1])}
"#;
pub static WATCH: Lua = Lua::new("cb4d6a97adefbb8e3c3be87189d36e96d16bf800", || WATCH_TEXT);

pub const WATCH_CALLS: &[Need] = &[
    on("get", Key::Lock),
    on("scard", Key::Waiters),
    on("sismember", Key::Waiters),
    on("type", Key::Lock),
    on("sadd", Key::Waiters),
    on("pttl", Key::Waiters),
    on("pexpire", Key::Waiters),
    on("pttl", Key::Lock),
];

/// The call joining `keys`' waiters as `token` for `heartbeat_ms`.
pub fn watch(keys: &LockKeys, token: &str, heartbeat_ms: u64) -> Call {
    let mut call = invocation(&WATCH, &[&keys.lock, &keys.waiters]);
    call.arg(token).arg(heartbeat_ms);
    call
}

/// Join the waiters whatever the lock's state on this node: over several nodes a
/// waiter's try may find the primary node free (the holder lost the race there, or its
/// release reached the primary first and the other nodes not yet) while a quorum is
/// held elsewhere, and the primary is where releases wake waiters. KEYS: waiters, lock.
/// ARGV: token, heartbeat ms. Returns 1 joined, the lock held here; 2 joined, the lock
/// free here: a release that came before the join woke nobody, so the waiter must try
/// again soon rather than wait for a wake-up (0: the key is of another type, left
/// alone).
pub const JOIN_TEXT: &str = r#"
if type(redis.pcall('SADD', KEYS[1], ARGV[1])) ~= 'number' then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if redis.call('EXISTS', KEYS[2]) == 0 then return 2 end
return 1
"#;
pub static JOIN: Lua = Lua::new("8ba4a61279f811e38ee32811f927398bca860a0c", || JOIN_TEXT);

pub const JOIN_CALLS: &[Need] = &[
    on("sadd", Key::Waiters),
    on("pttl", Key::Waiters),
    on("pexpire", Key::Waiters),
    on("exists", Key::Lock),
];

/// The call joining `keys`' waiters as `token` for `heartbeat_ms`, unconditionally.
pub fn join(keys: &LockKeys, token: &str, heartbeat_ms: u64) -> Call {
    let mut call = invocation(&JOIN, &[&keys.waiters, &keys.lock]);
    call.arg(token).arg(heartbeat_ms);
    call
}

/// What a watch found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// Free, with this many runs (other than the watcher) in the waiters set: one of
    /// them may be about to take the lock.
    Free {
        others: u64,
    },
    Held,
    NotALock(String),
}

/// Decodes a WATCH reply; `None` when it has another shape.
pub fn decode_watch(value: Value) -> Option<Watched> {
    let mut items = array(value)?;
    match int(items.next())? {
        0 => Some(Watched::Free {
            others: int(items.next()).map_or(0, |n| n.max(0) as u64),
        }),
        1 => Some(Watched::Held),
        -1 => Some(Watched::NotALock(string(items.next()))),
        _ => None,
    }
}

/// Leave the waiters (a waiter that gives up, or took the lock on other nodes). KEYS:
/// waiters, wake. ARGV: token. The last waiter to leave deletes the wake list (see
/// `acquire`).
pub const LEAVE_TEXT: &str = r#"
if redis.pcall('SREM', KEYS[1], ARGV[1]) == 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.pcall('LTRIM', KEYS[2], 1, 0)
end
return 1
"#;
pub static LEAVE: Lua = Lua::new("e90833e16631e32e21eaef3154e837a865a3a2e8", || LEAVE_TEXT);

pub const LEAVE_CALLS: &[Need] = &[
    on("srem", Key::Waiters),
    on("exists", Key::Waiters),
    on("ltrim", Key::Wake),
];

/// The call taking `token` out of `keys`' waiters.
pub fn leave(keys: &LockKeys, token: &str) -> Call {
    let mut call = invocation(&LEAVE, &[&keys.waiters, &keys.wake]);
    call.arg(token);
    call
}

/// Leave the waiters and hand a wake-up on (a waiter that popped one it has no use
/// for: `redlock wait`, a `--once-per` run whose slot already ran): pushed again only
/// when someone else still waits (else the wake list goes with the last waiter). KEYS:
/// waiters, wake. ARGV: token, wake ttl ms.
pub const HAND_ON_TEXT: &str = r#"
redis.pcall('SREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  if type(redis.pcall('LPUSH', KEYS[2], '1')) == 'number' then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
else
  redis.pcall('LTRIM', KEYS[2], 1, 0)
end
return 1
"#;
pub static HAND_ON: Lua = Lua::new("28f192c37fa38854fbe2728555a0cf684bab0028", || HAND_ON_TEXT);

pub const HAND_ON_CALLS: &[Need] = &[
    on("srem", Key::Waiters),
    on("exists", Key::Waiters),
    on("lpush", Key::Wake),
    on("pexpire", Key::Wake),
    on("ltrim", Key::Wake),
];

/// The call taking `token` out of `keys`' waiters and handing a wake-up on.
pub fn hand_on(keys: &LockKeys, token: &str) -> Call {
    let mut call = invocation(&HAND_ON, &[&keys.waiters, &keys.wake]);
    call.arg(token).arg(WAKE_TTL_MS);
    call
}

/// Leave a fair queue (a waiter that gives up or is interrupted). KEYS: lock, queue,
/// beats, queue info, this waiter's wake list. ARGV: token. Returns the next in line
/// when this waiter was the head and the lock is free (its turn has come: to be woken,
/// see `release::wake_head`), else ''.
pub const FAIR_LEAVE_TEXT: &str = r#"
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.pcall('LTRIM', KEYS[5], 1, 0)
if head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.call('ZRANGE', KEYS[2], 0, 0)[1] or ''
end
return ''
"#;
pub static FAIR_LEAVE: Lua = Lua::new("65ca1b67bc4fbc1cbe8ba83e9e395a4924cabb0b", || {
    FAIR_LEAVE_TEXT
});

pub const FAIR_LEAVE_CALLS: &[Need] = &[
    on("zrange", Key::Queue),
    on("zrem", Key::Queue),
    on("zrem", Key::Beats),
    on("hdel", Key::QueueInfo),
    on("ltrim", Key::OwnWake),
    on("exists", Key::Lock),
];

/// The call taking `token` out of `keys`' fair queue.
pub fn fair_leave(keys: &LockKeys, token: &str) -> Call {
    let own = keys.own_wake(token);
    let mut call = invocation(
        &FAIR_LEAVE,
        &[&keys.lock, &keys.queue, &keys.beats, &keys.queue_info, &own],
    );
    call.arg(token);
    call
}

/// Decodes a FAIR_LEAVE reply: the head to wake, if any.
pub fn decode_fair_leave(value: Value) -> Option<String> {
    match value {
        Value::BulkString(b) if !b.is_empty() => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        for (text, calls) in [
            (WATCH_TEXT, WATCH_CALLS),
            (JOIN_TEXT, JOIN_CALLS),
            (LEAVE_TEXT, LEAVE_CALLS),
            (HAND_ON_TEXT, HAND_ON_CALLS),
            (FAIR_LEAVE_TEXT, FAIR_LEAVE_CALLS),
        ] {
            assert_calls_match(text, calls);
            assert_keys_declared(text);
        }
    }

    #[test]
    fn replies() {
        assert_eq!(
            decode_watch(Value::Array(vec![Value::Int(1), Value::Int(5)])),
            Some(Watched::Held)
        );
        assert_eq!(
            decode_fair_leave(Value::BulkString(b"t".to_vec())),
            Some("t".into())
        );
        assert_eq!(decode_fair_leave(Value::BulkString(vec![])), None);
    }
}

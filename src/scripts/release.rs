//! Release: compare-and-delete with the run's record ([`RELEASE`]); wake a fair queue's
//! head ([`WAKE_HEAD`]); let the name's kind go once nothing uses it ([`SETTLE`]).

use std::sync::LazyLock;

use redis::Value;

use crate::redis::{Call, Lua};

use super::{CLOCK, Key, Need, WAKE_TTL_MS, bare, invocation, on, splice};
use crate::keys::LockKeys;
use crate::redis::reply::{array, int, string};

/// KEYS: lock, meta, waiters, wake, history, queue, mode, and with `--once-id` the ID's
/// record (`done` is set to the run's record when it succeeded; its `run`, this run's
/// start mark, is removed: an ended run is never taken for a vanished one; a give-back,
/// without a record, also takes back the start its token counted there). ARGV: token, keep ms (0 = delete; `inside`: a nested run, which only records its run),
/// wake ttl ms (0: wake nobody on this node), '1' for a fair queue's lock, retain ms,
/// '1' for a run with a start mark (`--once-per`, an `--elect` term: the mark is removed first), then the run's record: history size (0: record nothing), the record's JSON without
/// its closing brace, held ms, start ms (the acquisition's server time; 0: unknown,
/// then `TIME` − held), status if the lock was still ours, status if not, '1' when the
/// run already knows it lost the lock. Returns `{outcome, head}`: outcome 1 deleted, 2
/// kept for `--hold-min` (the metadata says until when and when the run ended, the mode
/// key is kept as long, one waiter woken to see the new end),
/// 0 not ours, 3 already released by an earlier try of this
/// release; head: a fair queue's head to wake (see [`WAKE_HEAD`]; '' for none).
///
/// A release whose reply was lost (a dropped connection, a timeout after the script
/// ran) is tried again; the retry finds the key gone. It looks for its own record among
/// the history's newest runs: there, the first try ran (3, or 0 when that try found the
/// lock lost), and nothing is recorded twice. Without a history (`--history 0`) a retry
/// cannot tell and reports the lock lost.
///
/// The record is completed here, in the same script as the delete, so that whoever
/// takes the lock next (a `--once-per` run) sees it: `"status"` and `"lost"` from what
/// the release finds, `"start_ms"` and `"end_ms"` in server time (the acquisition's,
/// plus the time held). It is pushed to the history, trimmed to its size, and the
/// history kept `retain` ms, even when the lock is no longer ours (a lost run is
/// recorded as lost). A history key of another type is left alone. The record is best
/// effort (`pcall`): a user whose ACL lacks LPUSH or LTRIM still releases.
///
/// When the lock is no longer ours (deleted or taken over behind our back), our own
/// metadata may still be there: it is removed if its `token` field is ours, so a lost
/// lock leaves nothing of ours behind; another holder's metadata is never touched.
/// After a delete, when someone waits, ONE element is pushed to the wake list: the one
/// waiter blocked longest in `BLPOP` on it wakes and takes the lock, whatever the number
/// of waiters; with two or more waiters a backup element follows it, whose waiter tries
/// once after a grace period (a woken waiter may be stopped). A wake list of another
/// type is left alone (the waiters then find the release by polling).
/// Cost: GET, DEL, SCARD (+ LPUSH, PEXPIRE when someone waits; + LPUSH, PEXPIRE, and
/// LTRIM once the history is full, for the run's record; + HGET, HDEL of a `--once-id`
/// run's start mark).
pub static TEXT: LazyLock<String> = LazyLock::new(|| {
    splice(
        r#"
--CLOCK--
local token = ARGV[1]
-- A start mark told as vanished (`"told":true`) whose run came back after all: its
-- record keeps the mark, so that a slot told closed stays closed.
local told = false
-- A --once-per run's start mark (written by the acquire; an --elect term's, by its
-- start) goes first, whatever else the
-- release finds: the record that replaces it, or nothing (a take-back), is what the
-- next once-per check must see.
-- ARGV[6]: 1 the run has a start mark, 2 a take-back after a lost reply, 3 both.
local marks, untell = ARGV[6] == '1' or ARGV[6] == '3', ARGV[6] == '2' or ARGV[6] == '3'
if untell then
  -- The acquire that marked a vanished run told by this token (`"told_by"`, see
  -- `completion::tell`) lost its reply: the try never said it. Untold again, the
  -- next try tells it: at least once, and still once (only the try that hears its
  -- reply says it).
  local by = ',"told":true,"told_by":"' .. token .. '"'
  local recent = redis.pcall('LRANGE', KEYS[5], 0, 9)
  if type(recent) == 'table' then
    for i, record in ipairs(recent) do
      local at = string.find(record, by, 1, true)
      if at then
        redis.pcall('LSET', KEYS[5], i - 1, string.sub(record, 1, at - 1) .. string.sub(record, at + #by))
      end
    end
  end
  local running = KEYS[8] and redis.pcall('HGET', KEYS[8], 'run')
  if type(running) == 'string' then
    local at = string.find(running, by, 1, true)
    if at then
      redis.pcall('HSET', KEYS[8], 'run', string.sub(running, 1, at - 1) .. string.sub(running, at + #by))
    end
  end
end
if marks then
  local listed = redis.pcall('LRANGE', KEYS[5], 0, -1)
  if type(listed) == 'table' then
    local start = '{"token":"' .. token .. '","start_ms":'
    for _, record in ipairs(listed) do
      if string.sub(record, 1, #start) == start and string.find(record, '"running":true', 1, true) then
        told = string.find(record, '"told":true', 1, true) ~= nil
        redis.call('LREM', KEYS[5], 1, record)
        break
      end
    end
  end
end
local ours = redis.pcall('GET', KEYS[1]) == token
-- With the lock ours, so is its metadata: it was written with the lock, and nothing
-- writes it while the lock is held (one HGET less on every release). Without, the
-- metadata is ours only when its token field says so.
local ours_meta = ours or redis.pcall('HGET', KEYS[2], 'token') == token
local size = tonumber(ARGV[7] or '0')
if size > 0 and not ours then
  local recent = redis.pcall('LRANGE', KEYS[5], 0, 9)
  if type(recent) == 'table' then
    local mine = '"token":"' .. token .. '"'
    for _, record in ipairs(recent) do
      if string.find(record, mine, 1, true) then
        if string.find(record, '"lost":false', 1, true) then return {3, ''} end
        return {0, ''}
      end
    end
  end
end
-- The record is completed only where it goes: the history, or a --once-id record.
local record, succeeded = nil, false
if ARGV[8] and (size > 0 or KEYS[8]) then
  local held, start = tonumber(ARGV[9]), tonumber(ARGV[10])
  if start == 0 then start = now_ms() - held end
  local status = ARGV[12]
  local lost = 'true'
  if ours and ARGV[13] ~= '1' then
    status = ARGV[11]
    lost = 'false'
  end
  succeeded = lost == 'false' and status == '0'
  record = ARGV[8] .. ',"status":' .. status .. ',"lost":' .. lost
    .. (told and ',"told":true' or '') .. ',"start_ms":'
    .. int(start) .. ',"end_ms":' .. int(start + held) .. '}'
end
if size > 0 and record then
  -- A history key of another type fails the push (pcall) and is left alone.
  local pushed = redis.pcall('LPUSH', KEYS[5], record)
  if type(pushed) == 'number' then
    if pushed > size then redis.call('LTRIM', KEYS[5], 0, size - 1) end
    redis.call('PEXPIRE', KEYS[5], ARGV[5])
  end
end
-- `--once-id`: a run that succeeded closes its ID for good, in the script that hands
-- the lock on, so that the waiter this release wakes finds the ID done.
if KEYS[8] and succeeded then
  if type(redis.pcall('HSET', KEYS[8], 'done', record)) == 'number' then
    redis.call('PEXPIRE', KEYS[8], ARGV[5])
  end
end
-- Whatever its end, the run is no longer the ID's run in progress: its start mark goes,
-- so that the next try never takes an ended run for a vanished one (one it must tell).
-- A give-back (no record: the command never started) whose start was counted (the
-- start's reply came too late to start the command) takes the count back too, while
-- the lock is still ours: nothing else can have started.
if KEYS[8] then
  local running = redis.pcall('HGET', KEYS[8], 'run')
  if type(running) == 'string' and string.find(running, '"token":"' .. token .. '"', 1, true) then
    if ours and not ARGV[8] then redis.call('HINCRBY', KEYS[8], 'starts', -1) end
    redis.call('HDEL', KEYS[8], 'run')
  end
end
-- A nested run's release (keep 'inside'): its enclosing run holds the name with this
-- token and releases it; the nested run only records its run, and touches nothing else.
if ARGV[2] == 'inside' then return {ours and 1 or 0, ''} end
if not ours then
  if ours_meta then
    redis.call('DEL', KEYS[2])
  end
  return {0, ''}
end
-- Wakes one waiter (a plain lock's or a semaphore's) or names a fair queue's head to
-- wake, when this node wakes and someone waits. With two or more waiters a second,
-- backup wake-up ('2') follows the taker's ('1'): its waiter tries once after a grace
-- period, so that a woken waiter that is stopped (SIGSTOP, Ctrl-Z, a frozen cgroup)
-- does not keep the lock free until the others' safety net (see wait/mod.rs).
-- `backup`: whether to push it (not for a --hold-min keep, which hands nothing over).
local function wake(backup)
  if tonumber(ARGV[3]) == 0 then return '' end
  if ARGV[4] == '1' then
    local first = redis.pcall('ZRANGE', KEYS[6], 0, 0)
    if type(first) == 'table' and first[1] then return first[1] end
    return ''
  end
  local waiting = redis.pcall('SCARD', KEYS[3])
  if type(waiting) ~= 'number' then
    -- A user whose ACL lacks SCARD (granted before the backup existed): one wake-up.
    waiting = redis.call('EXISTS', KEYS[3])
  end
  if waiting == 0 then return '' end
  local pushed
  if backup and waiting > 1 then
    pushed = redis.pcall('LPUSH', KEYS[4], '2', '1')
  else
    pushed = redis.pcall('LPUSH', KEYS[4], '1')
  end
  if type(pushed) == 'number' then
    redis.call('PEXPIRE', KEYS[4], ARGV[3])
  end
  return ''
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('PEXPIRE', KEYS[1], keep)
  -- Said in the metadata, so that status shows a keep and `--if-dead` refuses it.
  local now = now_ms()
  redis.call('HSET', KEYS[2], 'kept_until_ms', int(now + keep), 'ended_ms', int(now))
  redis.call('PEXPIRE', KEYS[2], keep)
  -- The name's kind lives as long as its kept lock.
  local kind_left = redis.call('PTTL', KEYS[7])
  if kind_left >= 0 and kind_left < keep then redis.call('PEXPIRE', KEYS[7], keep) end
  -- The lock's end moved closer: one waiter wakes to see when (a fair queue's head
  -- comes back within its heartbeat anyway).
  if ARGV[4] ~= '1' then wake(false) end
  return {2, ''}
end
redis.call('DEL', KEYS[1], KEYS[2])
return {1, wake(true)}
"#,
        &[("CLOCK", CLOCK)],
    )
});
pub static RELEASE: Lua = Lua::new("6cd7d0c971fc8379ad9212ff147a8d0f361ac0e1", || TEXT.as_str());

pub const CALLS: &[Need] = &[
    bare("time"),
    on("get", Key::Lock),
    on("hget", Key::Meta),
    on("lrange", Key::History),
    on("lrem", Key::History),
    on("lset", Key::History),
    on("lpush", Key::History),
    on("ltrim", Key::History),
    on("pexpire", Key::History),
    on("del", Key::Meta),
    on("pexpire", Key::Lock),
    on("hset", Key::Meta),
    on("pexpire", Key::Meta),
    on("pttl", Key::Mode),
    on("pexpire", Key::Mode),
    on("del", Key::Lock),
    on("zrange", Key::Queue),
    on("scard", Key::Waiters),
    on("exists", Key::Waiters),
    on("lpush", Key::Wake),
    on("pexpire", Key::Wake),
    on("hset", Key::Once),
    on("pexpire", Key::Once),
    on("hget", Key::Once),
    on("hincrby", Key::Once),
    on("hdel", Key::Once),
];

/// The run's record for the history, as the release completes it (see [`TEXT`]).
pub struct Record<'a> {
    /// How many records the history keeps (0: record nothing).
    pub size: u32,
    /// The record's JSON without its closing brace.
    pub head: &'a str,
    pub held_ms: u64,
    /// The acquisition's server time, ms (0: unknown).
    pub start_ms: u64,
    /// The run's status if the lock was still ours, and if it was not.
    pub status: u8,
    pub status_if_lost: u8,
    /// Whether the run already knows it lost the lock.
    pub lost: bool,
}

/// One release of a lock.
pub struct Request<'a> {
    /// The lock's keys (a semaphore's slot: the slot's keys).
    pub keys: &'a LockKeys,
    /// The release wakes a queue's head itself (see `kinds`), not a waiter of the set.
    pub wakes_head: bool,
    pub token: &'a str,
    /// `--hold-min`: keep the key ours this long instead of deleting it (0: delete).
    pub keep_ms: u64,
    /// A nested run's release: the enclosing run holds the name with this token and
    /// releases it; this one only records its run (`keep_ms` is not used).
    pub inside: bool,
    pub retain_ms: u64,
    /// A run with a start mark in the history (`--once-per`, an `--elect` term): the
    /// mark is removed.
    pub once_per: bool,
    /// A take-back after a lost reply: a vanished run this token told (`"told_by"`) is
    /// marked untold again, so that a later try tells it.
    pub untell: bool,
    /// `--once-id`: the ID's record key.
    pub once_key: Option<&'a [u8]>,
    pub record: Option<Record<'a>>,
}

impl Request<'_> {
    /// The call; `waking`: this node wakes a waiter (see `Nodes::primary`).
    pub fn call(&self, waking: bool) -> Call {
        let k = self.keys;
        let keys = [
            &k.lock, &k.meta, &k.waiters, &k.wake, &k.history, &k.queue, &k.mode,
        ];
        let keys: Vec<&[u8]> = keys
            .iter()
            .map(|k| k.as_slice())
            .chain(self.once_key)
            .collect();
        let mut call = invocation(&RELEASE, &keys);
        let fair = if self.wakes_head { "1" } else { "0" };
        call.arg(self.token);
        if self.inside {
            call.arg("inside");
        } else {
            call.arg(self.keep_ms);
        }
        call.arg(if waking { WAKE_TTL_MS } else { 0 })
            .arg(fair)
            .arg(self.retain_ms)
            .arg(u8::from(self.once_per) + 2 * u8::from(self.untell));
        if let Some(r) = &self.record {
            call.arg(r.size)
                .arg(r.head)
                .arg(r.held_ms)
                .arg(r.start_ms)
                .arg(r.status)
                .arg(r.status_if_lost)
                .arg(if r.lost { "1" } else { "0" });
        }
        call
    }
}

/// What a release found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Deleted,
    Kept,
    NotOurs,
    /// An earlier try of this release deleted it (its reply was lost).
    AlreadyReleased,
}

/// Decodes the reply: the outcome and a fair queue's head to wake.
pub fn decode(value: Value) -> Option<(Outcome, Option<String>)> {
    let mut items = array(value)?;
    let outcome = match int(items.next())? {
        1 => Outcome::Deleted,
        2 => Outcome::Kept,
        0 => Outcome::NotOurs,
        3 => Outcome::AlreadyReleased,
        _ => return None,
    };
    let head = Some(string(items.next())).filter(|h| !h.is_empty());
    Some((outcome, head))
}

/// Wakes a fair queue's head on its own wake list, when the lock is free and it is
/// still the head. KEYS: lock, queue, the head's wake list. ARGV: the head's token,
/// wake ttl ms. Returns 1 when woken. (A second script because only the server knows
/// the head, and a script may touch only the keys it is given.)
pub const WAKE_HEAD_TEXT: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local first = redis.pcall('ZRANGE', KEYS[2], 0, 0)
if type(first) ~= 'table' or first[1] ~= ARGV[1] then return 0 end
if type(redis.pcall('LPUSH', KEYS[3], '1')) ~= 'number' then return 0 end
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
"#;
pub static WAKE_HEAD: Lua = Lua::new("3c685f57e76684119a8320351d6573ccae635ed8", || {
    WAKE_HEAD_TEXT
});

pub const WAKE_HEAD_CALLS: &[Need] = &[
    on("exists", Key::Lock),
    on("zrange", Key::Queue),
    on("lpush", Key::OwnWake),
    on("pexpire", Key::OwnWake),
];

/// The call waking `head`, a fair queue's head (see [`WAKE_HEAD_TEXT`]).
pub fn wake_head(keys: &LockKeys, head: &str) -> Call {
    let own = keys.own_wake(head);
    let mut call = invocation(&WAKE_HEAD, &[&keys.lock, &keys.queue, &own]);
    call.arg(head).arg(WAKE_TTL_MS);
    call
}

/// After a release by a semaphore holder or a fair queue's holder, or a fair waiter
/// leaving: the mode key goes when nothing uses the name any more (else it stays, kept
/// up by the holders and waiters). KEYS: mode, then the keys whose existence means "in
/// use" (every slot's lock key; or the lock and the queue). ARGV: the mode this kind
/// writes (a mode key holding anything else is not ours to remove). Returns 1 when the
/// mode key was removed.
pub const SETTLE_TEXT: &str = r#"
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return 0 end
end
return redis.call('DEL', KEYS[1])
"#;
pub static SETTLE: Lua = Lua::new("924a2bd84fd7a90f6ce5c937331c0852d1e63ec5", || SETTLE_TEXT);

pub const SETTLE_CALLS: &[Need] = &[
    on("get", Key::Mode),
    on("exists", Key::Slot),
    on("del", Key::Mode),
];

/// The call settling the name `keys` whose mode key reads `mode` while any of
/// `in_use` exists.
pub fn settle(keys: &LockKeys, mode: &str, in_use: &[Vec<u8>]) -> Call {
    let mut all: Vec<&[u8]> = vec![&keys.mode];
    all.extend(in_use.iter().map(Vec::as_slice));
    let mut call = invocation(&SETTLE, &all);
    call.arg(mode);
    call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        assert_calls_match(&TEXT, CALLS);
        assert_calls_match(WAKE_HEAD_TEXT, WAKE_HEAD_CALLS);
        assert_calls_match(SETTLE_TEXT, SETTLE_CALLS);
        for text in [&*TEXT, WAKE_HEAD_TEXT, SETTLE_TEXT] {
            assert_keys_declared(text);
        }
    }

    #[test]
    fn replies() {
        let reply = |n: i64, head: &str| {
            Value::Array(vec![
                Value::Int(n),
                Value::BulkString(head.as_bytes().to_vec()),
            ])
        };
        assert_eq!(decode(reply(1, "")), Some((Outcome::Deleted, None)));
        assert_eq!(
            decode(reply(1, "t2")),
            Some((Outcome::Deleted, Some("t2".into())))
        );
        assert_eq!(decode(reply(3, "")), Some((Outcome::AlreadyReleased, None)));
        assert_eq!(decode(reply(9, "")), None);
        assert_eq!(decode(Value::Int(1)), None);
    }
}

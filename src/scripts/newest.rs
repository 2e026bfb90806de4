//! The order axis's newest-wins queue (`--supersede`): its acquire ([`NEWEST`]), the
//! preempt request of `redlock preempt` ([`PREEMPT`]), and the wake-up that tells a
//! superseded waiter or a preempted holder at once ([`NOTIFY`]). Leaving the queue is
//! the fair queue's (`waiters::FAIR_LEAVE`), and so is the release's wake-up of the head.

use std::sync::LazyLock;

use redis::Value;

use crate::redis::{Call, Lua};

use super::taking::{taking_calls, text};
use super::{Key, Need, WAKE_TTL_MS, bare, invocation, on};
use crate::keys::LockKeys;
use crate::redis::reply::{array, int, string};

/// How long a verdict ("superseded by …") is kept after the last one: two of the
/// longest heartbeats, so that a superseded waiter finds it however late it comes back
/// (a waiter comes back within its heartbeat, or has left the queue).
pub const VERDICT_KEEP_MS: u64 = 2 * super::FIFO_MAX_BEAT.as_millis() as u64;

/// A newest-wins lock (`--supersede`). KEYS: lock, meta, queue, beats, fence, mode,
/// queue info, this run's wake list, verdicts, order. ARGV: token, ttl ms, heartbeat ms
/// (0: a try that does not wait), known holder, retain ms, who this run is (JSON),
/// the mode key's text, the order key ('' : the arrival), the preempt request (JSON;
/// '' for `--supersede waiting`), meta field/value pairs.
///
/// The queue is the fair queue's sorted set, scored by order key or by a ticket drawn
/// like a fencing number (arrival order); at most one run waits in it. A run's first
/// try as a waiter (its arrival) is refused at once when a newer run waits (`{-9, who
/// waits}`); else every older waiter is superseded: its verdict (who superseded it) is
/// written, it leaves the queue, and its token is returned to be woken, so it learns on
/// its next try (`{-9, who}`, the verdict then removed) within one round trip. With a preempt request, the holder
/// is asked to stop (the request in its metadata, its token returned to be woken) unless
/// its metadata says `uninterruptible`; the holder's metadata counts the superseded
/// (`superseded`, for `status`). A run whose order key is lower than the largest
/// that started is refused (`{-10, largest}`); a run that takes the lock records its
/// order key there. A free lock is taken by the newest waiter, or by an arrival that
/// superseded every waiter.
///
/// Replies as the fair queue's (`acquire::decode`), with the tokens to wake last:
/// `{1, fence, now, 1, 0, '', wake}` taken, `{0, holder, pttl, meta, place, waiting,
/// wake}` busy. Cost: TIME, GET (mode), HGET (verdict), GET (order), ZRANGEBYSCORE ×2,
/// GET (lock), then SET, HSET, PEXPIRE, SET ×2 (taken) or ZSCORE, ZRANGE, ZADD ×2,
/// HSET, PTTLs (waiting), plus HSET, ZREM ×2, HDEL per superseded waiter.
pub static NEWEST_TEXT: LazyLock<String> = LazyLock::new(|| {
    text(
        r#"
--CLOCK--
--TAKING--
local token, ttl = ARGV[1], tonumber(ARGV[2])
local heartbeat = math.min(tonumber(ARGV[3]), --MAX_BEAT--)
local key = tonumber(ARGV[8])
local now = now_ms()
local mode = redis.pcall('GET', KEYS[6])
if type(mode) == 'table' then return foreign('mode', KEYS[6]) end
if mode then
  if mode ~= ARGV[7] then return {-6, mode} end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return {-6, 'plain'}
end
local verdict = redis.pcall('HGET', KEYS[9], token)
if type(verdict) == 'table' then return foreign('verdicts', KEYS[9]) end
if verdict then
  redis.call('HDEL', KEYS[9], token)
  redis.pcall('LTRIM', KEYS[8], 1, 0)
  return {-9, verdict}
end
local high = redis.pcall('GET', KEYS[10])
if type(high) == 'table' then return foreign('order', KEYS[10]) end
high = tonumber(high)
if key and high and key < high then return {-10, high} end
local function drop(gone)
  redis.call('ZREM', KEYS[3], gone)
  redis.call('ZREM', KEYS[4], gone)
  redis.pcall('HDEL', KEYS[7], gone)
end
-- Gone: a heartbeat that ran out, or a deadline no waiter can claim.
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do drop(gone) end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. int(now + --MAX_BEAT--), '+inf')) do
  drop(gone)
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then return foreign('lock', KEYS[1]) end
if holder == token then
  return {2, refresh(KEYS[1], KEYS[2], ttl), now, 1}
end
local wake = {}
local arriving = heartbeat > 0 and not redis.call('ZSCORE', KEYS[3], token)
if arriving then
  local score = key
  if not score then
    local ticket, refused = draw(KEYS[5])
    if refused then return refused end
    redis.call('SET', KEYS[5], int(ticket), 'PX', ARGV[5])
    score = ticket
  end
  local newest = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if newest[1] and tonumber(newest[2]) > score then
    local who = redis.pcall('HGET', KEYS[7], newest[1])
    if type(who) ~= 'string' then who = '{}' end
    return {-9, who}
  end
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', score)) do
    redis.call('HSET', KEYS[9], old, ARGV[6])
    drop(old)
    table.insert(wake, old)
  end
  local ours = holder and redis.pcall('HGET', KEYS[2], 'token') == holder
  if #wake > 0 then
    redis.call('PEXPIRE', KEYS[9], --VERDICT_KEEP--)
    if ours then redis.call('HINCRBY', KEYS[2], 'superseded', #wake) end
  end
  if ARGV[9] ~= '' and ours and redis.call('HGET', KEYS[2], 'uninterruptible') ~= '1' then
    redis.call('HSET', KEYS[2], 'preempt', ARGV[9])
    table.insert(wake, holder)
  end
  redis.call('ZADD', KEYS[3], score, token)
  redis.call('HSET', KEYS[7], token, ARGV[6])
end
local head = redis.call('ZRANGE', KEYS[3], -1, -1)[1]
-- A head without a heartbeat entry would hold the line for good.
while head and head ~= token and not redis.call('ZSCORE', KEYS[4], head) do
  drop(head)
  head = redis.call('ZRANGE', KEYS[3], -1, -1)[1]
end
if not holder and (not head or head == token) and redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[5], ttl, ARGV[5], {}, 10)
  if refused then return refused end
  if key then redis.call('SET', KEYS[10], int(math.max(key, high or 0)), 'PX', ARGV[5]) end
  if head then
    drop(token)
    redis.pcall('LTRIM', KEYS[8], 1, 0)
  end
  if redis.call('PTTL', KEYS[6]) < ttl then
    redis.call('SET', KEYS[6], ARGV[7], 'PX', ttl)
  end
  return {1, fence, now, 1, 0, '', wake}
end
local place = 0
if heartbeat > 0 and redis.call('ZSCORE', KEYS[3], token) then
  redis.call('ZADD', KEYS[4], now + heartbeat, token)
  local keep = math.max(heartbeat, ttl)
  for _, k in ipairs({KEYS[3], KEYS[4], KEYS[7]}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
  if redis.call('PTTL', KEYS[6]) < keep then
    redis.call('SET', KEYS[6], ARGV[7], 'PX', keep)
  end
  place = 1
end
local pttl = 0
if holder then
  pttl = redis.call('PTTL', KEYS[1])
else
  holder = ''
end
local meta = {}
if holder ~= '' and holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {0, holder, pttl, meta, place, redis.call('ZCARD', KEYS[3]), wake}
"#,
    )
    .replace("--VERDICT_KEEP--", &VERDICT_KEEP_MS.to_string())
});
pub static NEWEST: Lua = Lua::new("957ecf53d76470c89f40a2a5a06ce2e5f40c533b", || {
    NEWEST_TEXT.as_str()
});

pub const NEWEST_CALLS: &[Need] = taking_calls![
    on("exists", Key::Lock),
    on("hget", Key::Verdicts),
    on("hdel", Key::Verdicts),
    on("get", Key::Order),
    on("zrem", Key::Queue),
    on("zrem", Key::Beats),
    on("hdel", Key::QueueInfo),
    on("zrangebyscore", Key::Beats),
    on("zscore", Key::Queue),
    on("zrange", Key::Queue),
    on("hget", Key::QueueInfo),
    on("zrangebyscore", Key::Queue),
    on("hset", Key::Verdicts),
    on("pexpire", Key::Verdicts),
    on("hincrby", Key::Meta),
    on("hset", Key::Meta),
    on("zadd", Key::Queue),
    on("hset", Key::QueueInfo),
    on("zscore", Key::Beats),
    on("set", Key::Lock),
    on("set", Key::Order),
    on("ltrim", Key::OwnWake),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("zadd", Key::Beats),
    on("pttl", Key::Queue),
    on("pexpire", Key::Queue),
    on("pttl", Key::Lock),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("zcard", Key::Queue),
];

/// The call of [`NEWEST`] (`acquire::Request` builds it).
pub(super) fn invocation_of(keys: &LockKeys, token: &str) -> Call {
    let own = keys.own_wake(token);
    invocation(
        &NEWEST,
        &[
            &keys.lock,
            &keys.meta,
            &keys.queue,
            &keys.beats,
            &keys.fence,
            &keys.mode,
            &keys.queue_info,
            &own,
            &keys.verdicts,
            &keys.order,
        ],
    )
}

/// Asks a lock's holder to stop (`redlock preempt`). KEYS: lock, meta, mode. ARGV: the
/// request (JSON). Returns `{1, holder}` asked, `{0}` free (or not a lock), `{-1,
/// holder}` a holder without redlock's metadata (another client: it cannot be asked),
/// `{-2, holder}` an `--uninterruptible` holder (refused), `{-3, mode}` a semaphore (no
/// one holder to ask).
pub const PREEMPT_TEXT: &str = r#"
local mode = redis.pcall('GET', KEYS[3])
if type(mode) == 'string' and string.sub(mode, 1, 6) == 'limit ' then return {-3, mode} end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then return {0} end
if redis.pcall('HGET', KEYS[2], 'token') ~= holder then return {-1, holder} end
if redis.call('HGET', KEYS[2], 'uninterruptible') == '1' then return {-2, holder} end
redis.call('HSET', KEYS[2], 'preempt', ARGV[1])
return {1, holder}
"#;
pub static PREEMPT: Lua = Lua::new("d0c57f314662b235f888d6689eef891042c34e87", || PREEMPT_TEXT);

pub const PREEMPT_CALLS: &[Need] = &[
    on("get", Key::Mode),
    on("get", Key::Lock),
    on("hget", Key::Meta),
    on("hset", Key::Meta),
];

/// The call asking `keys`' holder to stop with `request`.
pub fn preempt(keys: &LockKeys, request: &str) -> Call {
    let mut call = invocation(&PREEMPT, &[&keys.lock, &keys.meta, &keys.mode]);
    call.arg(request);
    call
}

/// What a preempt request found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The holder (its token) was asked.
    Asked(String),
    /// Nobody holds the lock.
    Free,
    /// The holder is another client's (no redlock metadata).
    Foreign(String),
    /// The holder is `--uninterruptible`.
    Uninterruptible(String),
    /// The name is a semaphore.
    Semaphore(String),
}

/// Decodes [`PREEMPT`]'s reply.
pub fn decode_preempt(value: Value) -> Option<Asked> {
    let mut items = array(value)?;
    let code = int(items.next())?;
    let text = string(items.next());
    Some(match code {
        1 => Asked::Asked(text),
        0 => Asked::Free,
        -1 => Asked::Foreign(text),
        -2 => Asked::Uninterruptible(text),
        -3 => Asked::Semaphore(text),
        _ => return None,
    })
}

/// Wakes one run on its own wake list with `element` (a superseded waiter: it tries
/// again and finds its verdict; a holder: the preempt request), only while that is
/// still news: the waiter's verdict is unread, or the holder still holds the lock (a
/// push nobody pops would linger its ten seconds). KEYS: the wake list, verdicts, lock.
/// ARGV: the run's token, element, ttl ms. A key of another type there is left alone
/// (0).
pub const NOTIFY_TEXT: &str = r#"
if type(redis.pcall('HGET', KEYS[2], ARGV[1])) ~= 'string' and redis.pcall('GET', KEYS[3]) ~= ARGV[1] then
  return 0
end
if type(redis.pcall('LPUSH', KEYS[1], ARGV[2])) ~= 'number' then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"#;
pub static NOTIFY: Lua = Lua::new("2d19b424fbcf040ee340fb41806cbce55b4b5687", || NOTIFY_TEXT);

pub const NOTIFY_CALLS: &[Need] = &[
    on("hget", Key::Verdicts),
    on("get", Key::Lock),
    on("lpush", Key::OwnWake),
    on("pexpire", Key::OwnWake),
];

/// The call waking `token` on `keys` with `element`.
pub fn notify(keys: &LockKeys, token: &str, element: &str) -> Call {
    let own = keys.own_wake(token);
    let mut call = invocation(&NOTIFY, &[&own, &keys.verdicts, &keys.lock]);
    call.arg(token).arg(element).arg(WAKE_TTL_MS);
    call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        for (text, calls) in [
            (NEWEST_TEXT.as_str(), NEWEST_CALLS),
            (PREEMPT_TEXT, PREEMPT_CALLS),
            (NOTIFY_TEXT, NOTIFY_CALLS),
        ] {
            assert_calls_match(text, calls);
            assert_keys_declared(text);
        }
    }

    #[test]
    fn preempt_replies() {
        let reply = |n: i64, s: &str| {
            Value::Array(vec![
                Value::Int(n),
                Value::BulkString(s.as_bytes().to_vec()),
            ])
        };
        assert_eq!(
            decode_preempt(reply(1, "t")),
            Some(Asked::Asked("t".into()))
        );
        assert_eq!(
            decode_preempt(Value::Array(vec![Value::Int(0)])),
            Some(Asked::Free)
        );
        assert_eq!(
            decode_preempt(reply(-2, "t")),
            Some(Asked::Uninterruptible("t".into()))
        );
        assert_eq!(decode_preempt(reply(9, "")), None);
    }
}

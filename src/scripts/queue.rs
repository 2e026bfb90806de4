//! The order axis's first-come, first-served queue (`--fair`): its acquire. Its call
//! and reply are `acquire`'s ([`crate::scripts::acquire::Request`], `decode`); leaving
//! the queue is `waiters::FAIR_LEAVE`.

use std::sync::LazyLock;

use crate::redis::Lua;

use super::taking::{taking_calls, text};
use super::{Key, Need, bare, on};

/// A fair queue's lock (`--fair`): first come, first served. KEYS: lock, meta, queue,
/// beats, fence, history, mode, queue info, this waiter's wake list, and with `--once-id`
/// its record. ARGV: token, ttl
/// ms, heartbeat ms (0: try without joining the queue), known holder, once-per ms,
/// retain ms, max attempts, rerun (0-3), the `--once-per` slot this try is for (0: the
/// slot of now), who this waiter is (JSON for `status`), meta field/value pairs. Busy adds
/// this waiter's place, the queue's length and the head to wake (`{0, holder, pttl,
/// meta, place, waiting, head}`; place 0: not in the queue; holder '' when the lock is
/// free but promised to the head, with the time until the head's heartbeat runs out as
/// pttl; head '' when nobody is to be woken).
///
/// The queue is a sorted set of tokens by ticket (tickets are drawn like fencing
/// numbers, which only grow, so arrival order is the ticket order), with each waiter's
/// heartbeat deadline (server time) in a second sorted set: every try drops the waiters
/// whose heartbeat ran out, so a dead waiter holds the line for at most its heartbeat;
/// when that makes a new head while the lock is free, the head is returned to be woken
/// (its wake list is not one of this script's KEYS). Only the head may take a free
/// lock. The mode key says `fair` while the lock is held or anyone waits; a plain run
/// or a semaphore is refused meanwhile, and a fair run is refused beside a plain
/// holder. Cost: TIME, GET, ZRANGEBYSCORE, ZRANGE, then SET … (taken) or ZSCORE, ZADD,
/// PTTLs, ZRANK, ZCARD (waiting); O(1) in the number of waiters but for the dead ones
/// dropped.
pub static FAIR_TEXT: LazyLock<String> = LazyLock::new(|| {
    text(
        r#"
--CLOCK--
--TAKING--
local token, ttl = ARGV[1], tonumber(ARGV[2])
local heartbeat = math.min(tonumber(ARGV[3]), --MAX_BEAT--)
local refused, attempt, after, untold = once_per(KEYS[6], ARGV[5], KEYS[1], tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]))
if refused then return refused end
if KEYS[10] then
  refused, attempt, after, untold = once_id(KEYS[10], tonumber(ARGV[7]), KEYS[1], tonumber(ARGV[8]))
  if refused then return refused end
end
local now = now_ms()
local mode = redis.pcall('GET', KEYS[7])
if type(mode) == 'table' then return foreign('mode', KEYS[7]) end
if mode then
  if mode ~= 'fair' then return {-6, mode} end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return {-6, 'plain'}
end
-- Gone: a heartbeat that ran out, or a deadline no waiter can claim (further than the
-- longest heartbeat from now: written by hand, or by a broken clock).
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, far in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. int(now + --MAX_BEAT--), '+inf')) do
  table.insert(dead, far)
end
local function drop(gone)
  redis.call('ZREM', KEYS[3], gone)
  redis.call('ZREM', KEYS[4], gone)
  redis.pcall('HDEL', KEYS[8], gone)
end
for _, gone in ipairs(dead) do drop(gone) end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
-- A head without a heartbeat entry would hold the line for good.
while head and head ~= token and not redis.call('ZSCORE', KEYS[4], head) do
  drop(head)
  table.insert(dead, head)
  head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
end
if (not head or head == token) and redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[5], ttl, ARGV[6], {}, 11)
  if refused then return refused end
  -- Told before the mark's push, which moves the history's indexes.
  local told = tell(untold)
  mark(KEYS[6], ARGV[5], ARGV[6], attempt, after)
  if head then
    redis.call('ZREM', KEYS[3], token)
    redis.call('ZREM', KEYS[4], token)
    redis.call('HDEL', KEYS[8], token)
    redis.pcall('LTRIM', KEYS[9], 1, 0)
  end
  if redis.call('PTTL', KEYS[7]) < ttl then
    redis.call('SET', KEYS[7], 'fair', 'PX', ttl)
  end
  return {1, fence, now, 1, attempt or 0, after or '', '', told}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then return foreign('lock', KEYS[1]) end
if holder == token then
  local fence = refresh(KEYS[1], KEYS[2], ttl)
  -- A nested run (see `completion::once_per`) marks a grant of its own; a try after its
  -- own grant's lost reply already has its mark.
  if ARGV[4] == token then mark(KEYS[6], ARGV[5], ARGV[6], attempt, after) end
  return {2, fence, now, 1, attempt or 0, after or ''}
end
if heartbeat > 0 then
  if not redis.call('ZSCORE', KEYS[3], token) then
    local ticket, refused = draw(KEYS[5])
    if refused then return refused end
    redis.call('SET', KEYS[5], int(ticket), 'PX', ARGV[6])
    redis.call('ZADD', KEYS[3], ticket, token)
    redis.call('HSET', KEYS[8], token, ARGV[10])
  end
  redis.call('ZADD', KEYS[4], now + heartbeat, token)
  local keep = math.max(heartbeat, ttl)
  for _, key in ipairs({KEYS[3], KEYS[4], KEYS[8]}) do
    if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, keep) end
  end
  if redis.call('PTTL', KEYS[7]) < keep then
    redis.call('SET', KEYS[7], 'fair', 'PX', keep)
  end
end
head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
local pttl
local wake = ''
if holder then
  pttl = redis.call('PTTL', KEYS[1])
else
  holder = ''
  pttl = 0
  if head then
    pttl = math.max(0, (tonumber(redis.call('ZSCORE', KEYS[4], head)) or now) - now)
    -- A new head may be asleep: its turn has come.
    if #dead > 0 and head ~= token then wake = head end
  end
end
local meta = {}
if holder ~= '' and holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
local place = redis.call('ZRANK', KEYS[3], token)
place = place and place + 1 or 0
return {0, holder, pttl, meta, place, redis.call('ZCARD', KEYS[3]), wake}
"#,
    )
});
pub static FAIR: Lua = Lua::new("70def8a567d27b7f931e770728507ec4fe7ceb1d", || {
    FAIR_TEXT.as_str()
});

pub const FAIR_CALLS: &[Need] = taking_calls![
    on("exists", Key::Lock),
    on("zrangebyscore", Key::Beats),
    on("zrem", Key::Queue),
    on("zrem", Key::Beats),
    on("hdel", Key::QueueInfo),
    on("zrange", Key::Queue),
    on("set", Key::Lock),
    on("ltrim", Key::OwnWake),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("zscore", Key::Queue),
    on("zadd", Key::Queue),
    on("hset", Key::QueueInfo),
    on("zadd", Key::Beats),
    on("pttl", Key::Queue),
    on("pexpire", Key::Queue),
    on("pttl", Key::Lock),
    on("zscore", Key::Beats),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("zrank", Key::Queue),
    on("zcard", Key::Queue),
];

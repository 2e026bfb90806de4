//! The holders axis: a semaphore's acquire (`--limit L`, L > 1), L ordinary locks
//! taken in order. Its call and reply are `acquire`'s ([`crate::scripts::acquire::Request`],
//! `decode`).

use std::sync::LazyLock;

use crate::redis::Lua;

use super::taking::{taking_calls, text};
use super::{Key, Need, bare, on};

/// A slot of a semaphore (`--limit L`, L > 1). KEYS: mode, waiters, wake, fence,
/// history, then the lock and metadata key of each slot 1..L. ARGV: token, ttl ms,
/// heartbeat ms, known holder, once-per ms, retain ms, L, meta field/value pairs.
/// Busy names the holder of the slot that expires first (the earliest a slot can come
/// free without a release).
///
/// Each slot is an ordinary lock (`SET NX PX`, its own metadata), tried in order; the
/// first free one is taken. The mode key says `limit L` while any slot is held (kept at
/// least as long as the holders' ttl here and by their renewals): a run asking another
/// L, or a plain run, is refused while it is there (`{-6, mode}`, or `{-6, 'plain'}`
/// when a plain holder has the lock key). Cost: up to L SETs, and on busy L GETs and
/// PTTLs.
pub static SEMAPHORE_TEXT: LazyLock<String> = LazyLock::new(|| {
    text(
        r#"
--CLOCK--
--TAKING--
local token, ttl, heartbeat = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local limit = tonumber(ARGV[7])
local refused = once_per(KEYS[5], ARGV[5], KEYS[6], 0, 0, 0)
if refused then return refused end
local want = 'limit ' .. limit
local mode = redis.pcall('GET', KEYS[1])
if type(mode) == 'table' then return foreign('mode', KEYS[1]) end
if mode then
  if mode ~= want then return {-6, mode} end
elseif redis.call('EXISTS', KEYS[6]) == 1 then
  return {-6, 'plain'}
end
for i = 1, limit do
  local lock, meta = KEYS[4 + 2 * i], KEYS[5 + 2 * i]
  if redis.call('SET', lock, token, 'NX', 'PX', ttl) then
    local fence, refused = stamp(lock, meta, KEYS[4], ttl, ARGV[6], {'slot', i}, 8)
    if refused then return refused end
    if redis.call('PTTL', KEYS[1]) < ttl then
      redis.call('SET', KEYS[1], want, 'PX', ttl)
    end
    if heartbeat > 0 then leave(KEYS[2], KEYS[3], token) end
    return {1, fence, now_ms(), i}
  end
end
local first, first_pttl = 0, -1
for i = 1, limit do
  local lock, meta = KEYS[4 + 2 * i], KEYS[5 + 2 * i]
  local holder = redis.pcall('GET', lock)
  if type(holder) ~= 'string' then return foreign(i == 1 and 'lock' or 'slot', lock) end
  if holder == token then
    return {2, refresh(lock, meta, ttl), now_ms(), i}
  end
  local pttl = redis.call('PTTL', lock)
  if first == 0 or (pttl >= 0 and (first_pttl < 0 or pttl < first_pttl)) then
    first, first_pttl = i, pttl
  end
end
if heartbeat > 0 then
  local refused = join(KEYS[2], token, heartbeat)
  if refused then return refused end
end
local lock, meta = KEYS[4 + 2 * first], KEYS[5 + 2 * first]
local holder = redis.call('GET', lock)
local meta_pairs = {}
if holder ~= ARGV[4] and redis.call('TYPE', meta)['ok'] == 'hash' then
  meta_pairs = redis.call('HGETALL', meta)
end
return {0, holder, first_pttl, meta_pairs}
"#,
    )
});
pub static SEMAPHORE: Lua = Lua::new("d029f005a7a9994ae63a67ae907263a3b58f3f9e", || {
    SEMAPHORE_TEXT.as_str()
});

pub const SEMAPHORE_CALLS: &[Need] = taking_calls![
    on("exists", Key::Lock),
    on("set", Key::Slot),
    on("del", Key::Slot),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("get", Key::Slot),
    on("pttl", Key::Slot),
    on("pexpire", Key::Slot),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
];

//! The Lua scripts and the one way they are run.
//!
//! Keys travel only in KEYS and values only in ARGV (no user data is ever spliced into
//! script text), and every script touches only the keys of one lock, which share a hash
//! slot. Scripts run by EVALSHA; on NOSCRIPT (the cache empties on restart, failover,
//! SCRIPT FLUSH or eviction) the client library loads the script and retries once
//! (`redis::Script::invoke_async`). The reply shapes are decoded in [`super::reply`].

use std::sync::LazyLock;

use redis::{Script, ScriptInvocation};

/// A call of `script` on the keys of one lock (ARGV is added by the caller).
pub fn invocation<'a>(script: &'a Script, keys: &[&[u8]]) -> ScriptInvocation<'a> {
    let mut call = script.prepare_invoke();
    for key in keys {
        call.key(*key);
    }
    call
}

/// The `--once-per` check every acquire script starts with (`period` and `now` are
/// locals of the script; `history` the history key): with a period, `now` is the
/// server's `TIME` in ms, and a run in the history (newest first, read until one that
/// started before the slot) that started in this slot and exited 0 ends the script with
/// `{-4, slot start, record}`; a history key that is not a list with `{-5, type}`.
fn once_per(history: &str) -> String {
    r#"
if period > 0 then
  now = now_ms()
  local slot = now - (now % period)
  local kind = redis.call('TYPE', HISTORY)['ok']
  if kind == 'list' then
    for _, record in ipairs(redis.call('LRANGE', HISTORY, 0, -1)) do
      local ok, run = pcall(cjson.decode, record)
      if ok and type(run) == 'table' and type(run.start_ms) == 'number' then
        if run.start_ms < slot then break end
        if run.status == 0 then return {-4, slot, record} end
      end
    end
  elseif kind ~= 'none' then
    return {-5, kind}
  end
end"#
        .replace("HISTORY", history)
}

/// What the three acquire scripts share, as Lua functions at their top: the server's
/// time in ms; `stamp`, for a lock key just SET, draws the fencing number and writes
/// the metadata (the fence, `fields`, then ARGV from `from`) with the lock's ttl: on a
/// fence counter or a metadata key of another type the SET and the draw are undone
/// and the second result is the refusal to return (`{-3, type}`, `{-2, type}`; the
/// metadata's type is asked only then, as HSET fails on anything but a hash: one
/// command less on every acquisition); `refresh`, for a lock that is already ours,
/// renews it and its metadata (when the metadata is ours) and returns its fencing
/// number.
const TAKING: &str = r#"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function stamp(lock, meta, counter, ttl, fields, from)
  local fence = redis.pcall('INCR', counter)
  if type(fence) ~= 'number' then
    redis.call('DEL', lock)
    return nil, {-3, redis.call('TYPE', counter)['ok']}
  end
  local args = {'fence', fence}
  for _, v in ipairs(fields) do args[#args + 1] = v end
  for i = from, #ARGV do args[#args + 1] = ARGV[i] end
  if type(redis.pcall('HSET', meta, unpack(args))) ~= 'number' then
    redis.call('DEL', lock)
    if fence == 1 then redis.pcall('DEL', counter) else redis.pcall('DECR', counter) end
    return nil, {-2, redis.call('TYPE', meta)['ok']}
  end
  redis.call('PEXPIRE', meta, ttl)
  return fence
end
local function refresh(lock, meta, ttl)
  redis.call('PEXPIRE', lock, ttl)
  if redis.pcall('HGET', meta, 'token') == ARGV[1] then
    redis.call('PEXPIRE', meta, ttl)
    return tonumber(redis.call('HGET', meta, 'fence')) or 0
  end
  return 0
end
"#;

/// How long a wake-up pushed by a release waits for a waiter to pop it (ms): long
/// enough for a waiter between two tries to find it, short enough that a push for a
/// waiter that died does not linger.
pub const WAKE_TTL_MS: u64 = 10_000;

/// Acquire. KEYS: lock, meta, waiters, fence, wake, history, mode. ARGV: token, ttl ms,
/// heartbeat ms (0: not waiting), the holder token already known ('' for none), the
/// `--once-per` period ms (0: none), meta field/value pairs. Returns `{1, fence, now}`
/// acquired, `{2, fence, now}` already ours (ttl refreshed), `{-1, type}` the lock key
/// is not a lock, `{-2, type}` the metadata key holds something else than a hash, `{-3,
/// type}` the fence counter something else than a number, `{-4, slot start, record}`
/// the period's slot already had a successful run, `{-5, type}` the history key is not
/// a list, `{-6, mode}` the name is in use as another kind of lock (a semaphore, a fair
/// queue: see the mode key in `keys.rs`; the SET just made is undone; on busy, checked
/// when the holder is new to the caller, with its metadata), `{0, holder
/// token, pttl, meta pairs}` busy (the pairs empty when the holder is the one already
/// known). `now` is the server's `TIME` in ms when a period was given (else 0).
///
/// With a period, the slot is the server's `TIME` rounded down to a multiple of the
/// period (from the Unix epoch, UTC): hosts whose clocks differ agree on it. The
/// history (newest first) is read until a run that started before the slot; a record
/// with `"status":0` that started in the slot means the job already ran: the lock is
/// not taken. Cost: TIME, TYPE, LRANGE (the history is bounded) on every try.
///
/// Every acquisition increments the lock's fence counter (INCR: one more command) and
/// records the number in the metadata: a number that only grows, for a protected
/// resource to refuse a stale holder's late writes.
///
/// The lock itself is taken with `SET key token NX PX ttl`, exactly as any other client
/// would, first: the common cases cost few commands. Free: SET, GET (the mode key), INCR,
/// HSET, PEXPIRE (and SREM, EXISTS for a waiter). Busy: SET, GET, PTTL (and GET of the
/// mode key, TYPE, HGETALL when the holder is new to the caller), plus SADD, PTTL (and
/// PEXPIRE) for a waiter's heartbeat. A value of another type on the lock key is
/// reported; on the metadata key it is reported too, and the SET just made (and the
/// fencing number drawn) is undone in the same script, so nothing is touched. A waiter
/// (heartbeat > 0) that finds the lock busy adds its token to the waiters set and keeps
/// the set alive for at least its heartbeat; once it holds the lock it leaves the set,
/// and the last waiter to leave deletes the wake list: a wake-up pushed for it while it
/// took the lock by its own try would otherwise be left for nobody.
pub static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        &r#"
--TAKING--
local heartbeat = tonumber(ARGV[3])
local period = tonumber(ARGV[5])
local now = 0
--ONCE_PER--
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local mode = redis.pcall('GET', KEYS[7])
  if type(mode) == 'string' then
    redis.call('DEL', KEYS[1])
    return {-6, mode}
  end
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[4], ARGV[2], {}, 6)
  if refused then return refused end
  if heartbeat > 0 and redis.call('SREM', KEYS[3], ARGV[1]) == 1
      and redis.call('EXISTS', KEYS[3]) == 0 then
    redis.call('DEL', KEYS[5])
  end
  return {1, fence, now}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then
  return {-1, redis.call('TYPE', KEYS[1])['ok']}
end
if holder == ARGV[1] then
  return {2, refresh(KEYS[1], KEYS[2], ARGV[2]), now}
end
if heartbeat > 0 then
  redis.call('SADD', KEYS[3], ARGV[1])
  if redis.call('PTTL', KEYS[3]) < heartbeat then
    redis.call('PEXPIRE', KEYS[3], heartbeat)
  end
end
local meta = {}
if holder ~= ARGV[4] then
  local mode = redis.pcall('GET', KEYS[7])
  if type(mode) == 'string' then
    return {-6, mode}
  end
  if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
    meta = redis.call('HGETALL', KEYS[2])
  end
end
return {0, holder, redis.call('PTTL', KEYS[1]), meta}
"#
        .replace("--TAKING--", TAKING)
        .replace("--ONCE_PER--", &once_per("KEYS[6]")),
    )
});

/// Acquire a slot of a semaphore (`--limit L`, L > 1). KEYS: mode, waiters, wake, fence,
/// history, then the lock and metadata key of each slot 1..L. ARGV: token, ttl ms,
/// heartbeat ms, the holder token already known, the `--once-per` period ms, L, meta
/// field/value pairs. Returns what [`ACQUIRE`] does, with the slot taken after the
/// server time (`{1, fence, now, slot}`); busy names the holder of the slot that expires
/// first (the earliest a slot can come free without a release).
///
/// Each slot is an ordinary lock (`SET NX PX`, its own metadata), tried in order; the
/// first free one is taken. The mode key says `limit L` while any slot is held (kept at
/// least as long as the holders' ttl here and by their renewals): a run asking another
/// L, or a plain run, is refused while it is there (`{-6, mode}`, or `{-6, 'plain'}` when
/// a plain holder has the lock key). Cost: up to L SETs, and on busy L GETs and PTTLs.
pub static SEM_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        &r#"
--TAKING--
local heartbeat = tonumber(ARGV[3])
local period = tonumber(ARGV[5])
local limit = tonumber(ARGV[6])
local ttl = tonumber(ARGV[2])
local now = 0
--ONCE_PER--
local want = 'limit ' .. limit
local mode = redis.pcall('GET', KEYS[1])
if type(mode) == 'string' then
  if mode ~= want then return {-6, mode} end
elseif redis.call('EXISTS', KEYS[6]) == 1 then
  return {-6, 'plain'}
end
for i = 1, limit do
  local lock, meta = KEYS[4 + 2 * i], KEYS[5 + 2 * i]
  if redis.call('SET', lock, ARGV[1], 'NX', 'PX', ttl) then
    local fence, refused = stamp(lock, meta, KEYS[4], ttl, {'slot', i}, 7)
    if refused then return refused end
    if redis.call('PTTL', KEYS[1]) < ttl then
      redis.call('SET', KEYS[1], want, 'PX', ttl)
    end
    if heartbeat > 0 and redis.call('SREM', KEYS[2], ARGV[1]) == 1
        and redis.call('EXISTS', KEYS[2]) == 0 then
      redis.call('DEL', KEYS[3])
    end
    return {1, fence, now, i}
  end
end
local first, first_pttl = 0, -1
for i = 1, limit do
  local lock, meta = KEYS[4 + 2 * i], KEYS[5 + 2 * i]
  local holder = redis.pcall('GET', lock)
  if type(holder) ~= 'string' then
    return {-1, redis.call('TYPE', lock)['ok']}
  end
  local pttl = redis.call('PTTL', lock)
  if holder == ARGV[1] then
    return {2, refresh(lock, meta, ttl), now, i}
  end
  if first == 0 or (pttl >= 0 and (first_pttl < 0 or pttl < first_pttl)) then
    first, first_pttl = i, pttl
  end
end
if heartbeat > 0 then
  redis.call('SADD', KEYS[2], ARGV[1])
  if redis.call('PTTL', KEYS[2]) < heartbeat then
    redis.call('PEXPIRE', KEYS[2], heartbeat)
  end
end
local lock, meta = KEYS[4 + 2 * first], KEYS[5 + 2 * first]
local holder = redis.call('GET', lock)
local meta_pairs = {}
if holder ~= ARGV[4] and redis.call('TYPE', meta)['ok'] == 'hash' then
  meta_pairs = redis.call('HGETALL', meta)
end
return {0, holder, first_pttl, meta_pairs}
"#
        .replace("--TAKING--", TAKING)
        .replace("--ONCE_PER--", &once_per("KEYS[5]")),
    )
});

/// After a release by a semaphore holder or a fair queue's holder, or a fair waiter
/// leaving: the mode key goes when nothing uses the name any more (else it stays, kept
/// up by the holders and waiters). KEYS: mode, then the keys whose existence means "in
/// use" (every slot's lock key; or the lock and the queue). Returns 1 when the mode key
/// was removed.
pub static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return 0 end
end
return redis.call('DEL', KEYS[1])
"#,
    )
});

/// Acquire a fair queue's lock (`--fair`): first come, first served. KEYS: lock, meta,
/// queue, beats, fence, history, mode, queue info, this waiter's wake list. ARGV:
/// token, ttl ms, heartbeat ms (0: try without joining the queue), the holder token
/// already known, the `--once-per` period ms, who this waiter is (JSON for `status`),
/// meta field/value pairs. Returns what [`ACQUIRE`] does; busy adds this waiter's
/// place and the queue's length (`{0, holder, pttl, meta, place, waiting}`; place 0:
/// not in the queue; holder '' when the lock is free but promised to the head, with the
/// time until the head's heartbeat runs out as pttl).
///
/// The queue is a sorted set of tokens by ticket (tickets are drawn from the fence
/// counter, which only grows, so arrival order is the ticket order), with each
/// waiter's heartbeat deadline (server time) in a second sorted set: every try drops the
/// waiters whose heartbeat ran out, so a dead waiter holds the line for at most its
/// heartbeat, and wakes the new head if the lock is free. Only the head may take a free
/// lock. The mode key says `fair` while the lock is held or anyone waits; a plain run or
/// a semaphore is refused meanwhile, and a fair run is refused beside a plain holder.
/// Cost: TIME, GET, ZRANGEBYSCORE, ZRANGE, then SET … (taken) or ZSCORE, ZADD, PTTLs,
/// ZRANK, ZCARD (waiting); O(1) in the number of waiters but for the dead ones dropped.
pub static FAIR_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        &r#"
--TAKING--
local heartbeat = tonumber(ARGV[3])
local period = tonumber(ARGV[5])
local ttl = tonumber(ARGV[2])
local now = 0
--ONCE_PER--
if now == 0 then now = now_ms() end
local mode = redis.pcall('GET', KEYS[7])
if type(mode) == 'string' then
  if mode ~= 'fair' then return {-6, mode} end
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return {-6, 'plain'}
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, gone in ipairs(dead) do
  redis.call('ZREM', KEYS[3], gone)
  redis.call('ZREM', KEYS[4], gone)
  redis.call('HDEL', KEYS[8], gone)
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
if (not head or head == ARGV[1]) and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[5], ttl, {}, 7)
  if refused then return refused end
  if head then
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('ZREM', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[8], ARGV[1])
    redis.call('DEL', KEYS[9])
  end
  if redis.call('PTTL', KEYS[7]) < ttl then
    redis.call('SET', KEYS[7], 'fair', 'PX', ttl)
  end
  return {1, fence, now}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then
  return {-1, redis.call('TYPE', KEYS[1])['ok']}
end
if holder == ARGV[1] then
  return {2, refresh(KEYS[1], KEYS[2], ttl), now}
end
if heartbeat > 0 then
  if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then
    local ticket = redis.pcall('INCR', KEYS[5])
    if type(ticket) ~= 'number' then
      return {-3, redis.call('TYPE', KEYS[5])['ok']}
    end
    redis.call('ZADD', KEYS[3], ticket, ARGV[1])
    redis.call('HSET', KEYS[8], ARGV[1], ARGV[6])
  end
  redis.call('ZADD', KEYS[4], now + heartbeat, ARGV[1])
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
if holder then
  pttl = redis.call('PTTL', KEYS[1])
else
  holder = ''
  pttl = 0
  if head then
    pttl = math.max(0, (tonumber(redis.call('ZSCORE', KEYS[4], head)) or now) - now)
    if #dead > 0 and head ~= ARGV[1] then
      -- The head may be new and asleep: its turn has come.
      local wake = string.sub(KEYS[9], 1, #KEYS[9] - #ARGV[1]) .. head
      redis.call('LPUSH', wake, '1')
      redis.call('PEXPIRE', wake, WAKE_TTL_MS)
    end
  end
end
local meta = {}
if holder ~= '' and holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
local place = redis.call('ZRANK', KEYS[3], ARGV[1])
place = place and place + 1 or 0
return {0, holder, pttl, meta, place, redis.call('ZCARD', KEYS[3])}
"#
        .replace("--TAKING--", TAKING)
        .replace("--ONCE_PER--", &once_per("KEYS[6]"))
        .replace("WAKE_TTL_MS", &WAKE_TTL_MS.to_string()),
    )
});

/// Leave a fair queue (a waiter that gives up or is interrupted). KEYS: lock, queue,
/// beats, queue info, this waiter's wake list. ARGV: token, wake ttl ms. When it was the
/// head and the lock is free, the next in line is woken (its turn has come).
pub static FAIR_LEAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('DEL', KEYS[5])
if head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  local next = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if next then
    local wake = string.sub(KEYS[5], 1, #KEYS[5] - #ARGV[1]) .. next
    redis.call('LPUSH', wake, '1')
    redis.call('PEXPIRE', wake, ARGV[2])
  end
end
return 1
"#,
    )
});

/// Raise the fence counter to at least a number (Redlock). KEYS: fence, meta. ARGV:
/// fencing number, token. Returns 1, or -1 when the counter holds another type.
///
/// Over several nodes each counter counts only the acquisitions it saw, so the
/// largest number of a quorum is not enough on its own: a later holder's quorum
/// shares a node with this one's, but that node's counter may be below this holder's
/// largest. Raising every node to the number before the command starts (on a quorum,
/// or the acquisition is given up) makes any later quorum see at least it.
pub static RAISE_FENCE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local now = redis.pcall('GET', KEYS[1])
if type(now) == 'table' then
  return -1
end
if (tonumber(now) or 0) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
if redis.pcall('HGET', KEYS[2], 'token') == ARGV[2] then
  redis.call('HSET', KEYS[2], 'fence', ARGV[1])
end
return 1
"#,
    )
});

/// Join the waiters without trying to acquire (`redlock wait`). KEYS: lock, waiters.
/// ARGV: token, heartbeat ms. Returns `{0}` free, `{-1, type}` not a lock, `{1, pttl}`
/// held (and joined: a release will push a wake-up).
pub static WATCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local holder = redis.pcall('GET', KEYS[1])
if not holder then
  return {0}
end
if type(holder) ~= 'string' then
  return {-1, redis.call('TYPE', KEYS[1])['ok']}
end
redis.call('SADD', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {1, redis.call('PTTL', KEYS[1])}
"#,
    )
});

/// Leave the waiters and hand a wake-up on (`redlock wait` popped one that may have
/// been meant for a run waiting to acquire): pushed again only when someone else still
/// waits (else the wake list goes with the last waiter). KEYS: waiters, wake. ARGV:
/// token, wake ttl ms.
pub static HAND_ON: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[2])
end
return 1
"#,
    )
});

/// Leave the waiters (a waiter that gives up, or took the lock on other nodes). KEYS:
/// waiters, wake. ARGV: token. The last waiter to leave deletes the wake list (see
/// `ACQUIRE`).
pub static LEAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
end
return 1
"#,
    )
});

/// Renew (compare-and-pexpire). KEYS: lock, meta, and for a semaphore or fair queue
/// the mode key. ARGV: token, ttl ms (always > 0: `PEXPIRE key 0` would delete the
/// key), the mode. Returns 1 renewed, 0 not ours (never re-SETs the lock). The mode key
/// is kept at least as long as the lock.
/// The metadata key is touched only when it is ours (its `token` field is ours); a
/// value of another type there belongs to someone else. (`pcall`: on a key of another
/// type the read is an error value, which is not our token.)
pub static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.pcall('HGET', KEYS[2], 'token') == ARGV[1] then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
  if KEYS[3] and redis.call('PTTL', KEYS[3]) < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  end
  return 1
end
return 0
"#,
    )
});

/// Release (compare-and-delete). KEYS: lock, meta, waiters, wake, history, queue. ARGV:
/// token, keep ms (0 = delete), wake ttl ms (0: wake nobody on this node), '1' for a
/// fair queue's lock (the head of the queue is woken, on its own wake list
/// `<wake>:<token>`, instead of whoever blocks longest on the shared one), then the
/// run's record: history size (0: record nothing), the record's JSON without its closing
/// brace, held ms, start ms (0: unknown, taken as now - held), status if the lock was
/// still ours, status if not, '1' when the run already knows it lost the lock.
/// Returns 1 deleted, 2 kept for `--hold-min`, 0 not ours, 3 already released by an
/// earlier try of this release.
///
/// A release whose reply was lost (a dropped connection, a timeout after the script
/// ran) is tried again; the retry finds the key gone. It looks for its own record among
/// the history's newest runs: there, the first try ran (3, or 0 when that try found the
/// lock lost), and nothing is recorded twice. Without a history (`--history 0`) a retry
/// cannot tell and reports the lock lost.
///
/// The record is completed here, in the same script as the delete, so that whoever
/// takes the lock next (a `--once-per` run) sees it: `"status"` and `"lost"` from what
/// the release finds, `"start_ms"` and `"end_ms"` in the server's `TIME`. It is pushed
/// to the history, trimmed to its size, even when the lock is no longer ours (a lost
/// run is recorded as lost). A history key of another type is left alone. The record
/// is best effort (`pcall`): a user whose ACL lacks TIME, LPUSH or LTRIM still releases.
///
/// When the lock is no longer ours (deleted or taken over behind our back), our own
/// metadata may still be there: it is removed if its `token` field is ours, so a lost
/// lock leaves nothing of ours behind; another holder's metadata is never touched.
/// After a delete, when someone waits, ONE element is pushed to the wake list: the one
/// waiter blocked longest in `BLPOP` on it wakes, whatever the number of waiters.
/// Cost: GET, DEL, EXISTS (+ LPUSH, PEXPIRE when someone waits; + TIME, LPUSH, LTRIM
/// for the run's record).
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local ours = redis.pcall('GET', KEYS[1]) == ARGV[1]
-- With the lock ours, so is its metadata: it was written with the lock, and nothing
-- writes it while the lock is held (one HGET less on every release). Without, the
-- metadata is ours only when its token field says so.
local ours_meta = ours or redis.pcall('HGET', KEYS[2], 'token') == ARGV[1]
local size = tonumber(ARGV[5] or '0')
if size > 0 and not ours then
  local recent = redis.pcall('LRANGE', KEYS[5], 0, 9)
  if type(recent) == 'table' then
    local mine = '"token":"' .. ARGV[1] .. '"'
    for _, record in ipairs(recent) do
      if string.find(record, mine, 1, true) then
        if string.find(record, '"lost":false', 1, true) then return 3 end
        return 0
      end
    end
  end
end
local t = size > 0 and redis.pcall('TIME')
if t and t[1] then
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local start = tonumber(ARGV[8])
  if start == 0 then start = now - tonumber(ARGV[7]) end
  local status = ARGV[10]
  local lost = 'true'
  if ours and ARGV[11] ~= '1' then
    status = ARGV[9]
    lost = 'false'
  end
  -- A history key of another type fails the push (pcall) and is left alone.
  local pushed = redis.pcall('LPUSH', KEYS[5], ARGV[6] .. ',"status":' .. status
    .. ',"lost":' .. lost .. string.format(',"start_ms":%d,"end_ms":%d}', start, now))
  if type(pushed) == 'number' then
    redis.pcall('LTRIM', KEYS[5], 0, size - 1)
  end
end
if not ours then
  if ours_meta then
    redis.call('DEL', KEYS[2])
  end
  return 0
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('PEXPIRE', KEYS[1], keep)
  redis.call('PEXPIRE', KEYS[2], keep)
  return 2
end
redis.call('DEL', KEYS[1], KEYS[2])
if tonumber(ARGV[3]) > 0 then
  if ARGV[4] == '1' then
    local head = redis.call('ZRANGE', KEYS[6], 0, 0)[1]
    if head then
      -- The head's own wake list: the lock's wake key plus its token, in the lock's
      -- hash slot like every key here (computed, as only the queue knows the head).
      redis.call('LPUSH', KEYS[4] .. ':' .. head, '1')
      redis.call('PEXPIRE', KEYS[4] .. ':' .. head, ARGV[3])
    end
  elseif redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('LPUSH', KEYS[4], '1')
    redis.call('PEXPIRE', KEYS[4], ARGV[3])
  end
end
return 1
"#,
    )
});

/// Force release, whatever the owner. KEYS: lock, meta, waiters, wake, queue. ARGV: wake
/// ttl ms (0: wake nobody on this node); a fair queue's head is woken on its own list. Returns `{0}` free, `{-1, type}` not a lock (left alone), `{1, token, meta
/// pairs}` removed (and a waiter woken, as by a release).
pub static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return {0} end
if kind ~= 'string' then return {-1, kind} end
local holder = redis.call('GET', KEYS[1])
local meta = {}
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
  redis.call('DEL', KEYS[2])
end
redis.call('DEL', KEYS[1])
if tonumber(ARGV[1]) > 0 then
  local head = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
  if head then
    redis.call('LPUSH', KEYS[4] .. ':' .. head, '1')
    redis.call('PEXPIRE', KEYS[4] .. ':' .. head, ARGV[1])
  elseif redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('LPUSH', KEYS[4], '1')
    redis.call('PEXPIRE', KEYS[4], ARGV[1])
  end
end
return {1, holder, meta}
"#,
    )
});

/// Inspect (read-only). KEYS: lock, meta. Returns `{type}` when not a string, else
/// `{'string', token, pttl, meta pairs}`.
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' then return {kind} end
local meta = {}
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {kind, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), meta}
"#,
    )
});

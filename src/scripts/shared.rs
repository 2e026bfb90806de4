//! Shared holders (`--shared`): readers beside readers, never beside the writer, who is
//! any run without `--shared` on the name (a plain holder, [`super::acquire::PLAIN`]).
//! Take a share ([`SHARE`]), renew it ([`RENEW`]), release it ([`RELEASE`]).
//!
//! The lock key stays the exclusion point: while any share is held it holds [`MARKER`]
//! with a PTTL reaching the latest share's deadline, so a plain run's `SET key token NX
//! PX` — redlock's or a foreign client's — fails. Each reader's lease is its entry in
//! `P{N}:shares` (token → deadline, server ms), its own metadata `P{N}:meta:<token>`;
//! a share try and a release first drop the entries whose deadline passed (a renewal
//! finds its own expired entry lost), and the lock key expires with the latest
//! deadline, so a SIGKILLed reader holds the name for at most its ttl. The mode key says [`MODE`]
//! at least as long as the lock key: a semaphore, a fair queue or newest-wins is refused
//! meanwhile (`{-6, 'shared'}`), as a share is refused on a name of another kind.
//!
//! Writer preference: a plain run that finds the name shared and waits registers in
//! `P{N}:writers` (token → heartbeat deadline); while a live writer is registered (its
//! deadline not passed, and still in the waiters set: one that gave up left it), a new
//! share is refused, so the readers drain and the last one's release wakes the writer
//! (one wake-up, not one per reader). A reader refused while the lock is free (the
//! wake-up of a release reached it, not the writer) hands a wake-up on. Readers woken
//! after a writer wake each other: each admitted waiter pushes one wake-up while others
//! wait.
//!
//! Fencing: a share draws its number from the name's counter like every acquisition
//! (`taking`'s `draw`), so the numbers keep strictly increasing across readers and
//! writers.
//!
//! Replies are those of the plain lock's scripts, read by their decoders:
//! [`super::acquire::decode`], [`super::renew::decode`], [`super::release::decode`].

use std::sync::LazyLock;

use crate::redis::{Call, Lua};

use super::release::Record;
use super::taking::{taking_calls, text};
use super::{CLOCK, Key, Need, WAKE_TTL_MS, bare, invocation, on, splice};
use crate::keys::LockKeys;

/// The lock key's value while shares are held (no token is ever this word: tokens are
/// UUIDs).
pub const MARKER: &str = crate::keys::SHARED;

/// The holder a share try that waits behind a writer is told of while the lock is free.
pub const WRITER_WAITS: &str = crate::keys::WRITER_WAITS;

/// The mode key's value while the name is shared (or a writer waits for its readers).
pub const MODE: &str = "shared";

/// What the three scripts share, after [`CLOCK`]:
/// - `latest_left(shares, now)`: ms from now to the latest share's deadline (nil when
///   none is left);
/// - `hold(lock, shares, mode, left)`: holds the name for the readers `left` ms: the
///   lock key (the marker), the shares set, and the mode key at least as long (created
///   when gone; never shortened, one without expiry is left alone).
const HOLD: &str = r#"
local function latest_left(shares, now)
  local last = redis.call('ZRANGE', shares, -1, -1, 'WITHSCORES')[2]
  if not last then return nil end
  return math.max(1, tonumber(last) - now)
end
local function hold(lock, shares, mode, left)
  redis.call('SET', lock, --MARKER--, 'PX', left)
  redis.call('PEXPIRE', shares, left)
  local kind = redis.call('PTTL', mode)
  if kind == -2 then
    redis.call('SET', mode, --MODE--, 'PX', left)
  elseif kind >= 0 and kind < left then
    redis.call('PEXPIRE', mode, left)
  end
end
"#;

/// `purge(set, now)` (the share and the release): drops the entries of a sorted set of
/// deadlines that passed (false, nothing written, when the key holds another type).
/// ZRANGEBYSCORE then ZREM, where ZREMRANGEBYSCORE would do: the documented
/// least-privilege ACL grants those two and not it, and the cost is the same one
/// command when nothing expired.
const PURGE: &str = r#"
local function purge(set, now)
  local dead = redis.pcall('ZRANGEBYSCORE', set, '-inf', now)
  if dead.err then return false end
  for i = 1, #dead, 1000 do
    redis.call('ZREM', set, unpack(dead, i, math.min(i + 999, #dead)))
  end
  return true
end
"#;

/// A script's text: `body` with the clock, [`HOLD`] and the constants spliced in.
fn shared_text(body: &str) -> String {
    splice(
        body,
        &[
            ("CLOCK", CLOCK),
            ("HOLD", HOLD),
            ("PURGE", PURGE),
            ("MARKER", &format!("'{MARKER}'")),
            ("WRITER_WAITS", &format!("'{WRITER_WAITS}'")),
            ("MODE", &format!("'{MODE}'")),
            ("WAKE_TTL", &WAKE_TTL_MS.to_string()),
        ],
    )
}

/// Take a share. KEYS: lock, meta (the plain holder's: who a writer is), shares,
/// writers, own share meta, fence, mode, waiters, wake, handed (the hand-ons of the last second). ARGV: token, ttl ms, heartbeat
/// ms (0: a try that does not wait), known holder ('' none), retain ms, then the meta
/// field/value pairs.
///
/// Replies (`acquire::decode`): `{1, fence, now, 1, 0, ''}` taken, `{2, fence, now,
/// 1}` already ours (its deadline, metadata and the name's hold pushed back), `{-6,
/// mode}` the name is another kind, `{-2, role, type}` a key of ours holds another
/// type, `{0, holder, pttl, meta}` busy: a writer holds (its token and metadata), or a
/// writer waits (holder the marker while readers hold, '' while the lock is free, then
/// with the time until the first waiting writer's heartbeat runs out). A busy try that
/// waits joins the waiters set, as the plain lock's does.
///
/// Steps: GET (mode), GET (lock); a writer holding: PTTL (+ TYPE, HGETALL). Else TIME,
/// ZRANGEBYSCORE on the shares and the writers (+ ZREM: expired entries), ZSCORE (already
/// ours: ZADD, PEXPIRE, then the hold below, HGET); ZRANGE (writers; for each,
/// SISMEMBER: one no longer in the waiters gave up, ZREM; a writer left: busy, + LPUSH,
/// PEXPIRE with the lock free); taken: GET, HSET, PEXPIRE (own meta), SET
/// (fence), ZADD, ZRANGE (latest deadline), SET (lock), PEXPIRE (shares), PTTL (+
/// SET or PEXPIRE: mode); a waiter leaves the waiters (SREM, EXISTS) and wakes the next
/// (LPUSH, PEXPIRE) or clears the wake list (LTRIM). Expired entries are dropped before
/// a later refusal (a key of another type): they are gone anyway.
pub static SHARE_TEXT: LazyLock<String> = LazyLock::new(|| {
    shared_text(&text(
        r#"
--CLOCK--
--TAKING--
--HOLD--
--PURGE--
local token, ttl, heartbeat = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local mode = redis.pcall('GET', KEYS[7])
if type(mode) == 'table' then return foreign('mode', KEYS[7]) end
if mode and mode ~= --MODE-- then return {-6, mode} end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then return foreign('lock', KEYS[1]) end
local function busy(who, pttl, meta, hand_on)
  if heartbeat > 0 then
    local refused = join(KEYS[8], token, heartbeat)
    if refused then return refused end
  end
  -- A wake-up handed on behind a waiting writer goes round the blocked waiters to the
  -- writer within one round; a writer killed while it waits is still registered (its
  -- heartbeat), and the round would go on and on: at most one round (a push per
  -- waiter, and one) a second, counted afresh whenever a writer or a waiting share
  -- takes the name.
  if hand_on then
    local handed = redis.pcall('INCR', KEYS[10])
    if type(handed) == 'number' then
      redis.call('PEXPIRE', KEYS[10], 1000)
      if handed <= redis.call('SCARD', KEYS[8]) + 1 and type(redis.pcall('LPUSH', KEYS[9], '1')) == 'number' then
        redis.call('PEXPIRE', KEYS[9], --WAKE_TTL--)
      end
    end
  end
  return {0, who, pttl, meta}
end
if holder and holder ~= --MARKER-- then
  local meta = {}
  if holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
    meta = redis.call('HGETALL', KEYS[2])
  end
  return busy(holder, redis.call('PTTL', KEYS[1]), meta, false)
end
local now = now_ms()
if not purge(KEYS[3], now) then return foreign('shares', KEYS[3]) end
if not purge(KEYS[4], now) then return foreign('writers', KEYS[4]) end
if holder and redis.call('ZSCORE', KEYS[3], token) then
  redis.call('ZADD', KEYS[3], now + ttl, token)
  redis.call('PEXPIRE', KEYS[5], ttl)
  hold(KEYS[1], KEYS[3], KEYS[7], latest_left(KEYS[3], now))
  return {2, tonumber(redis.pcall('HGET', KEYS[5], 'fence')) or 0, now, 1}
end
-- A writer that gave up left the waiters (LEAVE) but not this set: it is dropped here.
local first = nil
local writers = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
for i = 1, #writers, 2 do
  if redis.pcall('SISMEMBER', KEYS[8], writers[i]) == 0 then
    redis.call('ZREM', KEYS[4], writers[i])
  elseif not first then
    first = tonumber(writers[i + 1])
  end
end
if first then
  if holder then return busy(holder, redis.call('PTTL', KEYS[1]), {}, false) end
  return busy(--WRITER_WAITS--, math.max(0, first - now), {}, true)
end
local fence, refused = draw(KEYS[6])
if refused then return refused end
local args = {'fence', int(fence)}
for i = 6, #ARGV do args[#args + 1] = ARGV[i] end
if type(redis.pcall('HSET', KEYS[5], unpack(args))) ~= 'number' then
  return foreign('share meta', KEYS[5])
end
redis.call('PEXPIRE', KEYS[5], ttl)
redis.call('SET', KEYS[6], int(fence), 'PX', ARGV[5])
redis.call('ZADD', KEYS[3], now + ttl, token)
hold(KEYS[1], KEYS[3], KEYS[7], latest_left(KEYS[3], now))
if heartbeat > 0 and redis.pcall('SREM', KEYS[8], token) == 1 then
  if redis.call('TYPE', KEYS[10])['ok'] == 'string' then redis.call('DEL', KEYS[10]) end
  if redis.call('EXISTS', KEYS[8]) == 1 then
    if type(redis.pcall('LPUSH', KEYS[9], '1')) == 'number' then
      redis.call('PEXPIRE', KEYS[9], --WAKE_TTL--)
    end
  else
    redis.pcall('LTRIM', KEYS[9], 1, 0)
  end
end
return {1, fence, now, 1, 0, ''}
"#,
    ))
});
pub static SHARE: Lua = Lua::new("398db5dffd6f7a7e8439d0048db4504904926715", || {
    SHARE_TEXT.as_str()
});

pub const SHARE_CALLS: &[Need] = taking_calls![
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("pttl", Key::Lock),
    on("lpush", Key::Wake),
    on("pexpire", Key::Wake),
    on("incr", Key::Handed),
    on("type", Key::Handed),
    on("del", Key::Handed),
    on("pexpire", Key::Handed),
    on("scard", Key::Waiters),
    on("zrangebyscore", Key::Shares),
    on("zrem", Key::Shares),
    on("zrangebyscore", Key::Writers),
    on("zrem", Key::Writers),
    on("zscore", Key::Shares),
    on("zadd", Key::Shares),
    on("pexpire", Key::ShareMeta),
    on("hget", Key::ShareMeta),
    on("zrange", Key::Writers),
    on("sismember", Key::Waiters),
    on("hset", Key::ShareMeta),
    on("zrange", Key::Shares),
    on("set", Key::Lock),
    on("pexpire", Key::Shares),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("pexpire", Key::Mode),
];

/// The call taking a share of the name `keys` as `token` for `ttl_ms`; `heartbeat_ms`
/// (0: a try that does not wait), `known_holder` and `meta` as in
/// [`super::acquire::Request`]; the fence counter kept `retain_ms`.
pub fn share(
    keys: &LockKeys,
    token: &str,
    ttl_ms: u64,
    heartbeat_ms: u64,
    known_holder: &str,
    retain_ms: u64,
    meta: &[(&'static str, String)],
) -> Call {
    let own = keys.share_meta(token);
    let mut call = invocation(
        &SHARE,
        &[
            &keys.lock,
            &keys.meta,
            &keys.shares,
            &keys.writers,
            &own,
            &keys.fence,
            &keys.mode,
            &keys.waiters,
            &keys.wake,
            &keys.handed,
        ],
    );
    call.arg(token)
        .arg(ttl_ms)
        .arg(heartbeat_ms)
        .arg(known_holder)
        .arg(retain_ms);
    for (field, value) in meta {
        call.arg(*field).arg(value);
    }
    call
}

/// Renew a share. KEYS: lock, shares, own share meta, mode. ARGV: token, ttl ms (> 0).
/// Returns 1 renewed (its deadline, its metadata and the name's hold pushed back: the
/// lock key to the latest share's deadline, the mode key at least as long), 0 not ours
/// (`renew::decode`: lost): the share expired, or the lock key does not hold the marker
/// (deleted, or taken by a writer). A share has no request to stop. Cost: TIME,
/// ZSCORE, GET, ZADD, PEXPIRE, ZRANGE, SET, PEXPIRE, PTTL (+ PEXPIRE).
pub static RENEW_TEXT: LazyLock<String> = LazyLock::new(|| {
    shared_text(
        r#"
--CLOCK--
--HOLD--
local token, ttl = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local deadline = redis.pcall('ZSCORE', KEYS[2], token)
if type(deadline) ~= 'string' or tonumber(deadline) <= now then return 0 end
if redis.pcall('GET', KEYS[1]) ~= --MARKER-- then return 0 end
redis.call('ZADD', KEYS[2], 'XX', now + ttl, token)
redis.call('PEXPIRE', KEYS[3], ttl)
hold(KEYS[1], KEYS[2], KEYS[4], latest_left(KEYS[2], now))
return 1
"#,
    )
});
pub static RENEW: Lua = Lua::new("10872bc0d3932977dafadf2270da756fa9aa12cb", || {
    RENEW_TEXT.as_str()
});

pub const RENEW_CALLS: &[Need] = &[
    bare("time"),
    on("zrange", Key::Shares),
    on("set", Key::Lock),
    on("pexpire", Key::Shares),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("pexpire", Key::Mode),
    on("zscore", Key::Shares),
    on("get", Key::Lock),
    on("zadd", Key::Shares),
    on("pexpire", Key::ShareMeta),
];

/// The call renewing `token`'s share of the name `keys` to `ttl_ms`.
pub fn renew(keys: &LockKeys, token: &str, ttl_ms: u64) -> Call {
    let own = keys.share_meta(token);
    let mut call = invocation(&RENEW, &[&keys.lock, &keys.shares, &own, &keys.mode]);
    call.arg(token).arg(ttl_ms);
    call
}

/// Release a share. KEYS: lock, shares, own share meta, waiters, wake, mode, history,
/// writers. ARGV: token, retain ms, then the run's record as the plain release takes
/// it (`release::Record`: history size, the JSON without its closing brace, held ms,
/// start ms, status if ours, status if not, '1' when the run knows it lost).
///
/// The share is ours when its deadline has not passed and the lock key holds the
/// marker. Its entry and its metadata go either way; the record is completed and pushed
/// to the history as the plain release does (a retry whose first try's reply was lost
/// finds it there: 3, or 0 when that try found the share lost). Then, while the lock key
/// holds the marker, the expired shares are dropped and: with shares left, the lock
/// key's PTTL (and the set's) is set to the latest one's deadline; with none, the lock
/// key is deleted, the mode key too when no writer is registered (the name is free for
/// any kind), and when anyone waits one wake-up is pushed (with a backup behind it for
/// two or more waiters, as the plain release). Replies (`release::decode`): `{1, ''}`
/// released, `{0, ''}` not ours, `{3, ''}` released by an earlier try.
///
/// Cost: TIME, ZSCORE, GET, ZREM, DEL, ZRANGEBYSCORE (+ ZREM), ZRANGE, then PEXPIRE ×2 (shares
/// left) or DEL, EXISTS, GET (+ DEL: mode), SCARD (+ LPUSH, PEXPIRE) (the last); + LPUSH,
/// PEXPIRE (+ LTRIM) for the record.
pub static RELEASE_TEXT: LazyLock<String> = LazyLock::new(|| {
    shared_text(
        r#"
--CLOCK--
--HOLD--
--PURGE--
local token = ARGV[1]
local now = now_ms()
local deadline = redis.pcall('ZSCORE', KEYS[2], token)
local marked = redis.pcall('GET', KEYS[1]) == --MARKER--
local ours = marked and type(deadline) == 'string' and tonumber(deadline) > now
local size = tonumber(ARGV[3] or '0')
if size > 0 and not ours then
  local recent = redis.pcall('LRANGE', KEYS[7], 0, 9)
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
if ARGV[4] and size > 0 then
  local held, start = tonumber(ARGV[5]), tonumber(ARGV[6])
  if start == 0 then start = now - held end
  local status, lost = ARGV[8], 'true'
  if ours and ARGV[9] ~= '1' then status, lost = ARGV[7], 'false' end
  local record = ARGV[4] .. ',"status":' .. status .. ',"lost":' .. lost .. ',"start_ms":'
    .. int(start) .. ',"end_ms":' .. int(start + held) .. '}'
  local pushed = redis.pcall('LPUSH', KEYS[7], record)
  if type(pushed) == 'number' then
    if pushed > size then redis.call('LTRIM', KEYS[7], 0, size - 1) end
    redis.call('PEXPIRE', KEYS[7], ARGV[2])
  end
end
if type(deadline) == 'table' then return {0, ''} end
redis.call('ZREM', KEYS[2], token)
redis.call('DEL', KEYS[3])
local released = ours and 1 or 0
if not marked then return {released, ''} end
purge(KEYS[2], now)
local left = latest_left(KEYS[2], now)
if left then
  redis.call('PEXPIRE', KEYS[1], left)
  redis.call('PEXPIRE', KEYS[2], left)
  return {released, ''}
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[8]) == 0 and redis.pcall('GET', KEYS[6]) == --MODE-- then
  redis.call('DEL', KEYS[6])
end
local waiting = redis.pcall('SCARD', KEYS[4])
if type(waiting) == 'number' and waiting > 0 then
  local pushed
  if waiting > 1 then
    pushed = redis.pcall('LPUSH', KEYS[5], '2', '1')
  else
    pushed = redis.pcall('LPUSH', KEYS[5], '1')
  end
  if type(pushed) == 'number' then redis.call('PEXPIRE', KEYS[5], --WAKE_TTL--) end
end
return {released, ''}
"#,
    )
});
pub static RELEASE: Lua = Lua::new("d36e7a3c53ff45eccec654eb27ef0325a2934946", || {
    RELEASE_TEXT.as_str()
});

pub const RELEASE_CALLS: &[Need] = &[
    bare("time"),
    on("zrange", Key::Shares),
    on("set", Key::Lock),
    on("pexpire", Key::Shares),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("pexpire", Key::Mode),
    on("zscore", Key::Shares),
    on("get", Key::Lock),
    on("lrange", Key::History),
    on("lpush", Key::History),
    on("ltrim", Key::History),
    on("pexpire", Key::History),
    on("zrem", Key::Shares),
    on("del", Key::ShareMeta),
    on("zrangebyscore", Key::Shares),
    on("pexpire", Key::Lock),
    on("del", Key::Lock),
    on("exists", Key::Writers),
    on("get", Key::Mode),
    on("del", Key::Mode),
    on("scard", Key::Waiters),
    on("lpush", Key::Wake),
    on("pexpire", Key::Wake),
];

/// The call releasing `token`'s share of the name `keys`, the history kept `retain_ms`,
/// with the run's record (`None`: record nothing).
pub fn release(keys: &LockKeys, token: &str, retain_ms: u64, record: Option<&Record<'_>>) -> Call {
    let own = keys.share_meta(token);
    let mut call = invocation(
        &RELEASE,
        &[
            &keys.lock,
            &keys.shares,
            &own,
            &keys.waiters,
            &keys.wake,
            &keys.mode,
            &keys.history,
            &keys.writers,
        ],
    );
    call.arg(token).arg(retain_ms);
    if let Some(r) = record {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        for (text, calls) in [
            (&*SHARE_TEXT, SHARE_CALLS),
            (&*RENEW_TEXT, RENEW_CALLS),
            (&*RELEASE_TEXT, RELEASE_CALLS),
        ] {
            assert_calls_match(text, calls);
            assert_keys_declared(text);
            assert!(text.find("replicate_commands").unwrap() < text.find("'TIME'").unwrap());
            assert!(!text.contains("--MARKER--") && !text.contains("--MODE--"));
            assert!(!text.contains("--WAKE_TTL--") && !text.contains("--HOLD--"));
            assert!(!text.contains("--PURGE--"));
        }
    }

    /// The plain lock's script knows the mode a shared name has (it writes it in Lua).
    #[test]
    fn the_writer_knows_the_mode() {
        assert!(
            super::super::acquire::PLAIN_TEXT.contains(&format!("mode == '{MODE}'")),
            "the plain script's test of the shared mode"
        );
    }
}

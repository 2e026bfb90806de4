//! Acquire: take a plain lock ([`PLAIN`]), a semaphore's slot ([`SEMAPHORE`]) or a fair
//! queue's turn ([`FAIR`]); one typed [`Request`] builds the call of each, and one
//! decoder reads their replies ([`Acquired`]).
//!
//! Every acquisition draws the lock's fencing number: larger than the counter's last
//! number and than the server's time in microseconds (`TIME`), so that it stays
//! strictly increasing when the counter is lost (a restart without persistence, a
//! failover to a replica that missed it, FLUSHALL, expiry), as long as the server's
//! clock does not step back by more than the time between two acquisitions. The
//! counter is kept `--retain` after the last acquisition (refreshed by each).
//!
//! `--once-per`: with a period, the slot is the server's `TIME` rounded down to a
//! multiple of the period (from the Unix epoch, UTC): hosts whose clocks differ agree on
//! it. The history (newest first) is read until a run that started before the slot; a
//! record with `"status":0` that started in the slot means the job already ran, and the
//! lock is not taken (`{-4, slot start, record}`).
//!
//! Replies: `{1, fence, now, slot}` acquired, `{2, fence, now, slot}` already ours (ttl
//! refreshed), `{-2, role, type}` a key of ours holds another type (nothing written),
//! `{-4, slot start, record}` the once-per slot already ran, `{-6, mode}` the name is in
//! use as another kind of lock, `{0, holder token, pttl, meta pairs[, place, waiting,
//! head to wake]}` busy (the meta pairs empty when the holder is the one already
//! known). `now` is the server's time in ms.

use std::sync::LazyLock;

use redis::Value;

use crate::redis::{Call, Lua};

use super::{CLOCK, Key, Need, bare, invocation, on, splice};
use crate::keys::LockKeys;
use crate::policy::mode::FIFO_MAX_BEAT;
use crate::policy::{Holders, Mode, Order};
use crate::redis::reply::{Held, array, bytes, held, int, string};

/// One try to take a lock.
pub struct Request<'a> {
    pub keys: &'a LockKeys,
    /// The name's mode: which script, and what it is told.
    pub mode: Mode,
    pub token: &'a str,
    pub ttl_ms: u64,
    /// A waiter's heartbeat (ms): it joins the waiters when the lock is busy, and they
    /// live at least this long. 0: a try that does not wait.
    pub heartbeat_ms: u64,
    /// The holder token already known to the caller ('' for none): its metadata is
    /// not read again.
    pub known_holder: &'a str,
    /// `--once-per` period (ms; 0: none).
    pub once_per_ms: u64,
    /// How long the name's fence counter is kept after this acquisition (ms).
    pub retain_ms: u64,
    /// Who waits (JSON, for a fair queue's `status`).
    pub who: &'a str,
    /// The holder metadata's field/value pairs.
    pub meta: &'a [(&'static str, String)],
}

impl Request<'_> {
    /// The call of the acquire script of this request's kind of lock.
    pub fn call(&self) -> Call {
        let k = self.keys;
        let mut call = match (self.mode.holders, self.mode.order) {
            (Holders::Exclusive, Order::Any) => invocation(
                &PLAIN,
                &[
                    &k.lock, &k.meta, &k.waiters, &k.fence, &k.wake, &k.history, &k.mode,
                ],
            ),
            (Holders::Slots(limit), _) => {
                let slots: Vec<LockKeys> = (1..=limit).map(|i| k.for_slot(i)).collect();
                let mut keys: Vec<&[u8]> = vec![&k.mode, &k.waiters, &k.wake, &k.fence, &k.history];
                for slot in &slots {
                    keys.extend([slot.lock.as_slice(), slot.meta.as_slice()]);
                }
                invocation(&SEMAPHORE, &keys)
            }
            (Holders::Exclusive, Order::Fifo) => {
                let own = k.own_wake(self.token);
                invocation(
                    &FAIR,
                    &[
                        &k.lock,
                        &k.meta,
                        &k.queue,
                        &k.beats,
                        &k.fence,
                        &k.history,
                        &k.mode,
                        &k.queue_info,
                        &own,
                    ],
                )
            }
        };
        call.arg(self.token)
            .arg(self.ttl_ms)
            .arg(self.heartbeat_ms)
            .arg(self.known_holder)
            .arg(self.once_per_ms)
            .arg(self.retain_ms);
        if let Some(limit) = self.mode.holders.slots() {
            call.arg(limit);
        }
        if self.mode.order.records_who_waits() {
            call.arg(self.who);
        }
        for (field, value) in self.meta {
            call.arg(*field).arg(value);
        }
        call
    }
}

/// An acquire script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Taken now, or already ours, with the fencing number (0: unknown), the server's
    /// time in ms, and the semaphore slot (1 for other kinds).
    Yes { fence: u64, now_ms: u64, slot: u32 },
    /// The `--once-per` slot starting at `slot_ms` already had a successful run: this
    /// history record.
    AlreadyRan { slot_ms: u64, record: Vec<u8> },
    /// Held by another token; in a fair queue, this waiter's place (1-based; 0: not in
    /// it), the queue's length, and the head whose turn has come (to wake, see
    /// `release::wake_head`).
    Busy {
        held: Held,
        place: Option<(u64, u64)>,
        wake: Option<String>,
    },
    /// A key of ours holds a value of another type (nothing was written).
    Foreign { key: Key, kind: String },
    /// The name is in use as another kind of lock: the mode key's value (`limit 3`,
    /// `fair`), or `plain`.
    OtherKind(String),
}

/// Decodes an acquire script's reply; `None` when it has another shape.
pub fn decode(value: Value) -> Option<Acquired> {
    let mut items = array(value)?;
    let unsigned = |n: Option<i64>| n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
    match int(items.next())? {
        1 | 2 => Some(Acquired::Yes {
            fence: unsigned(int(items.next())),
            now_ms: unsigned(int(items.next())),
            slot: int(items.next())
                .and_then(|s| u32::try_from(s).ok())
                .unwrap_or(1),
        }),
        -2 => Some(Acquired::Foreign {
            key: Key::from_role(&string(items.next()))?,
            kind: string(items.next()),
        }),
        -4 => Some(Acquired::AlreadyRan {
            slot_ms: unsigned(Some(int(items.next())?)),
            record: bytes(items.next()),
        }),
        -6 => Some(Acquired::OtherKind(string(items.next()))),
        0 => {
            let held = held(&mut items);
            let place = int(items.next()).zip(int(items.next()));
            let place = place.map(|(p, n)| (p.max(0) as u64, n.max(0) as u64));
            let wake = Some(string(items.next())).filter(|w| !w.is_empty());
            Some(Acquired::Busy { held, place, wake })
        }
        _ => None,
    }
}

/// What the three acquire scripts share, as Lua at their top (after [`CLOCK`]):
/// - `foreign(role, key)`: the refusal for a key of ours that holds another type;
/// - `draw(counter)`: the next fencing number, `max(counter + 1, TIME in µs)`, or a
///   refusal when the counter is not a number (nothing written);
/// - `stamp(...)`: for a lock key just SET, draws the fencing number, writes the
///   metadata (the fence, `fields`, then ARGV from `from`) with the lock's ttl, and
///   keeps the counter at the number for `retain` ms; a refusal undoes the SET;
/// - `refresh(...)`: for a lock already ours, renews it and its metadata (when ours)
///   and returns its fencing number;
/// - `once_per(history, period)`: the `--once-per` check (see the module's doc).
const TAKING: &str = r#"
local function foreign(role, key)
  return {-2, role, redis.call('TYPE', key)['ok']}
end
local function draw(counter)
  local last = redis.pcall('GET', counter)
  if type(last) == 'table' then return nil, foreign('fence', counter) end
  if not last then
    last = 0
  else
    last = tonumber(last)
    -- Not a number, or too large for a Lua double to count on exactly.
    if not last or last < 0 or last >= 9007199254740991 then
      return nil, {-2, 'fence', 'string'}
    end
  end
  return math.max(last + 1, now_us())
end
local function stamp(lock, meta, counter, ttl, retain, fields, from)
  local fence, refused = draw(counter)
  if refused then
    redis.call('DEL', lock)
    return nil, refused
  end
  local args = {'fence', int(fence)}
  for _, v in ipairs(fields) do args[#args + 1] = v end
  for i = from, #ARGV do args[#args + 1] = ARGV[i] end
  if type(redis.pcall('HSET', meta, unpack(args))) ~= 'number' then
    redis.call('DEL', lock)
    return nil, foreign('meta', meta)
  end
  redis.call('PEXPIRE', meta, ttl)
  redis.call('SET', counter, int(fence), 'PX', retain)
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
local function once_per(history, period, lock)
  if period <= 0 then return nil end
  local now = now_ms()
  local slot = now - (now % period)
  local kind = redis.call('TYPE', history)['ok']
  if kind == 'list' then
    for _, record in ipairs(redis.call('LRANGE', history, 0, -1)) do
      local ok, run = pcall(cjson.decode, record)
      -- Newest end first: a run that started before the slot may have ended after one
      -- that started in it, so the scan goes on to the first run that ended before.
      -- A start mark (see `mark`) of a run that no longer holds the lock and whose
      -- command started is a run whose end was never recorded: it may have succeeded,
      -- so it closes its slot. A mark whose command never started (`"started":false`:
      -- the grant's reply, or the run, was lost before the start) does not, and
      -- neither does the caller's own (a try after its own ambiguous grant).
      if ok and type(run) == 'table' and type(run.start_ms) == 'number' then
        if type(run.end_ms) == 'number' and run.end_ms < slot then break end
        if run.start_ms >= slot and run.token ~= ARGV[1] then
          if run.running == true then
            if run.started ~= false and redis.pcall('GET', lock) ~= run.token then
              return {-4, slot, record}
            end
          elseif run.status == 0 then
            return {-4, slot, record}
          end
        end
      end
    end
  elseif kind ~= 'none' then
    return {-2, 'history', kind}
  end
  return nil
end
-- A `--once-per` run marks its grant in the history as it takes the lock, says when
-- its command starts (see [`STARTED`]), and its release replaces the mark with the
-- run's record. A started mark left alone (the release never reached Redis) keeps the
-- slot closed; a mark whose command never started does not.
local function mark(history, period, retain)
  if period <= 0 then return end
  local start = '{"token":"' .. ARGV[1] .. '","start_ms":' .. int(now_ms()) .. ',"running":true,"started":false}'
  if type(redis.pcall('LPUSH', history, start)) == 'number' then
    redis.call('PEXPIRE', history, retain)
  end
end
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

fn text(body: &str) -> String {
    splice(
        body,
        &[
            ("CLOCK", CLOCK),
            ("TAKING", TAKING),
            ("MAX_BEAT", &FIFO_MAX_BEAT.as_millis().to_string()),
        ],
    )
}

/// A plain lock. KEYS: lock, meta, waiters, fence, wake, history, mode. ARGV: token, ttl
/// ms, heartbeat ms, known holder, once-per ms, retain ms, meta field/value pairs.
///
/// The mode key is read first: a name in use as a semaphore or a fair queue refuses a
/// plain run (`{-6, mode}`). The lock itself is taken with `SET key token NX PX ttl`,
/// exactly as any other client would. Free: GET (mode), SET, GET (fence), TIME, HSET,
/// PEXPIRE, SET (fence) (and SREM, DEL for a waiter). Busy: GET (mode), SET, GET,
/// PTTL (and TYPE, HGETALL when the holder is new to the caller), plus SADD, PTTL (and
/// PEXPIRE) for a waiter's heartbeat. A waiter that takes the lock leaves the waiters
/// set and clears the wake list (a wake-up left there, pushed for it while it took the
/// lock by its own try or by a second release it never popped, would only wake a
/// waiter to find the lock held).
pub static PLAIN_TEXT: LazyLock<String> = LazyLock::new(|| {
    text(
        r#"
--CLOCK--
--TAKING--
local token, ttl, heartbeat = ARGV[1], ARGV[2], tonumber(ARGV[3])
local refused = once_per(KEYS[6], tonumber(ARGV[5]), KEYS[1])
if refused then return refused end
local mode = redis.pcall('GET', KEYS[7])
if type(mode) == 'table' then return foreign('mode', KEYS[7]) end
if mode then return {-6, mode} end
if redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[4], ttl, ARGV[6], {}, 7)
  if refused then return refused end
  mark(KEYS[6], tonumber(ARGV[5]), ARGV[6])
  if heartbeat > 0 then leave_taken(KEYS[3], KEYS[5], token) end
  return {1, fence, now_ms(), 1}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then return foreign('lock', KEYS[1]) end
if holder == token then
  return {2, refresh(KEYS[1], KEYS[2], ttl), now_ms(), 1}
end
if heartbeat > 0 then
  local refused = join(KEYS[3], token, heartbeat)
  if refused then return refused end
end
local meta = {}
if holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {0, holder, redis.call('PTTL', KEYS[1]), meta}
"#,
    )
});
pub static PLAIN: Lua = Lua::new("ee38de9562eb6ab87875181715b99671744e2569", || {
    PLAIN_TEXT.as_str()
});

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
local refused = once_per(KEYS[5], tonumber(ARGV[5]), KEYS[6])
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
pub static SEMAPHORE: Lua = Lua::new("30766eeb2fbcc7502ecda7e5cf024af1fb7ad60f", || {
    SEMAPHORE_TEXT.as_str()
});

/// A fair queue's lock (`--fair`): first come, first served. KEYS: lock, meta, queue,
/// beats, fence, history, mode, queue info, this waiter's wake list. ARGV: token, ttl
/// ms, heartbeat ms (0: try without joining the queue), known holder, once-per ms,
/// retain ms, who this waiter is (JSON for `status`), meta field/value pairs. Busy adds
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
local refused = once_per(KEYS[6], tonumber(ARGV[5]), KEYS[1])
if refused then return refused end
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
  local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[5], ttl, ARGV[6], {}, 8)
  if refused then return refused end
  mark(KEYS[6], tonumber(ARGV[5]), ARGV[6])
  if head then
    redis.call('ZREM', KEYS[3], token)
    redis.call('ZREM', KEYS[4], token)
    redis.call('HDEL', KEYS[8], token)
    redis.pcall('LTRIM', KEYS[9], 1, 0)
  end
  if redis.call('PTTL', KEYS[7]) < ttl then
    redis.call('SET', KEYS[7], 'fair', 'PX', ttl)
  end
  return {1, fence, now, 1}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then return foreign('lock', KEYS[1]) end
if holder == token then
  return {2, refresh(KEYS[1], KEYS[2], ttl), now, 1}
end
if heartbeat > 0 then
  if not redis.call('ZSCORE', KEYS[3], token) then
    local ticket, refused = draw(KEYS[5])
    if refused then return refused end
    redis.call('SET', KEYS[5], int(ticket), 'PX', ARGV[6])
    redis.call('ZADD', KEYS[3], ticket, token)
    redis.call('HSET', KEYS[8], token, ARGV[7])
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
pub static FAIR: Lua = Lua::new("ed06c32d3de5a91c033e0b273461002a44bcd744", || {
    FAIR_TEXT.as_str()
});

/// The calls every acquire script shares (the `TAKING` functions and the clock).
macro_rules! taking {
    ($($extra:expr),* $(,)?) => {
        &[
            bare("time"),
            on("type", Key::Lock),
            on("get", Key::Fence),
            on("del", Key::Lock),
            on("hset", Key::Meta),
            on("pexpire", Key::Meta),
            on("set", Key::Fence),
            on("pexpire", Key::Lock),
            on("hget", Key::Meta),
            on("type", Key::History),
            on("lrange", Key::History),
            on("lpush", Key::History),
            on("pexpire", Key::History),
            on("get", Key::Lock),
            on("sadd", Key::Waiters),
            on("pttl", Key::Waiters),
            on("pexpire", Key::Waiters),
            on("srem", Key::Waiters),
            on("exists", Key::Waiters),
            on("ltrim", Key::Wake),
            on("get", Key::Mode),
            $($extra),*
        ]
    };
}

pub const PLAIN_CALLS: &[Need] = taking![
    on("set", Key::Lock),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("pttl", Key::Lock),
];

pub const SEMAPHORE_CALLS: &[Need] = taking![
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

pub const FAIR_CALLS: &[Need] = taking![
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        for (text, calls) in [
            (&*PLAIN_TEXT, PLAIN_CALLS),
            (&*SEMAPHORE_TEXT, SEMAPHORE_CALLS),
            (&*FAIR_TEXT, FAIR_CALLS),
        ] {
            assert_calls_match(text, calls);
            assert_keys_declared(text);
            assert!(text.find("replicate_commands").unwrap() < text.find("'TIME'").unwrap());
        }
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn replies() {
        let yes = Value::Array(vec![
            Value::Int(1),
            Value::Int(7),
            Value::Int(5),
            Value::Int(2),
        ]);
        assert_eq!(
            decode(yes),
            Some(Acquired::Yes {
                fence: 7,
                now_ms: 5,
                slot: 2
            })
        );
        let ran = Value::Array(vec![Value::Int(-4), Value::Int(60_000), bulk("{}")]);
        assert_eq!(
            decode(ran),
            Some(Acquired::AlreadyRan {
                slot_ms: 60_000,
                record: b"{}".to_vec()
            })
        );
        let foreign = Value::Array(vec![Value::Int(-2), bulk("meta"), bulk("list")]);
        assert_eq!(
            decode(foreign),
            Some(Acquired::Foreign {
                key: Key::Meta,
                kind: "list".into()
            })
        );
        let busy = Value::Array(vec![
            Value::Int(0),
            bulk("tok"),
            Value::Int(1500),
            Value::Array(vec![bulk("host"), bulk("h")]),
        ]);
        assert_eq!(
            decode(busy),
            Some(Acquired::Busy {
                held: Held {
                    token: b"tok".to_vec(),
                    pttl_ms: 1500,
                    meta: vec![(b"host".to_vec(), b"h".to_vec())],
                },
                place: None,
                wake: None,
            })
        );
        assert_eq!(decode(Value::Int(1)), None);
        assert_eq!(decode(Value::Array(vec![Value::Int(7)])), None);
    }
}

//! Acquire: take a plain lock ([`PLAIN`]), a semaphore's slot (`holders::SEMAPHORE`) or
//! a fair queue's turn (`queue::FAIR`); one typed [`Request`] builds the call of each,
//! and one decoder reads their replies ([`Acquired`]). The functions every acquire
//! script shares are in `taking` and, by axis, in `completion` and `waiters`.
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
//! it. The history (newest first) is read, in pages of 4, 8, 16, … records, until a run
//! that ended before the slot; a record with `"status":0` that started in the slot means
//! the job already ran, and the lock is not taken (`{-4, slot start, record}`). A plain
//! run's first try that does not wait reads first, without this script (`crate::glance`):
//! a losing try's answer, when its reads settle it, never costs the script.
//!
//! Replies: `{1, fence, now, slot, attempt, rerun of, wake, told}` acquired (`told`: the
//! start mark of a vanished run this try tells, '' for none), `{2, fence, now, slot}`
//! already ours (ttl refreshed), `{-2, role, type}` a key of ours holds another type
//! (nothing written), `{-4, slot start, record[, 0, told]}` the once-per slot already
//! ran (or its run vanished: `told` 1 when this try tells it), `{-7, slot start, record, now}` its run is in progress (and this try
//! may not wait for it), `{-8, slot start, starts[, run]}` its attempts are spent (`--once-id`: and
//! the last started run's start mark), `{-11, slot
//! start}` the slot this try was for is over, `{-12, now}` the server's time is not
//! in the calendar slot the client computed, `{-6, mode}` the name is in
//! use as another kind of lock, `{0, holder token, pttl, meta pairs[, place, waiting,
//! head to wake]}` busy (the meta pairs empty when the holder is the one already
//! known). `now` is the server's time in ms.

use std::sync::LazyLock;

use redis::Value;

use crate::redis::{Call, Lua};

use super::taking::{taking_calls, text};
use super::{Key, Need, bare, invocation, on};
use crate::keys::LockKeys;
use crate::redis::reply::{Held, array, bytes, held, int, string};

/// One try to take a lock; each kind of lock (`kinds/`) picks the call of its script
/// ([`Request::plain`], [`Request::slots`], [`Request::fair`], [`Request::newest`]).
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub keys: &'a LockKeys,
    pub token: &'a str,
    pub ttl_ms: u64,
    /// A waiter's heartbeat (ms): it joins the waiters when the lock is busy, and they
    /// live at least this long. 0: a try that does not wait.
    pub heartbeat_ms: u64,
    /// The holder token already known to the caller ('' for none): its metadata is
    /// not read again.
    pub known_holder: &'a str,
    /// `--once-per`: a fixed period's length in ms, or a calendar slot's bounds as
    /// `start+length` ('0': none; see `Period::script_arg`).
    pub period: &'a str,
    /// How long the name's fence counter is kept after this acquisition (ms).
    pub retain_ms: u64,
    /// `--max-attempts`: starts in a `--once-per` slot that close it (0: no limit).
    pub max_attempts: u32,
    /// `--if-vanished` and `--wait` (`policy::Completion::rerun_arg`): 1, a vanished
    /// run opens its slot again; 2, a run that may wait waits for the slot's run.
    pub rerun: u8,
    /// `--once-per`: the slot this try is for (its start, server ms; 0: the slot of
    /// now). Past it, the try is over (`Closed::SlotOver`).
    pub slot_pin_ms: u64,
    /// `--once-id`: the ID's record key (`LockKeys::once`).
    pub once_key: Option<&'a [u8]>,
    /// Who waits (JSON, for a fair queue's `status`; a superseded run's verdict).
    pub who: &'a str,
    /// `--order-key` (newest wins).
    pub order_key: Option<u64>,
    /// `--supersede running`: the request that asks the holder to stop (JSON; '' for
    /// none).
    pub preempt: &'a str,
    /// The holder metadata's field/value pairs.
    pub meta: &'a [(&'static str, String)],
}

impl Request<'_> {
    /// The call of [`PLAIN`]: a plain lock.
    pub fn plain(&self) -> Call {
        let k = self.keys;
        let keys = [
            &k.lock, &k.meta, &k.waiters, &k.fence, &k.wake, &k.history, &k.mode, &k.writers,
            &k.handed,
        ];
        let keys: Vec<&[u8]> = keys
            .iter()
            .map(|k| k.as_slice())
            .chain(self.once_key)
            .collect();
        let mut call = invocation(&PLAIN, &keys);
        self.common(&mut call).completion(&mut call).meta(&mut call);
        call
    }

    /// The call of `holders::SEMAPHORE`: one of `limit` slots.
    pub fn slots(&self, limit: u32) -> Call {
        let k = self.keys;
        let slots: Vec<LockKeys> = (1..=limit).map(|i| k.for_slot(i)).collect();
        let mut keys: Vec<&[u8]> = vec![&k.mode, &k.waiters, &k.wake, &k.fence, &k.history];
        for slot in &slots {
            keys.extend([slot.lock.as_slice(), slot.meta.as_slice()]);
        }
        let mut call = invocation(&super::holders::SEMAPHORE, &keys);
        self.common(&mut call);
        call.arg(limit);
        self.meta(&mut call);
        call
    }

    /// The call of `queue::FAIR`: a fair queue's turn (who waits is recorded).
    pub fn fair(&self) -> Call {
        let k = self.keys;
        let own = k.own_wake(self.token);
        let keys = [
            &k.lock,
            &k.meta,
            &k.queue,
            &k.beats,
            &k.fence,
            &k.history,
            &k.mode,
            &k.queue_info,
            &own,
        ];
        let keys: Vec<&[u8]> = keys
            .iter()
            .map(|k| k.as_slice())
            .chain(self.once_key)
            .collect();
        let mut call = invocation(&super::queue::FAIR, &keys);
        self.common(&mut call).completion(&mut call);
        call.arg(self.who);
        self.meta(&mut call);
        call
    }

    /// The call of `newest::NEWEST` (`mode`: the mode key's text).
    pub fn newest(&self, mode: &str) -> Call {
        let mut call = super::newest::invocation_of(self.keys, self.token);
        call.arg(self.token)
            .arg(self.ttl_ms)
            .arg(self.heartbeat_ms)
            .arg(self.known_holder)
            .arg(self.retain_ms)
            .arg(self.who)
            .arg(mode)
            .arg(self.order_key.map(|k| k.to_string()).unwrap_or_default())
            .arg(self.preempt);
        self.meta(&mut call);
        call
    }

    /// The ARGV every script but newest's starts with.
    fn common(&self, call: &mut Call) -> &Self {
        call.arg(self.token)
            .arg(self.ttl_ms)
            .arg(self.heartbeat_ms)
            .arg(self.known_holder)
            .arg(self.period)
            .arg(self.retain_ms);
        self
    }

    /// `--max-attempts`, `--if-vanished`, the pinned slot (one holder's scripts).
    fn completion(&self, call: &mut Call) -> &Self {
        call.arg(self.max_attempts)
            .arg(self.rerun)
            .arg(self.slot_pin_ms);
        self
    }

    /// The holder metadata's pairs, last.
    fn meta(&self, call: &mut Call) {
        for (field, value) in self.meta {
            call.arg(*field).arg(value);
        }
    }
}

/// An acquire script's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Taken now, or already ours, with the fencing number (0: unknown), the server's
    /// time in ms, the semaphore slot (1 for other kinds), and for `--once-per` this
    /// run's attempt in its slot (0: none) and the vanished run it reruns ('' for none).
    Yes {
        fence: u64,
        now_ms: u64,
        slot: u32,
        attempt: u32,
        rerun_of: String,
        /// Newest wins: the runs to wake (superseded waiters).
        wake: Vec<String>,
        /// A vanished run this try tells (its start mark; empty for none): no try had
        /// told it, and the script marked it told (see `completion::FRAGMENT`'s `tell`).
        told: Vec<u8>,
    },
    /// The `--once-per` slot is closed for this try.
    Skipped(Skip),
    /// Held by another token; in a fair queue, this waiter's place (1-based; 0: not in
    /// it), the queue's length, and the head whose turn has come (to wake, see
    /// `release::wake_head`); where newest wins, the runs to wake (superseded waiters,
    /// a holder asked to stop).
    Busy {
        held: Held,
        place: Option<(u64, u64)>,
        wake: Vec<String>,
    },
    /// A key of ours holds a value of another type (nothing was written).
    Foreign { key: Key, kind: String },
    /// The name is in use as another kind of lock: the mode key's value (`limit 3`,
    /// `fair`), or `plain`.
    OtherKind(String),
    /// A calendar `--once-per`: the server's time (ms) is outside the slot the client
    /// computed (its clock is off, or a slot began between): it computes it again.
    OtherSlot { now_ms: u64 },
}

/// A `--once-per` try that does not run: the slot starting at `slot_ms`, why, and the
/// history record that closed it (empty when its attempts are spent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub slot_ms: u64,
    pub why: Closed,
    pub record: Vec<u8>,
    /// The server's time of the answer, ms (0: not said; a run in progress says it,
    /// so that a try that waits for it knows how much of the slot is left).
    pub now_ms: u64,
    /// A slot closed by its vanished run: this try is the one that tells it (the
    /// script marked the run told; every later try finds it so).
    pub told: bool,
}

/// Why a `--once-per` slot is closed for a try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// A run in the slot exited 0, or (without `--if-vanished rerun`) vanished: started
    /// and never recorded its end.
    Ran,
    /// The slot's run holds the lock now.
    InProgress,
    /// `--supersede`: a newer run superseded this one (the record is who).
    Superseded,
    /// `--order-key`: lower than `high`, which already started.
    Outdated { high: u64 },
    /// `--max-attempts`: this many runs started in the slot and ended or vanished, none
    /// of them in progress.
    Exhausted { starts: u32 },
    /// The slot this try was for (see `Request::slot_pin_ms`) is over.
    SlotOver,
}

impl Closed {
    /// Whether a newer run made this one moot (`--supersede`: superseded, outdated).
    pub fn is_newer(self) -> bool {
        matches!(self, Closed::Superseded | Closed::Outdated { .. })
    }
}

/// Decodes an acquire script's reply; `None` when it has another shape.
pub fn decode(value: Value) -> Option<Acquired> {
    let mut items = array(value)?;
    let code = int(items.next())?;
    match code {
        1 | 2 => Some(Acquired::Yes {
            fence: unsigned(int(items.next())),
            now_ms: unsigned(int(items.next())),
            slot: int(items.next())
                .and_then(|s| u32::try_from(s).ok())
                .unwrap_or(1),
            attempt: int(items.next())
                .and_then(|s| u32::try_from(s).ok())
                .unwrap_or(0),
            rerun_of: string(items.next()),
            wake: tokens(items.next()),
            told: bytes(items.next()),
        }),
        -4 | -7 | -8 | -9 | -10 | -11 => skip(code, &mut items).map(Acquired::Skipped),
        -2 => Some(Acquired::Foreign {
            key: Key::from_role(&string(items.next()))?,
            kind: string(items.next()),
        }),
        -6 => Some(Acquired::OtherKind(string(items.next()))),
        -12 => Some(Acquired::OtherSlot {
            now_ms: unsigned(int(items.next())),
        }),
        0 => {
            let held = held(&mut items);
            let place = int(items.next()).zip(int(items.next()));
            let place = place.map(|(p, n)| (p.max(0) as u64, n.max(0) as u64));
            let wake = tokens(items.next());
            Some(Acquired::Busy { held, place, wake })
        }
        _ => None,
    }
}

/// A reply's number as a u64 (0 when absent or negative).
fn unsigned(n: Option<i64>) -> u64 {
    n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

/// The replies that close a slot or an ID for this try (see the module doc), after
/// their code.
fn skip(code: i64, items: &mut impl Iterator<Item = Value>) -> Option<Skip> {
    let mut skip = Skip {
        slot_ms: 0,
        why: Closed::Ran,
        record: Vec::new(),
        now_ms: 0,
        told: false,
    };
    match code {
        -9 => {
            skip.why = Closed::Superseded;
            skip.record = bytes(items.next());
        }
        -10 => {
            skip.why = Closed::Outdated {
                high: unsigned(Some(int(items.next())?)),
            }
        }
        -11 => {
            skip.slot_ms = unsigned(Some(int(items.next())?));
            skip.why = Closed::SlotOver;
        }
        -8 => {
            skip.slot_ms = unsigned(Some(int(items.next())?));
            skip.why = Closed::Exhausted {
                starts: unsigned(int(items.next())) as u32,
            };
            // `--once-id`: the last started run's start mark.
            skip.record = bytes(items.next());
            // The first try to find the slot or ID exhausted tells it.
            skip.told = int(items.next()) == Some(1);
        }
        _ => {
            skip.slot_ms = unsigned(Some(int(items.next())?));
            if code == -7 {
                skip.why = Closed::InProgress;
            }
            skip.record = bytes(items.next());
            skip.now_ms = unsigned(int(items.next()));
            skip.told = int(items.next()) == Some(1);
        }
    }
    Some(skip)
}

/// The tokens to wake in a reply: a list (newest wins), one token (a fair queue's head;
/// '' for none), or nothing.
fn tokens(value: Option<Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.into_iter().map(|v| string(Some(v))).collect(),
        other => Some(string(other))
            .filter(|w| !w.is_empty())
            .into_iter()
            .collect(),
    }
}

/// A plain lock. KEYS: lock, meta, waiters, fence, wake, history, mode, writers and
/// handed (of a shared name), and with `--once-id` its record. ARGV: token, ttl
/// ms, heartbeat ms, known holder, once-per ms, retain ms, max attempts, rerun (0-3),
/// the `--once-per` slot this try is for (0: the slot of now), meta field/value pairs.
///
/// The mode key is read first: a name in use as a semaphore or a fair queue refuses a
/// plain run (`{-6, mode}`). A shared name (`shared`, see `shared`) does not: the plain
/// run is its writer. Finding it busy, a writer that waits registers in the writers
/// set (ZADD with its heartbeat deadline; the set and the mode key kept at least a
/// heartbeat: TYPE, ZADD, PTTL ×2, + PEXPIRE), so that new shares wait behind it; taking
/// it, it leaves the set (ZREM) and gives the waiting shares their hand-ons again (DEL
/// handed: see `shared::SHARE`). A name never shared pays nothing for this (no command
/// but the GET of the mode it always read). The lock itself is taken with `SET key
/// token NX PX ttl`, exactly as any other client would. Free: GET (mode), SET, GET (fence), TIME, HSET,
/// PEXPIRE, SET (fence) (and SREM, DEL for a waiter). Busy: GET (mode), SET, GET,
/// PTTL (and TYPE, HGETALL when the holder is new to the caller), plus SADD, PTTL (and
/// PEXPIRE) for a waiter's heartbeat. A waiter that takes the lock leaves the waiters
/// set and clears the wake list (a wake-up left there, pushed for it while it took the
/// lock by its own try or by a second release it never popped, would only wake a
/// waiter to find the lock held).
///
/// A try without `--once-per` or `--once-id` (most runs) first goes through the lines
/// before the shared functions: the same commands, in the same order, as the general
/// path below, but without defining those functions nor building their arguments
/// (a fifth of the script's cost to Redis, which runs each EVALSHA with cold caches:
/// see docs/benchmarks.md). Whatever it does not take there (a name of another kind,
/// a key of another type: the `SET` undone) goes on to the general path, which
/// answers as it always did; a busy lock goes on to it without asking again.
pub static PLAIN_TEXT: LazyLock<String> = LazyLock::new(|| {
    text(
        r#"
--CLOCK--
local tried = false
if ARGV[5] == '0' and not KEYS[10] then
  if redis.pcall('GET', KEYS[7]) == false then
    if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
      local last = redis.pcall('GET', KEYS[4])
      local n = last == false and 0 or tonumber(last)
      if n and n >= 0 and n < 9007199254740991 then
        local fence = math.max(n + 1, now_us())
        local f = int(fence)
        if type(redis.pcall('HSET', KEYS[2], 'fence', f, unpack(ARGV, 10))) == 'number' then
          redis.call('PEXPIRE', KEYS[2], ARGV[2])
          redis.call('SET', KEYS[4], f, 'PX', ARGV[6])
          if ARGV[3] ~= '0' and redis.pcall('SREM', KEYS[3], ARGV[1]) == 1 then
            redis.pcall('LTRIM', KEYS[5], 1, 0)
          end
          return {1, fence, now_ms(), 1, 0, ''}
        end
      end
      redis.call('DEL', KEYS[1])
    else
      tried = true
    end
  end
end
--TAKING--
local token, ttl, heartbeat = ARGV[1], ARGV[2], tonumber(ARGV[3])
local refused, attempt, after, untold = once_per(KEYS[6], ARGV[5], KEYS[1], tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]))
if refused then return refused end
if KEYS[10] then
  refused, attempt, after, untold = once_id(KEYS[10], tonumber(ARGV[7]), KEYS[1], tonumber(ARGV[8]))
  if refused then return refused end
end
local shared = false
if not tried then
  local mode = redis.pcall('GET', KEYS[7])
  if type(mode) == 'table' then return foreign('mode', KEYS[7]) end
  shared = mode == 'shared'
  if mode and not shared then return {-6, mode} end
  if redis.call('SET', KEYS[1], token, 'NX', 'PX', ttl) then
    local fence, refused = stamp(KEYS[1], KEYS[2], KEYS[4], ttl, ARGV[6], {}, 10)
    if refused then return refused end
    -- Told before the mark's push, which moves the history's indexes.
    local told = tell(untold)
    mark(KEYS[6], ARGV[5], ARGV[6], attempt, after)
    if shared then
      redis.pcall('ZREM', KEYS[8], token)
      -- The hand-on count is a string of ours; a key of another type there is not.
      if redis.call('TYPE', KEYS[9])['ok'] == 'string' then redis.call('DEL', KEYS[9]) end
    end
    if heartbeat > 0 then leave_taken(KEYS[3], KEYS[5], token) end
    return {1, fence, now_ms(), 1, attempt or 0, after or '', '', told}
  end
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then return foreign('lock', KEYS[1]) end
if holder == token then
  local fence = refresh(KEYS[1], KEYS[2], ttl)
  -- A nested run (see `completion::once_per`) marks a grant of its own; a try after its
  -- own grant's lost reply already has its mark.
  if ARGV[4] == token then mark(KEYS[6], ARGV[5], ARGV[6], attempt, after) end
  return {2, fence, now_ms(), 1, attempt or 0, after or ''}
end
if heartbeat > 0 then
  if shared then
    local kind = redis.call('TYPE', KEYS[8])['ok']
    if kind ~= 'zset' and kind ~= 'none' then return {-2, 'writers', kind} end
  end
  local refused = join(KEYS[3], token, heartbeat)
  if refused then return refused end
  if shared then
    redis.call('ZADD', KEYS[8], now_ms() + heartbeat, token)
    if redis.call('PTTL', KEYS[8]) < heartbeat then redis.call('PEXPIRE', KEYS[8], heartbeat) end
    local kind_left = redis.call('PTTL', KEYS[7])
    if kind_left >= 0 and kind_left < heartbeat then redis.call('PEXPIRE', KEYS[7], heartbeat) end
  end
end
local meta = {}
if holder ~= ARGV[4] and redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {0, holder, redis.call('PTTL', KEYS[1]), meta}
"#,
    )
});
pub static PLAIN: Lua = Lua::new("99cc36f82e3f48bb8393f7eb27084691c5c0ab17", || {
    PLAIN_TEXT.as_str()
});

pub const PLAIN_CALLS: &[Need] = taking_calls![
    on("set", Key::Lock),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("pttl", Key::Lock),
    on("zrem", Key::Writers),
    on("type", Key::Handed),
    on("del", Key::Handed),
    on("type", Key::Writers),
    on("zadd", Key::Writers),
    on("pttl", Key::Writers),
    on("pexpire", Key::Writers),
    on("pttl", Key::Mode),
    on("pexpire", Key::Mode),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::tests::{assert_calls_match, assert_keys_declared};

    #[test]
    fn calls_match_the_lua() {
        for (text, calls) in [
            (&*PLAIN_TEXT, PLAIN_CALLS),
            (
                &*super::super::holders::SEMAPHORE_TEXT,
                super::super::holders::SEMAPHORE_CALLS,
            ),
            (
                &*super::super::queue::FAIR_TEXT,
                super::super::queue::FAIR_CALLS,
            ),
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
                slot: 2,
                attempt: 0,
                rerun_of: String::new(),
                wake: Vec::new(),
                told: Vec::new(),
            })
        );
        let ran = Value::Array(vec![Value::Int(-4), Value::Int(60_000), bulk("{}")]);
        assert_eq!(
            decode(ran),
            Some(Acquired::Skipped(Skip {
                slot_ms: 60_000,
                why: Closed::Ran,
                record: b"{}".to_vec(),
                now_ms: 0,
                told: false,
            }))
        );
        // The try that tells a vanished run: its mark after the grant, or a flag after a
        // skip's time.
        let telling = Value::Array(vec![
            Value::Int(1),
            Value::Int(7),
            Value::Int(5),
            Value::Int(1),
            Value::Int(1),
            bulk(""),
            bulk(""),
            bulk("{\"token\":\"t\"}"),
        ]);
        let Some(Acquired::Yes { told, wake, .. }) = decode(telling) else {
            panic!("not a grant")
        };
        assert_eq!(
            (told.as_slice(), wake.len()),
            (&b"{\"token\":\"t\"}"[..], 0)
        );
        let vanished = vec![
            Value::Int(-4),
            Value::Int(60_000),
            bulk("{}"),
            Value::Int(0),
        ];
        for (flag, told) in [(Some(1), true), (Some(0), false), (None, false)] {
            let mut reply = vanished.clone();
            reply.extend(flag.map(Value::Int));
            let Some(Acquired::Skipped(skip)) = decode(Value::Array(reply)) else {
                panic!("not a skip")
            };
            assert_eq!((skip.why, skip.told), (Closed::Ran, told));
        }
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
                wake: Vec::new(),
            })
        );
        assert_eq!(decode(Value::Int(1)), None);
        assert_eq!(decode(Value::Array(vec![Value::Int(7)])), None);
    }
}

//! What every acquire script shares: the Lua at its top ([`TAKING`], then the
//! completion and the waiters' fragments), the splicing of a script's body into it
//! ([`text`]), and the commands those shared functions call ([`taking_calls`]). The
//! plain lock's script (`acquire`), the semaphore's (`holders`) and the fair queue's
//! (`queue`) are built from it.

use super::FIFO_MAX_BEAT;
use super::{CLOCK, splice};

/// What the three acquire scripts share, as Lua at their top (after [`CLOCK`]):
/// - `foreign(role, key)`: the refusal for a key of ours that holds another type;
/// - `draw(counter)`: the next fencing number, `max(counter + 1, TIME in µs)`, or a
///   refusal when the counter is not a number (nothing written);
/// - `stamp(...)`: for a lock key just SET, draws the fencing number, writes the
///   metadata (the fence, `fields`, then ARGV from `from`) with the lock's ttl, and
///   keeps the counter at the number for `retain` ms; a refusal undoes the SET;
/// - `refresh(...)`: for a lock already ours, renews it and its metadata (when ours)
///   and returns its fencing number;
///
/// then the completion fragment (`completion::FRAGMENT`: `once_per`, `mark`) and the
/// waiters' (`waiters::FRAGMENT`: `join`, `leave`, `leave_taken`).
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
"#;

/// The functions every acquire script defines: [`TAKING`], then the completion and
/// the waiters' fragments, each joined without the blank first line its raw string
/// starts with, so that the assembled texts are byte for byte what one block was (the
/// SHA1 test holds them).
fn shared() -> String {
    [
        TAKING,
        super::completion::FRAGMENT.trim_start_matches('\n'),
        super::waiters::FRAGMENT.trim_start_matches('\n'),
    ]
    .concat()
}

/// An acquire script's text: the shared Lua spliced in where the body says so.
pub(super) fn text(body: &str) -> String {
    splice(
        body,
        &[
            ("CLOCK", CLOCK),
            ("TAKING", &shared()),
            ("MAX_BEAT", &FIFO_MAX_BEAT.as_millis().to_string()),
        ],
    )
}

/// The calls every acquire script shares (the `TAKING` functions and the clock).
macro_rules! taking_calls {
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
            on("hget", Key::Once),
            on("type", Key::Once),
            on("lset", Key::History),
            on("hset", Key::Once),
            on("hsetnx", Key::Once),
            $($extra),*
        ]
    };
}

pub(crate) use taking_calls;

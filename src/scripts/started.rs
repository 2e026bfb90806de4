//! Started: a run says its command is about to start ([`STARTED`]), so that from then on
//! it is an attempt: a `--once-per` run's start mark closes its slot, a `--once-id` run
//! counts as one of the ID's starts. The acquire only marks a grant (`"started":false`);
//! a grant whose command never started (its reply and its undo both lost, a run that
//! died or was interrupted before the spawn) is no attempt (see `crate::lifecycle`).

use crate::redis::{Call, Lua};

use super::{CLOCK, Key, Need, bare, invocation, on, splice};
use crate::keys::LockKeys;

/// KEYS: lock, history, and with `--once-id` the ID's record. ARGV: token, who runs it
/// (a JSON object: host, pid, user, command, ttl), retain ms, '1' for a `--once-per`
/// run's grant mark, '2' for a run that pushes a started mark of its own (an
/// `--elect` term). When the lock is still ours: turns this run's start mark (the newest record
/// beginning with its token) into a started one that says who runs it, so that a run
/// that vanishes still names where it ran; for `--once-id`, counts the start and keeps
/// the run's start mark as the ID's `run` (a later try sees it in progress while its
/// token holds the lock); returns 1. Returns 0 when the lock is not ours (nothing
/// written: the command must not start). A mark already started, or gone (trimmed, a
/// history of another type), is left as it is; an ID whose `run` is already this
/// token's is not counted again: the call may be made again when its reply is late.
pub static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    splice(
        r#"
--CLOCK--
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local who = string.sub(ARGV[2], 2, -2)
if who ~= '' then who = ',' .. who end
if ARGV[4] == '1' then
  local listed = redis.pcall('LRANGE', KEYS[2], 0, -1)
  if type(listed) == 'table' then
    local start = '{"token":"' .. ARGV[1] .. '","start_ms":'
    for _, record in ipairs(listed) do
      if string.sub(record, 1, #start) == start then
        local at = string.find(record, ',"started":false', 1, true)
        if at then
          -- LPUSH and LREM rather than LSET: the commands a once-per run's ACL already
          -- grants; the mark is the newest entry or close to it either way. The push
          -- comes first, so the list is never empty in between: an emptied list is
          -- deleted, and a push would make it again without its expiry.
          local started = string.sub(record, 1, at - 1) .. ',"started":true' .. who .. string.sub(record, at + 16)
          redis.call('LPUSH', KEYS[2], started)
          redis.call('LREM', KEYS[2], 1, record)
        end
        break
      end
    end
  end
elseif ARGV[4] == '2' then
  -- A started mark of its own, pushed once (a second try finds it among the newest);
  -- the release replaces it with the run's record. A history of another type is left
  -- alone.
  local start = '{"token":"' .. ARGV[1] .. '","start_ms":'
  local recent = redis.pcall('LRANGE', KEYS[2], 0, 9)
  local found = type(recent) ~= 'table' or recent.err ~= nil
  if not found then
    for _, record in ipairs(recent) do
      if string.sub(record, 1, #start) == start then found = true break end
    end
  end
  if not found then
    local mark = start .. int(now_ms()) .. ',"running":true,"started":true' .. who .. '}'
    if type(redis.pcall('LPUSH', KEYS[2], mark)) == 'number' then
      redis.call('PEXPIRE', KEYS[2], ARGV[3])
    end
  end
end
if KEYS[3] then
  -- A second try of this call (its first reply came too late) finds its own start
  -- counted: once.
  local mine = '{"token":"' .. ARGV[1] .. '",'
  local counted = redis.call('HGET', KEYS[3], 'run')
  if counted and string.sub(counted, 1, #mine) == mine then return 1 end
  local starts = redis.call('HINCRBY', KEYS[3], 'starts', 1)
  redis.call('HSET', KEYS[3], 'run', '{"token":"' .. ARGV[1] .. '","start_ms":' .. int(now_ms())
    .. ',"running":true,"started":true,"attempt":' .. int(starts) .. who .. '}')
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return 1
"#,
        &[("CLOCK", CLOCK)],
    )
});
pub static STARTED: Lua = Lua::new("f1e83ab692c08f0680d86c47947d018358ff862c", || TEXT.as_str());

pub const CALLS: &[Need] = &[
    bare("time"),
    on("get", Key::Lock),
    on("lrange", Key::History),
    on("lrem", Key::History),
    on("lpush", Key::History),
    on("pexpire", Key::History),
    on("hget", Key::Once),
    on("hincrby", Key::Once),
    on("hset", Key::Once),
    on("pexpire", Key::Once),
];

/// The start mark a run has in the history, which its start turns into a started one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMark {
    /// None (a plain run, a `--once-id` run without `--elect`).
    None,
    /// The grant mark its acquire pushed (`--once-per`).
    Granted,
    /// None yet: the start pushes one (an `--elect` term).
    Pushed,
}

/// The call saying that the run holding `keys` with `token` starts its command: `who`
/// (a JSON object) goes into its start mark; `mark`: the one it has in the history;
/// `once`: the `--once-id` record whose starts it counts.
pub fn call(
    keys: &LockKeys,
    token: &str,
    who: &str,
    retain_ms: u64,
    mark: StartMark,
    once: Option<&[u8]>,
) -> Call {
    let base: [&[u8]; 2] = [&keys.lock, &keys.history];
    let all: Vec<&[u8]> = base.into_iter().chain(once).collect();
    let mut call = invocation(&STARTED, &all);
    call.arg(token).arg(who).arg(retain_ms).arg(match mark {
        StartMark::None => "0",
        StartMark::Granted => "1",
        StartMark::Pushed => "2",
    });
    call
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(&super::TEXT, super::CALLS);
        crate::scripts::tests::assert_keys_declared(&super::TEXT);
    }
}

//! The completion axis's Lua: what an acquire finds of earlier runs and marks for
//! later ones. Spliced into every acquire script (see `acquire::text`).
//!
//! - `once_per(history, period, lock)`: the `--once-per` check (see `acquire`'s module
//!   doc): a refusal reply when the slot already ran, else nil;
//! - `mark(history, period, retain)`: a `--once-per` run's start mark, pushed as it
//!   takes the lock.
//!
//! Their commands are in every acquire script's CALLS (`acquire::taking_calls`).

/// The fragment (see the module's doc).
pub(super) const FRAGMENT: &str = r#"
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
"#;

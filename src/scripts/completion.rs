//! The completion axis's Lua: what an acquire finds of earlier runs and marks for
//! later ones. Spliced into every acquire script (see `acquire::text`).
//!
//! - `once_per(history, period, lock, attempts, rerun)`: the `--once-per`
//!   check (see `acquire`'s module doc): a refusal reply when the slot already ran, its
//!   run is in progress, or its attempts are spent; else nil, this run's attempt and
//!   the token of the vanished run it reruns ('' for none). `rerun`: 1 or 3, a vanished
//!   run opens its slot again (else it closes it); 2 or 3, a run that may wait waits
//!   for the slot's run in progress (else it is skipped);
//! - `mark(history, period, retain, attempt, after)`: a `--once-per` run's start mark,
//!   pushed as it takes the lock (its attempt, and the run it reruns);
//! - `once_id(key, attempts)`, `once_id_started(key, retain)`: the `--once-id` check
//!   (the ID done, or its attempts spent) and the count of its starts.
//!
//! Their commands are in every acquire script's CALLS (`acquire::taking_calls`).

/// The fragment (see the module's doc).
pub(super) const FRAGMENT: &str = r#"
local function once_per(history, period, lock, attempts, rerun)
  if period <= 0 then return nil end
  local waiting = rerun >= 2
  rerun = rerun % 2 == 1
  local now = now_ms()
  local slot = now - (now % period)
  local starts, vanished = 0, ''
  local kind = redis.call('TYPE', history)['ok']
  if kind == 'list' then
    for _, record in ipairs(redis.call('LRANGE', history, 0, -1)) do
      local ok, run = pcall(cjson.decode, record)
      -- Newest end first: a run that started before the slot may have ended after one
      -- that started in it, so the scan goes on to the first run that ended before.
      -- A start mark (see `mark`) of a run that still holds the lock is the slot's run
      -- in progress: the try is skipped ({-7}), or a run that may wait waits for its
      -- end (to skip the slot if it succeeds, or run it if it fails or vanishes). A mark of a run that no longer holds the lock and whose
      -- command started is a run whose end was never recorded (it vanished): it may
      -- have succeeded, so it closes its slot ({-4}), or, with `rerun`, it counts as an
      -- attempt and the slot is open again. A mark whose command never started
      -- (`"started":false`: the grant's reply, or the run, was lost before the start)
      -- is not a start, and the caller's own is not looked at (a try after its own
      -- ambiguous grant). Every other start in the slot is an attempt; `attempts` of
      -- them close it ({-8}).
      if ok and type(run) == 'table' and type(run.start_ms) == 'number' then
        if type(run.end_ms) == 'number' and run.end_ms < slot then break end
        if run.start_ms >= slot and run.token ~= ARGV[1] then
          if run.running == true then
            if redis.pcall('GET', lock) == run.token then
              if not waiting then return {-7, slot, record} end
              starts = starts + 1
            elseif run.started ~= false then
              if not rerun then return {-4, slot, record} end
              starts = starts + 1
              if vanished == '' then vanished = run.token end
            end
          elseif run.status == 0 then
            return {-4, slot, record}
          else
            starts = starts + 1
          end
        end
      end
    end
  elseif kind ~= 'none' then
    return {-2, 'history', kind}
  end
  if attempts > 0 and starts >= attempts then return {-8, slot, starts} end
  return nil, starts + 1, vanished
end
-- `--once-id`: the ID's record (a hash): `done` closes it for good (its run's record:
-- {-4, 0, record}); `attempts` starts close it ({-8, 0, starts}); else this run's attempt.
local function once_id(key, attempts)
  local done = redis.pcall('HGET', key, 'done')
  if type(done) == 'table' then return {-2, 'once', redis.call('TYPE', key)['ok']} end
  if done then return {-4, 0, done} end
  local starts = tonumber(redis.call('HGET', key, 'starts')) or 0
  if attempts > 0 and starts >= attempts then return {-8, 0, starts} end
  return nil, starts + 1, ''
end
local function once_id_started(key, retain)
  redis.call('HINCRBY', key, 'starts', 1)
  redis.call('PEXPIRE', key, retain)
end
-- A `--once-per` run marks its grant in the history as it takes the lock, says when
-- its command starts (see [`STARTED`]), and its release replaces the mark with the
-- run's record. A started mark left alone (the release never reached Redis) keeps the
-- slot closed; a mark whose command never started does not.
local function mark(history, period, retain, attempt, after)
  if period <= 0 then return end
  local start = '{"token":"' .. ARGV[1] .. '","start_ms":' .. int(now_ms()) .. ',"running":true,"started":false,"attempt":' .. int(attempt) .. ',"rerun_of":"' .. string.sub(after, 1, 8) .. '"}'
  if type(redis.pcall('LPUSH', history, start)) == 'number' then
    redis.call('PEXPIRE', history, retain)
  end
end
"#;

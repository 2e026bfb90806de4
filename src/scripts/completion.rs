//! The completion axis's Lua: what an acquire finds of earlier runs and marks for
//! later ones. Spliced into every acquire script (see `acquire::text`).
//!
//! A run's life (see `crate::lifecycle`, the same rule in Rust): *granted* (its start
//! mark says `"started":false`), *started* (`scripts::started` turned the mark into a
//! started one, with who runs it), *ended* (its release replaced the mark with its
//! record), or *vanished* (a started mark whose token no longer holds the lock). Only
//! starts are attempts; a run that holds the lock is in progress, never an attempt
//! that closes its slot or ID.
//!
//! - `slot_of(period, now)`: the slot's start (`period`: a fixed length, or the
//!   bounds of a calendar slot the client computed, `start+length`; nil when the
//!   server's time is outside them: `{-12, now}`, the client computes again);
//! - `once_per(history, period, lock, attempts, rerun, pin)`: the `--once-per`
//!   check (see `acquire`'s module doc): a refusal reply when the slot already ran, its
//!   run is in progress and this try may not wait for it ({-7, slot, record, now}), or
//!   its attempts are spent; else nil, this run's attempt and the token of the vanished
//!   run it reruns ('' for none). `rerun`: 1 or 3, a vanished run opens its slot again
//!   (else it closes it); 2 or 3, a run that may wait waits for the slot's run in
//!   progress (else it is skipped). `pin`: the slot this try is for (0: the slot of
//!   now); once the server's time is past it the try is over ({-11, pin}): a try never
//!   runs on behalf of a later slot;
//! - `mark(history, period, retain, attempt, after)`: a `--once-per` run's start mark,
//!   pushed as it takes the lock (its attempt, and the run it reruns);
//! - `once_id(key, attempts, lock, rerun)`: the `--once-id` check: the ID done, its
//!   started run still holding the lock (in progress: {-7} for a try that may not wait,
//!   else the try goes on and finds the lock busy), or its attempts spent. Its starts
//!   are counted by `scripts::started`, never at the grant;
//! - `tell(untold)`: a vanished run no try has told, found by `once_per` (a mark of
//!   its own slot, in the `{-4}` it closes; else the newest started mark of an earlier
//!   slot, for the try that takes the slot) or `once_id` (the ID's last run): marked
//!   told (`"told":true`) in the same script, so that one try in the fleet tells it
//!   (`run/vanished.rs`). A try that tells nothing pays nothing for it but where it
//!   reads past an earlier slot's untold mark: one GET of the lock.
//!
//! Their commands are in every acquire script's CALLS (`acquire::taking_calls`).

/// The fragment (see the module's doc).
pub(super) const FRAGMENT: &str = r#"
-- A vanished run that no try has told yet ({key, index in the history or false for an
-- ID's record, its mark}, from `once_per` or `once_id`): the try that tells it marks it
-- told (`"told":true`) in the same script, so that no other try repeats it. Returns the
-- mark told, or '' (none, or a mark that could not be written: a try whose ACL lacks
-- LSET tells nothing rather than every try telling it).
local function tell(untold)
  if not untold then return '' end
  -- Who told it: a try whose reply is lost takes the mark back (`scripts::release`).
  local told = string.sub(untold[3], 1, -2) .. ',"told":true,"told_by":"' .. ARGV[1] .. '"}'
  local written
  if untold[2] then
    written = redis.pcall('LSET', untold[1], untold[2], told)
  else
    written = redis.pcall('HSET', untold[1], 'run', told)
  end
  if type(written) == 'table' and written.err then return '' end
  return untold[3]
end
-- A slot whose attempts are spent is told once for the fleet, as a vanished run is:
-- the try that finds it so marks its newest start (`"exhausted_told":true`) and says
-- it (1); every later try finds the mark and is silent (0). Where the mark cannot be
-- written (an ACL without LSET), every try tells it, as before the mark.
local function tell_exhausted(newest)
  if not newest or string.find(newest[3], '"exhausted_told":true', 1, true) then return 0 end
  local marked = string.sub(newest[3], 1, -2) .. ',"exhausted_told":true}'
  redis.pcall('LSET', newest[1], newest[2], marked)
  return 1
end
-- The start of the slot `now` falls in: `period` is a fixed length in ms ('3600000':
-- `now` rounded down to it from the epoch) or a calendar slot the client computed in
-- its zone ('start+length': a local day, ISO week or month); nil when `now` is not in
-- it (the client guessed from its own clock, or pinned a slot that is over).
local function slot_of(period, now)
  local start, length = string.match(period, '^(%d+)%+(%d+)$')
  if not start then
    local every = tonumber(period)
    return now - (now % every)
  end
  start = tonumber(start)
  if now < start or now >= start + tonumber(length) then return nil end
  return start
end
-- Whether an ended record is a run of a --once-per job (its period in the record:
-- `once_per_ms`, or a calendar period's `once_per`; JSON null decodes as userdata).
local function job(run)
  return type(run.once_per_ms) == 'number' or type(run.once_per) == 'string'
end
local function once_per(history, period, lock, attempts, rerun, pin)
  if period == '0' then return nil end
  local waiting = rerun >= 2
  rerun = rerun % 2 == 1
  -- A nested run (its enclosing run holds the lock with the caller's token, said by a
  -- known holder that is the caller itself): the enclosing run's start mark in the
  -- slot is the slot's run in progress, never waited for.
  local nested = ARGV[4] == ARGV[1]
  local now = now_ms()
  local slot = slot_of(period, now)
  if pin > 0 and slot ~= pin then return {-11, pin} end
  if not slot then return {-12, now} end
  local starts, vanished, in_progress, untold = 0, '', false, nil
  -- The newest start counted in the slot ({history, index, record}): the exhausted
  -- slot's one tell is marked on it (see `tell_exhausted`).
  local newest = nil
  local kind = redis.call('TYPE', history)['ok']
  if kind == 'list' then
    -- Read from the newest in pages of 4, 8, 16, ... records: the scan ends at the
    -- first run that ended before the slot, most often among the newest, so that what
    -- it costs follows the records it needs, not what --history keeps.
    local from, size, done = 0, 4, false
    while not done do
      local page = redis.call('LRANGE', history, from, from + size - 1)
      for j, record in ipairs(page) do
        local i = from + j
        local ok, run = pcall(cjson.decode, record)
        -- Newest end first: a run that started before the slot may have ended after one
        -- that started in it, so the scan goes on to the first run that ended before.
        -- A start mark (see `mark`) of a run that still holds the lock is the slot's run
        -- in progress: the try is skipped ({-7}), or a run that may wait goes on to find
        -- the lock busy and waits for its end (to skip the slot if it succeeds, or run it
        -- if it fails or vanishes); it is not counted, so it never exhausts the slot. A
        -- mark of a run that no longer holds the lock and whose command started is a run
        -- whose end was never recorded (it vanished): it may have succeeded, so it closes
        -- its slot ({-4}), or, with `rerun`, it counts as an attempt and the slot is open
        -- again. A mark whose command never started (`"started":false`: the grant's
        -- reply, or the run, was lost before the start) is not a start, and the caller's
        -- own is not looked at (a try after its own ambiguous grant). Every other start
        -- in the slot is an attempt; `attempts` of them close it ({-8}).
        if ok and type(run) == 'table' and type(run.start_ms) == 'number' then
          if type(run.end_ms) == 'number' and run.end_ms < slot then done = true break end
          if run.start_ms >= slot and (run.token ~= ARGV[1] or nested) then
            if run.running == true then
              if redis.pcall('GET', lock) == run.token then
                if not waiting or nested then return {-7, slot, record, now} end
                in_progress = true
              elseif run.started ~= false then
                if not rerun then
                  local told = run.told ~= true and tell({history, i - 1, record}) or ''
                  return {-4, slot, record, 0, told ~= '' and 1 or 0}
                end
                starts = starts + 1
                newest = newest or {history, i - 1, record}
                if vanished == '' then vanished = run.token end
              end
            elseif job(run) then
              -- An ended run of the job (a --once-per run: a run of the name without it,
              -- an operator's ad-hoc command, is not the job): a success closes the
              -- slot; so does a run told as vanished whose wrapper came back later
              -- (its record kept the told mark), unless a vanished run reopens it.
              if run.status == 0 or (run.told == true and not rerun) then
                return {-4, slot, record}
              end
              starts = starts + 1
              newest = newest or {history, i - 1, record}
            end
          elseif untold == nil and run.running == true and run.started ~= false
              and run.token ~= ARGV[1] then
            -- The newest started mark of an earlier slot: vanished and not told yet,
            -- the run that takes this slot tells it (see `tell`).
            untold = false
            if run.told ~= true and redis.pcall('GET', lock) ~= run.token then
              untold = {history, i - 1, record}
            end
          end
        end
      end
      done = done or #page < size
      from, size = from + size, size * 2
    end
  elseif kind ~= 'none' then
    return {-2, 'history', kind}
  end
  if attempts > 0 and starts >= attempts and not in_progress then
    return {-8, slot, starts, '', tell_exhausted(newest)}
  end
  return nil, starts + 1, vanished, untold or nil
end
-- `--once-id`: the ID's record (a hash): `done` closes it for good (its run's record:
-- {-4, 0, record}); `run`, the start mark of its last started run: while that run holds
-- the lock it is in progress ({-7} for a try that may not wait; a try that may wait
-- goes on and finds the lock busy); `starts` (counted at the start, see
-- `scripts::started`) reaching `attempts` closes it ({-8, 0, starts, run}: the last
-- started run's mark says where and when it ran) once no run of it is in progress;
-- else this run's attempt.
local function once_id(key, attempts, lock, rerun)
  local done = redis.pcall('HGET', key, 'done')
  if type(done) == 'table' then return {-2, 'once', redis.call('TYPE', key)['ok']} end
  if done then return {-4, 0, done} end
  local starts = tonumber(redis.call('HGET', key, 'starts')) or 0
  local running = redis.call('HGET', key, 'run')
  local untold = nil
  if running then
    local ok, run = pcall(cjson.decode, running)
    if ok and type(run) == 'table' and type(run.token) == 'string' then
      if redis.pcall('GET', lock) == run.token then
        -- A nested run inside the ID's own run (its token is the caller's) is skipped
        -- as in progress: waiting would be waiting for its own holder.
        if rerun < 2 or run.token == ARGV[1] then return {-7, 0, running, now_ms()} end
        return nil, starts + 1, ''
      end
      -- Its release takes an ended run out (`scripts::release`): this one vanished.
      if run.told ~= true then untold = {key, false, running} end
    end
  end
  if attempts > 0 and starts >= attempts then
    -- Told once per ID: the first try that finds it exhausted sets the mark.
    -- (an ACL without HSETNX: every try tells it, as before the mark)
    local set = redis.pcall('HSETNX', key, 'exhausted_told', '1')
    local first = set == 1 or type(set) == 'table'
    return {-8, 0, starts, running or '', first and 1 or 0}
  end
  return nil, starts + 1, '', untold
end
-- A `--once-per` run marks its grant in the history as it takes the lock, says when
-- its command starts (see [`STARTED`]), and its release replaces the mark with the
-- run's record. A started mark left alone (the release never reached Redis) keeps the
-- slot closed; a mark whose command never started does not.
local function mark(history, period, retain, attempt, after)
  if period == '0' then return end
  local start = '{"token":"' .. ARGV[1] .. '","start_ms":' .. int(now_ms()) .. ',"running":true,"started":false,"attempt":' .. int(attempt) .. ',"rerun_of":"' .. string.sub(after, 1, 8) .. '"}'
  if type(redis.pcall('LPUSH', history, start)) == 'number' then
    redis.call('PEXPIRE', history, retain)
  end
end
"#;

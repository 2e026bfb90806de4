//! Started: a `--once-per` run says its command is about to start, so that its start
//! mark closes the slot from then on ([`STARTED`]). The acquire marks a grant as
//! `"started":false`; a grant whose command never started (its reply and its undo both
//! lost, a run that died before the spawn) does not close the slot.

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;

/// KEYS: lock, history. ARGV: token. When the lock is still ours, turns this run's
/// start mark (the newest record beginning with its token) into a started one and
/// returns 1; returns 0 when the lock is not ours (nothing written: the command must
/// not start). A mark already started, or gone (trimmed, a history of another type),
/// is left as it is.
pub const TEXT: &str = r#"
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local listed = redis.pcall('LRANGE', KEYS[2], 0, -1)
if type(listed) ~= 'table' then return 1 end
local start = '{"token":"' .. ARGV[1] .. '","start_ms":'
for _, record in ipairs(listed) do
  if string.sub(record, 1, #start) == start then
    local at = string.find(record, ',"started":false', 1, true)
    if at then
      -- LPUSH and LREM rather than LSET: the commands a once-per run's ACL already
      -- grants; the mark is the newest entry or close to it either way. The push comes
      -- first, so the list is never empty in between: an emptied list is deleted, and a
      -- push would make it again without its expiry.
      local started = string.sub(record, 1, at - 1) .. ',"started":true' .. string.sub(record, at + 16)
      redis.call('LPUSH', KEYS[2], started)
      redis.call('LREM', KEYS[2], 1, record)
    end
    return 1
  end
end
return 1
"#;
pub static STARTED: Lua = Lua::new("7a4ed01c8e7e48247eae8a89bc9d9ce1d29a7c17", || TEXT);

pub const CALLS: &[Need] = &[
    on("get", Key::Lock),
    on("lrange", Key::History),
    on("lrem", Key::History),
    on("lpush", Key::History),
];

/// The call saying that the run holding `keys` with `token` starts its command.
pub fn call(keys: &LockKeys, token: &str) -> Call {
    let mut call = invocation(&STARTED, &[&keys.lock, &keys.history]);
    call.arg(token);
    call
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(super::TEXT, super::CALLS);
        crate::scripts::tests::assert_keys_declared(super::TEXT);
    }
}

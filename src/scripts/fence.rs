//! Raise the fence counter of a node to at least a number (Redlock).
//!
//! Over several nodes each counter counts only the acquisitions it saw, so the largest
//! number of a quorum is not enough on its own: a later holder's quorum shares a node
//! with this one's, but that node's counter may be below this holder's largest.
//! Raising every node to the number before the command starts (on a quorum, or the
//! acquisition is given up) makes any later quorum see at least it.

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;

/// KEYS: fence, meta. ARGV: fencing number, token, retain ms. Returns 1, or -1 when the
/// counter holds another type (nothing written). The counter is kept `retain` ms; the
/// metadata's `fence` is set when the metadata is ours.
pub const TEXT: &str = r#"
local now = redis.pcall('GET', KEYS[1])
if type(now) == 'table' then
  return -1
end
if (tonumber(now) or 0) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
end
if redis.pcall('HGET', KEYS[2], 'token') == ARGV[2] then
  redis.call('HSET', KEYS[2], 'fence', ARGV[1])
end
return 1
"#;
pub static RAISE: Lua = Lua::new("fee49a862fbec9128015685503ccd91e407efc51", || TEXT);

pub const CALLS: &[Need] = &[
    on("get", Key::Fence),
    on("set", Key::Fence),
    on("hget", Key::Meta),
    on("hset", Key::Meta),
];

/// The call raising `keys`' counter to `fence` for the holder of `token`.
pub fn call(keys: &LockKeys, fence: u64, token: &str, retain_ms: u64) -> Call {
    let mut call = invocation(&RAISE, &[&keys.fence, &keys.meta]);
    call.arg(fence).arg(token).arg(retain_ms);
    call
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(super::TEXT, super::CALLS);
    }
}

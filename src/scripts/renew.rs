//! Renew: compare-and-pexpire.

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;

/// KEYS: lock, meta, and for a semaphore or fair queue the mode key. ARGV: token, ttl ms
/// (always > 0: `PEXPIRE key 0` would delete the key), the mode. Returns 1 renewed, 0
/// not ours (never re-SETs the lock), or renewed with a request to stop: the request
/// (`--supersede running`, `redlock preempt`: the metadata's `preempt` field). The mode key is kept at least as long as the
/// lock: created when it is gone, its expiry pushed back when it is ours (it has one)
/// and shorter.
/// The metadata key is touched only when it is ours (its `token` field is ours); a
/// value of another type there belongs to someone else. (`pcall`: on a key of another
/// type the read is an error value, which is not our token.)
pub const TEXT: &str = r#"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local renewed = 1
  if redis.pcall('HGET', KEYS[2], 'token') == ARGV[1] then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    renewed = redis.call('HGET', KEYS[2], 'preempt') or 1
  end
  if KEYS[3] then
    local left = redis.call('PTTL', KEYS[3])
    if left == -2 then
      redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2], 'NX')
    elseif left >= 0 and left < tonumber(ARGV[2]) then
      redis.call('PEXPIRE', KEYS[3], ARGV[2])
    end
  end
  return renewed
end
return 0
"#;
pub static RENEW: Lua = Lua::new("013db7f120121761fb238acebd0e03a360078d0d", || TEXT);

pub const CALLS: &[Need] = &[
    on("get", Key::Lock),
    on("pexpire", Key::Lock),
    on("hget", Key::Meta),
    on("pexpire", Key::Meta),
    on("pttl", Key::Mode),
    on("set", Key::Mode),
    on("pexpire", Key::Mode),
];

/// The renewal of the lock `keys` (a semaphore's slot: the slot's keys) held with
/// `token`, to `ttl_ms`; `mode`: the mode key's text (`None`: a plain lock).
pub fn call(keys: &LockKeys, mode: Option<&str>, token: &str, ttl_ms: u64) -> Call {
    let mut call = match &mode {
        Some(_) => invocation(&RENEW, &[&keys.lock, &keys.meta, &keys.mode]),
        None => invocation(&RENEW, &[&keys.lock, &keys.meta]),
    };
    call.arg(token).arg(ttl_ms);
    if let Some(mode) = mode {
        call.arg(mode);
    }
    call
}

/// What a renewal answered on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewed {
    /// Renewed; with the request to stop, when the holder is asked to.
    Yes(Option<Vec<u8>>),
    /// Not ours.
    No,
}

/// Decodes [`RENEW`]'s reply (anything else than 1 or a request: not ours).
pub fn decode(value: redis::Value) -> Renewed {
    match value {
        redis::Value::Int(1) => Renewed::Yes(None),
        redis::Value::BulkString(request) => Renewed::Yes(Some(request)),
        _ => Renewed::No,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(super::TEXT, super::CALLS);
    }
}

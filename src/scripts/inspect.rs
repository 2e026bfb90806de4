//! Inspect: read a lock (read-only).

use redis::Value;

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;
use crate::redis::reply::{Held, array, held, string};

/// KEYS: lock, meta. Returns `{type}` when not a string, else `{'string', token, pttl,
/// meta pairs}`.
pub const TEXT: &str = r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' then return {kind} end
local meta = {}
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {kind, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), meta}
"#;
pub static INSPECT: Lua = Lua::new("fb0698537235f32d1278a3b39af136ebbb127cfc", || TEXT);

pub const CALLS: &[Need] = &[
    on("type", Key::Lock),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("get", Key::Lock),
    on("pttl", Key::Lock),
];

/// The read of the lock `keys` (a semaphore's slot: the slot's keys).
pub fn call(keys: &LockKeys) -> Call {
    invocation(&INSPECT, &[&keys.lock, &keys.meta])
}

/// What the read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspected {
    Free,
    Held(Held),
    NotALock(String),
}

/// Decodes the reply; `None` when it has another shape.
pub fn decode(value: Value) -> Option<Inspected> {
    let mut items = array(value)?;
    match string(items.next()).as_str() {
        "none" => Some(Inspected::Free),
        "string" => Some(Inspected::Held(held(&mut items))),
        "" => None,
        other => Some(Inspected::NotALock(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(TEXT, CALLS);
    }

    #[test]
    fn replies() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(
            decode(Value::Array(vec![bulk("none")])),
            Some(Inspected::Free)
        );
        assert_eq!(
            decode(Value::Array(vec![bulk("hash")])),
            Some(Inspected::NotALock("hash".into()))
        );
        assert_eq!(decode(Value::Nil), None);
    }
}

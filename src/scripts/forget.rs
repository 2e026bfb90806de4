//! Forget: delete a free lock's run history, fence counter and newest-wins order mark
//! (`redlock forget`).

use redis::Value;

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;

/// KEYS: lock, mode, queue, fence, history, order. Returns -1 (nothing deleted) while
/// the name is in use: its lock key is held, or its mode key says a semaphore's slot is
/// held or a fair queue has waiters; `{-2, role, type}` (nothing deleted) when the fence
/// counter or the order mark (`--order-key`'s largest started, so that keys of another
/// counter can start again) is not a string or the history not a list: another
/// application's key, never ours to delete; else the number of keys deleted.
pub const TEXT: &str = r#"
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then return -1 end
local fence = redis.call('TYPE', KEYS[4])['ok']
if fence ~= 'none' and fence ~= 'string' then return {-2, 'fence', fence} end
local history = redis.call('TYPE', KEYS[5])['ok']
if history ~= 'none' and history ~= 'list' then return {-2, 'history', history} end
local order = redis.call('TYPE', KEYS[6])['ok']
if order ~= 'none' and order ~= 'string' then return {-2, 'order', order} end
return redis.call('DEL', KEYS[4], KEYS[5], KEYS[6])
"#;
pub static FORGET: Lua = Lua::new("bcb76c7bcf1a3d8daf4f3a597344589f58136565", || TEXT);

pub const CALLS: &[Need] = &[
    on("exists", Key::Lock),
    on("exists", Key::Mode),
    on("exists", Key::Queue),
    on("type", Key::Fence),
    on("type", Key::History),
    on("type", Key::Order),
    on("del", Key::Fence),
    on("del", Key::History),
    on("del", Key::Order),
];

/// The call forgetting the name `keys`.
pub fn call(keys: &LockKeys) -> Call {
    invocation(
        &FORGET,
        &[
            &keys.lock,
            &keys.mode,
            &keys.queue,
            &keys.fence,
            &keys.history,
            &keys.order,
        ],
    )
}

/// What a forget did on one node.
#[derive(Debug, PartialEq, Eq)]
pub enum Forgot {
    Deleted,
    /// The name is in use: nothing deleted.
    InUse,
    /// A key of the name holds another application's type: nothing deleted.
    Foreign {
        role: String,
        kind: String,
    },
}

/// Decodes the reply (see [`TEXT`]).
pub fn decode(value: Value) -> Forgot {
    match value {
        Value::Int(-1) => Forgot::InUse,
        Value::Array(items) => {
            let text = |v: Option<&Value>| match v {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => "?".to_string(),
            };
            Forgot::Foreign {
                role: text(items.get(1)),
                kind: text(items.get(2)),
            }
        }
        _ => Forgot::Deleted,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(super::TEXT, super::CALLS);
    }
}

//! Forget: delete a free lock's run history and fence counter (`redlock forget`).

use crate::redis::{Call, Lua};

use super::{Key, Need, invocation, on};
use crate::keys::LockKeys;

/// KEYS: lock, mode, queue, fence, history. Returns -1 (nothing deleted) while the
/// name is in use: its lock key is held, or its mode key says a semaphore's slot is
/// held or a fair queue has waiters; else the number of keys deleted.
pub const TEXT: &str = r#"
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then return -1 end
return redis.call('DEL', KEYS[4], KEYS[5])
"#;
pub static FORGET: Lua = Lua::new("5c9e816f760df0a91853fefbcbf0580a1f739ee5", || TEXT);

pub const CALLS: &[Need] = &[
    on("exists", Key::Lock),
    on("exists", Key::Mode),
    on("exists", Key::Queue),
    on("del", Key::Fence),
    on("del", Key::History),
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
        ],
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(super::TEXT, super::CALLS);
    }
}

//! Force release: remove a lock whoever holds it (`release --force`, `--if-dead`).

use redis::Value;

use crate::redis::{Call, Lua};

use super::{Key, Need, WAKE_TTL_MS, invocation, on};
use crate::keys::LockKeys;
use crate::redis::reply::{Held, array, bytes, int, pairs, string};

/// KEYS: lock, meta, waiters, wake, queue. ARGV: wake ttl ms (0: wake nobody on this
/// node). Returns `{0}` free, `{-1, type}` not a lock (left alone), `{1, token, meta
/// pairs, head}` removed (and a waiter woken, as by a release; a fair queue's head is
/// returned to be woken on its own list, '' when the queue is empty).
pub const TEXT: &str = r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return {0} end
if kind ~= 'string' then return {-1, kind} end
local holder = redis.call('GET', KEYS[1])
local meta = {}
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
  redis.call('DEL', KEYS[2])
end
redis.call('DEL', KEYS[1])
local head = ''
if tonumber(ARGV[1]) > 0 then
  local first = redis.pcall('ZRANGE', KEYS[5], 0, 0)
  if type(first) == 'table' and first[1] then
    head = first[1]
  elseif redis.call('EXISTS', KEYS[3]) == 1 then
    if type(redis.pcall('LPUSH', KEYS[4], '1')) == 'number' then
      redis.call('PEXPIRE', KEYS[4], ARGV[1])
    end
  end
end
return {1, holder, meta, head}
"#;
pub static FORCE: Lua = Lua::new("96bade4c58673667174c944ed92bc07db2a976e4", || TEXT);

pub const CALLS: &[Need] = &[
    on("type", Key::Lock),
    on("get", Key::Lock),
    on("type", Key::Meta),
    on("hgetall", Key::Meta),
    on("del", Key::Meta),
    on("del", Key::Lock),
    on("zrange", Key::Queue),
    on("exists", Key::Waiters),
    on("lpush", Key::Wake),
    on("pexpire", Key::Wake),
];

/// The call removing the lock `keys` (a semaphore's slot: the slot's keys, with the
/// name's waiters); `waking`: this node wakes a waiter.
pub fn call(keys: &LockKeys, waking: bool) -> Call {
    let mut call = invocation(
        &FORCE,
        &[
            &keys.lock,
            &keys.meta,
            &keys.waiters,
            &keys.wake,
            &keys.queue,
        ],
    );
    call.arg(if waking { WAKE_TTL_MS } else { 0 });
    call
}

/// What the force release found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceReleased {
    Free,
    /// Removed: the token and metadata that were there (no ttl), and a fair queue's
    /// head to wake.
    Removed {
        held: Held,
        head: Option<String>,
    },
    NotALock(String),
}

/// Decodes the reply; `None` when it has another shape.
pub fn decode(value: Value) -> Option<ForceReleased> {
    let mut items = array(value)?;
    match int(items.next())? {
        0 => Some(ForceReleased::Free),
        -1 => Some(ForceReleased::NotALock(string(items.next()))),
        1 => {
            let token = bytes(items.next());
            let meta = pairs(items.next());
            let head = Some(string(items.next())).filter(|h| !h.is_empty());
            Some(ForceReleased::Removed {
                held: Held {
                    token,
                    pttl_ms: -1,
                    meta,
                },
                head,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_match_the_lua() {
        crate::scripts::tests::assert_calls_match(TEXT, CALLS);
        crate::scripts::tests::assert_keys_declared(TEXT);
    }

    #[test]
    fn replies() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert_eq!(
            decode(Value::Array(vec![Value::Int(0)])),
            Some(ForceReleased::Free)
        );
        let removed = decode(Value::Array(vec![
            Value::Int(1),
            bulk("t"),
            Value::Map(vec![(bulk("pid"), bulk("7"))]),
            bulk(""),
        ]));
        assert_eq!(
            removed,
            Some(ForceReleased::Removed {
                held: Held {
                    token: b"t".to_vec(),
                    pttl_ms: -1,
                    meta: vec![(b"pid".to_vec(), b"7".to_vec())],
                },
                head: None,
            })
        );
    }
}

//! The Lua scripts and the one way they are run.
//!
//! Keys travel only in KEYS and values only in ARGV (no user data is ever spliced into
//! script text), and every script touches only the keys of one lock, which share a hash
//! slot. Scripts run by EVALSHA; on NOSCRIPT (the cache empties on restart, failover,
//! SCRIPT FLUSH or eviction) the client library loads the script and retries once
//! (`redis::Script::invoke_async`). The reply shapes are decoded in [`super::reply`].

use std::sync::LazyLock;

use redis::{Script, ScriptInvocation};

/// A call of `script` on the keys of one lock (ARGV is added by the caller).
pub fn invocation<'a>(script: &'a Script, keys: &[&[u8]]) -> ScriptInvocation<'a> {
    let mut call = script.prepare_invoke();
    for key in keys {
        call.key(*key);
    }
    call
}

/// Acquire. KEYS: lock, meta. ARGV: token, ttl ms, meta field/value pairs.
/// Returns `{1}` acquired, `{2}` already ours (ttl refreshed), `{-1, type}` the lock key
/// is not a lock, `{-2, type}` the metadata key holds something else than a hash,
/// `{0, holder token, pttl, meta pairs}` busy.
///
/// The lock itself is taken with `SET key token NX PX ttl`, exactly as any other client
/// would; the TYPE checks first tell a key of another type ("not a lock", on either
/// key: nothing is touched then) from a busy lock, and the metadata written beside it
/// gets the same ttl.
pub static ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'string' then
  return {-1, kind}
end
local meta_kind = redis.call('TYPE', KEYS[2])['ok']
if meta_kind ~= 'none' and meta_kind ~= 'hash' then
  return {-2, meta_kind}
end
if kind == 'none' then
  redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
  redis.call('DEL', KEYS[2])
  if #ARGV > 2 then
    redis.call('HSET', KEYS[2], unpack(ARGV, 3))
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
  return {1}
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if meta_kind == 'hash' then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
  return {2}
end
local meta = {}
if meta_kind == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {0, holder, redis.call('PTTL', KEYS[1]), meta}
"#,
    )
});

/// Renew (compare-and-pexpire). KEYS: lock, meta. ARGV: token, ttl ms (always > 0:
/// `PEXPIRE key 0` would delete the key). Returns 1 renewed, 0 not ours (never re-SETs).
/// The metadata key is touched only when it is a hash (ours); a value of another type
/// there belongs to someone else.
pub static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
  return 1
end
return 0
"#,
    )
});

/// Release (compare-and-delete). KEYS: lock, meta. ARGV: token, keep ms (0 = delete),
/// release channel. Returns 1 deleted (and published), 2 kept for `--hold-min`, 0 not ours.
///
/// When the lock is no longer ours (deleted or taken over behind our back), our own
/// metadata hash may still be there: it is removed if its `token` field is ours, so a
/// lost lock leaves nothing of ours behind; another holder's metadata is never touched.
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  if redis.call('TYPE', KEYS[2])['ok'] == 'hash' and redis.call('HGET', KEYS[2], 'token') == ARGV[1] then
    redis.call('DEL', KEYS[2])
  end
  return 0
end
local ours_meta = redis.call('TYPE', KEYS[2])['ok'] == 'hash'
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('PEXPIRE', KEYS[1], keep)
  if ours_meta then
    redis.call('PEXPIRE', KEYS[2], keep)
  end
  return 2
end
redis.call('DEL', KEYS[1])
if ours_meta then
  redis.call('DEL', KEYS[2])
end
redis.call('PUBLISH', ARGV[3], 'released')
return 1
"#,
    )
});

/// Force release, whatever the owner. KEYS: lock, meta. ARGV: release channel.
/// Returns `{0}` free, `{-1, type}` not a lock (left alone), `{1, token, meta pairs}` removed.
pub static FORCE_RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
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
redis.call('PUBLISH', ARGV[1], 'released')
return {1, holder, meta}
"#,
    )
});

/// Inspect (read-only). KEYS: lock, meta. Returns `{type}` when not a string, else
/// `{'string', token, pttl, meta pairs}`.
pub static INSPECT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'string' then return {kind} end
local meta = {}
if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
  meta = redis.call('HGETALL', KEYS[2])
end
return {kind, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), meta}
"#,
    )
});

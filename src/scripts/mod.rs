//! The Lua scripts, each family one file holding its whole contract: the Lua text, the
//! typed call that builds its KEYS and ARGV from a lock's keys (the only place their
//! order is written, beside the text that reads them), the decoder of its reply, and
//! `CALLS`, the commands it may call (doctor's ACL check reads these; a unit test per
//! file holds each list to the text).
//!
//! - `acquire`: take a plain lock, a semaphore's slot, a fair queue's turn;
//! - `fence`: raise the fence counters of several nodes to one number (Redlock);
//! - `renew`: compare-and-pexpire;
//! - `started`: a `--once-per` run's command starts (its mark closes the slot);
//! - `release`: compare-and-delete with the run's record, waking one waiter; settle
//!   the name's kind; wake a fair queue's head;
//! - `force`: remove a lock whoever holds it (`release --force`, `--if-dead`);
//! - `waiters`: join and leave the waiters, hand a wake-up on, leave a fair queue;
//! - `inspect`: read a lock;
//! - `forget`: delete a free lock's history and fence counter;
//! - `shared`: take, renew and release a share (`--shared`: readers beside readers,
//!   never beside a plain holder, who is the writer).
//!
//! The rules every script keeps, so that it is safe on every server the tool accepts:
//! - keys travel only in KEYS and values only in ARGV (no user data is ever spliced
//!   into script text), and every key a script touches is in its KEYS, all of one lock,
//!   sharing a hash slot (a key only the server can know, a fair queue's head's wake
//!   list, is returned and touched by a second script: [`release::wake_head`]);
//! - a script that asks the server's `TIME` first calls `redis.replicate_commands()`,
//!   so that servers that replicate scripts verbatim (Redis < 5, or 5 and 6 with
//!   `lua-replicate-commands no`) accept writes after it;
//! - a script that refuses leaves the keys exactly as they were: its checks come
//!   before its writes, but for the lock key's own `SET NX` (the cheapest test of
//!   "free"), which is undone with `DEL` in the same atomic script when a later check
//!   refuses (the key was absent, so the undo restores it exactly);
//! - a key of a type that is not ours is never written: the script refuses and names
//!   it (`{-2, role, type}` from the acquire scripts);
//! - every key written gets an expiry: the lock's with its ttl, the waiters' with their
//!   heartbeat, the name's fence counter and history with `--retain`.
//!
//! Scripts run by EVALSHA, each with its SHA1 written beside its text (a unit test holds
//! the two together: change a text and the test names the new digest); on NOSCRIPT (the
//! cache empties on restart, failover, SCRIPT FLUSH or eviction) the same call is made
//! by EVAL with the text ([`crate::redis::Lua`]).

pub mod acquire;
mod completion;
pub mod fence;
pub mod force;
pub mod forget;
pub mod holders;
pub mod inspect;
pub mod newest;
pub mod queue;
pub mod release;
pub mod renew;
pub mod shared;
pub mod started;
mod taking;
pub mod waiters;

use crate::redis::{Call, Lua};

/// How long a wake-up pushed by a release waits for a waiter to pop it (ms): long
/// enough for a waiter between two tries to find it, short enough that a push for a
/// waiter that died does not linger.
pub const WAKE_TTL_MS: u64 = 10_000;

/// The longest heartbeat a queued waiter may claim: the acquire script caps what it is
/// given, and drops an entry whose deadline lies further than this from now.
pub const FIFO_MAX_BEAT: std::time::Duration = std::time::Duration::from_secs(60);

/// Which of a lock's keys a command touches (doctor checks key permissions too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Lock,
    Meta,
    Waiters,
    Wake,
    Fence,
    History,
    Mode,
    /// A semaphore's slot key other than the first (`…:slot:2`).
    Slot,
    /// A fair queue's keys: the queue, the heartbeats, who waits, a waiter's wake list.
    Queue,
    Beats,
    QueueInfo,
    OwnWake,
    /// A `--once-id` record (`…:once:ID`).
    Once,
    /// Newest wins: the verdicts (who superseded whom), the largest order key started.
    Verdicts,
    Order,
    /// Shared: the readers' leases, the waiting writers, a reader's own metadata.
    Shares,
    Writers,
    ShareMeta,
    /// Shared: the wake-ups handed on behind a waiting writer lately.
    Handed,
    /// The server's data epoch (`<prefix>epoch`, one per server: the lock-delay's).
    Epoch,
}

impl Key {
    /// The role's name in a script's refusal (`{-2, role, type}`).
    pub fn from_role(role: &str) -> Option<Key> {
        Some(match role {
            "lock" => Key::Lock,
            "meta" => Key::Meta,
            "waiters" => Key::Waiters,
            "fence" => Key::Fence,
            "history" => Key::History,
            "mode" => Key::Mode,
            "slot" => Key::Slot,
            "queue" => Key::Queue,
            "beats" => Key::Beats,
            "queue:info" => Key::QueueInfo,
            "once" => Key::Once,
            "verdicts" => Key::Verdicts,
            "order" => Key::Order,
            "shares" => Key::Shares,
            "writers" => Key::Writers,
            "share meta" => Key::ShareMeta,
            "handed" => Key::Handed,
            _ => return None,
        })
    }

    /// The key of the name `keys` that plays this role for one holder: `token`'s own
    /// wake list and share metadata, `once_id`'s record, `slot`'s key (1: the lock key).
    pub fn key_in(
        self,
        keys: &crate::keys::LockKeys,
        token: &str,
        once_id: &str,
        slot: u32,
    ) -> Vec<u8> {
        match self {
            Key::Lock => keys.lock.clone(),
            Key::Meta => keys.meta.clone(),
            Key::Waiters => keys.waiters.clone(),
            Key::Wake => keys.wake.clone(),
            Key::Fence => keys.fence.clone(),
            Key::History => keys.history.clone(),
            Key::Mode => keys.mode.clone(),
            Key::Slot => keys.for_slot(slot).lock,
            Key::Queue => keys.queue.clone(),
            Key::Beats => keys.beats.clone(),
            Key::QueueInfo => keys.queue_info.clone(),
            Key::OwnWake => keys.own_wake(token),
            Key::Once => keys.once(once_id),
            Key::Verdicts => keys.verdicts.clone(),
            Key::Order => keys.order.clone(),
            Key::Shares => keys.shares.clone(),
            Key::Writers => keys.writers.clone(),
            Key::Handed => keys.handed.clone(),
            Key::ShareMeta => keys.share_meta(token),
            Key::Epoch => keys.epoch.clone(),
        }
    }

    /// What redlock keeps in a key of this role, for messages ("not a lock").
    pub fn what(self) -> &'static str {
        match self {
            Key::Lock | Key::Slot => "a lock",
            Key::Meta | Key::ShareMeta => "redlock's metadata",
            Key::Fence => "redlock's fence counter",
            Key::History => "redlock's run history",
            Key::Mode => "redlock's lock kind",
            Key::Waiters | Key::Wake | Key::OwnWake => "redlock's waiters",
            Key::Queue | Key::Beats | Key::QueueInfo => "redlock's fair queue",
            Key::Once => "redlock's run-once record",
            Key::Verdicts | Key::Order => "redlock's newest-wins record",
            Key::Shares | Key::Writers | Key::Handed => "redlock's shared lock",
            Key::Epoch => "redlock's data epoch",
        }
    }
}

/// One command as sent: its name (`script|load` for a subcommand) and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub command: &'static str,
    pub key: Option<Key>,
}

/// A command on one of the lock's keys.
pub const fn on(command: &'static str, key: Key) -> Need {
    Need {
        command,
        key: Some(key),
    }
}

/// A command on no key.
pub const fn bare(command: &'static str) -> Need {
    Need { command, key: None }
}

/// Every script, for doctor: what each calls, and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Acquire,
    SemAcquire,
    FairAcquire,
    RaiseFence,
    Renew,
    Release,
    WakeHead,
    Settle,
    ForceRelease,
    Watch,
    Join,
    Leave,
    HandOn,
    FairLeave,
    Inspect,
    Forget,
    Started,
    NewestAcquire,
    Preempt,
    Notify,
    Share,
    ShareRenew,
    ShareRelease,
}

impl Which {
    pub const ALL: [Which; 23] = [
        Which::Acquire,
        Which::SemAcquire,
        Which::FairAcquire,
        Which::RaiseFence,
        Which::Renew,
        Which::Release,
        Which::WakeHead,
        Which::Settle,
        Which::ForceRelease,
        Which::Watch,
        Which::Join,
        Which::Leave,
        Which::HandOn,
        Which::FairLeave,
        Which::Inspect,
        Which::Forget,
        Which::Started,
        Which::NewestAcquire,
        Which::Preempt,
        Which::Notify,
        Which::Share,
        Which::ShareRenew,
        Which::ShareRelease,
    ];

    /// Every command the script may call, on the key it calls it on.
    pub fn calls(self) -> &'static [Need] {
        match self {
            Which::Acquire => acquire::PLAIN_CALLS,
            Which::SemAcquire => holders::SEMAPHORE_CALLS,
            Which::FairAcquire => queue::FAIR_CALLS,
            Which::RaiseFence => fence::CALLS,
            Which::Renew => renew::CALLS,
            Which::Release => release::CALLS,
            Which::WakeHead => release::WAKE_HEAD_CALLS,
            Which::Settle => release::SETTLE_CALLS,
            Which::ForceRelease => force::CALLS,
            Which::Watch => waiters::WATCH_CALLS,
            Which::Join => waiters::JOIN_CALLS,
            Which::Leave => waiters::LEAVE_CALLS,
            Which::HandOn => waiters::HAND_ON_CALLS,
            Which::FairLeave => waiters::FAIR_LEAVE_CALLS,
            Which::Inspect => inspect::CALLS,
            Which::Forget => forget::CALLS,
            Which::Started => started::CALLS,
            Which::NewestAcquire => newest::NEWEST_CALLS,
            Which::Preempt => newest::PREEMPT_CALLS,
            Which::Notify => newest::NOTIFY_CALLS,
            Which::Share => shared::SHARE_CALLS,
            Which::ShareRenew => shared::RENEW_CALLS,
            Which::ShareRelease => shared::RELEASE_CALLS,
        }
    }

    /// The script itself (its text, and its SHA1 for EVALSHA).
    pub fn script(self) -> &'static Lua {
        match self {
            Which::Acquire => &acquire::PLAIN,
            Which::SemAcquire => &holders::SEMAPHORE,
            Which::FairAcquire => &queue::FAIR,
            Which::RaiseFence => &fence::RAISE,
            Which::Renew => &renew::RENEW,
            Which::Release => &release::RELEASE,
            Which::WakeHead => &release::WAKE_HEAD,
            Which::Settle => &release::SETTLE,
            Which::ForceRelease => &force::FORCE,
            Which::Watch => &waiters::WATCH,
            Which::Join => &waiters::JOIN,
            Which::Leave => &waiters::LEAVE,
            Which::HandOn => &waiters::HAND_ON,
            Which::FairLeave => &waiters::FAIR_LEAVE,
            Which::Inspect => &inspect::INSPECT,
            Which::Forget => &forget::FORGET,
            Which::Started => &started::STARTED,
            Which::NewestAcquire => &newest::NEWEST,
            Which::Preempt => &newest::PREEMPT,
            Which::Notify => &newest::NOTIFY,
            Which::Share => &shared::SHARE,
            Which::ShareRenew => &shared::RENEW,
            Which::ShareRelease => &shared::RELEASE,
        }
    }
}

/// A call of `script` on `keys` (ARGV is added by the typed call that made it).
fn invocation(script: &'static Lua, keys: &[&[u8]]) -> Call {
    let mut call = script.call();
    for key in keys {
        call.key(*key);
    }
    call
}

/// A script's text with the shared Lua spliced in where it says `--NAME--`.
fn splice(text: &str, parts: &[(&str, &str)]) -> String {
    parts.iter().fold(text.to_string(), |text, (name, part)| {
        text.replace(&format!("--{name}--"), part)
    })
}

/// The Lua every script that asks the server's time starts with: effects replication
/// (so that writes may follow `TIME` on servers that replicate scripts verbatim), and
/// the time, asked at most once per script.
const CLOCK: &str = r#"
if redis.replicate_commands then redis.replicate_commands() end
local clock_us = nil
local function now_us()
  if not clock_us then
    local t = redis.call('TIME')
    clock_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clock_us
end
local function now_ms()
  return math.floor(now_us() / 1000)
end
local function int(n)
  return string.format('%d', n)
end
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands a script's text calls (`redis.call('X'` and `redis.pcall('X'`),
    /// lower case, in order of first use.
    pub fn called(text: &str) -> Vec<String> {
        let mut called: Vec<String> = Vec::new();
        for part in text.split("call('").skip(1) {
            let name = part.split('\'').next().unwrap().to_ascii_lowercase();
            if !called.contains(&name) {
                called.push(name);
            }
        }
        called
    }

    /// Holds a script's command list to its text: every command called is listed, and
    /// nothing listed is not called.
    pub fn assert_calls_match(text: &str, calls: &[Need]) {
        let called = called(text);
        let listed: Vec<&str> = calls.iter().map(|n| n.command).collect();
        for name in &called {
            assert!(listed.contains(&name.as_str()), "calls {name}, not listed");
        }
        for name in &listed {
            assert!(called.iter().any(|c| c == name), "lists {name}, not called");
        }
    }

    /// Every key a script's text names is one of its KEYS: no key is computed in Lua.
    pub fn assert_keys_declared(text: &str) {
        for forbidden in ["KEYS[1] ..", "KEYS[4] ..", "KEYS[5] ..", "string.sub(KEYS"] {
            assert!(
                !text.contains(forbidden),
                "a key computed in Lua: {forbidden}"
            );
        }
    }

    #[test]
    fn every_script_has_its_list() {
        for which in Which::ALL {
            assert!(!which.calls().is_empty(), "{which:?}");
        }
    }

    /// The SHA1 written beside each script is its text's: a start sends EVALSHA with
    /// it and never hashes.
    #[test]
    fn every_script_carries_the_sha1_of_its_text() {
        let wrong: Vec<String> = Which::ALL
            .iter()
            .filter_map(|which| {
                let digest = sha1_smol::Sha1::from(which.script().text())
                    .digest()
                    .to_string();
                (which.script().sha() != digest).then(|| format!("{which:?}: {digest}"))
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "texts changed; write their new SHA1 beside them: {wrong:?}"
        );
    }

    #[test]
    fn splicing() {
        assert_eq!(splice("a --X-- b", &[("X", "1")]), "a 1 b");
    }
}

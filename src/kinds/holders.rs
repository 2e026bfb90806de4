//! How a kind's holders hold the name: one choice a kind declares
//! ([`super::Rules::holders`]), from which its holder's keys, renewal, release and the
//! place its holders are listed follow.
//!
//! - by the **key** (plain, `--limit`'s slots, `--fair`, `--supersede`): a holder is
//!   the value of a lock key (a pool's slot: the slot's key), with its metadata beside
//!   it; renewed by compare-and-pexpire, released by compare-and-delete;
//! - by a **share** (`--shared`): the lock key holds the marker, each holder is an entry
//!   among the shares with its own metadata (see `scripts::shared`).

use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::{release, renew, shared};

/// By the key or by a share (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holders {
    Key,
    Shares,
}

impl Holders {
    /// The keys a holder of `slot` holds with `token`: a slot's lock key and metadata;
    /// for a share, the name's lock key and the share's own metadata.
    pub fn held_keys(self, keys: &LockKeys, slot: u32, token: &str) -> LockKeys {
        match self {
            Holders::Key => keys.for_slot(slot),
            Holders::Shares => LockKeys {
                meta: keys.share_meta(token),
                ..keys.clone()
            },
        }
    }

    /// A holder's renewal of `keys` to `ttl_ms`, keeping the mode key (`mode`: its text)
    /// alive.
    pub fn renew_call(self, mode: Option<&str>, keys: &LockKeys, token: &str, ttl_ms: u64) -> Call {
        match self {
            Holders::Key => renew::call(keys, mode, token, ttl_ms),
            Holders::Shares => shared::renew(keys, token, ttl_ms),
        }
    }

    /// A holder's release (`waking`: on the node that wakes a waiter; a share's release
    /// wakes by its own rule).
    pub fn release_call(self, request: &release::Request, waking: bool) -> Call {
        match self {
            Holders::Key => request.call(waking),
            Holders::Shares => shared::release(
                request.keys,
                request.token,
                request.retain_ms,
                request.record.as_ref(),
            ),
        }
    }

    /// Where holders that share one lock key are listed (`None`: the lock key's value
    /// is its one holder).
    pub fn holders_set(self, keys: &LockKeys) -> Option<Vec<u8>> {
        match self {
            Holders::Key => None,
            Holders::Shares => Some(keys.shares.clone()),
        }
    }
}

//! A shared lock (`--shared`): any number of shared holders at once; a run on the name
//! without `--shared` is its exclusive side (a plain run) and never runs beside any
//! holder. While shares are held the lock key holds the marker `shared`, so a plain
//! run's (or another client's) `SET key token NX PX` fails there as anywhere; each
//! share has its own token, lease (an entry of `…:shares`), metadata (`…:meta:<token>`)
//! and fencing number, drawn from the name's one counter. Writer-preferring: once a
//! plain run waits on the name (`…:writers`), new shares wait behind it; the last
//! share's release wakes one waiter, each admitted share the next (see
//! `scripts::shared`). Shared runs do not queue behind each other on one host.

use std::time::Duration;

use super::{Rules, Step, hand_on_set, leave_set, wake_first};
use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::{acquire, release, shared};
use crate::session::Session;

/// Any number of shared holders; the name's plain runs are its exclusive side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shared;

impl Rules for Shared {
    fn key_text(&self) -> Option<String> {
        Some(shared::MODE.to_string())
    }

    fn flags(&self) -> String {
        "a shared lock (--shared; a run without it takes it exclusively)".to_string()
    }

    fn asked(&self) -> String {
        "--shared".to_string()
    }

    fn queue_flag(&self) -> Option<&'static str> {
        None
    }

    /// One lock key, however many share it: no slots.
    fn slots(&self) -> u32 {
        1
    }

    /// No one holder to ask (the preempt script sees the marker).
    fn can_be_asked(&self) -> bool {
        false
    }

    fn acquire_call(&self, r: &acquire::Request) -> Call {
        shared::share(
            r.keys,
            r.token,
            r.ttl_ms,
            r.heartbeat_ms,
            r.known_holder,
            r.retain_ms,
            r.meta,
        )
    }

    fn preempt_request(&self, _who: &str) -> String {
        String::new()
    }

    fn records_who_waits(&self) -> bool {
        false
    }

    fn keeps_place_on_late_grant(&self) -> bool {
        false
    }

    fn wake<'a>(&'a self, s: &'a Session, tokens: &'a [String], _request: &'a str) -> Step<'a> {
        wake_first(s, tokens)
    }

    fn queues_at_arrival(&self) -> bool {
        false
    }

    /// Shares do not exclude each other: a host's shared runs never queue behind one
    /// another.
    fn uses_local_queue(&self) -> bool {
        false
    }

    fn wake_key(&self, keys: &LockKeys, _token: &str) -> Vec<u8> {
        keys.wake.clone()
    }

    fn nap_cap(&self) -> Option<Duration> {
        None
    }

    fn beat_cap(&self) -> Option<Duration> {
        None
    }

    fn leave<'a>(&'a self, s: &'a Session) -> Step<'a> {
        leave_set(s)
    }

    fn hand_on<'a>(&'a self, s: &'a Session) -> Step<'a> {
        hand_on_set(s)
    }

    fn listens_blocking(&self) -> bool {
        false
    }

    fn release_wakes_head(&self) -> bool {
        false
    }

    /// The share release settles the mode key itself (with the last share, when no
    /// writer waits).
    fn in_use_keys(&self, _keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        None
    }

    /// The name's lock key, and this share's own metadata.
    fn held_keys(&self, keys: &LockKeys, _slot: u32, token: &str) -> LockKeys {
        LockKeys {
            meta: keys.share_meta(token),
            ..keys.clone()
        }
    }

    fn renew_call(&self, keys: &LockKeys, token: &str, ttl_ms: u64) -> Call {
        shared::renew(keys, token, ttl_ms)
    }

    fn release_call(&self, request: &release::Request, _waking: bool) -> Call {
        shared::release(
            request.keys,
            request.token,
            request.retain_ms,
            request.record.as_ref(),
        )
    }

    fn holders_set(&self, keys: &LockKeys) -> Option<Vec<u8>> {
        Some(keys.shares.clone())
    }
}

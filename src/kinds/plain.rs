//! A plain lock: one holder, its waiters a set (whoever tries first after a release;
//! one is woken). The lock key is an ordinary `SET key token NX PX` lock, so other
//! clients' locks on the same key exclude it and are excluded by it.

use std::time::Duration;

use super::{Rules, Step, hand_on_set, leave_set, renew_one, wake_first};
use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::{acquire, release};
use crate::session::Session;

/// One holder, waiters in any order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plain;

impl Rules for Plain {
    fn key_text(&self) -> Option<String> {
        None
    }

    fn flags(&self) -> String {
        "a plain lock (no --limit, no --fair)".to_string()
    }

    fn asked(&self) -> String {
        "a plain lock".to_string()
    }

    fn queue_flag(&self) -> Option<&'static str> {
        None
    }

    fn slots(&self) -> u32 {
        1
    }

    fn can_be_asked(&self) -> bool {
        true
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        request.plain()
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

    fn uses_local_queue(&self) -> bool {
        true
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

    fn in_use_keys(&self, _keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        None
    }

    fn held_keys(&self, keys: &LockKeys, slot: u32, _token: &str) -> LockKeys {
        keys.for_slot(slot)
    }

    fn renew_call(&self, keys: &LockKeys, token: &str, ttl_ms: u64) -> Call {
        renew_one(self, keys, token, ttl_ms)
    }

    fn release_call(&self, request: &release::Request, waking: bool) -> Call {
        request.call(waking)
    }

    fn holders_set(&self, _keys: &LockKeys) -> Option<Vec<u8>> {
        None
    }
}

//! A semaphore (`--limit N`): up to N holders, each in its own slot (slot 1 is the
//! name's lock key, slot i > 1 `…:slot:i`, each an ordinary lock); its waiters a set,
//! as a plain lock's. The mode key (`limit N`) lives while any slot is held.

use std::time::Duration;

use super::{Rules, Step, hand_on_set, leave_set, renew_one, wake_first};
use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::{acquire, release};
use crate::session::Session;

/// Up to `limit` holders (> 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub limit: u32,
}

impl Rules for Slots {
    fn key_text(&self) -> Option<String> {
        Some(format!("limit {}", self.limit))
    }

    fn flags(&self) -> String {
        format!(
            "a semaphore of {} slots (--limit {})",
            self.limit, self.limit
        )
    }

    fn asked(&self) -> String {
        format!("--limit {}", self.limit)
    }

    fn queue_flag(&self) -> Option<&'static str> {
        None
    }

    fn slots(&self) -> u32 {
        self.limit
    }

    /// The preempt script refuses a name with no one holder.
    fn can_be_asked(&self) -> bool {
        false
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        request.slots(self.limit)
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

    fn in_use_keys(&self, keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        Some((1..=self.limit).map(|i| keys.for_slot(i).lock).collect())
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

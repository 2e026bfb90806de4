//! A fair queue (`--fair`): one holder, its waiters served first come, first served.
//! A waiter's arrival is its place (a ticket in `…:queue`), it keeps it with a
//! heartbeat (`…:beats`), blocks on its own wake list, and only the head is woken.
//! Newest wins (`newest.rs`) is the same queue and leaves it the same way.

use std::time::Duration;

use redis::Value;

use super::{LockKind, Rules, Step, renew_one, wake_first};
use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::FIFO_MAX_BEAT;
use crate::scripts::{acquire, release, waiters};
use crate::session::Session;

/// The longest a queued waiter blocks between tries: its heartbeat is this plus the
/// time a try may take, and a waiter that died leaves the line that much after its last
/// try.
pub const FIFO_NAP: Duration = Duration::from_secs(5);

/// One holder, waiters first come, first served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fair;

impl Rules for Fair {
    fn key_text(&self) -> Option<String> {
        Some("fair".to_string())
    }

    fn flags(&self) -> String {
        "a fair queue (--fair)".to_string()
    }

    fn asked(&self) -> String {
        "--fair".to_string()
    }

    fn queue_flag(&self) -> Option<&'static str> {
        Some("--fair")
    }

    fn slots(&self) -> u32 {
        1
    }

    fn can_be_asked(&self) -> bool {
        true
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        request.fair()
    }

    fn preempt_request(&self, _who: &str) -> String {
        String::new()
    }

    fn records_who_waits(&self) -> bool {
        true
    }

    fn keeps_place_on_late_grant(&self) -> bool {
        true
    }

    fn wake<'a>(&'a self, s: &'a Session, tokens: &'a [String], _request: &'a str) -> Step<'a> {
        wake_first(s, tokens)
    }

    fn queues_at_arrival(&self) -> bool {
        true
    }

    /// The order is the arrival in Redis: no host-local queue before it.
    fn uses_local_queue(&self) -> bool {
        false
    }

    fn wake_key(&self, keys: &LockKeys, token: &str) -> Vec<u8> {
        keys.own_wake(token)
    }

    fn nap_cap(&self) -> Option<Duration> {
        Some(FIFO_NAP)
    }

    fn beat_cap(&self) -> Option<Duration> {
        Some(FIFO_MAX_BEAT)
    }

    fn leave<'a>(&'a self, s: &'a Session) -> Step<'a> {
        Box::pin(leave_queue(LockKind::Fair(*self), s))
    }

    fn hand_on<'a>(&'a self, s: &'a Session) -> Step<'a> {
        Box::pin(leave_queue(LockKind::Fair(*self), s))
    }

    fn listens_blocking(&self) -> bool {
        false
    }

    fn release_wakes_head(&self) -> bool {
        true
    }

    fn in_use_keys(&self, keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        Some(vec![keys.lock.clone(), keys.queue.clone()])
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

/// Leaves a queue (see `scripts::waiters::FAIR_LEAVE`), waking the next head when this
/// waiter was the head of a free lock; a head that leaves hands its turn on.
pub(super) async fn leave_queue(kind: LockKind, s: &Session) {
    let call = waiters::fair_leave(s.name_keys(), s.token());
    let results = s.nodes().each(|n| n.run::<Value>(&call)).await;
    let head = results
        .into_iter()
        .flatten()
        .find_map(waiters::decode_fair_leave);
    crate::session::wake_head(s.nodes(), s.name_keys(), head.as_deref()).await;
    kind.settle(s).await;
}

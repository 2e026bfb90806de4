//! How a kind's waiters wait: one choice a kind declares ([`super::Rules::waiters`]),
//! from which every question about its waiting follows.
//!
//! - a **set** (plain, `--limit`, `--shared`): whoever tries first after a release takes
//!   the lock; the release wakes one on the name's wake list; a waiter naps as long as
//!   the holder's ttl says and leaves by leaving the set (handing a wake-up on when it
//!   was woken for nothing);
//! - a **queue** (`--fair`, `--supersede`): arrival is a place, recorded with who waits;
//!   each waiter blocks on its own wake list, comes back within [`FIFO_NAP`] with a
//!   heartbeat of at most `FIFO_MAX_BEAT`, keeps its place when a grant came too late,
//!   and the release wakes the head itself; leaving hands the turn on.

use std::time::Duration;

use redis::Value;

use super::{Rules, settle};
use crate::keys::LockKeys;
use crate::scripts::{FIFO_MAX_BEAT, waiters};
use crate::session::Session;

/// The longest a queued waiter blocks between tries: its heartbeat is this plus the
/// time a try may take, and a waiter that died leaves the line that much after its last
/// try.
pub const FIFO_NAP: Duration = Duration::from_secs(5);

/// A set of waiters or a queue (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiters {
    Set,
    Queue,
}

impl Waiters {
    fn is_queue(self) -> bool {
        self == Waiters::Queue
    }

    /// Whether each waiter records who it is (a queue's members, for `status`).
    pub fn records_who_waits(self) -> bool {
        self.is_queue()
    }

    /// Whether a waiter whose grant came too late keeps it for its next try (a queue's
    /// head: taking it back would hand its turn to the next in line).
    pub fn keeps_place_on_late_grant(self) -> bool {
        self.is_queue()
    }

    /// Whether a run that may wait takes its place among the waiters at its first try
    /// (its arrival is its place in a queue), not after a busy one.
    pub fn queues_at_arrival(self) -> bool {
        self.is_queue()
    }

    /// Whether the release script wakes the next one itself (a queue's head, on its own
    /// list); else a release that woke nobody on the primary hands a wake-up on.
    pub fn release_wakes_head(self) -> bool {
        self.is_queue()
    }

    /// The list a waiter blocks on: the name's, or its own in a queue.
    pub fn wake_key(self, keys: &LockKeys, token: &str) -> Vec<u8> {
        match self {
            Waiters::Set => keys.wake.clone(),
            Waiters::Queue => keys.own_wake(token),
        }
    }

    /// A waiter comes back within this nap, or loses its place; `None`: a waiter's nap
    /// follows the holder's ttl.
    pub fn nap_cap(self) -> Option<Duration> {
        self.is_queue().then_some(FIFO_NAP)
    }

    /// The longest heartbeat a waiter registers (`None`: no cap).
    pub fn beat_cap(self) -> Option<Duration> {
        self.is_queue().then_some(FIFO_MAX_BEAT)
    }
}

/// Leaves a queue (see `scripts::waiters::FAIR_LEAVE`), waking the next head when this
/// waiter was the head of a free lock; a head that leaves hands its turn on. Then the
/// kind's mode key is settled.
pub(super) async fn leave_queue<R: Rules + ?Sized>(rules: &R, s: &Session) {
    let call = waiters::fair_leave(s.name_keys(), s.token());
    let results = s.nodes().each(|n| n.run::<Value>(&call)).await;
    let head = results
        .into_iter()
        .flatten()
        .find_map(waiters::decode_fair_leave);
    crate::session::wake_head(s.nodes(), s.name_keys(), head.as_deref()).await;
    settle(rules, s).await;
}

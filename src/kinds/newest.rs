//! Newest wins (`--supersede`): one holder; its waiters the fair queue's sorted set,
//! where a newer waiter supersedes every older one, so at most one waits; newest by
//! arrival, or by `--order-key` (`keyed`). With `--supersede running` a newcomer also
//! asks the holder to stop. A superseded waiter and a holder asked to stop are woken on
//! their own lists at once.

use std::time::Duration;

use super::fair::{FIFO_NAP, leave_queue};
use super::{LockKind, Rules, Step, renew_one};
use crate::keys::LockKeys;
use crate::redis::Call;
use crate::scripts::FIFO_MAX_BEAT;
use crate::scripts::{acquire, newest, release};
use crate::session::Session;

/// One holder, the newest waiter wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Newest {
    /// Newest by `--order-key`, not by arrival.
    pub keyed: bool,
    /// This run's `--order-key`.
    order_key: Option<u64>,
    /// `--supersede running`: a newcomer asks the holder to stop.
    preempts: bool,
}

impl Newest {
    pub fn new(keyed: bool) -> Newest {
        Newest {
            keyed,
            order_key: None,
            preempts: false,
        }
    }

    /// This run's `--order-key`, and whether it asks the holder to stop.
    pub fn ordered(self, order_key: Option<u64>, preempts: bool) -> Newest {
        Newest {
            order_key,
            preempts,
            ..self
        }
    }
}

impl Rules for Newest {
    fn key_text(&self) -> Option<String> {
        Some(
            if self.keyed {
                "newest by key"
            } else {
                "newest"
            }
            .to_string(),
        )
    }

    fn flags(&self) -> String {
        match self.keyed {
            false => "newest wins (--supersede, no --order-key)",
            true => "newest wins by order key (--supersede with --order-key)",
        }
        .to_string()
    }

    fn asked(&self) -> String {
        match self.keyed {
            false => "--supersede",
            true => "--supersede with --order-key",
        }
        .to_string()
    }

    fn queue_flag(&self) -> Option<&'static str> {
        Some("--supersede")
    }

    fn slots(&self) -> u32 {
        1
    }

    fn can_be_asked(&self) -> bool {
        true
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        let text = self.key_text().unwrap_or_default();
        acquire::Request {
            order_key: self.order_key,
            ..*request
        }
        .newest(&text)
    }

    fn preempt_request(&self, who: &str) -> String {
        match self.preempts {
            true => format!("{{\"by\":{who}}}"),
            false => String::new(),
        }
    }

    fn records_who_waits(&self) -> bool {
        true
    }

    fn keeps_place_on_late_grant(&self) -> bool {
        true
    }

    /// Each superseded waiter (it tries again and finds its verdict) and a holder asked
    /// to stop (with the request) is woken on its own list.
    fn wake<'a>(&'a self, s: &'a Session, tokens: &'a [String], request: &'a str) -> Step<'a> {
        Box::pin(async move {
            let Some(primary) = s.nodes().primary() else {
                return;
            };
            let element = if request.is_empty() { "1" } else { request };
            for token in tokens {
                let call = newest::notify(s.name_keys(), token, element);
                let _ = primary.run::<i64>(&call).await;
            }
        })
    }

    fn queues_at_arrival(&self) -> bool {
        true
    }

    /// At most one run waits on the whole name: nothing for a host-local queue to save.
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
        Box::pin(leave_queue(LockKind::Newest(*self), s))
    }

    fn hand_on<'a>(&'a self, s: &'a Session) -> Step<'a> {
        Box::pin(leave_queue(LockKind::Newest(*self), s))
    }

    /// A preempt must reach a newest-wins holder at once, also through a Cluster.
    fn listens_blocking(&self) -> bool {
        true
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

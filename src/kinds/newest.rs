//! Newest wins (`--supersede`): one holder; its waiters the fair queue's sorted set,
//! where a newer waiter supersedes every older one, so at most one waits; newest by
//! arrival, or by `--order-key` (`keyed`). With `--supersede running` a newcomer also
//! asks the holder to stop. A superseded waiter and a holder asked to stop are woken on
//! their own lists at once.

use super::{Holders, Rules, Step, Waiters};
use crate::redis::Call;
use crate::scripts::{acquire, newest};
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
    fn waiters(&self) -> Waiters {
        Waiters::Queue
    }

    fn holders(&self) -> Holders {
        Holders::Key
    }

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

    /// At most one run waits on the whole name: nothing for a host-local queue to save.
    fn uses_local_queue(&self) -> bool {
        false
    }

    /// A preempt must reach a newest-wins holder at once, also through a Cluster.
    fn listens_blocking(&self) -> bool {
        true
    }
}

//! Newest wins (`--supersede`): one holder; its waiters the fair queue's sorted set,
//! where a newer waiter supersedes every older one, so at most one waits; newest by
//! arrival, or by `--order-key` (`keyed`). With `--supersede running` a newcomer also
//! asks the holder to stop. A superseded waiter and a holder asked to stop are woken on
//! their own lists at once.

use super::Step;
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

impl Newest {
    /// The acquire call of this run (`text`: the mode key's, by key or by arrival).
    pub(super) fn acquire_call(&self, request: &acquire::Request, text: &str) -> Call {
        acquire::Request {
            order_key: self.order_key,
            ..*request
        }
        .newest(text)
    }

    /// The request a newcomer with `--supersede running` sends the holder.
    pub(super) fn preempt_request(&self, who: &str) -> String {
        match self.preempts {
            true => format!("{{\"by\":{who}}}"),
            false => String::new(),
        }
    }
}

/// Each superseded waiter (it tries again and finds its verdict) and a holder asked to
/// stop (with the request) is woken on its own list.
pub(super) fn wake<'a>(s: &'a Session, tokens: &'a [String], request: &'a str) -> Step<'a> {
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

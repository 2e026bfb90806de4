//! A semaphore (`--limit N`): up to N holders, each in its own slot (slot 1 is the
//! name's lock key, slot i > 1 `…:slot:i`, each an ordinary lock); its waiters a set,
//! as a plain lock's. The mode key (`limit N`) lives while any slot is held.

use super::{Holders, Rules, Waiters};
use crate::redis::Call;
use crate::scripts::acquire;

/// Up to `limit` holders (> 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub limit: u32,
}

impl Rules for Slots {
    fn waiters(&self) -> Waiters {
        Waiters::Set
    }

    fn holders(&self) -> Holders {
        Holders::Key
    }

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

    fn uses_local_queue(&self) -> bool {
        true
    }
}

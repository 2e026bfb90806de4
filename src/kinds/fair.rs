//! A fair queue (`--fair`): one holder, its waiters served first come, first served.
//! A waiter's arrival is its place (a ticket in `…:queue`), it keeps it with a
//! heartbeat (`…:beats`), blocks on its own wake list, and only the head is woken.
//! Newest wins (`newest.rs`) is the same queue and leaves it the same way.

use super::{Holders, Rules, Waiters};
use crate::redis::Call;
use crate::scripts::acquire;

/// One holder, waiters first come, first served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fair;

impl Rules for Fair {
    fn waiters(&self) -> Waiters {
        Waiters::Queue
    }

    fn holders(&self) -> Holders {
        Holders::Key
    }

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

    /// The order is the arrival in Redis: no host-local queue before it.
    fn uses_local_queue(&self) -> bool {
        false
    }
}

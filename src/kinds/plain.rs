//! A plain lock: one holder, its waiters a set (whoever tries first after a release;
//! one is woken). The lock key is an ordinary `SET key token NX PX` lock, so other
//! clients' locks on the same key exclude it and are excluded by it.

use super::{Holders, Rules, Waiters};
use crate::redis::Call;
use crate::scripts::acquire;

/// One holder, waiters in any order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plain;

impl Rules for Plain {
    fn waiters(&self) -> Waiters {
        Waiters::Set
    }

    fn holders(&self) -> Holders {
        Holders::Key
    }

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

    fn uses_local_queue(&self) -> bool {
        true
    }
}

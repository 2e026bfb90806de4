//! A fair queue (`--fair`): one holder, its waiters served first come, first served.
//! A waiter's arrival is its place (a ticket in `…:queue`), it keeps it with a
//! heartbeat (`…:beats`), blocks on its own wake list, and only the head is woken.
//! Newest wins (`newest.rs`) is the same queue and leaves it the same way.

use super::{LockKind, Rules};
use crate::redis::Call;
use crate::scripts::acquire;

/// One holder, waiters first come, first served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fair;

impl Rules for Fair {
    fn kind(&self) -> LockKind {
        LockKind::Fair(*self)
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        request.fair()
    }
}

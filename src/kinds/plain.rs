//! A plain lock: one holder, its waiters a set (whoever tries first after a release;
//! one is woken). The lock key is an ordinary `SET key token NX PX` lock, so other
//! clients' locks on the same key exclude it and are excluded by it.

use super::{LockKind, Rules};
use crate::redis::Call;
use crate::scripts::acquire;

/// One holder, waiters in any order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plain;

impl Rules for Plain {
    fn kind(&self) -> LockKind {
        LockKind::Plain(*self)
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        request.plain()
    }
}

//! A semaphore (`--limit N`): up to N holders, each in its own slot (slot 1 is the
//! name's lock key, slot i > 1 `…:slot:i`, each an ordinary lock); its waiters a set,
//! as a plain lock's. The mode key (`limit N`) lives while any slot is held.

/// Up to `limit` holders (> 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub limit: u32,
}

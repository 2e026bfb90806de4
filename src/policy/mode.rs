//! The mode a run asks for on its name: which kind of lock it is (decided once from
//! the flags, `Policy::from_flags`). What each kind does is in `kinds/`, one file per
//! kind; this is only the choice, so that the layers below the kinds can carry it.

/// Which kind of lock a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// One holder, waiters in any order.
    #[default]
    Plain,
    /// Up to this many holders (> 1), each in its own slot (`--limit`).
    Slots(u32),
    /// One holder, waiters first come, first served (`--fair`).
    Fair,
    /// One holder, the newest waiter wins (`--supersede`; by `--order-key` when
    /// `keyed`).
    Newest { keyed: bool },
    /// Any number of shared holders (`--shared`); the name's plain runs are its
    /// exclusive side.
    Shared,
}

impl Mode {
    /// Up to `limit` holders (`--limit`; 1 is a plain lock).
    pub fn limit(limit: u32) -> Mode {
        if limit > 1 {
            Mode::Slots(limit)
        } else {
            Mode::Plain
        }
    }
}

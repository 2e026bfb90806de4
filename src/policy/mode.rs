//! The mode of a name: what every run on it must agree on — who may hold it at once
//! ([`Holders`]) and in which order its waiters are served ([`Order`]).
//!
//! Decided once from the flags (`policy::Policy::from_flags`) and kept on the name in its
//! mode key (`P{N}:mode`, see `keys.rs`) while a non-plain lock is held or waited for, so
//! that runs from other hosts and other versions agree. Nothing outside this module
//! matches on a whole mode: each axis answers for itself through its methods, so a new
//! variant is a compiler error at every place that must answer for it.

use std::time::Duration;

use crate::keys::LockKeys;

/// Who may hold a name at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Holders {
    /// One holder.
    #[default]
    Exclusive,
    /// Up to this many holders (> 1), each in its own slot (`--limit`).
    Slots(u32),
}

/// In which order a name's waiters are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Whoever tries first after a release (the waiters are a set, one is woken).
    #[default]
    Any,
    /// First come, first served (`--fair`): a queue with tickets and heartbeats.
    Fifo,
    /// The newest wins (`--supersede`): the same queue, where a newer waiter supersedes
    /// every older one, so at most one waits; newest by arrival, or by `--order-key`
    /// (`keyed`).
    Newest { keyed: bool },
}

/// The mode of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mode {
    pub holders: Holders,
    pub order: Order,
}

/// The longest a queued waiter blocks between tries: its heartbeat is this plus the
/// time a try may take, and a waiter that died leaves the line that much after its last
/// try.
const FIFO_NAP: Duration = Duration::from_secs(5);

/// The longest heartbeat a queued waiter may claim: the acquire script caps what it is
/// given, and drops an entry whose deadline lies further than this from now.
pub const FIFO_MAX_BEAT: Duration = Duration::from_secs(60);

impl Mode {
    /// One holder, waiters in any order: a plain lock.
    pub const PLAIN: Mode = Mode {
        holders: Holders::Exclusive,
        order: Order::Any,
    };

    /// One holder, waiters first come, first served (`--fair`).
    pub const FAIR: Mode = Mode {
        holders: Holders::Exclusive,
        order: Order::Fifo,
    };

    /// One holder, the newest waiter wins (`--supersede`; by `--order-key` when
    /// `keyed`).
    pub const fn newest(keyed: bool) -> Mode {
        Mode {
            holders: Holders::Exclusive,
            order: Order::Newest { keyed },
        }
    }

    /// Up to `limit` holders (`--limit`; 1 is a plain lock).
    pub fn limit(limit: u32) -> Mode {
        Mode {
            holders: if limit > 1 {
                Holders::Slots(limit)
            } else {
                Holders::Exclusive
            },
            order: Order::Any,
        }
    }

    /// How many runs may hold the name at once.
    pub fn slots(self) -> u32 {
        self.holders.count()
    }

    /// The mode a mode key's value names (`limit L`, `fair`; `plain`, which scripts
    /// answer for a plain holder); `None` for anything else. The one parser of the mode
    /// key's text.
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "fair" => Some(Mode::FAIR),
            "plain" => Some(Mode::PLAIN),
            "newest" => Some(Mode::newest(false)),
            "newest by key" => Some(Mode::newest(true)),
            _ => {
                let limit: u32 = text.strip_prefix("limit ")?.parse().ok()?;
                (limit > 1).then(|| Mode::limit(limit))
            }
        }
    }

    /// The mode key's value (`None`: a plain lock has none).
    pub fn key_text(self) -> Option<String> {
        match (self.holders, self.order) {
            (Holders::Exclusive, Order::Any) => None,
            (Holders::Slots(limit), _) => Some(format!("limit {limit}")),
            (Holders::Exclusive, Order::Fifo) => Some("fair".to_string()),
            (Holders::Exclusive, Order::Newest { keyed: false }) => Some("newest".to_string()),
            (Holders::Exclusive, Order::Newest { keyed: true }) => {
                Some("newest by key".to_string())
            }
        }
    }

    /// How the mode reads in messages: what a run asks for to get it.
    pub fn flags(self) -> String {
        match (self.holders, self.order) {
            (Holders::Exclusive, Order::Any) => "a plain lock (no --limit, no --fair)".to_string(),
            (Holders::Slots(limit), _) => {
                format!("a semaphore of {limit} slots (--limit {limit})")
            }
            (Holders::Exclusive, Order::Fifo) => "a fair queue (--fair)".to_string(),
            (Holders::Exclusive, Order::Newest { keyed: false }) => {
                "newest wins (--supersede, no --order-key)".to_string()
            }
            (Holders::Exclusive, Order::Newest { keyed: true }) => {
                "newest wins by order key (--supersede with --order-key)".to_string()
            }
        }
    }

    /// How a run that asked for this mode is named in a refusal.
    pub fn asked(self) -> String {
        match (self.holders, self.order) {
            (Holders::Exclusive, Order::Any) => "a plain lock".to_string(),
            (Holders::Slots(limit), _) => format!("--limit {limit}"),
            (Holders::Exclusive, Order::Fifo) => "--fair".to_string(),
            (Holders::Exclusive, Order::Newest { keyed: false }) => "--supersede".to_string(),
            (Holders::Exclusive, Order::Newest { keyed: true }) => {
                "--supersede with --order-key".to_string()
            }
        }
    }

    /// The one place a layer above picks its thing for a whole mode (the acquire script
    /// a mode runs): one argument per kind of name, so that a new kind is a new argument
    /// every caller must answer.
    pub fn choose<T>(
        self,
        plain: impl FnOnce() -> T,
        slots: impl FnOnce(u32) -> T,
        queue: impl FnOnce() -> T,
        newest: impl FnOnce() -> T,
    ) -> T {
        match (self.holders, self.order) {
            (Holders::Exclusive, Order::Any) => plain(),
            (Holders::Slots(limit), _) => slots(limit),
            (Holders::Exclusive, Order::Fifo) => queue(),
            (Holders::Exclusive, Order::Newest { .. }) => newest(),
        }
    }

    /// The keys whose presence keeps the mode key alive: every slot of a semaphore, a
    /// fair queue's lock and queue; `None` for a plain lock, which has no mode key.
    pub fn in_use_keys(self, keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        match (self.holders, self.order) {
            (Holders::Exclusive, Order::Any) => None,
            (Holders::Slots(limit), _) => {
                Some((1..=limit).map(|i| keys.for_slot(i).lock).collect())
            }
            (Holders::Exclusive, Order::Fifo | Order::Newest { .. }) => {
                Some(vec![keys.lock.clone(), keys.queue.clone()])
            }
        }
    }
}

impl Holders {
    /// How many runs may hold at once.
    pub fn count(self) -> u32 {
        match self {
            Holders::Exclusive => 1,
            Holders::Slots(n) => n,
        }
    }

    /// The slot count the acquire script takes (`None`: one holder, no slots).
    pub fn slots(self) -> Option<u32> {
        match self {
            Holders::Exclusive => None,
            Holders::Slots(n) => Some(n),
        }
    }
}

impl Order {
    /// Whether waiters are a queue (first come, first served, or newest wins), not a
    /// set.
    pub fn is_queue(self) -> bool {
        matches!(self, Order::Fifo | Order::Newest { .. })
    }

    /// Whether a newer waiter supersedes the older ones (`--supersede`).
    pub fn supersedes(self) -> bool {
        matches!(self, Order::Newest { .. })
    }

    /// Whether a run that may wait takes its place among the waiters at its first try
    /// (its arrival is its place in a queue), not after a busy one.
    pub fn queues_at_arrival(self) -> bool {
        self.is_queue()
    }

    /// Whether the runs of one host first queue among themselves (the host-local queue)
    /// before Redis: not for a queue, whose order is the arrival in Redis (and where
    /// newest wins, at most one run waits on the whole name: nothing to save).
    pub fn uses_local_queue(self) -> bool {
        !self.is_queue()
    }

    /// Whether a waiter whose grant came too late keeps it for its next try (a queue's
    /// head: taking it back would hand its turn to the next in line) instead of taking
    /// it back at once.
    pub fn keeps_place_on_late_grant(self) -> bool {
        self.is_queue()
    }

    /// Whether each waiter records who it is (a queue's members, for `status`).
    pub fn records_who_waits(self) -> bool {
        self.is_queue()
    }

    /// Whether the release script wakes the next one itself (a queue's head, on its
    /// own list) — else a release that woke nobody on the primary hands a wake-up on.
    pub fn release_wakes_head(self) -> bool {
        self.is_queue()
    }

    /// The list a waiter blocks on: a queue's waiter its own (only the head is woken),
    /// others the name's shared one.
    pub fn wake_key(self, keys: &LockKeys, token: &str) -> Vec<u8> {
        match self {
            Order::Any => keys.wake.clone(),
            Order::Fifo | Order::Newest { .. } => keys.own_wake(token),
        }
    }

    /// A queued waiter comes back within this nap, or loses its place; `None`: a
    /// waiter's nap follows the holder's ttl.
    pub fn nap_cap(self) -> Option<Duration> {
        match self {
            Order::Any => None,
            Order::Fifo | Order::Newest { .. } => Some(FIFO_NAP),
        }
    }

    /// The longest heartbeat a waiter registers (`None`: no cap).
    pub fn beat_cap(self) -> Option<Duration> {
        match self {
            Order::Any => None,
            Order::Fifo | Order::Newest { .. } => Some(FIFO_MAX_BEAT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_key_text_round_trips() {
        for mode in [
            Mode::PLAIN,
            Mode::FAIR,
            Mode::limit(2),
            Mode::limit(100),
            Mode::newest(false),
            Mode::newest(true),
        ] {
            let text = mode.key_text().unwrap_or_else(|| "plain".to_string());
            assert_eq!(Mode::parse(&text), Some(mode), "{text}");
        }
        assert_eq!(Mode::limit(1), Mode::PLAIN);
        for bad in [
            "",
            "limit",
            "limit 1",
            "limit x",
            "FAIR",
            "NEWEST",
            "newest by",
        ] {
            assert_eq!(Mode::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn texts_are_todays() {
        assert_eq!(Mode::limit(3).key_text().as_deref(), Some("limit 3"));
        assert_eq!(Mode::FAIR.key_text().as_deref(), Some("fair"));
        assert_eq!(Mode::PLAIN.key_text(), None);
        assert_eq!(Mode::limit(3).asked(), "--limit 3");
        assert_eq!(Mode::FAIR.flags(), "a fair queue (--fair)");
    }
}

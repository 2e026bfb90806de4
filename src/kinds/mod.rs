//! The kinds of lock, as one enum ([`LockKind`]) with one table of every kind's facts
//! ([`LockKind::facts`]), over the session every kind shares (`session.rs`):
//!
//! - plain: one holder, its waiters a set (whoever tries first after a release; one is
//!   woken); the lock key is an ordinary `SET key token NX PX` lock, so other clients'
//!   locks on the same key exclude it and are excluded by it;
//! - [`slots`]: up to N holders (`--limit N`), each in its own slot;
//! - fair: one holder, waiters first come, first served (`--fair`): a waiter's arrival is
//!   its place (a ticket in `…:queue`), kept with a heartbeat (`…:beats`); it blocks on
//!   its own wake list, and only the head is woken;
//! - [`newest`]: one holder, the newest waiter wins (`--supersede`): the fair queue,
//!   where a newer waiter supersedes the older ones;
//! - [`shared`]: any number of shared holders (`--shared`), the name's plain runs its
//!   exclusive side.
//!
//! A kind is chosen once from what the run asked for ([`LockKind::of`]) or from the name's
//! mode key ([`LockKind::parse`]). Every kind's facts stand in one table: its two choices
//! — how its waiters wait ([`Waiters`]: a set or a queue, `waiters.rs`), how its
//! holders hold ([`Holders`]: by the key or by a share, `holders.rs`) — its slots,
//! whether its holder can be asked to stop, whether a host's runs queue first, its
//! words; every question of [`Rules`] is answered once from them. Only what a kind does
//! that no other does has a file: a semaphore's slots, newest-wins' wake-ups and
//! preempt request, the shares' acquire call. A new kind is a compiler error until it
//! has its row in every match here; nothing outside this module asks which kind it
//! holds.

pub mod holders;
pub mod newest;
pub mod shared;
pub mod slots;
pub mod waiters;

pub use holders::Holders;
pub use waiters::Waiters;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::Error;
use crate::keys::LockKeys;
use crate::policy::Mode;
use crate::redis::Call;
use crate::scripts::{acquire, release};
use crate::session::{Released, Session};

/// A step a kind takes on the nodes (best effort: it reports nothing).
pub type Step<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// What a kind of lock decides ([`LockKind`] answers it): which kind it is and its
/// acquire call; every other question is answered here, once, from its row of facts
/// and its two choices.
pub trait Rules {
    /// Which kind this is (its row of [`LockKind::facts`]).
    fn kind(&self) -> LockKind;
    /// The acquire script's call for `request`.
    fn acquire_call(&self, request: &acquire::Request) -> Call;

    /// The mode key's value while the name is in use as this kind (`None`: a plain
    /// lock has none).
    fn key_text(&self) -> Option<String> {
        self.kind().words().0
    }
    /// How the kind reads in messages: what a run asks for to get it.
    fn flags(&self) -> String {
        self.kind().words().1
    }
    /// How a run that asked for this kind is named in a refusal.
    fn asked(&self) -> String {
        self.kind().words().2
    }
    /// The flag `status` names a queue's waiters by (`None`: the waiters are a set).
    fn queue_flag(&self) -> Option<&'static str> {
        self.kind().facts().queue_flag
    }
    /// How many runs may hold the name at once.
    fn slots(&self) -> u32 {
        self.kind().facts().slots
    }
    /// Whether `redlock preempt` can ask a holder to stop (it needs one holder).
    fn can_be_asked(&self) -> bool {
        self.kind().facts().can_be_asked
    }
    /// Whether the runs of one host first queue among themselves (the host-local
    /// queue) before Redis.
    fn uses_local_queue(&self) -> bool {
        self.kind().facts().local_queue
    }
    /// How its waiters wait: a set or a queue (the one choice every question about
    /// waiting follows from, see [`Waiters`]).
    fn waiters(&self) -> Waiters {
        self.kind().facts().waiters
    }
    /// How its holders hold the name: by the lock key or by a share (see [`Holders`]).
    fn holders(&self) -> Holders {
        self.kind().facts().holders
    }

    // What only newest-wins (`--supersede`) does otherwise: a newcomer that supersedes
    // waiters and may ask the holder to stop. Every other kind asks no one to stop and
    // wakes only the head an acquire named.

    /// The request that asks the holder to stop, from `who` asks ('' for none).
    fn preempt_request(&self, _who: &str) -> String {
        String::new()
    }
    /// Wakes the runs an acquire said to (`request`: the preempt request, if any).
    fn wake<'a>(&'a self, s: &'a Session, tokens: &'a [String], _request: &'a str) -> Step<'a> {
        wake_first(s, tokens)
    }
    /// Whether a holder listening for a preempt through a Cluster pops on a blocking
    /// connection of its own (else it only sleeps between renewals).
    fn listens_blocking(&self) -> bool {
        false
    }

    // What follows from the two choices: answered here, once for every kind.

    /// Whether each waiter records who it is (a queue's members, for `status`).
    fn records_who_waits(&self) -> bool {
        self.waiters().records_who_waits()
    }
    /// Whether a waiter whose grant came too late keeps it for its next try.
    fn keeps_place_on_late_grant(&self) -> bool {
        self.waiters().keeps_place_on_late_grant()
    }
    /// Whether a run that may wait takes its place among the waiters at its first try.
    fn queues_at_arrival(&self) -> bool {
        self.waiters().queues_at_arrival()
    }
    /// The list a waiter blocks on.
    fn wake_key(&self, keys: &LockKeys, token: &str) -> Vec<u8> {
        self.waiters().wake_key(keys, token)
    }
    /// A waiter comes back within this nap (`None`: it follows the holder's ttl).
    fn nap_cap(&self) -> Option<Duration> {
        self.waiters().nap_cap()
    }
    /// The longest heartbeat a waiter registers (`None`: no cap).
    fn beat_cap(&self) -> Option<Duration> {
        self.waiters().beat_cap()
    }
    /// Whether the release script wakes the next one itself (a queue's head).
    fn release_wakes_head(&self) -> bool {
        self.waiters().release_wakes_head()
    }
    /// Leaves the waiters (a waiter that gives up).
    fn leave<'a>(&'a self, s: &'a Session) -> Step<'a> {
        match self.waiters() {
            Waiters::Set => leave_set(s),
            Waiters::Queue => Box::pin(waiters::leave_queue(self, s)),
        }
    }
    /// Leaves the waiters, handing a wake-up on to whoever else waits (a queue's
    /// leave hands the turn on).
    fn hand_on<'a>(&'a self, s: &'a Session) -> Step<'a> {
        match self.waiters() {
            Waiters::Set => hand_on_set(s),
            Waiters::Queue => Box::pin(waiters::leave_queue(self, s)),
        }
    }
    /// The keys a holder of `slot` holds with `token`.
    fn held_keys(&self, keys: &LockKeys, slot: u32, token: &str) -> LockKeys {
        self.holders().held_keys(keys, slot, token)
    }
    /// A holder's renewal of `keys` to `ttl_ms`, keeping the mode key alive.
    fn renew_call(&self, keys: &LockKeys, token: &str, ttl_ms: u64) -> Call {
        let mode = self.key_text();
        self.holders()
            .renew_call(mode.as_deref(), keys, token, ttl_ms)
    }
    /// A holder's release (`waking`: on the node that wakes a waiter).
    fn release_call(&self, request: &release::Request, waking: bool) -> Call {
        self.holders().release_call(request, waking)
    }
    /// Where the kind lists holders that share one lock key (`None`: the lock key's
    /// value is its one holder).
    fn holders_set(&self, keys: &LockKeys) -> Option<Vec<u8>> {
        self.holders().holders_set(keys)
    }
    /// The keys whose presence keeps the mode key alive (`None`: no mode key, or a
    /// share's, which the share release settles itself): every slot's lock key, and a
    /// queue's waiters.
    fn in_use_keys(&self, keys: &LockKeys) -> Option<Vec<Vec<u8>>> {
        if self.key_text().is_none() || self.holders() == Holders::Shares {
            return None;
        }
        let slots = (1..=self.slots()).map(|i| keys.for_slot(i).lock);
        let queue = (self.waiters() == Waiters::Queue).then(|| keys.queue.clone());
        Some(slots.chain(queue).collect())
    }
}

/// What a kind is, in facts: its two choices, how many hold it, whether its holder can
/// be asked to stop, whether a host's runs queue locally first. Its words (messages,
/// the mode key) are [`LockKind::words`]: a facts lookup allocates nothing.
pub struct Facts {
    pub waiters: Waiters,
    pub holders: Holders,
    pub slots: u32,
    pub can_be_asked: bool,
    pub local_queue: bool,
    pub queue_flag: Option<&'static str>,
}

/// The kind of lock a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockKind {
    #[default]
    Plain,
    Slots(slots::Slots),
    Fair,
    Newest(newest::Newest),
    Shared,
}

impl LockKind {
    /// The kind a run asked for.
    pub fn of(mode: Mode) -> LockKind {
        match mode {
            Mode::Plain => LockKind::Plain,
            Mode::Slots(limit) => LockKind::Slots(slots::Slots { limit }),
            Mode::Fair => LockKind::Fair,
            Mode::Newest { keyed } => LockKind::Newest(newest::Newest::new(keyed)),
            Mode::Shared => LockKind::Shared,
        }
    }

    /// The kind a mode key's value names (`plain`, which scripts answer for a plain
    /// holder, too); `None` for anything else. The one parser of the mode key's text.
    pub fn parse(text: &str) -> Option<LockKind> {
        let kind = match text {
            "plain" => LockKind::of(Mode::Plain),
            "fair" => LockKind::of(Mode::Fair),
            "newest" => LockKind::of(Mode::Newest { keyed: false }),
            "newest by key" => LockKind::of(Mode::Newest { keyed: true }),
            crate::scripts::shared::MODE => LockKind::of(Mode::Shared),
            _ => {
                let limit: u32 = text.strip_prefix("limit ")?.parse().ok()?;
                return (limit > 1).then(|| LockKind::of(Mode::Slots(limit)));
            }
        };
        Some(kind)
    }

    /// Every kind's facts, one row each (a new kind is a compiler error here until it
    /// has its row):
    /// - a plain lock: one holder by the key, waiters a set, a host's runs queue first;
    /// - a semaphore: `limit` holders, each a slot's key; no one holder to ask (the
    ///   preempt script refuses it);
    /// - a fair queue and newest-wins: one holder, waiters a queue whose order is the
    ///   arrival in Redis (no host-local queue before it; newest-wins has at most one
    ///   waiter on the whole name, nothing for a local queue to save);
    /// - shared: any number of shares, one lock key (no slots); no one holder to ask
    ///   (the preempt script sees the marker); shares do not exclude each other, so a
    ///   host's shared runs never queue behind one another.
    pub fn facts(&self) -> Facts {
        use Holders::{Key, Shares};
        use Waiters::{Queue, Set};
        let (waiters, holders, slots, can_be_asked, local_queue, queue_flag) = match *self {
            LockKind::Plain => (Set, Key, 1, true, true, None),
            LockKind::Slots(k) => (Set, Key, k.limit, false, true, None),
            LockKind::Fair => (Queue, Key, 1, true, false, Some("--fair")),
            LockKind::Newest(_) => (Queue, Key, 1, true, false, Some("--supersede")),
            LockKind::Shared => (Set, Shares, 1, false, false, None),
        };
        Facts {
            waiters,
            holders,
            slots,
            can_be_asked,
            local_queue,
            queue_flag,
        }
    }

    /// The mode key's text, how the kind reads in messages, and how a run that asked
    /// for it is named in a refusal.
    pub fn words(&self) -> (Option<String>, String, String) {
        let (key, flags, asked): (Option<String>, String, String) = match *self {
            LockKind::Plain => (
                None,
                "a plain lock (no --limit, no --fair)".into(),
                "a plain lock".into(),
            ),
            LockKind::Slots(k) => (
                Some(format!("limit {}", k.limit)),
                format!("a semaphore of {0} slots (--limit {0})", k.limit),
                format!("--limit {}", k.limit),
            ),
            LockKind::Fair => (
                Some("fair".into()),
                "a fair queue (--fair)".into(),
                "--fair".into(),
            ),
            LockKind::Newest(k) if k.keyed => (
                Some("newest by key".into()),
                "newest wins by order key (--supersede with --order-key)".into(),
                "--supersede with --order-key".into(),
            ),
            LockKind::Newest(_) => (
                Some("newest".into()),
                "newest wins (--supersede, no --order-key)".into(),
                "--supersede".into(),
            ),
            LockKind::Shared => (
                Some(crate::scripts::shared::MODE.into()),
                "a shared lock (--shared; a run without it takes it exclusively)".into(),
                "--shared".into(),
            ),
        };
        (key, flags, asked)
    }

    /// What this kind decides.
    pub fn rules(&self) -> &dyn Rules {
        self
    }

    /// Newest wins: this run's `--order-key`, and whether it asks the holder to stop
    /// (`--supersede running`); other kinds have neither.
    pub fn ordered(self, order_key: Option<u64>, preempts: bool) -> LockKind {
        match self {
            LockKind::Newest(k) => LockKind::Newest(k.ordered(order_key, preempts)),
            other => other,
        }
    }

    /// Removes the mode key once nothing keeps it in use (best effort: it expires a
    /// ttl or a heartbeat after its last use anyway). Nothing for a kind without one.
    pub async fn settle(&self, s: &Session) {
        settle(self.rules(), s).await;
    }

    /// What follows a release round: the head it named is woken; over several nodes a
    /// holder that did not hold the primary (where waiters wait) hands a wake-up on;
    /// then the mode key is settled.
    pub async fn after_release(&self, s: &Session, released: &Released) {
        crate::session::wake_head(s.nodes(), s.name_keys(), released.head.as_deref()).await;
        let deleted = released.outcome == crate::session::Release::Deleted;
        if deleted && !released.woken && !self.rules().release_wakes_head() {
            crate::session::hand_on(s.nodes(), s.name_keys(), s.token()).await;
        }
        self.settle(s).await;
    }

    /// Where a holder of this kind holds the name with `token` (`slot`: a pool's slot,
    /// else 1): the value of the lock key it holds, and for a shared name its entry
    /// among the shares too (a writer's token in the lock key holds it as well). The
    /// nested-run check asks it of every name.
    pub fn holding(&self, keys: &LockKeys, slot: u32, token: &str) -> crate::session::Holding {
        let rules = self.rules();
        crate::session::Holding {
            key: rules.held_keys(keys, slot, token).lock,
            shares: rules.holders_set(keys),
        }
    }

    /// The usage error of a run of this kind on a name in use as another (`mode`: the
    /// mode key's value, or `plain`).
    pub fn other_kind(&self, keys: &LockKeys, mode: &str) -> Error {
        let name = keys.display_name();
        let is = match LockKind::parse(mode) {
            Some(kind) => kind.rules().flags(),
            None => format!("a lock of another kind ({mode:?})"),
        };
        let asked = self.rules().asked();
        Error::usage(format!(
            "lock {name} is in use as {is}, and this run asked for {asked}; every run on a name must ask for the same kind (the name's kind is kept until a ttl after its last holder or waiter)"
        ))
    }
}

/// Removes the mode key of the kind `rules` once nothing keeps it in use (see
/// [`LockKind::settle`]).
async fn settle<R: Rules + ?Sized>(rules: &R, s: &Session) {
    if let (Some(text), Some(in_use)) = (rules.key_text(), rules.in_use_keys(s.name_keys())) {
        let call = release::settle(s.name_keys(), &text, &in_use);
        let _ = s.nodes().each(|n| n.run::<i64>(&call)).await;
    }
}

impl Rules for LockKind {
    fn kind(&self) -> LockKind {
        *self
    }

    fn acquire_call(&self, request: &acquire::Request) -> Call {
        match self {
            LockKind::Plain => request.plain(),
            LockKind::Slots(k) => request.slots(k.limit),
            LockKind::Fair => request.fair(),
            LockKind::Newest(k) => k.acquire_call(request, &self.key_text().unwrap_or_default()),
            LockKind::Shared => shared::acquire_call(request),
        }
    }

    fn preempt_request(&self, who: &str) -> String {
        match self {
            LockKind::Newest(k) => k.preempt_request(who),
            _ => String::new(),
        }
    }

    fn wake<'a>(&'a self, s: &'a Session, tokens: &'a [String], request: &'a str) -> Step<'a> {
        match self {
            LockKind::Newest(_) => newest::wake(s, tokens, request),
            _ => wake_first(s, tokens),
        }
    }

    /// A preempt must reach a newest-wins holder at once, also through a Cluster.
    fn listens_blocking(&self) -> bool {
        matches!(self, LockKind::Newest(_))
    }
}

/// A waiter of the name's set leaves it (see `session::leave_waiters`).
fn leave_set(s: &Session) -> Step<'_> {
    Box::pin(crate::session::leave_waiters(
        s.nodes(),
        s.name_keys(),
        s.token(),
    ))
}

/// A waiter of the name's set leaves it handing a wake-up on (`session::hand_on`).
fn hand_on_set(s: &Session) -> Step<'_> {
    Box::pin(crate::session::hand_on(s.nodes(), s.name_keys(), s.token()))
}

/// Wakes the head an acquire named (a queue's turn has come; nothing for a set).
fn wake_first<'a>(s: &'a Session, tokens: &'a [String]) -> Step<'a> {
    let head = tokens.first().map(String::as_str);
    Box::pin(crate::session::wake_head(s.nodes(), s.name_keys(), head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_key_text_round_trips() {
        for mode in [
            Mode::Plain,
            Mode::Fair,
            Mode::Slots(2),
            Mode::Slots(100),
            Mode::Newest { keyed: false },
            Mode::Newest { keyed: true },
            Mode::Shared,
        ] {
            let kind = LockKind::of(mode);
            let text = kind.rules().key_text().unwrap_or_else(|| "plain".into());
            assert_eq!(LockKind::parse(&text), Some(kind), "{text}");
        }
        assert_eq!(Mode::limit(1), Mode::Plain);
        for bad in [
            "",
            "limit",
            "limit 1",
            "limit x",
            "FAIR",
            "NEWEST",
            "newest by",
        ] {
            assert_eq!(LockKind::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn texts_are_todays() {
        let rules = |mode| LockKind::of(mode).rules().key_text();
        assert_eq!(rules(Mode::Slots(3)).as_deref(), Some("limit 3"));
        assert_eq!(rules(Mode::Fair).as_deref(), Some("fair"));
        assert_eq!(rules(Mode::Plain), None);
        assert_eq!(LockKind::of(Mode::Slots(3)).rules().asked(), "--limit 3");
        assert_eq!(
            LockKind::of(Mode::Fair).rules().flags(),
            "a fair queue (--fair)"
        );
    }
}

//! The lease: a [`Session`] (token, nodes, quorum, renewal, fence, release) with a
//! kind of lock (`kinds/`: which acquire script, who is woken, how a waiter leaves) and
//! what the run leaves and finds of earlier runs ([`Completion`]: `--hold-min`,
//! `--once-per`, `--once-id`). One acquire round ([`Lease::acquire`]) asks the kind for
//! its call, the session for the vote, and decides: held, busy, skipped or an error.

use std::cell::Cell;
use std::ops::Deref;
use std::time::Duration;

use crate::error::{Error, Kind as ErrorKind, Result, most_telling};
use crate::glance::Glance;
use crate::history::Ending;
use crate::holder::{Holder, Meta};
use crate::keys::LockKeys;
use crate::kinds::{Holders, LockKind};
use crate::policy::{Completion, Mode};
use crate::quorum::Nodes;
use crate::scripts::acquire;
pub use crate::scripts::acquire::{Closed, Skip};
use crate::scripts::release;
use crate::scripts::started::StartMark;
pub use crate::session::{
    DEFAULT_RETAIN, Grant, Lost, Preempt, Release, Renew, Session, Votes, Waiter, hand_on,
    leave_waiters, new_token, not_ours, tally, wake_head,
};
use crate::timing::{self, Point};

/// A lock of one kind on a set of nodes, with one token.
pub struct Lease {
    session: Session,
    /// What kind of lock the name is.
    kind: LockKind,
    /// What the run leaves and finds of earlier runs (`--hold-min`, `--once-per`,
    /// `--once-id`).
    completion: Completion,
    /// `--once-id`: the ID's record key.
    once_key: Option<Vec<u8>>,
    /// A fair queue's waiter: its place and the queue's length at the last try.
    place: Cell<Option<(u64, u64)>>,
    /// `--once-per`: the slot this run tries for (its start, server ms; 0: the slot of
    /// each try): fixed by `--splay`, or once it found the slot's run in progress.
    slot_pin: Cell<u64>,
    /// `--once-per`: this run now waits for its slot's run in progress.
    waits_for_run: Cell<bool>,
    /// A calendar `--once-per`: the server's clock less this host's (ms), as the last
    /// reply said it: the slot a try computes and hands to the script (see
    /// `crate::period`).
    server_ahead_ms: Cell<i64>,
    /// A vanished run an acquire round marked told, for this run to say (see
    /// [`Lease::take_told`]).
    told: std::cell::RefCell<Vec<u8>>,
    /// An `--elect` term with a history: its start pushes a start mark of its own (see
    /// `scripts::started`), so that a term whose wrapper dies is read as vanished.
    pushes_mark: bool,
    /// A name an enclosing run holds with this lease's token (a nested run, see
    /// `run/nested.rs`): taken as already held, renewed with the enclosing run's ttl,
    /// released by the enclosing run; this lease only records its run.
    inside: Option<Inside>,
}

/// What a nested run's environment says its enclosing run holds of a name: the pool
/// slot (1 for other kinds) and the fencing number of that acquisition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inside {
    pub slot: u32,
    pub fence: u64,
}

/// A lease is its session with a kind: what every kind shares is asked of the session.
impl Deref for Lease {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

/// What an acquire round gave.
#[derive(Debug)]
pub enum Acquire {
    /// Held: the round's requests were sent at `t_sent`.
    Acquired { t_sent: Point },
    /// Someone else holds it (on enough nodes to deny a quorum).
    Busy(Holder),
    /// `--once-per`, `--once-id`: the slot or ID is closed for this try (it ran, its run
    /// is in progress, or its attempts are spent).
    Skipped(Skip),
}

impl Lease {
    /// The lease of `keys` on `nodes` with `token` (see [`new_token`]), renewed to `ttl`.
    pub fn new(nodes: Nodes, keys: LockKeys, ttl: Duration, token: String) -> Self {
        Lease {
            session: Session::new(nodes, keys, ttl, token),
            kind: LockKind::default(),
            completion: Completion::default(),
            once_key: None,
            place: Cell::new(None),
            told: Default::default(),
            slot_pin: Cell::new(0),
            waits_for_run: Cell::new(false),
            server_ahead_ms: Cell::new(0),
            pushes_mark: false,
            inside: None,
        }
    }

    /// The lease of the next term of an `--elect` run: the same nodes, name and
    /// settings, a fresh token, nothing held yet.
    pub fn next_term(self) -> Lease {
        Lease {
            session: self.session.next_term(),
            place: Cell::new(None),
            told: Default::default(),
            slot_pin: Cell::new(0),
            waits_for_run: Cell::new(false),
            ..self
        }
    }

    /// The acquisition was given back: the next one is a grant of its own (see
    /// [`Session::given_back`]).
    pub fn given_back(&mut self) {
        self.session.given_back();
    }

    /// Newest wins (`--supersede`): this run's `--order-key`, and whether it asks the
    /// holder to stop (`--supersede running`).
    pub fn newest(mut self, order_key: Option<u64>, preempts: bool) -> Self {
        self.kind = self.kind.ordered(order_key, preempts);
        self
    }

    /// The lease of a lock of the kind a run asked for (see `kinds`).
    pub fn mode(self, mode: Mode) -> Self {
        self.of_kind(LockKind::of(mode))
    }

    /// The lease of a lock of `kind` (one a name is in use as).
    pub fn of_kind(mut self, kind: LockKind) -> Self {
        self.kind = kind;
        self
    }

    /// A name an enclosing run holds with this lease's token (see [`Inside`]).
    pub fn inside(mut self, inside: Inside) -> Self {
        self.inside = Some(inside);
        self
    }

    /// Whether an enclosing run holds the name with this lease's token.
    pub fn is_inside(&self) -> bool {
        self.inside.is_some()
    }

    /// Whether the run's start pushes a start mark of its own to the history (an
    /// `--elect` term's; see `scripts::started`): `false` keeps a plain run's cost.
    pub fn pushes_mark(mut self, pushes: bool) -> Self {
        self.pushes_mark = pushes;
        self
    }

    /// How long the name's fence counter and history are kept after this lease's
    /// acquisition and release (`--retain`).
    pub fn retain(mut self, retain: Duration) -> Self {
        self.session.set_retain(retain);
        self
    }

    /// The kind of lock (see `kinds`).
    pub fn kind(&self) -> &dyn crate::kinds::Rules {
        self.kind.rules()
    }

    /// Whether the lock has several slots (`--limit`).
    pub fn is_semaphore(&self) -> bool {
        self.limit() > 1
    }

    /// How many may hold the lock at once (1: one holder).
    pub fn limit(&self) -> u32 {
        self.kind().slots()
    }

    /// `--once-per`, `--once-id`: this run's attempt in its slot or for its ID (1 for
    /// the first start), and the vanished run it reruns ('' for none); `None` for other
    /// runs, or before the acquisition.
    pub fn attempt(&self) -> Option<(u32, &str)> {
        let grant = self.grant().filter(|g| g.attempt > 0)?;
        Some((grant.attempt, grant.rerun_of.as_str()))
    }

    /// A vanished run this run must tell, taken once: the start mark no try had told,
    /// which an acquire round marked told (`None`: none). Kept whatever the round gave
    /// (a grant given back as too late, a busy lock), so the run that received it says it.
    pub fn take_told(&self) -> Option<Vec<u8>> {
        Some(self.told.take()).filter(|t| !t.is_empty())
    }

    /// `--once-per`: the start of this run's slot (server time, ms).
    pub fn slot_start_ms(&self) -> Option<u64> {
        let period = self.completion.once_per.as_ref()?;
        let grant = self.grant().filter(|g| g.server_ms > 0)?;
        Some(period.slot_at(grant.server_ms).start_ms)
    }

    /// `--once-per` as the acquire script takes it: the pinned slot's, else the slot of
    /// the server's time as this host guesses it (its clock and the last offset seen).
    fn period_arg(&self) -> String {
        let guess = crate::clock::wall_ms().saturating_add_signed(self.server_ahead_ms.get());
        let at = self.pinned_slot().unwrap_or(guess);
        self.completion.period_arg(at)
    }

    /// A reply's server time (ms), for the next guess of the slot.
    fn learn_server_time(&self, server_ms: u64) {
        if server_ms > 0 {
            let ahead = server_ms as i64 - crate::clock::wall_ms() as i64;
            self.server_ahead_ms.set(ahead);
        }
    }

    /// What the run leaves when it ends and finds of earlier runs: with `--once-per` or
    /// `--once-id`, an acquire whose slot or ID is closed gives [`Acquire::Skipped`] and
    /// takes nothing; with `--hold-min`, the release keeps the lock until then.
    pub fn completion(mut self, completion: Completion) -> Self {
        self.once_key = completion
            .once_id
            .as_deref()
            .map(|id| self.session.name_keys().once(id));
        self.completion = completion;
        self
    }

    /// What the run leaves and finds of earlier runs (see [`Lease::completion`]).
    pub fn completion_policy(&self) -> &Completion {
        &self.completion
    }

    /// Whether the run is `--once-per`'s.
    pub fn is_once_per(&self) -> bool {
        self.completion.once_per.is_some()
    }

    /// One acquire round. Errors only when the nodes' errors (not a busy lock) kept the
    /// round from a quorum; a key of another type is an error naming its type. A
    /// `waiter` joins the lock's waiters when it finds it busy (see [`Waiter`]).
    pub async fn acquire(&self, meta: &Meta, waiter: Option<&Waiter>) -> Result<Acquire> {
        if let Some(inside) = self.inside.filter(|_| !self.takes_inside_by_script()) {
            return self.take_inside(inside).await;
        }
        let t_sent = crate::clock::now();
        let who = if self.kind().records_who_waits() {
            Self::who_waits(meta)
        } else {
            String::new()
        };
        // The request that asks the holder to stop (newest wins, `--supersede
        // running`): who asks.
        let request = self.kind().preempt_request(&who);
        let mut votes = self.votes(meta, waiter, &who, &request).await;
        if !votes.told.is_empty() {
            self.told.replace(std::mem::take(&mut votes.told));
        }
        let elapsed = crate::clock::now().saturating_sub(t_sent);
        if votes.place.is_some() {
            self.place.set(votes.place);
        }
        self.kind().wake(&self.session, &votes.wake, &request).await;
        if let Some((role, kind)) = votes.foreign {
            if votes.yes > 0 {
                self.release_all(0, None).await.ok();
            }
            let once_id = self.completion.once_id.as_deref().unwrap_or_default();
            let key = role.key_in(self.name_keys(), self.token(), once_id, 1);
            return Err(not_ours(&key, role, &kind));
        }
        if let Some(mode) = votes.other_kind {
            return Err(self.kind.other_kind(self.name_keys(), &mode));
        }
        let closes = votes.closes();
        if let Some(skip) = votes.skipped.take().filter(|_| closes) {
            if votes.yes > 0 {
                let _ = self.release_all(0, None).await;
            }
            return Ok(Acquire::Skipped(skip));
        }
        if votes.yes >= self.nodes().quorum() && timing::validity(self.ttl(), elapsed).is_some() {
            self.granted(&votes).await?;
            return Ok(Acquire::Acquired { t_sent });
        }
        self.not_granted(votes, waiter).await
    }

    /// Whether a nested run takes a name its enclosing run holds through the kind's
    /// acquire script (which finds it already its token's and answers the completion
    /// checks): a lock held by its key alone. A pool's slot and a share are taken as
    /// the environment says ([`Lease::take_inside`]); the run refuses completion flags
    /// for them (`run/nested.rs`).
    fn takes_inside_by_script(&self) -> bool {
        self.kind().slots() == 1 && self.kind().holders() == Holders::Key
    }

    /// A nested run's take of a pool slot or a share its enclosing run holds: the
    /// grant is what the environment says, and a renewal with the enclosing run's
    /// token starts this lease's clock (the lease ends no later than that renewal's
    /// ttl, whatever the enclosing run last sent).
    async fn take_inside(&self, inside: Inside) -> Result<Acquire> {
        let slot = inside.slot.max(1);
        self.set_grant(Grant {
            fence: inside.fence,
            server_ms: 0,
            slot,
            keys: self.kind().held_keys(self.name_keys(), slot, self.token()),
            attempt: 0,
            rerun_of: String::new(),
        });
        match self.renew().await {
            Renew::Renewed { t_sent } | Renew::Preempt { t_sent, .. } => {
                Ok(Acquire::Acquired { t_sent })
            }
            Renew::Lost(_) => Err(Error::new(
                ErrorKind::Lost,
                format!(
                    "lock {}: the enclosing run no longer holds it",
                    self.keys().display_name()
                ),
            )),
            Renew::Unknown(e) => Err(e),
        }
    }

    /// A quorum granted the lock in time: over several nodes its fencing number is
    /// raised on a quorum first (or the grant is given back), then the grant is kept,
    /// and acknowledged by a replica where the server has one (a grant none
    /// acknowledged is a note, told by the run; the run goes on).
    async fn granted(&self, votes: &Votes) -> Result<()> {
        self.session.acknowledge_grant().await;
        if self.nodes().given() > 1 && !self.raise_fence(votes.fence).await {
            let _ = self.release_all(0, None).await;
            return Err(Error::unreachable(
                "could not record the fencing number on a quorum of nodes; trying again",
            ));
        }
        self.set_grant(Grant {
            fence: votes.fence,
            server_ms: votes.now_ms,
            slot: votes.slot.max(1),
            keys: self
                .kind()
                .held_keys(self.name_keys(), votes.slot.max(1), self.token()),
            attempt: votes.attempt.0,
            rerun_of: votes.attempt.1.chars().take(8).collect(),
        });
        Ok(())
    }

    /// A round without a timely quorum: busy (the holder), or the most telling error;
    /// whatever may have landed is taken back, but a queue's late grant.
    async fn not_granted(&self, votes: Votes, waiter: Option<&Waiter>) -> Result<Acquire> {
        let keeps_place =
            self.kind().keeps_place_on_late_grant() && waiter.is_some() && votes.yes == 0;
        if (votes.yes > 0 || !votes.errors.is_empty()) && !keeps_place {
            // Ambiguous or partial: take our token back everywhere it may have landed.
            // A reply that was lost may have told a vanished run this try never said:
            // the take-back untells it, so that a later try tells it (at least once).
            let _ = self.take_back(!votes.errors.is_empty()).await;
        }
        // A fair queue's waiter whose reply came too late may have been granted the lock
        // (and left the queue): taking it back would hand its turn to the next in line.
        // Its next try finds the lock its own and keeps it; a wait that ends first
        // takes it back (see `wait::acquire`).
        let denied = votes.errors.len() + self.nodes().missing() < self.nodes().quorum();
        if let Some(holder) = votes.busy.filter(|_| denied) {
            return Ok(Acquire::Busy(holder));
        }
        match most_telling(votes.errors) {
            Some(err) if self.nodes().given() == 1 => Err(err),
            Some(err) => Err(err.context(format!(
                "no quorum: {} of {} nodes needed",
                self.nodes().quorum(),
                self.nodes().given()
            ))),
            // Every node said yes but the validity ran out while asking.
            None => Ok(Acquire::Busy(Holder::default())),
        }
    }

    /// Who waits, for a fair queue's `status` (built only for one).
    fn who_waits(meta: &Meta) -> String {
        let mut who = serde_json::to_value(meta.who()).unwrap_or_default();
        who["since_ms"] = crate::clock::wall_ms().into();
        who.to_string()
    }

    /// The round's votes: the glance's answer, else the acquire script's on every node;
    /// a calendar slot computed from this host's clock that the server's time is not in
    /// is asked again from the server's time (a host whose clock is off pays the round
    /// trip again, never runs for another slot).
    async fn votes(&self, meta: &Meta, waiter: Option<&Waiter>, who: &str, request: &str) -> Votes {
        self.session.follow().await;
        let mut votes = match self.glance(waiter).await {
            Some(votes) => votes,
            None => self.vote_reading_life(meta, waiter, who, request).await,
        };
        for _ in 0..2 {
            let Some(server_ms) = votes
                .other_slot
                .filter(|_| votes.yes < self.nodes().quorum())
            else {
                break;
            };
            if votes.yes > 0 {
                let _ = self.release_all(0, None).await;
            }
            self.learn_server_time(server_ms);
            votes = self.vote(meta, waiter, who, request).await;
        }
        self.learn_server_time(votes.now_ms);
        votes
    }

    /// A first try's glance (see `crate::glance`): one pipeline of reads that answers
    /// a losing try (busy, another kind, a `--once-per` slot closed) without the acquire
    /// script; `None` when the try is not one it serves or the reads do not settle it.
    /// A command the reads could not run (an ACL without it, a key of another type)
    /// and a dropped connection leave the answer to the script; a request that failed
    /// otherwise (a timeout, a refused connection) is the round's error, as the
    /// script's would have been.
    async fn glance(&self, waiter: Option<&Waiter>) -> Option<Votes> {
        // A cluster too: the reads share the name's hash tag, so the pipeline goes to
        // its slot's owner (`redis::routed`).
        let node = self.nodes().iter().next()?;
        let serves = waiter.is_none()
            && matches!(self.kind, LockKind::Plain)
            && self.once_key.is_none()
            && self.nodes().given() == 1
            && self.inside.is_none();
        if !serves {
            return None;
        }
        let rerun = self.completion.rerun_arg(self.waits_for_run.get());
        let glance = Glance {
            period: self.completion.once_per.as_ref(),
            may_wait: rerun >= 2,
            reruns: rerun % 2 == 1,
            pin_ms: self.slot_pin.get(),
        };
        match node.read_pipeline(&glance.pipeline(self.name_keys())).await {
            Ok(replies) => glance
                .answer(replies?, self.token())
                .map(|answer| tally(vec![Ok(answer)])),
            Err(e) => Some(tally(vec![Err(e)])),
        }
    }

    /// [`Lease::vote`] after a glance that did not settle the try (the lock looked
    /// free: the acquire will likely take it): on one server whose host keeps run IDs,
    /// the lock-delay's `INFO server` goes out with the acquire, in the same round trip
    /// (`redis::Node::read_life_beside`), so that a free lock still takes two.
    async fn vote_reading_life(
        &self,
        meta: &Meta,
        waiter: Option<&Waiter>,
        who: &str,
        request: &str,
    ) -> Votes {
        let vote = self.vote(meta, waiter, who, request);
        match self.nodes().iter().next() {
            Some(node) if !node.routes_by_slot() && crate::redis::kept::enabled() => {
                node.read_life_beside(&self.keys().epoch, vote).await
            }
            _ => vote.await,
        }
    }

    /// A life read beside an earlier acquire is not the next one's: the grant, if it
    /// takes the name, is read again (or beside it, see [`Lease::vote_reading_life`]).
    fn forget_life_reads(&self) {
        for node in self.nodes().iter() {
            node.take_life_read();
        }
    }

    /// Sends the acquire script to every node and counts the answers.
    async fn vote(&self, meta: &Meta, waiter: Option<&Waiter>, who: &str, request: &str) -> Votes {
        self.forget_life_reads();
        let fields = meta.fields_at(crate::clock::wall_ms());
        let period = self.period_arg();
        let call = |heartbeat_ms: u64| {
            let request = acquire::Request {
                keys: self.name_keys(),
                token: self.token(),
                ttl_ms: self.ttl_ms(),
                heartbeat_ms,
                // A nested run knows the holder: itself (`scripts::completion`).
                known_holder: match &self.inside {
                    Some(_) => self.token(),
                    None => waiter.map_or("", |w| w.known_holder.as_str()),
                },
                period: &period,
                max_attempts: self.completion.attempts(),
                rerun: self.completion.rerun_arg(self.waits_for_run.get()),
                slot_pin_ms: self.slot_pin.get(),
                once_key: self.once_key.as_deref(),
                retain_ms: self.retain_ms(),
                who,
                order_key: None,
                preempt: request,
                meta: &fields,
            };
            self.kind().acquire_call(&request)
        };
        // A waiter joins the waiters on the primary node only (see `Nodes::primary`).
        let heartbeat = waiter.map_or(0, |w| w.heartbeat.as_millis().max(1) as u64);
        let (as_waiter, plain) = (call(heartbeat), call(0));
        let nodes = self.nodes();
        let results = nodes
            .each(|n| {
                let call = if nodes.is_primary(n) {
                    &as_waiter
                } else {
                    &plain
                };
                n.run_idempotent::<redis::Value>(call)
            })
            .await;
        let answers = nodes
            .iter()
            .zip(results)
            .map(|(node, result)| {
                result.and_then(|v| {
                    acquire::decode(v).ok_or_else(|| {
                        Error::new(
                            ErrorKind::BadReply,
                            format!("{}: unexpected reply from the acquire script", node.url()),
                        )
                    })
                })
            })
            .collect();
        tally(answers)
    }

    /// One renewal round (compare-and-pexpire on every node), keeping the kind's mode
    /// key alive.
    pub async fn renew(&self) -> Renew {
        let call = self
            .kind()
            .renew_call(self.keys(), self.token(), self.ttl_ms());
        self.session.renew(&call).await
    }

    /// `--once-per`: from now on this run tries for the slot starting at `slot_ms` only
    /// (server ms; see `scripts::completion`).
    pub fn pin_slot(&self, slot_ms: u64) {
        self.slot_pin.set(slot_ms);
    }

    /// `--once-per`: from now on this run waits for its slot's run in progress (its
    /// slot pinned, see [`Lease::pin_slot`]).
    pub fn wait_for_run(&self, slot_ms: u64) {
        if self.slot_pin.get() == 0 {
            self.slot_pin.set(slot_ms);
        }
        self.waits_for_run.set(true);
    }

    /// Whether this run waits for its slot's run in progress (see
    /// [`Lease::wait_for_run`]).
    pub fn waits_for_run(&self) -> bool {
        self.waits_for_run.get()
    }

    /// The slot this run tries for, once pinned (see [`Lease::pin_slot`]).
    pub fn pinned_slot(&self) -> Option<u64> {
        Some(self.slot_pin.get()).filter(|s| *s > 0)
    }

    /// Whether this run's start must be recorded before its command starts (see
    /// [`Lease::mark_started`]): a `--once-per` or `--once-id` run, or one that pushes
    /// a start mark of its own (an `--elect` term).
    pub fn records_start(&self) -> bool {
        self.completion.once_per.is_some() || self.once_key.is_some() || self.pushes_mark
    }

    /// The start mark this run has in the history (see `scripts::started`).
    fn start_mark(&self) -> StartMark {
        if self.completion.once_per.is_some() {
            StartMark::Granted
        } else if self.pushes_mark {
            StartMark::Pushed
        } else {
            StartMark::None
        }
    }

    /// A `--once-per` or `--once-id` run's command is about to start (see
    /// `scripts::started`): from now on it is an attempt, and its start mark says `who`
    /// runs it (a JSON object). `Ok(false)` when the lock is no longer ours on enough
    /// nodes for a quorum (the command must not start); an error when that cannot be
    /// told (the command must not start either: a crash after an unconfirmed start
    /// would leave a mark that does not close the slot).
    pub async fn mark_started(&self, who: &str) -> Result<bool> {
        let call = crate::scripts::started::call(
            self.keys(),
            self.token(),
            who,
            self.retain_ms(),
            self.start_mark(),
            self.once_key.as_deref(),
        );
        let results = self.nodes().each(|n| n.run_idempotent::<i64>(&call)).await;
        let (mut started, mut gone) = (0, 0);
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(1) => started += 1,
                Ok(_) => gone += 1,
                Err(e) => errors.push(e),
            }
        }
        let quorum = self.nodes().quorum();
        if started >= quorum {
            Ok(true)
        } else if gone + self.nodes().missing() > self.nodes().given() - quorum {
            Ok(false)
        } else {
            Err(most_telling(errors).unwrap_or_else(|| {
                Error::unreachable(format!(
                    "only {started} of {} nodes recorded the start",
                    self.nodes().given()
                ))
            }))
        }
    }

    /// Leaves the lock's waiters (a waiter that gives up); best effort: a waiter that
    /// cannot leaves with its heartbeat.
    pub async fn leave(&self) {
        self.kind().leave(&self.session).await;
    }

    /// Leaves the lock's waiters, handing a wake-up on (see [`hand_on`]); a queue's
    /// head that leaves wakes the next in line.
    pub async fn hand_on(&self) {
        self.kind().hand_on(&self.session).await;
    }

    /// The list this run blocks on while it waits (the kind's).
    pub fn wake_key(&self) -> Vec<u8> {
        self.kind().wake_key(self.name_keys(), self.token())
    }

    /// Waits until `until` for a request to stop on this holder's own wake list and on
    /// `others`' (the other names of a run that holds several, see
    /// [`Session::listen`]): the request and the lease it came for (0: this one, `i`:
    /// `others[i - 1]`).
    pub async fn listen(&self, until: Point, others: &[&Lease]) -> Option<(usize, Preempt)> {
        let blocking = self.kind().listens_blocking();
        let lists: Vec<Vec<u8>> = others.iter().map(|l| l.own_wake()).collect();
        self.session.listen(until, blocking, &lists).await
    }

    /// Whether `redlock preempt` can ask this holder to stop, so it waits for the
    /// request between renewals ([`Lease::listen`]).
    pub fn can_be_asked(&self) -> bool {
        self.kind().can_be_asked() && self.inside.is_none()
    }

    /// In a fair queue: this run's place (1-based) and the queue's length, as the last
    /// try found them.
    pub fn place(&self) -> Option<(u64, u64)> {
        self.place.get().filter(|(place, _)| *place > 0)
    }

    /// A nested run's release ([`Inside`]): the name stays its enclosing run's; the
    /// run's record is written where its ending says (a lock held by its key: the
    /// release script's record, see `scripts::release`), nothing else. A give-back
    /// (no ending) and a share (whose record would need the share's own release)
    /// write nothing.
    async fn record_inside(&self, ending: Option<&Ending>) -> Result<Release> {
        let Some(ending) = ending.filter(|_| self.kind().holders() == Holders::Key) else {
            return Ok(Release::Deleted);
        };
        let request = release::Request {
            keys: self.keys(),
            wakes_head: false,
            token: self.token(),
            keep_ms: 0,
            inside: true,
            retain_ms: self.retain_ms(),
            once_per: self.start_mark() != StartMark::None,
            untell: false,
            once_key: self.once_key.as_deref(),
            record: Some(ending.record()),
        };
        let call = request.call(false);
        let released = self.session.release(&call, &call).await;
        match released.error {
            Some(e) if released.outcome == Release::NotHeld => Err(e),
            _ => Ok(released.outcome),
        }
    }

    /// Releases on every node; with `keep_ms`, leaves the key ours for that long instead.
    /// A delete wakes one waiter, if any. With an `ending`, the run is recorded in the
    /// lock's history on every node, in the same script (see `scripts::release`).
    pub async fn release_all(&self, keep_ms: u64, ending: Option<&Ending>) -> Result<Release> {
        if self.inside.is_some() {
            return self.record_inside(ending).await;
        }
        self.release_as(keep_ms, ending, false).await
    }

    /// Takes the token back after an acquire round whose answer is not known
    /// everywhere; `untell`: a reply was lost, so a vanished run this try's script may
    /// have marked told is marked untold again (see `scripts::release`).
    async fn take_back(&self, untell: bool) -> Result<Release> {
        if self.inside.is_some() {
            return Ok(Release::Deleted);
        }
        self.release_as(0, None, untell).await
    }

    /// The release round (see [`Lease::release_all`]).
    async fn release_as(
        &self,
        keep_ms: u64,
        ending: Option<&Ending>,
        untell: bool,
    ) -> Result<Release> {
        let request = release::Request {
            keys: self.keys(),
            wakes_head: self.kind().release_wakes_head(),
            token: self.token(),
            keep_ms,
            inside: false,
            retain_ms: self.retain_ms(),
            once_per: self.start_mark() != StartMark::None,
            untell,
            once_key: self.once_key.as_deref(),
            record: ending.map(Ending::record),
        };
        let kind = self.kind();
        let (waking, quiet) = (
            kind.release_call(&request, true),
            kind.release_call(&request, false),
        );
        let released = self.session.release(&waking, &quiet).await;
        self.kind.after_release(&self.session, &released).await;
        match released.error {
            Some(e) if released.outcome == Release::NotHeld => Err(e),
            _ => Ok(released.outcome),
        }
    }
}

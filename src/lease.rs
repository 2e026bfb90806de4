//! The lease: acquire, renew and release one lock on one or more independent Redis
//! masters ([`Nodes`]; one server is the case N = 1 of the Redlock algorithm):
//!
//! - acquire: the same key and token on every node in parallel, each call bounded by
//!   the node timeout; acquired when a quorum said yes and the validity
//!   `ttl − elapsed − drift` (elapsed measured from before the first request was sent)
//!   is still positive. Otherwise the token is released on *every* node, including
//!   those that did not answer (an ambiguous reply may have been a success).
//! - renew: compare-and-pexpire on every node in parallel; renewed when a quorum
//!   renewed, LOST as soon as so many nodes report "not ours" that a quorum can no
//!   longer be renewed; anything else is unknown (retry until the deadline).
//! - release: compare-and-delete (or keep for `--hold-min`) on every node.
//!
//! The lease is the request (nodes, keys, kind, token, ttl); what an acquisition gave
//! is a [`Grant`] (fence, server time, slot), kept beside it once held. Which script
//! runs with which KEYS and ARGV is the scripts' business (`src/scripts/`); the lease
//! only counts the nodes' answers ([`tally`], a pure function).

use std::cell::{Cell, OnceCell};
use std::fmt;
use std::time::Duration;

use redis::Value;
use serde::Deserialize;

use crate::error::{Error, Kind, Result, most_telling};
use crate::history::Ending;
use crate::holder::{Holder, Meta};
use crate::keys::LockKeys;
use crate::policy::{Completion, Mode, Order};
use crate::quorum::Nodes;
use crate::scripts::acquire::{self, Acquired};
pub use crate::scripts::acquire::{Closed, Skip};
use crate::scripts::release::{self, Outcome};
use crate::scripts::{Key, fence, renew, waiters};
use crate::timing::{self, Point};

/// How long a name's fence counter and run history are kept after its last use,
/// unless `--retain` says otherwise.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(30 * 24 * 3600);

/// A lock on a set of nodes, with one token.
pub struct Lease {
    nodes: Nodes,
    keys: LockKeys,
    token: String,
    ttl: Duration,
    /// What the run leaves and finds of earlier runs (`--hold-min`, `--once-per`,
    /// `--once-id`).
    completion: Completion,
    /// `--once-id`: the ID's record key.
    once_key: Option<Vec<u8>>,
    /// `--retain`: how long the fence counter and history outlive the last use.
    retain: Duration,
    /// What kind of lock the name is.
    mode: Mode,
    /// What the acquisition gave, once held.
    grant: OnceCell<Grant>,
    /// A fair queue's waiter: its place and the queue's length at the last try.
    place: Cell<Option<(u64, u64)>>,
    /// Newest wins: this run's `--order-key`, and whether it asks the holder to stop
    /// (`--supersede running`).
    order_key: Option<u64>,
    preempts: bool,
    /// `--once-per`: the slot this run tries for (its start, server ms; 0: the slot of
    /// each try): fixed by `--splay`, or once it found the slot's run in progress.
    slot_pin: Cell<u64>,
    /// `--once-per`: this run now waits for its slot's run in progress.
    waits_for_run: Cell<bool>,
}

/// What an acquisition gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The fencing number: over several nodes the largest of the nodes that said yes.
    pub fence: u64,
    /// The server's time at the acquisition, ms (the largest of the nodes').
    pub server_ms: u64,
    /// The semaphore slot taken (1 for other kinds).
    pub slot: u32,
    /// The slot's keys (the name's own for slot 1).
    pub keys: LockKeys,
    /// `--once-per`, `--once-id`: this run's attempt in its slot or for its ID (0:
    /// neither), and the vanished run it reruns (a token prefix; '' for none).
    pub attempt: u32,
    pub rerun_of: String,
}

/// Takes `token` out of the lock's waiters, on the primary node where waiters wait
/// (best effort: an entry left behind expires with the waiters' heartbeat).
pub async fn leave_waiters(nodes: &Nodes, keys: &LockKeys, token: &str) {
    if let Some(primary) = nodes.primary() {
        let _ = primary.run::<i64>(&waiters::leave(keys, token)).await;
    }
}

/// Takes `token` out of the lock's waiters and hands a wake-up on to whoever else
/// waits (a waiter that took a wake-up it has no use for: `redlock wait`, a `--once-per`
/// run whose slot already ran); best effort, like [`leave_waiters`].
pub async fn hand_on(nodes: &Nodes, keys: &LockKeys, token: &str) {
    if let Some(primary) = nodes.primary() {
        let _ = primary.run::<i64>(&waiters::hand_on(keys, token)).await;
    }
}

/// Wakes a fair queue's head on the primary node (best effort: a head not woken finds
/// its turn at its next try, within its nap).
pub async fn wake_head(nodes: &Nodes, keys: &LockKeys, head: Option<&str>) {
    if let (Some(head), Some(primary)) = (head, nodes.primary()) {
        let _ = primary.run::<i64>(&release::wake_head(keys, head)).await;
    }
}

/// The usage error of a run whose kind of lock differs from the one the name is in use
/// as (`mode`: the mode key's value, or `plain`).
fn other_kind(asked: Mode, keys: &LockKeys, mode: &str) -> Error {
    let name = keys.display_name();
    let is = match Mode::parse(mode) {
        Some(kind) => kind.flags(),
        None => format!("a lock of another kind ({mode:?})"),
    };
    let asked = asked.asked();
    Error::usage(format!(
        "lock {name} is in use as {is}, and this run asked for {asked}; every run on a name must ask for the same kind (the name's kind is kept until a ttl after its last holder or waiter)"
    ))
}

/// The error for a key of ours that holds `kind`, another type than we write there.
pub fn not_ours(key: &[u8], role: Key, kind: &str) -> Error {
    Error::new(
        Kind::NotALock,
        format!(
            "key {} holds a {kind}, not {}; choose another --key or --prefix",
            crate::report::printable(key),
            role.what()
        ),
    )
}

/// A fresh token: a UUID v4 from the OS CSPRNG, new for every acquisition.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
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

/// What a renewal round gave.
#[derive(Debug)]
pub enum Renew {
    Renewed {
        t_sent: Point,
    },
    /// Renewed, and the holder is asked to stop (`--supersede running`, `redlock
    /// preempt`).
    Preempt {
        t_sent: Point,
        request: Preempt,
    },
    /// Definitely not ours any more.
    Lost(Lost),
    /// No quorum answered; the lock may still be ours until the lease end.
    Unknown(Error),
}

/// Why a lock was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// The key is gone or holds another token on `gone` of `given` nodes, and `missing`
    /// more were unreachable since the start: no quorum can be renewed.
    Gone {
        gone: usize,
        given: usize,
        missing: usize,
    },
    /// No renewal succeeded before the lease was about to end.
    Expiring { last_error: Option<Error> },
    /// The job was stopped (Ctrl-Z) for this long, past the lease: nothing renews a
    /// stopped job.
    Stopped { for_: Duration },
    /// The wrapper itself did not run for this long (SIGSTOP, a hang, a starved host)
    /// and woke past the lease's SIGTERM point: its group guard stopped the command.
    Paused { for_: Duration },
    /// Held for `--max-hold`: given up on purpose.
    MaxHold { limit: Duration },
    /// Asked to stop for a newer run (`--supersede running`, `redlock preempt`): given
    /// up on purpose.
    Preempted(Preempt),
}

/// A request to stop (`--supersede running`, `redlock preempt`), as the holder reads it
/// from its wake list or its metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preempt {
    /// Who asked (`host pid N user U`).
    pub by: String,
    /// The signal the request names, if any (else the holder's `--preempt-signal`).
    pub signal: Option<String>,
}

impl Preempt {
    /// Reads a request (JSON: `by`, the asker's who; `signal`); an unreadable one is
    /// still a request, from someone unknown.
    pub fn parse(text: &[u8]) -> Preempt {
        let value: serde_json::Value = serde_json::from_slice(text).unwrap_or_default();
        let by = crate::holder::Who::deserialize(&value["by"]).unwrap_or_default();
        Preempt {
            by: by.host_pid_user(),
            signal: value["signal"].as_str().map(str::to_string),
        }
    }
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lost::Gone { given: 1, .. } => f.write_str("the key is gone or holds another token"),
            Lost::Gone {
                gone,
                given,
                missing: 0,
            } => write!(f, "the key is gone or taken on {gone} of {given} nodes"),
            Lost::Gone {
                gone,
                given,
                missing,
            } => write!(
                f,
                "the key is gone or taken on {gone} of {given} nodes ({missing} more unreachable since the start)"
            ),
            Lost::MaxHold { limit } => write!(
                f,
                "held for the --max-hold of {}",
                crate::report::human(*limit)
            ),
            Lost::Preempted(request) => write!(f, "preempted by {}", request.by),
            Lost::Stopped { for_ } => write!(
                f,
                "the job was stopped (Ctrl-Z) for {}, longer than the lease",
                crate::report::human(*for_)
            ),
            // To a tenth of a second: a pause of 1.9 s is not "1s".
            Lost::Paused { for_ } if *for_ < Duration::from_secs(60) => write!(
                f,
                "the wrapper was stopped for {:.1}s (SIGSTOP, a hang or a starved host), past the lease's SIGTERM point; its group guard stops the command at that point without it",
                for_.as_secs_f64()
            ),
            Lost::Paused { for_ } => write!(
                f,
                "the wrapper was stopped for {} (SIGSTOP, a hang or a starved host), past the lease's SIGTERM point; its group guard stops the command at that point without it",
                crate::report::human(*for_)
            ),
            Lost::Expiring { last_error } => {
                f.write_str("renewals failed until the lease was about to end (")?;
                match last_error {
                    Some(e) => write!(f, "{e})"),
                    None => f.write_str("no answer)"),
                }
            }
        }
    }
}

/// A run that waits for the lock: how long it promises to come back (its heartbeat:
/// the waiters set lives at least this long), and the holder it already knows (whose
/// metadata need not be read again).
#[derive(Debug, Clone, Default)]
pub struct Waiter {
    pub heartbeat: Duration,
    pub known_holder: String,
}

/// What a release gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Release {
    Deleted,
    Kept,
    NotHeld,
}

/// The votes of one acquire round.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Votes {
    pub yes: usize,
    /// The largest fencing number among the yes votes.
    pub fence: u64,
    pub busy: Option<Holder>,
    /// A key of ours that holds something else: (its role, its type).
    pub foreign: Option<(Key, String)>,
    /// The server time of the yes votes (the largest).
    pub now_ms: u64,
    /// A node's history says the `--once-per` slot (or the `--once-id`) is closed for
    /// this try; `skips` nodes said so, of `answered` that answered at all.
    pub skipped: Option<Skip>,
    pub skips: usize,
    pub answered: usize,
    /// `--once-per`: this run's attempt in its slot, and the vanished run it reruns.
    pub attempt: (u32, String),
    /// The semaphore slot taken (single node).
    pub slot: u32,
    /// The name is in use as another kind of lock (the mode key's value).
    pub other_kind: Option<String>,
    /// A fair queue's place and length, as the last busy answer gave them.
    pub place: Option<(u64, u64)>,
    /// A fair queue's head whose turn has come, to be woken; where newest wins, the
    /// superseded waiters and a holder asked to stop.
    pub wake: Vec<String>,
    pub errors: Vec<Error>,
}

impl Votes {
    /// Whether the slot or ID is closed for this try: a majority of the nodes that
    /// answered say so. One node that missed a run's release (its start mark left
    /// there, read as a run that vanished) never vetoes what the others recorded.
    pub fn closes(&self) -> bool {
        self.skips > 0 && self.skips * 2 > self.answered
    }
}

/// Counts the nodes' answers to one acquire round (pure: the table tests below).
pub fn tally(answers: Vec<Result<Acquired>>) -> Votes {
    let mut votes = Votes::default();
    for answer in answers {
        votes.answered += usize::from(answer.is_ok());
        match answer {
            Ok(Acquired::Yes {
                fence,
                now_ms,
                slot,
                attempt,
                rerun_of,
                wake,
            }) => {
                votes.wake.extend(wake);
                votes.yes += 1;
                votes.slot = slot;
                if attempt > votes.attempt.0 {
                    votes.attempt = (attempt, rerun_of);
                }
                votes.fence = votes.fence.max(fence);
                votes.now_ms = votes.now_ms.max(now_ms);
            }
            Ok(Acquired::Skipped(skip)) => {
                votes.skips += 1;
                votes.skipped = Some(skip);
            }
            Ok(Acquired::OtherKind(mode)) => votes.other_kind = Some(mode),
            Ok(Acquired::Busy { held, place, wake }) => {
                votes.busy.get_or_insert_with(|| Holder::from_held(&held));
                votes.place = place.or(votes.place);
                votes.wake.extend(wake);
            }
            Ok(Acquired::Foreign { key, kind }) => votes.foreign = Some((key, kind)),
            Err(e) => votes.errors.push(e),
        }
    }
    votes
}

impl Lease {
    /// The lease of `keys` on `nodes` with `token` (see [`new_token`]), renewed to `ttl`.
    pub fn new(nodes: Nodes, keys: LockKeys, ttl: Duration, token: String) -> Self {
        Lease {
            nodes,
            keys,
            token,
            ttl,
            completion: Completion::default(),
            once_key: None,
            retain: DEFAULT_RETAIN,
            mode: Mode::PLAIN,
            grant: OnceCell::new(),
            place: Cell::new(None),
            order_key: None,
            preempts: false,
            slot_pin: Cell::new(0),
            waits_for_run: Cell::new(false),
        }
    }

    /// The lease of the next term of an `--elect` run: the same nodes, name and
    /// settings, a fresh token, nothing held yet.
    pub fn next_term(self) -> Lease {
        Lease {
            token: new_token(),
            grant: OnceCell::new(),
            place: Cell::new(None),
            slot_pin: Cell::new(0),
            waits_for_run: Cell::new(false),
            ..self
        }
    }

    /// Newest wins (`--supersede`): this run's `--order-key`, and whether it asks the
    /// holder to stop (`--supersede running`).
    pub fn newest(mut self, order_key: Option<u64>, preempts: bool) -> Self {
        self.order_key = order_key;
        self.preempts = preempts;
        self
    }

    /// The lease of a lock of another mode than plain (see [`Mode`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// How long the name's fence counter and history are kept after this lease's
    /// acquisition and release (`--retain`).
    pub fn retain(mut self, retain: Duration) -> Self {
        self.retain = retain;
        self
    }

    /// Whether the lock is a semaphore (`--limit`).
    pub fn is_semaphore(&self) -> bool {
        self.limit() > 1
    }

    /// How many may hold the lock at once (1: a plain lock).
    pub fn limit(&self) -> u32 {
        self.mode.slots()
    }

    /// The semaphore slot held (1-based; 1 for a plain lock).
    pub fn slot(&self) -> u32 {
        self.grant.get().map_or(1, |g| g.slot)
    }

    /// `--once-per`, `--once-id`: this run's attempt in its slot or for its ID (1 for
    /// the first start), and the vanished run it reruns ('' for none); `None` for other
    /// runs, or before the acquisition.
    pub fn attempt(&self) -> Option<(u32, &str)> {
        let grant = self.grant.get().filter(|g| g.attempt > 0)?;
        Some((grant.attempt, grant.rerun_of.as_str()))
    }

    /// `--once-per`: the start of this run's slot (server time, ms).
    pub fn slot_start_ms(&self) -> Option<u64> {
        let period = self.completion.once_per_ms();
        let grant = self.grant.get().filter(|g| period > 0 && g.server_ms > 0)?;
        Some(grant.server_ms - grant.server_ms % period)
    }

    /// What the run leaves when it ends and finds of earlier runs: with `--once-per` or
    /// `--once-id`, an acquire whose slot or ID is closed gives [`Acquire::Skipped`] and
    /// takes nothing; with `--hold-min`, the release keeps the lock until then.
    pub fn completion(mut self, completion: Completion) -> Self {
        self.once_key = completion.once_id.as_deref().map(|id| self.keys.once(id));
        self.completion = completion;
        self
    }

    /// What the run leaves and finds of earlier runs (see [`Lease::completion`]).
    pub fn completion_policy(&self) -> &Completion {
        &self.completion
    }

    /// The server's time at the acquisition, ms (0 before it, and over several nodes:
    /// each node then dates the run's record on its own clock, as it decides a
    /// `--once-per` slot on it, so that the record and the decision agree on the slot).
    pub fn acquired_ms(&self) -> u64 {
        if self.nodes.given() > 1 {
            return 0;
        }
        self.grant.get().map_or(0, |g| g.server_ms)
    }

    /// `--once-per`'s period, ms (0: none).
    pub fn once_per_ms(&self) -> u64 {
        self.completion.once_per_ms()
    }

    /// The fencing number of this lease's acquisition: larger than every earlier one
    /// on the name (see `scripts::acquire`); over several nodes the largest of the
    /// nodes that said yes, raised on a quorum (any two majorities share a node, so a
    /// later holder sees a larger one). 0 before the lease is acquired.
    pub fn fence(&self) -> u64 {
        self.grant.get().map_or(0, |g| g.fence)
    }

    /// The lock's keys; once a semaphore slot is held, the lock and metadata keys are
    /// the slot's.
    pub fn keys(&self) -> &LockKeys {
        self.grant.get().map_or(&self.keys, |g| &g.keys)
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn nodes(&self) -> &Nodes {
        &self.nodes
    }

    /// The timeout of one request to a node.
    pub fn node_timeout(&self) -> Duration {
        self.nodes.timeout()
    }

    /// The ttl the lock is taken and renewed with.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.as_millis().max(1) as u64
    }

    fn retain_ms(&self) -> u64 {
        self.retain.as_millis().max(1) as u64
    }

    /// One acquire round. Errors only when the nodes' errors (not a busy lock) kept the
    /// round from a quorum; a key of another type is an error naming its type. A
    /// `waiter` joins the lock's waiters when it finds it busy (see [`Waiter`]).
    pub async fn acquire(&self, meta: &Meta, waiter: Option<&Waiter>) -> Result<Acquire> {
        let t_sent = crate::clock::now();
        let who = if self.mode.order.records_who_waits() {
            Self::who_waits(meta)
        } else {
            String::new()
        };
        // The request that asks the holder to stop (newest wins, `--supersede
        // running`): who asks.
        let request = match self.preempts {
            true => format!("{{\"by\":{who}}}"),
            false => String::new(),
        };
        let mut votes = self.vote(meta, waiter, &who, &request).await;
        let elapsed = crate::clock::now().saturating_sub(t_sent);
        if votes.place.is_some() {
            self.place.set(votes.place);
        }
        self.wake(&votes.wake, &request).await;
        if let Some((role, kind)) = votes.foreign {
            if votes.yes > 0 {
                self.release_all(0, None).await.ok();
            }
            return Err(not_ours(&self.key_of(role), role, &kind));
        }
        if let Some(mode) = votes.other_kind {
            return Err(other_kind(self.mode, &self.keys, &mode));
        }
        let closes = votes.closes();
        if let Some(skip) = votes.skipped.take().filter(|_| closes) {
            if votes.yes > 0 {
                let _ = self.release_all(0, None).await;
            }
            return Ok(Acquire::Skipped(skip));
        }
        if votes.yes >= self.nodes.quorum() && timing::validity(self.ttl, elapsed).is_some() {
            self.granted(&votes).await?;
            return Ok(Acquire::Acquired { t_sent });
        }
        self.not_granted(votes, waiter).await
    }

    /// Wakes the runs an acquire said to: a fair queue's head whose turn has come; where
    /// newest wins, each superseded waiter (it tries again and finds its verdict) and a
    /// holder asked to stop (with the request).
    async fn wake(&self, tokens: &[String], request: &str) {
        if !self.mode.order.supersedes() {
            wake_head(&self.nodes, &self.keys, tokens.first().map(String::as_str)).await;
            return;
        }
        let Some(primary) = self.nodes.primary() else {
            return;
        };
        let element = if request.is_empty() { "1" } else { request };
        for token in tokens {
            let call = crate::scripts::newest::notify(&self.keys, token, element);
            let _ = primary.run::<i64>(&call).await;
        }
    }

    /// A quorum granted the lock in time: over several nodes its fencing number is
    /// raised on a quorum first (or the grant is given back), then the grant is kept.
    async fn granted(&self, votes: &Votes) -> Result<()> {
        if self.nodes.given() > 1 && !self.raise_fence(votes.fence).await {
            let _ = self.release_all(0, None).await;
            return Err(Error::unreachable(
                "could not record the fencing number on a quorum of nodes; trying again",
            ));
        }
        let _ = self.grant.set(Grant {
            fence: votes.fence,
            server_ms: votes.now_ms,
            slot: votes.slot.max(1),
            keys: self.keys.for_slot(votes.slot.max(1)),
            attempt: votes.attempt.0,
            rerun_of: votes.attempt.1.chars().take(8).collect(),
        });
        Ok(())
    }

    /// A round without a timely quorum: busy (the holder), or the most telling error;
    /// whatever may have landed is taken back, but a queue's late grant.
    async fn not_granted(&self, votes: Votes, waiter: Option<&Waiter>) -> Result<Acquire> {
        let keeps_place =
            self.mode.order.keeps_place_on_late_grant() && waiter.is_some() && votes.yes == 0;
        if (votes.yes > 0 || !votes.errors.is_empty()) && !keeps_place {
            // Ambiguous or partial: take our token back everywhere it may have landed.
            let _ = self.release_all(0, None).await;
        }
        // A fair queue's waiter whose reply came too late may have been granted the lock
        // (and left the queue): taking it back would hand its turn to the next in line.
        // Its next try finds the lock its own and keeps it; a wait that ends first
        // takes it back (see `wait::acquire`).
        let denied = votes.errors.len() + self.nodes.missing() < self.nodes.quorum();
        if let Some(holder) = votes.busy.filter(|_| denied) {
            return Ok(Acquire::Busy(holder));
        }
        match most_telling(votes.errors) {
            Some(err) if self.nodes.given() == 1 => Err(err),
            Some(err) => Err(err.context(format!(
                "no quorum: {} of {} nodes needed",
                self.nodes.quorum(),
                self.nodes.given()
            ))),
            // Every node said yes but the validity ran out while asking.
            None => Ok(Acquire::Busy(Holder::default())),
        }
    }

    /// The key of the name that plays `role` (for messages).
    fn key_of(&self, role: Key) -> Vec<u8> {
        let k = &self.keys;
        match role {
            Key::Meta => k.meta.clone(),
            Key::Fence => k.fence.clone(),
            Key::History => k.history.clone(),
            Key::Mode => k.mode.clone(),
            Key::Waiters => k.waiters.clone(),
            Key::Queue => k.queue.clone(),
            Key::Beats => k.beats.clone(),
            Key::QueueInfo => k.queue_info.clone(),
            Key::Wake | Key::OwnWake => k.wake.clone(),
            Key::Lock | Key::Slot => k.lock.clone(),
            Key::Once => self.once_key.clone().unwrap_or_else(|| k.once("")),
            Key::Verdicts => k.verdicts.clone(),
            Key::Order => k.order.clone(),
            Key::Shares => k.shares.clone(),
            Key::Writers => k.writers.clone(),
            Key::ShareMeta => k.share_meta(""),
        }
    }

    /// Who waits, for a fair queue's `status` (built only for one).
    fn who_waits(meta: &Meta) -> String {
        let mut who = serde_json::to_value(meta.who()).unwrap_or_default();
        who["since_ms"] = crate::clock::wall_ms().into();
        who.to_string()
    }

    /// Raises every node's fence counter to `fence` (see `scripts::fence`); whether a
    /// quorum took it.
    async fn raise_fence(&self, fence: u64) -> bool {
        let call = fence::call(&self.keys, fence, &self.token, self.retain_ms());
        let results = self.nodes.each(|n| n.run_idempotent::<i64>(&call)).await;
        results.iter().filter(|r| matches!(r, Ok(1))).count() >= self.nodes.quorum()
    }

    /// Sends the acquire script to every node and counts the answers.
    async fn vote(&self, meta: &Meta, waiter: Option<&Waiter>, who: &str, request: &str) -> Votes {
        let fields = meta.fields_at(crate::clock::wall_ms());
        let request = |heartbeat_ms: u64| {
            acquire::Request {
                keys: &self.keys,
                mode: self.mode,
                token: &self.token,
                ttl_ms: self.ttl_ms(),
                heartbeat_ms,
                known_holder: waiter.map_or("", |w| w.known_holder.as_str()),
                once_per_ms: self.once_per_ms(),
                max_attempts: self.completion.attempts(),
                rerun: self.completion.rerun_arg(self.waits_for_run.get()),
                slot_pin_ms: self.slot_pin.get(),
                once_key: self.once_key.as_deref(),
                retain_ms: self.retain_ms(),
                who,
                order_key: self.order_key,
                preempt: request,
                meta: &fields,
            }
            .call()
        };
        // A waiter joins the waiters on the primary node only (see `Nodes::primary`).
        let heartbeat = waiter.map_or(0, |w| w.heartbeat.as_millis().max(1) as u64);
        let (as_waiter, plain) = (request(heartbeat), request(0));
        let results = self
            .nodes
            .each(|n| {
                let call = if self.nodes.is_primary(n) {
                    &as_waiter
                } else {
                    &plain
                };
                n.run_idempotent::<Value>(call)
            })
            .await;
        let answers = self
            .nodes
            .iter()
            .zip(results)
            .map(|(node, result)| {
                result.and_then(|v| {
                    acquire::decode(v).ok_or_else(|| {
                        Error::new(
                            Kind::BadReply,
                            format!("{}: unexpected reply from the acquire script", node.url()),
                        )
                    })
                })
            })
            .collect();
        tally(answers)
    }

    /// One renewal round (compare-and-pexpire on every node).
    pub async fn renew(&self) -> Renew {
        let t_sent = crate::clock::now();
        let call = renew::call(self.keys(), self.mode, &self.token, self.ttl_ms());
        let results = self.nodes.each(|n| n.run_idempotent::<Value>(&call)).await;
        let (mut renewed, mut gone) = (0, 0);
        let mut last_error = None;
        let mut request = None;
        for result in results {
            match result.map(renew::decode) {
                Ok(renew::Renewed::Yes(asked)) => {
                    renewed += 1;
                    request = asked.map(|r| Preempt::parse(&r)).or(request);
                }
                Ok(renew::Renewed::No) => gone += 1,
                Err(e) => last_error = Some(e),
            }
        }
        let (given, missing) = (self.nodes.given(), self.nodes.missing());
        if let Some(request) = request.filter(|_| renewed >= self.nodes.quorum()) {
            Renew::Preempt { t_sent, request }
        } else if renewed >= self.nodes.quorum() {
            Renew::Renewed { t_sent }
        } else if gone + missing > given - self.nodes.quorum() {
            // Nodes not connected at the start never come back into this lease, so
            // they count like "not ours": a quorum can no longer be renewed.
            Renew::Lost(Lost::Gone {
                gone,
                given,
                missing,
            })
        } else {
            Renew::Unknown(last_error.unwrap_or_else(|| {
                Error::unreachable(format!("only {renewed} of {given} nodes renewed"))
            }))
        }
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
    /// [`Lease::mark_started`]): a `--once-per` or `--once-id` run.
    pub fn records_start(&self) -> bool {
        self.completion.once_per.is_some() || self.once_key.is_some()
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
            &self.token,
            who,
            self.retain_ms(),
            self.completion.once_per.is_some(),
            self.once_key.as_deref(),
        );
        let results = self.nodes.each(|n| n.run_idempotent::<i64>(&call)).await;
        let (mut started, mut gone) = (0, 0);
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(1) => started += 1,
                Ok(_) => gone += 1,
                Err(e) => errors.push(e),
            }
        }
        let quorum = self.nodes.quorum();
        if started >= quorum {
            Ok(true)
        } else if gone + self.nodes.missing() > self.nodes.given() - quorum {
            Ok(false)
        } else {
            Err(most_telling(errors).unwrap_or_else(|| {
                Error::unreachable(format!(
                    "only {started} of {} nodes recorded the start",
                    self.nodes.given()
                ))
            }))
        }
    }

    /// Over several nodes, joins the waiters on the primary node (where releases wake
    /// them) whatever the lock's state there (see `scripts::waiters::JOIN`); one
    /// node's acquire script has done it. `true` when the lock is free there: a
    /// release may have come before the join and woken nobody, so the waiter tries
    /// again soon.
    pub async fn join_primary(&self, heartbeat: Duration) -> bool {
        if let (true, Some(primary)) = (self.nodes.given() > 1, self.nodes.primary()) {
            let ms = heartbeat.as_millis() as u64;
            let joined = primary
                .run::<i64>(&waiters::join(&self.keys, &self.token, ms))
                .await;
            return matches!(joined, Ok(2));
        }
        false
    }

    /// Leaves the lock's waiters (a waiter that gives up); best effort: a waiter that
    /// cannot leaves with its heartbeat.
    pub async fn leave(&self) {
        if self.mode.order.is_queue() {
            self.leave_queue().await;
        } else {
            leave_waiters(&self.nodes, &self.keys, &self.token).await;
        }
    }

    /// Leaves the lock's waiters, handing a wake-up on (see [`hand_on`]); a fair
    /// queue's head that leaves wakes the next in line.
    pub async fn hand_on(&self) {
        if self.mode.order.is_queue() {
            self.leave_queue().await;
        } else {
            hand_on(&self.nodes, &self.keys, &self.token).await;
        }
    }

    /// Leaves a fair queue (see `scripts::waiters::FAIR_LEAVE`), waking the next head
    /// when this waiter was the head of a free lock.
    async fn leave_queue(&self) {
        let call = waiters::fair_leave(&self.keys, &self.token);
        let results = self.nodes.each(|n| n.run::<Value>(&call)).await;
        let head = results
            .into_iter()
            .flatten()
            .find_map(waiters::decode_fair_leave);
        wake_head(&self.nodes, &self.keys, head.as_deref()).await;
        self.settle().await;
    }

    /// The list this run blocks on while it waits: a fair queue's waiter its own (only
    /// the head is woken), others the lock's shared one.
    pub fn wake_key(&self) -> Vec<u8> {
        self.mode.order.wake_key(&self.keys, &self.token)
    }

    /// Waits until `until` for a request to stop on this holder's own wake list
    /// (`redlock preempt`, or a newcomer with `--supersede running`, pushes it there),
    /// so that the holder acts within a round trip rather than at its next renewal
    /// (which finds the request too, should this miss it). The pop goes to the primary
    /// node, on the holder's one connection there ([`crate::redis::Node::hold_pop`]);
    /// through a Cluster, where calls route by slot, a newest-wins holder pops on a
    /// blocking connection of its own, and any other only sleeps. `None` when `until`
    /// came (a failed pop sleeps out the rest: a failing node is never polled).
    pub async fn listen(&self, until: Point) -> Option<Preempt> {
        let own = self.keys.own_wake(&self.token);
        let wait = until.saturating_sub(crate::clock::now());
        let popped = match self.nodes.primary() {
            Some(primary) if primary.can_hold() => primary.hold_pop(&own, wait).await,
            Some(primary) if self.mode.order.supersedes() => primary.blocking_pop(&own, wait).await,
            _ => Ok(None),
        };
        if let Ok(Some(element)) = popped {
            return Some(Preempt::parse(&element));
        }
        if let Some(rest) = until.checked_sub(crate::clock::now()) {
            tokio::time::sleep(rest).await;
        }
        None
    }

    /// Ends [`Lease::listen`]'s hold: the primary's calls (the release) go through its
    /// own connection again, and a pop still blocked on the server ends with the hold
    /// connection.
    pub fn unhold(&self) {
        self.nodes.iter().for_each(|n| n.unhold());
    }

    /// Whether `redlock preempt` can ask this holder to stop (not a semaphore's: the
    /// preempt script refuses a name with no one holder), so it waits for the request
    /// between renewals ([`Lease::listen`]).
    pub fn can_be_asked(&self) -> bool {
        matches!(self.mode.holders, crate::policy::Holders::Exclusive)
    }

    /// How the name's waiters are served.
    pub fn order(&self) -> Order {
        self.mode.order
    }

    /// In a fair queue: this run's place (1-based) and the queue's length, as the last
    /// try found them.
    pub fn place(&self) -> Option<(u64, u64)> {
        self.place.get().filter(|(place, _)| *place > 0)
    }

    /// Releases on every node; with `keep_ms`, leaves the key ours for that long instead.
    /// A delete wakes one waiter, if any. With an `ending`, the run is recorded in the
    /// lock's history on every node, in the same script (see `scripts::release`).
    pub async fn release_all(&self, keep_ms: u64, ending: Option<&Ending>) -> Result<Release> {
        let request = release::Request {
            keys: self.keys(),
            mode: self.mode,
            token: &self.token,
            keep_ms,
            retain_ms: self.retain_ms(),
            once_per: self.once_per_ms() > 0,
            once_key: self.once_key.as_deref(),
            record: ending.map(Ending::record),
        };
        // Only the primary node wakes a waiter (see `Nodes::primary`).
        let (waking, quiet) = (request.call(true), request.call(false));
        let results = self
            .nodes
            .each(|n| {
                n.run::<Value>(if self.nodes.is_primary(n) {
                    &waking
                } else {
                    &quiet
                })
            })
            .await;
        let mut outcome = Release::NotHeld;
        let mut first_error = None;
        let mut head = None;
        let mut woken = false;
        for (node, result) in self.nodes.iter().zip(results) {
            let decoded = result.and_then(|v| {
                release::decode(v).ok_or_else(|| {
                    Error::new(Kind::BadReply, "unexpected reply from the release script")
                })
            });
            match decoded {
                Ok((Outcome::Deleted | Outcome::AlreadyReleased, wake)) => {
                    outcome = Release::Deleted;
                    head = head.or(wake);
                    woken |= self.nodes.is_primary(node);
                }
                Ok((Outcome::Kept, _)) if outcome != Release::Deleted => outcome = Release::Kept,
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        wake_head(&self.nodes, &self.keys, head.as_deref()).await;
        if outcome == Release::Deleted && !woken && !self.mode.order.release_wakes_head() {
            // Over several nodes a holder may not hold the primary (it lost the race
            // there): its release pushed no wake-up, so one is handed on here.
            hand_on(&self.nodes, &self.keys, &self.token).await;
        }
        self.settle().await;
        match first_error {
            Some(e) if outcome == Release::NotHeld => Err(e),
            _ => Ok(outcome),
        }
    }

    /// Removes the mode key of a semaphore once no slot is held, of a fair queue once
    /// the lock is free and nobody waits (best effort: it expires a ttl or a heartbeat
    /// after its last use anyway). Nothing for a plain lock.
    async fn settle(&self) {
        if let Some(call) = release::settle(&self.keys, self.mode) {
            let _ = self.nodes.each(|n| n.run::<i64>(&call)).await;
        }
    }

    /// Whether `token` is the lock's value on a quorum of nodes (re-entrancy check).
    /// A node that does not answer only matters when it could have made the difference.
    /// `key`: the lock key to look at (a semaphore's slot; else the lock's).
    pub async fn held_by(&self, key: &[u8], token: &str) -> Result<bool> {
        let cmd = crate::redis::command::get(key);
        let results = self.nodes.each(|n| n.query::<Value>(&cmd)).await;
        let mut yes = 0;
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(Value::BulkString(v)) if v == token.as_bytes() => yes += 1,
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        let quorum = self.nodes.quorum();
        if yes >= quorum || yes + errors.len() < quorum {
            return Ok(yes >= quorum);
        }
        Err(errors.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes(fence: u64, now_ms: u64) -> Result<Acquired> {
        Ok(Acquired::Yes {
            fence,
            now_ms,
            slot: 1,
            attempt: 0,
            rerun_of: String::new(),
            wake: Vec::new(),
        })
    }

    #[test]
    fn tally_counts_yes_votes_and_keeps_the_largest_fence() {
        let votes = tally(vec![
            yes(7, 100),
            Err(Error::unreachable("down")),
            yes(9, 90),
        ]);
        assert_eq!((votes.yes, votes.fence, votes.now_ms), (2, 9, 100));
        assert_eq!(votes.errors.len(), 1);
        let refused = tally(vec![
            yes(1, 1),
            Ok(Acquired::Foreign {
                key: Key::Meta,
                kind: "list".into(),
            }),
        ]);
        assert_eq!(refused.foreign, Some((Key::Meta, "list".into())));
        let other = tally(vec![Ok(Acquired::OtherKind("fair".into()))]);
        assert_eq!(other.other_kind.as_deref(), Some("fair"));
        assert_eq!(tally(vec![]), Votes::default());
    }

    #[test]
    fn a_closed_slot_takes_a_majority_of_the_nodes_that_answer() {
        let ran = || {
            Ok(Acquired::Skipped(Skip {
                slot_ms: 60_000,
                why: Closed::Ran,
                record: Vec::new(),
                now_ms: 0,
            }))
        };
        // One node that missed a failed run's release never vetoes the others.
        assert!(!tally(vec![yes(1, 1), yes(2, 1), ran()]).closes());
        assert!(tally(vec![ran(), ran(), yes(2, 1)]).closes());
        // Of the nodes that answer: one down, one closed, one open is no majority.
        let split = vec![ran(), yes(1, 1), Err(Error::unreachable("down"))];
        assert!(!tally(split).closes());
        assert!(tally(vec![ran(), Err(Error::unreachable("down"))]).closes());
        assert!(tally(vec![ran()]).closes());
        assert!(!tally(vec![yes(1, 1)]).closes());
    }

    #[test]
    fn lost_reasons_read_as_one_phrase() {
        let one = Lost::Gone {
            gone: 1,
            given: 1,
            missing: 0,
        };
        assert_eq!(one.to_string(), "the key is gone or holds another token");
        let some = Lost::Gone {
            gone: 2,
            given: 5,
            missing: 1,
        };
        assert_eq!(
            some.to_string(),
            "the key is gone or taken on 2 of 5 nodes (1 more unreachable since the start)"
        );
        let expiring = Lost::Expiring { last_error: None };
        assert_eq!(
            expiring.to_string(),
            "renewals failed until the lease was about to end (no answer)"
        );
        let paused = |ms| {
            Lost::Paused {
                for_: Duration::from_millis(ms),
            }
            .to_string()
        };
        assert!(
            paused(8_049).starts_with("the wrapper was stopped for 8.0s (SIGSTOP"),
            "{}",
            paused(8_049)
        );
        assert!(paused(1_940).starts_with("the wrapper was stopped for 1.9s"));
        assert!(paused(125_000).starts_with("the wrapper was stopped for 2m 5s"));
    }
}

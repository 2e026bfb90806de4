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

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use redis::Value;

use crate::error::{Error, Kind, Result, most_telling};
use crate::history::Ending;
use crate::holder::{Holder, Meta};
use crate::keys::{LockKeys, Shape};
use crate::quorum::Nodes;
use crate::redis::reply::{self, Acquired};
use crate::redis::scripts::{self, invocation};
use crate::timing::{self, Point};

/// A lock on a set of nodes, with one token.
pub struct Lease {
    nodes: Nodes,
    keys: LockKeys,
    token: String,
    ttl: Duration,
    /// The fencing number of the last successful acquire (0: none yet).
    fence: std::sync::atomic::AtomicU64,
    /// `--once-per`: the period whose slot may run once (ms; 0: none).
    once_per_ms: u64,
    /// The server's time at the last successful acquire, ms (0: not asked, see
    /// `once_per_ms`).
    acquired_ms: std::sync::atomic::AtomicU64,
    /// What kind of lock the name is.
    shape: Shape,
    /// The slot taken and its keys (a semaphore's slot > 1); unset: the name's own.
    held: std::sync::OnceLock<(u32, LockKeys)>,
    /// A fair queue's waiter: its place and the queue's length at the last try.
    place: (std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64),
}

/// Takes `token` out of the lock's waiters, on the primary node where waiters wait
/// (best effort: an entry left behind expires with the waiters' heartbeat).
pub async fn leave_waiters(nodes: &Nodes, keys: &LockKeys, token: &str) {
    let mut call = invocation(&scripts::LEAVE, &[&keys.waiters, &keys.wake]);
    call.arg(token);
    if let Some(primary) = nodes.primary() {
        let _ = primary.run::<i64>(&call).await;
    }
}

/// Takes `token` out of the lock's waiters and hands a wake-up on to whoever else
/// waits (a waiter that took a wake-up it has no use for: `redlock wait`, a `--once-per`
/// run whose slot already ran); best effort, like [`leave_waiters`].
pub async fn hand_on(nodes: &Nodes, keys: &LockKeys, token: &str) {
    let mut call = invocation(&scripts::HAND_ON, &[&keys.waiters, &keys.wake]);
    call.arg(token).arg(scripts::WAKE_TTL_MS);
    if let Some(primary) = nodes.primary() {
        let _ = primary.run::<i64>(&call).await;
    }
}

/// The usage error of a run whose kind of lock differs from the one the name is in use
/// as (`mode`: the mode key's value, or `plain`).
fn other_kind(shape: Shape, keys: &LockKeys, mode: &str) -> Error {
    let name = keys.display_name();
    let is = match mode.strip_prefix("limit ") {
        Some(limit) => format!("a semaphore of {limit} slots (--limit {limit})"),
        None if mode == "fair" => "a fair queue (--fair)".to_string(),
        None if mode == "plain" => "a plain lock (no --limit, no --fair)".to_string(),
        None => format!("a lock of another kind ({mode:?})"),
    };
    let asked = match shape {
        Shape::Plain => "a plain lock".to_string(),
        Shape::Semaphore(limit) => format!("--limit {limit}"),
        Shape::Fair => "--fair".to_string(),
    };
    Error::usage(format!(
        "lock {name} is in use as {is}, and this run asked for {asked}; every run on a name must ask for the same kind (the name's kind is kept until a ttl after its last holder or waiter)"
    ))
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
    /// `--once-per`: the slot starting at `slot_ms` (server time) already had a
    /// successful run, recorded as `record` (JSON, see `history::RunRecord`).
    AlreadyRan { slot_ms: u64, record: Vec<u8> },
}

/// What a renewal round gave.
#[derive(Debug)]
pub enum Renew {
    Renewed {
        t_sent: Point,
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
    /// Held for `--max-hold`: given up on purpose.
    MaxHold { limit: Duration },
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
            Lost::Stopped { for_ } => write!(
                f,
                "the job was stopped (Ctrl-Z) for {}, longer than the lease",
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
#[derive(Default)]
struct Votes {
    yes: usize,
    /// The largest fencing number among the yes votes.
    fence: u64,
    busy: Option<Holder>,
    /// A key of ours that holds something else: (the key, its type).
    not_a_lock: Option<(Vec<u8>, String)>,
    /// The server time of the yes votes (the largest), when asked for.
    now_ms: u64,
    /// A node's history says the `--once-per` slot already ran: (slot, record).
    already_ran: Option<(u64, Vec<u8>)>,
    /// The semaphore slot taken (single node).
    slot: u32,
    /// The name is in use as another kind of lock (the mode key's value).
    other_kind: Option<String>,
    errors: Vec<Error>,
}

impl Lease {
    /// The lease of `keys` on `nodes` with `token` (see [`new_token`]), renewed to `ttl`.
    pub fn new(nodes: Nodes, keys: LockKeys, ttl: Duration, token: String) -> Self {
        Lease {
            nodes,
            keys,
            token,
            ttl,
            fence: std::sync::atomic::AtomicU64::new(0),
            once_per_ms: 0,
            acquired_ms: std::sync::atomic::AtomicU64::new(0),
            shape: Shape::Plain,
            held: std::sync::OnceLock::new(),
            place: Default::default(),
        }
    }

    /// The lease of a lock of another kind than plain (see [`Shape`]).
    pub fn shape(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// Whether the lock is a semaphore (`--limit`).
    pub fn is_semaphore(&self) -> bool {
        self.limit() > 1
    }

    /// How many may hold the lock at once (1: a plain lock).
    pub fn limit(&self) -> u32 {
        match self.shape {
            Shape::Semaphore(limit) => limit,
            _ => 1,
        }
    }

    /// The semaphore slot held (1-based; 1 for a plain lock).
    pub fn slot(&self) -> u32 {
        self.held.get().map_or(1, |(slot, _)| *slot)
    }

    /// The lease of a `--once-per` run: an acquire in a slot of `period` that already
    /// had a successful run gives [`Acquire::AlreadyRan`] and takes nothing.
    pub fn once_per(mut self, period: Option<Duration>) -> Self {
        self.once_per_ms = period.map_or(0, |p| p.as_millis().max(1) as u64);
        self
    }

    /// The server's time at the acquisition, ms, for a `--once-per` lease (else 0).
    pub fn acquired_ms(&self) -> u64 {
        self.acquired_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The fencing number of this lease's acquisition: the lock's counter, incremented
    /// by every acquisition; over several nodes the largest of the nodes that said yes
    /// (any two majorities share a node, so a later holder sees a larger one). 0 before
    /// the lease is acquired.
    pub fn fence(&self) -> u64 {
        self.fence.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The lock's keys; once a semaphore slot is held, the lock and metadata keys are
    /// the slot's.
    pub fn keys(&self) -> &LockKeys {
        self.held.get().map_or(&self.keys, |(_, keys)| keys)
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

    /// One acquire round. Errors only when the nodes' errors (not a busy lock) kept the
    /// round from a quorum; a key of another type is an error naming its type. A
    /// `waiter` joins the lock's waiters when it finds it busy (see [`Waiter`]).
    pub async fn acquire(&self, meta: &Meta, waiter: Option<&Waiter>) -> Result<Acquire> {
        let t_sent = crate::clock::now();
        let votes = self.vote(meta, waiter).await;
        let elapsed = crate::clock::now().saturating_sub(t_sent);
        if let Some((key, kind)) = votes.not_a_lock {
            self.release_all(0, None).await.ok();
            return Err(self.not_a_lock(&key, &kind));
        }
        if let Some(mode) = votes.other_kind {
            return Err(other_kind(self.shape, &self.keys, &mode));
        }
        if let Some((slot_ms, record)) = votes.already_ran {
            if votes.yes > 0 {
                let _ = self.release_all(0, None).await;
            }
            return Ok(Acquire::AlreadyRan { slot_ms, record });
        }
        if votes.yes >= self.nodes.quorum() && timing::validity(self.ttl, elapsed).is_some() {
            if self.nodes.given() > 1 && !self.raise_fence(votes.fence).await {
                let _ = self.release_all(0, None).await;
                return Err(Error::unreachable(
                    "could not record the fencing number on a quorum of nodes; trying again",
                ));
            }
            self.fence
                .store(votes.fence, std::sync::atomic::Ordering::Relaxed);
            self.acquired_ms
                .store(votes.now_ms, std::sync::atomic::Ordering::Relaxed);
            if votes.slot > 1 {
                let _ = self.held.set((votes.slot, self.keys.for_slot(votes.slot)));
            }
            return Ok(Acquire::Acquired { t_sent });
        }
        if votes.yes > 0 || !votes.errors.is_empty() {
            // Ambiguous or partial: take our token back everywhere it may have landed.
            let _ = self.release_all(0, None).await;
        }
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

    /// Who waits, for a fair queue's `status` (built only for one).
    fn who_waits(meta: &Meta) -> String {
        serde_json::json!({
            "host": meta.host,
            "pid": meta.pid,
            "user": meta.user,
            "cmd": meta.cmd,
            "since_ms": crate::clock::wall_ms(),
        })
        .to_string()
    }

    /// The error for a key of ours that holds `kind`, another type than we write there.
    fn not_a_lock(&self, key: &[u8], kind: &str) -> Error {
        let what = if key == self.keys.lock {
            "a lock"
        } else if key == self.keys.fence {
            "redlock's fence counter"
        } else if key == self.keys.history {
            "redlock's run history"
        } else {
            "redlock's metadata"
        };
        Error::new(
            Kind::NotALock,
            format!(
                "key {} holds a {kind}, not {what}; choose another --key or --prefix",
                crate::report::printable(key)
            ),
        )
    }

    /// Raises every node's fence counter to `fence` (see `scripts::RAISE_FENCE`);
    /// whether a quorum took it.
    async fn raise_fence(&self, fence: u64) -> bool {
        let mut call = invocation(&scripts::RAISE_FENCE, &[&self.keys.fence, &self.keys.meta]);
        call.arg(fence).arg(&self.token);
        let results = self.nodes.each(|n| n.run_idempotent::<i64>(&call)).await;
        results.iter().filter(|r| matches!(r, Ok(1))).count() >= self.nodes.quorum()
    }

    /// Sends the acquire script to every node and counts the answers.
    async fn vote(&self, meta: &Meta, waiter: Option<&Waiter>) -> Votes {
        let (script, keys) = self.acquire_keys();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
        let known = waiter.map_or("", |w| w.known_holder.as_str());
        let who = (self.shape == Shape::Fair).then(|| Self::who_waits(meta));
        let call = |heartbeat: u64| {
            let mut call = invocation(script, &keys);
            call.arg(&self.token)
                .arg(self.ttl_ms())
                .arg(heartbeat)
                .arg(known)
                .arg(self.once_per_ms);
            match self.shape {
                Shape::Semaphore(limit) => {
                    call.arg(limit);
                }
                Shape::Fair => {
                    call.arg(who.as_deref().unwrap_or("{}"));
                }
                Shape::Plain => {}
            }
            for (field, value) in meta.fields() {
                call.arg(field).arg(value);
            }
            call
        };
        // A waiter joins the waiters on the primary node only (see `Nodes::primary`).
        let heartbeat = waiter.map_or(0, |w| w.heartbeat.as_millis().max(1) as u64);
        let (as_waiter, plain) = (call(heartbeat), call(0));
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
        let mut votes = Votes::default();
        for (node, result) in self.nodes.iter().zip(results) {
            let decoded = result.and_then(|v| {
                reply::acquired(v).ok_or_else(|| {
                    Error::new(
                        Kind::BadReply,
                        format!("{}: unexpected reply from the acquire script", node.url()),
                    )
                })
            });
            self.count(&mut votes, decoded);
        }
        votes
    }

    /// The acquire script of this lease's shape and its keys, in the order it takes
    /// them (see `redis/scripts.rs`): the lock's own keys borrowed, the ones made for
    /// this call (a semaphore's slots, a fair waiter's wake list) owned.
    fn acquire_keys(&self) -> (&'static redis::Script, Vec<Cow<'_, [u8]>>) {
        let k = &self.keys;
        fn borrowed<'a>(keys: &[&'a Vec<u8>]) -> Vec<Cow<'a, [u8]>> {
            keys.iter()
                .map(|key| Cow::Borrowed(key.as_slice()))
                .collect()
        }
        match self.shape {
            Shape::Plain => (
                &scripts::ACQUIRE,
                borrowed(&[
                    &k.lock, &k.meta, &k.waiters, &k.fence, &k.wake, &k.history, &k.mode,
                ]),
            ),
            Shape::Semaphore(limit) => {
                let mut keys = borrowed(&[&k.mode, &k.waiters, &k.wake, &k.fence, &k.history]);
                for slot in (1..=limit).map(|i| k.for_slot(i)) {
                    keys.extend([Cow::Owned(slot.lock), Cow::Owned(slot.meta)]);
                }
                (&scripts::SEM_ACQUIRE, keys)
            }
            Shape::Fair => {
                let mut keys = borrowed(&[
                    &k.lock,
                    &k.meta,
                    &k.queue,
                    &k.beats,
                    &k.fence,
                    &k.history,
                    &k.mode,
                    &k.queue_info,
                ]);
                keys.push(Cow::Owned(k.own_wake(&self.token)));
                (&scripts::FAIR_ACQUIRE, keys)
            }
        }
    }

    /// Counts one node's answer to the acquire script.
    fn count(&self, votes: &mut Votes, decoded: Result<Acquired>) {
        match decoded {
            Ok(Acquired::Yes {
                fence,
                now_ms,
                slot,
            }) => {
                votes.yes += 1;
                votes.slot = u32::try_from(slot).unwrap_or(1);
                votes.fence = votes.fence.max(u64::try_from(fence).unwrap_or(0));
                votes.now_ms = votes.now_ms.max(u64::try_from(now_ms).unwrap_or(0));
            }
            Ok(Acquired::AlreadyRan { slot_ms, record }) => {
                votes.already_ran = Some((u64::try_from(slot_ms).unwrap_or(0), record));
            }
            Ok(Acquired::OtherKind(mode)) => votes.other_kind = Some(mode),
            Ok(Acquired::Busy { held, place }) => {
                votes.busy.get_or_insert_with(|| Holder::from_held(&held));
                if let Some(place) = place {
                    self.set_place(place);
                }
            }
            Ok(Acquired::ForeignHistory(kind)) => {
                votes.not_a_lock = Some((self.keys.history.clone(), kind));
            }
            Ok(Acquired::NotALock(kind)) => {
                votes.not_a_lock = Some((self.keys.lock.clone(), kind));
            }
            Ok(Acquired::ForeignMeta(kind)) => {
                votes.not_a_lock = Some((self.keys.meta.clone(), kind));
            }
            Ok(Acquired::ForeignFence(kind)) => {
                votes.not_a_lock = Some((self.keys.fence.clone(), kind));
            }
            Err(e) => votes.errors.push(e),
        }
    }

    /// One renewal round (compare-and-pexpire on every node).
    pub async fn renew(&self) -> Renew {
        let t_sent = crate::clock::now();
        let keys = self.keys();
        let mode = self.shape.mode();
        let mut call = match &mode {
            Some(_) => invocation(&scripts::RENEW, &[&keys.lock, &keys.meta, &keys.mode]),
            None => invocation(&scripts::RENEW, &[&keys.lock, &keys.meta]),
        };
        call.arg(&self.token).arg(self.ttl_ms());
        if let Some(mode) = &mode {
            call.arg(mode);
        }
        let results = self.nodes.each(|n| n.run_idempotent::<i64>(&call)).await;
        let (mut renewed, mut gone) = (0, 0);
        let mut last_error = None;
        for result in results {
            match result {
                Ok(1) => renewed += 1,
                Ok(_) => gone += 1,
                Err(e) => last_error = Some(e),
            }
        }
        let (given, missing) = (self.nodes.given(), self.nodes.missing());
        if renewed >= self.nodes.quorum() {
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

    /// Leaves the lock's waiters (a waiter that gives up); best effort: a waiter that
    /// cannot leaves with its heartbeat.
    pub async fn leave(&self) {
        if self.shape == Shape::Fair {
            self.leave_queue().await;
        } else {
            leave_waiters(&self.nodes, &self.keys, &self.token).await;
        }
    }

    /// Leaves the lock's waiters, handing a wake-up on (see [`hand_on`]); a fair
    /// queue's head that leaves wakes the next in line.
    pub async fn hand_on(&self) {
        if self.shape == Shape::Fair {
            self.leave_queue().await;
        } else {
            hand_on(&self.nodes, &self.keys, &self.token).await;
        }
    }

    /// Leaves a fair queue (see `scripts::FAIR_LEAVE`).
    async fn leave_queue(&self) {
        let k = &self.keys;
        let own = k.own_wake(&self.token);
        let mut call = invocation(
            &scripts::FAIR_LEAVE,
            &[&k.lock, &k.queue, &k.beats, &k.queue_info, &own],
        );
        call.arg(&self.token).arg(scripts::WAKE_TTL_MS);
        let _ = self.nodes.each(|n| n.run::<i64>(&call)).await;
        self.settle().await;
    }

    /// The list this run blocks on while it waits: a fair queue's waiter its own (only
    /// the head is woken), others the lock's shared one.
    pub fn wake_key(&self) -> Vec<u8> {
        match self.shape {
            Shape::Fair => self.keys.own_wake(&self.token),
            _ => self.keys.wake.clone(),
        }
    }

    /// Whether the lock is a fair queue (`--fair`).
    pub fn is_fair(&self) -> bool {
        self.shape == Shape::Fair
    }

    /// In a fair queue: this run's place (1-based) and the queue's length, as the last
    /// try found them.
    pub fn place(&self) -> Option<(u64, u64)> {
        let (place, of) = (
            self.place.0.load(std::sync::atomic::Ordering::Relaxed),
            self.place.1.load(std::sync::atomic::Ordering::Relaxed),
        );
        (place > 0).then_some((place, of))
    }

    fn set_place(&self, (place, of): (u64, u64)) {
        self.place
            .0
            .store(place, std::sync::atomic::Ordering::Relaxed);
        self.place.1.store(of, std::sync::atomic::Ordering::Relaxed);
    }

    /// Releases on every node; with `keep_ms`, leaves the key ours for that long instead.
    /// A delete wakes one waiter, if any. With an `ending`, the run is recorded in the
    /// lock's history on every node, in the same script (see `scripts::RELEASE`).
    pub async fn release_all(&self, keep_ms: u64, ending: Option<&Ending>) -> Result<Release> {
        let k = self.keys();
        let keys: [&[u8]; 6] = [&k.lock, &k.meta, &k.waiters, &k.wake, &k.history, &k.queue];
        let record = ending.map(Ending::args);
        let fair = if self.shape == Shape::Fair { "1" } else { "0" };
        // Only the primary node wakes a waiter (see `Nodes::primary`).
        let call = |wake_ttl: u64| {
            let mut call = invocation(&scripts::RELEASE, &keys);
            call.arg(&self.token).arg(keep_ms).arg(wake_ttl).arg(fair);
            for arg in record.iter().flatten() {
                call.arg(arg);
            }
            call
        };
        let (waking, quiet) = (call(scripts::WAKE_TTL_MS), call(0));
        let results = self
            .nodes
            .each(|n| {
                n.run::<i64>(if self.nodes.is_primary(n) {
                    &waking
                } else {
                    &quiet
                })
            })
            .await;
        self.settle().await;
        let mut outcome = Release::NotHeld;
        let mut first_error = None;
        for result in results {
            match result {
                // 3: an earlier try of this release deleted it (its reply was lost).
                Ok(1 | 3) => outcome = Release::Deleted,
                Ok(2) if outcome != Release::Deleted => outcome = Release::Kept,
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if outcome == Release::NotHeld => Err(e),
            _ => Ok(outcome),
        }
    }

    /// Removes the mode key of a semaphore once no slot is held, of a fair queue once
    /// the lock is free and nobody waits (best effort: it expires a ttl or a heartbeat
    /// after its last use anyway). Nothing for a plain lock.
    async fn settle(&self) {
        let in_use: Vec<Vec<u8>> = match self.shape {
            Shape::Plain => return,
            Shape::Semaphore(limit) => (1..=limit).map(|i| self.keys.for_slot(i).lock).collect(),
            Shape::Fair => vec![self.keys.lock.clone(), self.keys.queue.clone()],
        };
        let mut keys: Vec<&[u8]> = vec![&self.keys.mode];
        keys.extend(in_use.iter().map(Vec::as_slice));
        let call = invocation(&scripts::SETTLE, &keys);
        let _ = self.nodes.each(|n| n.run::<i64>(&call)).await;
    }

    /// Whether `token` is the lock's value on a quorum of nodes (re-entrancy check).
    /// A node that does not answer only matters when it could have made the difference.
    /// `key`: the lock key to look at (a semaphore's slot; else the lock's).
    pub async fn held_by(&self, key: &[u8], token: &str) -> Result<bool> {
        let cmd = redis::cmd("GET").arg(key).clone();
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
    }
}

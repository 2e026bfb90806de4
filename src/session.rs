//! The session: what every kind of lock shares once it holds or tries for a name on
//! one or more independent Redis masters ([`Nodes`]; one server is the case N = 1 of
//! the Redlock algorithm): the token, the nodes and their quorum, the vote of an
//! acquire round and its tally, renewal, the fencing number, and releasing the token.
//! What a kind decides (which acquire script, who is woken, how a waiter leaves) is in
//! `kinds/`; the lease (`lease.rs`) is a session with a kind.
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
//! What an acquisition gave is a [`Grant`] (fence, server time, slot), kept in the
//! session once held. Which script runs with which KEYS and ARGV is the scripts'
//! business (`src/scripts/`); the session only counts the nodes' answers ([`tally`], a
//! pure function).

use std::cell::OnceCell;
use std::fmt;
use std::time::Duration;

use redis::Value;
use serde::Deserialize;

use crate::error::{Error, Kind, Result};
use crate::holder::Holder;
use crate::keys::LockKeys;
use crate::quorum::Nodes;
use crate::redis::{Call, Note};
use crate::scripts::acquire::{Acquired, Skip};
use crate::scripts::release::{self, Outcome};
use crate::scripts::{Key, fence, renew, waiters};
use crate::timing::Point;

/// How long a name's fence counter and run history are kept after its last use,
/// unless `--retain` says otherwise.
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(30 * 24 * 3600);

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
    /// A vanished run a node said this try tells (the first node's that said so).
    pub told: Vec<u8>,
    /// The semaphore slot taken (single node).
    pub slot: u32,
    /// The name is in use as another kind of lock (the mode key's value).
    pub other_kind: Option<String>,
    /// A calendar `--once-per`: a node's time was outside the slot the client computed
    /// (that node's time, ms).
    pub other_slot: Option<u64>,
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
                told,
            }) => {
                votes.wake.extend(wake);
                if votes.told.is_empty() {
                    votes.told = told;
                }
                votes.yes += 1;
                votes.slot = slot;
                if attempt > votes.attempt.0 {
                    votes.attempt = (attempt, rerun_of);
                }
                votes.fence = votes.fence.max(fence);
                votes.now_ms = votes.now_ms.max(now_ms);
            }
            Ok(Acquired::Skipped(mut skip)) => {
                votes.skips += 1;
                // A node that marked a vanished run told: this try tells it.
                skip.told |= votes.skipped.as_ref().is_some_and(|s| s.told);
                votes.skipped = Some(skip);
            }
            Ok(Acquired::OtherKind(mode)) => votes.other_kind = Some(mode),
            Ok(Acquired::OtherSlot { now_ms }) => votes.other_slot = Some(now_ms),
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

/// A token's hold on a name's keys on a set of nodes: what every kind shares.
pub struct Session {
    nodes: Nodes,
    keys: LockKeys,
    token: String,
    ttl: Duration,
    /// `--retain`: how long the fence counter and history outlive the last use.
    retain: Duration,
    /// What the acquisition gave, once held.
    grant: OnceCell<Grant>,
    /// When the lease was last known to be on the nodes (this host's clock): the
    /// grant, then each renewal's send. A renewal that finds it gone on a node tells
    /// the node it may have restarted after this (see [`crate::redis::Node::suspect`]).
    confirmed_at: std::cell::Cell<Option<Point>>,
}

/// What one release round found on the nodes, before the kind's follow-up.
pub struct Released {
    pub outcome: Release,
    /// A queue's head the release says to wake.
    pub head: Option<String>,
    /// Whether the primary node (where waiters wait) released, and so woke a waiter.
    pub woken: bool,
    pub error: Option<Error>,
}

impl Session {
    /// The session of `keys` on `nodes` with `token` (see [`new_token`]), renewed to
    /// `ttl`.
    pub fn new(nodes: Nodes, keys: LockKeys, ttl: Duration, token: String) -> Self {
        Session {
            nodes,
            keys,
            token,
            ttl,
            retain: DEFAULT_RETAIN,
            grant: OnceCell::new(),
            confirmed_at: std::cell::Cell::new(None),
        }
    }

    /// The same nodes, name and settings with a fresh token, nothing held yet.
    pub fn next_term(self) -> Session {
        Session {
            token: new_token(),
            grant: OnceCell::new(),
            confirmed_at: std::cell::Cell::new(None),
            ..self
        }
    }

    /// How long the name's fence counter and history are kept (`--retain`).
    pub fn set_retain(&mut self, retain: Duration) {
        self.retain = retain;
    }

    /// Keeps what an acquisition gave (the first, until [`Session::given_back`]).
    pub fn set_grant(&self, grant: Grant) {
        let _ = self.grant.set(grant);
        self.confirmed_at.set(Some(crate::clock::now()));
    }

    /// The acquisition was given back (a run of several names that found another name
    /// busy): its grant is forgotten, so that the next one's fence and slot are the
    /// run's, not the given-back one's.
    pub fn given_back(&mut self) {
        self.grant = OnceCell::new();
        self.confirmed_at.set(None);
    }

    /// What the acquisition gave, once held.
    pub fn grant(&self) -> Option<&Grant> {
        self.grant.get()
    }

    /// The semaphore slot held (1-based; 1 for a plain lock).
    pub fn slot(&self) -> u32 {
        self.grant.get().map_or(1, |g| g.slot)
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

    /// The name's own keys (a semaphore's first slot), whatever slot is held.
    pub fn name_keys(&self) -> &LockKeys {
        &self.keys
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

    pub fn ttl_ms(&self) -> u64 {
        self.ttl.as_millis().max(1) as u64
    }

    pub fn retain_ms(&self) -> u64 {
        self.retain.as_millis().max(1) as u64
    }

    /// Raises every node's fence counter to `fence` (see `scripts::fence`); whether a
    /// quorum took it.
    pub async fn raise_fence(&self, fence: u64) -> bool {
        let call = fence::call(&self.keys, fence, &self.token, self.retain_ms());
        let results = self.nodes.each(|n| n.run_idempotent::<i64>(&call)).await;
        results.iter().filter(|r| matches!(r, Ok(1))).count() >= self.nodes.quorum()
    }

    /// One renewal round: the kind's renewal `call` (compare-and-pexpire) on every
    /// node.
    ///
    /// Through Sentinel each node first follows its master (one ask to one sentinel,
    /// see `redis::Node::follow`), so the renewal goes where the lock lives now, and a
    /// renewal that succeeded is acknowledged by a replica where there is one
    /// (`redis::Node::acknowledge`). `t_sent` is taken before the ask: the lease is
    /// counted from a point no later than the renewal's send.
    pub async fn renew(&self, call: &Call) -> Renew {
        let t_sent = crate::clock::now();
        let confirmed_at = self.confirmed_at.get();
        let key = &self.keys.lock;
        let results = self
            .nodes
            .each(|n| async move {
                n.follow().await;
                let value = n.run_idempotent::<Value>(call).await?;
                match renew::decode(value.clone()) {
                    renew::Renewed::Yes(_) => n.acknowledge(false, key).await,
                    renew::Renewed::No => n.suspect(confirmed_at),
                }
                Ok(value)
            })
            .await;
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
        if renewed >= self.nodes.quorum() {
            self.confirmed_at.set(Some(t_sent));
        }
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

    /// Waits until `until` for a request to stop on this holder's own wake list
    /// (`redlock preempt`, or a newcomer with `--supersede running`, pushes it there),
    /// and on `others` (the own wake lists of the other names a run of several names
    /// holds, on the same server), so that the holder acts within a round trip rather
    /// than at its next renewal (which finds the request too, should this miss it). One
    /// pop over every list goes to the primary node, on the holder's one connection
    /// there ([`crate::redis::Node::hold_pop`]); through a Cluster, where calls route by
    /// slot, a holder of one name pops on a blocking connection of its own to its
    /// name's master (as a newest-wins holder does anywhere: `blocking`, the kind says
    /// so), and a holder of several names (their lists in several slots: no one pop
    /// can take them) only sleeps: its next renewal finds the request. The request and which
    /// list it came on (0: this holder's, `i`: `others[i - 1]`); `None` when `until`
    /// came (a failed pop sleeps out the rest: a failing node is never polled).
    pub async fn listen(
        &self,
        until: Point,
        blocking: bool,
        others: &[Vec<u8>],
    ) -> Option<(usize, Preempt)> {
        let lists: Vec<Vec<u8>> = std::iter::once(self.own_wake())
            .chain(others.iter().cloned())
            .collect();
        let wait = until.saturating_sub(crate::clock::now());
        let popped = match self.nodes.primary() {
            Some(primary) if primary.can_hold() => primary.hold_pop(&lists, wait).await,
            Some(primary) if (blocking || primary.routes_by_slot()) && others.is_empty() => {
                let popped = primary.blocking_pop(&lists[0], wait).await;
                popped.map(|found| found.map(|element| (lists[0].clone(), element)))
            }
            _ => Ok(None),
        };
        if let Ok(Some((list, element))) = popped {
            let which = lists.iter().position(|l| *l == list).unwrap_or(0);
            return Some((which, Preempt::parse(&element)));
        }
        if let Some(rest) = until.checked_sub(crate::clock::now()) {
            tokio::time::sleep(rest).await;
        }
        None
    }

    /// Through Sentinel, each node asks one sentinel where its master is now and moves
    /// there (`redis::Node::follow`): before an acquire try, so that a waiter that
    /// connected before a switchover tries where the holder renews, not on the old
    /// master where the holder no longer renews the lock.
    pub async fn follow(&self) {
        self.nodes
            .each(|n| async move {
                n.follow().await;
                Ok(())
            })
            .await;
    }

    /// After a grant: each node's `WAIT` for a replica where its master has one
    /// (`redis::Node::acknowledge`), before the command starts.
    pub async fn acknowledge_grant(&self) {
        self.nodes
            .each(|n| async move {
                n.acknowledge(true, &self.keys.lock).await;
                Ok(())
            })
            .await;
    }

    /// What the nodes did on their own since the last call (followed a master, a write
    /// no replica acknowledged), each with its node's URL (redacted when shown).
    pub fn take_notes(&self) -> Vec<(String, Note)> {
        self.nodes
            .iter()
            .flat_map(|n| {
                let url = n.url().to_string();
                n.take_notes()
                    .into_iter()
                    .map(move |note| (url.clone(), note))
            })
            .collect()
    }

    /// This holder's own wake list: where a request to stop it is pushed.
    pub fn own_wake(&self) -> Vec<u8> {
        self.keys.own_wake(&self.token)
    }

    /// Ends [`Session::listen`]'s hold: the primary's calls (the release) go through its
    /// own connection again, and a pop still blocked on the server ends with the hold
    /// connection.
    pub fn unhold(&self) {
        self.nodes.iter().for_each(|n| n.unhold());
    }

    /// Whether `token` holds a name as `holding` says (re-entrancy check) on a quorum of
    /// nodes. A node that does not answer only matters when it could have made the
    /// difference.
    pub async fn holds(&self, holding: &Holding, token: &str) -> Result<bool> {
        let results = self.nodes.each(|n| holds_on(n, holding, token)).await;
        let mut yes = 0;
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(true) => yes += 1,
                Ok(false) => {}
                Err(e) => errors.push(e),
            }
        }
        let quorum = self.nodes.quorum();
        if yes >= quorum || yes + errors.len() < quorum {
            return Ok(yes >= quorum);
        }
        Err(errors.remove(0))
    }

    /// One release round: the kind's release call on every node, `waking` on the
    /// primary node (only it wakes a waiter, see `Nodes::primary`), `quiet` on the
    /// others. What a kind does after it is the kind's (`kinds::LockKind`).
    ///
    /// Through Sentinel each node first follows its master, so the release (and the
    /// run's record in it) goes where the lock lives now, not to a master that the next
    /// resync wipes.
    pub async fn release(&self, waking: &Call, quiet: &Call) -> Released {
        let results = self
            .nodes
            .each(|n| async move {
                n.follow().await;
                let call = if self.nodes.is_primary(n) {
                    waking
                } else {
                    quiet
                };
                n.run::<Value>(call).await
            })
            .await;
        let mut released = Released {
            outcome: Release::NotHeld,
            head: None,
            woken: false,
            error: None,
        };
        for (node, result) in self.nodes.iter().zip(results) {
            let decoded = result.and_then(|v| {
                release::decode(v).ok_or_else(|| {
                    Error::new(Kind::BadReply, "unexpected reply from the release script")
                })
            });
            match decoded {
                Ok((Outcome::Deleted | Outcome::AlreadyReleased, wake)) => {
                    released.outcome = Release::Deleted;
                    released.head = released.head.take().or(wake);
                    released.woken |= self.nodes.is_primary(node);
                }
                Ok((Outcome::Kept, _)) if released.outcome != Release::Deleted => {
                    released.outcome = Release::Kept
                }
                Ok(_) => {}
                Err(e) => {
                    released.error.get_or_insert(e);
                }
            }
        }
        released
    }
}

/// Where a token holds a name (see `kinds::LockKind::holding`): a lock key whose value
/// is the token (a plain lock, a pool's slot, a fair or newest holder, a shared name's
/// writer), or an entry among a shared name's shares whose deadline has not passed.
pub struct Holding {
    pub key: Vec<u8>,
    pub shares: Option<Vec<u8>>,
}

/// Whether `token` holds the name on `node` (see [`Holding`]): `GET` of the key, and
/// for a shared name `ZSCORE` of the token among the shares against the server's `TIME`.
async fn holds_on(node: &crate::redis::Node, holding: &Holding, token: &str) -> Result<bool> {
    let value: Value = node
        .query(&crate::redis::command::get(&holding.key))
        .await?;
    if matches!(&value, Value::BulkString(v) if v == token.as_bytes()) {
        return Ok(true);
    }
    let Some(shares) = &holding.shares else {
        return Ok(false);
    };
    let zscore = crate::redis::command::zscore(shares, token);
    let Some(deadline) = node.query::<Option<f64>>(&zscore).await? else {
        return Ok(false);
    };
    let (secs, micros): (u64, u64) = node.query(&crate::redis::command::time()).await?;
    Ok(deadline > (secs * 1000 + micros / 1000) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripts::acquire::Closed;

    fn yes(fence: u64, now_ms: u64) -> Result<Acquired> {
        Ok(Acquired::Yes {
            fence,
            now_ms,
            slot: 1,
            attempt: 0,
            rerun_of: String::new(),
            wake: Vec::new(),
            told: Vec::new(),
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
                told: false,
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
        // The node that marked a vanished run told decides that this try tells it.
        let told = || {
            Ok(Acquired::Skipped(Skip {
                slot_ms: 60_000,
                why: Closed::Ran,
                record: Vec::new(),
                now_ms: 0,
                told: true,
            }))
        };
        let skipped = |votes: Votes| votes.skipped.is_some_and(|s| s.told);
        assert!(skipped(tally(vec![told(), ran()])));
        assert!(skipped(tally(vec![ran(), told()])));
        assert!(!skipped(tally(vec![ran(), ran()])));
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

//! The lease: acquire, renew and release one lock on one or more independent Redis
//! masters. One server is the case N = 1 of the Redlock algorithm (quorum N/2+1):
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
//! The quorum is a majority of the nodes *given* (`--redis` × N), not of those that
//! answered the connect: a node left out because it was down at the start counts as a
//! node that said no. Otherwise two clients that each reached a different 3 of 5 nodes
//! would each need only 2 votes, and both could hold the lock.

use std::time::Duration;

use futures_util::future::join_all;
use redis::Value;

use crate::error::{Error, Result};
use crate::holder::Holder;
use crate::keys::LockKeys;
use crate::node::{Node, invocation};
use crate::scripts;
use crate::timing::{self, Point};

/// A lock on a set of nodes, with this run's token.
#[derive(Clone)]
pub struct Lease {
    pub nodes: Vec<Node>,
    pub keys: LockKeys,
    pub token: String,
    pub ttl: Duration,
    /// The Redlock N: how many nodes were given, reachable or not (≥ `nodes.len()`).
    pub configured: usize,
}

/// What an acquire round gave.
#[derive(Debug)]
pub enum Acquire {
    /// Held: the round's requests were sent at `t_sent`.
    Acquired { t_sent: Point },
    /// Someone else holds it (on enough nodes to deny a quorum).
    Busy(Holder),
}

/// What a renewal round gave.
#[derive(Debug)]
pub enum Renew {
    Renewed {
        t_sent: Point,
    },
    /// Definitely not ours any more (why).
    Lost(String),
    /// No quorum answered; the lock may still be ours until the lease end.
    Unknown(Error),
}

/// What a release gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Release {
    Deleted,
    Kept,
    NotHeld,
}

/// One node's answer to the acquire script.
enum Vote {
    Yes,
    Busy(Holder),
    NotALock(String),
}

impl Lease {
    /// A new lease with a fresh random token (UUID v4 from the OS CSPRNG).
    pub fn new(nodes: Vec<Node>, keys: LockKeys, ttl: Duration) -> Self {
        Lease {
            configured: nodes.len(),
            nodes,
            keys,
            token: uuid::Uuid::new_v4().to_string(),
            ttl,
        }
    }

    /// A lease on an existing token (`redlock extend`, `release --token`).
    pub fn with_token(nodes: Vec<Node>, keys: LockKeys, ttl: Duration, token: String) -> Self {
        Lease {
            configured: nodes.len(),
            nodes,
            keys,
            token,
            ttl,
        }
    }

    /// The lease over `configured` nodes in all, of which only `nodes` could be
    /// reached (see [`crate::run::connect_all`]); the others count as votes against.
    pub fn over(mut self, configured: usize) -> Self {
        self.configured = configured.max(self.nodes.len());
        self
    }

    /// Votes needed: N/2 + 1 of the nodes given.
    pub fn quorum(&self) -> usize {
        self.configured / 2 + 1
    }

    /// Nodes given but not connected: they can never vote yes.
    fn missing(&self) -> usize {
        self.configured - self.nodes.len()
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.as_millis().max(1) as u64
    }

    /// One acquire round. Errors only when the nodes' errors (not a busy lock) kept the
    /// round from a quorum; a key of another type is a Redis error naming its type.
    pub async fn acquire(&self, meta: &[(&'static str, String)]) -> Result<Acquire> {
        let t_sent = crate::clock::now();
        let mut call = invocation(&scripts::ACQUIRE, &[&self.keys.lock, &self.keys.meta]);
        call.arg(&self.token).arg(self.ttl_ms());
        for (field, value) in meta {
            call.arg(*field).arg(value);
        }
        let results = join_all(self.nodes.iter().map(|n| n.run::<Value>(&call))).await;
        let elapsed = crate::clock::now().saturating_sub(t_sent);
        let mut yes = 0;
        let mut busy: Option<Holder> = None;
        let mut errors: Vec<Error> = Vec::new();
        for result in results {
            match result.and_then(parse_vote) {
                Ok(Vote::Yes) => yes += 1,
                Ok(Vote::Busy(holder)) => {
                    busy.get_or_insert(holder);
                }
                Ok(Vote::NotALock(kind)) => {
                    self.release_all(0).await.ok();
                    return Err(Error::redis(format!(
                        "key {} holds a {kind}, not a lock; choose another --key or --prefix",
                        crate::keys::display_bytes(&self.keys.lock)
                    )));
                }
                Err(e) => errors.push(e),
            }
        }
        if yes >= self.quorum() && timing::validity(self.ttl, elapsed).is_some() {
            return Ok(Acquire::Acquired { t_sent });
        }
        if yes > 0 || !errors.is_empty() {
            // Ambiguous or partial: take our token back everywhere it may have landed.
            let _ = self.release_all(0).await;
        }
        if let Some(holder) = busy.filter(|_| errors.len() + self.missing() < self.quorum()) {
            return Ok(Acquire::Busy(holder));
        }
        match errors.into_iter().min_by_key(error_rank) {
            Some(err) if self.configured == 1 => Err(err),
            Some(err) => Err(Error::new(
                err.code,
                format!(
                    "no quorum: {} of {} nodes needed; {}",
                    self.quorum(),
                    self.configured,
                    err.message
                ),
            )),
            // Every node said yes but the validity ran out while asking.
            None => Ok(Acquire::Busy(Holder::default())),
        }
    }

    /// One renewal round (compare-and-pexpire on every node).
    pub async fn renew(&self) -> Renew {
        let t_sent = crate::clock::now();
        let mut call = invocation(&scripts::RENEW, &[&self.keys.lock, &self.keys.meta]);
        call.arg(&self.token).arg(self.ttl_ms());
        let results = join_all(self.nodes.iter().map(|n| n.run::<i64>(&call))).await;
        let (mut renewed, mut gone) = (0, 0);
        let mut last_error = None;
        for result in results {
            match result {
                Ok(1) => renewed += 1,
                Ok(_) => gone += 1,
                Err(e) => last_error = Some(e),
            }
        }
        let n = self.configured;
        if renewed >= self.quorum() {
            Renew::Renewed { t_sent }
        } else if gone + self.missing() > n - self.quorum() {
            // Nodes not connected at the start never come back into this lease, so
            // they count like "not ours": a quorum can no longer be renewed.
            Renew::Lost(if n == 1 {
                "the key is gone or holds another token".to_string()
            } else if self.missing() > 0 {
                format!(
                    "the key is gone or taken on {gone} of {n} nodes ({} more unreachable since the start)",
                    self.missing()
                )
            } else {
                format!("the key is gone or taken on {gone} of {n} nodes")
            })
        } else {
            Renew::Unknown(last_error.unwrap_or_else(|| {
                Error::unreachable(format!("only {renewed} of {n} nodes renewed"))
            }))
        }
    }

    /// Releases on every node; with `keep`, leaves the key ours for that long instead.
    pub async fn release_all(&self, keep_ms: u64) -> Result<Release> {
        let mut call = invocation(&scripts::RELEASE, &[&self.keys.lock, &self.keys.meta]);
        call.arg(&self.token).arg(keep_ms).arg(&self.keys.channel);
        let results = join_all(self.nodes.iter().map(|n| n.run::<i64>(&call))).await;
        let mut outcome = Release::NotHeld;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(1) => outcome = Release::Deleted,
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

    /// Whether `token` is the lock's value on a quorum of nodes (re-entrancy check).
    /// A node that does not answer only matters when it could have made the difference.
    pub async fn held_by(&self, token: &str) -> Result<bool> {
        let cmd = redis::cmd("GET").arg(&self.keys.lock).clone();
        let results = join_all(self.nodes.iter().map(|n| n.query::<Value>(&cmd))).await;
        let mut yes = 0;
        let mut errors = Vec::new();
        for result in results {
            match result {
                Ok(Value::BulkString(v)) if v == token.as_bytes() => yes += 1,
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        if yes >= self.quorum() || yes + errors.len() < self.quorum() {
            return Ok(yes >= self.quorum());
        }
        Err(errors.remove(0))
    }
}

/// Prefer the error that tells the user the most: auth and Redis errors over timeouts.
fn error_rank(e: &Error) -> u8 {
    use crate::exit::Code;
    match e.code {
        Code::Auth => 0,
        Code::Redis => 1,
        Code::Usage => 2,
        _ => 3,
    }
}

fn parse_vote(value: Value) -> Result<Vote> {
    let bad = || Error::redis("unexpected reply from the acquire script");
    let Value::Array(items) = value else {
        return Err(bad());
    };
    let mut items = items.into_iter();
    let status = match items.next() {
        Some(Value::Int(n)) => n,
        _ => return Err(bad()),
    };
    match status {
        1 | 2 => Ok(Vote::Yes),
        -1 => Ok(Vote::NotALock(string(items.next()))),
        0 => {
            let token = bytes(items.next());
            let pttl = match items.next() {
                Some(Value::Int(n)) => n,
                _ => -1,
            };
            let meta = pairs(items.next());
            Ok(Vote::Busy(Holder::from_parts(token, pttl, &meta)))
        }
        _ => Err(bad()),
    }
}

/// Bytes of a bulk or simple string reply (empty otherwise).
pub fn bytes(value: Option<Value>) -> Vec<u8> {
    match value {
        Some(Value::BulkString(b)) => b,
        Some(Value::SimpleString(s)) => s.into_bytes(),
        Some(Value::Okay) => b"OK".to_vec(),
        _ => Vec::new(),
    }
}

/// A string reply, lossily decoded.
pub fn string(value: Option<Value>) -> String {
    String::from_utf8_lossy(&bytes(value)).into_owned()
}

/// Field/value pairs of an HGETALL reply (a flat array, or a map under RESP3).
pub fn pairs(value: Option<Value>) -> Vec<(Vec<u8>, Vec<u8>)> {
    match value {
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((bytes(Some(k)), bytes(Some(v))));
            }
            out
        }
        Some(Value::Map(entries)) => entries
            .into_iter()
            .map(|(k, v)| (bytes(Some(k)), bytes(Some(v))))
            .collect(),
        _ => Vec::new(),
    }
}

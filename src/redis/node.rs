//! One Redis node of the lock: a single server, a Redis Cluster, or a Sentinel-managed
//! master. Connecting with bounded timeouts, running a script with the per-node
//! timeout, and a connection of its own for a waiter's blocking pop.
//!
//! - single server: a `ConnectionManager`, which reconnects after a dropped connection
//!   (restart, `CLIENT KILL`, network reset) so that a later renewal can succeed;
//! - Cluster: each call goes to the owner of its first key's slot (all keys of a lock
//!   share a slot, see `keys.rs`), MOVED and ASK followed, the slot map kept on the
//!   host (`routed.rs`); only the masters a run's names live on are connected to;
//! - Sentinel: the master is asked of the sentinels at connect (see
//!   [`super::connect`]), then used like a single server, and followed: a holder asks
//!   one sentinel before each renewal and the release ([`Node::follow`]), and a failed
//!   call starts a new lookup in the background (see [`super::follow`]). Where the
//!   master has a connected replica, a grant and each renewal are followed by `WAIT 1`
//!   on the same connection ([`Node::acknowledge`]).
//!
//! Every call is bounded by the node timeout: a node that is down, slow or blackholed
//! fails the call with its exit code, it never hangs the caller.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, Value};
use tokio::time::error::Elapsed;

use super::connect::{self, Timeouts};
use super::errors::{bad_reply, from_redis, node_timed_out};
use super::follow::{Failover, Note};
use super::routed::{Routed, RoutedConn};
use super::script::Call;
use super::url::{RedisUrl, Topology};
use crate::error::{Error, Result};
use crate::report::human;

/// The shortest connect timeout, whatever `--node-timeout` says.
pub const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A node's connections' timeouts for the node timeout `timeout`.
fn timeouts_of(timeout: Duration) -> Timeouts {
    Timeouts {
        connect: timeout.max(MIN_CONNECT_TIMEOUT),
        response: timeout,
    }
}

/// A connected Redis node (one server, one cluster, or one sentinel-managed master).
#[derive(Clone)]
pub struct Node {
    url: RedisUrl,
    link: Link,
    /// Where a waiter's blocking pop goes, on a connection of its own (a blocked
    /// connection answers nothing else).
    blocking: Arc<Blocking>,
    timeout: Duration,
    /// Whether a reply has come through the node's connection: until one has, a
    /// failed call is read as the connect's failure ([`connect::first_failure`]), as
    /// the connect sends nothing of its own.
    answered: Arc<AtomicBool>,
    /// What this process saw of the server's life (see [`Seen`]).
    seen: Arc<Mutex<Seen>>,
    /// The server's life read beside an acquire (see [`Node::read_life_beside`]).
    read_life: Arc<Mutex<Option<super::life::ServerLife>>>,
}

/// When the server last answered, and whether a connection to it failed after that: the
/// evidence that it may have restarted (or been replaced) since, which a run asks about
/// before it starts its command (see `run/lock_delay.rs`). Times are this host's
/// suspend-aware clock ([`crate::clock::now`]).
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// The last answer, or the start of the connect before any (the connect reached a
    /// server: one was up from then on, whose restart a later failure may be).
    answered_at: Option<Duration>,
    /// The last answer before the first failure since the evidence was last taken.
    failed_after: Option<Duration>,
}

/// A waiter's connection for `BLPOP`: made on first use and kept between pops; one
/// that failed, or whose pop was abandoned (the future dropped with the command still
/// blocked on the server), is dropped and made anew.
struct Blocking {
    source: BlockingSource,
    idle: Mutex<Option<Conn>>,
    /// When the server last answered on the blocking connection (or accepted it): the
    /// evidence's instant when a pop on it fails. The node's own connection may have
    /// answered since, from a server restarted meanwhile (its manager reconnects
    /// unseen), so its last answer would hide the restart.
    answered_at: Mutex<Option<Duration>>,
    /// A holder's one connection while it holds (see [`Node::hold_pop`]): every call
    /// goes through it, the node's own connection closed meanwhile.
    hold: Mutex<Option<Conn>>,
}

/// What a blocking connection is made from.
enum BlockingSource {
    /// One server.
    Server(Box<redis::Client>),
    /// A cluster: the pop goes to the master of the key's slot.
    Cluster(Arc<Routed>),
    /// Through Sentinel: the master of the moment (see [`Failover`]).
    Sentinel(Arc<Failover>),
}

/// One call's connection: what a [`Link`] hands out, so that every call is written once.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(RoutedConn),
    Plain(redis::aio::MultiplexedConnection),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Plain(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Plain(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Plain(c) => c.get_db(),
        }
    }
}

#[derive(Clone)]
enum Link {
    /// The connection, replaced by an unconnected one while a holder's calls go through
    /// its hold connection (see [`Node::hold_pop`]).
    Single(Arc<Mutex<ConnectionManager>>),
    /// A cluster, each call sent where its key lives (see [`super::routed`]).
    Cluster(Arc<Routed>),
    Sentinel(Arc<Failover>),
}

impl Node {
    /// Connects (and authenticates) within `max(timeout, MIN_CONNECT_TIMEOUT)` plus the
    /// node timeout (twice that through Cluster or Sentinel: the seeds or sentinels,
    /// then the master).
    pub async fn connect(url: &RedisUrl, timeout: Duration) -> Result<Node> {
        // A connection made proves a server was there from this instant on: a failure
        // before any answer still tells a restart after it (see [`Seen`]).
        let connecting = crate::clock::now();
        let timeouts = timeouts_of(timeout);
        let limit = match url.topology() {
            Topology::Single => timeouts.round(),
            _ => timeouts.round() * 2,
        };
        let (link, source) = match tokio::time::timeout(limit, link(url, timeouts)).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(Error::unreachable(format!(
                    "{url}: cannot reach Redis (connect timed out after {}); is the server running and the URL right?",
                    human(limit)
                )));
            }
        };
        Ok(Node {
            url: url.clone(),
            link,
            blocking: Arc::new(Blocking {
                source,
                idle: Mutex::new(None),
                answered_at: Mutex::new(None),
                hold: Mutex::new(None),
            }),
            timeout,
            answered: Arc::new(AtomicBool::new(false)),
            seen: Arc::new(Mutex::new(Seen {
                answered_at: Some(connecting),
                failed_after: None,
            })),
            read_life: Arc::new(Mutex::new(None)),
        })
    }

    /// The server answered (any reply, an error reply included: it is up).
    fn saw_answer(&self) {
        lock(&self.seen).answered_at = Some(crate::clock::now());
    }

    /// A call or a pop failed without an answer (a dropped connection, a refused
    /// connect, a timeout): after an answer, the server may have restarted since it.
    fn saw_failure(&self) {
        let answered_at = lock(&self.seen).answered_at;
        self.suspect(answered_at);
    }

    /// A pop on the blocking connection failed without an answer: the server may have
    /// restarted since it last answered there (or since the node's own connection did,
    /// if earlier).
    fn saw_pop_failure(&self) {
        let seen = lock(&self.seen).answered_at;
        let there = *lock(&self.blocking.answered_at);
        let earliest = match (seen, there) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.suspect(earliest);
    }

    /// A lease known to be on the server at `held_at` is gone from it (a renewal found
    /// the key gone or another's): the server may have restarted empty since then, as
    /// much as after a failed connection (whose reconnect the connection manager may
    /// have made unseen). Evidence already taken stands.
    pub fn suspect(&self, held_at: Option<Duration>) {
        let mut seen = lock(&self.seen);
        if seen.failed_after.is_none() {
            seen.failed_after = held_at;
        }
    }

    /// When the server last answered before a connection to it failed, if one failed
    /// since this was last asked (and it had answered before): the server may have
    /// restarted after that instant. Asking takes the evidence.
    pub fn take_failure(&self) -> Option<Duration> {
        lock(&self.seen).failed_after.take()
    }

    /// `INFO server` and the data epoch `epoch`, in one round trip (reads only): the
    /// server's run ID, how long it has been up and its data's epoch (see
    /// [`super::life::ServerLife`]); not for a Cluster (INFO has no key to route by).
    pub async fn server_life(&self, epoch: &[u8]) -> Result<super::life::ServerLife> {
        let replies = self.read_pipeline(&super::command::life(epoch)).await?;
        replies
            .as_deref()
            .and_then(super::life::ServerLife::from_replies)
            .ok_or_else(|| bad_reply(&self.url, "INFO server has no run_id or uptime_in_seconds"))
    }

    /// Writes the data epoch `epoch` when it is missing (after a grant: see
    /// [`super::life`]); what it is then, ours or another run's. `None` when it could
    /// not be written or read (an ACL without the key).
    pub async fn write_epoch(&self, epoch: &[u8]) -> Option<super::life::Epoch> {
        let fresh = uuid::Uuid::new_v4().simple().to_string();
        let ttl_ms = super::life::EPOCH_TTL.as_millis() as u64;
        let pipe = super::command::epoch_write(epoch, &fresh, ttl_ms);
        let replies = self.read_pipeline(&pipe).await.ok()??;
        super::life::Epoch::from_replies(replies.get(1..)?)
    }

    /// `INFO server` sent beside a call on this node's connection (`call`, an acquire
    /// that will likely take the name): both go out together, one round trip, and
    /// the server (the one process behind that connection) answers both; the life is
    /// kept for [`Node::take_life_read`]. A failed read keeps nothing.
    pub async fn read_life_beside<T>(&self, epoch: &[u8], call: impl Future<Output = T>) -> T {
        let read = async {
            if let Ok(life) = self.server_life(epoch).await {
                *lock(&self.read_life) = Some(life);
            }
        };
        let (value, ()) = futures_util::future::join(call, read).await;
        value
    }

    /// The life read beside the last acquire, if any (taken: read once).
    pub fn take_life_read(&self) -> Option<super::life::ServerLife> {
        lock(&self.read_life).take()
    }

    /// The URL this node was reached by (`Display` redacts it).
    pub fn url(&self) -> &RedisUrl {
        &self.url
    }

    /// Runs a script call, bounded by the node timeout.
    pub async fn run<T: FromRedisValue>(&self, call: &Call) -> Result<T> {
        let mut conn = self.conn();
        let result = tokio::time::timeout(self.timeout, call.invoke(&mut conn)).await;
        self.settle(result).await
    }

    /// [`Node::run`] for a script that may safely run twice (acquire with our token,
    /// renew, read): a connection the server dropped while idle (CLIENT KILL, an idle
    /// timeout, a restart) fails the first request and only then reconnects, so the
    /// call is made once more, at once, on the fresh connection. A timeout is not
    /// retried: it has used the node's time already.
    pub async fn run_idempotent<T: FromRedisValue>(&self, call: &Call) -> Result<T> {
        let mut conn = self.conn();
        let result = tokio::time::timeout(self.timeout, call.invoke(&mut conn)).await;
        match &result {
            Ok(Err(e)) if dropped(e) => {
                self.saw_failure();
                self.unhold();
                let mut conn = self.conn();
                let again = tokio::time::timeout(self.timeout, call.invoke(&mut conn)).await;
                self.settle(again).await
            }
            _ => self.settle(result).await,
        }
    }

    /// Runs a plain command, bounded by the node timeout (routed by its key in a cluster).
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        let mut conn = self.conn();
        let result = tokio::time::timeout(self.timeout, cmd.query_async(&mut conn)).await;
        self.settle(result).await
    }

    /// Runs a pipeline of reads (one round trip), bounded by the node timeout; each
    /// command's error stays in its place when the pipeline ignores errors. `None` when
    /// the connection was dropped (the server closed it while idle, or at once: a full
    /// server, one that does not speak RESP): the caller's next call, a script by
    /// [`Node::run_idempotent`], reconnects and says why. In a cluster the pipeline
    /// goes to the owner of its first key's slot: its keys must share one.
    pub async fn read_pipeline(&self, pipe: &redis::Pipeline) -> Result<Option<Vec<Value>>> {
        let mut conn = self.conn();
        let result = tokio::time::timeout(self.timeout, pipe.query_async(&mut conn)).await;
        if matches!(&result, Ok(Err(e)) if dropped(e)) {
            self.saw_failure();
            self.unhold();
            return Ok(None);
        }
        self.settle(result).await.map(Some)
    }

    /// Through Sentinel, asks one sentinel where the master is now and moves this
    /// node's calls there when it moved (see [`super::follow`]): the hold and blocking
    /// connections, still on the old master, are closed, so the next call (the renewal
    /// or the release the caller sends next) goes to the new one. Nothing for a single
    /// server or a Cluster (whose calls follow MOVED, see [`super::routed`]).
    pub async fn follow(&self) {
        if let Link::Sentinel(failover) = &self.link
            && failover.follow().await
        {
            self.unhold();
            self.close_blocking();
        }
    }

    /// After a grant (`grant`) or a renewal that succeeded here, of a name whose key is
    /// `key`: where the master had a connected replica when it was found (Sentinel) or
    /// the slot map lists one (a Cluster), `WAIT 1` on the connection the write went
    /// through, so that a crash failover to that replica keeps the lock. `WAIT`'s own
    /// timeout is three quarters of the node timeout (the connection's response timeout
    /// is the node timeout: the server must answer first). A write no replica
    /// acknowledged is a note (once per master, see [`Node::take_notes`]); the run goes
    /// on. Never on a master without replicas, where `WAIT` would block the whole time,
    /// nor on a single server (no failover of ours moves its lock).
    pub async fn acknowledge(&self, grant: bool, key: &[u8]) {
        match &self.link {
            Link::Sentinel(failover) => self.acknowledge_sentinel(failover, grant).await,
            Link::Cluster(routed) => self.acknowledge_cluster(routed, grant, key).await,
            Link::Single(_) => {}
        }
    }

    /// [`Node::acknowledge`] on a Cluster: on the owner of `key`'s slot. A write no
    /// replica acknowledged (the replica gone, or lagging) or a `WAIT` the user may
    /// not send stops the waits on that master for this process (the map read next
    /// says again whether it has a replica).
    async fn acknowledge_cluster(&self, routed: &Routed, grant: bool, key: &[u8]) {
        if !routed.owner_replicated(key) {
            return;
        }
        let within = self.timeout * 3 / 4;
        let ms = within.as_millis().max(1) as u64;
        let acked = tokio::time::timeout(self.timeout, routed.wait_replica(key, ms)).await;
        let note = |why: Option<String>| Note::Unacknowledged { grant, within, why };
        match acked {
            Ok(Ok(n)) if n >= 1 => {}
            Ok(Ok(_)) => routed.unacknowledged(key, note(None), true),
            Ok(Err(e)) => {
                let why = from_redis(&self.url, &e).to_string();
                routed.unacknowledged(key, note(Some(why)), true);
            }
            Err(_) => routed.unacknowledged(key, note(Some("no answer".into())), true),
        }
    }

    /// [`Node::acknowledge`] through Sentinel.
    async fn acknowledge_sentinel(&self, failover: &Failover, grant: bool) {
        if failover.relearn_due() {
            self.relearn(failover).await;
        }
        if !failover.has_replica() {
            return;
        }
        let within = self.timeout * 3 / 4;
        let ms = within.as_millis().max(1) as u64;
        let mut conn = self.conn();
        let wait = redis::cmd("WAIT").arg(1).arg(ms).clone();
        let acked = tokio::time::timeout(self.timeout, wait.query_async::<i64>(&mut conn)).await;
        match acked {
            Ok(Ok(n)) if n >= 1 => {}
            Ok(Ok(_)) => {
                failover.unacknowledged(grant, within, None);
                // The replica may have gone: read ROLE again, so that the next
                // renewals do not each wait for one that is not there.
                self.relearn(failover).await;
            }
            Ok(Err(e)) => {
                if e.code() == Some("NOPERM") {
                    failover.cannot_wait();
                }
                failover.unacknowledged(grant, within, Some(from_redis(&self.url, &e).to_string()));
            }
            Err(_) => failover.unacknowledged(grant, within, Some("no answer".into())),
        }
    }

    /// Reads the master's connected replicas again (`ROLE`, bounded by the node
    /// timeout); a failed read leaves them as they were.
    async fn relearn(&self, failover: &Failover) {
        let mut conn = self.conn();
        let role = redis::cmd("ROLE").clone();
        let read = tokio::time::timeout(self.timeout, role.query_async::<Vec<Value>>(&mut conn));
        if let Ok(Ok(reply)) = read.await {
            failover.learned_replicas(super::reply::replicas(&reply));
        }
    }

    /// What this node did on its own since the last call (followed the master, a write
    /// no replica acknowledged), for the run to tell.
    pub fn take_notes(&self) -> Vec<Note> {
        match &self.link {
            Link::Sentinel(failover) => failover.take_notes(),
            Link::Cluster(routed) => routed.take_notes(),
            Link::Single(_) => Vec::new(),
        }
    }

    /// The connection a call goes through (for Sentinel, the current master's).
    fn conn(&self) -> Conn {
        if let Some(hold) = lock(&self.blocking.hold).as_ref() {
            return hold.clone();
        }
        match &self.link {
            Link::Single(conn) => Conn::Single(lock(conn).clone()),
            Link::Cluster(routed) => Conn::Cluster(RoutedConn(Arc::clone(routed))),
            Link::Sentinel(failover) => Conn::Single(failover.current()),
        }
    }

    /// Every key matching the SCAN `pattern`: on the server, or on every master of a
    /// cluster (SCAN has no key to route by, so each master the slot map names is asked
    /// on its own connection). Each SCAN page is bounded by the node timeout.
    pub async fn scan(&self, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        for (_, mut conn) in self.servers().await? {
            let mut cursor: u64 = 0;
            loop {
                let cmd = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .clone();
                let page = tokio::time::timeout(self.timeout, cmd.query_async(&mut conn)).await;
                let (next, found): (u64, Vec<Vec<u8>>) = self.finish(page)?;
                keys.extend(found);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(keys)
    }

    /// A command for every server (`doctor`'s INFO and CONFIG GET): one reply per
    /// server, by address ("" for a single server or a Sentinel master); each bounded by
    /// the node timeout.
    pub async fn query_each(&self, cmd: &redis::Cmd) -> Result<Vec<(String, Value)>> {
        let mut replies = Vec::new();
        for (address, mut conn) in self.servers().await? {
            let reply = tokio::time::timeout(self.timeout, cmd.query_async(&mut conn)).await;
            replies.push((address, self.finish(reply)?));
        }
        Ok(replies)
    }

    /// Each server of the node with its connection: the server, or every master of a
    /// cluster (by address).
    async fn servers(&self) -> Result<Vec<(String, Conn)>> {
        match &self.link {
            Link::Single(_) | Link::Sentinel(_) => Ok(vec![(String::new(), self.conn())]),
            Link::Cluster(routed) => Ok(routed
                .masters()
                .await?
                .into_iter()
                .map(|(address, conn)| (address, Conn::Single(conn)))
                .collect()),
        }
    }

    /// `BLPOP key` for at most `wait`, on the node's blocking connection: the element
    /// popped (a release woke us), `None` when the wait ran out.
    pub async fn blocking_pop(&self, key: &[u8], wait: Duration) -> Result<Option<Vec<u8>>> {
        let taken = self
            .blocking
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let mut conn = match taken {
            Some(conn) => conn,
            None => self
                .open_blocking(key)
                .await
                .inspect_err(|_| self.saw_pop_failure())?,
        };
        // BLPOP takes seconds, with decimals since Redis 6.
        let seconds = format!("{:.3}", wait.as_secs_f64().max(0.001));
        let cmd = redis::cmd("BLPOP").arg(key).arg(seconds).clone();
        let limit = wait + self.timeout.max(MIN_CONNECT_TIMEOUT);
        let popped = tokio::time::timeout(limit, cmd.query_async::<Value>(&mut conn)).await;
        match popped {
            Ok(Ok(value)) => {
                self.saw_answer();
                *lock(&self.blocking.answered_at) = Some(crate::clock::now());
                *self.blocking.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
                Ok(popped_element(value))
            }
            Ok(Err(e)) => {
                if e.code().is_none() {
                    self.saw_pop_failure();
                }
                // A pop ended by a failover ("UNBLOCKED … master -> replica", a
                // dropped connection): look the master up again for the next one.
                if let Link::Sentinel(failover) = &self.link {
                    failover.rediscover();
                }
                Err(from_redis(&self.url, &e))
            }
            Err(_) => {
                self.saw_pop_failure();
                Err(self.timed_out())
            }
        }
    }

    /// Whether this node is a Cluster, whose calls go by their key's slot (see
    /// [`super::routed`]): a holder listens on a blocking connection of its own there.
    pub fn routes_by_slot(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// Whether a holder can keep to one connection here (see [`Node::hold_pop`]): a
    /// server or a Sentinel master, not a Cluster (whose calls route by slot over
    /// connections of their own).
    pub fn can_hold(&self) -> bool {
        !matches!(self.link, Link::Cluster(_))
    }

    /// `BLPOP key…` for at most `wait` on the holder's one connection (one pop over
    /// every list a run of several names listens on: the list and the element popped): made on first
    /// use (the waiter's idle blocking connection, else a new one), after which the
    /// node's own connection is closed and every call goes through this one, in order
    /// behind the pop; so the caller ends each pop before a call is due (the renewal).
    /// The element popped (a request to stop), `None` when the wait ran out. A call
    /// that fails on it drops the hold connection ([`Node::unhold`], in
    /// [`Node::finish`]): calls go back to the node's own connection, made anew on
    /// first use, and the next pop makes a new hold connection.
    pub async fn hold_pop(
        &self,
        keys: &[Vec<u8>],
        wait: Duration,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut conn = self.held(keys).await?;
        let seconds = format!("{:.3}", wait.as_secs_f64().max(0.001));
        let cmd = redis::cmd("BLPOP").arg(keys).arg(seconds).clone();
        let limit = wait + self.timeout.max(MIN_CONNECT_TIMEOUT);
        let popped = tokio::time::timeout(limit, cmd.query_async::<Value>(&mut conn)).await;
        self.finish(popped).map(popped_pair)
    }

    /// The hold connection, made (and the node's own closed) if there is none yet.
    async fn held(&self, keys: &[Vec<u8>]) -> Result<Conn> {
        if let Some(conn) = lock(&self.blocking.hold).clone() {
            return Ok(conn);
        }
        let idle = lock(&self.blocking.idle).take();
        let conn = match idle {
            Some(conn) => conn,
            None => {
                self.open_blocking(keys.first().map_or(&[][..], Vec::as_slice))
                    .await?
            }
        };
        *lock(&self.blocking.hold) = Some(conn.clone());
        self.park();
        Ok(conn)
    }

    /// Closes the node's own connection: one not yet connected takes its place, made on
    /// its first call.
    fn park(&self) {
        let timeouts = timeouts_of(self.timeout);
        match (&self.link, &self.blocking.source) {
            (Link::Single(conn), BlockingSource::Server(client)) => {
                if let Ok(lazy) = connect::lazy_manager(client, timeouts) {
                    *lock(conn) = lazy;
                }
            }
            (Link::Sentinel(failover), _) => {
                if let Ok(lazy) = connect::lazy_manager(&failover.client(), timeouts) {
                    failover.park(lazy);
                }
            }
            _ => {}
        }
    }

    /// Drops the hold connection (the server ends a pop still blocked on it): calls go
    /// through the node's own connection again. A call in flight on it ends first.
    pub fn unhold(&self) {
        drop(lock(&self.blocking.hold).take());
    }

    /// Closes the idle blocking connection: a waiter that got the lock pops no more, and
    /// a holder keeps one connection to Redis, not two.
    pub fn close_blocking(&self) {
        drop(
            self.blocking
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
    }

    /// A connection for blocking pops on `key`: no response timeout of its own (each
    /// pop is bounded by its own wait plus the node timeout); in a cluster, to the
    /// master of the key's slot.
    async fn open_blocking(&self, key: &[u8]) -> Result<Conn> {
        let connect = self.timeout.max(MIN_CONNECT_TIMEOUT);
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect))
            .set_response_timeout(None);
        // Through Sentinel the master of now (after a failover the old one is a
        // replica, where no release pushes a wake-up); in a cluster the key's owner.
        let client = match &self.blocking.source {
            BlockingSource::Server(client) => (**client).clone(),
            BlockingSource::Cluster(routed) => routed.client_for(key).await?,
            BlockingSource::Sentinel(failover) => failover.client(),
        };
        let work = async {
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map(Conn::Plain)
        };
        let connecting = crate::clock::now();
        match tokio::time::timeout(connect + self.timeout, work).await {
            Ok(Ok(conn)) => {
                // The server accepted it (and answered the handshake): up from then on.
                *lock(&self.blocking.answered_at) = Some(connecting);
                Ok(conn)
            }
            Ok(Err(e)) => Err(from_redis(&self.url, &e)),
            Err(_) => Err(self.timed_out()),
        }
    }

    /// [`Node::finish`] for a call on the node's own connection: the first call's
    /// failure on a single server is read as the connect's (a full server, a TLS-only
    /// port), and a reply marks the connection as answering.
    async fn settle<T>(
        &self,
        result: std::result::Result<redis::RedisResult<T>, Elapsed>,
    ) -> Result<T> {
        match (&result, &self.link, &self.blocking.source) {
            (Ok(Ok(_)), _, _) => self.answered.store(true, Ordering::Relaxed),
            (Ok(Err(e)), Link::Single(_), BlockingSource::Server(client))
                if !self.answered.load(Ordering::Relaxed) && e.code().is_none() =>
            {
                let timeouts = timeouts_of(self.timeout);
                return Err(connect::first_failure(&self.url, client, timeouts, e).await);
            }
            _ => {}
        }
        self.finish(result)
    }

    fn finish<T>(&self, result: std::result::Result<redis::RedisResult<T>, Elapsed>) -> Result<T> {
        // A hold connection whose call failed is dropped (timed out, broken, or now on a
        // demoted master): the next call reconnects. Not for a command the user may not
        // run (a pop without BLPOP): the connection is fine, and making it anew every
        // renewal period would only churn.
        let denied = matches!(&result, Ok(Err(e)) if e.code() == Some("NOPERM"));
        if !denied && !matches!(&result, Ok(Ok(_))) {
            self.unhold();
        }
        if let Link::Sentinel(failover) = &self.link
            && Failover::moved(&result)
        {
            failover.rediscover();
        }
        match &result {
            Ok(Ok(_)) => self.saw_answer(),
            Ok(Err(e)) if e.code().is_some() => self.saw_answer(),
            _ => self.saw_failure(),
        }
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(from_redis(&self.url, &e)),
            Err(_) => Err(self.timed_out()),
        }
    }

    fn timed_out(&self) -> Error {
        node_timed_out(&self.url, self.timeout)
    }
}

/// A mutex's value, whoever panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The link to the node behind `url`, and what a waiter's blocking connection is made
/// from.
async fn link(url: &RedisUrl, timeouts: Timeouts) -> Result<(Link, BlockingSource)> {
    match url.topology() {
        Topology::Single => {
            let client = connect::client(url, url.secret())?;
            let conn = connect::manager(url, &client, timeouts).await?;
            Ok((
                Link::Single(Arc::new(Mutex::new(conn))),
                BlockingSource::Server(Box::new(client)),
            ))
        }
        Topology::Cluster { seeds } => {
            let routed = Arc::new(Routed::connect(url, seeds, timeouts).await?);
            Ok((
                Link::Cluster(Arc::clone(&routed)),
                BlockingSource::Cluster(routed),
            ))
        }
        Topology::Sentinel(target) => {
            let master = connect::discover(url, target, timeouts).await?;
            let conn = connect::manager(url, &master.client, timeouts).await?;
            let failover = Arc::new(Failover::new(url, master, conn, timeouts));
            Ok((
                Link::Sentinel(Arc::clone(&failover)),
                BlockingSource::Sentinel(failover),
            ))
        }
    }
}

/// Whether an error means the connection was gone before an answer came (and not a
/// timeout, nor an answer from the server).
fn dropped(e: &redis::RedisError) -> bool {
    !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error())
}

/// The element of a `BLPOP` reply (`[key, element]`), `None` for a timeout (nil).
/// A `BLPOP`'s reply: the list and the element popped; `None` when the wait ran out.
/// Anything else is an empty request (it still wakes the holder: a request to stop).
fn popped_pair(value: Value) -> Option<(Vec<u8>, Vec<u8>)> {
    match value {
        Value::Array(items) => {
            let mut items = items.into_iter();
            let list = match items.next() {
                Some(Value::BulkString(list)) => list,
                _ => Vec::new(),
            };
            match items.next()? {
                Value::BulkString(element) => Some((list, element)),
                _ => Some((list, Vec::new())),
            }
        }
        Value::Nil => None,
        _ => Some((Vec::new(), Vec::new())),
    }
}

/// A `BLPOP`'s element (see [`popped_pair`]).
fn popped_element(value: Value) -> Option<Vec<u8>> {
    popped_pair(value).map(|(_, element)| element)
}

//! A Sentinel-managed master that a node follows wherever the sentinels move it.
//!
//! - **At each renewal and before the release** ([`Failover::follow`]): one
//!   `SENTINEL GET-MASTER-ADDR-BY-NAME` to one sentinel, on a connection kept between
//!   asks, within the node timeout (a sentinel that refuses or knows no such master:
//!   the next one is asked in the same time; one that does not answer in time: the
//!   call goes on to the master of before, and the next ask starts at the next
//!   sentinel). When it names another server and that server says `ROLE` master, the
//!   node's connection moves there, and the call that asked (the renewal, the release)
//!   is sent there: a compare-and-pexpire that succeeds only if the lock with our token
//!   replicated, so following never revives a lost lock. Why at each call and not only
//!   after a failure: a planned switchover (`SENTINEL FAILOVER`) leaves the old master a
//!   master, answering, for seconds, while new runs are sent to the new one.
//! - **After a failure** ([`Failover::rediscover`]): READONLY, a dropped connection or a
//!   timeout starts a full lookup in the background (every sentinel), so a waiter's
//!   next pop and the next call reach the new master.
//! - **Replicas**: how many the master's `ROLE` listed as connected, learned at the
//!   lookup and at each move (not asked at each call); while there is one, a grant and
//!   each renewal are followed by `WAIT 1` (see [`super::Node`]).
//!
//! What happened is kept as [`Note`]s for the layers above to tell (this layer prints
//! nothing).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, MultiplexedConnection};
use tokio::time::error::Elapsed;

use super::connect::{self, Master, Timeouts};
use super::url::{RedisUrl, SentinelTarget, Topology};
use crate::error::Error;

/// Something a node did on its own that the run should tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The sentinels moved the master (a switchover or a failover); calls now go to `to`.
    Followed { from: String, to: String },
    /// A grant (`grant`) or a renewal that no replica acknowledged within `within` (or
    /// the `WAIT` failed: `why`); told once per master.
    Unacknowledged {
        grant: bool,
        within: Duration,
        why: Option<String>,
    },
}

/// How often the replicas of a master that had none are read again (`ROLE`, with a
/// renewal).
pub const RELEARN: Duration = Duration::from_secs(30);

/// The sentinel asked at each call, and what the last ask found.
struct Asker {
    /// Index of the sentinel asked next (the URL's order).
    next: usize,
    /// Its connection, kept between asks.
    conn: Option<MultiplexedConnection>,
    /// When the last completed ask started: a caller that began waiting before it takes
    /// its answer rather than asking again (the names of one run renew together).
    started: Option<Instant>,
}

/// A Sentinel-managed master (see the module header).
pub struct Failover {
    url: RedisUrl,
    conn: Mutex<ConnectionManager>,
    /// The current master's client, for a waiter's blocking connection.
    client: Mutex<redis::Client>,
    /// The current master's address.
    addr: Mutex<(String, u16)>,
    /// Replicas its `ROLE` listed when it was found (or last read, see
    /// [`Failover::relearn_due`]).
    replicas: AtomicUsize,
    /// When `replicas` was read.
    learned: Mutex<Instant>,
    /// Whether an unacknowledged grant or renewal was told for this master.
    told: AtomicBool,
    /// A renewal no replica acknowledged, told at the next ask if the master did not
    /// move meanwhile (a switchover takes the replica away from the old master first:
    /// that is not worth a warning once the holder has followed).
    pending: Mutex<Option<Note>>,
    /// Whether the master was just looked up (at connect): the first follow (the run's
    /// first try) asks nothing.
    fresh: AtomicBool,
    busy: AtomicBool,
    asker: tokio::sync::Mutex<Asker>,
    notes: Mutex<Vec<Note>>,
    timeouts: Timeouts,
}

impl Failover {
    /// The master found at connect, and its connection.
    pub fn new(
        url: &RedisUrl,
        master: Master,
        conn: ConnectionManager,
        timeouts: Timeouts,
    ) -> Self {
        let (next, asked) = match master.sentinel {
            Some((index, conn)) => (index, Some(conn)),
            None => (0, None),
        };
        Failover {
            url: url.clone(),
            conn: Mutex::new(conn),
            client: Mutex::new(master.client),
            addr: Mutex::new(master.addr),
            replicas: AtomicUsize::new(master.replicas),
            learned: Mutex::new(Instant::now()),
            told: AtomicBool::new(false),
            pending: Mutex::new(None),
            fresh: AtomicBool::new(true),
            busy: AtomicBool::new(false),
            asker: tokio::sync::Mutex::new(Asker {
                next,
                conn: asked,
                started: None,
            }),
            notes: Mutex::new(Vec::new()),
            timeouts,
        }
    }

    pub fn current(&self) -> ConnectionManager {
        lock(&self.conn).clone()
    }

    pub fn client(&self) -> redis::Client {
        lock(&self.client).clone()
    }

    /// Replaces the node's connection by one not yet connected (see `Node::park`).
    pub fn park(&self, lazy: ConnectionManager) {
        *lock(&self.conn) = lazy;
    }

    /// Whether the master had a connected replica when it was found.
    pub fn has_replica(&self) -> bool {
        self.replicas.load(Ordering::Relaxed) > 0
    }

    /// A write no replica acknowledged: a note, the first time for this master (a
    /// renewal's at the next ask, see `pending`).
    pub fn unacknowledged(&self, grant: bool, within: Duration, why: Option<String>) {
        if self.told.load(Ordering::SeqCst) {
            return;
        }
        let note = Note::Unacknowledged { grant, within, why };
        if grant {
            self.told.store(true, Ordering::SeqCst);
            self.note(note);
        } else {
            lock(&self.pending).get_or_insert(note);
        }
    }

    /// The `WAIT` cannot run here (an ACL without it): no more waits on this master.
    pub fn cannot_wait(&self) {
        self.learned_replicas(0);
        *lock(&self.learned) = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    }

    /// Whether the replicas should be read again (`ROLE`) before the next `WAIT`: every
    /// [`RELEARN`] while the master had none (a replica that connects later, such as
    /// the old master after a switchover, is waited for from then on); also after a
    /// `WAIT` no replica acknowledged (see `Node::acknowledge`). Never at every call.
    pub fn relearn_due(&self) -> bool {
        !self.has_replica() && lock(&self.learned).elapsed() >= RELEARN
    }

    /// The replicas `ROLE` listed just now; the master and its replicas are kept for
    /// the host's next runs.
    pub fn learned_replicas(&self, replicas: usize) {
        self.replicas.store(replicas, Ordering::Relaxed);
        *lock(&self.learned) = Instant::now();
        let addr = lock(&self.addr).clone();
        connect::keep_master(&self.url, &addr, replicas);
    }

    /// What happened since the last call.
    pub fn take_notes(&self) -> Vec<Note> {
        std::mem::take(&mut *lock(&self.notes))
    }

    fn note(&self, note: Note) {
        lock(&self.notes).push(note);
    }

    /// Makes `master` the current one; tells a move to another address.
    fn install(&self, master: Master, conn: ConnectionManager) {
        let to = master.addr.clone();
        *lock(&self.conn) = conn;
        *lock(&self.client) = master.client;
        let from = std::mem::replace(&mut *lock(&self.addr), master.addr);
        self.learned_replicas(master.replicas);
        if from != to {
            self.told.store(false, Ordering::SeqCst);
            lock(&self.pending).take();
            self.note(Note::Followed {
                from: format!("{}:{}", from.0, from.1),
                to: format!("{}:{}", to.0, to.1),
            });
        }
    }

    /// Asks one sentinel where the master is now (see the module header) and moves the
    /// connection there when it moved; whether it did. Bounded by twice the node
    /// timeout: the ask, then (only when the master moved) the new master's check.
    pub async fn follow(&self) -> bool {
        let Topology::Sentinel(target) = self.url.topology() else {
            return false;
        };
        if self.fresh.swap(false, Ordering::SeqCst) {
            return false;
        }
        let asked = Instant::now();
        let mut asker = self.asker.lock().await;
        if asker.started.is_some_and(|at| at >= asked) {
            return false;
        }
        let started = Instant::now();
        let limit = self.timeouts.response;
        let named =
            tokio::time::timeout(limit, ask_one(&self.url, target, &mut asker, self.timeouts))
                .await;
        asker.started = Some(started);
        let addr = match named {
            Ok(Some(addr)) => addr,
            Ok(None) => return false,
            Err(_) => {
                // Not in time: the next ask goes to the next sentinel.
                asker.conn = None;
                asker.next = (asker.next + 1) % target.sentinels.len().max(1);
                return false;
            }
        };
        if addr == *lock(&self.addr) {
            // Still the master: a renewal it did not get acknowledged is told now.
            if let Some(note) = lock(&self.pending).take() {
                self.told.store(true, Ordering::SeqCst);
                self.note(note);
            }
            return false;
        }
        let found = tokio::time::timeout(limit, async {
            let master = connect::master(&self.url, target, &addr, self.timeouts).await?;
            let conn = connect::manager(&self.url, &master.client, self.timeouts).await?;
            Ok::<_, Error>((master, conn))
        })
        .await;
        match found {
            Ok(Ok((master, conn))) => {
                self.install(master, conn);
                true
            }
            // Not a master (yet), or not answering: the calls stay where they were.
            _ => false,
        }
    }

    /// Starts a background lookup of the master unless one is running.
    pub fn rediscover(self: &Arc<Self>) {
        if self.busy.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let Topology::Sentinel(target) = me.url.topology() else {
                return;
            };
            let limit = me.timeouts.round() * 2;
            let work = async {
                let master = connect::discover(&me.url, target, me.timeouts).await?;
                let conn = connect::manager(&me.url, &master.client, me.timeouts).await?;
                Ok::<_, Error>((master, conn))
            };
            if let Ok(Ok((master, conn))) = tokio::time::timeout(limit, work).await {
                me.install(master, conn);
            }
            me.busy.store(false, Ordering::SeqCst);
        });
    }

    /// Whether a call's failure may mean the master moved.
    pub fn moved<T>(result: &std::result::Result<redis::RedisResult<T>, Elapsed>) -> bool {
        match result {
            Ok(Ok(_)) => false,
            Ok(Err(e)) => {
                e.code() == Some("READONLY")
                    || e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout()
            }
            Err(_) => true,
        }
    }
}

/// The master's address as one sentinel names it, starting at the asker's next one:
/// a sentinel that fails or knows no such master passes the question to the next.
async fn ask_one(
    url: &RedisUrl,
    target: &SentinelTarget,
    asker: &mut Asker,
    timeouts: Timeouts,
) -> Option<(String, u16)> {
    let n = target.sentinels.len();
    for _ in 0..n {
        if asker.conn.is_none() {
            let client = connect::client(url, &target.sentinels[asker.next % n]).ok()?;
            asker.conn = connect::open(&client, timeouts).await.ok();
        }
        if let Some(conn) = asker.conn.as_mut()
            && let Ok(Some(addr)) = connect::master_addr(conn, target).await
        {
            return Some(addr);
        }
        asker.conn = None;
        asker.next = (asker.next + 1) % n;
    }
    None
}

/// A mutex's value, whoever panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

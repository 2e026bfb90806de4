//! A Redis Cluster reached only where a call's key lives: every key of a name shares
//! one hash tag, so a run's calls go to the master that owns its name's slot and to no
//! other (the client library's cluster client reads the slot map and connects to every
//! master at start-up: on a fleet, every master paid a connection and a PING for every
//! try of the whole fleet, so more masters added no capacity).
//!
//! - The slot map (`CLUSTER SLOTS`) is read once and kept on the host ([`super::kept`]:
//!   the run's local directory, one the user alone can write; a file of another owner,
//!   one others can write, a corrupt one or one made for other seeds is read as no
//!   map), so that a host's later runs read it from there and connect to the owner
//!   alone. It holds only addresses the cluster named.
//! - A stale map is never unsafe: a call sent to a node that does not own the key's
//!   slot is refused by the node (`MOVED`: nothing ran), the map learns the new owner
//!   and the call goes there; `ASK` (a slot being moved) sends `ASKING` and the call to
//!   the node named, once. A node that fails (a failover) marks the map stale: the next
//!   call reads it again, from the seeds or any node it knew. The failed call itself
//!   is not made again: the lease decides (as for any node).
//! - A call without a key (`TIME`, `SCRIPT LOAD` after a `NOSCRIPT`) goes where the
//!   last call went: a script is loaded where its `EVALSHA` found none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, ErrorKind, Pipeline, RedisResult, ServerErrorKind, Value};

use super::connect::{self, Timeouts};
use super::url::RedisUrl;
use crate::error::{Error, Result};

/// Slots in a Redis Cluster.
const SLOTS: usize = 16384;
/// A slot whose owner the map does not know.
const UNKNOWN: u16 = u16::MAX;
/// The first line of a kept map.
const HEADER: &str = "redlock cluster slot map 2";
/// Redirects one call may follow.
const MOST_REDIRECTS: usize = 3;

/// The slot of `key` (CRC16/XMODEM of its hash tag, or of the key).
pub fn slot_of(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|b| *b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|b| *b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(tagged) % SLOTS as u16
}

/// Which node owns each slot: an index into `addrs`; whether each master had a
/// replica when the map was read (its writes are then acknowledged by one, see
/// [`Routed::wait_replica`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotMap {
    owners: Vec<u16>,
    addrs: Vec<String>,
    replicated: Vec<bool>,
}

impl SlotMap {
    fn empty() -> SlotMap {
        SlotMap {
            owners: vec![UNKNOWN; SLOTS],
            addrs: Vec::new(),
            replicated: Vec::new(),
        }
    }

    fn owner(&self, slot: u16) -> Option<&str> {
        let i = *self.owners.get(slot as usize)?;
        self.addrs.get(i as usize).map(String::as_str)
    }

    /// Whether the master that owns `slot` has a replica.
    fn replicated(&self, slot: u16) -> bool {
        let i = self.owners.get(slot as usize).copied().unwrap_or(UNKNOWN);
        self.replicated.get(i as usize).copied().unwrap_or(false)
    }

    /// Marks `addr` (a master of the map) as having a replica, or not.
    fn set_replicated(&mut self, addr: &str, replicated: bool) {
        if let Some(i) = self.addrs.iter().position(|a| a == addr) {
            self.replicated[i] = replicated;
        }
    }

    fn set(&mut self, start: u16, end: u16, addr: &str) {
        let i = match self.addrs.iter().position(|a| a == addr) {
            Some(i) => i,
            None => {
                self.addrs.push(addr.to_string());
                self.replicated.push(false);
                self.addrs.len() - 1
            }
        };
        for slot in start..=end.min(SLOTS as u16 - 1) {
            self.owners[slot as usize] = i as u16;
        }
    }

    fn is_empty(&self) -> bool {
        self.owners.iter().all(|o| *o == UNKNOWN)
    }

    /// The map from a `CLUSTER SLOTS` reply (`asked`: the node that answered, for a
    /// master it names with an empty host).
    fn from_reply(reply: Value, asked: &str) -> SlotMap {
        let mut map = SlotMap::empty();
        let Value::Array(ranges) = reply else {
            return map;
        };
        for range in ranges {
            let Value::Array(items) = range else { continue };
            let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
                (items.first(), items.get(1), items.get(2))
            else {
                continue;
            };
            let host = match master.first() {
                Some(Value::BulkString(h)) if !h.is_empty() && h != b"?" => {
                    String::from_utf8_lossy(h).into_owned()
                }
                _ => asked
                    .rsplit_once(':')
                    .map(|(h, _)| h.to_string())
                    .unwrap_or_default(),
            };
            let Some(Value::Int(port)) = master.get(1) else {
                continue;
            };
            if let (Ok(start), Ok(end)) = (u16::try_from(*start), u16::try_from(*end)) {
                let addr = address(&host, *port);
                map.set(start, end, &addr);
                // The entries after the master are its replicas.
                if items.len() > 3 {
                    map.set_replicated(&addr, true);
                }
            }
        }
        map
    }

    /// The map as kept on the host: the header, the seeds it was read for, a line per
    /// run of slots with one owner (` r` after an owner that has a replica).
    fn to_text(&self, seeds: &str) -> String {
        let mut text = format!("{HEADER}\n{seeds}\n");
        let mut start = 0;
        for slot in 1..=SLOTS {
            if slot == SLOTS || self.owners[slot] != self.owners[start] {
                if let Some(addr) = self.owner(start as u16) {
                    let r = if self.replicated(start as u16) {
                        " r"
                    } else {
                        ""
                    };
                    text.push_str(&format!("{start} {} {addr}{r}\n", slot - 1));
                }
                start = slot;
            }
        }
        text
    }

    /// A kept map read back; `None` for one of other seeds, or anything malformed.
    fn from_text(text: &str, seeds: &str) -> Option<SlotMap> {
        let mut lines = text.lines();
        if lines.next()? != HEADER || lines.next()? != seeds {
            return None;
        }
        let mut map = SlotMap::empty();
        for line in lines {
            let mut words = line.split(' ');
            let start: u16 = words.next()?.parse().ok()?;
            let end: u16 = words.next()?.parse().ok()?;
            let addr = words.next()?;
            let port_ok = addr
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
            let replicated = match words.next() {
                None => false,
                Some("r") => true,
                Some(_) => return None,
            };
            if words.next().is_some() || start > end || end as usize >= SLOTS || !port_ok {
                return None;
            }
            map.set(start, end, addr);
            if replicated {
                map.set_replicated(addr, true);
            }
        }
        (!map.is_empty()).then_some(map)
    }
}

/// A node's URL: the first seed's (its scheme, user, password and fragment) with the
/// node's `host:port`.
fn node_url(seed: &str, addr: &str) -> String {
    let (scheme, rest) = seed.split_once("://").unwrap_or(("redis", seed));
    let (authority, tail) = rest.split_at(rest.find(['/', '#']).unwrap_or(rest.len()));
    let userinfo = authority.rfind('@').map_or("", |i| &authority[..=i]);
    format!("{scheme}://{userinfo}{addr}{tail}")
}

/// A seed URL's `host:port`.
fn addr_of(seed: &str) -> &str {
    let rest = seed.split_once("://").map_or(seed, |(_, r)| r);
    let authority = &rest[..rest.find(['/', '#']).unwrap_or(rest.len())];
    authority
        .rfind('@')
        .map_or(authority, |i| &authority[i + 1..])
}

/// `host:port` (an IPv6 host in brackets).
fn address(host: &str, port: i64) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A cluster reached through its seeds: the map, and a connection per node a call
/// went to.
pub struct Routed {
    url: RedisUrl,
    seeds: Vec<String>,
    timeouts: Timeouts,
    map: Mutex<SlotMap>,
    conns: Mutex<HashMap<String, ConnectionManager>>,
    /// Where the last call went (a call without a key goes there too).
    last: Mutex<Option<String>>,
    /// A node failed: the next call reads the map again.
    stale: AtomicBool,
    /// The masters an unacknowledged write was told of, and the notes not yet taken.
    told: Mutex<Vec<String>>,
    notes: Mutex<Vec<super::Note>>,
}

impl Routed {
    /// The cluster behind `seeds`: its map from the host's kept file, else read from a
    /// seed (and kept). No node is connected to until a call goes to it.
    pub async fn connect(url: &RedisUrl, seeds: &[String], timeouts: Timeouts) -> Result<Routed> {
        let routed = Routed {
            url: url.clone(),
            seeds: seeds.to_vec(),
            timeouts,
            map: Mutex::new(SlotMap::empty()),
            conns: Mutex::new(HashMap::new()),
            last: Mutex::new(None),
            stale: AtomicBool::new(false),
            told: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
        };
        match routed
            .kept()
            .and_then(|p| read_kept(&p, &routed.identity()))
        {
            Some(map) => *lock(&routed.map) = map,
            None => routed.refresh().await?,
        }
        Ok(routed)
    }

    /// What a kept map is for: the seeds, as the URL names them (no password).
    fn identity(&self) -> String {
        self.url.server_identity()
    }

    /// The file this cluster's map is kept in.
    fn kept(&self) -> Option<PathBuf> {
        super::kept::file("cluster", &self.identity(), "map")
    }

    /// Reads the map again from the first node that answers (the seeds, then the
    /// nodes the map knew), and keeps it.
    async fn refresh(&self) -> Result<()> {
        self.refresh_where(|_| true).await
    }

    /// [`Routed::refresh`] from the first node whose map `fits` (a node whose view
    /// lags behind a failover still names the dead master: the next one is asked).
    async fn refresh_where(&self, fits: impl Fn(&SlotMap) -> bool) -> Result<()> {
        let known = lock(&self.map).addrs.clone();
        let seeds = self.seeds.iter().map(|s| addr_of(s).to_string());
        let mut errors = Vec::new();
        for node in seeds.chain(known) {
            match self.slots_of(&node).await {
                Ok(map) if !map.is_empty() && fits(&map) => {
                    if let Some(path) = self.kept() {
                        super::kept::write(&path, &map.to_text(&self.identity()));
                    }
                    *lock(&self.map) = map;
                    self.stale.store(false, Ordering::SeqCst);
                    return Ok(());
                }
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        Err(crate::error::most_telling(errors).unwrap_or_else(|| {
            Error::unreachable(format!("{}: no node gave the cluster's slot map", self.url))
        }))
    }

    /// `CLUSTER SLOTS` asked of `node`, on a connection closed after it.
    async fn slots_of(&self, node: &str) -> Result<SlotMap> {
        let client = self.client(node)?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeouts.connect))
            .set_response_timeout(Some(self.timeouts.response));
        let work = async {
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async::<Value>(&mut conn)
                .await
        };
        match tokio::time::timeout(self.timeouts.round(), work).await {
            Ok(Ok(reply)) => Ok(SlotMap::from_reply(reply, node)),
            Ok(Err(e)) => Err(super::errors::from_redis(&self.url, &e)),
            Err(_) => Err(super::errors::node_timed_out(
                &self.url,
                self.timeouts.round(),
            )),
        }
    }

    /// The node a call on `slot` goes to (`None`: no key, where the last call went).
    async fn target(&self, slot: Option<u16>) -> Result<String> {
        if self.stale.load(Ordering::SeqCst) {
            self.refresh().await?;
        }
        let last = lock(&self.last).clone();
        let owner = |map: &SlotMap| match slot {
            Some(slot) => map.owner(slot).map(str::to_string),
            None => last.clone().or_else(|| map.addrs.first().cloned()),
        };
        if let Some(addr) = owner(&lock(&self.map)) {
            return Ok(addr);
        }
        self.refresh().await?;
        owner(&lock(&self.map)).ok_or_else(|| {
            Error::unreachable(format!("{}: no node serves the name's slot", self.url))
        })
    }

    /// The connection to `addr`, made on first use.
    async fn conn(&self, addr: &str) -> RedisResult<ConnectionManager> {
        if let Some(conn) = lock(&self.conns).get(addr) {
            return Ok(conn.clone());
        }
        let client = self.client(addr).map_err(|e| {
            redis::RedisError::from((ErrorKind::Client, "bad address", e.to_string()))
        })?;
        let conn = connect::manager(&self.url, &client, self.timeouts)
            .await
            .map_err(|e| {
                redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    e.to_string(),
                ))
            })?;
        lock(&self.conns).insert(addr.to_string(), conn.clone());
        Ok(conn)
    }

    /// A client for a blocking connection to the owner of `key`'s slot.
    pub async fn client_for(&self, key: &[u8]) -> Result<redis::Client> {
        let addr = self.target(Some(slot_of(key))).await?;
        self.client(&addr)
    }

    /// A client for the node at `addr` (`host:port`): the seeds' credentials and TLS.
    fn client(&self, addr: &str) -> Result<redis::Client> {
        let seed = self.seeds.first().map_or("", String::as_str);
        connect::client(&self.url, &node_url(seed, addr))
    }

    /// Every master the map knows, by address, each on its own connection (a
    /// command without a key that is for every server: SCAN, `doctor`'s INFO).
    pub async fn masters(&self) -> Result<Vec<(String, ConnectionManager)>> {
        let addrs = lock(&self.map).addrs.clone();
        let mut conns = Vec::new();
        for addr in addrs {
            let conn = self.conn(&addr).await;
            let conn = conn.map_err(|e| super::errors::from_redis(&self.url, &e))?;
            conns.push((addr, conn));
        }
        Ok(conns)
    }

    /// Sends `cmd` where its key lives, following `MOVED` and `ASK`.
    async fn send(&self, cmd: &Cmd) -> RedisResult<Value> {
        let slot = command_slot(cmd);
        let mut addr = self.target(slot).await.map_err(to_redis)?;
        let mut asking = false;
        for _ in 0..MOST_REDIRECTS {
            let mut conn = match self.conn(&addr).await {
                Ok(conn) => conn,
                Err(e) => {
                    addr = self.owner_after_failure(slot, &addr).await.ok_or(e)?;
                    continue;
                }
            };
            *lock(&self.last) = Some(addr.clone());
            let result = if asking {
                let mut pipe = redis::pipe();
                pipe.cmd("ASKING").ignore().add_command(cmd.clone());
                pipe.query_async::<Vec<Value>>(&mut conn)
                    .await
                    .map(|mut v| v.pop().unwrap_or(Value::Nil))
            } else {
                conn.req_packed_command(cmd).await
            };
            // A connection hands a server's error back as a value; the caller's query
            // reads it as an error, and so does the redirect check.
            let result = result.and_then(|value| match value {
                Value::ServerError(e) => Err(redis::RedisError::from(e)),
                value => Ok(value),
            });
            match result {
                Err(e) if redirect(&e).is_some() => {
                    let (kind, to, slot) = redirect(&e).expect("a redirect");
                    asking = kind == ServerErrorKind::Ask;
                    if !asking {
                        lock(&self.map).set(slot, slot, &to);
                    }
                    addr = to;
                }
                Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() => {
                    self.failed(&addr);
                    return Err(e);
                }
                other => return other,
            }
        }
        Err(redis::RedisError::from((
            ErrorKind::Client,
            "too many cluster redirects",
        )))
    }

    /// Sends a pipeline where its first keyed command's key lives (every key of a name
    /// shares its slot).
    async fn send_pipeline(
        &self,
        pipe: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let slot = pipe.cmd_iter().find_map(command_slot);
        let mut addr = self.target(slot).await.map_err(to_redis)?;
        let mut conn = match self.conn(&addr).await {
            Ok(conn) => conn,
            Err(e) => {
                addr = self.owner_after_failure(slot, &addr).await.ok_or(e)?;
                self.conn(&addr).await.inspect_err(|_| self.failed(&addr))?
            }
        };
        *lock(&self.last) = Some(addr.clone());
        let result = conn.req_packed_commands(pipe, offset, count).await;
        if result
            .as_ref()
            .is_err_and(|e| e.is_io_error() || e.is_connection_dropped())
        {
            self.failed(&addr);
        }
        result
    }

    /// The node at `addr` could not be connected to (nothing was sent): the map is read
    /// again (from the seeds, then the nodes it knew) and the slot's owner now, when it
    /// is another node (a failover promoted a replica; a host's kept map still named
    /// the dead master), else `None`.
    async fn owner_after_failure(&self, slot: Option<u16>, addr: &str) -> Option<String> {
        self.failed(addr);
        let slot = slot?;
        let elsewhere = |map: &SlotMap| map.owner(slot).is_some_and(|to| to != addr);
        self.refresh_where(elsewhere).await.ok()?;
        lock(&self.map).owner(slot).map(str::to_string)
    }

    /// Whether the master that owns `key`'s slot has a replica, as the map says.
    pub fn owner_replicated(&self, key: &[u8]) -> bool {
        lock(&self.map).replicated(slot_of(key))
    }

    /// `WAIT 1 ms` on the owner of `key`'s slot, on the connection its writes went
    /// through (one per master in this process): how many replicas acknowledged them.
    pub async fn wait_replica(&self, key: &[u8], ms: u64) -> RedisResult<i64> {
        let addr = self.target(Some(slot_of(key))).await.map_err(to_redis)?;
        let mut conn = self.conn(&addr).await?;
        redis::cmd("WAIT")
            .arg(1)
            .arg(ms)
            .query_async(&mut conn)
            .await
    }

    /// A grant or renewal no replica of `key`'s master acknowledged: a note, once per
    /// master (see `redis::Note`); with `stop`, that master is not waited on again in
    /// this process (until the map is read again).
    pub fn unacknowledged(&self, key: &[u8], note: super::Note, stop: bool) {
        let Some(addr) = lock(&self.map).owner(slot_of(key)).map(str::to_string) else {
            return;
        };
        if stop {
            lock(&self.map).set_replicated(&addr, false);
        }
        let mut told = lock(&self.told);
        if !told.contains(&addr) {
            told.push(addr);
            lock(&self.notes).push(note);
        }
    }

    /// What happened since the last call (see [`Routed::unacknowledged`]).
    pub fn take_notes(&self) -> Vec<super::Note> {
        std::mem::take(&mut *lock(&self.notes))
    }

    /// A node failed: its connection goes, and the next call reads the map again.
    fn failed(&self, addr: &str) {
        lock(&self.conns).remove(addr);
        self.stale.store(true, Ordering::SeqCst);
    }
}

/// A call's connection to a [`Routed`] cluster: each command goes where its key lives.
#[derive(Clone)]
pub struct RoutedConn(pub std::sync::Arc<Routed>);

impl ConnectionLike for RoutedConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> redis::RedisFuture<'a, Value> {
        Box::pin(async move { self.0.send(cmd).await })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        Box::pin(async move { self.0.send_pipeline(pipeline, offset, count).await })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// The slot of a command's key: `EVAL`/`EVALSHA`'s first key, else its first argument;
/// `None` for a command without one.
fn command_slot(cmd: &Cmd) -> Option<u16> {
    let args: Vec<&[u8]> = cmd
        .args_iter()
        .filter_map(|a| match a {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
        .collect();
    let name = args.first()?.to_ascii_uppercase();
    let key = match name.as_slice() {
        b"EVAL" | b"EVALSHA" => {
            let keys: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
            (keys > 0).then(|| args.get(3)).flatten()?
        }
        b"TIME" | b"PING" | b"SCRIPT" | b"CLUSTER" | b"INFO" | b"ROLE" | b"SCAN" | b"ASKING" => {
            return None;
        }
        _ => args.get(1)?,
    };
    Some(slot_of(key))
}

/// A `MOVED` or `ASK` reply: which, the node it names and the slot.
fn redirect(e: &redis::RedisError) -> Option<(ServerErrorKind, String, u16)> {
    let kind = match e.kind() {
        ErrorKind::Server(k @ (ServerErrorKind::Moved | ServerErrorKind::Ask)) => k,
        _ => return None,
    };
    let (addr, slot) = e.redirect_node()?;
    Some((kind, addr.to_string(), slot))
}

fn to_redis(e: Error) -> redis::RedisError {
    redis::RedisError::from(std::io::Error::other(e.to_string()))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// A kept map, if the file is ours, written by none but us, and well formed.
fn read_kept(path: &Path, seeds: &str) -> Option<SlotMap> {
    SlotMap::from_text(&super::kept::read(path)?, seeds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_crc16_of_the_hash_tag() {
        // Redis's own examples (CLUSTER KEYSLOT).
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"foo{}{bar}"), slot_of(b"foo{}{bar}"));
        assert_eq!(slot_of(b"redlock:{a}:meta"), slot_of(b"a"));
    }

    #[test]
    fn a_kept_map_reads_back_and_a_foreign_or_broken_one_is_no_map() {
        let mut map = SlotMap::empty();
        map.set(0, 5460, "127.0.0.1:7000");
        map.set(5461, 16383, "127.0.0.1:7001");
        map.set_replicated("127.0.0.1:7001", true);
        let text = map.to_text("redis+cluster://a:1,b:2");
        assert!(text.contains("5461 16383 127.0.0.1:7001 r\n"), "{text}");
        let back = SlotMap::from_text(&text, "redis+cluster://a:1,b:2");
        assert!(
            back.as_ref()
                .is_some_and(|m| m.replicated(6000) && !m.replicated(0))
        );
        assert_eq!(back, Some(map));
        assert_eq!(SlotMap::from_text(&text, "redis+cluster://c:3"), None);
        for broken in [
            "",
            "garbage",
            &text.replace("5460", "99999"),
            &text.replace("127.0.0.1:7000", "127.0.0.1"),
            &format!("{text}1 2 h:1 extra\n"),
            &format!("{text}1 2 h:1 r extra\n"),
            &text.replace("redlock cluster slot map 2", "redlock cluster slot map 1"),
        ] {
            assert_eq!(
                SlotMap::from_text(broken, "redis+cluster://a:1,b:2"),
                None,
                "{broken}"
            );
        }
    }

    #[test]
    fn a_nodes_url_is_the_seeds_with_its_address() {
        let seed = "rediss://u:p@seed:7000#insecure";
        assert_eq!(
            node_url(seed, "10.0.0.2:7001"),
            "rediss://u:p@10.0.0.2:7001#insecure"
        );
        assert_eq!(node_url("redis://seed:1", "h:2"), "redis://h:2");
        assert_eq!(addr_of(seed), "seed:7000");
        assert_eq!(addr_of("redis://a@b@h:3"), "h:3");
    }

    #[test]
    fn commands_route_by_their_key() {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha
            .arg("sha")
            .arg(2)
            .arg("redlock:{n}")
            .arg("x")
            .arg("arg");
        assert_eq!(command_slot(&evalsha), Some(slot_of(b"n")));
        let mut none = redis::cmd("EVALSHA");
        none.arg("sha").arg(0).arg("arg");
        assert_eq!(command_slot(&none), None);
        assert_eq!(command_slot(&redis::cmd("TIME")), None);
        assert_eq!(
            command_slot(redis::cmd("GET").arg("{n}")),
            Some(slot_of(b"n"))
        );
    }
}

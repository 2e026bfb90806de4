//! Clients for the servers behind a URL: one server, a Redis Cluster through its seeds,
//! a Sentinel-managed master through its sentinels; each with the URL's TLS settings and
//! bounded timeouts.
//!
//! - Cluster: see [`super::routed`]: the slot map is read from a seed (or kept on the
//!   host), and a call's node is connected to with [`client`] and [`manager`].
//! - Sentinel: every sentinel is asked `SENTINEL GET-MASTER-ADDR-BY-NAME` in parallel,
//!   each within the connect + node timeout (a blackholed sentinel costs that, not a
//!   hang); the answers are tried in the URL's order, and an address is used only when
//!   the server there says `ROLE` master (sentinels can lag behind a failover). This is
//!   done here rather than through `redis::sentinel`, whose calls carry no timeout.
//!   The master found is kept on the host (see [`super::kept`]): a later run asks one
//!   sentinel (by its process ID among them, so that a fleet's asks spread), and when
//!   it names the kept master, connects to it alone (2 connections, not one to every
//!   sentinel and two to the master). One sentinel's word is still asked: in a planned
//!   switchover the old master says `ROLE` master, and takes writes, for seconds after
//!   the sentinels moved to the new one, so the kept address alone is no proof. Any
//!   other answer (another master, none, no answer) is the full lookup.
//!
//! During a run, a failed call on a Sentinel master starts a new lookup in the
//! background ([`super::node`]); the failed call itself is not retried.

use std::time::Duration;

use futures_util::future::join_all;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncConnectionConfig, IntoConnectionInfo, RedisResult};

use super::errors::{bad_url, connect_error, node_timed_out};
use super::reply;
use super::url::{RedisUrl, SentinelTarget, Tls};
use crate::error::{Error, Kind, Result, most_telling};
use crate::report::human;

/// The timeouts every connection of a node is made with.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub response: Duration,
}

impl Timeouts {
    /// One connect and one request.
    pub fn round(&self) -> Duration {
        self.connect + self.response
    }
}

/// A client for one server URL of `url` (the URL itself, a cluster seed, a sentinel or
/// a discovered master), with the TLS settings applied.
pub fn client(url: &RedisUrl, server: &str) -> Result<redis::Client> {
    crypto_for(url);
    let built = connection_info(url, server).and_then(|info| match certificates(url.tls()) {
        Some(certs) if url.is_tls() => redis::Client::build_with_tls(info, certs),
        _ => redis::Client::open(info),
    });
    built.map_err(|e| bad_url(url, &e))
}

/// A reconnecting connection to one server, with the node's timeouts and no retries
/// (the lease decides when to try again).
pub async fn manager(
    url: &RedisUrl,
    client: &redis::Client,
    timeouts: Timeouts,
) -> Result<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response))
        .set_number_of_retries(0);
    match ConnectionManager::new_with_config(client.clone(), config).await {
        Ok(conn) => Ok(conn),
        Err(e) => Err(first_failure(url, client, timeouts, &e).await),
    }
}

/// [`manager`] not yet connected: it connects on its first call (bounded by the
/// caller's timeout, as every call is).
pub fn lazy_manager(client: &redis::Client, timeouts: Timeouts) -> Result<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response))
        .set_number_of_retries(0);
    ConnectionManager::new_lazy_with_config(client.clone(), config)
        .map_err(|e| Error::new(Kind::Unreachable, e.to_string()))
}

/// Whether the server closed a new connection at once (what a full server does).
fn closed_at_once(e: &redis::RedisError) -> bool {
    let text = e.to_string();
    !e.is_timeout()
        && !e.is_connection_refusal()
        && (e.is_connection_dropped()
            || text.contains("broken pipe")
            || text.contains("reset")
            || text.contains("closed"))
}

/// A server at its `maxclients` answers a new connection with an error line and closes
/// it, which the client library sees as a broken pipe: read that line ourselves (plain
/// TCP only) so the message can say the server is full.
async fn full_server(url: &RedisUrl, client: &redis::Client, timeouts: Timeouts) -> Option<Error> {
    use tokio::io::AsyncReadExt;
    let redis::ConnectionAddr::Tcp(host, port) = client.get_connection_info().addr() else {
        return None;
    };
    let read = async {
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), *port))
            .await
            .ok()?;
        let mut first = [0u8; 64];
        let n = stream.read(&mut first).await.ok()?;
        Some(first[..n].to_vec())
    };
    let first = tokio::time::timeout(timeouts.response.min(timeouts.connect), read)
        .await
        .ok()
        .flatten()?;
    first.starts_with(b"-ERR max number of clients").then(|| {
        Error::unreachable(format!(
            "{url}: the server is full (maxclients reached); try again later or raise maxclients"
        ))
    })
}

/// A master found through the sentinels: a client for it, its address, and how many
/// replicas its `ROLE` listed as connected (whether a grant can be acknowledged by one).
pub struct Master {
    pub client: redis::Client,
    pub addr: (String, u16),
    pub replicas: usize,
    /// The sentinel that named it from the host's kept master (its index in the URL's
    /// list) and the connection it answered on, for the run's next asks.
    pub sentinel: Option<(usize, redis::aio::MultiplexedConnection)>,
}

/// Where the master is: the kept one when one sentinel names it, else the full lookup
/// (whose master is kept for the host's next runs); returns a client for it.
pub async fn discover(
    url: &RedisUrl,
    target: &SentinelTarget,
    timeouts: Timeouts,
) -> Result<Master> {
    if let Some((addr, replicas)) = kept_master(url) {
        let index = std::process::id() as usize % target.sentinels.len().max(1);
        if let Some((named, conn)) = ask_keeping(url, target, index, timeouts).await
            && named == addr
        {
            let client = client(url, &target.master_url(&addr.0, addr.1))?;
            return Ok(Master {
                client,
                addr,
                replicas,
                sentinel: Some((index, conn)),
            });
        }
    }
    let master = look_up(url, target, timeouts).await?;
    keep_master(url, &master.addr, master.replicas);
    Ok(master)
}

/// The master's address as the sentinel at `index` names it, and the connection it
/// answered on; `None` for no answer in time, or none.
async fn ask_keeping(
    url: &RedisUrl,
    target: &SentinelTarget,
    index: usize,
    timeouts: Timeouts,
) -> Option<((String, u16), redis::aio::MultiplexedConnection)> {
    let client = client(url, target.sentinels.get(index)?).ok()?;
    let ask = async {
        let mut conn = open(&client, timeouts).await?;
        let addr = master_addr(&mut conn, target).await?;
        Ok::<_, redis::RedisError>(addr.map(|addr| (addr, conn)))
    };
    tokio::time::timeout(timeouts.round(), ask)
        .await
        .ok()?
        .ok()?
}

/// The first line of a kept master.
const KEPT_MASTER: &str = "redlock sentinel master 1";

/// The master's address and replicas kept on the host for `url`'s sentinels and name.
fn kept_master(url: &RedisUrl) -> Option<((String, u16), usize)> {
    let identity = url.server_identity();
    let lines = super::kept::load("sentinel", "master", KEPT_MASTER, &identity)?;
    let mut lines = lines.iter();
    let host = lines.next()?;
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:_".contains(&b));
    let port = lines.next()?.parse().ok()?;
    let replicas = lines.next()?.parse().ok()?;
    plain.then(|| ((host.to_string(), port), replicas))
}

/// Keeps the master found (or followed to) for the host's next runs.
pub fn keep_master(url: &RedisUrl, (host, port): &(String, u16), replicas: usize) {
    let identity = url.server_identity();
    if kept_master(url) == Some(((host.clone(), *port), replicas)) {
        return;
    }
    let body = format!("{host}\n{port}\n{replicas}\n");
    super::kept::store("sentinel", "master", KEPT_MASTER, &identity, &body);
}

/// Asks every sentinel where the master is and checks that it is one.
async fn look_up(url: &RedisUrl, target: &SentinelTarget, timeouts: Timeouts) -> Result<Master> {
    let answers = join_all(
        target
            .sentinels
            .iter()
            .map(|s| ask(url, target, s, timeouts)),
    )
    .await;
    let mut tried: Vec<(String, u16)> = Vec::new();
    let mut errors: Vec<Error> = Vec::new();
    let mut unknown = 0;
    for answer in answers {
        let addr = match answer {
            Ok(Some(addr)) => addr,
            Ok(None) => {
                unknown += 1;
                continue;
            }
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if tried.contains(&addr) {
            continue;
        }
        tried.push(addr.clone());
        match master(url, target, &addr, timeouts).await {
            Ok(client) => return Ok(client),
            Err(e) => errors.push(e),
        }
    }
    if tried.is_empty() && unknown > 0 {
        return Err(Error::new(
            Kind::Server,
            format!(
                "{url}: the sentinels know no master named {:?}; check the name after the host list",
                target.master_name
            ),
        ));
    }
    Err(most_telling(errors)
        .unwrap_or_else(|| Error::unreachable(format!("{url}: no sentinel answered"))))
}

/// One sentinel's answer: the master's address, or `None` when it knows no such master.
pub async fn ask(
    url: &RedisUrl,
    target: &SentinelTarget,
    sentinel: &str,
    timeouts: Timeouts,
) -> Result<Option<(String, u16)>> {
    let client = client(url, sentinel)?;
    let ask = async {
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config(timeouts))
            .await?;
        master_addr(&mut conn, target).await
    };
    match tokio::time::timeout(timeouts.round(), ask).await {
        Ok(Ok(addr)) => Ok(addr),
        Ok(Err(e)) if e.to_string().contains("unknown command") => Err(Error::new(
            Kind::Server,
            format!(
                "{url}: a host in the list is not a sentinel (it does not know SENTINEL); for a plain server use redis://"
            ),
        )),
        Ok(Err(e)) => Err(connect_error(url, &e)),
        Err(_) => Err(Error::unreachable(format!(
            "{url}: a sentinel did not answer within {}",
            human(timeouts.round())
        ))),
    }
}

/// `SENTINEL GET-MASTER-ADDR-BY-NAME` on a sentinel's connection.
pub async fn master_addr(
    conn: &mut redis::aio::MultiplexedConnection,
    target: &SentinelTarget,
) -> RedisResult<Option<(String, u16)>> {
    redis::cmd("SENTINEL")
        .arg("GET-MASTER-ADDR-BY-NAME")
        .arg(&target.master_name)
        .query_async::<Option<(String, u16)>>(conn)
        .await
}

/// A connection to a sentinel (or any server) with the node's timeouts.
pub async fn open(
    client: &redis::Client,
    timeouts: Timeouts,
) -> RedisResult<redis::aio::MultiplexedConnection> {
    client
        .get_multiplexed_async_connection_with_config(&config(timeouts))
        .await
}

/// The server at `addr` if it says `ROLE` master, with its connected replicas.
pub async fn master(
    url: &RedisUrl,
    target: &SentinelTarget,
    (host, port): &(String, u16),
    timeouts: Timeouts,
) -> Result<Master> {
    let client = client(url, &target.master_url(host, *port))?;
    let check = async {
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config(timeouts))
            .await?;
        let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
        Ok::<_, redis::RedisError>((reply::replicas(&role), reply::role(role)))
    };
    match tokio::time::timeout(timeouts.round(), check).await {
        Ok(Ok((replicas, role))) if role == "master" => Ok(Master {
            client,
            addr: (host.clone(), *port),
            replicas,
            sentinel: None,
        }),
        Ok(Ok((_, role))) => Err(Error::unreachable(format!(
            "{url}: the sentinels named {host}:{port} as master {:?} but it is a {role}; a failover may be in progress, try again",
            target.master_name
        ))),
        Ok(Err(e)) => Err(connect_error(url, &e)),
        Err(_) => Err(Error::unreachable(format!(
            "{url}: master {host}:{port} did not answer within {}",
            human(timeouts.round())
        ))),
    }
}

fn config(timeouts: Timeouts) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response))
}

/// rediss:// needs a process-wide crypto provider (ring, the one compiled in); it is
/// installed on the first TLS URL only, so a plain run does not pay for it.
fn crypto_for(url: &RedisUrl) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    if url.is_tls() {
        INSTALL.call_once(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
    }
}

/// Connection info for one server URL with `--tls-insecure-skip-verify` applied, and
/// without the client library's `CLIENT SETINFO` on connect: it is a round trip of its
/// own before the first script, which an uncontended run would pay on every start. What
/// that first reply used to reveal (a TLS-only port, a full server, a missing client
/// certificate) is recognised on the first call's failure instead ([`first_failure`]).
fn connection_info(url: &RedisUrl, server: &str) -> RedisResult<redis::ConnectionInfo> {
    let info = server.into_connection_info()?;
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    let info = info.set_redis_settings(settings);
    if !url.insecure() {
        return Ok(info);
    }
    match info.addr().clone() {
        redis::ConnectionAddr::TcpTls {
            host,
            port,
            tls_params,
            ..
        } => Ok(info.set_addr(redis::ConnectionAddr::TcpTls {
            host,
            port,
            insecure: true,
            tls_params,
        })),
        _ => Ok(info),
    }
}

/// The error for a failed connect, or for a call that failed on a connection no
/// server reply has come through yet (the connect sends nothing of its own): a server
/// that closed the new connection at once is full (its `maxclients` line, read on a
/// probe connection) or, for a plain-text URL, most likely a TLS-only port.
pub async fn first_failure(
    url: &RedisUrl,
    client: &redis::Client,
    timeouts: Timeouts,
    err: &redis::RedisError,
) -> Error {
    if closed_at_once(err)
        && let Some(full) = full_server(url, client, timeouts).await
    {
        return full;
    }
    // (A TLS handshake that gets no answer says what it most likely is instead: a
    // plain-text port; see `connect_error`.)
    if err.is_timeout() && !url.is_tls() {
        return node_timed_out(url, timeouts.response);
    }
    connect_error(url, err)
}

/// The certificates for the client library, when a CA or a client cert was given.
fn certificates(tls: &Tls) -> Option<redis::TlsCertificates> {
    if tls.ca.is_none() && tls.client.is_none() {
        return None;
    }
    Some(redis::TlsCertificates {
        client_tls: tls
            .client
            .as_ref()
            .map(|(cert, key)| redis::ClientTlsConfig {
                client_cert: cert.clone(),
                client_key: key.clone(),
            }),
        root_cert: tls.ca.clone(),
    })
}

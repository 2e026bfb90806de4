//! One Redis server: connecting with bounded timeouts, running a script with the
//! per-node timeout, and a pub/sub connection for waiters.
//!
//! The command connection is a `ConnectionManager`, which reconnects after a dropped
//! connection (restart, `CLIENT KILL`, network reset) so that a later renewal can
//! succeed. Every call is bounded by the node timeout: a node that is down, slow or
//! blackholed fails the call, it never hangs the caller.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{FromRedisValue, Script, ScriptInvocation};

use crate::error::{Error, Result};
use crate::url::RedisUrl;

/// The shortest connect timeout, whatever `--node-timeout` says.
pub const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A connected Redis server.
#[derive(Clone)]
pub struct Node {
    pub url: RedisUrl,
    client: redis::Client,
    conn: ConnectionManager,
    timeout: Duration,
}

impl Node {
    /// Connects (and authenticates) within `max(timeout, MIN_CONNECT_TIMEOUT)`.
    pub async fn connect(url: &RedisUrl, timeout: Duration) -> Result<Node> {
        let connect_timeout = timeout.max(MIN_CONNECT_TIMEOUT);
        let client = redis::Client::open(url.secret())
            .map_err(|e| Error::usage(format!("invalid Redis URL {url}: {}", short(&e))))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(0);
        let attempt = ConnectionManager::new_with_config(client.clone(), config);
        let conn = match tokio::time::timeout(connect_timeout + timeout, attempt).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(Error::from_redis(&url.to_string(), &e)),
            Err(_) => {
                return Err(Error::unreachable(format!(
                    "{url}: cannot reach Redis (connect timed out after {}); is the server running and the URL right?",
                    crate::holder::human(connect_timeout)
                )));
            }
        };
        Ok(Node {
            url: url.clone(),
            client,
            conn,
            timeout,
        })
    }

    /// Runs a script invocation, bounded by the node timeout.
    pub async fn run<T: FromRedisValue>(&self, call: &ScriptInvocation<'_>) -> Result<T> {
        let mut conn = self.conn.clone();
        match tokio::time::timeout(self.timeout, call.invoke_async(&mut conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Error::from_redis(&self.url.to_string(), &e)),
            Err(_) => Err(self.timed_out()),
        }
    }

    /// Runs a plain command, bounded by the node timeout.
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        let mut conn = self.conn.clone();
        match tokio::time::timeout(self.timeout, cmd.query_async(&mut conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Error::from_redis(&self.url.to_string(), &e)),
            Err(_) => Err(self.timed_out()),
        }
    }

    /// A pub/sub connection subscribed to `channel`, or an error within the timeout.
    pub async fn subscribe(&self, channel: &[u8]) -> Result<PubSub> {
        let node = self.url.to_string();
        let work = async {
            let mut pubsub = self.client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        match tokio::time::timeout(self.timeout.max(MIN_CONNECT_TIMEOUT), work).await {
            Ok(Ok(pubsub)) => Ok(pubsub),
            Ok(Err(e)) => Err(Error::from_redis(&node, &e)),
            Err(_) => Err(self.timed_out()),
        }
    }

    fn timed_out(&self) -> Error {
        Error::unreachable(format!(
            "{}: no answer within the node timeout ({}); is the server overloaded or unreachable?",
            self.url,
            crate::holder::human(self.timeout)
        ))
    }
}

/// A script invocation with the given keys.
pub fn invocation<'a>(script: &'a Script, keys: &[&[u8]]) -> ScriptInvocation<'a> {
    let mut call = script.prepare_invoke();
    for key in keys {
        call.key(*key);
    }
    call
}

fn short(e: &redis::RedisError) -> String {
    crate::error::one_line(&crate::url::redact(&e.to_string()))
}

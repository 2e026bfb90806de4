//! Reaching a Redis Cluster or a Sentinel-managed master, and turning connection errors
//! into one-line messages with a hint (TLS mismatches, untrusted certificates).
//!
//! - Cluster: the seeds from the URL go to the client library's cluster client, which
//!   reads the slot map (`CLUSTER SLOTS`) and routes by slot. Its retries are few and
//!   short, because every call is bounded by the node timeout anyway.
//! - Sentinel: every sentinel is asked `SENTINEL GET-MASTER-ADDR-BY-NAME` in parallel,
//!   each within the connect + node timeout (a blackholed sentinel costs that, not a
//!   hang); the answers are tried in the URL's order, and an address is used only when
//!   the server there says `ROLE` master (sentinels can lag behind a failover). This is
//!   done here rather than through `redis::sentinel`, whose calls carry no timeout.
//!
//! During a run, a failed call on a Sentinel master starts a new lookup in the
//! background ([`crate::node`]); the failed call itself is not retried.

use std::time::Duration;

use futures_util::future::join_all;
use redis::AsyncConnectionConfig;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;

use crate::error::{Error, Result};
use crate::url::{RedisUrl, SentinelTarget, Topology};

/// Connects to a cluster through its seeds; returns the connection and a client per
/// seed for pub/sub (a PUBLISH in a cluster is forwarded to every node).
pub async fn cluster(
    url: &RedisUrl,
    seeds: &[String],
    connect_timeout: Duration,
    timeout: Duration,
) -> Result<(ClusterConnection, Vec<redis::Client>)> {
    let bad = |e: redis::RedisError| {
        Error::usage(format!(
            "invalid Redis URL {url}: {}",
            crate::error::one_line(&crate::url::redact(&e.to_string()))
        ))
    };
    let infos = seeds
        .iter()
        .map(|s| url.connection_info(s))
        .collect::<redis::RedisResult<Vec<_>>>()
        .map_err(bad)?;
    let mut builder = ClusterClientBuilder::new(infos)
        .connection_timeout(connect_timeout)
        .response_timeout(timeout)
        .retries(3)
        .min_retry_wait(10)
        .max_retry_wait(200);
    if url.is_tls()
        && let Some(certs) = url.tls().certificates()
    {
        builder = builder.certs(certs);
    }
    let client = builder.build().map_err(bad)?;
    let conn = client
        .get_async_connection()
        .await
        .map_err(|e| connect_error(url, &e))?;
    let subscribers = seeds
        .iter()
        .map(|s| url.client_for(s))
        .collect::<redis::RedisResult<Vec<_>>>()
        .map_err(bad)?;
    Ok((conn, subscribers))
}

/// Asks the sentinels where the master is and checks that it is one; returns a client
/// for it.
pub async fn discover(
    url: &RedisUrl,
    target: &SentinelTarget,
    connect_timeout: Duration,
    timeout: Duration,
) -> Result<redis::Client> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        .set_response_timeout(Some(timeout));
    let limit = connect_timeout + timeout;
    let asks = target.sentinels.iter().map(|sentinel| {
        let config = config.clone();
        async move {
            let client = url.client_for(sentinel).map_err(|e| error(url, &e))?;
            let ask = async {
                let mut conn = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                redis::cmd("SENTINEL")
                    .arg("GET-MASTER-ADDR-BY-NAME")
                    .arg(&target.master_name)
                    .query_async::<Option<(String, u16)>>(&mut conn)
                    .await
            };
            match tokio::time::timeout(limit, ask).await {
                Ok(Ok(addr)) => Ok(addr),
                Ok(Err(e)) => Err(connect_error(url, &e)),
                Err(_) => Err(Error::unreachable(format!(
                    "{url}: a sentinel did not answer within {}",
                    crate::holder::human(limit)
                ))),
            }
        }
    });
    let answers = join_all(asks).await;
    let mut tried: Vec<(String, u16)> = Vec::new();
    let mut errors: Vec<Error> = Vec::new();
    let mut unknown = 0;
    for answer in answers {
        let (host, port) = match answer {
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
        if tried.contains(&(host.clone(), port)) {
            continue;
        }
        tried.push((host.clone(), port));
        let client = url
            .client_for(&target.master_url(&host, port))
            .map_err(|e| error(url, &e))?;
        let check = async {
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
            Ok::<_, redis::RedisError>(crate::lease::string(role.into_iter().next()))
        };
        match tokio::time::timeout(limit, check).await {
            Ok(Ok(role)) if role == "master" => return Ok(client),
            Ok(Ok(role)) => errors.push(Error::unreachable(format!(
                "{url}: the sentinels named {host}:{port} as master {:?} but it is a {role}; a failover may be in progress, try again",
                target.master_name
            ))),
            Ok(Err(e)) => errors.push(connect_error(url, &e)),
            Err(_) => errors.push(Error::unreachable(format!(
                "{url}: master {host}:{port} did not answer within {}",
                crate::holder::human(limit)
            ))),
        }
    }
    if tried.is_empty() && unknown > 0 {
        return Err(Error::redis(format!(
            "{url}: the sentinels know no master named {:?}; check the name after the host list",
            target.master_name
        )));
    }
    // Auth errors first: they will not go away by trying again.
    errors.sort_by_key(|e| e.code != crate::exit::Code::Auth);
    Err(errors
        .into_iter()
        .next()
        .unwrap_or_else(|| Error::unreachable(format!("{url}: no sentinel answered"))))
}

/// A client-library error as a one-line [`Error`] naming the node, with a hint where the
/// cause is a TLS mismatch or an untrusted certificate.
pub fn error(url: &RedisUrl, err: &redis::RedisError) -> Error {
    let mut mapped = Error::from_redis(&url.to_string(), err);
    let text = err.to_string();
    let detail = crate::error::one_line(&crate::url::redact(&text));
    let has = |needle: &str| text.contains(needle);
    // (A missing password shows as "Protocol error: unauthenticated": mapped to the
    // auth code by `Error::from_redis`.)
    if has("CertificateRequired") || (url.is_tls() && has("HandshakeFailure")) {
        mapped = Error::unreachable(format!(
            "{url}: the server refused the TLS handshake ({detail}); it may require a client certificate: give --tls-cert and --tls-key"
        ));
    } else if url.is_tls() && (has("not valid for name") || has("NotValidForName")) {
        mapped = Error::unreachable(format!(
            "{url}: the server's TLS certificate is for another host name ({detail}); connect by a name the certificate lists"
        ));
    } else if url.is_tls() && (has("certificate") || has("UnknownIssuer")) {
        mapped = Error::unreachable(format!(
            "{url}: the server's TLS certificate is not trusted ({detail}); give its CA with --tls-ca (or REDLOCK_TLS_CA)"
        ));
    } else if url.is_tls() && (has("corrupt") || has("InvalidContentType") || has("InvalidMessage"))
    {
        mapped = Error::unreachable(format!(
            "{url}: TLS handshake failed ({detail}); is the server TLS-enabled? plain-text ports take redis://"
        ));
    } else if url.is_tls() && err.is_timeout() {
        // A plain-text server reads the ClientHello as the start of a command and waits
        // for the rest: the handshake times out instead of failing.
        mapped = Error::unreachable(format!(
            "{url}: no answer to the TLS handshake ({detail}); is the server TLS-enabled? plain-text ports take redis://"
        ));
    } else if err.code() == Some("READONLY") && matches!(url.topology(), Topology::Sentinel(_)) {
        mapped = Error::redis(format!(
            "{url}: the master became a replica (Sentinel failover); asking the sentinels for the new one"
        ));
    }
    mapped
}

/// [`error`] for a failed connect: a plain-text client whose connection the server
/// closed at once has most likely met a TLS-only port.
pub fn connect_error(url: &RedisUrl, err: &redis::RedisError) -> Error {
    let mut mapped = error(url, err);
    let text = err.to_string();
    if !url.is_tls()
        && mapped.code == crate::exit::Code::Unreachable
        && (err.is_connection_dropped() || text.contains("reset") || text.contains("closed"))
    {
        let detail = crate::error::one_line(&crate::url::redact(&text));
        mapped = Error::unreachable(format!(
            "{url}: the server closed the connection ({detail}); if the port is TLS-only, use rediss://"
        ));
    }
    mapped
}

/// The loud warning for `--tls-insecure-skip-verify` / `#insecure`, on stderr.
pub fn warn_insecure(url: &RedisUrl) {
    let program = std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "redlock".into());
    eprintln!(
        "{program}: WARNING: TLS certificate verification is OFF for {url} (--tls-insecure-skip-verify): anyone on the network path can read the traffic, the password included, and impersonate the server"
    );
}

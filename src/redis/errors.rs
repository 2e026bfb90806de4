//! THE one map from the Redis client's errors onto ours: a [`Kind`] (hence the exit
//! code) and a one-line message naming the node, with a hint where the cause is known to
//! confuse (a missing password, a TLS mismatch, an untrusted certificate, a Sentinel
//! failover). Every text taken from the client library is redacted first.

use redis::RedisError;

use super::url::{RedisUrl, Topology, redact};
use crate::error::{Error, Kind, one_line};

/// A client-library error from a call on `url`'s node.
pub fn from_redis(url: &RedisUrl, err: &RedisError) -> Error {
    tls_hint(url, err)
        .or_else(|| failover_hint(url, err))
        .unwrap_or_else(|| by_code(url, err))
}

/// A node that did not answer within the node timeout, at connect or on a call (one
/// text for both: which one a slow server hits first is a matter of timing). The
/// server may be fine and the node timeout too short (a short --ttl makes it ttl/15):
/// say which timeout ran out and what to give, not only that it did.
pub fn node_timed_out(url: &RedisUrl, timeout: std::time::Duration) -> Error {
    Error::unreachable(format!(
        "{url}: no answer within the node timeout of {} (--node-timeout, else ttl/15); the server may be overloaded or unreachable, or the timeout too short for this host: give a longer --ttl or --node-timeout",
        crate::report::human(timeout)
    ))
}

/// [`from_redis`] for a failed connect (or a first call, see
/// `connect::first_failure`): a plain-text client whose connection the server closed
/// at once has most likely met a TLS-only port, and a TLS client one that wants a
/// client certificate (TLS 1.3 refuses it after the handshake has completed).
pub fn connect_error(url: &RedisUrl, err: &RedisError) -> Error {
    let mapped = from_redis(url, err);
    let text = err.to_string();
    let closed = tls_hint(url, err).is_none()
        && mapped.kind() == Kind::Unreachable
        && !err.is_connection_refusal()
        && (err.is_connection_dropped()
            || text.contains("reset")
            || text.contains("closed")
            || text.contains("broken pipe"));
    if !closed {
        return mapped;
    }
    let hint = match (url.is_tls(), url.tls().client.is_some()) {
        (false, _) => "if the port is TLS-only, use rediss://",
        (true, false) => "if it requires a client certificate, give --tls-cert and --tls-key",
        (true, true) => "it may not accept the client certificate given by --tls-cert",
    };
    Error::unreachable(format!(
        "{url}: the server closed the connection ({}); {hint}",
        short(err)
    ))
}

/// The client library refused to build a client from `url` (a bad URL after all).
pub fn bad_url(url: &RedisUrl, err: &RedisError) -> Error {
    Error::usage(format!("invalid Redis URL {url}: {}", short(err)))
}

/// The client library's text, redacted, on one line.
pub fn short(err: &RedisError) -> String {
    one_line(&redact(&err.to_string()))
}

/// Maps by the server's error code, then by the client's error class. (Long because it
/// is a table: one arm per code, each with its message.)
fn by_code(url: &RedisUrl, err: &RedisError) -> Error {
    let code = err.code().unwrap_or("");
    let detail = one_line(&redact(err.detail().unwrap_or("")));
    let server = |kind: Kind, message: String| Error::new(kind, message);
    match code {
        "WRONGPASS" | "NOAUTH" => server(
            Kind::Auth,
            format!(
                "{url}: authentication failed ({code}); check the user and password in the URL or REDLOCK_REDIS_URL"
            ),
        ),
        "NOPERM" => server(
            Kind::Auth,
            format!(
                "{url}: permission denied by the server's ACL: {detail}; grant the user the lock commands and the key prefix"
            ),
        ),
        // A server with a password answers a long first command (the acquire script has
        // more than 10 arguments) from a client that has not authenticated with this
        // protocol error and closes the connection, instead of NOAUTH. Matched on the
        // text: how the client library carries it (a server error, or the message of a
        // closed connection) varies.
        _ if err.to_string().contains("Protocol error: unauthenticated") => server(
            Kind::Auth,
            format!(
                "{url}: authentication required (NOAUTH); put the user and password in the URL (REDLOCK_REDIS_URL or --redis-url-file keep it out of ps)"
            ),
        ),
        "READONLY" => server(
            Kind::ReadOnly,
            format!("{url}: the server is a read-only replica; point --redis at the master"),
        ),
        "OOM" => server(
            Kind::OutOfMemory,
            format!(
                "{url}: the server is out of memory (maxmemory reached); free memory or raise maxmemory"
            ),
        ),
        "MISCONF" => server(
            Kind::Server,
            format!("{url}: the server refuses writes because it cannot persist: {detail}"),
        ),
        "MOVED" | "ASK" | "CLUSTERDOWN" => server(
            Kind::Server,
            format!("{url}: this is a Redis Cluster node; use a redis+cluster:// URL"),
        ),
        "WRONGTYPE" => server(
            Kind::NotALock,
            format!("{url}: a key holds another type: {detail}"),
        ),
        "LOADING" | "BUSY" | "MASTERDOWN" | "TRYAGAIN" => Error::unreachable(format!(
            "{url}: the server is not ready ({code}); try again later"
        )),
        _ if detail.contains("max number of clients")
            || err.to_string().contains("max number of clients") =>
        {
            Error::unreachable(format!(
                "{url}: the server is full (maxclients reached); try again later or raise maxclients"
            ))
        }
        _ if err.kind() == redis::ErrorKind::Parse && err.to_string().contains("Parse error") => {
            server(
                Kind::BadReply,
                format!(
                    "{url}: the server does not speak the Redis protocol (RESP); check the host and port"
                ),
            )
        }
        _ if err.kind() == redis::ErrorKind::AuthenticationFailed => server(
            Kind::Auth,
            format!("{url}: authentication failed; check the user and password"),
        ),
        _ if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() => {
            let what = if err.is_timeout() {
                "timed out".to_string()
            } else if err.is_connection_refusal() {
                "connection refused".to_string()
            } else {
                short(err)
            };
            Error::unreachable(format!(
                "{url}: cannot reach Redis ({what}); is the server running and the URL right?"
            ))
        }
        _ if !code.is_empty() => {
            server(Kind::Server, format!("{url}: Redis error {code} {detail}"))
        }
        _ => server(Kind::Server, format!("{url}: {}", short(err))),
    }
}

/// TLS mismatches and certificate trouble, which the client library reports in terms
/// of the handshake rather than of what to do.
fn tls_hint(url: &RedisUrl, err: &RedisError) -> Option<Error> {
    let text = err.to_string();
    let has = |needle: &str| text.contains(needle);
    let detail = short(err);
    let why = if has("CertificateRequired") || (url.is_tls() && has("HandshakeFailure")) {
        format!(
            "the server refused the TLS handshake ({detail}); it may require a client certificate: give --tls-cert and --tls-key"
        )
    } else if !url.is_tls() {
        return None;
    } else if has("not valid for name") || has("NotValidForName") {
        format!(
            "the server's TLS certificate is for another host name ({detail}); connect by a name the certificate lists"
        )
    } else if has("certificate") || has("UnknownIssuer") {
        format!(
            "the server's TLS certificate is not trusted ({detail}); give its CA with --tls-ca (or REDLOCK_TLS_CA)"
        )
    } else if has("corrupt") || has("InvalidContentType") || has("InvalidMessage") {
        format!(
            "TLS handshake failed ({detail}); is the server TLS-enabled? plain-text ports take redis://"
        )
    } else if err.is_timeout() {
        // A plain-text server reads the ClientHello as the start of a command and waits
        // for the rest: the handshake times out instead of failing.
        format!(
            "no answer to the TLS handshake ({detail}); is the server TLS-enabled? plain-text ports take redis://"
        )
    } else {
        return None;
    };
    Some(Error::unreachable(format!("{url}: {why}")))
}

/// READONLY from a Sentinel master means it was demoted by a failover, and a pop ended
/// with UNBLOCKED that its master became a replica: both heal once the sentinels name
/// the new master, so both are transient (a waiting run rides through a failover as a
/// renewal does).
fn failover_hint(url: &RedisUrl, err: &RedisError) -> Option<Error> {
    let moved = matches!(err.code(), Some("READONLY" | "UNBLOCKED"));
    (moved && matches!(url.topology(), Topology::Sentinel(_))).then(|| {
        Error::new(
            Kind::Unreachable,
            format!(
                "{url}: the master became a replica (Sentinel failover); asking the sentinels for the new one"
            ),
        )
    })
}

/// The error for a server reply this tool cannot read.
pub fn bad_reply(url: &RedisUrl, what: &str) -> Error {
    Error::new(Kind::BadReply, format!("{url}: unexpected reply {what}"))
}

//! Typed errors whose kind decides the exit code, and the mapping of Redis errors onto
//! them. Every message is one line saying what went wrong and what to do; messages never
//! contain a password (URLs are shown through [`crate::url::RedisUrl`]'s redacted form).

use std::fmt;

use crate::exit::Code;

/// An error that ends a command with a documented exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Code::Usage, message)
    }
    pub fn unreachable(message: impl Into<String>) -> Self {
        Self::new(Code::Unreachable, message)
    }
    pub fn redis(message: impl Into<String>) -> Self {
        Self::new(Code::Redis, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Code::Internal, message)
    }

    /// Maps an error from the Redis client, naming the node it came from.
    pub fn from_redis(node: &str, err: &redis::RedisError) -> Self {
        let code = err.code().unwrap_or("");
        let detail = one_line(err.detail().unwrap_or(""));
        match code {
            "WRONGPASS" | "NOAUTH" => Self::new(
                Code::Auth,
                format!(
                    "{node}: authentication failed ({code}); check the user and password in the URL or REDLOCK_REDIS_URL"
                ),
            ),
            "NOPERM" => Self::new(
                Code::Auth,
                format!(
                    "{node}: permission denied by the server's ACL: {detail}; grant the user the lock commands and the key prefix"
                ),
            ),
            // A server with a password answers a long first command (the acquire
            // script has more than 10 arguments) from a client that has not
            // authenticated with this protocol error and closes the connection,
            // instead of NOAUTH. Matched on the text: how the client library carries
            // it (a server error, or the message of a closed connection) varies.
            _ if err.to_string().contains("Protocol error: unauthenticated") => Self::new(
                Code::Auth,
                format!(
                    "{node}: authentication required (NOAUTH); put the user and password in the URL (REDLOCK_REDIS_URL or --redis-url-file keep it out of ps)"
                ),
            ),
            "READONLY" => Self::redis(format!(
                "{node}: the server is a read-only replica; point --redis at the master"
            )),
            "OOM" => Self::redis(format!(
                "{node}: the server is out of memory (maxmemory reached); free memory or raise maxmemory"
            )),
            "MISCONF" => Self::redis(format!(
                "{node}: the server refuses writes because it cannot persist: {detail}"
            )),
            "MOVED" | "ASK" | "CLUSTERDOWN" => Self::redis(format!(
                "{node}: this is a Redis Cluster node; use a redis+cluster:// URL"
            )),
            "WRONGTYPE" => Self::redis(format!("{node}: a key holds another type: {detail}")),
            "LOADING" | "BUSY" | "MASTERDOWN" | "TRYAGAIN" => Self::unreachable(format!(
                "{node}: the server is not ready ({code}); try again later"
            )),
            _ if err.kind() == redis::ErrorKind::AuthenticationFailed => Self::new(
                Code::Auth,
                format!("{node}: authentication failed; check the user and password"),
            ),
            _ if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() => {
                let what = if err.is_timeout() {
                    "timed out".to_string()
                } else if err.is_connection_refusal() {
                    "connection refused".to_string()
                } else {
                    one_line(&err.to_string())
                };
                Self::unreachable(format!(
                    "{node}: cannot reach Redis ({what}); is the server running and the URL right?"
                ))
            }
            _ if !code.is_empty() => Self::redis(format!("{node}: Redis error {code} {detail}")),
            _ => Self::redis(format!("{node}: {}", one_line(&err.to_string()))),
        }
    }
}

/// Collapses a message onto one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_newlines() {
        assert_eq!(one_line("a\nb\t c"), "a b c");
    }
}

//! Redis URLs: parsing, checking and a display form that never shows the password.
//!
//! Accepted: `redis://[user[:password]@]host[:port][/db]`, `rediss://…` (TLS, verified),
//! `unix:///path/to.sock` and `redis+unix:///path/to.sock` (`?db=N&user=U&pass=P`).
//! Anything else is a usage error whose message shows the URL redacted.

use std::fmt;

use redis::IntoConnectionInfo;
use url::Url;

use crate::error::{Error, Result};

/// The default server when neither `--redis` nor `REDLOCK_REDIS_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// A checked Redis URL. `Display` and `Debug` redact the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    raw: String,
    shown: String,
}

impl RedisUrl {
    /// Parses and checks one URL.
    pub fn parse(raw: &str) -> Result<Self> {
        let raw = raw.trim();
        let shown = redact(raw);
        let bad = |why: &str| Error::usage(format!("invalid Redis URL {shown:?}: {why}"));
        if raw.is_empty() {
            return Err(bad("it is empty"));
        }
        let url = Url::parse(raw).map_err(|e| {
            bad(&format!(
                "{e} (expected redis://host:port, rediss://host:port or unix:///path; percent-encode @ : / in passwords)"
            ))
        })?;
        match url.scheme() {
            "redis" | "rediss" => {
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(bad("it names no host"));
                }
                if url.port() == Some(0) {
                    return Err(bad("port 0 is not a port"));
                }
            }
            "unix" | "redis+unix" => {
                if url.path().is_empty() || url.path() == "/" {
                    return Err(bad("it names no socket path"));
                }
            }
            other => {
                return Err(bad(&format!(
                    "unknown scheme {other:?} (use redis://, rediss:// or unix://)"
                )));
            }
        }
        raw.into_connection_info()
            .map_err(|e| bad(&crate::error::one_line(&e.to_string())))?;
        Ok(RedisUrl {
            raw: raw.to_string(),
            shown,
        })
    }

    /// The URL with its password, for the client library only.
    pub fn secret(&self) -> &str {
        &self.raw
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({})", self.shown)
    }
}

/// The URL with any password (userinfo or `pass=` query) replaced by `***`; text that
/// does not parse has everything between `://` and the last `@` hidden.
pub fn redact(raw: &str) -> String {
    if let Ok(mut url) = Url::parse(raw) {
        if url.password().is_some() {
            let _ = url.set_password(Some("***"));
        }
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        if !pairs.is_empty() {
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        return url.to_string();
    }
    match (raw.find("://"), raw.rfind('@')) {
        (Some(start), Some(at)) if at > start => format!("{}://***{}", &raw[..start], &raw[at..]),
        (None, Some(at)) => format!("***{}", &raw[at..]),
        _ => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_urls() {
        for raw in [
            "redis://127.0.0.1:6379",
            "redis://localhost",
            "redis://:pw@host:1/2",
            "redis://user:pw@host:6380/0",
            "rediss://host:6380",
            "redis://[::1]:6379",
            "unix:///tmp/redis.sock",
            "redis+unix:///tmp/redis.sock?db=1",
        ] {
            assert!(RedisUrl::parse(raw).is_ok(), "{raw}");
        }
    }

    #[test]
    fn bad_urls_are_usage_errors_and_redacted() {
        for raw in [
            "",
            "http://h:1",
            "REDIS-x://h",
            "redis:/x",
            "redis://:sekrit@:0",
            "redis://:sekrit@h:65536",
            "redis://:sekrit@h:0",
            "garbage",
            "unix://",
            "redis://:sekrit@host/notanumber",
        ] {
            let err = RedisUrl::parse(raw).expect_err(raw);
            assert_eq!(err.code, crate::exit::Code::Usage, "{raw}");
            assert!(!err.message.contains("sekrit"), "{}", err.message);
            assert!(!err.message.contains('\n'));
        }
    }

    #[test]
    fn display_redacts() {
        let url = RedisUrl::parse("redis://alice:s3cret@h:1/0").unwrap();
        assert_eq!(url.to_string(), "redis://alice:***@h:1/0");
        assert!(!format!("{url:?}").contains("s3cret"));
        assert_eq!(url.secret(), "redis://alice:s3cret@h:1/0");
        assert_eq!(
            redact("unix:///s.sock?pass=zz&db=1"),
            "unix:///s.sock?pass=***&db=1"
        );
        assert_eq!(redact("redis://a:b@c@host"), "redis://a:***@host");
        assert_eq!(redact("redis://:pw@host:99999"), "redis://***@host:99999");
    }
}

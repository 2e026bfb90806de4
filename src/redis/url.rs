//! Redis URLs: parsing, checking and a display form that never shows the password.
//! Data only: the clients are built in [`super::connect`].
//!
//! Accepted forms (one `--redis` value each; several values = Redlock over them):
//!
//! - `redis://[user[:password]@]host[:port][/db]` — one server, plain text;
//! - `rediss://…` — one server over TLS, certificate and host name verified;
//! - `unix:///path/to.sock` and `redis+unix:///path/to.sock` (`?db=N&user=U&pass=P`);
//! - `redis+cluster://[user[:password]@]host:port[,host:port…]` (`rediss+cluster://` for
//!   TLS) — a Redis Cluster found through these seed nodes (port 6379 when omitted);
//!   scripts are routed to the lock's hash slot and MOVED/ASK redirections followed.
//!   Cluster has database 0 only, so a path other than `/` or `/0` is refused;
//! - `redis+sentinel://[user[:password]@]host:port[,host:port…]/MASTER[/db]`
//!   (`rediss+sentinel://` for TLS to the sentinels and the master) — the master named
//!   MASTER, asked of the sentinels (port 26379 when omitted) on every connect. The
//!   user and password are the *master's*; sentinels that require their own take
//!   `?sentinel_user=U&sentinel_password=P`.
//!
//! TLS options (`--tls-ca`, `--tls-cert`/`--tls-key`, `--tls-insecure-skip-verify`) are
//! attached to the URLs by [`apply_tls`]; they apply to the `rediss` forms only. A
//! `#insecure` fragment (the client library's spelling) is accepted as the same as
//! `--tls-insecure-skip-verify`. Anything else is a usage error whose message shows the
//! URL redacted.

use std::fmt;

use redis::IntoConnectionInfo;
use url::Url;

use crate::error::{Error, Result};

/// The default server when neither `--redis` nor `REDLOCK_REDIS_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The port of a cluster seed given without one.
pub const CLUSTER_DEFAULT_PORT: u16 = 6379;
/// The port of a sentinel given without one.
pub const SENTINEL_DEFAULT_PORT: u16 = 26379;

/// How the server behind one URL is reached. Holds passwords: no `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub enum Topology {
    /// One server (`redis://`, `rediss://`, `unix://`).
    Single,
    /// A Redis Cluster; each seed is a `redis://`/`rediss://` URL with the credentials.
    Cluster { seeds: Vec<String> },
    /// A master found through Sentinel.
    Sentinel(SentinelTarget),
}

/// Where to ask for a Sentinel-managed master, and how to log in to it once found.
#[derive(Clone, PartialEq, Eq)]
pub struct SentinelTarget {
    /// Each sentinel as a `redis://`/`rediss://` URL (with the sentinel credentials).
    pub sentinels: Vec<String>,
    /// The master's name in the sentinels' configuration (`sentinel monitor NAME …`).
    pub master_name: String,
    scheme: &'static str,
    userinfo: String,
    db: i64,
    fragment: String,
}

impl SentinelTarget {
    /// The URL of the master at `host:port`, with the master's credentials and db.
    pub fn master_url(&self, host: &str, port: u16) -> String {
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        format!(
            "{}://{}{host}:{port}/{}{}",
            self.scheme, self.userinfo, self.db, self.fragment
        )
    }
}

/// TLS settings for `rediss` URLs: PEM bytes read from the `--tls-*` files.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// CA certificate(s) that replace the system roots (`--tls-ca`).
    pub ca: Option<Vec<u8>>,
    /// Client certificate chain and key for mutual TLS (`--tls-cert`, `--tls-key`).
    pub client: Option<(Vec<u8>, Vec<u8>)>,
    /// Skip certificate and host name verification (`--tls-insecure-skip-verify`).
    pub insecure: bool,
}

impl Tls {
    /// Whether any TLS option was given.
    pub fn is_set(&self) -> bool {
        self.ca.is_some() || self.client.is_some() || self.insecure
    }
}

/// A checked Redis URL. `Display` and `Debug` redact the password.
#[derive(Clone)]
pub struct RedisUrl {
    raw: String,
    shown: String,
    topology: Topology,
    tls: Tls,
}

impl PartialEq for RedisUrl {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Eq for RedisUrl {}

impl RedisUrl {
    /// Parses and checks one URL.
    pub fn parse(raw: &str) -> Result<Self> {
        let raw = raw.trim();
        let shown = redact(raw);
        let bad =
            |why: &str| Error::usage(format!("invalid Redis URL {shown:?}: {}", scrub(why, raw)));
        if raw.is_empty() {
            return Err(bad("it is empty"));
        }
        // Why it is refused is worked out again on the redacted text, so that no part of
        // a password can be quoted, whatever the shape of the mistake.
        let topology = topology(raw).map_err(|_| {
            bad(&topology(&shown)
                .err()
                .unwrap_or_else(|| "it is malformed".to_string()))
        })?;
        Ok(RedisUrl {
            raw: raw.to_string(),
            shown,
            topology,
            tls: Tls::default(),
        })
    }

    /// The URL with its password, for the client library only (one server; for Cluster
    /// and Sentinel see [`RedisUrl::topology`]).
    pub fn secret(&self) -> &str {
        &self.raw
    }

    /// Single server, Cluster or Sentinel.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Whether this URL is a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.topology, Topology::Cluster { .. })
    }

    /// Whether the connection is TLS (`rediss`, `rediss+cluster`, `rediss+sentinel`).
    pub fn is_tls(&self) -> bool {
        self.raw.starts_with("rediss") || self.raw.starts_with("valkeys")
    }

    /// Whether certificate verification is off (`#insecure` or the flag).
    pub fn insecure(&self) -> bool {
        self.is_tls() && (self.tls.insecure || self.raw.ends_with("#insecure"))
    }

    /// The TLS settings attached by [`apply_tls`].
    pub fn tls(&self) -> &Tls {
        &self.tls
    }

    /// Which server this URL reaches, the same however it is spelled: scheme, host
    /// (`localhost` as `127.0.0.1`, any case), port (6379 when not given), database (0
    /// when not given), and nothing else (no user, password, query or fragment). What
    /// names a host's local queue, so that `redis://127.0.0.1:P`, `…:P/0` and
    /// `redis://localhost:P` queue together. A Cluster or Sentinel URL is its redacted
    /// text without its query.
    pub fn server_identity(&self) -> String {
        if !matches!(self.topology, Topology::Single) {
            return self
                .shown
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .to_string();
        }
        let Ok(url) = url::Url::parse(&self.raw) else {
            return self.shown.clone();
        };
        let scheme = url.scheme().to_ascii_lowercase();
        if scheme == "unix" || scheme == "redis+unix" || scheme == "valkey+unix" {
            let db = url
                .query_pairs()
                .find(|(k, _)| k == "db")
                .map_or("0".to_string(), |(_, v)| v.into_owned());
            return format!("unix:{}/{db}", url.path());
        }
        let host = match url.host_str().map(str::to_ascii_lowercase) {
            Some(h) if h == "localhost" => "127.0.0.1".to_string(),
            Some(h) => h,
            None => String::new(),
        };
        let port = url.port().unwrap_or(6379);
        let db = url.path().trim_matches('/').parse::<i64>().unwrap_or(0);
        format!("{scheme}://{host}:{port}/{db}")
    }
}

/// Splits a comma-separated list of URLs. A comma splits only where a new URL
/// (`scheme://`) starts, so the host lists of `redis+cluster://h1:1,h2:2` and
/// `redis+sentinel://…` stay whole. Empty items are dropped.
pub fn split_list(list: &str) -> Vec<String> {
    let starts_url = |s: &str| {
        s.trim_start().split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
    };
    let mut out: Vec<String> = Vec::new();
    for piece in list.split(',') {
        match out.last_mut() {
            Some(last) if !starts_url(piece) && !piece.trim().is_empty() => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Attaches the TLS options to the URLs. Options given while no URL uses TLS are a
/// usage error (they would be silently ignored otherwise).
pub fn apply_tls(urls: &mut [RedisUrl], tls: Tls) -> Result<()> {
    if !tls.is_set() {
        return Ok(());
    }
    if !urls.iter().any(RedisUrl::is_tls) {
        return Err(Error::usage(
            "TLS options (--tls-ca, --tls-cert, --tls-key, --tls-insecure-skip-verify) need a rediss:// URL; this URL is plain text",
        ));
    }
    for url in urls.iter_mut().filter(|u| u.is_tls()) {
        url.tls = tls.clone();
    }
    Ok(())
}

/// Checks a one-server URL (`redis`, `rediss`, `unix`, `redis+unix`).
/// The servers a URL names, or why it names none.
fn topology(raw: &str) -> std::result::Result<Topology, String> {
    match raw.split_once("://").map(|(s, _)| s) {
        Some("redis+cluster" | "rediss+cluster") => parse_cluster(raw),
        Some("redis+sentinel" | "rediss+sentinel") => parse_sentinel(raw),
        _ => check_single(raw).map(|()| Topology::Single),
    }
}

fn check_single(raw: &str) -> std::result::Result<(), String> {
    let url = Url::parse(raw).map_err(|e| {
        format!(
            "{e} (expected redis://host:port, rediss://host:port, unix:///path, redis+cluster://host:port,… or redis+sentinel://host:port,…/master; percent-encode @ : / in passwords)"
        )
    })?;
    match url.scheme() {
        "redis" | "rediss" | "valkey" | "valkeys" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err("it names no host".into());
            }
            if url.port() == Some(0) {
                return Err("port 0 is not a port".into());
            }
            let db = url.path().trim_start_matches('/');
            if !db.is_empty() && db.parse::<u32>().is_err() {
                return Err(format!(
                    "database {db:?} is not a number (the path is the database: redis://host:port/0)"
                ));
            }
        }
        "unix" | "redis+unix" | "valkey+unix" => {
            if url.path().is_empty() || url.path() == "/" {
                return Err("it names no socket path".into());
            }
            if let Some((_, db)) = url.query_pairs().find(|(k, _)| k == "db")
                && db.parse::<u32>().is_err()
            {
                return Err(format!("database {db:?} is not a number (?db=0)"));
            }
        }
        other => {
            return Err(format!(
                "unknown scheme {other:?} (use redis://, rediss://, valkey://, valkeys://, unix://, redis+cluster:// or redis+sentinel://)"
            ));
        }
    }
    let tls = matches!(url.scheme(), "rediss" | "valkeys");
    if let Some(fragment) = url.fragment()
        && (fragment != "insecure" || !tls)
    {
        // The fragment is not quoted: it may hold anything, a password included.
        return Err("unknown #fragment (only rediss://…#insecure is understood)".into());
    }
    raw.into_connection_info()
        .map_err(|e| crate::error::one_line(&e.to_string()))?;
    Ok(())
}

/// The parts of a multi-host URL `scheme://[userinfo@]h1[:p1][,h2[:p2]…][/path][?query][#fragment]`.
struct MultiHost<'a> {
    /// `redis` or `rediss`.
    base: &'static str,
    /// Raw (still percent-encoded) `user:password@`, or empty.
    userinfo: &'a str,
    /// `host:port` for each host, the default port filled in, IPv6 in brackets.
    hosts: Vec<String>,
    path: &'a str,
    query: &'a str,
    /// `#insecure` or empty.
    fragment: &'a str,
}

fn split_multi(raw: &str, default_port: u16) -> std::result::Result<MultiHost<'_>, String> {
    let (scheme, rest) = raw.split_once("://").ok_or("no ://")?;
    let base = if scheme.starts_with("rediss") {
        "rediss"
    } else {
        "redis"
    };
    let (rest, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if !fragment.is_empty() && (fragment != "#insecure" || base != "rediss") {
        return Err("unknown #fragment (only rediss…#insecure is understood)".to_string());
    }
    let (rest, query) = match rest.find('?') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(i) => (&authority[..=i], &authority[i + 1..]),
        None => ("", authority),
    };
    let mut hosts = Vec::new();
    for host in hostlist.split(',').map(str::trim) {
        if host.is_empty() {
            return Err("an empty host in the host list (host:port,host:port)".into());
        }
        let url =
            Url::parse(&format!("redis://{host}")).map_err(|e| format!("host {host:?}: {e}"))?;
        let name = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("host {host:?} names no host"))?;
        if url.path() != "/" && !url.path().is_empty() || url.username() != "" {
            return Err(format!("host {host:?} is not host:port"));
        }
        let port = url.port().unwrap_or(default_port);
        if port == 0 {
            return Err("port 0 is not a port".into());
        }
        hosts.push(format!("{name}:{port}"));
    }
    Ok(MultiHost {
        base,
        userinfo,
        hosts,
        path,
        query,
        fragment,
    })
}

fn parse_cluster(raw: &str) -> std::result::Result<Topology, String> {
    let m = split_multi(raw, CLUSTER_DEFAULT_PORT)?;
    if !matches!(m.path, "" | "/" | "/0") {
        return Err(format!(
            "a Redis Cluster has database 0 only; remove the path {:?}",
            m.path
        ));
    }
    if !m.query.is_empty() {
        return Err("redis+cluster:// takes no ?options".into());
    }
    let seeds: Vec<String> = m
        .hosts
        .iter()
        .map(|h| format!("{}://{}{h}{}", m.base, m.userinfo, m.fragment))
        .collect();
    for seed in &seeds {
        seed.as_str()
            .into_connection_info()
            .map_err(|e| crate::error::one_line(&e.to_string()))?;
    }
    Ok(Topology::Cluster { seeds })
}

fn parse_sentinel(raw: &str) -> std::result::Result<Topology, String> {
    let m = split_multi(raw, SENTINEL_DEFAULT_PORT)?;
    let mut parts = m.path.trim_start_matches('/').splitn(2, '/');
    let master_name = parts.next().unwrap_or("");
    if master_name.is_empty() {
        return Err("it names no master; use redis+sentinel://host:port,…/MASTERNAME[/db]".into());
    }
    let master_name = url::form_urlencoded::parse(format!("n={master_name}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let db = match parts.next().map(|d| d.trim_end_matches('/')) {
        None | Some("") => 0,
        Some(d) => d
            .parse::<i64>()
            .ok()
            .filter(|d| *d >= 0)
            .ok_or_else(|| format!("database {d:?} is not a number"))?,
    };
    let sentinels = sentinel_urls(&m)?;
    let target = SentinelTarget {
        sentinels,
        master_name,
        scheme: m.base,
        userinfo: m.userinfo.to_string(),
        db,
        fragment: m.fragment.to_string(),
    };
    target
        .master_url("127.0.0.1", 1)
        .as_str()
        .into_connection_info()
        .map_err(|e| crate::error::one_line(&e.to_string()))?;
    Ok(Topology::Sentinel(target))
}

/// Each sentinel's URL, with the sentinel credentials from the query.
fn sentinel_urls(m: &MultiHost<'_>) -> std::result::Result<Vec<String>, String> {
    let (mut s_user, mut s_pass) = (None, None);
    for (k, v) in url::form_urlencoded::parse(m.query.as_bytes()) {
        match k.as_ref() {
            "sentinel_user" | "sentinel_username" => s_user = Some(v.into_owned()),
            "sentinel_pass" | "sentinel_password" => s_pass = Some(v.into_owned()),
            other => {
                return Err(format!(
                    "unknown option {other:?} (sentinel_user and sentinel_password are understood)"
                ));
            }
        }
    }
    let mut sentinels = Vec::new();
    for host in &m.hosts {
        let mut url = Url::parse(&format!("{}://{host}", m.base)).map_err(|e| e.to_string())?;
        if let Some(user) = &s_user {
            url.set_username(user).map_err(|_| "bad sentinel_user")?;
        }
        if let Some(pass) = &s_pass {
            url.set_password(Some(pass))
                .map_err(|_| "bad sentinel_password")?;
        }
        let mut url = url.to_string();
        url.push_str(m.fragment);
        url.as_str()
            .into_connection_info()
            .map_err(|e| crate::error::one_line(&e.to_string()))?;
        sentinels.push(url);
    }
    Ok(sentinels)
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

/// Whether a query option holds a secret.
fn secret_key(key: &str) -> bool {
    key.to_ascii_lowercase().contains("pass")
}

/// The query with the values of `*pass*` options hidden, and of any option whose value
/// holds another `?` or `=` (a password option a stray character merged into it). Works
/// on the text, so what is shown is what was written.
fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if secret_key(&decoded(k)) || v.contains(['=', '?']) => {
                format!("{k}=***")
            }
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A query key percent-decoded, as the client library reads it.
fn decoded(key: &str) -> String {
    url::form_urlencoded::parse(key.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// The URL with any password replaced by `***`: the user info (all of it, but a
/// `user:` before a password), and the values of `*pass*` query options. Works on the
/// text, not on a parse, so that malformed URLs (`redis:/:pw@h`, `redis:://…`, host
/// lists) are redacted as well as good ones: whatever stands before the last `@` after
/// the scheme is user info.
pub fn redact(raw: &str) -> String {
    let (userinfo_end, tail) = match raw.rfind('@') {
        Some(at) => (at, &raw[at..]),
        None => (0, raw),
    };
    let head_len = scheme_prefix_len(&raw[..userinfo_end]);
    let head = &raw[..head_len];
    let userinfo = &raw[head_len..userinfo_end];
    let userinfo = match userinfo.split_once(':') {
        _ if userinfo.is_empty() => String::new(),
        Some((user, _)) if plain_user(user) => format!("{user}:***"),
        _ => "***".to_string(),
    };
    // Everything after `#` is hidden but the one fragment we understand: a password
    // written after a stray `#` must not be echoed.
    let (tail, fragment) = match tail.find('#') {
        Some(i) if &tail[i..] == "#insecure" => (&tail[..i], "#insecure"),
        Some(i) => (&tail[..i], "#***"),
        None => (tail, ""),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => format!("{path}?{}", redact_query(query)),
        None => tail.to_string(),
    };
    format!("{head}{userinfo}{tail}{fragment}")
}

/// Whether `user` reads as a user name alone, shown before `:***`; anything else in the
/// user info (a `?pass=…` that a missing `?` or stray `@` put there) is hidden whole.
fn plain_user(user: &str) -> bool {
    !user.is_empty()
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '%' | '+' | '-'))
}

/// The passwords in a URL's text, as [`redact`] finds them (raw and percent-decoded),
/// to scrub from messages that quote parts of it.
fn secrets(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(at) = raw.rfind('@') {
        let userinfo = &raw[scheme_prefix_len(&raw[..at])..at];
        let secret = userinfo.split_once(':').map_or(userinfo, |(_, pw)| pw);
        out.push(secret.to_string());
    }
    if let Some((_, query)) = raw.split_once('?') {
        let query = query.split('#').next().unwrap_or("");
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            if secret_key(&k) {
                out.push(v.into_owned());
            }
        }
        for pair in query.split('&') {
            if let Some((k, v)) = pair.split_once('=')
                && secret_key(k)
            {
                out.push(v.to_string());
            }
        }
    }
    let decoded: Vec<String> = out
        .iter()
        .map(|s| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        })
        .collect();
    out.extend(decoded);
    out.retain(|s| !s.is_empty());
    out
}

/// `text` with every password of the URL `raw` replaced by `***`.
fn scrub(text: &str, raw: &str) -> String {
    let mut secrets = secrets(raw);
    // The longest first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret.as_str(), "***")
    })
}

/// How much of `text` is a scheme with its `:` and `/` run (`redis://`, `redis:/`,
/// `redis:://`); 0 when it does not start with one.
fn scheme_prefix_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() => {}
        _ => return 0,
    }
    let Some(colon) = text.find(':') else {
        return 0;
    };
    let scheme_ok = text[..colon]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return 0;
    }
    let run = text[colon..]
        .chars()
        .take_while(|c| matches!(c, ':' | '/'))
        .count();
    // A `:` after the slashes starts the user info (`redis://:password@…`).
    let run = match text[colon..colon + run].rfind('/') {
        Some(slash) => slash + 1,
        None => run,
    };
    colon + run
}

#[cfg(test)]
mod tests;

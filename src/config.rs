//! Raw arguments to a checked configuration: the one conversion from what clap parsed
//! (strings, as typed) to what the wrapper and the verbs run with (durations, URLs, keys,
//! decided defaults). Every rule that spans flags lives here, and every mistake is a
//! usage error (exit 64) that names the flag. Nothing after this module sees a raw
//! argument: `run.rs` takes a [`RunConfig`], each verb its own `*Config`.
//!
//! This file holds what the run and the verbs share: where the locks live ([`Conn`]),
//! the wait, the range of every duration flag, and the parsers of durations, counts
//! and signals. `config/run.rs` makes `redlock-run`'s [`RunConfig`], `config/verbs.rs`
//! each verb's config; both are re-exported here, so the rest of the crate names
//! `crate::config::*` only.

mod run;
mod verbs;

pub use run::{Member, RunConfig};
pub use verbs::{
    AcquireConfig, DoctorConfig, ExtendConfig, ForgetConfig, HistoryConfig, LeaderConfig,
    ListConfig, PreemptConfig, ReleaseConfig, StatusConfig, TopConfig, WaitConfig, Whose, Window,
};

use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::cli::ConnArgs;
use crate::error::{Error, Result};
use crate::exit::Code;
use crate::keys::{DEFAULT_PREFIX, LockKeys};
use crate::redis::{DEFAULT_URL, RedisUrl, Tls, apply_tls, split_list};
use crate::report::pasteable;
use crate::timing::{self, Budget, BudgetError};
use nix::sys::signal::Signal;

/// How long to wait for a busy lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    For(Duration),
    Forever,
}

/// Where the locks live.
#[derive(Debug, Clone)]
pub struct Conn {
    pub urls: Vec<RedisUrl>,
    pub prefix: String,
    pub node_timeout: Option<Duration>,
    /// `--redis-url-file` when it holds a password and others may read it (a warning,
    /// as ssh gives for a key file others can read).
    pub exposed_file: Option<std::path::PathBuf>,
}

/// Where the host-local queue's files are (see `wait/local.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalDir {
    /// `--local-dir` / `REDLOCK_LOCAL_DIR`: must be usable, or the run is refused.
    Given(std::path::PathBuf),
    /// `$XDG_RUNTIME_DIR/redlock`, else `/tmp/redlock-<uid>`: used when it is this
    /// user's and private, skipped (waiting in Redis directly) otherwise.
    Default,
    /// `--no-local-queue`.
    Off,
}

/// The default ttl.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// The range of values a duration flag accepts (the README's configuration table and
/// `--help` say the same). Above a year nothing is useful, and Redis and the clock
/// arithmetic stay far from their limits; below the minimum the value cannot work.
#[derive(Debug, Clone, Copy)]
struct Range {
    flag: &'static str,
    min: Duration,
    max: Duration,
}

/// The longest value any duration flag takes.
const YEAR: Duration = Duration::from_secs(365 * 24 * 60 * 60);

const TTL: Range = Range {
    flag: "--ttl",
    min: MIN_TTL,
    max: YEAR,
};
const RENEW_EVERY: Range = Range {
    flag: "--renew-every",
    min: Duration::from_millis(1),
    max: YEAR,
};
const NODE_TIMEOUT: Range = Range {
    flag: "--node-timeout",
    min: Duration::from_millis(1),
    max: YEAR,
};
const KILL_AFTER: Range = Range {
    flag: "--kill-after",
    min: Duration::ZERO,
    max: YEAR,
};
const SINCE: Range = Range {
    flag: "--since",
    min: Duration::from_secs(60),
    max: YEAR,
};
const HOLD_MIN: Range = Range {
    flag: "--hold-min",
    min: Duration::ZERO,
    max: YEAR,
};
const MAX_HOLD: Range = Range {
    flag: "--max-hold",
    min: Duration::from_millis(1),
    max: YEAR,
};
const PREEMPT_WAIT: Range = Range {
    flag: "--wait",
    min: Duration::from_millis(1),
    max: YEAR,
};
const RETAIN: Range = Range {
    flag: "--retain",
    min: Duration::from_secs(1),
    max: YEAR,
};

/// How long the name's counter and history are kept: `--retain` or its default, at
/// least twice a `--once-per` period (so that a slot's record outlives the slot).
fn retain(raw: Option<&str>, once_per: Option<Duration>) -> Result<Duration> {
    let retain = bounded_opt(RETAIN, raw)?.unwrap_or(crate::lease::DEFAULT_RETAIN);
    Ok(retain.max(once_per.unwrap_or_default() * 2))
}

const ONCE_PER: Range = Range {
    flag: "--once-per",
    min: Duration::from_secs(1),
    max: YEAR,
};
const TIMEOUT: Range = Range {
    flag: "--timeout",
    min: Duration::ZERO,
    max: YEAR,
};
const WAIT: Range = Range {
    flag: "--wait",
    min: Duration::ZERO,
    max: YEAR,
};

/// Parses a duration given to `flag` ("30s", "1m30s", "250ms"); a bare number other
/// than 0 is refused because its unit would be a guess.
fn duration(flag: &str, raw: &str) -> Result<Duration> {
    humantime::parse_duration(raw.trim()).map_err(|e| {
        let raw_t = raw.trim();
        let hint = if raw_t.starts_with('-') {
            " (a duration cannot be negative)".to_string()
        } else if raw_t.chars().all(|c| c.is_ascii_digit()) {
            format!(" (add a unit: {UNITS})")
        } else if let humantime::DurationError::UnknownUnit { unit, .. } = &e
            && !unit.is_empty()
        {
            // humantime's own message lists its units (weeks, months, years among
            // them); the line lists ours, once.
            format!(" (unknown unit {unit:?}; units: {UNITS})")
        } else {
            format!(" ({e}; units: {UNITS})")
        };
        Error::usage(format!("{flag} {raw:?} is not a duration{hint}"))
    })
}

/// The units a duration takes, as every message and the README list them.
pub const UNITS: &str = "ms, s, m, h, d, e.g. 250ms, 30s, 5m, 1h30m";

/// A duration within `range`, when the flag was given.
fn bounded_opt(range: Range, raw: Option<&str>) -> Result<Option<Duration>> {
    raw.map(|raw| bounded(range, raw)).transpose()
}

/// A duration within `range`.
fn bounded(range: Range, raw: &str) -> Result<Duration> {
    let d = duration(range.flag, raw)?;
    let flag = range.flag;
    if d < range.min {
        return Err(Error::usage(format!(
            "{flag} {raw:?} is too short: it must be at least {}",
            pasteable(range.min)
        )));
    }
    if d > range.max {
        return Err(Error::usage(format!(
            "{flag} {raw:?} is too long: it must be at most 365 days"
        )));
    }
    Ok(d)
}

/// `--wait`: 0 tries once, `forever` (or `inf`, `infinite`) waits without end.
fn wait(raw: &str) -> Result<Wait> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "forever" | "inf" | "infinite" | "infinity" => Ok(Wait::Forever),
        _ => bounded(WAIT, raw).map(Wait::For),
    }
}

/// `--busy-exit-code`: 0–255.
fn busy_code(raw: Option<&str>) -> Result<u8> {
    match raw {
        None => Ok(Code::Busy.value()),
        Some(raw) => raw.trim().parse::<u8>().map_err(|_| {
            Error::usage(format!(
                "--busy-exit-code {raw:?} is not an exit status (0-255)"
            ))
        }),
    }
}

/// The most `--limit` accepts: a busy try of a semaphore looks at every slot.
pub const MAX_LIMIT: u32 = 100;

/// A whole number a flag counts with: `raw` within `range`, or the usage error that
/// names the flag and says what it counts (`what`: "a number of runs").
fn count(flag: &str, raw: &str, range: RangeInclusive<u32>, what: &str) -> Result<u32> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            Error::usage(format!(
                "{flag} {raw:?} is not {what} ({}-{})",
                range.start(),
                range.end()
            ))
        })
}

/// A signal by name (`TERM`, `SIGTERM`, `term`) or number, for `flag`.
pub fn signal(flag: &str, raw: &str) -> Result<Signal> {
    let trimmed = raw.trim();
    let parsed = match trimmed.parse::<i32>() {
        Ok(n) => Signal::try_from(n).ok(),
        Err(_) => {
            let upper = trimmed.to_ascii_uppercase();
            let name = if upper.starts_with("SIG") {
                upper
            } else {
                format!("SIG{upper}")
            };
            name.parse::<Signal>().ok()
        }
    };
    parsed.ok_or_else(|| {
        Error::usage(format!(
            "{flag} {raw:?} is not a signal; give a name such as TERM, INT, HUP, USR1 or a number"
        ))
    })
}

/// The ttl from `--ttl` or its default.
fn ttl(raw: Option<&str>) -> Result<Duration> {
    raw.map_or(Ok(DEFAULT_TTL), |raw| bounded(TTL, raw))
}

/// The shortest ttl accepted: below it, Redis's 1 ms expiry precision and the 2 ms
/// drift allowance eat the lease.
pub const MIN_TTL: Duration = Duration::from_millis(100);

impl Conn {
    /// URLs from `--redis`, else from `--redis-url-file`, else the default.
    pub fn from_args(args: &ConnArgs) -> Result<Conn> {
        let prefix = args.prefix.clone().unwrap_or_else(|| DEFAULT_PREFIX.into());
        crate::keys::check_prefix(&prefix)?;
        let mut urls = raw_urls(args)?
            .iter()
            .map(|r| RedisUrl::parse(r))
            .collect::<Result<Vec<_>>>()?;
        apply_tls(&mut urls, tls_options(args)?)?;
        for (i, url) in urls.iter().enumerate() {
            if urls[..i].contains(url) {
                return Err(Error::usage(format!(
                    "--redis {url} is given twice; Redlock needs independent servers"
                )));
            }
        }
        let node_timeout = bounded_opt(NODE_TIMEOUT, args.node_timeout.as_deref())?;
        Ok(Conn {
            exposed_file: exposed_url_file(args),
            urls,
            prefix,
            node_timeout,
        })
    }

    /// The keys of lock `name`. In a Redis Cluster, a name starting with `}` is refused:
    /// its hash tag would be empty and the lock's keys would land in different slots.
    pub fn keys(&self, name: &OsString) -> Result<LockKeys> {
        let keys = LockKeys::new(&self.prefix, name.as_bytes()).map_err(|e| {
            if name.is_empty() {
                Error::usage("the lock name is empty; give a non-empty name")
            } else {
                e
            }
        })?;
        if keys.has_empty_hash_tag() && self.urls.iter().any(RedisUrl::is_cluster) {
            return Err(Error::usage(format!(
                "lock name {:?} starts with '}}', which Redis Cluster cannot keep in one slot; choose a name that does not",
                keys.display_name()
            )));
        }
        Ok(keys)
    }

    /// The node timeout for a lease of `ttl`.
    pub fn timeout_for(&self, ttl: Duration) -> Duration {
        self.node_timeout
            .unwrap_or_else(|| timing::default_node_timeout(ttl, 1))
    }

    /// The node timeout of a holder that renews: [`Conn::timeout_for`], but by default
    /// a twentieth of the ttl where an attempt makes three requests (Sentinel).
    pub fn renewal_timeout_for(&self, ttl: Duration) -> Duration {
        self.node_timeout
            .unwrap_or_else(|| timing::default_node_timeout(ttl, self.requests_per_renewal()))
    }

    /// Requests one renewal attempt makes in turn on a node, each within the node
    /// timeout: through Sentinel the ask of a sentinel before the renewal and a
    /// replica's `WAIT` after it (see `redis::follow`); on a Cluster a replica's `WAIT`
    /// after it; on one server the renewal alone.
    pub fn requests_per_renewal(&self) -> u32 {
        let each = |u: &crate::redis::RedisUrl| match u.topology() {
            crate::redis::Topology::Sentinel(_) => 3,
            crate::redis::Topology::Cluster { .. } => 2,
            _ => 1,
        };
        self.urls.iter().map(each).max().unwrap_or(1)
    }
}

/// The URL texts: from `--redis` (or REDLOCK_REDIS_URL), else the url-file, else the
/// default.
fn raw_urls(args: &ConnArgs) -> Result<Vec<String>> {
    // An explicitly empty URL (`--redis "$UNSET_VAR"`) must not silently become the
    // local default: every host would then lock its own Redis.
    if args.redis.iter().any(|s| s.trim().is_empty()) {
        return Err(Error::usage(
            "--redis (or REDLOCK_REDIS_URL) is empty; give a URL such as redis://host:6379",
        ));
    }
    let raw: Vec<String> = args.redis.iter().flat_map(|s| split_list(s)).collect();
    if !raw.is_empty() {
        return Ok(raw);
    }
    let Some(path) = &args.redis_url_file else {
        return Ok(vec![DEFAULT_URL.to_string()]);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(format!(
            "--redis-url-file {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    let raw: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .flat_map(split_list)
        .collect();
    if raw.is_empty() {
        return Err(Error::usage(format!(
            "--redis-url-file {} holds no URL",
            path.display()
        )));
    }
    Ok(raw)
}

/// `--redis-url-file` when the URLs come from it, one of them has a password, and
/// others may read it (mode o+r).
fn exposed_url_file(args: &ConnArgs) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = args
        .redis_url_file
        .as_ref()
        .filter(|_| args.redis.is_empty())?;
    let others_read = std::fs::metadata(path).ok()?.permissions().mode() & 0o004 != 0;
    let text = std::fs::read_to_string(path).ok()?;
    let has_password = text
        .lines()
        .flat_map(split_list)
        .any(|raw| crate::redis::redact(&raw) != raw);
    (others_read && has_password).then(|| path.clone())
}

/// The `--tls-*` options, with the files read (usage errors name the flag).
fn tls_options(args: &ConnArgs) -> Result<Tls> {
    // The PEM block each file must hold, so that a swapped or empty file is a usage error
    // here rather than a baffling handshake failure later.
    let read = |flag: &str, path: &std::path::Path| {
        let pem = std::fs::read(path)
            .map_err(|e| Error::usage(format!("{flag} {}: cannot read it: {e}", path.display())))?;
        let (needle, what): (&[u8], _) = if flag == "--tls-key" {
            (b"PRIVATE KEY-----", "a PEM private key")
        } else {
            (b"-----BEGIN CERTIFICATE-----", "a PEM certificate")
        };
        if !pem.windows(needle.len()).any(|w| w == needle) {
            return Err(Error::usage(format!(
                "{flag} {}: holds no {what}",
                path.display()
            )));
        }
        Ok(pem)
    };
    let client = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some((read("--tls-cert", cert)?, read("--tls-key", key)?)),
        (None, None) => None,
        _ => {
            return Err(Error::usage(
                "--tls-cert and --tls-key go together (mutual TLS needs both)",
            ));
        }
    };
    Ok(Tls {
        ca: args
            .tls_ca
            .as_deref()
            .map(|p| read("--tls-ca", p))
            .transpose()?,
        client,
        insecure: args.tls_insecure_skip_verify,
    })
}

/// The budget's flags as the user gave them (`None`: not given, a default).
#[derive(Debug, Clone, Copy, Default)]
struct GivenBudget<'a> {
    ttl: Option<&'a str>,
    renew_every: Option<&'a str>,
    kill_after: Option<&'a str>,
}

/// A budget's refusal: each duration the user gave as given (`--ttl 90s`, not `1m
/// 30s`; `--ttl 1500ms`, not `1s`), each other one in one word that reads back the same
/// ([`crate::report::pasteable`]).
fn budget_error(b: &Budget, e: BudgetError, given: GivenBudget<'_>) -> Error {
    let said = |d: Duration, raw: Option<&str>| {
        raw.map_or_else(|| pasteable(d), |raw| crate::report::shown(raw.trim()))
    };
    let ttl = said(b.ttl, given.ttl);
    let renew = said(b.renew_every, given.renew_every);
    match e {
        BudgetError::RenewNotBelowTtl => Error::usage(format!(
            "--renew-every {renew} must be shorter than --ttl {ttl}"
        )),
        BudgetError::DoesNotFit { needed, available } => Error::usage(format!(
            "--ttl {ttl} is too short: a renewal every {renew} plus two --node-timeout {}{} ({}) must fit in {} (ttl minus drift, --kill-after {} and margin); raise --ttl or lower the others",
            pasteable(b.node_timeout),
            match b.requests {
                0 | 1 => String::new(),
                2 =>
                    " of 2 requests each (on a Cluster: the renewal, a replica's WAIT)".to_string(),
                n => format!(
                    " of {n} requests each (through Sentinel: a sentinel's answer, the renewal, a replica's WAIT)"
                ),
            },
            pasteable(needed),
            pasteable(available),
            said(b.kill_after, given.kill_after)
        )),
    }
}

#[cfg(test)]
mod tests;

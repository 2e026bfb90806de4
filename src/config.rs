//! Raw arguments to a checked configuration: the one conversion from what clap parsed
//! (strings, as typed) to what the wrapper and the verbs run with (durations, URLs, keys,
//! decided defaults). Every rule that spans flags lives here, and every mistake is a
//! usage error (exit 64) that names the flag. Nothing after this module sees a raw
//! argument: `run.rs` takes a [`RunConfig`], each verb its own `*Config`.

use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::cli::{
    AcquireArgs, ConnArgs, DoctorArgs, ExtendArgs, ForgetArgs, HistoryArgs, ListArgs, OnLost,
    ReleaseArgs, RunArgs, StatusArgs, WaitVerbArgs,
};
use crate::error::{Error, Result};
use crate::exit::Code;
use crate::keys::{DEFAULT_PREFIX, LockKeys};
use crate::policy::refused::Given;
use crate::policy::{Completion, Elect, Newest, Policy, Stop};
use crate::redis::{DEFAULT_URL, RedisUrl, Tls, apply_tls, split_list};
use crate::report::human;
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

/// A checked `redlock-run` configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub budget: Budget,
    pub wait: Wait,
    pub busy_code: u8,
    pub on_lost: OnLost,
    /// `--max-hold`: the longest the lock is kept, from the acquire.
    pub max_hold: Option<Duration>,
    /// `--events`: the file (or `-`) lifecycle events go to.
    pub events: Option<std::path::PathBuf>,
    /// `--metrics`: the Prometheus text file the run's outcome goes to.
    pub metrics: Option<std::path::PathBuf>,
    /// `--history`: how many runs the lock's history keeps (0: record nothing).
    pub history: u32,
    /// `--retain`: how long the name's fence counter and history outlive its last use.
    pub retain: Duration,
    /// `--limit`, `--fair`, `--once-per`, `--hold-min`: what the run asks for, decided
    /// once (see `policy`).
    pub policy: Policy,
    pub hide_args: bool,
    /// `--label`: recorded instead of the command line.
    pub label: Option<String>,
    /// Where the host-local queue is (`--local-dir`, `--no-local-queue`).
    pub local: LocalDir,
    /// `--announce`: recorded beside the holder.
    pub announce: Option<String>,
    /// `--ready-file`: present while the command runs under the lock.
    pub ready_file: Option<std::path::PathBuf>,
    pub command: Vec<OsString>,
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
            human(range.min)
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

/// A run's `--wait`: as given, else forever for a `--once-id` run (it waits for the
/// ID's run in progress), else 0.
fn run_wait(args: &RunArgs) -> Result<Wait> {
    match (args.waiting.wait.as_deref(), &args.once_id) {
        (Some(raw), _) => wait(raw),
        (None, Some(_)) => Ok(Wait::Forever),
        (None, None) if args.elect => Ok(Wait::Forever),
        (None, None) => Ok(Wait::For(Duration::ZERO)),
    }
}

/// The longest `--announce` value.
const MAX_ANNOUNCE: usize = 256;

/// `--announce`: printable text, recorded as given.
fn announce(raw: Option<&str>) -> Result<Option<String>> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.chars().count() > MAX_ANNOUNCE || raw.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "--announce {:?}: give up to {MAX_ANNOUNCE} printable characters, e.g. host:port",
            crate::error::one_line(raw)
                .chars()
                .take(40)
                .collect::<String>()
        )));
    }
    Ok(Some(raw.to_string()))
}

/// `--ready-file`: a file name in a directory that exists.
fn ready_file(file: Option<&std::path::Path>) -> Result<Option<std::path::PathBuf>> {
    file_in_a_dir(
        "--ready-file",
        file,
        "/run/SERVICE/leader",
        "create it (systemd: RuntimeDirectory=) or give another",
    )
}

/// `--splay D`: shorter than the `--once-per` period (a try must be able to come within
/// its slot); without `--once-per` the refusal table says so.
fn splay(raw: Option<&str>, once_per: Option<Duration>) -> Result<Option<Duration>> {
    let (Some(raw), Some(period)) = (raw, once_per) else {
        return Ok(None);
    };
    let d = duration("--splay", raw)?;
    if d >= period {
        return Err(Error::usage(format!(
            "--splay {} is not shorter than --once-per {}: a try waits up to D into its slot; give a D below the period, e.g. --splay {}",
            human(d),
            human(period),
            human(period / 2)
        )));
    }
    Ok(Some(d).filter(|d| !d.is_zero()))
}

/// The longest `--once-id` (it is part of a key name).
const MAX_ONCE_ID: usize = 200;

/// `--once-id`: a non-empty, printable ID.
fn once_id(raw: Option<&str>) -> Result<Option<String>> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.is_empty() || raw.len() > MAX_ONCE_ID || raw.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "--once-id {:?} is not an ID: give 1 to {MAX_ONCE_ID} printable characters, e.g. a release tag",
            crate::error::one_line(raw)
        )));
    }
    Ok(Some(raw.to_string()))
}

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

/// The largest order key: a Lua number (a double) counts exactly up to here.
pub const MAX_ORDER_KEY: u64 = (1 << 53) - 1;

/// `--order-key`: a whole number, 0 to [`MAX_ORDER_KEY`].
fn order_key(raw: Option<&str>) -> Result<Option<u64>> {
    raw.map(|raw| {
        raw.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= MAX_ORDER_KEY)
            .ok_or_else(|| {
                Error::usage(format!(
                    "--order-key {raw:?} is not a whole number from 0 to {MAX_ORDER_KEY} (a pipeline or run number, a commit time)"
                ))
            })
    })
    .transpose()
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

/// `--max-attempts`: 1 to 1000.
fn max_attempts(raw: Option<&str>) -> Result<Option<u32>> {
    raw.map(|raw| count("--max-attempts", raw, 1..=1000, "a number of runs"))
        .transpose()
}

/// `--elect-max-terms`: the terms after which an `--elect` run exits.
fn elect_max_terms(raw: Option<&str>) -> Result<Option<u32>> {
    raw.map(|raw| count("--elect-max-terms", raw, 1..=1_000_000, "a number of terms"))
        .transpose()
}

/// `--limit`: how many runs may hold the name at once (1 when not given).
fn limit(raw: Option<&str>) -> Result<u32> {
    raw.map_or(Ok(1), |raw| {
        count("--limit", raw, 1..=MAX_LIMIT, "a number of holders")
    })
}

/// The history size from `--history` or its default.
fn history_size(raw: Option<&str>) -> Result<u32> {
    raw.map_or(Ok(crate::history::DEFAULT_SIZE), |raw| {
        count(
            "--history",
            raw,
            0..=crate::history::MAX_SIZE,
            "a number of runs",
        )
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
            .unwrap_or_else(|| timing::default_node_timeout(ttl))
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

impl RunConfig {
    /// The kind of lock the run asked for (see `kinds`).
    pub fn kind(&self) -> crate::kinds::LockKind {
        crate::kinds::LockKind::of(self.policy.mode)
    }

    /// The run's configuration, in named steps: the command, the connection and its
    /// timings, the flags that shape the policy ([`Asked`]), the wait, the policy
    /// ([`run_policy`]), then the flags that stand alone. A usage error names the
    /// first wrong flag in that order.
    pub fn from_args(args: RunArgs) -> Result<RunConfig> {
        check_command(&args.command)?;
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        let budget = run_budget(&args, &conn)?;
        let asked = Asked::from_args(&args)?;
        let wait = run_wait(&args)?;
        let policy = run_policy(&args, &asked, conn.urls.len(), wait)?;
        Ok(RunConfig {
            conn,
            keys,
            budget,
            wait,
            busy_code: busy_code(args.waiting.busy_exit_code.as_deref())?,
            on_lost: args.on_lost,
            events: args.events.clone(),
            metrics: metrics_file(args.metrics.as_deref())?,
            retain: retain(args.retain.retain.as_deref(), asked.once_per)?,
            history: asked.history,
            policy,
            max_hold: bounded_opt(MAX_HOLD, args.max_hold.as_deref())?,
            hide_args: args.hide_args,
            label: args.label,
            local: local_dir(&args.local)?,
            announce: announce(args.announce.as_deref())?,
            ready_file: ready_file(args.ready_file.as_deref())?,
            command: args.command,
        })
    }
}

/// The values of the run's flags that shape its policy, each checked on its own (what
/// they allow together is [`Policy::from_flags`]'s).
struct Asked {
    hold_min: Option<Duration>,
    history: u32,
    once_per: Option<Duration>,
    max_attempts: Option<u32>,
    limit: u32,
}

impl Asked {
    fn from_args(args: &RunArgs) -> Result<Asked> {
        Ok(Asked {
            hold_min: bounded_opt(HOLD_MIN, args.hold_min.as_deref())?.filter(|d| !d.is_zero()),
            history: history_size(args.history.as_deref())?,
            once_per: bounded_opt(ONCE_PER, args.once_per.as_deref())?,
            max_attempts: max_attempts(args.max_attempts.as_deref())?,
            limit: limit(args.limit.as_deref())?,
        })
    }
}

/// Which flags the run gave, as the table of refused combinations reads them.
fn given(args: &RunArgs, asked: &Asked, nodes: usize, wait: Wait) -> Given {
    Given {
        fair: args.fair,
        limit: asked.limit,
        nodes,
        once_per: asked.once_per.is_some(),
        history: asked.history,
        if_vanished: args.if_vanished.is_some(),
        max_attempts: asked.max_attempts.is_some(),
        once_id: args.once_id.is_some(),
        supersede: args.supersede.is_some(),
        order_key: args.order_key.is_some(),
        may_wait: wait != Wait::For(Duration::ZERO),
        elect: args.elect,
        wait_given: args.waiting.wait.is_some(),
        hold_min: asked.hold_min.is_some(),
        on_lost_keep: args.on_lost == OnLost::Keep,
        splay: args.splay.is_some(),
        shared: args.shared,
    }
}

/// What the run asks for, decided once: completion (`--once-per`, `--once-id`,
/// `--hold-min`), newest wins, how it may be stopped, `--elect`; a combination the
/// table refuses is a usage error.
fn run_policy(args: &RunArgs, asked: &Asked, nodes: usize, wait: Wait) -> Result<Policy> {
    let completion = Completion {
        hold_min: asked.hold_min,
        once_per: asked.once_per,
        vanished: args.if_vanished.unwrap_or_default(),
        max_attempts: asked.max_attempts,
        may_wait: wait != Wait::For(Duration::ZERO),
        once_id: once_id(args.once_id.as_deref())?,
        splay: splay(args.splay.as_deref(), asked.once_per)?,
    };
    let newest = args
        .supersede
        .map(|supersede| {
            Ok::<_, Error>(Newest {
                supersede,
                order_key: order_key(args.order_key.as_deref())?,
            })
        })
        .transpose()?;
    let stop = Stop {
        uninterruptible: args.uninterruptible,
        signal: args
            .preempt_signal
            .as_deref()
            .map_or(Ok(Signal::SIGTERM), |raw| signal("--preempt-signal", raw))?,
    };
    let policy = Policy::from_flags(given(args, asked, nodes, wait), completion, newest, stop)?;
    let elect = args
        .elect
        .then(|| {
            Ok::<_, Error>(Elect {
                on_exit: args.on_exit.unwrap_or_default(),
                max_terms: elect_max_terms(args.elect_max_terms.as_deref())?,
            })
        })
        .transpose()?;
    Ok(policy.electing(elect))
}

/// `--metrics FILE`: a file name in a directory that exists.
fn metrics_file(file: Option<&std::path::Path>) -> Result<Option<std::path::PathBuf>> {
    file_in_a_dir(
        "--metrics",
        file,
        "/var/lib/node_exporter/textfile/redlock-JOB.prom",
        "create it (node_exporter's --collector.textfile.directory) or give another",
    )
}

/// A file flag's value: a file name (else "`flag` needs a file name, e.g. `example`")
/// in a directory that exists (else the line ends with `create`).
fn file_in_a_dir(
    flag: &str,
    file: Option<&std::path::Path>,
    example: &str,
    create: &str,
) -> Result<Option<std::path::PathBuf>> {
    let Some(file) = file else {
        return Ok(None);
    };
    if file.as_os_str().is_empty() || file.file_name().is_none() {
        return Err(Error::usage(format!(
            "{flag} needs a file name, e.g. {example}"
        )));
    }
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "{flag} {}: the directory {} does not exist; {create}",
            file.display(),
            dir.display()
        )));
    }
    Ok(Some(file.to_path_buf()))
}

/// `--local-dir`, `--no-local-queue`.
/// The host-local queue's setting: the command line first (`--no-local-queue` over
/// `--local-dir`), then the environment (`REDLOCK_NO_LOCAL_QUEUE` over
/// `REDLOCK_LOCAL_DIR`), then the default. A system-wide `REDLOCK_LOCAL_DIR` and a
/// `--no-local-queue` on one crontab line, or the other way round, is no conflict: the
/// line says what this run wants.
fn local_dir(args: &crate::cli::LocalArgs) -> Result<LocalDir> {
    local_dir_from(args, |name| std::env::var_os(name))
}

fn local_dir_from(
    args: &crate::cli::LocalArgs,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<LocalDir> {
    let given = |dir: &std::path::Path, from: &str| {
        if dir.as_os_str().is_empty() {
            Err(Error::usage(format!(
                "{from} is empty; give a directory, or --no-local-queue"
            )))
        } else {
            Ok(LocalDir::Given(dir.to_path_buf()))
        }
    };
    if args.no_local_queue {
        return Ok(LocalDir::Off);
    }
    if let Some(dir) = &args.local_dir {
        return given(dir, "--local-dir");
    }
    if let Some(raw) = env("REDLOCK_NO_LOCAL_QUEUE")
        && switch("REDLOCK_NO_LOCAL_QUEUE", &raw)?
    {
        return Ok(LocalDir::Off);
    }
    match env("REDLOCK_LOCAL_DIR") {
        Some(dir) => given(std::path::Path::new(&dir), "REDLOCK_LOCAL_DIR"),
        None => Ok(LocalDir::Default),
    }
}

/// An environment switch as such switches are written: 1/0, true/false, yes/no,
/// on/off (any case; empty is off).
fn switch(name: &str, raw: &std::ffi::OsStr) -> Result<bool> {
    match raw.to_string_lossy().trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        other => Err(Error::usage(format!(
            "{name}={other:?} is not a switch; use 1 or 0 (true/false, yes/no, on/off)"
        ))),
    }
}

/// The command after `--`: there, and not an empty string.
fn check_command(command: &[OsString]) -> Result<()> {
    match command.first() {
        None => Err(Error::usage(
            "no command given; put it after --, e.g. redlock-run --key job -- ./job.sh",
        )),
        Some(program) if program.is_empty() => {
            Err(Error::usage("the command after -- is an empty string"))
        }
        Some(_) => Ok(()),
    }
}

/// `--ttl`, `--renew-every`, `--kill-after` and the node timeout, checked together.
fn run_budget(args: &RunArgs, conn: &Conn) -> Result<Budget> {
    let ttl = ttl(args.ttl.as_deref())?;
    let renew_every = match &args.renew_every {
        Some(raw) => bounded(RENEW_EVERY, raw)?,
        None => timing::default_renew_every(ttl),
    };
    let kill_after = match &args.kill_after {
        Some(raw) => bounded(KILL_AFTER, raw)?,
        None => timing::default_kill_after(ttl),
    };
    let budget = Budget {
        ttl,
        renew_every,
        node_timeout: conn.timeout_for(ttl),
        kill_after,
    };
    budget.check().map_err(|e| budget_error(&budget, e))?;
    Ok(budget)
}

/// A checked `redlock status`.
#[derive(Debug, Clone)]
pub struct StatusConfig {
    pub conn: Conn,
    pub keys: Vec<LockKeys>,
    pub json: bool,
    /// The host-local queue whose waiters are counted.
    pub local: LocalDir,
}

impl StatusConfig {
    pub fn from_args(args: StatusArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = args
            .keys
            .iter()
            .map(|k| conn.keys(k))
            .collect::<Result<Vec<_>>>()?;
        Ok(StatusConfig {
            conn,
            keys,
            json: args.json,
            local: args.local_dir.map_or(LocalDir::Default, LocalDir::Given),
        })
    }
}

/// A checked `redlock history`.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub limit: usize,
    pub json: bool,
    /// `--timeline` (with `--since`, how far back): draw the runs.
    pub timeline: Option<Duration>,
    /// With `--timeline`, NAME as a glob over names (it has `*`, `?` or `[`): the SCAN
    /// pattern of their lock keys (their history keys are found by it).
    pub pattern: Option<Vec<u8>>,
}

impl HistoryConfig {
    pub fn from_args(args: HistoryArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        let max = crate::history::MAX_SIZE;
        let limit = match args.limit.as_deref() {
            None => max,
            Some(raw) => count("--limit", raw, 1..=max, "a number of runs")?,
        };
        let timeline = match (args.timeline, args.since.as_deref()) {
            (false, _) => None,
            (true, None) => Some(Duration::from_secs(24 * 3600)),
            (true, Some(raw)) => Some(bounded(SINCE, raw)?),
        };
        let globbed = args.key.as_bytes().iter().any(|b| b"*?[".contains(b));
        let pattern =
            (args.timeline && globbed).then(|| lock_matcher(&conn, Some(args.key.clone())));
        Ok(HistoryConfig {
            conn,
            keys,
            limit: limit as usize,
            json: args.json,
            timeline,
            pattern,
        })
    }
}

/// A checked `redlock list`.
#[derive(Debug, Clone)]
pub struct ListConfig {
    pub conn: Conn,
    /// The SCAN pattern of the lock keys whose names match the glob given.
    pub matcher: Vec<u8>,
    pub json: bool,
}

impl ListConfig {
    pub fn from_args(args: ListArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let matcher = lock_matcher(&conn, args.pattern);
        Ok(ListConfig {
            conn,
            matcher,
            json: args.json,
        })
    }
}

/// The SCAN pattern of the lock keys whose names match `pattern` (default `*`).
fn lock_matcher(conn: &Conn, pattern: Option<OsString>) -> Vec<u8> {
    let pattern = pattern.unwrap_or_else(|| OsString::from("*"));
    let mut matcher = crate::keys::glob_escape(conn.prefix.as_bytes());
    matcher.push(b'{');
    matcher.extend_from_slice(pattern.as_bytes());
    matcher.push(b'}');
    matcher
}

/// A checked `redlock top`.
#[derive(Debug, Clone)]
pub struct TopConfig {
    pub conn: Conn,
    /// The SCAN pattern of the lock keys shown.
    pub matcher: Vec<u8>,
    /// `-n`: how often the view is refreshed.
    pub every: Duration,
    /// `--once`: one frame as text.
    pub once: bool,
}

const REFRESH: Range = Range {
    flag: "-n",
    min: Duration::from_millis(100),
    max: Duration::from_secs(3600),
};

impl TopConfig {
    pub fn from_args(args: crate::cli::TopArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let every = match args.every.as_deref() {
            None => Duration::from_secs(1),
            Some(raw) => bounded(REFRESH, raw)?,
        };
        Ok(TopConfig {
            matcher: lock_matcher(&conn, args.pattern),
            conn,
            every,
            once: args.once,
        })
    }
}

/// Whose lock `redlock release` may remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    /// Only this token's.
    Token(String),
    /// Whoever holds it (`--force`).
    Anyone,
    /// A holder on this host whose process is gone (`--if-dead`).
    Dead,
}

/// A checked `redlock release`.
#[derive(Debug, Clone)]
pub struct ReleaseConfig {
    pub conn: Conn,
    /// The name's keys (a semaphore's slot 1; `slot` picks another).
    pub keys: LockKeys,
    pub slot: Option<u32>,
    pub whose: Whose,
    pub json: bool,
}

impl ReleaseConfig {
    pub fn from_args(args: ReleaseArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let slot = args
            .slot
            .as_deref()
            .map(|raw| count("--slot", raw, 1..=MAX_LIMIT, "a semaphore slot"))
            .transpose()?;
        let keys = conn.keys(&args.key)?;
        let whose = match (args.token, args.force, args.if_dead) {
            (Some(token), _, _) => Whose::Token(token),
            (None, true, _) => Whose::Anyone,
            (None, false, true) => Whose::Dead,
            (None, false, false) => {
                return Err(Error::usage(format!(
                    "refusing to release {} without --token TOKEN (that holder only), --if-dead (a holder on this host whose process is gone) or --force (whoever holds it)",
                    keys.display_name()
                )));
            }
        };
        Ok(ReleaseConfig {
            conn,
            keys,
            slot,
            whose,
            json: args.json,
        })
    }
}

/// A checked `redlock acquire`.
#[derive(Debug, Clone)]
pub struct AcquireConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    /// `--shared`: a share of the name, not the name.
    pub shared: bool,
    pub ttl: Duration,
    pub retain: Duration,
    pub wait: Wait,
    pub busy_code: u8,
    /// `--holder-pid`: the process the lock is recorded as; `None`: found at acquire.
    pub holder_pid: Option<u32>,
    pub json: bool,
    pub quiet: bool,
}

impl AcquireConfig {
    pub fn from_args(args: AcquireArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        let given = Given {
            shared: args.shared,
            nodes: conn.urls.len(),
            limit: 1,
            ..Given::default()
        };
        if let Some(line) = crate::policy::refused::refusal(&given) {
            return Err(Error::usage(line));
        }
        Ok(AcquireConfig {
            shared: args.shared,
            ttl: ttl(args.ttl.as_deref())?,
            retain: retain(args.retain.retain.as_deref(), None)?,
            wait: wait(args.waiting.wait.as_deref().unwrap_or("0"))?,
            busy_code: busy_code(args.waiting.busy_exit_code.as_deref())?,
            holder_pid: args.holder_pid.as_deref().map(holder_pid).transpose()?,
            conn,
            keys,
            json: args.json,
            quiet: args.quiet,
        })
    }
}

/// Checks `--holder-pid`: a running process's id.
fn holder_pid(raw: &str) -> Result<u32> {
    let pid: u32 = raw
        .trim()
        .parse()
        .ok()
        .filter(|&p| p > 0 && p <= i32::MAX as u32)
        .ok_or_else(|| Error::usage(format!("--holder-pid {raw:?} is not a process id")))?;
    if crate::holder::process_start(pid).is_none() {
        return Err(Error::usage(format!(
            "--holder-pid {pid}: no such process here; give the pid of the process the lock belongs to (e.g. $$)"
        )));
    }
    Ok(pid)
}

/// A checked `redlock wait`.
#[derive(Debug, Clone)]
pub struct WaitConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub timeout: Wait,
    pub quiet: bool,
}

impl WaitConfig {
    pub fn from_args(args: WaitVerbArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        let timeout = match args.timeout.as_deref() {
            None => Wait::Forever,
            Some(raw) => match wait(raw)? {
                Wait::For(_) => Wait::For(bounded(TIMEOUT, raw)?),
                forever => forever,
            },
        };
        Ok(WaitConfig {
            conn,
            keys,
            timeout,
            quiet: args.quiet,
        })
    }
}

/// A checked `redlock forget`.
#[derive(Debug, Clone)]
pub struct ForgetConfig {
    pub conn: Conn,
    pub keys: Vec<LockKeys>,
}

impl ForgetConfig {
    pub fn from_args(args: ForgetArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = args
            .keys
            .iter()
            .map(|k| conn.keys(k))
            .collect::<Result<_>>()?;
        Ok(ForgetConfig { conn, keys })
    }
}

/// A checked `redlock preempt`.
#[derive(Debug, Clone)]
pub struct PreemptConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    /// `--signal`: what the command gets (else the holder's `--preempt-signal`).
    pub signal: Option<Signal>,
    /// `--wait`: until the holder has released, at most this long.
    pub wait: Option<Duration>,
    pub json: bool,
}

/// A checked `redlock leader`.
#[derive(Debug, Clone)]
pub struct LeaderConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub watch: bool,
    pub is_me: bool,
    pub json: bool,
}

impl LeaderConfig {
    pub fn from_args(args: crate::cli::LeaderArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        Ok(LeaderConfig {
            conn,
            keys,
            watch: args.watch,
            is_me: args.is_me,
            json: args.json,
        })
    }
}

impl PreemptConfig {
    pub fn from_args(args: crate::cli::PreemptArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        Ok(PreemptConfig {
            signal: args
                .signal
                .as_deref()
                .map(|raw| signal("--signal", raw))
                .transpose()?,
            wait: bounded_opt(PREEMPT_WAIT, args.wait.as_deref())?,
            conn,
            keys,
            json: args.json,
        })
    }
}

/// A checked `redlock extend`.
#[derive(Debug, Clone)]
pub struct ExtendConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub token: String,
    pub ttl: Duration,
    pub json: bool,
}

impl ExtendConfig {
    pub fn from_args(args: ExtendArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let keys = conn.keys(&args.key)?;
        Ok(ExtendConfig {
            ttl: ttl(args.ttl.as_deref())?,
            conn,
            keys,
            token: args.token,
            json: args.json,
        })
    }
}

/// A checked `redlock doctor`.
#[derive(Debug, Clone)]
pub struct DoctorConfig {
    pub conn: Conn,
    /// The keys of the lock named by `--key` (or `doctor`); in a Cluster a name
    /// starting with `}` is not refused here but reported.
    pub keys: LockKeys,
    /// The lease parameters of a run with this ttl and the defaults.
    pub budget: Budget,
    pub ttl_given: bool,
    pub json: bool,
}

/// The lock name `redlock doctor` checks without `--key`.
pub const DOCTOR_NAME: &str = "doctor";

impl DoctorConfig {
    pub fn from_args(args: DoctorArgs) -> Result<Self> {
        let conn = Conn::from_args(&args.conn)?;
        let name = args.key.unwrap_or_else(|| OsString::from(DOCTOR_NAME));
        if name.is_empty() {
            return Err(Error::usage(
                "the lock name is empty; give --key a non-empty name",
            ));
        }
        let keys = LockKeys::new(&conn.prefix, name.as_bytes())?;
        let ttl = ttl(args.ttl.as_deref())?;
        let budget = Budget {
            ttl,
            renew_every: timing::default_renew_every(ttl),
            node_timeout: conn.timeout_for(ttl),
            kill_after: timing::default_kill_after(ttl),
        };
        budget.check().map_err(|e| budget_error(&budget, e))?;
        Ok(DoctorConfig {
            conn,
            keys,
            budget,
            ttl_given: args.ttl.is_some(),
            json: args.json,
        })
    }
}

fn budget_error(b: &Budget, e: BudgetError) -> Error {
    let h = human;
    match e {
        BudgetError::RenewNotBelowTtl => Error::usage(format!(
            "--renew-every {} must be shorter than --ttl {}",
            h(b.renew_every),
            h(b.ttl)
        )),
        BudgetError::DoesNotFit { needed, available } => Error::usage(format!(
            "--ttl {} is too short: a renewal every {} plus two --node-timeout {} ({}) must fit in {} (ttl minus drift, --kill-after {} and margin); raise --ttl or lower the others",
            h(b.ttl),
            h(b.renew_every),
            h(b.node_timeout),
            h(needed),
            h(available),
            h(b.kill_after)
        )),
    }
}

#[cfg(test)]
mod tests;

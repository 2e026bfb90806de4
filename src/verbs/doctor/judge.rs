//! Judging: pure functions from what was measured on a node to findings, each with a
//! severity, one line of what and why, and what to do. No Redis, no clock: the facts
//! are gathered in `doctor.rs` and every rule here is unit-tested on made-up facts.
//!
//! The rules and why (see docs/operations/doctor.md):
//! - eviction: `allkeys-*` can evict a held lock's key (error); lock keys carry a ttl,
//!   so `volatile-*` can evict them too once memory reaches `maxmemory` (warning);
//! - role: a replica refuses writes (READONLY); a cluster node given as a plain URL
//!   answers MOVED for most keys (errors);
//! - persistence: without RDB or AOF a restarted server comes back empty and another
//!   run can take a lock whose holder still runs until its next renewal (warning);
//! - ACL: a command the user lacks breaks the verbs that send it (error when the
//!   wrapper needs it, warning otherwise);
//! - clock: above 1 s of offset, holder times (`since`) read from other hosts are off
//!   (warning); the lease itself never compares host clocks;
//! - latency: against the node timeout and the renewal interval of the ttl given.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use super::needs::{self, Need};
use crate::timing::{self, Budget};

/// How bad a finding is; the worst one decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding. `node` is the redacted URL (plus the server's address inside a
/// cluster), or `None` for findings about the whole setup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    pub node: Option<String>,
    pub message: String,
    pub fix: Option<String>,
}

impl Finding {
    fn new(check: &'static str, severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            check,
            severity,
            node: None,
            message: message.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// What a probe gave: the answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<T> {
    Got(T),
    /// The ACL forbids the command named.
    NoPermission(&'static str),
    /// Any other failure, as one line.
    Failed(String),
}

/// The fields of `INFO` the checks read (one server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub fields: HashMap<String, String>,
}

impl Info {
    /// Parses `INFO` text: `name:value` lines, `#` section headers skipped.
    pub fn parse(text: &str) -> Info {
        let fields = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Info { fields }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    fn number(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(|v| v.parse().ok())
    }

    /// `redis_version` as (major, minor, patch).
    pub fn version(&self) -> Option<(u32, u32, u32)> {
        parse_version(self.get("redis_version")?)
    }
}

/// `7.0.15` as (7, 0, 15); missing parts are 0.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// What the URL said the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    Single,
    Cluster,
    Sentinel,
}

/// One server's configuration facts (for a cluster, one per server of the reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub info: Probe<Info>,
    /// `CONFIG GET save`.
    pub save: Probe<String>,
    /// `CONFIG GET appendfsync`.
    pub appendfsync: Probe<String>,
}

/// An ACL verdict on one command as the tool sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub need: Need,
    /// The server's reason (ACL DRYRUN says whether the command or the key is refused).
    pub reason: Option<String>,
    /// The key as it would be sent, for the message.
    pub key: Option<String>,
}

/// How the ACL check went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acl {
    /// Checked with `how` (`ACL DRYRUN` or a script's `redis.acl_check_cmd`).
    Checked {
        how: &'static str,
        user: Option<String>,
        denied: Vec<Denied>,
    },
    /// Could not be checked, and why.
    Unchecked(String),
}

/// A clock sample: the server's `TIME` against the host's wall clock at the middle of
/// the round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Server minus host, in milliseconds.
    pub offset_ms: i64,
    pub rtt: Duration,
}

/// Everything measured on one node (one `--redis` URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The URL, redacted.
    pub node: String,
    pub given: Given,
    /// Per server: the address inside a cluster (empty for one server) and its facts.
    pub servers: Vec<(String, Server)>,
    pub acl: Acl,
    pub clock: Probe<Clock>,
    /// Round trips of the latency probe.
    pub rtts: Probe<Vec<Duration>>,
    /// Hash slots of the lock's keys (Cluster only): lock, meta, waiters, wake, fence,
    /// history.
    pub slots: Option<Vec<u16>>,
    /// The lock name, for messages.
    pub lock_name: String,
    /// How many lock names under the prefix keep state between uses (a fence counter).
    pub names: Probe<usize>,
    /// The prefix, for messages.
    pub prefix: String,
}

/// The timing parameters the latency is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub budget: Budget,
    /// Whether `--ttl` was given (the message says "with --ttl 30s" or "the default").
    pub ttl_given: bool,
}

/// Every finding for one node.
pub fn node(facts: &Facts, timing: &Timing) -> Vec<Finding> {
    let mut out = Vec::new();
    let many = facts.servers.len() > 1;
    for (address, server) in &facts.servers {
        let label = if address.is_empty() {
            facts.node.clone()
        } else {
            format!("{} ({address})", facts.node)
        };
        let mut found = Vec::new();
        if let Some(blind) = unread(&server.info) {
            found.push(blind);
        } else {
            found.extend(version(&server.info));
            found.extend(role(facts.given, &server.info, many));
            found.extend(eviction(&server.info));
            found.extend(persistence(server));
        }
        for f in &mut found {
            f.node = Some(label.clone());
        }
        out.extend(found);
    }
    let mut rest = Vec::new();
    rest.extend(slots(facts));
    rest.push(acl(facts));
    rest.push(clock(&facts.clock));
    rest.push(latency(&facts.rtts, timing));
    rest.push(names(&facts.names, &facts.prefix));
    for f in &mut rest {
        f.node = Some(facts.node.clone());
    }
    out.extend(rest);
    out
}

/// One finding for the four checks INFO feeds when INFO could not be read.
fn unread(info: &Probe<Info>) -> Option<Finding> {
    let why = match info {
        Probe::Got(_) => return None,
        Probe::NoPermission(cmd) => no_permission(cmd),
        Probe::Failed(why) => why.clone(),
    };
    Some(
        Finding::new(
            "server",
            Severity::Info,
            format!("could not check version, role, eviction and persistence ({why})"),
        )
        .fix("run doctor with a user allowed INFO and CONFIG GET (e.g. an admin's URL), or grant +info +config|get"),
    )
}

fn could_not(check: &'static str, probe_failed: &str) -> Finding {
    Finding::new(
        check,
        Severity::Info,
        format!("could not check ({probe_failed})"),
    )
}

fn no_permission(command: &str) -> String {
    format!("no permission for {command}")
}

/// How many lock names keep state between uses (their fence counter and run history,
/// kept `--retain` after the last use): memory that one-off names (a lock per CI
/// branch) hold until then.
pub fn names(probe: &Probe<usize>, prefix: &str) -> Finding {
    let count = match probe {
        Probe::Got(count) => *count,
        Probe::NoPermission(cmd) => return could_not("names", &no_permission(cmd)),
        Probe::Failed(why) => return could_not("names", why),
    };
    Finding::new(
        "names",
        Severity::Ok,
        format!(
            "{count} lock name{} under {prefix:?} keep a fence counter and a run history (about 0.5 KB a name, 5 KB with 20 runs), each until --retain after the name's last use",
            if count == 1 { "" } else { "s" }
        ),
    )
    .fix("for one-off names (a lock per CI branch), a shorter --retain (REDLOCK_RETAIN=1d) or redlock forget NAME")
}

/// The Redis version and the features the tool relies on.
pub fn version(info: &Probe<Info>) -> Option<Finding> {
    let info = match info {
        Probe::Got(info) => info,
        Probe::NoPermission(cmd) => return Some(could_not("version", &no_permission(cmd))),
        Probe::Failed(why) => return Some(could_not("version", why)),
    };
    let Some(v) = info.version() else {
        return Some(could_not("version", "INFO has no redis_version"));
    };
    let shown = format!("{}.{}.{}", v.0, v.1, v.2);
    let too_old = |what: &str, need: &str| {
        Finding::new(
            "version",
            Severity::Error,
            format!("Redis {shown} is too old: {what} needs Redis {need}"),
        )
        .fix(format!("upgrade the server to Redis {need} or later"))
    };
    Some(if v < (2, 6, 12) {
        too_old("SET NX PX (the lock itself) and scripts", "2.6.12")
    } else if v < (5, 0, 0) {
        too_old(
            "scripts that write after reading the clock (effects replication)",
            "5",
        )
    } else if v < (6, 0, 0) {
        too_old(
            "BLPOP with a fractional timeout (waiting) and ACL users",
            "6",
        )
    } else {
        Finding::new(
            "version",
            Severity::Ok,
            format!(
                "Redis {shown} has what redlock uses (EVALSHA scripts, SET NX PX, PEXPIRE, BLPOP with fractional timeouts)"
            ),
        )
    })
}

/// Replica or master; the topology the URL promised against the server's.
pub fn role(given: Given, info: &Probe<Info>, in_cluster: bool) -> Vec<Finding> {
    let info = match info {
        Probe::Got(info) => info,
        Probe::NoPermission(cmd) => return vec![could_not("role", &no_permission(cmd))],
        Probe::Failed(why) => return vec![could_not("role", why)],
    };
    let mut out = topology(given, info);
    out.push(replication(info, in_cluster));
    out
}

/// A Cluster node behind a plain URL, or the reverse.
fn topology(given: Given, info: &Info) -> Vec<Finding> {
    let mut out = Vec::new();
    let cluster_enabled = info.get("cluster_enabled") == Some("1");
    if given == Given::Single && cluster_enabled {
        out.push(
            Finding::new(
                "topology",
                Severity::Error,
                "the server is a Redis Cluster node but the URL is a plain redis:// URL: most lock keys would answer MOVED",
            )
            .fix("use redis+cluster://host:port[,host:port...]"),
        );
    }
    if given == Given::Cluster && !cluster_enabled && info.get("cluster_enabled").is_some() {
        out.push(
            Finding::new(
                "topology",
                Severity::Error,
                "the URL says Redis Cluster but the server has cluster support disabled",
            )
            .fix("use redis://host:port for a single server"),
        );
    }
    out
}

/// Master or replica, and what a failover can cost.
fn replication(info: &Info, in_cluster: bool) -> Finding {
    match info.get("role") {
        Some("slave") | Some("replica") if !in_cluster => {
            let master = match (info.get("master_host"), info.get("master_port")) {
                (Some(h), Some(p)) => format!(" of {h}:{p}"),
                _ => String::new(),
            };
            Finding::new(
                "role",
                Severity::Error,
                format!(
                    "the server is a read-only replica{master}: every acquire and renewal would fail with READONLY"
                ),
            )
            .fix("point --redis at the master (or use redis+sentinel:// to find it)")
        }
        Some("slave") | Some("replica") => Finding::new(
            "role",
            Severity::Ok,
            "a cluster replica (the client sends lock commands to the masters)",
        ),
        Some("master") => match info.number("connected_slaves").unwrap_or(0) {
            0 => Finding::new("role", Severity::Ok, "master"),
            replicas => Finding::new(
                "role",
                Severity::Info,
                format!(
                    "master with {replicas} replica(s): replication is asynchronous, so a failover to a replica that had not yet received a lock loses it"
                ),
            )
            .fix("for strict exclusion use several independent masters (Redlock: --redis repeated)"),
        },
        Some(other) => Finding::new(
            "role",
            Severity::Warning,
            format!("unexpected role {other:?}"),
        ),
        None => could_not("role", "INFO has no role"),
    }
}

/// Whether memory pressure can evict a lock key.
pub fn eviction(info: &Probe<Info>) -> Option<Finding> {
    let info = match info {
        Probe::Got(info) => info,
        Probe::NoPermission(cmd) => return Some(could_not("eviction", &no_permission(cmd))),
        Probe::Failed(why) => return Some(could_not("eviction", why)),
    };
    let policy = info.get("maxmemory_policy")?;
    let max = info.number("maxmemory").unwrap_or(0);
    let used = info.number("used_memory").unwrap_or(0);
    let fill = if max > 0 {
        format!(" (used {} of maxmemory {})", mb(used), mb(max))
    } else {
        " (no maxmemory set)".to_string()
    };
    let near = max > 0 && used.saturating_mul(10) >= max.saturating_mul(9);
    let noeviction = "CONFIG SET maxmemory-policy noeviction (and keep it in redis.conf)";
    Some(if policy.starts_with("allkeys-") {
        Finding::new(
            "eviction",
            Severity::Error,
            format!(
                "maxmemory-policy is {policy}{fill}: under memory pressure Redis may evict a held lock's key, and another run takes the lock while the holder still runs"
            ),
        )
        .fix(noeviction)
    } else if policy.starts_with("volatile-") && near {
        Finding::new(
            "eviction",
            Severity::Warning,
            format!(
                "maxmemory-policy is {policy}{fill}: memory is near the limit and lock keys carry a ttl, so they can be evicted while held"
            ),
        )
        .fix(format!("{noeviction}, or raise maxmemory"))
    } else if policy.starts_with("volatile-") {
        Finding::new(
            "eviction",
            Severity::Warning,
            format!(
                "maxmemory-policy is {policy}{fill}: every key redlock writes carries a ttl, so a held lock's key becomes evictable once memory reaches maxmemory"
            ),
        )
        .fix(noeviction)
    } else if near {
        Finding::new(
            "eviction",
            Severity::Warning,
            format!(
                "maxmemory-policy is {policy}{fill}: nothing is evicted, but near the limit acquires fail with OOM"
            ),
        )
        .fix("raise maxmemory or free memory")
    } else {
        Finding::new(
            "eviction",
            Severity::Ok,
            format!("maxmemory-policy is {policy}{fill}: lock keys are never evicted"),
        )
    })
}

fn mb(bytes: u64) -> String {
    format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
}

/// Whether a restart keeps the locks.
pub fn persistence(server: &Server) -> Option<Finding> {
    let info = match &server.info {
        Probe::Got(info) => info,
        Probe::NoPermission(cmd) => return Some(could_not("persistence", &no_permission(cmd))),
        Probe::Failed(why) => return Some(could_not("persistence", why)),
    };
    let aof = info.get("aof_enabled").map(|v| v == "1");
    if aof == Some(true) {
        return Some(match &server.appendfsync {
            Probe::Got(policy) if policy == "always" => Finding::new(
                "persistence",
                Severity::Ok,
                "AOF with appendfsync always: a restart keeps every lock",
            ),
            Probe::Got(policy) => Finding::new(
                "persistence",
                Severity::Info,
                format!(
                    "AOF with appendfsync {policy}: a clean restart keeps the locks; a crash can forget those taken in the last second"
                ),
            )
            .fix("appendfsync always, or keep a crashed server down for longer than the longest ttl"),
            _ => Finding::new(
                "persistence",
                Severity::Ok,
                "AOF is on: a restart keeps the locks",
            ),
        });
    }
    let save = match &server.save {
        Probe::Got(save) => save.trim().to_string(),
        Probe::NoPermission(cmd) => {
            return Some(could_not("persistence", &no_permission(cmd)).fix(
                "run doctor as a user allowed CONFIG GET (e.g. --redis with an admin user) to check RDB snapshots",
            ));
        }
        Probe::Failed(why) => return Some(could_not("persistence", why)),
    };
    Some(if save.is_empty() {
        Finding::new(
            "persistence",
            Severity::Warning,
            "persistence is off (no RDB save points, appendonly no): a restarted server comes back empty, and another run can take a lock while its holder still runs, until the holder's next renewal finds the key gone",
        )
        .fix("CONFIG SET appendonly yes (and in redis.conf), or keep a restarted server down for longer than the longest ttl")
    } else {
        Finding::new(
            "persistence",
            Severity::Info,
            format!(
                "RDB snapshots only (save {save}): a clean restart keeps the locks; a crash forgets those taken since the last snapshot"
            ),
        )
        .fix("CONFIG SET appendonly yes for locks that survive a crash")
    })
}

/// The hash slots of the lock's keys in a cluster.
pub fn slots(facts: &Facts) -> Option<Finding> {
    let slots = facts.slots.as_ref()?;
    let name = &facts.lock_name;
    let first = slots.first().copied().unwrap_or(0);
    Some(if slots.iter().all(|s| *s == first) {
        Finding::new(
            "slot",
            Severity::Ok,
            format!(
                "the 6 keys of lock {name:?} (lock, meta, waiters, wake, fence, history) share hash slot {first}"
            ),
        )
    } else {
        Finding::new(
            "slot",
            Severity::Error,
            format!(
                "the keys of lock {name:?} hash to different slots ({slots:?}): its name starts with '}}', so the hash tag is empty and the scripts would fail with CROSSSLOT"
            ),
        )
        .fix("choose a lock name that does not start with '}'")
    })
}

/// The ACL verdicts, one finding for all of them.
pub fn acl(facts: &Facts) -> Finding {
    let (how, user, denied) = match &facts.acl {
        Acl::Checked { how, user, denied } => (how, user, denied),
        Acl::Unchecked(why) => {
            return Finding::new("acl", Severity::Info, format!("could not check ({why})"));
        }
    };
    let who = user
        .as_deref()
        .map_or(String::new(), |u| format!("user {u:?}: "));
    if denied.is_empty() {
        return Finding::new(
            "acl",
            Severity::Ok,
            format!("{who}every command redlock sends is allowed (checked with {how})"),
        );
    }
    let mut wrapper = false;
    let mut parts = Vec::new();
    let mut commands: Vec<String> = Vec::new();
    // One part per command: its keys and reasons folded together.
    let mut seen: Vec<&str> = Vec::new();
    for d in denied {
        if seen.contains(&d.need.command) {
            continue;
        }
        seen.push(d.need.command);
        let (part, breaks_wrapper) = denied_command(d.need.command, denied, facts.given);
        wrapper |= breaks_wrapper;
        commands.push(d.need.command.to_ascii_uppercase().replace('|', " "));
        parts.push(part);
    }
    let severity = if wrapper {
        Severity::Error
    } else {
        Severity::Warning
    };
    Finding::new(
        "acl",
        severity,
        format!("{who}{} (checked with {how})", parts.join("; ")),
    )
    .fix(format!(
        "grant the user {} on the prefix's keys (see docs/reference/configuration.md, the least-privilege ACL)",
        commands
            .iter()
            .map(|c| format!("+{}", c.to_ascii_lowercase().replace(' ', "|")))
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// What the denial of `command` (on every key it was denied on) breaks, in words, and
/// whether the wrapper is among it.
fn denied_command(command: &str, denied: &[Denied], given: Given) -> (String, bool) {
    let (cluster, sentinel) = (given == Given::Cluster, given == Given::Sentinel);
    let same: Vec<&Denied> = denied
        .iter()
        .filter(|o| o.need.command == command)
        .collect();
    let mut wrapper = false;
    let mut uses: Vec<&str> = Vec::new();
    for o in &same {
        for u in needs::broken_by(o.need, cluster, sentinel) {
            wrapper |= u.wrapper;
            if !uses.contains(&u.name) {
                uses.push(u.name);
            }
        }
    }
    let keys: Vec<&str> = same.iter().filter_map(|o| o.key.as_deref()).collect();
    let on = if keys.is_empty() {
        String::new()
    } else {
        format!(" on {}", keys.join(", "))
    };
    let why = same
        .iter()
        .find_map(|o| o.reason.as_deref())
        .map_or(String::new(), |r| format!(" [{r}]"));
    let name = command.to_ascii_uppercase().replace('|', " ");
    (
        format!("{name}{on} denied{why}, breaks {}", uses.join(", ")),
        wrapper,
    )
}

/// The offset of the host's clock from the server's `TIME`.
pub fn clock(probe: &Probe<Clock>) -> Finding {
    let sample = match probe {
        Probe::Got(s) => s,
        Probe::NoPermission(cmd) => return could_not("clock", &no_permission(cmd)),
        Probe::Failed(why) => return could_not("clock", why),
    };
    let off = sample.offset_ms;
    let within = ms((sample.rtt.as_millis() as u64 / 2).max(1));
    let shown = match off {
        0 => format!("host clock agrees with the server's TIME (±{within})"),
        _ => format!(
            "host clock is {} {} the server's TIME (±{within})",
            ms(off.unsigned_abs()),
            if off > 0 { "behind" } else { "ahead of" },
        ),
    };
    if off.unsigned_abs() > 1000 {
        Finding::new(
            "clock",
            Severity::Warning,
            format!(
                "{shown}: leases do not depend on it (they run on each host's monotonic clock and Redis expiry), and --once-per slots come from the server's TIME, but a holder's \"since\" shown by status on other hosts is off by as much"
            ),
        )
        .fix("run NTP (chrony, systemd-timesyncd) on this host and the Redis host, slewing rather than stepping")
    } else {
        Finding::new("clock", Severity::Ok, shown)
    }
}

fn ms(millis: u64) -> String {
    if millis >= 1000 {
        format!("{:.1}s", millis as f64 / 1000.0)
    } else {
        format!("{millis}ms")
    }
}

/// The p-th percentile (0..=100) of sorted samples (nearest rank).
pub fn percentile(sorted: &[Duration], p: u32) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

/// A duration with sub-millisecond precision for latencies.
pub fn precise(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{:.2}ms", d.as_secs_f64() * 1000.0)
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        crate::report::human(d)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The slack of a budget: what is left of `ttl − drift − kill_after − margin` after
/// one renewal interval and two attempts (see `timing::Budget::check`).
pub fn slack(b: &Budget) -> Duration {
    let available = b
        .ttl
        .saturating_sub(timing::drift(b.ttl) + b.kill_after + timing::margin(b.ttl));
    available.saturating_sub(b.renew_every + b.attempt() * 2)
}

/// Round-trip latency against the node timeout and the renewal interval.
pub fn latency(probe: &Probe<Vec<Duration>>, t: &Timing) -> Finding {
    let samples = match probe {
        Probe::Got(s) if !s.is_empty() => s,
        Probe::Got(_) => return could_not("latency", "no sample"),
        Probe::NoPermission(cmd) => return could_not("latency", &no_permission(cmd)),
        Probe::Failed(why) => return could_not("latency", why),
    };
    let mut sorted = samples.clone();
    sorted.sort();
    let (p50, p99) = (percentile(&sorted, 50), percentile(&sorted, 99));
    let b = &t.budget;
    let with = if t.ttl_given {
        format!("with --ttl {}", precise(b.ttl))
    } else {
        format!("with the default ttl {}", precise(b.ttl))
    };
    let head = format!(
        "round trip p50 {} p99 {} over {} requests; {with} (renew every {}, node timeout {}) the lease has {} of slack",
        precise(p50),
        precise(p99),
        samples.len(),
        precise(b.renew_every),
        precise(b.node_timeout),
        precise(slack(b))
    );
    if p50 >= b.node_timeout {
        Finding::new(
            "latency",
            Severity::Error,
            format!(
                "{head}: most requests take longer than the node timeout, so renewals would fail"
            ),
        )
        .fix("raise --node-timeout and --ttl, or use a closer Redis")
    } else if p99 * 2 > b.node_timeout || p99 * 2 > b.renew_every {
        Finding::new(
            "latency",
            Severity::Warning,
            format!(
                "{head}: the slowest requests take more than half the node timeout or renewal interval, so renewals may time out"
            ),
        )
        .fix("raise --node-timeout and --ttl, or use a closer Redis")
    } else {
        Finding::new("latency", Severity::Ok, head)
    }
}

/// Findings about the set of nodes: Redlock's majority.
pub fn quorum(nodes: usize) -> Option<Finding> {
    if nodes < 2 {
        return None;
    }
    let need = crate::quorum::majority(nodes);
    let may_fail = nodes - need;
    let message =
        format!("{nodes} nodes (Redlock): a lock needs {need} of them, so {may_fail} may be down");
    if !nodes.is_multiple_of(2) {
        return Some(Finding::new("quorum", Severity::Ok, message));
    }
    let more = nodes + 1 - crate::quorum::majority(nodes + 1);
    Some(
        Finding::new(
            "quorum",
            Severity::Info,
            format!("{message}, no more than with {}", nodes - 1),
        )
        .fix(format!(
            "use {} nodes ({more} may be down) or {}",
            nodes + 1,
            nodes - 1
        )),
    )
}

/// The finding for a connect that failed because a plain server was given as a
/// Cluster (`None` for any other failure, which keeps its own exit status).
pub fn not_a_cluster(given: Given, error: &str) -> Option<Finding> {
    (given == Given::Cluster && error.contains("cluster support disabled")).then(|| {
        Finding::new(
            "topology",
            Severity::Error,
            "the URL says Redis Cluster but the server has cluster support disabled",
        )
        .fix("use redis://host:port for a single server")
    })
}

/// The worst severity among findings (`Ok` when there are none).
pub fn worst(findings: &[Finding]) -> Severity {
    findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok)
}

/// The exit status for the worst severity: 0 up to info, 1 for a warning, 2 for an
/// error.
pub fn exit_status(worst: Severity) -> u8 {
    match worst {
        Severity::Ok | Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Error => 2,
    }
}

/// CRC16/XMODEM of `key`'s hash tag modulo 16384: the Redis Cluster slot.
pub fn slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(tagged) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests;

//! `redlock doctor`: a preflight check of the Redis a lock depends on. It connects to
//! every node given, gathers facts (INFO, CONFIG GET, ACL verdicts, TIME, PING round
//! trips) through the same [`Node`] the lease uses, hands them to the pure rules of
//! `judge.rs`, and prints the findings: one line each, grouped per node, and a summary
//! (or one JSON object with `--json`).
//!
//! It only reads: nothing is written to Redis but the script cache (the ACL check's
//! script, when ACL DRYRUN is not allowed to the user). A probe the ACL forbids is a
//! finding ("could not check"), never a failure; a node that cannot be reached or
//! refuses the credentials ends the run with the tool's usual code (69, 77, …) after
//! the report of the others.
//!
//! Exit status: 0 when nothing is at warning or worse, 1 when the worst finding is a
//! warning, 2 when one is an error.

mod judge;
mod needs;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::future::join_all;
use redis::Value;
use serde::Serialize;

use super::{print_json, print_line};
use crate::config::DoctorConfig;
use crate::error::{Error, Kind, Result, most_telling};
use crate::keys::LockKeys;
use crate::redis::{Lua, Node, RedisUrl, Topology, command};
use crate::scripts::acquire;
use judge::{Acl, Clock, Denied, Facts, Finding, Given, Info, Probe, Server, Severity, Timing};
use needs::{Key, Need};

/// Round trips measured per node.
const PINGS: usize = 30;
/// Clock samples per node (the one with the shortest round trip counts).
const TIME_SAMPLES: usize = 5;

pub async fn run(config: DoctorConfig) -> Result<u8> {
    let timing = Timing {
        budget: config.budget,
        ttl_given: config.ttl_given,
    };
    let urls = &config.conn.urls;
    let timeout = config.budget.node_timeout;
    let connected = join_all(urls.iter().map(|u| Node::connect(u, timeout))).await;
    let mut findings = Vec::new();
    let mut nodes = Vec::new();
    let mut errors = Vec::new();
    for (url, result) in urls.iter().zip(connected) {
        match result {
            Ok(node) => {
                let facts = gather(&node, &config.keys, &config.conn.prefix).await;
                findings.extend(judge::node(&facts, &timing));
                nodes.push(NodeJson::of(&facts));
            }
            Err(e) => {
                if let Some(mut finding) = judge::not_a_cluster(given(url), &e.to_string()) {
                    finding.node = Some(url.to_string());
                    findings.push(finding);
                    nodes.push(NodeJson::unreached(url));
                    continue;
                }
                findings.push(Finding {
                    check: "connect",
                    severity: Severity::Error,
                    node: Some(url.to_string()),
                    message: e.to_string(),
                    fix: None,
                });
                nodes.push(NodeJson::unreached(url));
                errors.push(e);
            }
        }
    }
    findings.extend(judge::quorum(urls.len()));
    let worst = judge::worst(&findings);
    // A node that could not be reached or refused the credentials decides the status
    // (the tool's usual code); otherwise the worst finding does.
    let error = most_telling(errors);
    let status = error
        .as_ref()
        .map_or(judge::exit_status(worst), |e| e.code().value());
    if config.json {
        print_json(&Report::of(nodes, &findings, worst, status))?;
    } else {
        print_text(&findings, urls.len(), status);
    }
    match error {
        Some(e) => Err(e.context("doctor could not check every node")),
        None => Ok(status),
    }
}

/// What the URL says the server is.
fn given(url: &RedisUrl) -> Given {
    match url.topology() {
        Topology::Single => Given::Single,
        Topology::Cluster { .. } => Given::Cluster,
        Topology::Sentinel(_) => Given::Sentinel,
    }
}

/// Every fact about one node.
async fn gather(node: &Node, keys: &LockKeys, prefix: &str) -> Facts {
    let url = node.url();
    let given = given(url);
    let servers = servers(node).await;
    let acl = acl(node, keys, prefix, given).await;
    let clock = clock(node).await;
    let rtts = latency(node, keys).await;
    let names = names(node, prefix).await;
    let slots = url.is_cluster().then(|| {
        [
            &keys.lock,
            &keys.meta,
            &keys.waiters,
            &keys.wake,
            &keys.fence,
            &keys.history,
        ]
        .iter()
        .map(|k| judge::slot(k))
        .collect()
    });
    Facts {
        node: url.to_string(),
        given,
        servers,
        acl,
        clock,
        rtts,
        slots,
        lock_name: keys.display_name(),
        names,
        prefix: prefix.to_string(),
    }
}

/// How many names under `prefix` have a fence counter: one SCAN of the keyspace (as
/// `redlock list` does), COUNT 1000 a step.
async fn names(node: &Node, prefix: &str) -> Probe<usize> {
    let mut pattern = crate::keys::glob_escape(prefix.as_bytes());
    pattern.extend_from_slice(b"{*}:fence");
    match node.scan(&pattern).await {
        Ok(found) => Probe::Got(found.len()),
        Err(e) => failed("SCAN", e),
    }
}

/// A failed probe: a permission the ACL refused, or any other error as one line.
fn failed<T>(command: &'static str, e: Error) -> Probe<T> {
    if e.kind() == Kind::Auth {
        Probe::NoPermission(command)
    } else {
        Probe::Failed(e.to_string())
    }
}

/// INFO and CONFIG GET, per server (of a cluster, every master).
async fn servers(node: &Node) -> Vec<(String, Server)> {
    let info = node.query_each(&command::info()).await;
    let save = config_get(node, "save").await;
    let fsync = config_get(node, "appendfsync").await;
    let pick = |probe: &Probe<Vec<(String, String)>>, address: &str| -> Probe<String> {
        match probe {
            Probe::Got(list) => list
                .iter()
                .find(|(a, _)| a == address || a.is_empty())
                .or(list.first())
                .map_or_else(
                    || Probe::Failed("no reply".into()),
                    |(_, v)| Probe::Got(v.clone()),
                ),
            Probe::NoPermission(c) => Probe::NoPermission(c),
            Probe::Failed(why) => Probe::Failed(why.clone()),
        }
    };
    let infos: Vec<(String, Probe<Info>)> = match info {
        Ok(replies) => replies
            .into_iter()
            .map(|(address, v)| {
                let probe = text(&v).map_or_else(
                    || Probe::Failed("INFO: unexpected reply".into()),
                    |t| Probe::Got(Info::parse(&t)),
                );
                (address, probe)
            })
            .collect(),
        Err(e) => vec![(String::new(), failed("INFO", e))],
    };
    infos
        .into_iter()
        .map(|(address, info)| {
            let server = Server {
                info,
                save: pick(&save, &address),
                appendfsync: pick(&fsync, &address),
            };
            (address, server)
        })
        .collect()
}

/// `CONFIG GET name`, per server.
async fn config_get(node: &Node, name: &str) -> Probe<Vec<(String, String)>> {
    match node.query_each(&command::config_get(name)).await {
        Ok(replies) => Probe::Got(
            replies
                .into_iter()
                .filter_map(|(address, v)| Some((address, config_value(v)?)))
                .collect(),
        ),
        Err(e) => failed("CONFIG", e),
    }
}

/// The value of a `CONFIG GET` reply (`[name, value]`, or a map in RESP3).
fn config_value(value: Value) -> Option<String> {
    match value {
        Value::Array(items) => items.get(1).and_then(text),
        Value::Map(entries) => entries.first().and_then(|(_, v)| text(v)),
        _ => None,
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Okay => Some("OK".into()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The arguments a command is checked with, as the tool would send it: the command's
/// words (`script|load` is two), then sample arguments on the name's keys.
fn args_of(need: Need, keys: &LockKeys, prefix: &str) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = need
        .command
        .split('|')
        .map(|p| p.as_bytes().to_vec())
        .collect();
    out.extend(sample_args(need, keys, prefix));
    out
}

/// Arguments of the shape the tool sends after `need`'s command (an ACL check looks
/// at the keys and, for some commands, the flags).
fn sample_args(need: Need, keys: &LockKeys, prefix: &str) -> Vec<Vec<u8>> {
    let key = |k: Key| k.key_in(keys, "TOKEN", "ID", 2);
    let s = |t: &str| t.as_bytes().to_vec();
    match (need.command, need.key) {
        ("evalsha", _) => vec![
            s(acquire::PLAIN.sha()),
            s("7"),
            keys.lock.clone(),
            keys.meta.clone(),
            keys.waiters.clone(),
            keys.fence.clone(),
            keys.wake.clone(),
            keys.history.clone(),
            keys.mode.clone(),
        ],
        ("script|load", _) => vec![s("return 1")],
        ("scan", _) => {
            let mut pattern = crate::keys::glob_escape(prefix.as_bytes());
            pattern.push(b'*');
            vec![s("0"), s("MATCH"), pattern, s("COUNT"), s("1000")]
        }
        ("set", Some(Key::Lock)) => vec![key(Key::Lock), s("t"), s("NX"), s("PX"), s("1000")],
        ("set", Some(k)) => vec![key(k), s("1")],
        ("hset" | "hsetnx", Some(k)) => vec![key(k), s("f"), s("v")],
        ("hget", Some(k)) => vec![key(k), s("token")],
        ("pexpire", Some(k)) => vec![key(k), s("1000")],
        ("sadd" | "srem", Some(k)) => vec![key(k), s("t")],
        ("lpush", Some(k)) => vec![key(k), s("1")],
        ("lrem", Some(k)) => vec![key(k), s("1"), s("x")],
        ("lrange" | "ltrim" | "zrange", Some(k)) => vec![key(k), s("0"), s("-1")],
        ("zrangebyscore", Some(k)) => vec![key(k), s("-inf"), s("+inf")],
        ("zrem" | "zscore" | "zrank" | "hdel", Some(k)) => vec![key(k), s("t")],
        ("zadd", Some(k)) => vec![key(k), s("1"), s("t")],
        ("blpop", Some(k)) => vec![key(k), s("0.001")],
        ("info", None) => vec![s("server")],
        ("wait", None) => vec![s("1"), s("0")],
        (_, Some(k)) => vec![key(k)],
        (_, None) => vec![],
    }
}

/// Checks one command per ARGV group (`n, cmd, args…`) with `redis.acl_check_cmd`
/// (Redis ≥ 7): 1 allowed, 0 denied, -1 not a command of this server.
static ACL_CHECK: Lua = Lua::new("e73758c0b675dbb6bd88f5b5426986130b435de2", || {
    ACL_CHECK_TEXT
});

const ACL_CHECK_TEXT: &str = r#"
local out = {}
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local args = {}
  for j = 1, n do args[j] = ARGV[i + j] end
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(args))
  if not ok then out[#out + 1] = -1 elseif allowed then out[#out + 1] = 1 else out[#out + 1] = 0 end
  i = i + n + 1
end
return out
"#;

/// The ACL verdict on every command the tool sends: by `ACL DRYRUN` when the user may
/// run it, else by a script calling `redis.acl_check_cmd` (the user's own rights are
/// enough), else by what the attempt to run that script was refused.
async fn acl(node: &Node, keys: &LockKeys, prefix: &str, given: Given) -> Acl {
    let needs = needs::all(given == Given::Cluster, given == Given::Sentinel);
    let shown = |need: Need| {
        need.key
            .map(|_| printable_key(&args_of(need, keys, prefix)))
    };
    let user = node.query::<String>(&command::acl_whoami()).await.ok();
    if let Some(user) = &user
        && let Some(denied) = dryrun(node, user, &needs, keys, prefix).await
    {
        let denied = denied
            .into_iter()
            .map(|(need, reason)| Denied {
                need,
                reason: Some(reason),
                key: shown(need),
            })
            .collect();
        return Acl::Checked {
            how: "ACL DRYRUN",
            user: Some(user.clone()),
            denied,
        };
    }
    let mut call = ACL_CHECK.call();
    for need in &needs {
        let args = args_of(*need, keys, prefix);
        call.arg(args.len());
        for a in &args {
            call.arg(a.as_slice());
        }
    }
    match node.run::<Vec<i64>>(&call).await {
        Ok(verdicts) if verdicts.len() == needs.len() => Acl::Checked {
            how: "redis.acl_check_cmd",
            user,
            denied: needs
                .iter()
                .zip(verdicts)
                .filter(|(_, v)| *v == 0)
                .map(|(need, _)| Denied {
                    need: *need,
                    reason: None,
                    key: shown(*need),
                })
                .collect(),
        },
        Ok(_) => Acl::Unchecked("unexpected reply from the ACL check script".into()),
        Err(e) if e.kind() == Kind::Auth => check_script_refused(&e, user),
        Err(e) if e.to_string().contains("acl_check_cmd") => Acl::Unchecked(
            "this Redis has no redis.acl_check_cmd (Redis < 7) and the user may not run ACL DRYRUN"
                .into(),
        ),
        Err(e) => Acl::Unchecked(e.to_string()),
    }
}

/// The check script itself was refused: EVALSHA or SCRIPT LOAD, which every verb needs
/// too. The server's message names the command.
fn check_script_refused(e: &Error, user: Option<String>) -> Acl {
    let text = e.to_string().to_ascii_lowercase();
    let refused = needs::SCRIPTING
        .iter()
        .find(|n| text.contains(&format!("'{}'", n.command)));
    match refused {
        Some(need) => Acl::Checked {
            how: "running a script",
            user,
            denied: vec![Denied {
                need: *need,
                reason: None,
                key: None,
            }],
        },
        None => Acl::Unchecked(format!("the check script was refused: {e}")),
    }
}

/// `ACL DRYRUN user …` for every need; `None` when DRYRUN itself is not allowed or
/// not known (Redis < 7). Returns the denied needs with the server's reason.
async fn dryrun(
    node: &Node,
    user: &str,
    needs: &[Need],
    keys: &LockKeys,
    prefix: &str,
) -> Option<Vec<(Need, String)>> {
    let mut denied = Vec::new();
    for need in needs {
        let cmd = command::acl_dryrun(user, args_of(*need, keys, prefix));
        match node.query::<Value>(&cmd).await {
            Ok(Value::Okay) => {}
            Ok(Value::SimpleString(s)) if s == "OK" => {}
            Ok(other) => denied.push((*need, text(&other).unwrap_or_default())),
            // DRYRUN refused or unknown: fall back. An unknown command (an old server
            // without a subcommand) is not the user's problem: skip it.
            Err(e) if e.kind() == Kind::Auth || denied.is_empty() && need == &needs[0] => {
                return None;
            }
            Err(_) => {}
        }
    }
    Some(denied)
}

/// The key among a command's arguments, for messages.
fn printable_key(args: &[Vec<u8>]) -> String {
    args.iter()
        .find(|a| a.contains(&b'{'))
        .map_or_else(String::new, |k| crate::report::printable(k))
}

/// The host clock against the server's `TIME`, from the sample with the shortest round
/// trip: the server read its clock about half a round trip after we sent.
async fn clock(node: &Node) -> Probe<Clock> {
    let mut best: Option<Clock> = None;
    for _ in 0..TIME_SAMPLES {
        let sent = SystemTime::now();
        let start = Instant::now();
        let reply = node.query::<(String, String)>(&command::time()).await;
        let rtt = start.elapsed();
        let (secs, micros) = match reply {
            Ok(pair) => pair,
            Err(e) => return failed("TIME", e),
        };
        let (Ok(secs), Ok(micros)) = (secs.parse::<i64>(), micros.parse::<i64>()) else {
            return Probe::Failed("TIME: unexpected reply".into());
        };
        let server_us = secs.saturating_mul(1_000_000).saturating_add(micros);
        let host = sent.duration_since(UNIX_EPOCH).unwrap_or_default() + rtt / 2;
        let host_us = i64::try_from(host.as_micros()).unwrap_or(i64::MAX);
        let sample = Clock {
            offset_ms: server_us.saturating_sub(host_us) / 1000,
            rtt,
        };
        if best.is_none_or(|b| sample.rtt < b.rtt) {
            best = Some(sample);
        }
    }
    best.map_or_else(|| Probe::Failed("no sample".into()), Probe::Got)
}

/// Round trips of PING (or, when the ACL forbids PING, of EXISTS on the lock key).
async fn latency(node: &Node, keys: &LockKeys) -> Probe<Vec<Duration>> {
    let ping = command::ping();
    let exists = command::exists(&keys.lock);
    let mut cmd = &ping;
    let mut rtts = Vec::with_capacity(PINGS);
    while rtts.len() < PINGS {
        let start = Instant::now();
        match node.query::<Value>(cmd).await {
            Ok(_) => rtts.push(start.elapsed()),
            Err(e) if e.kind() == Kind::Auth && std::ptr::eq(cmd, &ping) => cmd = &exists,
            Err(e) => return failed("EXISTS", e),
        }
    }
    Probe::Got(rtts)
}

/// One node in the JSON report (`reached` false: only `node` is known).
#[derive(Debug, Serialize)]
struct NodeJson {
    node: String,
    reached: bool,
    version: Option<String>,
    role: Option<String>,
    rtt_p50_ms: Option<f64>,
    rtt_p99_ms: Option<f64>,
    clock_offset_ms: Option<i64>,
}

impl NodeJson {
    fn of(facts: &Facts) -> Self {
        let info = facts.servers.iter().find_map(|(_, s)| match &s.info {
            Probe::Got(info) => Some(info),
            _ => None,
        });
        let (p50, p99) = match &facts.rtts {
            Probe::Got(samples) if !samples.is_empty() => {
                let mut sorted = samples.clone();
                sorted.sort();
                let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
                (
                    Some(ms(judge::percentile(&sorted, 50))),
                    Some(ms(judge::percentile(&sorted, 99))),
                )
            }
            _ => (None, None),
        };
        NodeJson {
            node: facts.node.clone(),
            reached: true,
            version: info.and_then(|i| i.get("redis_version")).map(String::from),
            role: info.and_then(|i| i.get("role")).map(String::from),
            rtt_p50_ms: p50,
            rtt_p99_ms: p99,
            clock_offset_ms: match facts.clock {
                Probe::Got(c) => Some(c.offset_ms),
                _ => None,
            },
        }
    }

    fn unreached(url: &RedisUrl) -> Self {
        NodeJson {
            node: url.to_string(),
            reached: false,
            version: None,
            role: None,
            rtt_p50_ms: None,
            rtt_p99_ms: None,
            clock_offset_ms: None,
        }
    }
}

/// The `--json` report.
#[derive(Debug, Serialize)]
struct Report<'a> {
    nodes: Vec<NodeJson>,
    findings: &'a [Finding],
    worst: Severity,
    counts: Counts,
    /// The exit status (0, 1, 2, or the code of a node that could not be checked).
    exit: u8,
}

#[derive(Debug, Serialize, Default)]
struct Counts {
    ok: usize,
    info: usize,
    warning: usize,
    error: usize,
}

impl Counts {
    fn of(findings: &[Finding]) -> Self {
        let mut c = Counts::default();
        for f in findings {
            match f.severity {
                Severity::Ok => c.ok += 1,
                Severity::Info => c.info += 1,
                Severity::Warning => c.warning += 1,
                Severity::Error => c.error += 1,
            }
        }
        c
    }
}

impl<'a> Report<'a> {
    fn of(nodes: Vec<NodeJson>, findings: &'a [Finding], worst: Severity, exit: u8) -> Self {
        Report {
            nodes,
            findings,
            worst,
            counts: Counts::of(findings),
            exit,
        }
    }
}

/// The text report: a header per node, one line per finding, a summary line.
fn print_text(findings: &[Finding], nodes: usize, status: u8) {
    let mut groups: Vec<Option<&str>> = Vec::new();
    for f in findings {
        if !groups.contains(&f.node.as_deref()) {
            groups.push(f.node.as_deref());
        }
    }
    for group in groups {
        print_line(&format!("{}:", group.unwrap_or("all nodes")));
        for f in findings.iter().filter(|f| f.node.as_deref() == group) {
            let fix = f
                .fix
                .as_deref()
                .map_or(String::new(), |fix| format!("; fix: {fix}"));
            print_line(&format!(
                "  {:<8}{:<13}{}{fix}",
                f.severity.as_str(),
                f.check,
                f.message
            ));
        }
    }
    let c = Counts::of(findings);
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    print_line(&format!(
        "summary: {}, {}, {}, {} info, {} ok: exit {}",
        plural(nodes, "node", "nodes"),
        plural(c.error, "error", "errors"),
        plural(c.warning, "warning", "warnings"),
        c.info,
        c.ok,
        status
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_acl_check_carries_the_sha1_of_its_text() {
        let digest = sha1_smol::Sha1::from(ACL_CHECK.text()).digest().to_string();
        assert_eq!(ACL_CHECK.sha(), digest);
    }
}

//! `redlock-run`'s flags to a [`RunConfig`], in named steps: the command, the lease's
//! timings, the flags that shape the policy (each checked on its own, then together by
//! the table of refused combinations), the host-local queue, and the flags that stand
//! alone. What the verbs share with the run (the connection, the duration ranges and
//! parsers) is in `config.rs`.

use std::ffi::OsString;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::{
    Conn, GivenBudget, HOLD_MIN, KILL_AFTER, LocalDir, MAX_HOLD, MAX_LIMIT, ONCE_PER, RENEW_EVERY,
    Wait, bounded, bounded_opt, budget_error, busy_code, count, duration, retain, signal, ttl,
    wait,
};
use crate::cli::{OnLost, RunArgs};
use crate::error::{Error, Result};
use crate::keys::LockKeys;
use crate::period::{Period, Zone};
use crate::policy::refused::Given;
use crate::policy::{Completion, Elect, Newest, Policy, Stop};
use crate::timing::{self, Budget};

/// A checked `redlock-run` configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub conn: Conn,
    /// The first `--key` name: the one `REDLOCK_KEY`, `REDLOCK_FENCE`, the metrics and
    /// the local queue go by.
    pub keys: LockKeys,
    /// The names after the first of a run that holds several (`--key A --key B`), each
    /// with the kind it is held as (`--limit NAME=N`, `--shared NAME`).
    pub also: Vec<Member>,
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

/// A name of a run that holds several, after the first: its keys and the kind of lock
/// it is held as.
#[derive(Debug, Clone)]
pub struct Member {
    pub keys: LockKeys,
    pub mode: crate::policy::Mode,
}

/// The most names one run may hold at once.
pub const MAX_NAMES: usize = 16;

/// One `--key` name as the run asks for it: `--limit NAME=N` (1: not a pool) and
/// `--shared NAME`.
#[derive(Debug, Clone)]
struct Name {
    raw: OsString,
    limit: u32,
    shared: bool,
}

/// The `--key` names with their `--limit` and `--shared`, in the order given: each name
/// once, at most [`MAX_NAMES`]; a bare `--limit N` or `--shared` belongs to a lone
/// name; `--limit NAME=N` and `--shared NAME` name one of the names.
fn names(args: &RunArgs) -> Result<Vec<Name>> {
    let mut names = each_once(&args.key)?;
    pools(&mut names, &args.limit)?;
    shares(&mut names, &args.shared)?;
    distinct_fence_variables(&names)?;
    Ok(names)
}

/// The `--key` names, each given once, at most [`MAX_NAMES`].
fn each_once(keys: &[OsString]) -> Result<Vec<Name>> {
    if keys.len() > MAX_NAMES {
        return Err(Error::usage(format!(
            "{} --key names given; one run holds at most {MAX_NAMES}",
            keys.len()
        )));
    }
    let mut out: Vec<Name> = Vec::with_capacity(keys.len());
    for raw in keys {
        if out.iter().any(|n| n.raw == *raw) {
            return Err(Error::usage(format!(
                "--key {} is given twice; give each name once",
                shown(raw)
            )));
        }
        out.push(Name {
            raw: raw.clone(),
            limit: 1,
            shared: false,
        });
    }
    Ok(out)
}

/// A `--key` name as messages show it.
fn shown(raw: &OsString) -> String {
    crate::report::printable(raw.as_encoded_bytes())
}

/// Where `name` is among `names`, or the line saying it is not one of them (`flag
/// given` as the user gave it).
fn find(names: &[Name], given: &str, name: &str) -> Result<usize> {
    let listed = || -> Vec<String> { names.iter().map(|n| shown(&n.raw)).collect() };
    if name.is_empty() {
        return Err(Error::usage(format!(
            "{given}: the name is empty; name one of the --key names ({})",
            listed().join(", ")
        )));
    }
    names
        .iter()
        .position(|n| n.raw.as_encoded_bytes() == name.as_bytes())
        .ok_or_else(|| {
            Error::usage(format!(
                "{given}: {name:?} is not one of the --key names ({}); give --key {name} too, or fix the name",
                listed().join(", ")
            ))
        })
}

/// `--limit [NAME=]N`, each name's at most once.
fn pools(names: &mut [Name], limits: &[String]) -> Result<()> {
    let mut limited = vec![false; names.len()];
    for raw in limits {
        let (at, n) = match raw.rsplit_once('=') {
            Some((name, n)) => (find(names, &format!("--limit {raw}"), name)?, n),
            None if names.len() == 1 => (0, raw.as_str()),
            None => {
                return Err(Error::usage(format!(
                    "--limit {raw} with several --key names: say which name is the pool, e.g. --limit NAME={raw}"
                )));
            }
        };
        if std::mem::replace(&mut limited[at], true) {
            return Err(Error::usage(format!(
                "--limit is given twice for {}; give it once",
                shown(&names[at].raw)
            )));
        }
        names[at].limit = limit(Some(n))?;
    }
    Ok(())
}

/// `--shared [NAME]`.
fn shares(names: &mut [Name], shared: &[String]) -> Result<()> {
    for raw in shared {
        let at = match raw.as_str() {
            "" if names.len() == 1 => 0,
            "" => {
                return Err(Error::usage(
                    "--shared with several --key names: say which name is shared, e.g. --shared NAME",
                ));
            }
            name => find(names, &format!("--shared {name}"), name)?,
        };
        names[at].shared = true;
    }
    Ok(())
}

/// Several names give the command one `REDLOCK_FENCE_<NAME>` each: two names that
/// would give the same variable are refused.
fn distinct_fence_variables(names: &[Name]) -> Result<()> {
    let mut vars: Vec<String> = Vec::new();
    for n in names.iter().filter(|_| names.len() > 1) {
        let var = crate::child::env::of_name(crate::child::env::FENCE, n.raw.as_encoded_bytes());
        if vars.contains(&var) {
            return Err(Error::usage(format!(
                "two --key names give the command the same {var}; give names that differ in more than case or punctuation"
            )));
        }
        vars.push(var);
    }
    Ok(())
}

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
/// its slot); without `--once-per` the refusal table says so. The refusal says both
/// as given (`--once-per` with its `--tz`) and suggests a D that can be pasted.
fn splay(raw: Option<&str>, once_per: (Option<&str>, Option<&Period>)) -> Result<Option<Duration>> {
    let (Some(raw), (Some(per), Some(period))) = (raw, once_per) else {
        return Ok(None);
    };
    let d = duration("--splay", raw)?;
    let shortest = period.shortest();
    if d >= shortest {
        let tz = period.zone().map_or(String::new(), |zone| {
            format!(" --tz {}", crate::report::shown(&zone.name))
        });
        return Err(Error::usage(format!(
            "--splay {} is not shorter than --once-per {}{tz}: a try waits up to D into its slot; give a D below the period, e.g. --splay {}",
            crate::report::shown(raw.trim()),
            crate::report::shown(per.trim()),
            crate::report::pasteable(shortest / 2)
        )));
    }
    Ok(Some(d).filter(|d| !d.is_zero()))
}

/// `--once-per` (a length, or day, week or month) and `--tz` (a calendar period's
/// zone, an IANA name; UTC by default): `--tz` without a calendar period is refused.
fn once_per(raw: Option<&str>, tz: Option<&str>) -> Result<Option<Period>> {
    let calendar = raw.is_some_and(Period::is_calendar_word);
    if let Some(unit) = raw
        .filter(|_| !calendar)
        .and_then(crate::period::calendar_unit_in)
    {
        return Err(Error::usage(format!(
            "--once-per {}: {unit} count from the Unix epoch here, not from the calendar (a week from a Thursday, a month of 30.44 days); for calendar weeks or months give --once-per week|month --tz ZONE, else a period in {}",
            crate::report::shown(raw.unwrap_or_default().trim()),
            super::UNITS
        )));
    }
    let zone = match tz {
        Some(name) if !calendar => {
            let given = raw.map_or(String::new(), |raw| {
                format!(" (--once-per {} counts from the Unix epoch, UTC)", crate::report::shown(raw))
            });
            return Err(Error::usage(format!(
                "--tz {} needs a calendar period: give --once-per day, week or month{given}",
                crate::report::shown(name),
            )));
        }
        Some(name) => Zone::named(name).ok_or_else(|| {
            let why = Zone::not_a_name(name).map_or(": no such time zone".into(), |w| format!(" {w}"));
            Error::usage(format!(
                "--tz {}{why}; give an IANA name such as Europe/Berlin or America/New_York (see /usr/share/zoneinfo), the same on every host",
                crate::report::shown(name)
            ))
        })?,
        None => Zone::utc(),
    };
    match raw {
        None => Ok(None),
        Some(word) if calendar => Ok(Period::calendar(word, zone)),
        Some(raw) => Ok(Some(Period::Every(bounded(ONCE_PER, raw)?))),
    }
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
        let names = names(&args)?;
        let keys = conn.keys(&names[0].raw)?;
        let budget = run_budget(&args, &conn)?;
        let asked = Asked::from_args(&args)?;
        let wait = run_wait(&args)?;
        let (policy, also) = run_policy(&args, &asked, &names, conn.urls.len(), wait)?;
        let also = also
            .into_iter()
            .map(|(raw, mode)| {
                Ok(Member {
                    keys: conn.keys(raw)?,
                    mode,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RunConfig {
            conn,
            keys,
            also,
            budget,
            wait,
            busy_code: busy_code(args.waiting.busy_exit_code.as_deref())?,
            on_lost: args.on_lost,
            events: args.events.clone(),
            metrics: metrics_file(args.metrics.as_deref())?,
            retain: retain(
                args.retain.retain.as_deref(),
                asked.once_per.as_ref().map(Period::longest),
            )?,
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
    once_per: Option<Period>,
    max_attempts: Option<u32>,
}

impl Asked {
    fn from_args(args: &RunArgs) -> Result<Asked> {
        Ok(Asked {
            hold_min: bounded_opt(HOLD_MIN, args.hold_min.as_deref())?.filter(|d| !d.is_zero()),
            history: history_size(args.history.as_deref())?,
            once_per: once_per(args.once_per.as_deref(), args.tz.as_deref())?,
            max_attempts: max_attempts(args.max_attempts.as_deref())?,
        })
    }
}

/// Which flags the run gave for `name`, as the table of refused combinations reads
/// them (each name of a set is judged with its own `--limit` and `--shared`).
fn given(args: &RunArgs, asked: &Asked, name: &Name, nodes: usize, wait: Wait) -> Given {
    Given {
        fair: args.fair,
        limit: name.limit,
        nodes,
        once_per: asked.once_per.is_some(),
        history: asked.history,
        attempts: Completion {
            vanished: args.if_vanished.unwrap_or_default(),
            max_attempts: asked.max_attempts,
            once_id: args.once_id.clone(),
            ..Completion::default()
        }
        .attempts(),
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
        shared: name.shared,
        names: args.key.len(),
    }
}

/// What the run asks for, decided once: completion (`--once-per`, `--once-id`,
/// `--hold-min`), newest wins, how it may be stopped, `--elect`; a combination the
/// table refuses is a usage error. The policy is the first name's; each further name
/// of a set comes with the kind it is held as, its flags judged by the same table.
fn run_policy<'n>(
    args: &RunArgs,
    asked: &Asked,
    names: &'n [Name],
    nodes: usize,
    wait: Wait,
) -> Result<(Policy, Vec<(&'n OsString, crate::policy::Mode)>)> {
    let completion = Completion {
        hold_min: asked.hold_min,
        once_per: asked.once_per.clone(),
        vanished: args.if_vanished.unwrap_or_default(),
        max_attempts: asked.max_attempts,
        may_wait: wait != Wait::For(Duration::ZERO),
        once_id: once_id(args.once_id.as_deref())?,
        splay: splay(
            args.splay.as_deref(),
            (args.once_per.as_deref(), asked.once_per.as_ref()),
        )?,
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
    let mut also = Vec::new();
    for name in &names[1..] {
        let given = given(args, asked, name, nodes, wait);
        let policy = Policy::from_flags(given, completion.clone(), newest, stop)?;
        also.push((&name.raw, policy.mode));
    }
    let given = given(args, asked, &names[0], nodes, wait);
    let policy = Policy::from_flags(given, completion, newest, stop)?;
    let elect = args
        .elect
        .then(|| {
            Ok::<_, Error>(Elect {
                on_exit: args.on_exit.unwrap_or_default(),
                max_terms: elect_max_terms(args.elect_max_terms.as_deref())?,
            })
        })
        .transpose()?;
    Ok((policy.electing(elect), also))
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

pub(super) fn local_dir_from(
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
        node_timeout: conn.renewal_timeout_for(ttl),
        kill_after,
        requests: conn.requests_per_renewal(),
    };
    let given = GivenBudget {
        ttl: args.ttl.as_deref(),
        renew_every: args.renew_every.as_deref(),
        kill_after: args.kill_after.as_deref(),
    };
    budget
        .check()
        .map_err(|e| budget_error(&budget, e, given))?;
    Ok(budget)
}

//! Each verb's flags to its checked config (`redlock status`, `history`, `list`, `top`,
//! `release`, `acquire`, `wait`, `forget`, `preempt`, `leader`, `extend`, `doctor`):
//! the connection and the lock's keys first, then the verb's own flags.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::{
    Conn, GivenBudget, LocalDir, MAX_LIMIT, PREEMPT_WAIT, Range, SINCE, TIMEOUT, Wait, bounded,
    bounded_opt, budget_error, busy_code, count, retain, signal, ttl, wait,
};
use crate::cli::{
    AcquireArgs, DoctorArgs, ExtendArgs, ForgetArgs, HistoryArgs, ListArgs, ReleaseArgs,
    StatusArgs, WaitVerbArgs,
};
use crate::error::{Error, Result};
use crate::keys::LockKeys;
use crate::policy::refused::Given;
use crate::timing::{self, Budget};

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

/// The window of `history --timeline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// `--since D`: the last D.
    Last(Duration),
    /// No `--since`: from the oldest run shown to now, at a round column width.
    Fit,
}

/// A checked `redlock history`.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    pub conn: Conn,
    pub keys: LockKeys,
    pub limit: usize,
    pub json: bool,
    /// `--timeline`: draw the runs, over this window.
    pub timeline: Option<Window>,
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
            (true, None) => Some(Window::Fit),
            (true, Some(raw)) => Some(Window::Last(bounded(SINCE, raw)?)),
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
            node_timeout: conn.renewal_timeout_for(ttl),
            kill_after: timing::default_kill_after(ttl),
            requests: conn.requests_per_renewal(),
        };
        let given = GivenBudget {
            ttl: args.ttl.as_deref(),
            ..GivenBudget::default()
        };
        budget
            .check()
            .map_err(|e| budget_error(&budget, e, given))?;
        Ok(DoctorConfig {
            conn,
            keys,
            budget,
            ttl_given: args.ttl.is_some(),
            json: args.json,
        })
    }
}

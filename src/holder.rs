//! Holder metadata: who holds a lock (host, pid, user, command, since, ttl), written
//! beside the lock key at acquire and read back by waiters and `redlock status`.
//!
//! The metadata hash carries the holder's token; it describes the lock only while that
//! token is the lock key's value. A lock taken by another client (plain `SET NX`) has no
//! metadata and shows as held by an unknown holder.
//!
//! The command line a holder is recorded with, its secrets masked, is made in
//! `holder/command_line.rs`.

mod command_line;

pub use command_line::recorded_command;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::redis::reply::Held;
use crate::report::human;

/// Who a process is: where it runs and what it runs. The holder metadata, the run
/// history's records and a fair queue's waiters all say it, flattened into their JSON
/// (`host`, `pid`, `user`, `cmd`); a field a reader does not find is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Who {
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub user: Option<String>,
    /// The command line as recorded (redacted, see [`recorded_command`]).
    pub cmd: Option<String>,
}

impl Who {
    /// Whether anything is known of who it is (a host or a pid).
    pub fn is_known(&self) -> bool {
        self.host.is_some() || self.pid.is_some()
    }

    /// `web-1 pid 4242 user deploy`, with `?` for what is not known, shown safely.
    pub fn host_pid_user(&self) -> String {
        format!(
            "{} pid {} user {}",
            self.host_text(),
            self.pid.map_or("?".into(), |p| p.to_string()),
            shown_or_unknown(self.user.as_deref()),
        )
    }

    /// The host for people (`?` when not known; control characters escaped).
    pub fn host_text(&self) -> String {
        shown_or_unknown(self.host.as_deref())
    }

    /// The command line for people (`?` when not known; control characters escaped).
    pub fn cmd_text(&self) -> String {
        shown_or_unknown(self.cmd.as_deref())
    }
}

/// Text from Redis for people (see [`crate::report::shown`]), `?` when absent.
fn shown_or_unknown(text: Option<&str>) -> String {
    text.map_or_else(|| "?".to_string(), crate::report::shown)
}

/// Who holds a lock, as read from Redis.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Holder {
    /// The lock key's value.
    pub token: String,
    /// Time to live left on the lock key (None: no expiry).
    #[serde(skip)]
    pub ttl_left: Option<Duration>,
    #[serde(flatten)]
    pub who: Who,
    /// Acquired at, Unix milliseconds (the holder's wall clock).
    pub since_ms: Option<u64>,
    /// The ttl the holder renews to, milliseconds.
    pub ttl_ms: Option<u64>,
    /// Which process `pid` was: its host's boot and its start time (see
    /// [`process_start`]), so that a pid reused by another process is told apart.
    pub started: Option<String>,
    /// The fencing number of this holder's acquisition.
    pub fence: Option<u64>,
    /// The PID namespace `pid` is a pid in (see [`pid_namespace`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pidns: Option<String>,
    /// How `pid` was found ([`PidFrom`]); absent: the wrapper's own pid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_from: Option<PidFrom>,
    /// `--hold-min`: the run has ended and the lock is kept on purpose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<Box<Kept>>,
    /// What fewer holders have (boxed: most have none of it).
    #[serde(flatten)]
    pub stopping: Box<Stopping>,
}

/// How a holder may be stopped (`--supersede`, `redlock preempt`, `release --if-dead`):
/// what fewer holders record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stopping {
    /// `--announce`: the value the holder recorded (a leader's address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub announce: Option<String>,
    /// The machine's own host name, when the holder showed another (`REDLOCK_HOST`):
    /// what `release --if-dead` judges by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// `--uninterruptible`: a preempt request against it is refused.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uninterruptible: bool,
    /// `--elect`: the holder is a term of a hot standby, a leader (`redlock leader`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub elect: bool,
    /// `--order-key` of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_key: Option<u64>,
    /// A request to stop that it was sent (JSON: who asked, the signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preempt: Option<serde_json::Value>,
    /// Waiting runs that newer ones superseded while it held (`--supersede`).
    #[serde(skip_serializing_if = "is_zero")]
    pub superseded: u64,
    /// The other names a run of several names holds with this one (`--key A --key B`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A lock kept by `--hold-min` after its run ended, so that other hosts do not run the
/// job again (times in Unix ms, the server's clock).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    pub until_ms: u64,
    pub ended_ms: Option<u64>,
}

/// How the pid a lock is recorded with was found: what `--if-dead` may conclude from
/// that process being gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PidFrom {
    /// The wrapper's own pid: it holds the lock for as long as it lives.
    Own,
    /// `redlock acquire --holder-pid PID`: the script said which process uses the lock.
    Given,
    /// `redlock acquire` without `--holder-pid`: a caller found by walking the process
    /// tree, which can be wrong in both directions (a forking wrapper such as `xargs`,
    /// a background subshell of a launcher that exits).
    #[serde(rename = "guess")]
    Guessed,
}

impl PidFrom {
    /// The metadata field's value (`None`: not written, the wrapper's own pid).
    fn field(self) -> Option<&'static str> {
        match self {
            PidFrom::Own => None,
            PidFrom::Given => Some("given"),
            PidFrom::Guessed => Some("guess"),
        }
    }
}

impl Holder {
    /// The machine the holder runs on: its own host name, which `host` shows unless
    /// `REDLOCK_HOST` named another.
    pub fn machine(&self) -> Option<&str> {
        self.stopping
            .machine
            .as_deref()
            .or(self.who.host.as_deref())
    }

    /// Builds a holder from the lock value, its PTTL and the metadata hash's field/value
    /// pairs as a script read them; metadata of another token is ignored.
    pub fn from_held(held: &Held) -> Self {
        let Held {
            token,
            pttl_ms,
            meta: pairs,
        } = held;
        let pttl_ms = *pttl_ms;
        let token = String::from_utf8_lossy(token).into_owned();
        let field = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name.as_bytes())
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        };
        let mut holder = Holder {
            ttl_left: u64::try_from(pttl_ms).ok().map(Duration::from_millis),
            ..Holder::default()
        };
        if field("token").as_deref() == Some(token.as_str()) {
            holder.who = Who {
                host: field("host"),
                pid: field("pid").and_then(|p| p.parse().ok()),
                user: field("user"),
                cmd: field("cmd"),
            };
            holder.since_ms = field("since_ms").and_then(|p| p.parse().ok());
            holder.ttl_ms = field("ttl_ms").and_then(|p| p.parse().ok());
            holder.started = field("started");
            holder.fence = field("fence").and_then(|p| p.parse().ok());
            holder.pidns = field("pidns");
            holder.pid_from = field("pid_from").map(|f| match f.as_str() {
                "given" => PidFrom::Given,
                _ => PidFrom::Guessed,
            });
            holder.stopping = Box::new(Stopping {
                announce: field("announce"),
                machine: field("machine"),
                uninterruptible: field("uninterruptible").as_deref() == Some("1"),
                elect: field("elect").as_deref() == Some("1"),
                order_key: field("order_key").and_then(|p| p.parse().ok()),
                preempt: field("preempt").and_then(|p| serde_json::from_str(&p).ok()),
                superseded: field("superseded")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0),
                with: field("with")
                    .and_then(|p| serde_json::from_str(&p).ok())
                    .unwrap_or_default(),
            });
            holder.kept = field("kept_until_ms")
                .and_then(|p| p.parse().ok())
                .map(|until_ms| {
                    Box::new(Kept {
                        until_ms,
                        ended_ms: field("ended_ms").and_then(|p| p.parse().ok()),
                    })
                });
        }
        holder.token = token;
        holder
    }

    /// How the recorded pid was found. Metadata written by `redlock acquire` before the
    /// field existed was always a guess or `--holder-pid`, which cannot be told apart:
    /// a guess.
    pub fn pid_from(&self) -> PidFrom {
        match self.pid_from {
            Some(from) => from,
            None if self.who.cmd.as_deref() == Some("redlock acquire") => PidFrom::Guessed,
            None => PidFrom::Own,
        }
    }

    /// `, kept by --hold-min until T` when the run has ended and the lock is kept.
    pub fn kept_note(&self) -> String {
        self.kept
            .as_ref()
            .map(|kept| {
                format!(
                    ", kept by --hold-min until {} (the run ended{})",
                    crate::report::rfc3339(kept.until_ms),
                    kept.ended_ms
                        .map(|e| format!(" at {}", crate::report::rfc3339(e)))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default()
    }

    /// Whether the metadata identifies the holder (false for foreign clients).
    pub fn is_known(&self) -> bool {
        self.who.host.is_some() || self.who.pid.is_some()
    }

    /// How long the lock has been held, from the holder's recorded start.
    pub fn held_for(&self, now_ms: u64) -> Option<Duration> {
        self.since_ms
            .map(|since| Duration::from_millis(now_ms.saturating_sub(since)))
    }

    /// A short token prefix for display (a foreign client's value may be anything).
    pub fn token_prefix(&self) -> String {
        crate::report::shown(&self.token.chars().take(8).collect::<String>())
    }

    /// The description with the command last (`host pid 42 for 3m 12s (./job.sh)`), for
    /// a status line that may be cut to the terminal's width.
    pub fn describe_command_last(&self, now_ms: u64) -> String {
        if !self.is_known() {
            return self.describe(now_ms);
        }
        let mut bare = self.clone();
        bare.who.cmd = None;
        match &self.who.cmd {
            Some(_) => format!("{} ({})", bare.describe(now_ms), self.who.cmd_text()),
            None => bare.describe(now_ms),
        }
    }

    /// Whether the holder renews its lease while it runs: a wrapper's run in progress
    /// (its own pid, its run not ended and kept by `--hold-min`) and the shares of a
    /// `--shared` name. A lock of another client (no metadata), a `redlock acquire`
    /// (renewed only by `redlock extend`) and a kept lock expire at their ttl.
    pub fn renews(&self) -> bool {
        match self.token.as_str() {
            crate::keys::SHARED => true,
            crate::keys::WRITER_WAITS => false,
            _ => self.is_known() && self.pid_from.is_none() && self.kept.is_none(),
        }
    }

    /// The lease left as the busy line says it: `lease 29s left, renewed while its
    /// command runs` for a holder that [renews](Self::renews) (not free in 29 s), else
    /// `expires in 29s`; empty for a key without a ttl.
    pub fn lease_note(&self) -> String {
        let Some(left) = self.ttl_left.map(human) else {
            return String::new();
        };
        match (self.renews(), self.token.as_str()) {
            (true, crate::keys::SHARED) => {
                format!(", lease {left} left, renewed while their commands run")
            }
            (true, _) => format!(", lease {left} left, renewed while its command runs"),
            (false, _) => format!(", expires in {left}"),
        }
    }

    /// One-phrase description: `host pid 42 (./job.sh) for 3m 12s` or `an unknown holder`.
    pub fn describe(&self, now_ms: u64) -> String {
        match self.token.as_str() {
            crate::keys::SHARED => return "its shared holders (--shared runs)".to_string(),
            crate::keys::WRITER_WAITS => {
                return "nobody, but a run without --shared waits for it first (writers go first)"
                    .to_string();
            }
            _ if !self.is_known() => {
                return "an unknown holder (no redlock metadata)".to_string();
            }
            _ => {}
        }
        let mut out = self.who.host_text();
        if let Some(pid) = self.who.pid {
            out.push_str(&format!(" pid {pid}"));
        }
        if self.who.cmd.is_some() {
            out.push_str(&format!(" ({})", self.who.cmd_text()));
        }
        if let Some(held) = self.held_for(now_ms) {
            out.push_str(&format!(" for {}", human(held)));
        }
        out.push_str(&self.kept_note());
        out.push_str(&self.with_note());
        out.push_str(&self.stop_note());
        out
    }

    /// `, held with B, C` for a run that holds several names.
    pub fn with_note(&self) -> String {
        match self.stopping.with.as_slice() {
            [] => String::new(),
            names => format!(", held with {}", names.join(", ")),
        }
    }

    /// `, asked to stop by HOST pid N` for a holder preempted and still stopping (`,
    /// this run asked it to stop` in the log of the run that asked);
    /// `, --uninterruptible` for one that refuses to be.
    pub fn stop_note(&self) -> String {
        if let Some(request) = &self.stopping.preempt {
            let by = Who::deserialize(&request["by"]).unwrap_or_default();
            if is_this_process(&by) {
                return ", this run asked it to stop".to_string();
            }
            return format!(", asked to stop by {}", by.host_pid_user());
        }
        if self.stopping.uninterruptible {
            return ", --uninterruptible (not preempted)".to_string();
        }
        String::new()
    }
}

/// This process's host as its metadata records it, and the machine's own name when
/// that differs. REDLOCK_HOST: what operators read as the host (a CI job's name rather
/// than a container's hash); the machine's own name is kept beside it for the proof of
/// `release --if-dead`, which only the machine's name can give.
fn host_names() -> (String, Option<String>) {
    let machine = nix::unistd::gethostname()
        .ok()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|| "?".into());
    let shown = std::env::var("REDLOCK_HOST")
        .ok()
        .map(|h| {
            crate::error::one_line(h.trim())
                .chars()
                .take(255)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty());
    match shown {
        Some(shown) if shown != machine => (shown, Some(machine)),
        _ => (machine, None),
    }
}

/// Whether `who` is this process (its host as recorded, and its pid): a newcomer
/// reading its own request to stop the holder.
fn is_this_process(who: &Who) -> bool {
    who.pid == Some(std::process::id()) && who.host.as_deref() == Some(host_names().0.as_str())
}

/// The metadata a lock this process takes is recorded with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub token: String,
    pub host: String,
    /// The process the lock belongs to (the wrapper, or the script that ran
    /// `redlock acquire`).
    pub pid: u32,
    pub user: String,
    pub cmd: String,
    pub since_ms: u64,
    pub ttl_ms: u64,
    /// [`process_start`] of `pid`, when it can be read.
    pub started: Option<String>,
    /// This process's PID namespace ([`pid_namespace`]), when it can be read.
    pub pidns: Option<String>,
    /// How `pid` was found.
    pub pid_from: PidFrom,
    /// `--uninterruptible`.
    pub uninterruptible: bool,
    /// `--elect`: a term of a hot standby.
    pub elect: bool,
    /// `--order-key`.
    pub order_key: Option<u64>,
    /// The machine's own host name, when `REDLOCK_HOST` shows another.
    pub machine: Option<String>,
    /// `--announce`.
    pub announce: Option<String>,
    /// The other names of a run that holds several.
    pub with: Vec<String>,
}

impl Meta {
    /// Metadata of this process, for `token`, recording `cmd`.
    pub fn local(token: &str, cmd: &str, ttl: Duration) -> Self {
        let (host, machine) = host_names();
        // $USER or $LOGNAME (cron sets LOGNAME) first: looking the uid up goes through
        // NSS (files, maybe LDAP), which costs more than the rest of the wrapper's
        // start-up; metadata is for display.
        let user = ["USER", "LOGNAME"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|u| !u.is_empty()))
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::getuid())
                    .ok()
                    .flatten()
                    .map(|u| u.name)
            })
            .unwrap_or_else(|| nix::unistd::getuid().to_string());
        Meta {
            token: token.to_string(),
            host,
            pid: std::process::id(),
            user,
            cmd: cmd.to_string(),
            since_ms: crate::clock::wall_ms(),
            ttl_ms: ttl.as_millis() as u64,
            started: process_start(std::process::id()),
            pidns: pid_namespace(),
            pid_from: PidFrom::Own,
            uninterruptible: false,
            elect: false,
            order_key: None,
            machine,
            announce: None,
            with: Vec::new(),
        }
    }

    /// The metadata of one name of a run that holds several: the others it holds with.
    pub fn holding_with(mut self, with: Vec<String>) -> Self {
        self.with = with;
        self
    }

    /// This machine's own host name (`host` unless `REDLOCK_HOST` shows another).
    pub fn machine(&self) -> &str {
        self.machine.as_deref().unwrap_or(&self.host)
    }

    /// The metadata of a run that announces `value` (`--announce`).
    pub fn announcing(mut self, value: Option<String>) -> Self {
        self.announce = value;
        self
    }

    /// The metadata of a term of `--elect` (what `redlock leader` tells a leader by).
    pub fn electing(mut self, elect: bool) -> Self {
        self.elect = elect;
        self
    }

    /// The metadata of a run that refuses to be preempted (`--uninterruptible`), and
    /// of a run ordered by `order_key` (`--order-key`).
    pub fn stopping(mut self, uninterruptible: bool, order_key: Option<u64>) -> Self {
        self.uninterruptible = uninterruptible;
        self.order_key = order_key;
        self
    }

    /// The metadata of a lock held on behalf of the process `pid` (`redlock acquire`
    /// records the script that called it), found as `from` says.
    pub fn on_behalf_of(mut self, pid: u32, from: PidFrom) -> Self {
        self.pid = pid;
        self.started = process_start(pid);
        self.pid_from = from;
        self
    }

    /// Who this process is, as readers see it (a queue's waiter, a history record).
    pub fn who(&self) -> Who {
        Who {
            host: Some(self.host.clone()),
            pid: Some(self.pid),
            user: Some(self.user.clone()),
            cmd: Some(self.cmd.clone()),
        }
    }

    /// Who runs the command, for its start mark (see `scripts::started`): a JSON
    /// object with the host, pid, user, command line, ttl, the run's `fence` and its
    /// `--once-per` period (`once_per_ms`, or `once_per` and `tz` for a calendar one, as
    /// its record will say), so that a run that vanishes, or is still running, names
    /// where it ran, under which fence, for which period, and for how long its lease
    /// lasted.
    pub fn started_json(&self, fence: u64, once_per: Option<&crate::period::Period>) -> String {
        let mut who = serde_json::to_value(self.who()).unwrap_or_default();
        if let Some(fields) = who.as_object_mut() {
            fields.retain(|_, v| !v.is_null());
            fields.insert("ttl_ms".into(), self.ttl_ms.into());
            fields.insert("fence".into(), fence.into());
            if let Some(ms) = once_per.and_then(|p| p.fixed_ms()) {
                fields.insert("once_per_ms".into(), ms.into());
            }
            if let Some((unit, tz)) = once_per.and_then(|p| p.calendar_words()) {
                fields.insert("once_per".into(), unit.into());
                fields.insert("tz".into(), tz.into());
            }
        }
        who.to_string()
    }

    /// The hash's field/value pairs for a try sent at `since_ms` (wall clock): a
    /// lock's "held for" counts from the try that took it, not from the start of the
    /// wait before it.
    pub fn fields_at(&self, since_ms: u64) -> Vec<(&'static str, String)> {
        let mut fields = self.fields();
        for (name, value) in fields.iter_mut() {
            if *name == "since_ms" {
                *value = since_ms.to_string();
            }
        }
        fields
    }

    /// The hash's field/value pairs, in the order written.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![
            ("token", self.token.clone()),
            ("host", self.host.clone()),
            ("pid", self.pid.to_string()),
            ("user", self.user.clone()),
            ("cmd", self.cmd.clone()),
            ("since_ms", self.since_ms.to_string()),
            ("ttl_ms", self.ttl_ms.to_string()),
        ];
        if let Some(started) = &self.started {
            fields.push(("started", started.clone()));
        }
        if let Some(pidns) = &self.pidns {
            fields.push(("pidns", pidns.clone()));
        }
        if let Some(from) = self.pid_from.field() {
            fields.push(("pid_from", from.to_string()));
        }
        if self.uninterruptible {
            fields.push(("uninterruptible", "1".to_string()));
        }
        if self.elect {
            fields.push(("elect", "1".to_string()));
        }
        if let Some(key) = self.order_key {
            fields.push(("order_key", key.to_string()));
        }
        if let Some(machine) = &self.machine {
            fields.push(("machine", machine.clone()));
        }
        if let Some(value) = &self.announce {
            fields.push(("announce", value.clone()));
        }
        if !self.with.is_empty() {
            fields.push(("with", serde_json::json!(self.with).to_string()));
        }
        fields
    }
}

/// Which process `pid` is, as long as it lives: this boot's id and the process's start
/// time in clock ticks since boot (`/proc/PID/stat`, field 22). A pid reused by a new
/// process, or the same pid after a reboot, gives another value. `None` where `/proc`
/// cannot tell (not Linux), or the process is gone (a zombie is gone too: it only
/// waits to be reaped).
pub fn process_start(pid: u32) -> Option<String> {
    let boot = boot_id()?;
    let (state, start) = state_and_start(pid)?;
    if state == "Z" {
        return None;
    }
    Some(format!("{boot}/{start}"))
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): another machine, or this one
/// after a reboot, has another.
pub fn boot_id() -> Option<String> {
    Some(
        read_small("/proc/sys/kernel/random/boot_id")?
            .trim()
            .to_string(),
    )
}

/// The state (`R`, `S`, `T`, `Z`…) and start time (clock ticks since boot) of `pid`,
/// from `/proc/PID/stat`; `None` when it cannot be read (gone, or hidden by `hidepid`).
pub fn state_and_start(pid: u32) -> Option<(String, String)> {
    let fields = stat_fields(pid)?;
    Some((fields.first()?.clone(), fields.get(19)?.clone()))
}

/// The fields of `/proc/PID/stat` from field 3 (the state) on. The command name (field
/// 2) is in parentheses and may hold spaces: the fields are counted after its closing
/// parenthesis.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = read_small(&format!("/proc/{pid}/stat"))?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// A small file of /proc, read whole with a buffer its size: `fs::read_to_string`
/// asks its size first (0 for /proc) and reads in doubling chunks, six calls for a
/// stat line instead of two, on every run's start.
fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut buf = Vec::with_capacity(1024);
    file.read_to_end(&mut buf).ok()?;
    String::from_utf8(buf).ok()
}

/// The process a lock taken by `redlock acquire` belongs to: the nearest ancestor that
/// outlives the call. A command substitution or a pipeline runs the call in a subshell
/// (a fork of the script: the same program and command line as its parent), and
/// `timeout`, `env`, `nice`… exec it and exit with it; both end right after the call,
/// so they are passed over. Hand-written: no crate walks the process tree this way.
pub fn lasting_caller() -> u32 {
    let mut pid = nix::unistd::getppid().as_raw() as u32;
    for _ in 0..16 {
        let Some(parent) = parent_of(pid) else { break };
        let subshell = parent > 1
            && cmdline(pid).is_some()
            && cmdline(pid) == cmdline(parent)
            && exe(pid) == exe(parent);
        if !(subshell || is_exec_wrapper(pid)) || parent <= 1 {
            break;
        }
        pid = parent;
    }
    pid
}

/// Programs that run a command and end with it.
fn is_exec_wrapper(pid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    matches!(
        comm.trim(),
        "timeout"
            | "env"
            | "nice"
            | "ionice"
            | "stdbuf"
            | "nohup"
            | "setsid"
            | "chrt"
            | "taskset"
            | "time"
            | "sudo"
            | "doas"
            | "runuser"
            | "su"
            | "flock"
            | "unbuffer"
    )
}

fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

fn exe(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// This process's PID namespace (`pid:[4026531836]`), `None` where `/proc` cannot tell.
/// A pid means a process only within its namespace: containers that share the host's
/// name, systemd's `PrivatePIDs=` and CI runners each number their own processes.
pub fn pid_namespace() -> Option<String> {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests;

//! The clap definitions of both binaries: raw values only, no logic. Durations, URLs
//! and cross-field rules are checked in [`crate::config`], which names the flag at fault.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum, ValueHint};

use crate::exit::Page;

/// Environment variables read and set, for `--help`, the man pages and the README.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "REDLOCK_REDIS_URL",
        "Redis URL(s), comma-separated (default redis://127.0.0.1:6379); --redis wins",
    ),
    (
        "REDLOCK_REDIS_URL_FILE",
        "file holding the URL(s), one per line, used when no URL is given (keeps passwords out of ps)",
    ),
    (
        "REDLOCK_TLS_CA",
        "CA file for rediss:// (instead of the system roots)",
    ),
    (
        "REDLOCK_TLS_CERT",
        "client certificate for mutual TLS (with REDLOCK_TLS_KEY)",
    ),
    ("REDLOCK_TLS_KEY", "client key for mutual TLS"),
    ("REDLOCK_PREFIX", "key prefix (default redlock:)"),
    ("REDLOCK_TTL", "lock ttl (default 30s)"),
    (
        "REDLOCK_RETAIN",
        "how long a name's fence counter and history outlive its last use (default 30d)",
    ),
    (
        "REDLOCK_BUSY_EXIT_CODE",
        "exit status when the lock is busy (default 75)",
    ),
    (
        "REDLOCK_METRICS",
        "file for the run's outcome in the Prometheus text format (--metrics)",
    ),
    (
        "REDLOCK_HOST",
        "the host name recorded and shown for the run (a CI job's name in a container); the machine's own is kept for release --if-dead",
    ),
    (
        "REDLOCK_LABEL",
        "text recorded instead of the command line (--label)",
    ),
    (
        "REDLOCK_LOCAL_DIR",
        "directory of the host-local queue (--local-dir; default $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID)",
    ),
    (
        "REDLOCK_NO_LOCAL_QUEUE",
        "1/0, true/false, yes/no, on/off: wait in Redis directly, without the host-local queue",
    ),
    ("REDLOCK_KEY", "given to the command: the lock's Redis key"),
    ("REDLOCK_NAME", "given to the command: the lock name"),
    (
        "REDLOCK_TOKEN",
        "given to the command: this holder's token (the lock key's value)",
    ),
    (
        "REDLOCK_TTL_MS",
        "given to the command: the ttl in milliseconds",
    ),
    (
        "REDLOCK_SLOT",
        "given to the command with --limit: the semaphore slot held (1 to N)",
    ),
    (
        "REDLOCK_FENCE",
        "given to the command: the fencing number, larger for every acquisition",
    ),
    (
        "REDLOCK_SLOT_START",
        "given to the command with --once-per: its slot's start, Unix ms on the Redis server's clock",
    ),
    (
        "REDLOCK_ATTEMPT",
        "given to the command with --once-per or --once-id: its start in the slot or for the ID (1 first)",
    ),
    (
        "REDLOCK_FENCE_<NAME>",
        "given to the command: each --key name's fencing number (NAME: the name in upper case, other than A-Z and 0-9 as _; a name with anything but a-z, 0-9 and - also gets _x and 12 hex digits of its hash, so that two names never share a variable)",
    ),
    (
        "REDLOCK_SLOT_<NAME>",
        "given to the command: the slot held of each --limit pool among the --key names",
    ),
    (
        "REDLOCK_TOKEN_<NAME>",
        "given to the command: each --key name's token; a nested redlock-run finds the names it holds by them",
    ),
];

#[cfg(test)]
mod environment_tests {
    /// Every `REDLOCK_*` name the crate's source reads or sets is in [`super::ENVIRONMENT`]
    /// (the man pages' ENVIRONMENT, `--help` and the README are made from it).
    #[test]
    fn every_variable_the_source_names_is_documented() {
        let documented: Vec<&str> = super::ENVIRONMENT.iter().map(|(n, _)| *n).collect();
        let mut missing = std::collections::BTreeSet::new();
        let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for part in text.split("REDLOCK_").skip(1) {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    let name = format!("REDLOCK_{}", name.trim_end_matches('_'));
                    if name.len() > "REDLOCK_".len() && !documented.contains(&name.as_str()) {
                        missing.insert(name);
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in ENVIRONMENT: {missing:?}");
    }
}

fn env_help() -> String {
    let mut out =
        String::from("ENVIRONMENT (a flag wins over its variable, a variable over the default):\n");
    for (name, meaning) in ENVIRONMENT {
        out.push_str(&format!("  {name:<23} {meaning}\n"));
    }
    out
}

/// Connection options shared by every verb.
#[derive(Debug, Clone, Args)]
pub struct ConnArgs {
    /// Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path,
    /// redis+cluster://host:port[,host:port…] (Cluster), or
    /// redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel).
    /// Repeat (or comma-separate) for the Redlock algorithm over independent masters.
    #[arg(
        long = "redis",
        value_name = "URL",
        env = "REDLOCK_REDIS_URL",
        hide_env_values = true
    )]
    pub redis: Vec<String>,

    /// Read the Redis URL(s) from this file, one per line (for secrets).
    #[arg(long, value_name = "FILE", env = "REDLOCK_REDIS_URL_FILE")]
    pub redis_url_file: Option<PathBuf>,

    /// Namespace prefix of every key (no braces) [default: redlock:].
    #[arg(long, value_name = "PREFIX", env = "REDLOCK_PREFIX")]
    pub prefix: Option<String>,

    /// Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most
    /// 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub node_timeout: Option<String>,

    /// CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots).
    #[arg(long, value_name = "FILE", env = "REDLOCK_TLS_CA")]
    pub tls_ca: Option<PathBuf>,

    /// Client certificate, PEM, for mutual TLS (with --tls-key).
    #[arg(long, value_name = "FILE", env = "REDLOCK_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,

    /// Client private key, PEM, for mutual TLS (with --tls-cert).
    #[arg(long, value_name = "FILE", env = "REDLOCK_TLS_KEY")]
    pub tls_key: Option<PathBuf>,

    /// Do not verify the server's TLS certificate or name (tests only; warns every run).
    #[arg(long)]
    pub tls_insecure_skip_verify: bool,
}

/// How a run that finds the lock busy waits, and what it exits with when it gives up
/// (`redlock-run` and `redlock acquire`).
#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
    /// How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to
    /// 365 days, or "forever" [default: 0; with --once-id: forever].
    #[arg(long, short = 'w', value_name = "DURATION", allow_hyphen_values = true)]
    pub wait: Option<String>,

    /// Exit status when the lock is busy (0-255; with 0, busy and waiting are not
    /// reported off a terminal) [default: 75].
    #[arg(
        long,
        short = 'E',
        value_name = "CODE",
        env = "REDLOCK_BUSY_EXIT_CODE",
        allow_hyphen_values = true
    )]
    pub busy_exit_code: Option<String>,
}

/// Options of `redlock-run` and `redlock run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Name of the lock (any non-empty string). Give it several times to hold several
    /// names at once (up to 16): the command runs only while the run holds every one,
    /// and a run that cannot have them all holds none while it waits.
    #[arg(long, short = 'k', value_name = "NAME", required = true, action = ArgAction::Append)]
    pub key: Vec<OsString>,

    #[command(flatten)]
    pub conn: ConnArgs,

    /// Lease time, renewed while the command runs; 100ms to 365 days (e.g. 30s, 2m) [default: 30s].
    #[arg(
        long,
        value_name = "DURATION",
        env = "REDLOCK_TTL",
        allow_hyphen_values = true
    )]
    pub ttl: Option<String>,

    #[command(flatten)]
    pub waiting: WaitArgs,

    /// Renewal interval, 1ms up to below the ttl [default: ttl/3].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub renew_every: Option<String>,

    /// Grace between SIGTERM and SIGKILL when the command must stop, 0 to 365 days
    /// (it must fit in the ttl) [default: ttl/6, at most 5s].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub kill_after: Option<String>,

    /// What to do when the lock is lost while the command runs.
    #[arg(long, value_enum, value_name = "POLICY", default_value_t = OnLost::Kill)]
    pub on_lost: OnLost,

    /// Keep the lock this long after the start even if the command ends sooner
    /// (cron de-duplication across hosts whose clocks differ), up to 365 days.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub hold_min: Option<String>,

    /// Never hold the lock longer than this (1ms to 365 days): renewals stop and the
    /// command is stopped as for a lost lock (see --on-lost), exit 124.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub max_hold: Option<String>,

    /// Write lifecycle events as JSON lines to this file (appended), or "-" for stderr.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Write the run's outcome in the Prometheus text format to this file (replaced
    /// whole, at the start and the end of the run), for node_exporter's textfile
    /// collector; one file per lock name.
    #[arg(long, value_name = "FILE", env = "REDLOCK_METRICS", value_hint = ValueHint::FilePath)]
    pub metrics: Option<PathBuf>,

    /// Run once per slot of this period across all hosts: a length (1s to 365 days in
    /// ms, s, m, h, d, e.g. 1m, 1h, 1d: the slot is the Redis server's time rounded down
    /// to a multiple of it from the Unix epoch, UTC; weeks, months and years are refused:
    /// give week or month with --tz), or a calendar period, day, week or month, in --tz's
    /// zone (a day from local midnight, 23 or 25 hours across DST; an ISO week from
    /// Monday; a month from the 1st), taken from the Redis server's time whatever the
    /// host clocks say. A try whose slot already had a run exiting 0, or whose slot's run
    /// is in progress, is skipped: busy exit status, silent (said with --verbose); a
    /// failed run leaves the slot open for the next try.
    #[arg(long, value_name = "PERIOD", allow_hyphen_values = true)]
    pub once_per: Option<String>,

    /// With --once-per day, week or month: the time zone of the slots, an IANA name
    /// (Europe/Berlin, America/New_York; default UTC), from the system's zoneinfo or the
    /// database built in (localtime, posixrules, posix/..., right/... and paths are
    /// refused). Every host of the job must give the same zone.
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,

    /// With --once-per: what a slot does when its run vanished (started, then its host
    /// or wrapper died, so its end was never recorded). skip: the slot stays closed (it
    /// may have succeeded; at most once). rerun: the slot is open again and the next
    /// try on any host runs it (a waiting host as soon as the vanished run's lease
    /// ends), up to --max-attempts starts per slot.
    #[arg(long, value_name = "WHAT", value_enum)]
    pub if_vanished: Option<crate::policy::Vanished>,

    /// Run once per ID (e.g. a release tag), across hosts and time: the first run for
    /// this name and ID runs the command; runs of the same ID that come meanwhile wait
    /// for it (--wait defaults to forever); when it exits 0 they exit 0 without running
    /// (one line says who ran it), when it fails one of them runs it (up to
    /// --max-attempts, 3); any later run of the ID exits 0 at once. The record is kept
    /// --retain. Not with --once-per or --limit.
    #[arg(long, value_name = "ID")]
    pub once_id: Option<String>,

    /// With --once-per: spread a fleet's tries over the first D of each slot (D shorter
    /// than the period). The try first fixes its slot from the Redis server's time, then
    /// waits an offset in [0, D) drawn from this host, the name and the slot (different
    /// hosts spread; each slot draws again, so the host that runs the job rotates), then
    /// tries for that slot only: it never runs on behalf of the next one. The run starts
    /// up to D later.
    #[arg(long, value_name = "D")]
    pub splay: Option<String>,

    /// With --once-per: the most runs that may start in one slot (failed and vanished
    /// ones count, in the run history: --history must keep at least N); the next try is
    /// skipped with the reason attempts_exhausted. Default: 3 with --if-vanished rerun,
    /// no limit otherwise.
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<String>,

    /// Wait in a first-come, first-served queue: the lock goes to the longest waiter,
    /// and the waiting line says your place ("you are #2 of 4"). Every run on the name
    /// must give --fair. One server, Cluster or Sentinel.
    #[arg(long)]
    pub fair: bool,

    /// Let up to N runs hold the lock at once (a semaphore, 1 to 100): each holds one
    /// slot (REDLOCK_SLOT) with its own token, renewals and lost-lock detection. Every
    /// run on the name must give the same N. One server, Cluster or Sentinel. With
    /// several --key names, say which: --limit NAME=N (that name is a pool of N).
    #[arg(long, value_name = "N", allow_hyphen_values = true, action = ArgAction::Append)]
    pub limit: Vec<String>,

    /// Hold the name in shared mode: any number of --shared runs hold it at once, and a
    /// run without --shared takes it exclusively, never beside any holder. Writers go
    /// first: once an exclusive run waits, new shared runs wait behind it. Each shared
    /// holder has its own token, lease and fence. One server, Cluster or Sentinel. With
    /// several --key names, say which: --shared NAME.
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "", action = ArgAction::Append)]
    pub shared: Vec<String>,

    /// The newest run wins (CI): when this run starts waiting, every older run waiting
    /// on the name exits 73 without running (superseded). running: the holder is also
    /// asked to stop (it gets --preempt-signal, SIGKILL after its --kill-after, releases
    /// and exits 80) and this run starts after its release. Needs --wait; every run on the
    /// name must give --supersede (with --order-key, all of them). One server, Cluster or
    /// Sentinel.
    #[arg(long, value_name = "WHICH", value_enum)]
    pub supersede: Option<crate::policy::Supersede>,

    /// With --supersede: "newest" is the largest N (a pipeline or run number that a
    /// retry keeps, or the commit time; not Jenkins' or buildbot's BUILD_NUMBER, new for a
    /// rebuild; 0 to 2^53-1), not the latest arrival; a run whose N is lower than one
    /// that already started on the name exits 73 without running (outdated).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub order_key: Option<String>,

    /// Refuse to be preempted (--supersede running, redlock preempt): a newer run waits
    /// for this one to end instead.
    #[arg(long)]
    pub uninterruptible: bool,

    /// The signal the command gets when a newer run preempts it (TERM, INT, HUP, USR1,
    /// ...) [default: TERM]; SIGKILL follows after --kill-after.
    #[arg(long, value_name = "SIGNAL")]
    pub preempt_signal: Option<String>,

    /// Hot standby: wait for the lock for as long as this runs, run the command while
    /// holding it, and when the lock is lost (the command is stopped as for any lost
    /// lock) contend again instead of exiting 79. Each term has a new fencing number.
    /// Exits on SIGTERM/SIGINT (the command is stopped, the lock released and the next
    /// standby woken), on a usage or auth error, or after --elect-max-terms. Not with
    /// --once-per, --once-id, --limit, --supersede, --hold-min, --wait.
    #[arg(long)]
    pub elect: bool,

    /// With --elect: what the leader does when its command exits by itself. resign:
    /// release, back off 2 renewal intervals, contend again; restart: run it again,
    /// keeping the lock, after a back-off of 1s doubling to 60s; exit: release and exit
    /// with its status [default: resign].
    #[arg(long, value_name = "WHAT", value_enum, requires = "elect")]
    pub on_exit: Option<crate::policy::OnExit>,

    /// With --elect: exit after N terms (1 to 1000000), with the last term's status.
    #[arg(long, value_name = "N", requires = "elect", allow_hyphen_values = true)]
    pub elect_max_terms: Option<String>,

    /// A value recorded beside the holder (up to 256 characters; e.g. the leader's
    /// address), shown by `redlock leader` and `redlock status`.
    #[arg(long, value_name = "VALUE")]
    pub announce: Option<String>,

    /// Create this file (atomically, holding the fencing number) when the command starts
    /// under the lock, and remove it before the command is stopped or when it ends: a
    /// readiness probe that says "this copy leads".
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub ready_file: Option<PathBuf>,

    #[command(flatten)]
    pub retain: RetainArg,

    /// How many past runs the lock's history keeps (`redlock history`, `redlock
    /// status`), 0 to 1000; 0 records nothing; with --once-per, at least --max-attempts
    /// [default: 20].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub history: Option<String>,

    /// Record only the program name in the holder metadata, not its arguments.
    #[arg(long)]
    pub hide_args: bool,

    /// Record TEXT in the holder metadata and the history instead of the command line
    /// (for a command whose arguments carry secrets the masking does not know);
    /// wins over --hide-args.
    #[arg(long, value_name = "TEXT", env = "REDLOCK_LABEL")]
    pub label: Option<String>,

    #[command(flatten)]
    pub local: LocalArgs,

    /// Print nothing but errors (no waiting line, no busy note); a vanished run's one
    /// line (told once in the fleet) is still printed.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say what happens: connect retries, acquire, renewals, release.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// The command to run and its arguments (after --).
    #[arg(last = true, value_name = "COMMAND", value_hint = ValueHint::CommandWithArguments)]
    pub command: Vec<OsString>,
}

/// The host-local queue in front of Redis (`redlock-run`, `redlock status`).
#[derive(Debug, Clone, Args)]
pub struct LocalArgs {
    /// Directory of the host-local queue: runs that wait queue here first, and only the
    /// first of each host contends in Redis; share one between users to queue them
    /// together. The host also keeps here what it learned of its servers (each one's run
    /// ID, for the lock-delay; a Cluster's slot map; a Sentinel master's address) [env: REDLOCK_LOCAL_DIR] [default:
    /// $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID].
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub local_dir: Option<PathBuf>,

    /// Wait in Redis directly, without the host-local queue (every waiting run holds
    /// a Redis connection) [env: REDLOCK_NO_LOCAL_QUEUE=1|0, true|false, yes|no,
    /// on|off]. A flag on the command line wins over both variables; from the same
    /// place, this wins over the directory.
    #[arg(long)]
    pub no_local_queue: bool,
}

/// What `--on-lost` can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLost {
    /// SIGTERM the command's process group, SIGKILL after --kill-after; exit 79.
    Kill,
    /// Warn on stderr and let the command finish without the lock; exit 79.
    Keep,
}

/// `redlock-run`: run a command while holding a lock in Redis.
#[derive(Debug, Parser)]
#[command(
    name = "redlock-run",
    version,
    about = "Run a command while holding a distributed lock in Redis",
    long_about = "Run a command while holding a distributed lock in Redis.\n\nThe lock is taken with SET NX PX, renewed while the command runs, and released when it ends. If the lock cannot be renewed in time, the command's process group is stopped before anyone else can take the lock.",
    override_usage = "redlock-run [OPTIONS] --key NAME -- COMMAND [ARGS]...",
    after_long_help = after_help(),
    after_help = "See --help for exit statuses and environment variables."
)]
pub struct RunCli {
    #[command(flatten)]
    pub run: RunArgs,
}

/// `redlock`: run, inspect and clear locks.
#[derive(Debug, Parser)]
#[command(
    name = "redlock",
    version,
    about = "Distributed locks in Redis for commands, cron jobs and CI",
    after_long_help = env_help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `--node-timeout` of a verb that has no ttl: its default is the default ttl's
/// (`DEFAULT_TTL` / 15 = 2s), which "ttl/15" would not tell (a unit test holds it).
fn without_ttl(arg: clap::Arg) -> clap::Arg {
    arg.help("Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]")
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command while holding a lock (same as redlock-run).
    #[command(
        after_long_help = after_help(),
        override_usage = "redlock run [OPTIONS] --key NAME -- COMMAND [ARGS]..."
    )]
    Run(Box<RunArgs>),
    /// Show whether locks are held, and by whom.
    #[command(
        after_long_help = verb_help(Page::Status),
        mut_arg("node_timeout", without_ttl)
    )]
    Status(StatusArgs),
    /// List the held locks under the prefix.
    #[command(
        after_long_help = verb_help(Page::List),
        mut_arg("node_timeout", without_ttl)
    )]
    List(ListArgs),
    /// Release a lock: with --token only that holder's, with --force whoever holds it.
    #[command(
        after_long_help = verb_help(Page::Release),
        mut_arg("node_timeout", without_ttl)
    )]
    Release(ReleaseArgs),
    /// Take a lock and print its token (for scripts that cannot wrap one command).
    #[command(after_long_help = verb_help(Page::Acquire))]
    Acquire(AcquireArgs),
    /// Extend a lock held with a token.
    #[command(after_long_help = verb_help(Page::Extend))]
    Extend(ExtendArgs),
    /// Wait until a lock is free, without taking it.
    #[command(
        after_long_help = verb_help(Page::Wait),
        mut_arg("node_timeout", without_ttl)
    )]
    Wait(WaitVerbArgs),
    /// Show a lock's last runs (recorded by redlock-run), newest first.
    #[command(
        after_long_help = verb_help(Page::History),
        mut_arg("node_timeout", without_ttl)
    )]
    History(HistoryArgs),
    /// Delete a free lock's run history, fence counter and --order-key mark now,
    /// instead of --retain after its last use (refused while the lock is held or
    /// waited for).
    #[command(
        after_long_help = verb_help(Page::Forget),
        mut_arg("node_timeout", without_ttl)
    )]
    Forget(ForgetArgs),
    /// Check the Redis a lock depends on: eviction, replica role, persistence, ACL,
    /// clock offset, latency against the ttl.
    ///
    /// Connects to every node given and prints one line per finding, grouped per node:
    /// a severity (ok, info, warning, error), what was found and why it matters, and
    /// what to do. It writes no keys. Checks the user's ACL does not allow are reported as
    /// "could not check", not failed.
    #[command(after_long_help = verb_help(Page::Doctor))]
    Doctor(DoctorArgs),
    /// A live view of the locks under the prefix: holders, waiters, slots, last runs.
    #[command(
        after_long_help = verb_help(Page::Top),
        mut_arg("node_timeout", without_ttl)
    )]
    Top(TopArgs),
    /// Ask a lock's holder, wherever it runs, to stop gracefully (its command gets
    /// --preempt-signal, SIGKILL after its --kill-after; it releases and exits 80).
    ///
    /// Unlike release --force, the lock stays the holder's until its command has
    /// stopped: never two holders. An --uninterruptible holder is refused (75).
    #[command(
        after_long_help = verb_help(Page::Preempt),
        mut_arg("node_timeout", without_ttl)
    )]
    Preempt(PreemptArgs),
    /// Who leads an --elect name: host, pid, term (its fencing number), since, its
    /// --announce value; --watch prints a line per change, --is-me answers with the
    /// exit status (a readiness probe).
    #[command(
        after_long_help = verb_help(Page::Leader),
        mut_arg("node_timeout", without_ttl)
    )]
    Leader(LeaderArgs),
    /// Write man pages and shell completions (for packagers and the repository).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Lock names.
    #[arg(required = true, value_name = "NAME")]
    pub keys: Vec<OsString>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON (one object per line).
    #[arg(long)]
    pub json: bool,
    /// Directory of the host-local queue whose waiters to count, as the runs were given
    /// it [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID].
    #[arg(
        long,
        value_name = "DIR",
        env = "REDLOCK_LOCAL_DIR",
        value_hint = ValueHint::DirPath
    )]
    pub local_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct TopArgs {
    /// Glob over lock names (* ? [..] as in Redis; \ escapes) [default: *].
    #[arg(value_name = "PATTERN")]
    pub pattern: Option<OsString>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Refresh every DURATION, 100ms to 1h [default: 1s].
    #[arg(
        short = 'n',
        long = "interval",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub every: Option<String>,
    /// Print one frame as text and exit (for scripts; no terminal needed).
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Glob over lock names (* ? [..] as in Redis; \ escapes) [default: *].
    #[arg(value_name = "PATTERN")]
    pub pattern: Option<OsString>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON (one object per line).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReleaseArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// Release only if this token holds the lock.
    #[arg(long, value_name = "TOKEN", conflicts_with = "force")]
    pub token: Option<String>,
    /// Remove the lock whoever holds it (says whose lock it was).
    #[arg(long)]
    pub force: bool,
    /// Remove the lock only on proof that its holder is gone: its process recorded exactly
    /// (not `acquire`'s guess), on this machine (host name and boot id), in this PID
    /// namespace, and gone (no such process, a zombie, or a reused pid). Anything else,
    /// a --hold-min keep included, is a refusal (exit 75). On a semaphore without
    /// --slot, every slot whose holder is proved gone.
    #[arg(long, conflicts_with_all = ["force", "token"])]
    pub if_dead: bool,
    /// The slot of a semaphore (--limit) to release, 1 to N [default: --token: the slot
    /// the token holds; --if-dead: every slot; --force asks for it].
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub slot: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LeaderArgs {
    /// Lock name (the --key of the --elect runs).
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// Print a line (with --json, a JSON line) now and at every change of leader, until
    /// interrupted; changes are seen within 250ms.
    #[arg(long, conflicts_with = "is_me")]
    pub watch: bool,
    /// Exit 0 when this host leads, 1 when another does or none does (69 when Redis
    /// cannot be reached): a readiness probe. The host is REDLOCK_HOST when set, else
    /// the machine's name, as the runs record it.
    #[arg(long)]
    pub is_me: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct PreemptArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// The signal the command gets (TERM, INT, HUP, ...) [default: the holder's
    /// --preempt-signal].
    #[arg(long, value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// Wait until the holder has stopped and released, at most DURATION (1ms to 365
    /// days); 75 when it still holds the lock then.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub wait: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct AcquireArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// Lease time; the lock expires unless extended (e.g. 5m), 100ms to 365 days
    /// [default: 30s].
    #[arg(
        long,
        value_name = "DURATION",
        env = "REDLOCK_TTL",
        allow_hyphen_values = true
    )]
    pub ttl: Option<String>,
    #[command(flatten)]
    pub waiting: WaitArgs,
    #[command(flatten)]
    pub retain: RetainArg,
    /// The process the lock belongs to (e.g. `$$`, the calling script): with it,
    /// `redlock release --if-dead` removes the lock once that process is gone; without
    /// it, the caller shown is a guess from the process tree and --if-dead refuses.
    #[arg(long, value_name = "PID", allow_hyphen_values = true)]
    pub holder_pid: Option<String>,
    /// Take a share of the name (see `redlock-run --shared`): release it with
    /// `redlock release NAME --token T`, renew it with `redlock extend`.
    #[arg(long)]
    pub shared: bool,

    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON (token, key, ttl_ms).
    #[arg(long)]
    pub json: bool,
    /// No progress note while waiting.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--retain`, shared by the verbs that take a lock.
#[derive(Debug, Clone, Args)]
pub struct RetainArg {
    /// How long the name's fence counter and run history are kept after its last use
    /// (1s to 365 days), refreshed by every acquisition and release; a name unused that
    /// long leaves nothing in Redis. With --once-per, at least twice the period
    /// [default: 30d].
    #[arg(
        long,
        value_name = "DURATION",
        env = "REDLOCK_RETAIN",
        allow_hyphen_values = true
    )]
    pub retain: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ForgetArgs {
    /// Lock names.
    #[arg(required = true, value_name = "NAME")]
    pub keys: Vec<OsString>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ExtendArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// The token printed by `redlock acquire`.
    #[arg(long, value_name = "TOKEN")]
    pub token: String,
    /// New time to live from now [default: 30s].
    #[arg(
        long,
        value_name = "DURATION",
        env = "REDLOCK_TTL",
        allow_hyphen_values = true
    )]
    pub ttl: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON (name, key, token, ttl_ms) when extended.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct WaitVerbArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// Give up after this long (up to 365 days, or "forever") [default: forever].
    #[arg(long, short = 't', value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Lock name.
    #[arg(value_name = "NAME")]
    pub key: OsString,
    /// Show at most this many runs [default: all that are kept].
    #[arg(long, short = 'n', value_name = "N", allow_hyphen_values = true)]
    pub limit: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print JSON (one object: the name and its runs).
    #[arg(long, conflicts_with = "timeline")]
    pub json: bool,
    /// Draw the runs: one row per host, time across (UTC), each run a bar shaded by how
    /// it ended; NAME may be a pattern (nightly-*) [colours on a terminal, NO_COLOR
    /// honoured; the width of the terminal, else $COLUMNS, else 80].
    #[arg(long)]
    pub timeline: bool,
    /// With --timeline: how far back to draw, 1m to 365 days [default: from the oldest
    /// run shown to now, at a round column width].
    #[arg(
        long,
        value_name = "DURATION",
        requires = "timeline",
        allow_hyphen_values = true
    )]
    pub since: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Lock name whose keys are checked (ACL key patterns, Cluster slot) [default: doctor].
    #[arg(long, short = 'k', value_name = "NAME")]
    pub key: Option<OsString>,
    /// The ttl the latency is judged against, 100ms to 365 days [default: 30s].
    #[arg(
        long,
        value_name = "DURATION",
        env = "REDLOCK_TTL",
        allow_hyphen_values = true
    )]
    pub ttl: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print one JSON object (nodes, findings, worst, counts, exit).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Directory for the man pages.
    #[arg(long, default_value = "man")]
    pub man: PathBuf,
    /// Directory for the completions.
    #[arg(long, default_value = "completions")]
    pub completions: PathBuf,
}

/// A verb's long help's closing section: its exit statuses.
fn verb_help(page: Page) -> String {
    format!(
        "EXIT STATUS:\n{}",
        crate::exit::table_text(&crate::exit::verb_table(page))
    )
}

/// The long help's closing section: exit statuses and environment.
fn after_help() -> String {
    format!(
        "EXIT STATUS:\n{}\n{}",
        crate::exit::table_text(&crate::exit::table()),
        env_help()
    )
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// (issue 60, item 6) `--node-timeout`'s default is "ttl/15, at most 2s" only where
    /// the verb has a ttl; the verbs without one connect with 2s. Every verb's `--help`
    /// (and so its man page) said "ttl/15".
    #[test]
    fn the_node_timeout_default_names_a_ttl_only_where_there_is_one() {
        let cli = super::Cli::command();
        let mut seen = 0;
        for verb in cli.get_subcommands() {
            let arg = |id: &str| verb.get_arguments().find(|a| a.get_id() == id);
            let Some(timeout) = arg("node_timeout") else {
                continue;
            };
            seen += 1;
            let help = timeout
                .get_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let has_ttl = arg("ttl").is_some();
            assert_eq!(
                help.contains("ttl/15"),
                has_ttl,
                "redlock {}: --node-timeout says {help:?}",
                verb.get_name()
            );
            if !has_ttl {
                assert!(
                    help.contains("[default: 2s]"),
                    "{}: {help}",
                    verb.get_name()
                );
            }
        }
        assert!(seen >= 12, "{seen} verbs with --node-timeout");
        let default = crate::timing::default_node_timeout(crate::config::DEFAULT_TTL, 1);
        assert_eq!(default, std::time::Duration::from_secs(2));
    }
}

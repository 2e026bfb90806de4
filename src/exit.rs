//! The exit-code table: the one place that defines what each exit status means.
//!
//! `--help`, the man pages and the README are made from [`table`]; nothing else in the
//! crate writes a numeric exit status. Child codes pass through unchanged (0–255), a child
//! killed by signal N gives 128+N, and the tool's own outcomes use the sysexits range so
//! that they stay clear of the shell's 126/127 and of the signal range.

use std::fmt::Write as _;

/// Exit statuses produced by the tool itself (the child's own status is passed through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Usage error: bad flag, bad duration, bad key name, bad URL, missing command.
    Usage,
    /// The lock was busy and not acquired within `--wait` (changeable: `--busy-exit-code`).
    Busy,
    /// Redis could not be reached (refused, timed out, DNS, too few nodes up).
    Unreachable,
    /// Redis rejected the credentials or the ACL forbids a command (WRONGPASS, NOAUTH, NOPERM).
    Auth,
    /// Redis answered with an error: read-only replica, out of memory, a key that is not a
    /// lock, a protocol error.
    Redis,
    /// The lock was lost while the command ran (renewal found another token, no key, or the
    /// lease ran out while Redis was unreachable).
    Lost,
    /// `--max-hold` ran out: the command was stopped (as `timeout(1)` does, 124).
    MaxHold,
    /// `--supersede`: a newer run on the name made this one moot before it ran
    /// (superseded while it waited, or `--order-key` older than one already started).
    Superseded,
    /// `--supersede running`, `redlock preempt`: the command was asked to stop for a
    /// newer run, stopped, and the lock released.
    Preempted,
    /// An internal error of redlock itself (please report it).
    Internal,
    /// The command was found but could not be executed (permissions, not a program).
    CannotExecute,
    /// The command was not found.
    NotFound,
}

impl Code {
    /// Every code, in the documented order (by value).
    pub const ALL: [Code; 12] = [
        Code::Usage,
        Code::Unreachable,
        Code::Internal,
        Code::Superseded,
        Code::Busy,
        Code::Redis,
        Code::Auth,
        Code::Lost,
        Code::Preempted,
        Code::MaxHold,
        Code::CannotExecute,
        Code::NotFound,
    ];

    /// The numeric status for this outcome.
    pub const fn value(self) -> u8 {
        match self {
            Code::Usage => 64,
            Code::Busy => 75,
            Code::Unreachable => 69,
            Code::Auth => 77,
            Code::Redis => 76,
            Code::Lost => 79,
            Code::MaxHold => 124,
            Code::Superseded => 73,
            Code::Preempted => 80,
            Code::Internal => 70,
            Code::CannotExecute => 126,
            Code::NotFound => 127,
        }
    }

    /// What the status means, for the documented table.
    pub const fn meaning(self) -> &'static str {
        match self {
            Code::Usage => {
                "usage error: bad option, duration, key name, URL, or no command after --"
            }
            Code::Unreachable => {
                "Redis unreachable: connection refused or timed out, or too few nodes answered"
            }
            Code::Internal => "internal error in redlock (please report it)",
            Code::Busy => {
                "busy: the lock was held by someone else for all of --wait (see --busy-exit-code)"
            }
            Code::Redis => {
                "Redis error: read-only replica, out of memory, key is not a lock, protocol error"
            }
            Code::Auth => {
                "authentication or permission refused by Redis (WRONGPASS, NOAUTH, NOPERM)"
            }
            Code::Lost => {
                "the lock was lost while the command ran; the command was stopped (see --on-lost)"
            }
            Code::MaxHold => {
                "--max-hold ran out: the lock was given up and the command stopped (see --on-lost)"
            }
            Code::Superseded => {
                "superseded or outdated (--supersede): a newer run on the name made this one moot; the command did not run"
            }
            Code::Preempted => {
                "preempted (--supersede running, redlock preempt): the command was asked to stop for a newer run, stopped, and the lock released"
            }
            Code::CannotExecute => "the command was found but cannot be executed",
            Code::NotFound => "the command was not found",
        }
    }
}

/// One row of the documented table.
pub struct Row {
    pub status: String,
    pub meaning: &'static str,
}

/// The exit-status table of `redlock-run` / `redlock run`, in the order documented: the
/// command's own statuses, then every [`Code`].
pub fn table() -> Vec<Row> {
    let passed_through = [
        (
            "0-255",
            "the command's own exit status, passed through unchanged",
        ),
        (
            "128+N",
            "the command was killed by signal N (e.g. 130 = SIGINT, 137 = SIGKILL, 143 = SIGTERM)",
        ),
    ];
    let own = passed_through.iter().map(|(status, meaning)| Row {
        status: status.to_string(),
        meaning,
    });
    let tool = Code::ALL.iter().map(|code| Row {
        status: code.value().to_string(),
        meaning: code.meaning(),
    });
    own.chain(tool).collect()
}

/// The tool's pages: the wrapper, `redlock` itself and each verb. Every table keyed by
/// a page (exit statuses, man-page examples, SEE ALSO) matches on this, so a page
/// without its row does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Run,
    Redlock,
    Status,
    List,
    Release,
    Acquire,
    Extend,
    Wait,
    History,
    Forget,
    Doctor,
    Top,
    Preempt,
    Leader,
}

impl Page {
    pub const ALL: [Page; 14] = [
        Page::Run,
        Page::Redlock,
        Page::Status,
        Page::List,
        Page::Release,
        Page::Acquire,
        Page::Extend,
        Page::Wait,
        Page::History,
        Page::Forget,
        Page::Doctor,
        Page::Top,
        Page::Preempt,
        Page::Leader,
    ];

    /// The verb's name (`run` for the wrapper, `redlock` for the tool's own page).
    pub const fn verb(self) -> &'static str {
        match self {
            Page::Run => "run",
            Page::Redlock => "redlock",
            Page::Status => "status",
            Page::List => "list",
            Page::Release => "release",
            Page::Acquire => "acquire",
            Page::Extend => "extend",
            Page::Wait => "wait",
            Page::History => "history",
            Page::Forget => "forget",
            Page::Doctor => "doctor",
            Page::Top => "top",
            Page::Preempt => "preempt",
            Page::Leader => "leader",
        }
    }

    /// The man page's name.
    pub fn man(self) -> String {
        match self {
            Page::Redlock => "redlock".to_string(),
            page => format!("redlock-{}", page.verb()),
        }
    }

    /// The page of a verb named `verb`.
    pub fn of(verb: &str) -> Option<Page> {
        Page::ALL.into_iter().find(|p| p.verb() == verb)
    }
}

/// The exit statuses of one verb of `redlock` (its man page and `--help`): what it
/// exits with itself, then the tool's error codes. `run` and `redlock` have [`table`].
/// (Long because it is a table: one row per verb's own status.)
pub fn verb_table(page: Page) -> Vec<Row> {
    let own: &[(&str, &str)] = match page {
        Page::Run | Page::Redlock => return table(),
        Page::Status => &[
            ("0", "every named lock is held"),
            ("1", "a named lock is free"),
        ],
        Page::List => &[("0", "the held locks were listed (none is fine)")],
        Page::Release => &[
            ("0", "released (--token) or removed (--force, --if-dead)"),
            ("1", "--force, --if-dead: the lock was already free"),
            (
                "75",
                "--if-dead: the holder is alive, on another host or in another PID namespace; nothing released",
            ),
            (
                "79",
                "--token: that token no longer holds the lock; nothing released",
            ),
        ],
        Page::Acquire => &[
            ("0", "acquired; the token is printed"),
            ("75", "busy for all of --wait (see --busy-exit-code)"),
            ("128+N", "signal N ended the wait; nothing is held"),
        ],
        Page::Wait => &[
            (
                "0",
                "the lock is free (now, or it was released or expired; a semaphore: no slot held)",
            ),
            ("75", "still held when --timeout ran out"),
            ("128+N", "signal N ended the wait"),
        ],
        Page::History => &[("0", "the runs were listed (none recorded is fine)")],
        Page::Top => &[(
            "0",
            "quit with q, Esc or Ctrl-C, or --once printed its frame",
        )],
        Page::Preempt => &[
            (
                "0",
                "the holder was asked to stop (with --wait: it stopped and released), or the lock is free",
            ),
            (
                "75",
                "refused: the holder is --uninterruptible or another client's; or with --wait, it still held the lock",
            ),
        ],
        Page::Leader => &[
            (
                "0",
                "said who leads (none is fine); --is-me: this host leads (--watch runs until a signal ends it: 128+N)",
            ),
            (
                "1",
                "no --elect run holds the name (a plain lock, a semaphore, another client's key: said what it is); --is-me: another host leads, or none does",
            ),
        ],
        Page::Forget => &[
            ("0", "forgotten (or nothing was kept)"),
            (
                "75",
                "a name is in use (held, or waited for); it was left as it is",
            ),
        ],
        Page::Doctor => &[
            ("0", "no finding at warning or worse (ok and info only)"),
            ("1", "the worst finding is a warning"),
            ("2", "at least one finding is an error"),
        ],
        Page::Extend => &[
            ("0", "extended"),
            (
                "79",
                "that token no longer holds the lock (expired, released or taken)",
            ),
        ],
    };
    let errors = [
        Code::Usage,
        Code::Unreachable,
        Code::Internal,
        Code::Redis,
        Code::Auth,
    ];
    let own = own.iter().map(|(status, meaning)| Row {
        status: status.to_string(),
        meaning,
    });
    let tool = errors.iter().map(|code| Row {
        status: code.value().to_string(),
        meaning: code.meaning(),
    });
    own.chain(tool).collect()
}

/// A table as aligned plain text (for `--help`).
pub fn table_text(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        let _ = writeln!(out, "  {:<6} {}", row.status, row.meaning);
    }
    out
}

/// The table in Markdown (for the README; a test keeps the README in step).
pub fn table_markdown() -> String {
    let mut out = String::from("| status | meaning |\n| --- | --- |\n");
    for row in table() {
        let _ = writeln!(out, "| {} | {} |", row.status, row.meaning);
    }
    out
}

/// Exit status of `redlock status` when a named lock is free, and of
/// `redlock release --force` when there was nothing to remove (0 otherwise).
pub const STATUS_FREE: u8 = 1;

/// The status for a child killed by signal `signal`.
pub fn from_signal(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_table_once_in_order() {
        let values: Vec<u8> = Code::ALL.iter().map(|c| c.value()).collect();
        let mut sorted = values.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(values, sorted, "distinct and in order");
        for code in Code::ALL {
            let text = code.value().to_string();
            let rows = table().iter().filter(|r| r.status == text).count();
            assert_eq!(rows, 1, "{code:?} ({text}) must have exactly one row");
        }
    }

    #[test]
    fn tool_codes_avoid_the_signal_range_and_clap_default() {
        for code in [Code::Usage, Code::Busy, Code::Unreachable, Code::Auth] {
            assert!(code.value() < 128 && code.value() != 2 && code.value() != 1);
        }
        assert_eq!(from_signal(9), 137);
        assert_eq!(from_signal(2), 130);
    }
}

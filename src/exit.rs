//! The exit-code table: the one place that defines what each exit status means.
//!
//! `--help`, the man pages and the README are made from [`TABLE`]; nothing else in the
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
    /// An internal error of redlock itself (please report it).
    Internal,
    /// The command was found but could not be executed (permissions, not a program).
    CannotExecute,
    /// The command was not found.
    NotFound,
}

impl Code {
    /// The numeric status for this outcome.
    pub const fn value(self) -> u8 {
        match self {
            Code::Usage => 64,
            Code::Busy => 75,
            Code::Unreachable => 69,
            Code::Auth => 77,
            Code::Redis => 76,
            Code::Lost => 79,
            Code::Internal => 70,
            Code::CannotExecute => 126,
            Code::NotFound => 127,
        }
    }
}

/// One row of the documented table.
pub struct Row {
    pub status: &'static str,
    pub meaning: &'static str,
}

/// The exit-status table of `redlock-run` / `redlock run`, in the order documented.
pub const TABLE: &[Row] = &[
    Row {
        status: "0-255",
        meaning: "the command's own exit status, passed through unchanged",
    },
    Row {
        status: "128+N",
        meaning: "the command was killed by signal N (e.g. 130 = SIGINT, 137 = SIGKILL, 143 = SIGTERM)",
    },
    Row {
        status: "64",
        meaning: "usage error: bad option, duration, key name, URL, or no command after --",
    },
    Row {
        status: "69",
        meaning: "Redis unreachable: connection refused or timed out, or too few nodes answered",
    },
    Row {
        status: "70",
        meaning: "internal error in redlock (please report it)",
    },
    Row {
        status: "75",
        meaning: "busy: the lock was held by someone else for all of --wait (see --busy-exit-code)",
    },
    Row {
        status: "76",
        meaning: "Redis error: read-only replica, out of memory, key is not a lock, protocol error",
    },
    Row {
        status: "77",
        meaning: "authentication or permission refused by Redis (WRONGPASS, NOAUTH, NOPERM)",
    },
    Row {
        status: "79",
        meaning: "the lock was lost while the command ran; the command was stopped (see --on-lost)",
    },
    Row {
        status: "126",
        meaning: "the command was found but cannot be executed",
    },
    Row {
        status: "127",
        meaning: "the command was not found",
    },
];

/// The table as aligned plain text (for `--help` and the man page).
pub fn table_text() -> String {
    let mut out = String::new();
    for row in TABLE {
        let _ = writeln!(out, "  {:<6} {}", row.status, row.meaning);
    }
    out
}

/// The table in Markdown (for the README; a test keeps the README in step).
pub fn table_markdown() -> String {
    let mut out = String::from("| status | meaning |\n| --- | --- |\n");
    for row in TABLE {
        let _ = writeln!(out, "| {} | {} |", row.status, row.meaning);
    }
    out
}

/// Exit status of `redlock status`: 0 when every key is held, 1 when one is free.
pub const STATUS_FREE: u8 = 1;

/// The status for a child killed by signal `signal`.
pub fn from_signal(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_table_once() {
        let all = [
            Code::Usage,
            Code::Busy,
            Code::Unreachable,
            Code::Auth,
            Code::Redis,
            Code::Lost,
            Code::Internal,
            Code::CannotExecute,
            Code::NotFound,
        ];
        for code in all {
            let text = code.value().to_string();
            let rows = TABLE.iter().filter(|r| r.status == text).count();
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

//! Messages for people on stderr, one line each, prefixed with the program name.
//! `--quiet` keeps only errors; `--verbose` adds the lease's life (acquire, renewals,
//! release). Progress notes while waiting are shown only on a terminal.

use std::io::IsTerminal;

/// Where and how much to say.
#[derive(Debug, Clone)]
pub struct Reporter {
    pub program: &'static str,
    pub quiet: bool,
    pub verbose: bool,
    pub terminal: bool,
}

impl Reporter {
    pub fn new(program: &'static str, quiet: bool, verbose: bool) -> Self {
        Reporter {
            program,
            quiet,
            verbose,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// An error: always shown.
    pub fn error(&self, message: &str) {
        eprintln!("{}: {message}", self.program);
    }

    /// A warning or an outcome worth knowing (busy, hold-min): hidden by `--quiet`.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("{}: {message}", self.program);
        }
    }

    /// A progress line for a person watching a terminal.
    pub fn progress(&self, message: &str) {
        if !self.quiet && (self.terminal || self.verbose) {
            eprintln!("{}: {message}", self.program);
        }
    }

    /// Detail for `--verbose`.
    pub fn verbose(&self, message: impl FnOnce() -> String) {
        if self.verbose {
            eprintln!("{}: {}", self.program, message());
        }
    }
}

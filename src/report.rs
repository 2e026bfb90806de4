//! Messages for people on stderr, one line each, prefixed with the program name.
//! `--quiet` keeps only errors and the lines that ask a person to check something (a
//! vanished run, told once in a fleet); `--verbose` adds the lease's life (acquire,
//! renewals, release). On a terminal, waiting shows as one status line updated in place. Also the
//! formatting for people that every message shares: durations and raw bytes.

use std::io::IsTerminal;
use std::time::Duration;

use crate::events::Event;

/// Where and how much to say.
#[derive(Clone)]
pub struct Reporter {
    pub program: &'static str,
    pub quiet: bool,
    pub verbose: bool,
    pub terminal: bool,
    /// `--events`: where lifecycle events go, if anywhere.
    pub events: Option<std::sync::Arc<crate::events::EventSink>>,
    /// `--metrics`: the Prometheus file the run's events feed.
    pub metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
}

impl Reporter {
    pub fn new(program: &'static str, quiet: bool, verbose: bool) -> Self {
        Reporter {
            program,
            quiet,
            verbose,
            terminal: std::io::stderr().is_terminal(),
            events: None,
            metrics: None,
        }
    }

    /// A lifecycle event for `--events` (nothing without it).
    pub fn event(&self, event: Event, name: &str, fields: serde_json::Value) {
        if let Some(metrics) = &self.metrics
            && let Err(e) = metrics.observe(event, &fields)
        {
            self.metrics_failed(metrics, &e);
        }
        if let Some(sink) = &self.events {
            sink.emit(event, name, fields);
        }
    }

    /// The `--metrics` file could not be written: said, the run goes on.
    pub fn metrics_failed(&self, metrics: &crate::metrics::Metrics, e: &std::io::Error) {
        self.warn(&format!(
            "--metrics {}: cannot write it: {e}",
            metrics.path().display()
        ));
    }

    /// One line on stderr in one `write(2)`: runs sharing a log (cron, a CI job, a
    /// journal) never interleave inside each other's lines, as `eprintln!`'s separate
    /// writes of the message and the newline could.
    fn line(&self, message: &str) {
        use std::io::Write;
        let line = format!("{}: {message}\n", self.program);
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// An error: always shown.
    pub fn error(&self, message: &str) {
        self.line(message);
    }

    /// A warning that `--quiet` does not silence (a safety setting turned off).
    pub fn warn(&self, message: &str) {
        self.line(&format!("WARNING: {message}"));
    }

    /// A warning or an outcome worth knowing (busy, hold-min): hidden by `--quiet`.
    pub fn note(&self, message: &str) {
        if !self.quiet {
            self.line(message);
        }
    }

    /// A line that asks a person to check something, said once in a fleet (a vanished
    /// run: did it do its work?): shown whatever `--quiet` says, since the one try that
    /// says it marks it said for every host, and cron mails it only if it is printed.
    pub fn tell(&self, message: &str) {
        self.line(message);
    }

    /// Whether a status line updated in place can be shown: stderr is a terminal and
    /// `--quiet` was not given.
    pub fn live(&self) -> bool {
        self.terminal && !self.quiet
    }

    /// Replaces the status line (terminal only): back to the line's start, the text cut
    /// to the terminal's width, the rest of the line cleared.
    pub fn status_line(&self, message: &str) {
        if !self.live() {
            return;
        }
        let room = terminal_width().saturating_sub(self.program.len() + 3);
        let text: String = message.chars().take(room).collect();
        eprint!("\r{}: {text}\x1b[K", self.program);
    }

    /// Clears the status line (terminal only).
    pub fn clear_status_line(&self) {
        if self.live() {
            eprint!("\r\x1b[K");
        }
    }

    /// Detail for `--verbose`.
    pub fn verbose(&self, message: impl FnOnce() -> String) {
        if self.verbose {
            self.line(&message());
        }
    }
}

/// The width of the terminal on stderr (80 when it cannot be read).
fn terminal_width() -> usize {
    terminal_width_of(2)
}

/// The width of the terminal on `fd`, 80 when it is not one.
pub fn terminal_width_of(fd: i32) -> usize {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct passed, which lives here.
    let ok = unsafe { nix::libc::ioctl(fd, nix::libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

/// A duration for people, to the second (`3m 12s`, `250ms` under a second).
pub fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_millis());
    }
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// Bytes for a one-line message: valid UTF-8 as is (control characters escaped), other
/// bytes as `\xNN`.
pub fn printable(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Text that came from Redis or from a file another process wrote (a holder's host,
/// user and command, a history record, a queue file), made harmless for a terminal:
/// every control character (C0, DEL, C1: ESC, BEL, CSI…) is shown escaped (`\u{1b}`),
/// so that a command line such as `sh -c 'x #\e]0;TITLE\a\e[2J'`, or metadata forged by
/// anyone who can write the prefix, can neither retitle nor clear nor rewrite an
/// operator's screen. Every human output of such text goes through here; `--json`
/// keeps it exact (its encoder escapes control characters itself).
pub fn shown(text: &str) -> String {
    printable(text.as_bytes())
}

/// A wall-clock time in Unix milliseconds as RFC 3339, to the second.
pub fn rfc3339(unix_ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_millis(unix_ms))
        .to_string()
}

/// A duration as a flag's value, one word that can be pasted after the flag and is
/// read back as the same duration: `11h30m`, `1d`, `1s500ms`, in the units the
/// messages list (d, h, m, s, ms). [`human`] writes `11h 30m` (two arguments on a
/// command line) and `1day`; refusals suggest values with this.
pub fn pasteable(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    let mut left = ms;
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if left >= size {
            out.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasteable_duration_is_one_word_read_back_the_same() {
        for (ms, said) in [
            (41_400_000, "11h30m"),
            (86_400_000, "1d"),
            (1_500, "1s500ms"),
            (250, "250ms"),
            (90_000, "1m30s"),
            (0, "0s"),
        ] {
            let d = Duration::from_millis(ms);
            assert_eq!(pasteable(d), said);
            assert_eq!(humantime::parse_duration(said).unwrap(), d);
        }
    }

    #[test]
    fn durations_and_bytes_for_people() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_millis(192_400)), "3m 12s");
        assert_eq!(printable(b"a\nb\xff"), "a\\nb\\xff");
        assert_eq!(
            shown("x #\u{1b}]0;T\u{7}\u{1b}[2J \u{9b}1m caf\u{e9}"),
            "x #\\u{1b}]0;T\\u{7}\\u{1b}[2J \\u{9b}1m caf\u{e9}"
        );
    }
}

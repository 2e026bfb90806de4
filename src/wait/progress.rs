//! How waiting shows, so people can see it:
//!
//! - on a terminal, one status line updated in place about once a second (who holds
//!   the lock, for how long, how long this run has waited and has left), cut to the
//!   terminal's width and cleared when the wait ends;
//! - off a terminal (CI logs, files), a line when waiting starts, one a minute, one
//!   when the holder changes, and "acquired … after …" at the end.
//!
//! `--quiet` silences all of it, and so does `--busy-exit-code 0` off a terminal unless
//! `--verbose` (a run told that busy is fine has nothing to report about waiting, like
//! `flock -w -E 0`). Nothing goes to stdout.

use std::time::Duration;

use super::Patience;
use crate::clock::wall_ms;
use crate::events::Event;
use crate::holder::Holder;
use crate::report::{Reporter, human};
use crate::timing::Point;

/// How often the status line is refreshed.
const REFRESH: Duration = Duration::from_secs(1);
/// How often a line is written off a terminal while nothing changes.
const LINE_EVERY: Duration = Duration::from_secs(60);

/// Where a waiting run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In a fair queue: `place` of `of`.
    Queue { place: u64, of: u64 },
    /// In this host's local queue: `ahead` of `waiting` runs blocked here are before
    /// it, behind the host's head (`head_pid`, which contends in Redis).
    Host {
        ahead: u64,
        waiting: u64,
        head_pid: Option<u32>,
    },
}

/// The visible side of one wait.
pub struct Progress<'a> {
    report: &'a Reporter,
    name: String,
    /// Off a terminal: write lines (else say nothing).
    lines: bool,
    /// When the next line (off a terminal) or refresh (on one) is due.
    next: Point,
    /// The holder last shown.
    holder: Holder,
    /// Its place: in a fair queue, or in this host's local queue.
    place: Option<Place>,
    /// Whether anything was shown.
    shown: bool,
}

impl<'a> Progress<'a> {
    /// `chatty`: whether lines may be written off a terminal.
    pub fn new(report: &'a Reporter, name: String, chatty: bool) -> Self {
        Progress {
            report,
            name,
            lines: chatty && !report.quiet && !report.terminal,
            next: crate::clock::now(),
            holder: Holder::default(),
            place: None,
            shown: false,
        }
    }

    /// A run that waited in the local queue goes on waiting in Redis: its first line
    /// was said.
    pub fn continuing(mut self) -> Self {
        self.shown = true;
        self
    }

    /// Whether `holder` is another holder than the one shown.
    pub fn would_change(&self, holder: &Holder) -> bool {
        holder.token != self.holder.token
    }

    /// The lock was found busy (or Redis unreachable, with no holder) at a try.
    pub fn busy(&mut self, holder: &Holder, place: Option<Place>, patience: &Patience) {
        let changed = holder.token != self.holder.token || !same_kind(place, self.place);
        let first = !self.shown;
        self.holder = holder.clone();
        self.place = place;
        if first || changed {
            self.report.event(
                Event::Waiting,
                &self.name,
                serde_json::json!({
                    "holder": holder.describe(wall_ms()),
                    // The prefix, or null when not known (a local waiter before its
                    // head saw a holder): never "".
                    "holder_token": (!holder.token.is_empty()).then(|| holder.token.chars().take(8).collect::<String>()),
                    "holder_ttl_ms": holder.ttl_left.map(|t| t.as_millis() as u64),
                    "waited_ms": patience.waited().as_millis() as u64,
                    "place": match place { Some(Place::Queue { place, .. }) => Some(place), _ => None },
                    "queue": match place { Some(Place::Queue { of, .. }) => Some(of), _ => None },
                    "host_waiting": match place { Some(Place::Host { waiting, .. }) => Some(waiting), _ => None },
                }),
            );
        }
        if self.report.live() {
            self.refresh(patience);
        } else if self.lines && (first || changed) {
            let lead = if first {
                "waiting for"
            } else {
                "still waiting for"
            };
            let now_held = match (first, self.holder.token.is_empty()) {
                (_, true) => "",
                (true, false) => "held by ",
                (false, false) => "now held by ",
            };
            self.line(&format!(
                "{lead} {}: {}{now_held}{}",
                self.name,
                self.host_text(),
                self.detail(patience)
            ));
        }
    }

    /// A wake-up: refreshes the status line, or writes the line a minute is due.
    pub fn tick(&mut self, patience: &Patience) {
        let now = crate::clock::now();
        if now < self.next || !self.shown {
            return;
        }
        if self.report.live() {
            self.refresh(patience);
        } else if self.lines {
            let held = if self.holder.token.is_empty() {
                ""
            } else {
                "held by "
            };
            self.line(&format!(
                "still waiting for {}: {}{held}{}",
                self.name,
                self.host_text(),
                self.detail(patience)
            ));
        }
    }

    /// How long until [`Progress::tick`] has something to do.
    pub fn next_due(&self) -> Duration {
        if !self.shown {
            return Duration::MAX;
        }
        self.next.saturating_sub(crate::clock::now())
    }

    /// The lock was taken after waiting.
    pub fn acquired(&mut self, patience: &Patience) {
        if !self.shown {
            return;
        }
        self.report.clear_status_line();
        self.shown = false;
        let line = format!("acquired {} after {}", self.name, human(patience.waited()));
        if self.lines {
            self.report.note(&line);
        } else {
            self.report.verbose(|| line);
        }
    }

    /// The wait ended without the lock (busy, interrupted, an error).
    pub fn ended(&mut self) {
        if self.shown {
            self.report.clear_status_line();
        }
    }

    fn refresh(&mut self, patience: &Patience) {
        // The times first, the holder's command last: the line is cut to the width.
        self.report.status_line(&format!(
            "waiting for {}: {}{}{}; {}",
            self.name,
            self.host_text(),
            waited(patience),
            self.place_text(),
            self.who(|h| format!("held by {}", h.describe_command_last(wall_ms())))
        ));
        self.shown = true;
        self.next = crate::clock::now() + REFRESH;
    }

    fn line(&mut self, text: &str) {
        self.report.note(text);
        self.shown = true;
        self.next = crate::clock::now() + LINE_EVERY;
    }

    /// `host pid 42 (cmd) for 3m 12s; you are #2 of 4; waited 12s, 4m 48s left`.
    fn detail(&self, patience: &Patience) -> String {
        format!(
            "{}{}; {}",
            self.who(|h| h.describe(wall_ms())),
            self.place_text(),
            waited(patience)
        )
    }

    /// The holder as `describe` says it, or, when a fair queue's lock is free but
    /// promised to the first in line, that; in the local queue before the head has
    /// said who holds it, who contends for this host.
    fn who(&self, describe: impl Fn(&Holder) -> String) -> String {
        match (self.holder.token.is_empty(), self.place) {
            (true, Some(Place::Queue { .. })) => "free, going to the first in line".to_string(),
            (true, Some(Place::Host { head_pid, .. })) => match head_pid {
                Some(pid) => format!("the holder not known yet (pid {pid} contends for this host)"),
                None => "the holder not known yet (another run contends for this host)".to_string(),
            },
            _ => describe(&self.holder),
        }
    }

    /// `; you are #2 of 4` in a fair queue.
    fn place_text(&self) -> String {
        match self.place {
            Some(Place::Queue { place, of }) => format!("; you are #{place} of {of}"),
            _ => String::new(),
        }
    }

    /// `#3 on this host (2 ahead here), ` in the local queue: the head is #1.
    fn host_text(&self) -> String {
        match self.place {
            Some(Place::Host { ahead, .. }) => {
                format!("#{} on this host ({} ahead here), ", ahead + 2, ahead + 1)
            }
            _ => String::new(),
        }
    }
}

/// Whether two places are the same for the waiting line: a fair queue's place counts,
/// a local queue's changes all the time and is shown when a line is due.
fn same_kind(a: Option<Place>, b: Option<Place>) -> bool {
    match (a, b) {
        (Some(Place::Host { .. }), Some(Place::Host { .. })) => true,
        (a, b) => a == b,
    }
}

/// `waited 12s, 4m 48s left` (or `(no limit)` with `--wait forever`).
fn waited(patience: &Patience) -> String {
    let left = match patience.left() {
        Some(left) if left == Duration::MAX => " (no limit)".to_string(),
        // Rounded up: a fresh `--wait 3s` has 3s left, not "2s" (2.998 s).
        Some(left) if left >= Duration::from_secs(1) => {
            let whole = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            format!(", {} left", human(Duration::from_secs(whole)))
        }
        Some(left) => format!(", {} left", human(left)),
        None => ", no time left".to_string(),
    };
    format!("waited {}{left}", human(patience.waited()))
}

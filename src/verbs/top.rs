//! `redlock top [PATTERN]`: a live full-screen view of the locks under the prefix:
//! state, holder, held for, ttl left, fence, waiters (a fair queue's line, a
//! semaphore's slots), last run; refreshed every `-n` (1 s), sorted by what needs
//! attention (waiters behind a holder first, then the longest held, then the free names
//! with a history: a cron job between its runs). `q`, Esc or
//! Ctrl-C quits; the terminal is restored on every exit. `--once` prints one frame as
//! text and exits, for scripts and tests.
//!
//! Cost to Redis per refresh: the SCAN pages of the pattern (for the lock keys, the
//! mode keys and the history keys), then per lock what `redlock status` reads (the mode key, the holder
//! script, each slot of a semaphore, a fair queue's members) plus an SCARD of its
//! waiters and an LRANGE of its last run: 9 commands a lock, scripts' included. The
//! locks are read 1,000 at a time, their requests pipelined on one connection (2,000
//! locks: 168 to 182 request bursts through the test proxy against 8,011 one after another,
//! 0.35 s against 3 s). A frame starts only after the previous one is drawn.

use std::io::IsTerminal;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Row, Table};

use super::list::{each_lock, names_by};
use super::state::{LockState, read, waiters};
use super::{history, open};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, TopConfig};
use crate::error::{Error, Kind, Result};
use crate::quorum::Nodes;
use crate::report::human;

/// One lock as a row of the view.
#[derive(Debug, Clone)]
struct Line {
    cells: [String; 8],
    /// Sorts the rows: waiters behind a holder first, then the longest held, then the
    /// free names (with a history).
    attention: (bool, bool, u64),
}

const HEADER: [&str; 8] = [
    "NAME", "STATE", "HOLDER", "HELD", "TTL", "FENCE", "WAITERS", "LAST RUN",
];

pub async fn run(config: TopConfig) -> Result<u8> {
    let nodes = open(&config.conn, DEFAULT_TTL).await?;
    if config.once {
        let lines = snapshot(&nodes, &config).await?;
        print!("{}", text(&lines));
        return Ok(0);
    }
    live(&nodes, &config).await
}

/// The locks under the pattern, most in need of attention first.
async fn snapshot(nodes: &Nodes, config: &TopConfig) -> Result<Vec<Line>> {
    let now = wall_ms();
    // Held or waited for (the lock key, a semaphore's mode key), or free with a
    // history: a cron job between its runs is a row too.
    let suffixes: [&[u8]; 3] = [b"", b":mode", b":history"];
    let names = names_by(nodes, &config.conn.prefix, &config.matcher, &suffixes).await?;
    // Every lock's reads at once (see `each_lock`): a frame of 2,000 locks is a few
    // round trips, not thousands one after another.
    let read = each_lock(&names, &config.conn.prefix, |keys| async move {
        let state = read(nodes, &keys).await?;
        let (waiters, last) = tokio::join!(
            waiters(nodes, &keys),
            history::last_run(nodes, &keys, state.holder.as_ref())
        );
        Ok::<_, Error>((state, waiters, last))
    })
    .await?;
    let mut lines = Vec::new();
    for result in read {
        let (state, waiters, last) = match result {
            Ok(read) => read,
            Err(e) if e.kind() == Kind::NotALock => continue,
            Err(e) => return Err(e),
        };
        lines.push(line(&state, waiters, last.map(|r| last_run(&r, now)), now));
    }
    lines.sort_by(|a, b| {
        b.attention
            .cmp(&a.attention)
            .then(a.cells[0].cmp(&b.cells[0]))
    });
    Ok(lines)
}

/// The last run as a cell: how it ended first, then when and where (`exit 0, 3m ago on
/// web-1`), so that a narrow column still shows the outcome.
fn last_run(run: &crate::history::RunRecord, now: u64) -> String {
    // A vanished run has no end: it is dated by its start, and said in one word (the
    // history's "vanished: started, its end never recorded, its lease gone" was cut to
    // "vanished: started, its…" at 80 and 120 columns, with no when and no host).
    let (how, at) = if run.vanished {
        ("vanished".to_string(), run.start_ms)
    } else {
        (run.outcome(), run.end_ms.max(run.start_ms))
    };
    format!(
        "{how}, {} ago on {}",
        human(Duration::from_millis(now.saturating_sub(at))),
        run.who.host_text()
    )
}

/// The state cell: slots held, shared by N, stopping, kept, held (with the other names
/// of a run of several), or free.
fn state_text(state: &LockState, holder: Option<&crate::holder::Holder>) -> String {
    match (state.limit, state.held) {
        (Some(limit), Some(held)) => format!("{held} of {limit} slots"),
        _ if state.shared_by.is_some() => format!("shared by {}", state.shares.len()),
        _ if holder.is_some_and(|h| h.stopping.preempt.is_some()) => "stopping".to_string(),
        // --hold-min: the run ended; the lock is kept on purpose (newcomer-4 P10).
        _ if holder.is_some_and(|h| h.kept.is_some()) => "kept".to_string(),
        // One run of several names (`--key A --key B`): the others it holds.
        _ if holder.is_some_and(|h| !h.stopping.with.is_empty()) => format!(
            "held with {}",
            holder
                .map(|h| h.stopping.with.join(", "))
                .unwrap_or_default()
        ),
        _ if holder.is_some() => "held".to_string(),
        _ => "free".to_string(),
    }
}

fn line(state: &LockState, waiters: u64, last: Option<String>, now: u64) -> Line {
    let holder = state.holder.as_ref();
    let held_ms = holder
        .and_then(|h| h.held_for(now))
        .map(|d| d.as_millis() as u64);
    let state_text = state_text(state, holder);
    let kind = state.queue_flag.trim_start_matches("--");
    let mut waiting = match &state.queue {
        Some(queue) if !queue.is_empty() => {
            let line: Vec<String> = queue
                .iter()
                .map(|w| format!("#{} {}", w.place, w.who.host_pid_user()))
                .collect();
            format!("{} ({kind}: {})", queue.len(), line.join(", "))
        }
        _ => waiters.to_string(),
    };
    // Newest wins: how many waiting runs newer ones superseded while it held.
    if let Some(n) = holder.map(|h| h.stopping.superseded).filter(|n| *n > 0) {
        waiting.push_str(&format!(", {n} superseded"));
    }
    let who = holder.map_or(String::new(), |h| {
        if h.is_known() {
            format!(
                "{} pid {} {}",
                h.who.host_text(),
                h.who.pid.map_or("?".into(), |p| p.to_string()),
                h.who.cmd_text()
            )
        } else {
            "unknown (no redlock metadata)".to_string()
        }
    });
    let queued = state.queue.as_ref().map_or(waiters, |q| q.len() as u64);
    let in_use = state_text != "free" || queued > 0;
    Line {
        cells: [
            state.name.clone(),
            state_text,
            who,
            held_ms.map_or(String::new(), |ms| human(Duration::from_millis(ms))),
            holder.and_then(|h| h.ttl_left).map_or(String::new(), human),
            holder
                .and_then(|h| h.fence)
                .map_or(String::new(), |f| f.to_string()),
            waiting,
            last.unwrap_or_default(),
        ],
        attention: (queued > 0 && holder.is_some(), in_use, held_ms.unwrap_or(0)),
    }
}

/// One frame as text: a header and a row per lock, columns padded, nothing cut.
fn text(lines: &[Line]) -> String {
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.len()).collect();
    for l in lines {
        for (w, c) in widths.iter_mut().zip(&l.cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let row = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = row(HEADER.to_vec());
    for l in lines {
        out.push_str(&row(l.cells.iter().map(String::as_str).collect()));
    }
    if lines.is_empty() {
        out.push_str("(no locks)\n");
    }
    out
}

/// The live view: the alternate screen in raw mode, redrawn every `config.every` and
/// on a resize, until `q`, Esc, Ctrl-C or a signal; the terminal restored however it
/// ends.
async fn live(nodes: &Nodes, config: &TopConfig) -> Result<u8> {
    let mut signals = crate::signals::listen()
        .map_err(|e| Error::internal(format!("cannot install signal handlers: {e}")))?;
    // Not a terminal (`top | head`): said before anything is written to the pipe.
    if !std::io::stdout().is_terminal() {
        return Err(Error::usage(
            "redlock top needs a terminal (stdout is not one); use --once",
        ));
    }
    watch_for_hang_up();
    let mut terminal = ratatui::try_init().map_err(|e| {
        ratatui::restore();
        Error::usage(format!("redlock top needs a terminal ({e}); use --once"))
    })?;
    let shown = async {
        loop {
            let lines = snapshot(nodes, config).await?;
            let stamp = crate::report::rfc3339(wall_ms());
            let title = format!(
                " redlock top: {} locks under {}, {} UTC, every {}; q quits ",
                lines.len(),
                config.conn.prefix,
                &stamp[11..19],
                human(config.every)
            );
            terminal
                .draw(|frame| {
                    let area = frame.area();
                    frame.render_widget(table(&lines, &title, area.width), area)
                })
                .map_err(|e| Error::internal(format!("cannot draw: {e}")))?;
            if quit_within(config.every)? || stopped(&mut signals) {
                return Ok::<u8, Error>(0);
            }
        }
    };
    let result = shown.await;
    ratatui::restore();
    result
}

/// A hung-up terminal (its window closed, tmux killed) reads as end of file for good,
/// and crossterm, inside its own read, reads it for ever at full speed: a watch thread
/// ends the view (status 129, as SIGHUP would) once the terminal is gone.
fn watch_for_hang_up() {
    let _ = std::thread::Builder::new()
        .name("hang-up".into())
        .spawn(|| {
            loop {
                std::thread::sleep(Duration::from_millis(300));
                if hung_up() {
                    std::process::exit(i32::from(crate::exit::from_signal(1)));
                }
            }
        });
}

/// Whether the terminal on stdin has hung up: no terminal any more, or readable with
/// nothing to read (end of file: `poll(2)` says POLLIN or POLLHUP and `FIONREAD` 0),
/// which crossterm would read for ever.
fn hung_up() -> bool {
    use std::os::fd::{AsFd, AsRawFd};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return true;
    }
    let mut fds = [nix::poll::PollFd::new(
        stdin.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    let ready = nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).is_ok_and(|n| n > 0);
    let flags = fds[0].revents().unwrap_or(nix::poll::PollFlags::empty());
    if flags.intersects(nix::poll::PollFlags::POLLHUP | nix::poll::PollFlags::POLLERR) {
        return true;
    }
    let mut waiting: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes the byte count into the int it is given.
    let asked = unsafe { nix::libc::ioctl(stdin.as_raw_fd(), nix::libc::FIONREAD, &mut waiting) };
    ready && flags.contains(nix::poll::PollFlags::POLLIN) && asked == 0 && waiting == 0
}

/// Whether a signal that ends the view came (INT, TERM, HUP, QUIT); a resize (SIGWINCH)
/// or a user signal does not: the view redraws on a resize.
fn stopped(signals: &mut tokio::sync::mpsc::UnboundedReceiver<nix::sys::signal::Signal>) -> bool {
    let mut stop = false;
    while let Ok(sig) = signals.try_recv() {
        stop |= crate::signals::ends_wait(sig);
    }
    stop
}

/// Waits up to `every` for a key: whether it asks to quit (a resize redraws at once).
fn quit_within(every: Duration) -> Result<bool> {
    let until = std::time::Instant::now() + every;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero()
            || !event::poll(left).map_err(|e| Error::internal(format!("terminal: {e}")))?
        {
            return Ok(false);
        }
        match event::read().map_err(|e| Error::internal(format!("terminal: {e}")))? {
            Event::Key(key) if key.kind == KeyEventKind::Press => {
                let ctrl_c =
                    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
                if matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                    return Ok(true);
                }
            }
            Event::Resize(..) => return Ok(false),
            _ => {}
        }
    }
}

/// How the columns share a narrow terminal. A cell is shown whole or shortened at a
/// word with `…` at the end (a name, which has no words, with `…` in its middle):
/// never cut inside a number, where `pid 1752` for pid 17525 would read as another,
/// plausible pid (newcomer-5 P6). A column that does not fit at its least is dropped
/// whole.
///
/// Each column's least is what must show of every cell ([`least`]): the holder's host
/// and whole pid, the last run's outcome and when, a count whole. Room is then given in
/// [`STEPS`]' order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// A column at its least, if it fits (else it and every later `Least` are dropped).
    Least(usize),
    /// Columns shown whole together, if they all fit whole (and the columns before
    /// them were shown).
    Whole(&'static [usize]),
    /// A shown column widened towards this, as far as the room goes.
    Widen(usize, u16),
    /// A shown column widened to its longest cell, if that is at most this and fits.
    Entire(usize, u16),
}

// Columns by their place in [`HEADER`].
const NAME: usize = 0;
const STATE: usize = 1;
const HOLDER: usize = 2;
const HELD: usize = 3;
const TTL: usize = 4;
const FENCE: usize = 5;
const WAITERS: usize = 6;
const LAST_RUN: usize = 7;

/// The order room is given in: the name, state, holder, held for, waiters and last run
/// at their least (they fit at 80 columns); the name whole if it has at most 30
/// characters, else to 20; the holder to 24 (a short host's command, as at 100
/// columns: newcomer-4 P7); the ttl and the fence whole and together (they fit at 120;
/// alone, the ttl would take the room a name needs at 80); then the name to 30 and the
/// rest whole.
const STEPS: [Step; 14] = [
    Step::Least(NAME),
    Step::Least(STATE),
    Step::Least(HOLDER),
    Step::Least(HELD),
    Step::Least(WAITERS),
    Step::Least(LAST_RUN),
    Step::Entire(NAME, 30),
    Step::Widen(NAME, 20),
    Step::Widen(HOLDER, 24),
    Step::Whole(&[TTL, FENCE]),
    Step::Widen(NAME, 30),
    Step::Widen(HOLDER, 40),
    Step::Widen(LAST_RUN, 40),
    Step::Widen(WAITERS, 40),
];

/// The fewest characters of a name shown (then `…`).
const NAME_LEAST: usize = 8;

/// How much of `cell` (of column `i`) must show: its whole width, or a prefix of whole
/// words: the holder through its pid (`ci-runner-7 pid 17431`), the last run through
/// its when (`exit 0, 1m 5s ago`), the waiters' count; a name its first
/// [`NAME_LEAST`] characters. The `…` that marks what is left out is counted.
fn least(i: usize, cell: &str) -> usize {
    let whole = cell.chars().count();
    let words: Vec<&str> = cell.split(' ').collect();
    let through = |n: usize| -> usize {
        let n = n.min(words.len());
        let shown = words[..n].join(" ").chars().count();
        if n < words.len() { shown + 1 } else { shown }
    };
    match i {
        NAME => whole.min(NAME_LEAST + 1),
        HOLDER => match words.iter().position(|w| *w == "pid") {
            Some(at) => through(at + 2),
            None => through(1),
        },
        LAST_RUN => match words.iter().position(|w| *w == "ago") {
            // Not more than the column's cap: the rest is shortened at a word.
            Some(at) => through(at + 1).min(24),
            None => through(1),
        },
        WAITERS => through(1),
        _ => whole,
    }
}

/// `cell` in `width` characters: whole when it fits; else its longest prefix of whole
/// words and `…`, never part of a word (a name, one word: its start, `…` and its end).
fn shorten(i: usize, cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_string();
    }
    if width == 0 {
        return String::new();
    }
    if i == NAME {
        // Its start and its end (`deplo…tion`): names of one family often differ
        // only at the end (`-eu-1`, `-eu-2`).
        let chars: Vec<char> = cell.chars().collect();
        let tail = (width - 1) / 2;
        let head: String = chars[..width - 1 - tail].iter().collect();
        let end: String = chars[chars.len() - tail..].iter().collect();
        return format!("{head}…{end}");
    }
    let mut kept = String::new();
    for word in cell.split(' ') {
        let with = if kept.is_empty() {
            word.to_string()
        } else {
            format!("{kept} {word}")
        };
        if with.chars().count() + 1 > width {
            break;
        }
        kept = with;
    }
    format!("{kept}…")
}

/// The widest of column `i`'s cells (and its header) as `of` measures a cell.
fn widest(lines: &[Line], i: usize, of: &dyn Fn(&str) -> usize) -> u16 {
    lines
        .iter()
        .map(|l| of(&l.cells[i]))
        .chain([HEADER[i].len()])
        .max()
        .unwrap_or(0) as u16
}

/// The columns that fit in `width` (borders and gaps told) and each one's width, in
/// the table's order, given by [`STEPS`].
fn fitting(lines: &[Line], width: u16) -> Vec<(usize, u16)> {
    let widest = |i: usize, of: &dyn Fn(&str) -> usize| widest(lines, i, of);
    let mut room = width.saturating_sub(2);
    let mut shown: Vec<(usize, u16)> = Vec::new();
    let mut dropped = false;
    for step in STEPS {
        match step {
            Step::Least(i) => {
                let cell = widest(i, &|c| least(i, c));
                let gap = u16::from(!shown.is_empty());
                // Dropped whole, and so is every column after it.
                if dropped || cell + gap > room {
                    dropped = true;
                    continue;
                }
                room -= cell + gap;
                shown.push((i, cell));
            }
            Step::Whole(columns) => {
                let cells: Vec<(usize, u16)> = columns
                    .iter()
                    .map(|&i| (i, widest(i, &|c| c.chars().count())))
                    .collect();
                let need: u16 = cells.iter().map(|(_, w)| w + 1).sum();
                if dropped || need > room {
                    dropped = true;
                    continue;
                }
                room -= need;
                shown.extend(cells);
            }
            Step::Entire(i, cap) => {
                let whole = widest(i, &|c| c.chars().count());
                if let Some((_, w)) = shown.iter_mut().find(|(c, _)| *c == i)
                    && whole <= cap
                    && whole.saturating_sub(*w) <= room
                {
                    room -= whole.saturating_sub(*w);
                    *w = whole;
                }
            }
            Step::Widen(i, cap) => {
                let whole = widest(i, &|c| c.chars().count()).min(cap);
                if let Some((_, w)) = shown.iter_mut().find(|(c, _)| *c == i) {
                    let more = whole.saturating_sub(*w).min(room);
                    *w += more;
                    room -= more;
                }
            }
        }
    }
    shown.sort_by_key(|c| c.0);
    shown
}

fn table<'a>(lines: &'a [Line], title: &'a str, width: u16) -> Table<'a> {
    let shown = fitting(lines, width);
    let rows = lines.iter().map(|l| {
        Row::new(
            shown
                .iter()
                .map(|(i, w)| shorten(*i, &l.cells[*i], usize::from(*w))),
        )
    });
    let widths: Vec<Constraint> = shown.iter().map(|(_, w)| Constraint::Length(*w)).collect();
    let header = Row::new(shown.iter().map(|(i, _)| HEADER[*i]));
    Table::new(rows, widths)
        .header(header.style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cells: [&str; 8]) -> Line {
        Line {
            cells: cells.map(String::from),
            attention: (false, true, 0),
        }
    }

    #[test]
    fn a_cell_is_shortened_at_a_word_never_inside_a_number() {
        let holder = "ci-runner-7 pid 17431 ./deploy.sh production";
        assert_eq!(shorten(HOLDER, holder, 44), holder);
        assert_eq!(shorten(HOLDER, holder, 25), "ci-runner-7 pid 17431…");
        assert_eq!(shorten(HOLDER, holder, 21), "ci-runner-7 pid…");
        let last = "exit 0, 1m 5s ago on web-1";
        assert_eq!(shorten(LAST_RUN, last, 20), "exit 0, 1m 5s ago…");
        assert_eq!(shorten(LAST_RUN, last, 12), "exit 0, 1m…");
        assert_eq!(shorten(NAME, "deploy-production", 10), "deplo…tion");
        assert_eq!(shorten(NAME, "deploy-production", 17), "deploy-production");
    }

    #[test]
    fn the_holder_and_last_run_stay_at_80_columns_and_ttl_and_fence_come_at_120() {
        let lines = [
            line([
                "deploy-production",
                "held",
                "ci-runner-7 pid 17431 ./deploy.sh production",
                "1m 5s",
                "9m 59s",
                "1795673560532341",
                "3",
                "exit 0, 1m 5s ago on ci-runner-7",
            ]),
            line([
                "test-db",
                "3 of 3 slots",
                "vm pid 412345 sleep 60",
                "2s",
                "28s",
                "1795673560532342",
                "0",
                "",
            ]),
        ];
        let at = |width: u16| {
            let shown = fitting(&lines, width);
            let used: u16 = shown.iter().map(|(_, w)| w + 1).sum::<u16>() + 1;
            assert!(used <= width, "{width}: {shown:?}");
            shown
        };
        let narrow = at(80);
        let columns: Vec<usize> = narrow.iter().map(|(i, _)| *i).collect();
        assert_eq!(columns, [NAME, STATE, HOLDER, HELD, WAITERS, LAST_RUN]);
        let width = |shown: &[(usize, u16)], i| shown.iter().find(|c| c.0 == i).unwrap().1;
        assert!(usize::from(width(&narrow, HOLDER)) >= "ci-runner-7 pid 17431…".chars().count());
        assert!(usize::from(width(&narrow, LAST_RUN)) >= "exit 0, 1m 5s ago…".chars().count());
        let wide = at(120);
        let columns: Vec<usize> = wide.iter().map(|(i, _)| *i).collect();
        assert_eq!(columns, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(width(&wide, NAME), 17);
        // Too narrow for the essential columns at their least: the last ones go whole.
        let tiny: Vec<usize> = fitting(&lines, 50).iter().map(|(i, _)| *i).collect();
        assert_eq!(tiny, [NAME, STATE, HOLDER]);
    }

    /// (issue 60, item 3) A vanished last run keeps how it ended and when at 80 and 120
    /// columns (the host comes with the room the reference gives it): its cell was the
    /// history's long words, cut to "vanished: started, its…", with no when.
    #[test]
    fn a_vanished_last_run_keeps_when_and_where_at_80_and_120_columns() {
        use crate::history::RunRecord;
        use crate::holder::Who;
        const NOW: u64 = 1_795_651_200_000;
        let vanished = RunRecord {
            token: "t".into(),
            who: Who {
                host: Some("hA".into()),
                ..Who::default()
            },
            start_ms: NOW - 192_000,
            vanished: true,
            ..RunRecord::default()
        };
        let cell = last_run(&vanished, NOW);
        let lines = [
            line([
                "close-order",
                "held",
                "hB pid 31115 sh -c 'sleep 50; ./close_orders.sh'",
                "12s",
                "28s",
                "1795673560532341",
                "0",
                "exit 0, 1m 5s ago on hC",
            ]),
            line(["nightly", "free", "", "", "", "", "0", &cell]),
        ];
        for width in [80, 120] {
            let shown = fitting(&lines, width);
            let (_, w) = shown
                .iter()
                .find(|(i, _)| *i == LAST_RUN)
                .unwrap_or_else(|| panic!("{width}: no last run column: {shown:?}"));
            let seen = shorten(LAST_RUN, &cell, usize::from(*w));
            assert!(
                seen.starts_with("vanished") && seen.contains("3m 12s ago"),
                "{width}: {seen}"
            );
        }
    }
}

//! `redlock top [PATTERN]`: a live full-screen view of the locks under the prefix:
//! state, holder, held for, ttl left, fence, waiters (a fair queue's line, a
//! semaphore's slots), last run; refreshed every `-n` (1 s), sorted by what needs
//! attention (waiters behind a holder first, then the longest held). `q`, Esc or
//! Ctrl-C quits; the terminal is restored on every exit. `--once` prints one frame as
//! text and exits, for scripts and tests.
//!
//! Cost to Redis per refresh: the SCAN pages of the pattern (for the lock keys and the
//! mode keys), then per lock what `redlock status` reads (the mode key, the holder
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

use super::list::{each_lock, names};
use super::state::{LockState, read};
use super::{history, open};
use crate::clock::wall_ms;
use crate::config::{DEFAULT_TTL, TopConfig};
use crate::error::{Error, Kind, Result};
use crate::keys::LockKeys;
use crate::quorum::Nodes;
use crate::report::human;

/// One lock as a row of the view.
#[derive(Debug, Clone)]
struct Line {
    cells: [String; 8],
    /// Sorts the rows: waiters behind a holder first, then the longest held.
    attention: (bool, u64),
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
    let names = names(nodes, &config.conn.prefix, &config.matcher).await?;
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
    // A vanished run has no end: it is dated by its start.
    let at = if run.vanished {
        run.start_ms
    } else {
        run.end_ms.max(run.start_ms)
    };
    format!(
        "{}, {} ago on {}",
        run.outcome(),
        human(Duration::from_millis(now.saturating_sub(at))),
        run.who.host_text()
    )
}

/// How many runs wait in Redis (the waiters set on the primary node).
async fn waiters(nodes: &Nodes, keys: &LockKeys) -> u64 {
    let Some(node) = nodes.primary() else {
        return 0;
    };
    let cmd = crate::redis::command::scard(&keys.waiters);
    node.query::<u64>(&cmd).await.unwrap_or(0)
}

fn line(state: &LockState, waiters: u64, last: Option<String>, now: u64) -> Line {
    let holder = state.holder.as_ref();
    let held_ms = holder
        .and_then(|h| h.held_for(now))
        .map(|d| d.as_millis() as u64);
    let state_text = match (state.limit, state.held) {
        (Some(limit), Some(held)) => format!("{held} of {limit} slots"),
        _ if holder.is_some_and(|h| h.stopping.preempt.is_some()) => "stopping".to_string(),
        // --hold-min: the run ended; the lock is kept on purpose (newcomer-4 P10).
        _ if holder.is_some_and(|h| h.kept.is_some()) => "kept".to_string(),
        _ if holder.is_some() => "held".to_string(),
        _ => "free".to_string(),
    };
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
        attention: (queued > 0 && holder.is_some(), held_ms.unwrap_or(0)),
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

/// How each column is sized and which go first when the terminal is narrow: its
/// place in [`HEADER`], the most it takes (its longest cell, up to this), and the least
/// it is shown with; in the order columns are dropped, last first.
const COLUMNS: [(usize, u16, u16); 8] = [
    (0, 30, 30), // NAME: the longest name, up to 30, whole
    (1, 12, 12), // STATE
    (2, 40, 10), // HOLDER
    (3, 8, 8),   // HELD
    (6, 30, 7),  // WAITERS
    (7, 30, 10), // LAST RUN: its outcome first
    // Optional: shown whole when there is room left.
    (4, 7, 7),   // TTL
    (5, 16, 16), // FENCE
];

/// How many of [`COLUMNS`] are essential: shown, shrunk if need be, before any other.
const ESSENTIAL: usize = 6;

/// The columns that fit in `width` (borders and gaps told) and each one's width, in
/// the table's order: the lowest in priority are dropped first, so that at 80 columns
/// the name, state, holder, held for, waiters and last run stay; what is left over
/// widens the columns that were shown at less than their longest cell, by priority.
fn fitting(lines: &[Line], width: u16) -> Vec<(usize, u16)> {
    let longest = |i: usize| {
        lines
            .iter()
            .map(|l| l.cells[i].chars().count())
            .chain([HEADER[i].len()])
            .max()
            .unwrap_or(0) as u16
    };
    let mut room = width.saturating_sub(2);
    let mut chosen: Vec<(usize, u16, u16)> = Vec::new();
    let (essential, optional) = COLUMNS.split_at(ESSENTIAL);
    // The essential columns at their least, as many as fit, by priority; then each
    // widened to its longest cell, by priority; then the optional ones whole, if room.
    for &(i, cap, least) in essential {
        let want = longest(i).min(cap);
        let need = want.min(least).max(HEADER[i].len() as u16);
        let gap = u16::from(!chosen.is_empty());
        if need + gap > room {
            break;
        }
        room -= need + gap;
        chosen.push((i, need, want));
    }
    for (_, shown, want) in chosen.iter_mut() {
        let more = want.saturating_sub(*shown).min(room);
        *shown += more;
        room -= more;
    }
    if chosen.len() == ESSENTIAL {
        for &(i, cap, _) in optional {
            let want = longest(i).min(cap);
            if want + 1 > room {
                break;
            }
            room -= want + 1;
            chosen.push((i, want, want));
        }
    }
    let mut out: Vec<(usize, u16)> = chosen.into_iter().map(|(i, w, _)| (i, w)).collect();
    out.sort_by_key(|c| c.0);
    out
}

fn table<'a>(lines: &'a [Line], title: &'a str, width: u16) -> Table<'a> {
    let shown = fitting(lines, width);
    let rows = lines
        .iter()
        .map(|l| Row::new(shown.iter().map(|(i, _)| l.cells[*i].as_str())));
    let widths: Vec<Constraint> = shown.iter().map(|(_, w)| Constraint::Length(*w)).collect();
    let header = Row::new(shown.iter().map(|(i, _)| HEADER[*i]));
    Table::new(rows, widths)
        .header(header.style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
}
